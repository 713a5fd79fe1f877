//! Leaf splits beside other threads: the state a split made with the core latch shared leaves
//! for the next holder of the exclusive latch (docs/engine.md, "Leaf splits beside other
//! threads").
//!
//! A writer whose plain change finds its (guarded, latched) leaf full may split it with the
//! core latch shared (`engine/split_beside.rs`): the halves are made aside
//! ([`crate::btree::tree::split_beside`]), logged as one record, and written to the leaf and to
//! a new page; the leaf's *split-pending* flag stands in for the separator its parent does not
//! have yet. What the split needs beyond its leaf is kept here:
//!
//! - a **stock** of free frames, set aside (pinned, holding no page) under the exclusive latch:
//!   the new page's frame. The page is claimed in the page table with the latch shared, as a
//!   miss claims its frame, before the leaf's latch is let go
//!   ([`crate::buffer::BufferPool::claim_made`]): whoever follows the leaf's link finds it
//!   resident and guarded, and may read, change and split it beside others too. The frame's
//!   own bookkeeping (its page id, its pin) waits for the next exclusive latch
//!   ([`PageCache::adopt_split_pages`]). (Until the twenty-ninth session the page joined the
//!   table only then: whoever followed the link missed and took the latch exclusive to adopt
//!   it, once per split: in TPC-C, whose inserts go to the right edge of their trees, most of
//!   the exclusive takes; a page whose table chunk does not exist yet still waits so.)
//! - the **allocation mutex**, held from reading the meta page's next page id to stamping its
//!   change: splitters beside each other take page ids, and change the meta page, one at a
//!   time and in log order (nobody else reads the meta page while the latch is shared);
//! - the **pending** splits, posted to their parents ([`settle`]) before any other change of a
//!   tree with the latch exclusive, and before a checkpoint record is logged. A checkpoint thus
//!   never has a split pending, so recovery finds every pending split in the records after the
//!   last checkpoint (`recovery.rs` posts them after redo).

use crate::btree::tree as bt;
use crate::cache::PageCache;
use crate::config::LeafSplits;
use crate::error::Result;
use crate::mtr::RedoSink;
use crate::page::PageId;
use crate::wal::record::Body;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Splits that may be pending at once: a split beside others waits for the exclusive latch
/// when this many are (and the exclusive change then posts them all).
pub const MAX_PENDING: usize = 64;
/// Frames the stock is filled to (at most a sixteenth of the pool): as many as splits may be
/// pending, so that the stock lasts until the posting that refills it.
const STOCK_FRAMES: usize = MAX_PENDING;
// A chain of pending splits is shorter than descents follow.
const _: () = assert!(MAX_PENDING < bt::MAX_PENDING_CHAIN);
/// Never-used pages a split beside others leaves for the posting of the pending splits: four a
/// split (a parent split takes a page, a root split two). A posting that needs more than is
/// left fails with `Full`, as an exclusive split would, and its split stays pending.
pub const POSTING_PAGES: u64 = POSTING_PAGES_EACH * MAX_PENDING as u64;
/// Pages one posting may allocate (see [`POSTING_PAGES`]).
pub const POSTING_PAGES_EACH: u64 = 4;
/// Log a posting may take, in pages (the leaf's and its parent's images where page operations
/// are off, a parent split's pages): reserved by the split beside others that makes it pending
/// (counted in every space check, as rollbacks' reservations are) until it is posted.
pub const POSTING_LOG_PAGES: u64 = 3;

/// Merges that plain deletes beside other threads left for later (see [`Splits::merge_later`]):
/// while this many wait, such a delete runs exclusive instead (and the merges are made first).
pub const MAX_MERGES: usize = 64;

/// A split made beside other threads whose separator is not in the parent yet.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingSplit {
    /// The tree's root (roots never move).
    pub root: PageId,
    /// The leaf that split (it keeps the lower half and carries the flag).
    pub leaf: PageId,
    /// Log bytes reserved for its posting (0: found by recovery, which needs none reserved).
    pub reserved: u64,
}

/// See the module notes.
pub(crate) struct Splits {
    pub mode: LeafSplits,
    stock: Mutex<Vec<u32>>,
    /// A split took from the stock: the next exclusive change fills it.
    want_stock: AtomicBool,
    /// Held from reading the meta page's next page id to stamping its change.
    pub alloc: Mutex<()>,
    /// New pages whose frames the next exclusive latch completes: (frame, page, whether it is
    /// in the page table already: [`crate::buffer::BufferPool::claim_made`]).
    adopt: Mutex<Vec<(u32, PageId, bool)>>,
    /// Whether `adopt` may hold any (read without its mutex by every exclusive latch).
    adopt_any: AtomicBool,
    pending: Mutex<Vec<PendingSplit>>,
    /// Pending splits, read without the mutex (0: nothing to post).
    pending_count: AtomicUsize,
    /// Leaves a delete beside other threads left under-full: (the tree's root, the leaf, the
    /// deleted key, which leads to it), merged by [`settle`] if they still are.
    merges: Mutex<Vec<(PageId, PageId, Vec<u8>)>>,
    /// Entries of `merges`, read without the mutex.
    merges_count: AtomicUsize,
    /// Log bytes reserved for the postings of the pending splits, counted in every space check
    /// (`TxnTable::share_reserved`).
    posting_reserved: std::sync::Arc<AtomicU64>,
    /// Threads that have run an operation on this database (`Shared::shared_op`), as far as
    /// [`Splits::note_thread`] tells them apart: [`LeafSplits::Auto`] splits beside others
    /// once there were two.
    threads: AtomicUsize,
    /// This database among those the threads of the process have used.
    id: u64,
}

/// Ids of [`Splits`] (open databases) in this process.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Databases a thread has run operations on, most recent last (a few).
const JOINED_KEPT: usize = 8;

thread_local! {
    static JOINED: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Splits {
    pub fn new(mode: LeafSplits) -> Splits {
        Splits {
            mode,
            stock: Mutex::new(Vec::new()),
            want_stock: AtomicBool::new(false),
            alloc: Mutex::new(()),
            adopt: Mutex::new(Vec::new()),
            adopt_any: AtomicBool::new(false),
            pending: Mutex::new(Vec::new()),
            pending_count: AtomicUsize::new(0),
            merges: Mutex::new(Vec::new()),
            merges_count: AtomicUsize::new(0),
            posting_reserved: Default::default(),
            threads: AtomicUsize::new(0),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Counts the calling thread among this database's threads, the first time it runs an
    /// operation here (a thread-local look, no shared write after that; a thread that used
    /// more than a few databases since may be counted again, which only makes `Auto` split
    /// beside others sooner).
    /// Returns whether this call counted a thread and more than one is counted now.
    pub fn note_thread(&self) -> bool {
        JOINED.with(|j| {
            let mut j = j.borrow_mut();
            if j.last() == Some(&self.id) {
                return false;
            }
            let mut several = false;
            match j.iter().position(|&d| d == self.id) {
                Some(i) => {
                    j.remove(i);
                }
                None => {
                    several = self.threads.fetch_add(1, Ordering::Relaxed) > 0;
                    if j.len() == JOINED_KEPT {
                        j.remove(0);
                    }
                }
            }
            j.push(self.id);
            several
        })
    }

    /// Whether a split may be made beside other threads now (the mode; with `Auto`, a second
    /// thread has run operations here), with room for one more pending split.
    pub fn beside_now(&self) -> bool {
        self.beside_mode() && self.room()
    }

    /// Whether structure work may be made or left beside other threads now: the mode, and
    /// with `Auto` a second thread has run operations here.
    fn beside_mode(&self) -> bool {
        match self.mode {
            LeafSplits::Exclusive => false,
            LeafSplits::Beside => true,
            LeafSplits::Auto => self.threads.load(Ordering::Relaxed) > 1,
        }
    }

    /// Whether a plain delete beside other threads may leave its leaf under-full, its merge
    /// for later ([`Splits::merge_later`]): when splits are made beside others, with room for
    /// one more. A lone thread (`Auto`) merges at once, as it always did.
    pub fn merges_later(&self) -> bool {
        self.beside_mode() && self.merges_count.load(Ordering::Relaxed) < MAX_MERGES
    }

    /// Leaves the merge of `leaf`, which a delete of `key` in the tree of `root` left
    /// under-full, to the next exclusive change ([`settle`]), which makes it if the leaf (the
    /// one `key` then leads to) is still under-full. A leaf is listed once, however many
    /// deletes find it under-full. A merge is never needed for correctness: one that does not
    /// fit the list (another delete took the last room) is left to a later delete of that leaf.
    pub fn merge_later(&self, root: PageId, leaf: PageId, key: &[u8]) {
        let mut m = crate::sync::lock(&self.merges);
        if m.len() < MAX_MERGES && !m.iter().any(|e| e.1 == leaf) {
            m.push((root, leaf, key.to_vec()));
            self.merges_count.store(m.len(), Ordering::Relaxed);
        }
    }

    /// Whether a second thread has run operations on this database (see
    /// [`Splits::note_thread`]).
    pub fn several_threads(&self) -> bool {
        self.threads.load(Ordering::Relaxed) > 1
    }

    /// Whether `pid` is a page a split beside other threads made, not in the page table yet
    /// (core latch shared: a thread that learnt the page id from the split's leaf sees it).
    pub fn adopting(&self, pid: PageId) -> bool {
        self.adopt_any.load(Ordering::Acquire)
            && crate::sync::lock(&self.adopt)
                .iter()
                .any(|&(_, p, claimed)| p == pid && !claimed)
    }

    /// A frame from the stock (`None` when it is empty); the next exclusive change fills it up
    /// again.
    pub fn take_frame(&self) -> Option<u32> {
        self.want_stock.store(true, Ordering::Relaxed);
        crate::sync::lock(&self.stock).pop()
    }

    /// Gives back a frame a split took and did not use.
    pub fn return_frame(&self, f: u32) {
        crate::sync::lock(&self.stock).push(f);
    }

    /// Records a split beside other threads: the separator to post and, for a new page in a
    /// stock frame, (frame, page, `claimed`: in the page table already, else to be put there)
    /// (a free page reused keeps its frame). Called before the split's pages are let go, so
    /// an exclusive latch taken after it sees both.
    pub fn made(&self, split: PendingSplit, adopt: Option<(u32, PageId, bool)>) {
        if let Some(a) = adopt {
            crate::sync::lock(&self.adopt).push(a);
            self.adopt_any.store(true, Ordering::Release);
        }
        let mut p = crate::sync::lock(&self.pending);
        p.push(split);
        self.pending_count.store(p.len(), Ordering::Relaxed);
    }

    /// Whether another split may be made pending (asked again under `alloc`, under which
    /// splits are made: exact there).
    pub fn room(&self) -> bool {
        self.pending_count.load(Ordering::Relaxed) < MAX_PENDING
    }

    /// The count of log bytes reserved for postings, for the transaction table's space checks.
    pub fn posting_reserve(&self) -> std::sync::Arc<AtomicU64> {
        self.posting_reserved.clone()
    }

    /// Reserves `bytes` of log for a posting (the log latch held, so the next writer's space
    /// check counts them).
    pub fn reserve_posting(&self, bytes: u64) {
        self.posting_reserved.fetch_add(bytes, Ordering::AcqRel);
    }

    /// Pages the postings of the pending splits may allocate: kept from other allocations
    /// (`Core::sync_page_reserve`), given to the postings (`settle`).
    pub fn posting_pages(&self) -> u64 {
        self.pending_count.load(Ordering::Relaxed) as u64 * POSTING_PAGES_EACH
    }

    /// Whether splits are pending (exclusive latch: exact).
    pub fn any_pending(&self) -> bool {
        self.pending_count.load(Ordering::Relaxed) > 0
    }

    /// Adds splits to post (recovery: those the log left pending), in the order to post them.
    pub fn add_pending(&self, splits: impl IntoIterator<Item = PendingSplit>) {
        let mut p = crate::sync::lock(&self.pending);
        p.extend(splits);
        self.pending_count.store(p.len(), Ordering::Relaxed);
    }
}

impl PageCache {
    /// Completes the frames of the pages that splits beside other threads made, and puts those
    /// not claimed in the page table, guarded (core latch exclusive, before the dirty marks
    /// queued with the latch shared are applied: those of the new pages among them).
    pub fn adopt_split_pages(&mut self) {
        // Set under the core latch shared, read under it exclusive: no split is being made.
        if !self.splits.adopt_any.swap(false, Ordering::Acquire) {
            return;
        }
        let adopt = std::mem::take(&mut *crate::sync::lock(&self.splits.adopt));
        for (f, pid, claimed) in adopt {
            if claimed {
                // Resident and guarded since the split: its frame is completed as a miss's.
                self.pool.adopt_loaded(f, pid);
                continue;
            }
            self.pool.unpin(f);
            self.pool.install(f, pid);
            self.pool.set_guarded(f, true);
        }
    }

    /// Gives the stock's frames back to the pool (core latch exclusive: an eviction that found
    /// every other frame pinned). Whether there were any.
    pub(crate) fn release_split_stock(&mut self) -> bool {
        let stock = std::mem::take(&mut *crate::sync::lock(&self.splits.stock));
        self.pool.give_back(&stock)
    }

    /// Fills the stock of free frames if a split found it empty (core latch exclusive). Dirty
    /// victims are written as any eviction writes them; a pool with no frame to spare fills
    /// nothing (its splits then run exclusive).
    fn fill_stock(&mut self, log: &mut dyn RedoSink) {
        if !self.splits.want_stock.swap(false, Ordering::Relaxed) {
            return;
        }
        let want = STOCK_FRAMES.min(self.pool.frame_count() / 16);
        while crate::sync::lock(&self.splits.stock).len() < want {
            // A victim whose write fails (out of place: no space) stays in the pool; the
            // stock waits, and the failure is met again by whichever eviction comes next.
            let Ok(f) = self.free_frame(log) else {
                break;
            };
            // Pinned, its bits clear (the evicted page's are left behind): ready for a claim.
            self.pool.set_aside(f);
            crate::sync::lock(&self.splits.stock).push(f);
        }
    }
}

/// Brings the trees up to date before a change made with the core latch exclusive: posts every
/// pending split's separator (each as a system operation, in the order they were made) and
/// fills the frame stock if it was asked for. On an error the splits not posted stay pending
/// (their trees read correctly) and the error is the change's.
pub(crate) fn settle(cache: &mut PageCache, log: &mut dyn RedoSink) -> Result<()> {
    if cache.splits.any_pending() {
        let pending = std::mem::take(&mut *crate::sync::lock(&cache.splits.pending));
        cache.splits.pending_count.store(0, Ordering::Relaxed);
        // The posting must be made before anything else changes a tree: it may use the log's
        // system reserve, as a rollback does, and the pages kept for it.
        let was = log.swap_unreserved(true);
        let kept = cache.page_reserve;
        cache.page_reserve = kept.saturating_sub(pending.len() as u64 * POSTING_PAGES_EACH);
        let mut r = Ok(());
        for (i, p) in pending.iter().enumerate() {
            r = crate::ops::run_op_settled(
                cache,
                log,
                (0, 0),
                &mut Vec::new(),
                |m| bt::post_split(m, p.root, p.leaf).map(|()| ((), None)),
                |_, redo| Body::System { redo },
            )
            .map(|_| ());
            if r.is_ok() {
                cache
                    .splits
                    .posting_reserved
                    .fetch_sub(p.reserved, Ordering::AcqRel);
            }
            if r.is_err() {
                cache.splits.add_pending(pending[i..].iter().copied());
                break;
            }
        }
        log.swap_unreserved(was);
        cache.page_reserve = kept;
        r?;
        // Exclusive: no split is being made; every posting reserved was posted.
        debug_assert_eq!(cache.splits.posting_reserved.load(Ordering::Acquire), 0);
    }
    merge_left(cache, log);
    cache.fill_stock(log);
    Ok(())
}

/// Makes the merges deletes beside other threads left for later (after the postings: no split
/// is pending), each as a system operation of its own, as an exclusive delete would have made
/// it, if its leaf is still under-full. They are optional: one that fails (the log short of
/// space, which they may not take from the system reserve, or a page that cannot be read) is
/// dropped with the rest, having changed nothing, and the error is left to the operation that
/// meets it next.
fn merge_left(cache: &mut PageCache, log: &mut dyn RedoSink) {
    if cache.splits.merges_count.load(Ordering::Relaxed) == 0 {
        return;
    }
    let merges = std::mem::take(&mut *crate::sync::lock(&cache.splits.merges));
    cache.splits.merges_count.store(0, Ordering::Relaxed);
    let was = log.swap_unreserved(false);
    for (root, _, key) in merges {
        let r = crate::ops::run_op_settled(
            cache,
            log,
            (0, 0),
            &mut Vec::new(),
            |m| bt::merge_underfull(m, root, &key).map(|_| ((), None)),
            |_, redo| Body::System { redo },
        );
        if r.is_err() {
            break;
        }
    }
    log.swap_unreserved(was);
}
