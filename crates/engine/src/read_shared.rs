//! Reading pages with the core latch shared: a [`PageStore`] over the cached pages only, for
//! B+tree reads (point reads and scans) that run beside other readers. Nothing changes pages,
//! the page table or frame assignments while the latch is shared, so a resident page's bytes are
//! stable for as long as the reader holds the latch. A page that is not resident (never read,
//! evicted, or evicted dirty and waiting for its redo) cannot be brought in here: the reader
//! records the miss and fails, and its caller runs the operation again with the latch exclusive.
//!
//! A reader changes nothing but the frames' reference bits (atomics); its hits are added to the
//! pool's counters only if its operation completes, so a read retried after a miss counts its
//! hits once, as a read run exclusive from the start would.

use crate::btree::PageStore;
use crate::cache::PageCache;
use crate::error::{Error, Result};
use crate::page::{self, PageId, PageType};

pub(crate) struct SharedReader<'a> {
    cache: &'a PageCache,
    hits: u64,
    missed: bool,
}

impl<'a> SharedReader<'a> {
    pub fn new(cache: &'a PageCache) -> SharedReader<'a> {
        SharedReader {
            cache,
            hits: 0,
            missed: false,
        }
    }

    /// Runs `f` over the cached pages. `None`: a page was missing, `f`'s result is void and the
    /// operation must be run again with the latch exclusive.
    pub fn run<R>(
        cache: &'a PageCache,
        f: impl FnOnce(&mut SharedReader<'a>) -> Result<R>,
    ) -> Option<Result<R>> {
        let mut r = SharedReader::new(cache);
        let out = f(&mut r);
        if r.missed {
            return None;
        }
        cache.pool.shared_hits.add(r.hits);
        Some(out)
    }

    fn refuse(&self, what: &str) -> Error {
        debug_assert!(false, "a shared reader was asked to {what}");
        Error::InvalidArgument(format!("internal: a shared reader cannot {what}"))
    }
}

impl PageStore for SharedReader<'_> {
    fn page_size(&self) -> usize {
        self.cache.pool.page_size()
    }

    fn read_page<R>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let Some(fr) = self.cache.pool.lookup(pid) else {
            self.missed = true;
            // Never seen by a caller: `run` discards the result of a reader that missed.
            return Err(Error::InvalidArgument("page not cached".into()));
        };
        self.cache.pool.touch_hit_shared(fr);
        self.hits += 1;
        let data = self.cache.pool.data(fr);
        if page::is_zeroed(data) {
            return Err(Error::CorruptPage {
                pid,
                reason: "page was never written (dangling reference)",
            });
        }
        Ok(f(data))
    }

    fn write_page<R>(&mut self, _pid: PageId, _f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        Err(self.refuse("write a page"))
    }

    fn alloc_page(&mut self, _kind: PageType) -> Result<PageId> {
        Err(self.refuse("allocate a page"))
    }

    fn free_page(&mut self, _pid: PageId) -> Result<()> {
        Err(self.refuse("free a page"))
    }
}
