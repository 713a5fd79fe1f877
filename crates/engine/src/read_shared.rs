//! Reading pages with the core latch shared: a [`PageStore`] over the cached pages only, for
//! B+tree reads (point reads and scans) that run beside other readers. Nothing changes pages,
//! the page table or frame assignments while the latch is shared, so a resident page's bytes are
//! stable for as long as the reader holds the latch. A page that is not resident (never read,
//! evicted, or evicted dirty and waiting for its redo) cannot be brought in here: the reader
//! records the miss and fails, and its caller runs the operation again with the latch exclusive.
//!
//! A reader changes nothing but the frames' reference bits (atomics); its hits are added to the
//! pool's counters only if its operation completes, so a read retried after a miss counts its
//! hits once, as a read run exclusive from the start would. A guarded frame (one that writers
//! may change with the latch shared, see `buffer.rs`) is read under its stripe latch, shared.
//!
//! [`SharedWriter`] is the writer's side: a plain leaf change (a put or delete that neither
//! splits nor merges nor touches an overflow chain, see `btree/tree/plain.rs`) of a guarded
//! leaf, with the latch shared. The B+tree's plain-change code runs over a store that latches
//! the first guarded page it meets exclusive (the leaf: inner nodes are not guarded) and refuses
//! anything beyond that page (a write elsewhere, an allocation, another guarded page once it
//! wrote; before, the latch moves to the other page, as a descent that follows a pending
//! split's link from one leaf to the next needs). The
//! change is found plain by reading and logged before it is made, so a refusal never leaves a
//! change to take back; the operation then runs again exclusive.
//!
//! A miss need not send the operation to the exclusive path: the page that was missing is
//! noted for this thread ([`take_miss`]), so the caller can read it in with the latch released
//! (`cache::PendingLoad`) and try again shared (`Shared::shared_op`).

use crate::btree::PageStore;
use crate::cache::PageCache;
use crate::error::{Error, Result};
use crate::locks::WriteProbe;
use crate::page::{self, Lsn, PageId, PageType};

thread_local! {
    /// The page whose miss last ended a shared attempt of this thread.
    static MISSED: std::cell::Cell<Option<PageId>> = const { std::cell::Cell::new(None) };
}

/// The page a shared reader or writer of this thread last found missing, if any (and forgets
/// it).
pub(crate) fn take_miss() -> Option<PageId> {
    MISSED.with(|m| m.take())
}

fn note_miss(pid: PageId) {
    MISSED.with(|m| m.set(Some(pid)));
}

pub(crate) struct SharedReader<'a> {
    cache: &'a PageCache,
    hits: u64,
    missed: bool,
    /// For a read outside any transaction: asked after each page is read, under that page's
    /// latch; `unclear` records a `false` (a writer may hold an uncommitted change of the key).
    probe: Option<WriteProbe<'a>>,
    unclear: bool,
    /// Where a part of a scan counts its hits as it goes, for its sink to see (see
    /// [`SharedReader::run_keeping`]).
    tally: Option<&'a std::cell::Cell<u64>>,
}

impl<'a> SharedReader<'a> {
    pub fn new(cache: &'a PageCache) -> SharedReader<'a> {
        SharedReader {
            cache,
            hits: 0,
            missed: false,
            probe: None,
            unclear: false,
            tally: None,
        }
    }

    /// [`SharedReader::run`] for a point read outside any transaction: `None` also when
    /// `probe`, asked under the latch of each page read (the leaf among them), does not find
    /// the key clear of writers; then the read must run as a transaction.
    pub fn run_committed<R>(
        cache: &'a PageCache,
        probe: WriteProbe<'a>,
        f: impl FnOnce(&mut SharedReader<'a>) -> Result<R>,
    ) -> Option<Result<R>> {
        let mut r = SharedReader::new(cache);
        r.probe = Some(probe);
        let out = f(&mut r);
        if r.missed || r.unclear {
            return None;
        }
        cache.pool.shared_hits.add(r.hits);
        Some(out)
    }

    /// Runs `f` over the cached pages. `None`: a page was missing, `f`'s result is void and the
    /// operation must be run again with the latch exclusive.
    pub fn run<R>(
        cache: &'a PageCache,
        f: impl FnOnce(&mut SharedReader<'a>) -> Result<R>,
    ) -> Option<Result<R>> {
        let mut hits = 0;
        let out = SharedReader::run_tallied(cache, &mut hits, f);
        if out.is_some() {
            cache.pool.shared_hits.add(hits);
        }
        out
    }

    /// [`SharedReader::run`] for one part of an operation made of several: the page hits are
    /// added to `hits`, not counted, so an operation that misses in a later part and runs again
    /// exclusive does not count its earlier parts twice.
    pub fn run_tallied<R>(
        cache: &'a PageCache,
        hits: &mut u64,
        f: impl FnOnce(&mut SharedReader<'a>) -> Result<R>,
    ) -> Option<Result<R>> {
        let mut r = SharedReader::new(cache);
        let out = f(&mut r);
        if r.missed {
            return None;
        }
        *hits += r.hits;
        Some(out)
    }

    /// [`SharedReader::run`] for a part of a scan that may keep what it read although a miss
    /// ended it (`Core::scan_shared_to`): its page hits are counted in `tally` as they come,
    /// where the scan's sink notes them as it reaches through its leaves, and not in the pool:
    /// the caller counts those it keeps.
    pub fn run_keeping<R>(
        cache: &'a PageCache,
        tally: &'a std::cell::Cell<u64>,
        f: impl FnOnce(&mut SharedReader<'a>) -> Result<R>,
    ) -> Option<Result<R>> {
        let mut r = SharedReader::new(cache);
        r.tally = Some(tally);
        let out = f(&mut r);
        (!r.missed).then_some(out)
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
        self.read_node(pid, |p, _| f(p))
    }

    fn read_node<R>(
        &mut self,
        pid: PageId,
        f: impl FnOnce(&[u8], Option<&crate::btree::node::SearchHints>) -> R,
    ) -> Result<R> {
        // A page another thread is loading counts as missing: waiting here would hold the
        // latch shared across that thread's device read.
        let crate::buffer::Seen::Resident(fr) = self.cache.pool.seen(pid) else {
            self.missed = true;
            note_miss(pid);
            // Never seen by a caller: `run` discards the result of a reader that missed.
            return Err(Error::InvalidArgument("page not cached".into()));
        };
        // The node header's line and the slot array's first lines, fetched at once rather than
        // one after the other as the search reaches them.
        let data = self.cache.pool.data(fr);
        for line in 0..3 {
            crate::sync::prefetch(data, line * 64);
        }
        self.cache.pool.touch_hit_shared(fr);
        self.hits += 1;
        let _latch = self
            .cache
            .pool
            .guarded(fr)
            .then(|| crate::sync::read(self.cache.pool.frame_latch(fr)));
        if let Some(t) = self.tally {
            t.set(t.get() + 1);
        }
        let cache = self.cache;
        let out = read_checked(data, pid, |p| f(p, Some(&cache.hints)));
        // Asked with the latch still held: a writer counted in the probe from before its change
        // cannot have undone it and been uncounted in between (that needs this latch).
        if self.probe.as_ref().is_some_and(|p| !p.clear()) {
            self.unclear = true;
        }
        out
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

/// Runs `f` over a page image, refusing an all-zero page (a reference to a page never written).
fn read_checked<R>(data: &[u8], pid: PageId, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
    if page::is_zeroed(data) {
        return Err(Error::CorruptPage {
            pid,
            reason: "page was never written (dangling reference)",
        });
    }
    Ok(f(data))
}

/// Why a [`SharedWriter`] gave up (the operation then runs exclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    /// A page not in memory.
    Miss,
    /// More than a plain change of one guarded page.
    NotPlain,
}

/// A plain leaf change with the core latch shared (see the module notes).
pub(crate) struct SharedWriter<'a> {
    cache: &'a PageCache,
    hits: u64,
    refused: Option<Refusal>,
    /// The guarded frame latched exclusive, and its page.
    latched: Option<(u32, PageId, std::sync::RwLockWriteGuard<'a, ()>)>,
    /// The latched page was written.
    written: bool,
}

impl<'a> SharedWriter<'a> {
    pub fn new(cache: &'a PageCache) -> SharedWriter<'a> {
        SharedWriter {
            cache,
            hits: 0,
            refused: None,
            latched: None,
            written: false,
        }
    }

    /// Whether the writer refused part of the operation (its result is void).
    pub fn refused(&self) -> bool {
        self.refused.is_some()
    }

    /// Whether `pid` is the guarded page this writer holds latched exclusive (the only page it
    /// may write).
    pub fn latches(&self, pid: PageId) -> bool {
        matches!(&self.latched, Some((_, p, _)) if *p == pid)
    }

    /// The page this writer holds latched exclusive, as it is now (not counted as a hit).
    pub fn latched_page(&self) -> Option<&[u8]> {
        self.latched
            .as_ref()
            .map(|(f, _, _guard)| self.cache.pool.data(*f))
    }

    /// Ends the operation: stamps `lsn` on the changed page (if `lsn` is not 0) and queues its
    /// dirty mark, releases the latch and counts the hits.
    pub fn finish(mut self, lsn: Lsn) {
        if let Some((f, _, _)) = self.latched.as_ref() {
            if self.written && lsn != 0 {
                // SAFETY: the frame is guarded and its stripe latch is held exclusive.
                let data = unsafe { self.cache.pool.frames[*f as usize].data.write_shared() };
                page::set_page_lsn(data, lsn);
                self.cache.pool.queue_dirty(*f, lsn);
            }
        }
        self.latched = None;
        self.cache.pool.shared_hits.add(self.hits);
    }

    fn refuse(&mut self, why: Refusal) -> Error {
        self.refused.get_or_insert(why);
        // Never seen by a caller: a refused operation is run again exclusive.
        Error::InvalidArgument("internal: refused by a shared writer".into())
    }

    /// The frame of `pid` for this operation: an unguarded one as it is, the first guarded one
    /// latched exclusive; None (refused) for a missing page or a second guarded page.
    fn frame(&mut self, pid: PageId) -> std::result::Result<u32, Error> {
        let crate::buffer::Seen::Resident(f) = self.cache.pool.seen(pid) else {
            if self.refused.is_none() {
                note_miss(pid);
            }
            return Err(self.refuse(Refusal::Miss));
        };
        self.cache.pool.touch_hit_shared(f);
        self.hits += 1;
        if !self.cache.pool.guarded(f) {
            return Ok(f);
        }
        match &self.latched {
            Some((g, _, _)) if *g == f => Ok(f),
            Some(_) if self.written => Err(self.refuse(Refusal::NotPlain)),
            Some(_) => {
                // Not written yet: the latch moves to this page (a descent following the link
                // of a leaf whose split is pending, see `tree::settle_leaf`). One stripe latch
                // at a time; what was read of the page let go is not used after.
                let (g, _, held) = self.latched.take().expect("matched");
                let same = std::ptr::eq(
                    self.cache.pool.frame_latch(g),
                    self.cache.pool.frame_latch(f),
                );
                let latch = if same {
                    held
                } else {
                    drop(held);
                    crate::sync::write(self.cache.pool.frame_latch(f))
                };
                self.latched = Some((f, pid, latch));
                Ok(f)
            }
            None => {
                let latch = crate::sync::write(self.cache.pool.frame_latch(f));
                self.latched = Some((f, pid, latch));
                Ok(f)
            }
        }
    }
}

impl PageStore for SharedWriter<'_> {
    fn page_size(&self) -> usize {
        self.cache.pool.page_size()
    }

    fn read_page<R>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        self.read_node(pid, |p, _| f(p))
    }

    fn read_node<R>(
        &mut self,
        pid: PageId,
        f: impl FnOnce(&[u8], Option<&crate::btree::node::SearchHints>) -> R,
    ) -> Result<R> {
        let fr = self.frame(pid)?;
        let cache = self.cache;
        read_checked(cache.pool.data(fr), pid, |p| f(p, Some(&cache.hints)))
    }

    fn write_page<R>(&mut self, pid: PageId, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        let fr = self.frame(pid)?;
        if !matches!(&self.latched, Some((g, _, _)) if *g == fr) {
            // Only the latched guarded page may change.
            return Err(self.refuse(Refusal::NotPlain));
        }
        // SAFETY: the frame is guarded and its stripe latch is held exclusive (`frame`).
        let data = unsafe { self.cache.pool.frames[fr as usize].data.write_shared() };
        self.written = true;
        Ok(f(data))
    }

    fn alloc_page(&mut self, _kind: PageType) -> Result<PageId> {
        Err(self.refuse(Refusal::NotPlain))
    }

    fn free_page(&mut self, _pid: PageId) -> Result<()> {
        Err(self.refuse(Refusal::NotPlain))
    }
}
