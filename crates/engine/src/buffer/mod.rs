//! The buffer pool's memory: a fixed set of page frames, a page table, CLOCK replacement over
//! unpinned frames, pin counts, dirty tracking with recLSN, a flush list ordered by oldest
//! modification (the checkpointer's candidate list), per-frame deferral counts (paper 000) and
//! per-frame lists of the transactions with uncommitted changes on the page (what a no-steal
//! policy needs, paper 001). No I/O happens here: reading, writing and eviction decisions are
//! the page cache's (`cache/`).
//!
//! The page table maps a page id to a [`PageState`]: resident in a frame, or evicted while dirty
//! (a policy that drops dirty pages without writing them and keeps their redo elsewhere).
//!
//! The pool is used under the engine's core latch. Held exclusive, everything here may change
//! (`&mut self`); pins keep the pages of an operation in memory until it has been logged. Held
//! shared, nothing changes but:
//! - reference bits and hit counts (atomics);
//! - the bytes of *guarded* frames: a frame that held a B+tree leaf when it was read or last
//!   changed under the exclusive latch is guarded, and with the latch shared it may be changed
//!   in place (a plain leaf change: no split, merge or overflow chain) by a
//!   writer that holds its stripe latch ([`BufferPool::frame_latch`]) exclusive, while readers
//!   of a guarded frame hold that stripe latch shared. Unguarded frames are not written while the
//!   latch is shared, so they are read without a latch (inner nodes: no cache line written per
//!   read). Guard bits change only under the exclusive latch, so readers and writers that share
//!   it agree on them;
//! - dirty marks of those writes, queued ([`BufferPool::queue_dirty`]) and applied when the
//!   latch is next taken exclusive, before anyone looks at dirty state;
//! - a frame *loading* a page ([`LoadSlot`], `memory.rs`): reserved for the page under the
//!   exclusive latch (in the page table, but marked `LOADING`), or with it shared from the
//!   frames set aside for misses ([`BufferPool::claim_loading`]: the page-table entry claimed
//!   by a compare-and-swap, the frame's bookkeeping completed by [`BufferPool::adopt_loaded`]
//!   under the exclusive latch); then filled by its loader with no core latch held and
//!   published with one atomic store of its bits. Until then nobody else touches its bytes: a
//!   lookup of the page waits for the store (with either latch: the loader needs neither), the
//!   CLOCK sweep passes the frame by, and it is never dirty. A load that fails publishes
//!   `FAILED`: the page reads as not cached, and the exclusive latch frees the frame.

use crate::error::{Error, Result};
use crate::page::{Lsn, PageId};
use crate::page_table::PageTable;
use crate::sync::Striped;
use crate::wal::record::TxnId;
use crossbeam_utils::CachePadded;
use memory::{Arena, FrameMem, FAILED, GUARDED, LOADING, REFERENCED};
pub(crate) use memory::{LoadSlot, LoadWait, PageBytes};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock};

mod claims;
mod memory;

/// Whether a page image is a B+tree leaf (the frames that are guarded: see the module notes).
pub(crate) fn is_leaf(page: &[u8]) -> bool {
    crate::page::page_type(page) == Some(crate::page::PageType::Leaf)
}

/// Dirty marks (frame, LSN) of changes made with the core latch shared, one queue per thread
/// stripe.
type DirtyQueue = CachePadded<Mutex<Vec<(u32, Lsn)>>>;

/// Stripe latches over the frames (frame index modulo this).
const FRAME_LATCHES: usize = 256;

pub(crate) struct Frame {
    pub pid: Option<PageId>,
    pub data: PageBytes,
    pub dirty: bool,
    pub rec_lsn: Lsn,
    pub pins: u32,
    /// Consecutive checkpoints that selected this page and deferred its write (paper 000's
    /// `checkpoint_count`); reset whenever the page is written or evicted.
    pub ckpt_count: u32,
    /// Transactions with uncommitted changes on this page (empty once they all ended).
    pub uncommitted: Vec<TxnId>,
}

/// Where a page of the page table is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageState {
    /// In this frame.
    Resident(u32),
    /// Dropped from memory while dirty, without a write: the stored image is older than the
    /// page, and whatever keeps its redo must re-apply it when the page is read again.
    EvictedDirty,
}

/// Where a page is, as seen without waiting ([`BufferPool::seen`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    Absent,
    Resident(u32),
    /// In this frame, being read by another thread.
    Loading(u32),
    EvictedDirty,
}

/// Buffer pool counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolStats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub dirty_evictions: u64,
    /// Of the misses, those read from the device with the core latch released (the frame
    /// reserved under it: docs/engine.md, "Misses").
    #[serde(default)]
    pub unlatched_reads: u64,
    /// Of the misses, those whose frames were reserved with the core latch shared, from the
    /// frames set aside for them (`cache/miss_stock.rs`); one whose load failed counts here
    /// (not in `unlatched_reads`), and again as the miss of its exclusive retry.
    #[serde(default)]
    pub reserved_shared: u64,
    /// Out of place and journaled, dirty pages written ahead of the misses that would take
    /// their frames, with the core latch released (`cache/clean_ahead.rs`).
    #[serde(default)]
    pub written_ahead: u64,
}

impl PoolStats {
    pub fn hit_ratio(&self) -> f64 {
        let n = self.hits + self.misses;
        if n == 0 {
            1.0
        } else {
            self.hits as f64 / n as f64
        }
    }
}

pub(crate) struct BufferPool {
    page_size: usize,
    pub frames: Vec<Frame>,
    /// The frames' bytes (`Frame::data` views into them) and bits.
    mem: Arc<FrameMem>,
    /// Page id -> where the page is (a two-level array, see `page_table.rs`).
    table: PageTable,
    hand: usize,
    flush_list: BTreeSet<(Lsn, PageId)>,
    /// Counters of the paths that hold the core latch exclusive (see [`BufferPool::stats`]).
    pub stats: PoolStats,
    /// Hits of readers sharing the core latch.
    pub shared_hits: Striped,
    /// Misses reserved with the core latch shared ([`BufferPool::claim_loading`]).
    shared_misses: Striped,
    /// Pages read for an operation that then tries again ([`BufferPool::rehits_ahead`], and
    /// each published load): its access to the page it read counts as a hit, which this takes
    /// back (a miss once, as an operation that read the page itself counts it).
    rehits: u64,
    /// Whether frames keep lists of the transactions with uncommitted changes on them: only a
    /// no-steal eviction policy needs them (set by `PageCache::set_eviction`).
    pub track_uncommitted: bool,
    /// Stripe latches of guarded frames (see the module notes).
    latches: Box<[CachePadded<RwLock<()>>]>,
    /// Dirty marks of changes made with the core latch shared: (frame, LSN), a queue per
    /// thread stripe (applied in LSN order).
    pending_dirty: Box<[DirtyQueue]>,
}

/// The fewest frames a pool has (a split pins a handful of pages at once).
pub const MIN_FRAMES: usize = 8;

impl BufferPool {
    /// A pool of `frames` frames (at least [`MIN_FRAMES`]) of `page_size` bytes. Memory that
    /// cannot be had is an error, not an abort.
    pub fn new(frames: usize, page_size: usize) -> Result<BufferPool> {
        let n = frames.max(MIN_FRAMES);
        let oom = || {
            Error::Config(format!(
                "cannot allocate a buffer pool of {n} frames of {page_size} bytes"
            ))
        };
        let bytes = n.checked_mul(page_size).ok_or_else(oom)?;
        let mem = Arc::new(FrameMem::new(
            Arena::zeroed(bytes).map_err(|_| oom())?,
            n,
            page_size,
        ));
        let mut all = Vec::new();
        all.try_reserve_exact(n).map_err(|_| oom())?;
        for f in 0..n {
            all.push(Frame {
                pid: None,
                data: mem.page_bytes(f),
                dirty: false,
                rec_lsn: 0,
                pins: 0,
                ckpt_count: 0,
                uncommitted: Vec::new(),
            });
        }
        Ok(BufferPool {
            page_size,
            frames: all,
            mem,
            table: PageTable::default(),
            hand: 0,
            flush_list: BTreeSet::new(),
            stats: PoolStats::default(),
            shared_hits: Striped::default(),
            shared_misses: Striped::default(),
            rehits: 0,
            track_uncommitted: false,
            latches: (0..FRAME_LATCHES)
                .map(|_| CachePadded::new(RwLock::new(())))
                .collect(),
            pending_dirty: (0..16)
                .map(|_| CachePadded::new(Mutex::new(Vec::new())))
                .collect(),
        })
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// A frame's bytes. With the core latch shared, a guarded frame's bytes may be read only
    /// under its stripe latch (see the module notes).
    pub fn data(&self, f: u32) -> &[u8] {
        // From the arena, not through the frame: a hit does not touch the frame's bookkeeping.
        self.mem.bytes(f)
    }

    pub fn data_mut(&mut self, f: u32) -> &mut [u8] {
        &mut self.frames[f as usize].data
    }

    /// Whether frame `f` is guarded (see the module notes).
    pub fn guarded(&self, f: u32) -> bool {
        self.mem.bits(f).load(Ordering::Relaxed) & GUARDED != 0
    }

    /// Sets whether frame `f` is guarded (core latch exclusive; the frame is not loading, so
    /// no other thread changes its bits meanwhile).
    pub fn set_guarded(&mut self, f: u32, on: bool) {
        let bits = self.mem.bits(f);
        let b = bits.load(Ordering::Relaxed);
        debug_assert!(b & LOADING == 0, "a loading frame's bits are its loader's");
        bits.store(
            if on { b | GUARDED } else { b & !GUARDED },
            Ordering::Relaxed,
        );
    }

    /// The stripe latch of frame `f`.
    pub fn frame_latch(&self, f: u32) -> &RwLock<()> {
        &self.latches[f as usize % FRAME_LATCHES]
    }

    /// Queues the dirty mark of a change logged at `lsn` on guarded frame `f`, made with the
    /// core latch shared (the caller holds the frame's stripe latch exclusive, so a frame's
    /// marks are queued in LSN order).
    pub fn queue_dirty(&self, f: u32, lsn: Lsn) {
        let q = &self.pending_dirty[crate::sync::stripe() % self.pending_dirty.len()];
        crate::sync::lock(q).push((f, lsn));
    }

    /// Applies the queued dirty marks (core latch exclusive, before anything looks at dirty
    /// state).
    pub fn apply_dirty(&mut self) {
        let mut pending: Vec<(u32, Lsn)> = Vec::new();
        for q in self.pending_dirty.iter_mut() {
            pending.append(q.get_mut().unwrap_or_else(|p| p.into_inner()));
        }
        // A frame's first mark since it was clean sets its recLSN: the oldest comes first.
        pending.sort_unstable_by_key(|&(_, lsn)| lsn);
        for (f, lsn) in pending {
            self.mark_dirty(f, lsn, 0);
        }
    }

    pub fn pin(&mut self, f: u32) {
        self.frames[f as usize].pins += 1;
    }

    pub fn unpin(&mut self, f: u32) {
        let fr = &mut self.frames[f as usize];
        debug_assert!(fr.pins > 0, "unpin of an unpinned frame");
        fr.pins -= 1;
    }

    /// The page's state in the page table (None: not cached and not evicted dirty). A page
    /// being loaded is waited for; one whose load failed is not cached.
    pub fn state(&self, pid: PageId) -> Option<PageState> {
        match self.table.get(pid) {
            Some(PageState::Resident(f)) if !self.settled(f) => None,
            s => s,
        }
    }

    /// The frame holding `pid`, if resident. A page being loaded is waited for; one whose load
    /// failed is not resident.
    #[inline]
    pub fn lookup(&self, pid: PageId) -> Option<u32> {
        match self.table.get(pid) {
            Some(PageState::Resident(f)) if self.settled(f) => Some(f),
            _ => None,
        }
    }

    /// Waits until frame `f` is not loading; then whether it holds its page (false: the load
    /// failed). See [`memory::wait_settled`].
    #[inline]
    fn settled(&self, f: u32) -> bool {
        memory::wait_settled(self.mem.bits(f))
    }

    /// Where `pid` is, without waiting for a load: a frame being loaded is [`Seen::Loading`],
    /// one whose load failed is absent. For callers that must not wait under a latch: a
    /// shared attempt (it gives up instead), `PageCache::reserve` (it waits after letting the
    /// latches go).
    #[inline]
    pub fn seen(&self, pid: PageId) -> Seen {
        match self.table.get(pid) {
            None => Seen::Absent,
            Some(PageState::EvictedDirty) => Seen::EvictedDirty,
            Some(PageState::Resident(f)) => {
                let b = self.mem.bits(f).load(Ordering::Acquire);
                if b & LOADING != 0 {
                    Seen::Loading(f)
                } else if b & FAILED != 0 {
                    Seen::Absent
                } else {
                    Seen::Resident(f)
                }
            }
        }
    }

    /// A handle to wait for frame `f`'s load with no latch held.
    pub fn load_wait(&self, f: u32) -> LoadWait {
        LoadWait::new(Arc::clone(&self.mem), f)
    }

    /// A frame being loaded, if any (for an eviction that found every other frame taken).
    fn a_loading_frame(&self) -> Option<u32> {
        (0..self.frames.len() as u32)
            .find(|&f| self.mem.bits(f).load(Ordering::Acquire) & LOADING != 0)
    }

    /// [`BufferPool::pick_victim`], and when it finds none while frames are being loaded
    /// (they cannot be taken until published), waits for those loads and tries again: a pool
    /// whose unpinned frames are all loading is busy, not too small. The loaders hold no
    /// latch, so the wait ends whatever the caller holds.
    pub fn pick_victim_waiting(&mut self, may_take: impl Fn(&Frame) -> bool) -> Option<u32> {
        loop {
            if let Some(f) = self.pick_victim(&may_take) {
                return Some(f);
            }
            let f = self.a_loading_frame()?;
            self.settled(f);
        }
    }

    /// A page is read ahead of the operation that needs it, which then runs again (core
    /// latch exclusive): the hit its retry makes on the page is not counted (the read counts
    /// as a miss only, as in an operation that read the page itself).
    pub fn rehits_ahead(&mut self) {
        self.rehits += 1;
    }

    /// A hit on a resident page (core latch exclusive).
    pub fn touch_hit(&mut self, f: u32) {
        self.stats.hits += 1;
        let bits = self.mem.bits(f);
        let b = bits.load(Ordering::Relaxed);
        if b & REFERENCED == 0 {
            bits.store(b | REFERENCED, Ordering::Relaxed);
        }
    }

    /// A hit on a resident page by a reader sharing the core latch (it counts its hits in
    /// [`BufferPool::shared_hits`] once its operation is done).
    pub fn touch_hit_shared(&self, f: u32) {
        let bits = self.mem.bits(f);
        if bits.load(Ordering::Relaxed) & REFERENCED == 0 {
            bits.fetch_or(REFERENCED, Ordering::Relaxed);
        }
    }

    /// The pool's counters, hits of shared readers included.
    pub fn stats(&self) -> PoolStats {
        let mut s = self.stats.clone();
        let published = self.mem.published.load(Ordering::Relaxed);
        s.hits = (s.hits + self.shared_hits.get()).saturating_sub(self.rehits + published);
        s.reserved_shared = self.shared_misses.get();
        s.misses += s.reserved_shared;
        s.unlatched_reads = published;
        s
    }

    /// Puts `pid` into the free frame `f` (its data already filled by the caller).
    pub fn install(&mut self, f: u32, pid: PageId) {
        self.install_as(f, pid, REFERENCED);
    }

    /// Reserves the free frame `f` for `pid`, to be filled with no core latch held: the page
    /// reads as loading (see the module notes) until the returned slot is published.
    pub fn install_loading(&mut self, f: u32, pid: PageId) -> LoadSlot {
        self.install_as(f, pid, LOADING);
        LoadSlot::new(Arc::clone(&self.mem), f)
    }

    fn install_as(&mut self, f: u32, pid: PageId, bits: u8) {
        // A failed load of the same page may still hold its entry.
        if let Some(PageState::Resident(old)) = self.table.get(pid) {
            debug_assert!(self.failed(old), "page {pid} is already in frame {old}");
            self.drop_failed(old);
        }
        let fr = &mut self.frames[f as usize];
        debug_assert!(fr.pid.is_none() && !fr.dirty && fr.pins == 0);
        fr.pid = Some(pid);
        self.mem.bits(f).store(bits, Ordering::Relaxed);
        self.table.insert(pid, PageState::Resident(f));
    }

    /// Whether frame `f` holds a failed load (core latch exclusive; a frame is not reserved
    /// for loading meanwhile, but one reserved before may fail).
    fn failed(&self, f: u32) -> bool {
        self.mem.bits(f).load(Ordering::Acquire) & FAILED != 0
    }

    /// Frees frame `f`, whose load failed: its page leaves the page table if the entry is
    /// still this frame's.
    fn drop_failed(&mut self, f: u32) {
        let fr = &mut self.frames[f as usize];
        if let Some(pid) = fr.pid.take() {
            if self.table.get(pid) == Some(PageState::Resident(f)) {
                self.table.remove(pid);
            }
        }
        self.mem.bits(f).store(0, Ordering::Relaxed);
    }

    /// CLOCK over unpinned frames that `may_take` accepts: a free frame, or the first resident
    /// page whose reference bit is clear. None if every frame is pinned or refused.
    pub fn pick_victim(&mut self, may_take: impl Fn(&Frame) -> bool) -> Option<u32> {
        let n = self.frames.len();
        for _ in 0..2 * n + 1 {
            let i = self.hand;
            self.hand = (self.hand + 1) % n;
            let fr = &mut self.frames[i];
            if fr.pins > 0 {
                continue;
            }
            if fr.pid.is_none() {
                return Some(i as u32);
            }
            let bits = self.mem.bits(i as u32);
            let b = bits.load(Ordering::Acquire);
            if b & LOADING != 0 {
                continue;
            }
            if b & FAILED != 0 {
                self.drop_failed(i as u32);
                return Some(i as u32);
            }
            if !may_take(fr) {
                continue;
            }
            if b & REFERENCED != 0 {
                bits.store(b & !REFERENCED, Ordering::Relaxed);
                continue;
            }
            return Some(i as u32);
        }
        None
    }

    /// Puts the CLOCK hand back on frame `f`, which [`BufferPool::pick_victim`] just picked
    /// and the caller leaves in place: the next sweep picks it first.
    /// Where the CLOCK hand is (for [`BufferPool::hand_back`] after a sweep that should not
    /// move it).
    pub fn hand(&self) -> u32 {
        self.hand as u32
    }

    pub fn hand_back(&mut self, f: u32) {
        self.hand = f as usize;
    }

    /// Empties frame `f` (its page written, or dropped as `EvictedDirty` if `keep_dirty`).
    pub fn evict(&mut self, f: u32, keep_dirty: bool) {
        let fr = &mut self.frames[f as usize];
        let Some(pid) = fr.pid else { return };
        if fr.dirty {
            self.flush_list.remove(&(fr.rec_lsn, pid));
            fr.dirty = false;
            fr.rec_lsn = 0;
        }
        if keep_dirty {
            self.table.insert(pid, PageState::EvictedDirty);
        } else {
            self.table.remove(pid);
        }
        self.stats.evictions += 1;
        fr.pid = None;
        fr.ckpt_count = 0;
        fr.uncommitted.clear();
    }

    /// A page that is not resident leaves the page table (its `EvictedDirty` changes are gone:
    /// the stored image is the page again).
    pub fn forget(&mut self, pid: PageId) {
        if self.table.get(pid) == Some(PageState::EvictedDirty) {
            self.table.remove(pid);
        }
    }

    /// Records that `pid`, not resident, has changes its stored image lacks (restart of the
    /// flushless mode: the reloaded log records).
    pub fn mark_evicted_dirty(&mut self, pid: PageId) {
        if self.lookup(pid).is_none() {
            self.table.insert(pid, PageState::EvictedDirty);
        }
    }

    /// Pages in the page table as `EvictedDirty`.
    pub fn evicted_dirty(&self) -> Vec<PageId> {
        let mut v: Vec<PageId> = self
            .table
            .iter()
            .filter(|&(_, s)| s == PageState::EvictedDirty)
            .map(|(p, _)| p)
            .collect();
        v.sort_unstable();
        v
    }

    /// Marks a frame dirty by a change logged at `lsn` by `txn` (0: a system change); recLSN =
    /// first such LSN since the frame was clean.
    pub fn mark_dirty(&mut self, f: u32, lsn: Lsn, txn: TxnId) {
        let fr = &mut self.frames[f as usize];
        if self.track_uncommitted && txn != 0 && !fr.uncommitted.contains(&txn) {
            fr.uncommitted.push(txn);
        }
        if !fr.dirty {
            fr.dirty = true;
            fr.rec_lsn = lsn;
            self.flush_list
                .insert((lsn, fr.pid.expect("dirty frame holds a page")));
        }
    }

    /// The frame was written: clean, off the flush list, deferral count reset.
    pub fn mark_clean(&mut self, f: u32) {
        let fr = &mut self.frames[f as usize];
        let pid = fr.pid.expect("frame holds a page");
        self.flush_list.remove(&(fr.rec_lsn, pid));
        fr.dirty = false;
        fr.rec_lsn = 0;
        fr.ckpt_count = 0;
    }

    /// Dirty frame `f`'s changes up to `lsn` are on the device: its recovery LSN becomes `lsn`
    /// if it was older (the record at `lsn` is the first redo may need for it).
    pub fn raise_rec_lsn(&mut self, f: u32, lsn: Lsn) {
        let fr = &mut self.frames[f as usize];
        debug_assert!(fr.dirty);
        if fr.rec_lsn >= lsn {
            return;
        }
        let pid = fr.pid.expect("frame holds a page");
        self.flush_list.remove(&(fr.rec_lsn, pid));
        fr.rec_lsn = lsn;
        self.flush_list.insert((lsn, pid));
    }

    /// Transaction `txn` ended (committed or rolled back): its changes on `pages` are no longer
    /// uncommitted.
    pub fn txn_ended(&mut self, txn: TxnId, pages: &[PageId]) {
        if !self.track_uncommitted {
            return;
        }
        for &pid in pages {
            if let Some(f) = self.lookup(pid) {
                self.frames[f as usize].uncommitted.retain(|&t| t != txn);
            }
        }
    }

    /// Transactions with uncommitted changes on a resident page.
    #[allow(dead_code)] // the no-steal seam (paper 001); tests use it today
    pub fn uncommitted(&self, pid: PageId) -> &[TxnId] {
        match self.lookup(pid) {
            Some(f) => &self.frames[f as usize].uncommitted,
            None => &[],
        }
    }

    /// How many consecutive checkpoints deferred `pid` (0 if not cached).
    pub fn ckpt_count(&self, pid: PageId) -> u32 {
        self.lookup(pid)
            .map_or(0, |f| self.frames[f as usize].ckpt_count)
    }

    /// Records that a checkpoint selected `pid` and deferred it. Returns the new count.
    pub fn defer(&mut self, pid: PageId) -> u32 {
        match self.lookup(pid) {
            Some(f) => {
                let fr = &mut self.frames[f as usize];
                fr.ckpt_count += 1;
                fr.ckpt_count
            }
            None => 0,
        }
    }

    /// Dirty pages with their recLSN, oldest modification first.
    pub fn dirty_pages(&self) -> Vec<(PageId, Lsn)> {
        self.flush_list.iter().map(|&(l, p)| (p, l)).collect()
    }

    /// The oldest recLSN of any dirty page.
    pub fn min_rec_lsn(&self) -> Option<Lsn> {
        self.flush_list.iter().next().map(|&(l, _)| l)
    }

    /// The page cleaner's picks: up to `n` dirty pages among the next `window` frames the
    /// CLOCK hand would take as victims now (unpinned, not loading, not referenced; free frames
    /// count too), in the order it reaches them. Empty when those victims are all clean.
    pub fn cleaner_candidates(&self, n: usize, window: usize) -> Vec<PageId> {
        let len = self.frames.len();
        let mut victims = 0;
        let mut picks = Vec::new();
        for i in (0..len).map(|i| (self.hand + i) % len) {
            if victims >= window || picks.len() >= n {
                break;
            }
            let f = &self.frames[i];
            let b = self.mem.bits(i as u32).load(Ordering::Relaxed);
            if f.pins > 0 || b & (LOADING | REFERENCED) != 0 {
                continue;
            }
            victims += 1;
            if f.dirty {
                picks.extend(f.pid);
            }
        }
        picks
    }

    /// Checks the documented invariants (tests and debug builds): the flush list holds exactly
    /// the dirty frames, each under its recLSN; the page table and the frames agree.
    pub fn check_invariants(&self) {
        let mut dirty = 0;
        for (i, fr) in self.frames.iter().enumerate() {
            if self.failed(i as u32) {
                // A failed load: its page's entry may already be another frame's.
                assert!(!fr.dirty, "failed load in frame {i} is dirty");
                continue;
            }
            if let Some(pid) = fr.pid {
                assert_eq!(
                    self.table.get(pid),
                    Some(PageState::Resident(i as u32)),
                    "frame {i} holds page {pid} but the page table disagrees"
                );
                if fr.dirty {
                    dirty += 1;
                    assert!(
                        self.flush_list.contains(&(fr.rec_lsn, pid)),
                        "dirty page {pid} is missing from the flush list"
                    );
                }
            } else {
                assert!(!fr.dirty, "free frame {i} is dirty");
            }
        }
        assert_eq!(dirty, self.flush_list.len(), "flush list and dirty frames");
        for (pid, state) in self.table.iter() {
            if let PageState::Resident(f) = state {
                assert_eq!(
                    self.frames[f as usize].pid,
                    Some(pid),
                    "the page table puts page {pid} in frame {f}, which holds another"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_too_large_to_allocate_is_an_error() {
        assert!(matches!(
            BufferPool::new(1 << 50, 4096),
            Err(Error::Config(_))
        ));
        assert_eq!(BufferPool::new(1, 4096).unwrap().frame_count(), MIN_FRAMES);
    }

    /// The page cleaner's picks are the dirty pages among the victims the CLOCK hand takes
    /// next, even when nearly every frame is clean (the old trigger, a fraction of all frames
    /// clean, then picked nothing): referenced and pinned frames are not victims yet.
    #[test]
    fn the_cleaner_picks_the_dirty_victims_the_hand_reaches_next() {
        let mut p = BufferPool::new(MIN_FRAMES, 4096).unwrap();
        let n = p.frame_count() as u32;
        for f in 0..n {
            p.install(f, 100 + f as PageId);
            p.mem.bits(f).store(0, Ordering::Relaxed);
        }
        for f in [1, 3, 5, n - 1] {
            p.mark_dirty(f, 1, 0);
        }
        // Frame 1 is referenced and frame 5 pinned: the hand passes them by.
        p.touch_hit_shared(1);
        p.frames[5].pins = 1;
        assert_eq!(p.cleaner_candidates(64, 4), vec![103]);
        assert_eq!(
            p.cleaner_candidates(64, n as usize),
            vec![103, 100 + (n - 1) as PageId]
        );
        assert_eq!(p.cleaner_candidates(1, n as usize), vec![103]);
        assert!(p.cleaner_candidates(64, 0).is_empty());
        p.frames[5].pins = 0;
    }
}
