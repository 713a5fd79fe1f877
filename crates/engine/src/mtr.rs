//! Mini-transactions: one tree operation's page accesses through the buffer pool, turned into
//! exactly one log record. The pages an operation writes stay pinned until the record is appended
//! and every one of them carries its LSN; a simple in-place leaf change is logged physiologically
//! (page + key), anything else (splits, merges, overflow chains, allocation) as after-images.
//!
//! The record goes to a [`RedoSink`]: today the log itself (every operation logged at once, ARIES
//! style); a sink that keeps records until commit (paper 001's redo-only logging) plugs in here.

use crate::btree::node::PutError;
use crate::btree::PageStore;
use crate::cache::PageCache;
use crate::error::{Error, Result};
use crate::meta::{self, META_PID};
use crate::page::{self, Lsn, PageId, PageType};
use crate::page_op::PageOp;
use crate::wal::record::{Body, PageRedo, Redo, TxnId};
use crate::wal::Wal;
use crate::writepath::LogSink;

/// Where a mini-transaction's record goes, and the log operations a page write may need
/// (the write-ahead rule on eviction).
pub(crate) trait RedoSink: LogSink {
    /// Logs one operation of `txn` (0: a system operation) whose previous record is `prev_lsn`;
    /// returns the record's LSN.
    fn append_op(&mut self, txn: TxnId, prev_lsn: Lsn, body: Body) -> Result<Lsn>;
    /// The operation allocated page `pid` (told before `append_op`).
    fn note_alloc(&mut self, _pid: PageId) {}
    /// Whether freeing `pid` waits for the transaction's commit (then the operation leaves the
    /// page and the free list alone).
    fn defer_free(&mut self, _pid: PageId) -> bool {
        false
    }
    /// The page LSN and the owner to stamp on page `pid` of an operation of `txn` that
    /// `append_op` logged at `lsn` (a sink may log part of an operation separately).
    fn stamp(&self, _pid: PageId, lsn: Lsn, txn: TxnId) -> (Lsn, TxnId) {
        (lsn, txn)
    }
    /// Whether a page changed only by page operations may be logged as them (redo tag 5)
    /// rather than as its image.
    fn page_ops(&self) -> bool {
        false
    }
    /// Lets appends use the log's system reserve (on) or not, as rollbacks do; returns the
    /// setting before. A sink without a reserve ignores it.
    fn swap_unreserved(&mut self, _on: bool) -> bool {
        false
    }
}

impl RedoSink for Wal {
    fn append_op(&mut self, txn: TxnId, prev_lsn: Lsn, body: Body) -> Result<Lsn> {
        self.append(txn, prev_lsn, body)
    }
    fn page_ops(&self) -> bool {
        self.config().page_ops
    }
    fn swap_unreserved(&mut self, on: bool) -> bool {
        Wal::swap_unreserved(self, on)
    }
}

/// Page access for one operation.
pub(crate) struct Mtr<'a> {
    cache: &'a mut PageCache,
    log: &'a mut dyn RedoSink,
    /// Pages written by this operation, with their frames (pinned).
    touched: Vec<(PageId, u32)>,
    /// What is kept of each touched page, in the order of `touched`.
    before: Vec<Kept>,
}

/// What a mini-transaction keeps of a page it touched.
struct Kept {
    /// The page before the operation (None: created by it), so a failed operation can be
    /// undone in memory instead of poisoning the database.
    image: Option<Box<[u8]>>,
    /// The page operations that changed the page, if nothing else did (None: created, changed
    /// by a `write_page` closure, or a sink that takes no operations; then its image is logged).
    ops: Option<Vec<PageOp>>,
}

impl<'a> Mtr<'a> {
    pub fn new(cache: &'a mut PageCache, log: &'a mut dyn RedoSink) -> Self {
        Mtr {
            cache,
            log,
            touched: Vec::new(),
            before: Vec::new(),
        }
    }

    fn frame(&mut self, pid: PageId) -> Result<u32> {
        self.cache.fetch(pid, &mut *self.log)
    }

    /// Pins a page the operation changes and keeps what a failure must put back: its contents
    /// before the operation (`before`: given for a page that is being created over a cached
    /// image; read from the frame otherwise), or None for a page created in a frame of its own.
    /// Returns the page's index in `touched`.
    fn touch(&mut self, pid: PageId, f: u32, created: bool, before: Option<Box<[u8]>>) -> usize {
        if let Some(i) = self.touched.iter().position(|(p, _)| *p == pid) {
            return i;
        }
        self.cache.pool.pin(f);
        self.touched.push((pid, f));
        let image = if created {
            before
        } else {
            Some(self.cache.pool.data(f).into())
        };
        let ops = (!created && self.log.page_ops()).then(Vec::new);
        self.before.push(Kept { image, ops });
        self.touched.len() - 1
    }

    /// The redo of what this operation did: physiological if `leaf` names the only page touched
    /// and the change was a plain leaf put/delete, after-images otherwise. None if nothing changed.
    pub fn redo(&self, leaf: Option<LeafChange<'_>>) -> Option<Redo> {
        if self.touched.is_empty() {
            return None;
        }
        if let Some(ch) = leaf {
            if self.touched.len() == 1 && self.touched[0].0 == ch.pid() {
                return Some(ch.into_redo());
            }
        }
        let image = |f: u32| self.cache.pool.data(f).to_vec();
        // An operation list longer than the page it describes is logged as the page.
        let ps = self.cache.pool.page_size();
        fn as_ops(ops: &Option<Vec<PageOp>>, ps: usize) -> Option<&Vec<PageOp>> {
            ops.as_ref()
                .filter(|v| v.iter().map(PageOp::bytes).sum::<usize>() < ps)
        }
        if self.before.iter().all(|k| as_ops(&k.ops, ps).is_none()) {
            return Some(Redo::Images(
                self.touched
                    .iter()
                    .map(|&(pid, f)| (pid, image(f)))
                    .collect(),
            ));
        }
        Some(Redo::Pages(
            self.touched
                .iter()
                .zip(&self.before)
                .map(|(&(pid, f), k)| match as_ops(&k.ops, ps) {
                    Some(ops) => (pid, PageRedo::Ops(ops.clone())),
                    None => (pid, PageRedo::Image(image(f))),
                })
                .collect(),
        ))
    }

    /// Guards every B+tree leaf this operation touched, and unguards the other pages: a
    /// guarded leaf may be changed in place with the core latch shared (see `buffer.rs`).
    pub fn guard_touched(&mut self) {
        for &(_, f) in &self.touched {
            let leaf = crate::buffer::is_leaf(self.cache.pool.data(f));
            self.cache.pool.set_guarded(f, leaf);
        }
    }

    /// Appends the operation's record and stamps its LSN on every touched page (marking them
    /// dirty), then unpins them. Returns the LSN (0 if nothing was logged). If the append fails,
    /// the mini-transaction comes back with the error so the caller can `release` it.
    /// The pages the operation changed are added to `changed` (for the transaction's list of
    /// pages with uncommitted changes).
    pub fn append(
        mut self,
        txn: TxnId,
        prev_lsn: Lsn,
        body: Option<Body>,
        changed: &mut Vec<PageId>,
    ) -> std::result::Result<Lsn, (Self, Error)> {
        let lsn = match body {
            Some(b) => match self.log.append_op(txn, prev_lsn, b) {
                Ok(l) => l,
                Err(e) => return Err((self, e)),
            },
            None => 0,
        };
        self.before.clear();
        for (pid, f) in std::mem::take(&mut self.touched) {
            if lsn != 0 {
                let (lsn, owner) = self.log.stamp(pid, lsn, txn);
                if owner == txn {
                    changed.push(pid);
                }
                page::set_page_lsn(self.cache.pool.data_mut(f), lsn);
                self.cache.pool.mark_dirty(f, lsn, owner);
            }
            self.cache.pool.unpin(f);
        }
        Ok(lsn)
    }

    /// Unpins without logging. For a failed operation: every page it changed gets its
    /// contents from before the operation back, and a page it created in a frame of its own
    /// leaves the pool (its frame held nothing the device does not: the next read of that page,
    /// e.g. a free-list page the allocation had taken, comes from the device again).
    pub fn release(mut self) {
        let before = std::mem::take(&mut self.before);
        for ((_, f), kept) in std::mem::take(&mut self.touched).into_iter().zip(before) {
            self.cache.pool.unpin(f);
            match kept.image {
                Some(img) => self.cache.pool.data_mut(f).copy_from_slice(&img),
                None => {
                    debug_assert!(!self.cache.pool.frames[f as usize].dirty);
                    self.cache.pool.evict(f, false);
                }
            }
        }
    }
}

/// A plain in-place leaf change, as the B+tree reports it.
pub(crate) enum LeafChange<'k> {
    Put {
        pid: PageId,
        key: &'k [u8],
        value: &'k [u8],
    },
    Del {
        pid: PageId,
        key: &'k [u8],
    },
}

impl LeafChange<'_> {
    fn pid(&self) -> PageId {
        match self {
            LeafChange::Put { pid, .. } | LeafChange::Del { pid, .. } => *pid,
        }
    }
    fn into_redo(self) -> Redo {
        match self {
            LeafChange::Put { pid, key, value } => Redo::LeafPut {
                pid,
                key: key.to_vec(),
                value: value.to_vec(),
            },
            LeafChange::Del { pid, key } => Redo::LeafDel {
                pid,
                key: key.to_vec(),
            },
        }
    }
}

impl PageStore for Mtr<'_> {
    fn page_size(&self) -> usize {
        self.cache.pool.page_size()
    }

    fn read_page<R>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let fr = self.frame(pid)?;
        let data = self.cache.pool.data(fr);
        if page::is_zeroed(data) {
            return Err(Error::CorruptPage {
                pid,
                reason: "page was never written (dangling reference)",
            });
        }
        Ok(f(data))
    }

    fn write_page<R>(&mut self, pid: PageId, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        let fr = self.frame(pid)?;
        let i = self.touch(pid, fr, false, None);
        self.before[i].ops = None;
        Ok(f(self.cache.pool.data_mut(fr)))
    }

    fn apply_op(&mut self, pid: PageId, op: PageOp) -> Result<std::result::Result<(), PutError>> {
        let fr = self.frame(pid)?;
        let i = self.touch(pid, fr, false, None);
        let r = crate::page_op::apply_op(self.cache.pool.data_mut(fr), &op);
        match r {
            Ok(()) => {
                if let Some(ops) = &mut self.before[i].ops {
                    ops.push(op);
                }
                Ok(Ok(()))
            }
            // Nothing changed (a full node); the page stays as it was, loggable as before.
            Err(PutError::NoSpace) => Ok(Err(PutError::NoSpace)),
            Err(PutError::Corrupt(e)) => Err(e),
        }
    }

    fn alloc_page(&mut self, kind: PageType) -> Result<PageId> {
        let capacity = self.cache.page_capacity;
        let pid = self.take_page(capacity)?;
        // A page evicted dirty is brought back first, so a failure can restore its image.
        if self.cache.pool.state(pid) == Some(crate::buffer::PageState::EvictedDirty) {
            self.frame(pid)?;
        }
        // A page reused from the free list may be cached: a failure must give that image back.
        let cached: Option<Box<[u8]>> = self
            .cache
            .pool
            .lookup(pid)
            .filter(|_| !self.touched.iter().any(|(p, _)| *p == pid))
            .map(|f| self.cache.pool.data(f).into());
        let fr = self.cache.create(pid, &mut *self.log)?;
        let i = self.touch(pid, fr, true, cached);
        // A new page is logged as its image, even one this operation touched before (freed).
        self.before[i].ops = None;
        page::init(self.cache.pool.data_mut(fr), pid, kind);
        self.log.note_alloc(pid);
        Ok(pid)
    }

    fn free_page(&mut self, pid: PageId) -> Result<()> {
        if pid == META_PID {
            return Err(Error::InvalidArgument(
                "the meta page cannot be freed".into(),
            ));
        }
        if self.log.defer_free(pid) {
            return Ok(());
        }
        let head = self.read_page(META_PID, meta::free_head)?;
        self.write_page(pid, |p| {
            page::init(p, pid, PageType::Free);
            meta::set_free_next(p, head);
        })?;
        self.meta_op(PageOp::MetaFreeHead(pid))?;
        Ok(())
    }
}

impl Mtr<'_> {
    /// Changes an allocation field of the meta page.
    fn meta_op(&mut self, op: PageOp) -> Result<()> {
        match self.apply_op(META_PID, op)? {
            Ok(()) => Ok(()),
            Err(_) => Err(Error::CorruptPage {
                pid: META_PID,
                reason: "a meta page field did not fit",
            }),
        }
    }

    /// A page id for a new page: the free list's head, or the next never-used page.
    fn take_page(&mut self, capacity: u64) -> Result<PageId> {
        let head = self.read_page(META_PID, meta::free_head)?;
        let pid = if head != 0 {
            let next = self.read_page(head, meta::free_next)?;
            self.meta_op(PageOp::MetaFreeHead(next))?;
            head
        } else {
            let pid = self.read_page(META_PID, meta::next_pid)?;
            let reserve = self.cache.page_reserve;
            if pid.saturating_add(reserve) >= capacity {
                return Err(Error::Full(format!(
                    "all {capacity} pages of the data device are in use or kept for the \
                     rollback of live transactions ({reserve} kept)"
                )));
            }
            self.meta_op(PageOp::MetaNextPid(pid + 1))?;
            pid
        };
        Ok(pid)
    }
}
