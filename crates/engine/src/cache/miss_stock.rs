//! Misses reserved with the core latch shared (docs/engine.md, "Misses").
//!
//! A miss needs a frame. Choosing a victim (the CLOCK sweep, the eviction of a page other
//! threads may be reading with no latch) needs the core latch exclusive, and with several
//! threads missing, taking it for every miss made them queue behind each other and behind
//! every reader (YCSB-A with misses ran slower on two threads than on one). So an exclusive
//! reservation also sets aside a *stock* of free frames (pinned, holding no page), their
//! victims evicted as its own is, and the next misses take a frame from the stock with the
//! latch **shared**:
//!
//! 1. the frame is marked loading and claimed in the page table (a compare-and-swap of the
//!    page's absent entry: of two threads missing the same page, one claims it and the other
//!    waits for its load);
//! 2. it is read and published as any reserved frame is ([`PendingLoad::read`]), no latch
//!    held;
//! 3. the frame's own bookkeeping (its page id, its pin) is completed when the core latch is
//!    next taken exclusive ([`PageCache::adopt_loaded_pages`], with the split pages' adoption
//!    and before the dirty marks are applied: before any exclusive code looks at frames),
//!    which leaves it as an exclusive reservation would have.
//!
//! Until then the page is found through the page table, its bits and its bytes, as any page
//! with the latch shared; the pin keeps the CLOCK sweep off the frame. A miss reserved so has
//! no victim to write: that was done by the exclusive reservation that filled the stock (in
//! place, its dirty victims' copies are written with its own, in one batch, the latches
//! released).
//!
//! What still reserves exclusive: a miss when the stock is empty (it fills it again), a page
//! evicted dirty or read with an after-read hook (`PageCache::reserve`), a page made by a split
//! beside other threads and not in the page table yet (its chunk did not exist), a page whose table chunk does not exist, and a
//! page a failed load still holds. A lone thread never uses the stock: the engine is then as
//! it was, and virtual time unchanged.

use super::clean_ahead::AheadBatch;
use super::unlatched::{Reserved, VictimCopy};
use super::PageCache;
use crate::buffer::Seen;
use crate::page::PageId;
use crate::page_table::Unclaimed;
use crate::writepath::LogSink;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The most frames the stock is filled to: one exclusive reservation in this many misses.
/// (At 32, YCSB-C with misses on two threads still took the latch exclusive 40-70 thousand
/// times in 4 s, and each take puts both threads to sleep; at 128, 10-17 thousand, and 4-5
/// thousand in YCSB-A, most of them refills; at 512, 2.5-2.8 thousand in both, YCSB-A 17%
/// faster and its p99.9 latency a third: docs/results.md, twenty-second session.)
const STOCK_FRAMES: usize = 512;

/// Frames the stock is filled to in a pool of `frames`: a thirty-second of it, at most
/// [`STOCK_FRAMES`]; a small pool sets aside two (one below 32 frames, none below 16).
fn stock_size(frames: usize) -> usize {
    (frames / 32).min(STOCK_FRAMES).max(frames.min(32) / 16)
}

#[derive(Default)]
pub(super) struct MissStock {
    /// Free frames, pinned, holding no page.
    frames: Mutex<Vec<u32>>,
    /// A miss found the stock empty: the next exclusive reservation fills it.
    want: AtomicBool,
    /// Frames claimed with the latch shared, and their pages: adopted when the latch is next
    /// exclusive.
    loaded: Mutex<Vec<(u32, PageId)>>,
    /// Whether `loaded` may hold any (read without its mutex by every exclusive latch).
    loaded_any: AtomicBool,
}

impl PageCache {
    /// The page table's word on `pid` before a reservation other than the exclusive one:
    /// cached or being loaded (`Break(Some)`), to be read by the exclusive reservation (evicted
    /// dirty, or seen by an after-read hook: `Break(None)`), or absent (`Continue`).
    fn look_before_reserving(&self, pid: PageId) -> ControlFlow<Option<Reserved>> {
        match self.pool.seen(pid) {
            Seen::Resident(_) => ControlFlow::Break(Some(Reserved::Cached)),
            Seen::Loading(f) => ControlFlow::Break(Some(Reserved::Wait(self.pool.load_wait(f)))),
            Seen::EvictedDirty => ControlFlow::Break(None),
            Seen::Absent if self.hook_sees_every_read() => ControlFlow::Break(None),
            Seen::Absent => ControlFlow::Continue(()),
        }
    }

    /// [`PageCache::reserve`] while other threads write pages with the core latch released
    /// (tickets out, `engine/latch.rs` `Writers`): the core latch is held exclusive, but a
    /// reservation here writes nothing, waits for nothing and takes no write path's mutex: a
    /// clean victim only, not one being loaded, and the stock filled up to the first dirty
    /// page the hand meets. `None`: there is none (or the page must be read here, evicted
    /// dirty or seen by an after-read hook); then it waits for the writers and reserves as
    /// usual. `log` is never asked to append or force (the caller passes a
    /// [`crate::writepath::DurableLog`], not the log latch). Before, a miss that found the
    /// stock empty waited for every page write under way, a journaled batch's whole journal
    /// checkpoint among them.
    pub fn reserve_clean(
        &mut self,
        pid: PageId,
        log: &mut dyn LogSink,
        health: &crate::health::Health,
    ) -> Option<Reserved> {
        if let ControlFlow::Break(r) = self.look_before_reserving(pid) {
            return r;
        }
        self.adopt_cleaned_pages();
        let steal = self.eviction.steal();
        // Not `pick_victim_waiting`: a loader may wait for the write path's mutex, which a
        // ticket's writer may hold for long (a journal checkpoint), and this waits for
        // nothing with the core latch exclusive. The hand goes back where it
        // was: the dirty pages this sweep passes by stay next for the writes ahead of the
        // misses (which start at the hand) and for the next sweep.
        let hand = self.pool.hand();
        let picked = self
            .pool
            .pick_victim(|fr| !fr.dirty && (steal || fr.uncommitted.is_empty()));
        self.pool.hand_back(hand);
        let f = picked?;
        let copy = self.evict_victim(f, log, true).ok()?;
        debug_assert!(copy.is_none(), "a clean victim has nothing to write");
        self.pool.stats.misses += 1;
        let slot = self.pool.install_loading(f, pid);
        let mut victims = Vec::new();
        let ahead = self.fill_miss_stock_as(log, &mut victims, health, true);
        debug_assert!(ahead.is_none() && victims.is_empty(), "clean frames only");
        self.pool.hand_back(hand);
        Some(Reserved::Load(
            self.pending_load(pid, slot, victims, health),
        ))
    }

    /// Reserves a miss of `pid` with the core latch shared, from the stock (see the module
    /// notes). `None`: reserve it exclusive ([`PageCache::reserve`]).
    pub fn reserve_shared(&self, pid: PageId, health: &crate::health::Health) -> Option<Reserved> {
        if !self.splits.several_threads() {
            return None;
        }
        if let ControlFlow::Break(r) = self.look_before_reserving(pid) {
            return r;
        }
        if self.splits.adopting(pid) {
            // A split beside others made it: its frame joins the page table exclusive.
            return None;
        }
        let Some(f) = crate::sync::lock(&self.misses.frames).pop() else {
            self.misses.want.store(true, Ordering::Relaxed);
            return None;
        };
        match self.pool.claim_loading(f, pid) {
            Ok(slot) => {
                crate::sync::lock(&self.misses.loaded).push((f, pid));
                self.misses.loaded_any.store(true, Ordering::Release);
                Some(Reserved::Load(self.pending_load(
                    pid,
                    slot,
                    Vec::new(),
                    health,
                )))
            }
            Err(taken) => {
                crate::sync::lock(&self.misses.frames).push(f);
                match taken {
                    // Another thread claimed it since: wait for its load, or use the page.
                    Unclaimed::Taken(_) => match self.pool.seen(pid) {
                        Seen::Resident(_) => Some(Reserved::Cached),
                        Seen::Loading(g) => Some(Reserved::Wait(self.pool.load_wait(g))),
                        // A failed load holds the entry: the exclusive latch frees it.
                        _ => None,
                    },
                    Unclaimed::NoPlace => None,
                }
            }
        }
    }

    /// Completes the frames claimed with the latch shared (core latch exclusive, before
    /// anything looks at frames or applies dirty marks: those of changes to these pages).
    pub fn adopt_loaded_pages(&mut self) {
        // Set under the core latch shared, read under it exclusive: no miss is being claimed.
        if !self.misses.loaded_any.swap(false, Ordering::Acquire) {
            return;
        }
        let loaded = std::mem::take(&mut *crate::sync::lock(&self.misses.loaded));
        for (f, pid) in loaded {
            self.pool.adopt_loaded(f, pid);
        }
    }

    /// Gives the stock's frames back to the pool (core latch exclusive: an eviction that found
    /// every other frame pinned). Whether there were any.
    pub(super) fn release_miss_stock(&mut self) -> bool {
        let stock = std::mem::take(&mut *crate::sync::lock(&self.misses.frames));
        self.pool.give_back(&stock)
    }

    /// Fills the stock if a miss found it empty (core and log latches exclusive, in an
    /// exclusive reservation, after its own frame was marked loading). In place, victims are
    /// evicted as the reservation's own, the copies of dirty ones joining `victims`, written
    /// with its own with the latches released. Out of place and journaled, where a dirty
    /// victim's write logs its place and forces the log, the fill stops at the first dirty
    /// victim the sweep meets (the hand is left on it): such writes, one after another, would
    /// hold every thread up, and taking clean frames past it would change what CLOCK evicts
    /// (and sweep the whole pool when most frames are dirty; measured: docs/engine.md). The
    /// dirty pages among the next victims are then returned, to be written ahead with the
    /// core latch released (`clean_ahead.rs`), so that the next fill finds them clean. The
    /// sweep does not wait for frames being loaded (the reservation's own load starts only
    /// after this returns): when every other frame is pinned, the stock stays short. A victim
    /// whose copy cannot be taken stays in the pool, and the stock waits.
    pub(super) fn fill_miss_stock(
        &mut self,
        log: &mut dyn LogSink,
        victims: &mut Vec<VictimCopy>,
        health: &crate::health::Health,
    ) -> Option<AheadBatch> {
        self.fill_miss_stock_as(log, victims, health, false)
    }

    /// [`PageCache::fill_miss_stock`]; `clean_only`: the hand stops at the first dirty page
    /// and nothing is written (see [`PageCache::reserve_clean`]).
    fn fill_miss_stock_as(
        &mut self,
        log: &mut dyn LogSink,
        victims: &mut Vec<VictimCopy>,
        health: &crate::health::Health,
        clean_only: bool,
    ) -> Option<AheadBatch> {
        if !self.misses.want.swap(false, Ordering::Relaxed) || !self.splits.several_threads() {
            return None;
        }
        let want = stock_size(self.pool.frame_count());
        let steal = self.eviction.steal();
        let mut stock = std::mem::take(&mut *crate::sync::lock(&self.misses.frames));
        let mut ahead = None;
        while stock.len() < want {
            let Some(f) = self
                .pool
                .pick_victim(|fr| steal || fr.uncommitted.is_empty())
            else {
                break;
            };
            let dirty = self.pool.frames[f as usize].dirty;
            if dirty && clean_only {
                self.pool.hand_back(f);
                break;
            }
            if self.writes_log && dirty {
                // The hand stays on it; it and the dirty pages after it are written ahead.
                self.pool.hand_back(f);
                if self.writes_ahead() {
                    ahead = self.clean_ahead(want, health);
                }
                break;
            }
            match self.evict_victim(f, log, true) {
                Ok(copy) => victims.extend(copy),
                Err(_) => break,
            }
            self.pool.set_aside(f);
            stock.push(f);
        }
        *crate::sync::lock(&self.misses.frames) = stock;
        ahead
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::BufferPool;
    use crate::device::MemDevice;
    use crate::writepath::{InPlace, MemLog, WriteReason};

    /// A cache of 32 frames (a stock of 2) over 40 leaf pages on the device, page `p` with
    /// byte 100 = `p`; `several`: a second thread has run operations.
    fn cache(several: bool) -> PageCache {
        let dev = Box::new(MemDevice::new(4 << 20, 4096));
        let wp = InPlace::create(dev, 4096, 8, false).unwrap();
        let mut c = PageCache::new(BufferPool::new(32, 4096).unwrap(), Box::new(wp));
        let mut log = durable_log();
        for pid in 1..=40 {
            let f = c.create(pid, &mut log).unwrap();
            crate::page::init(c.pool.data_mut(f), pid, crate::page::PageType::Leaf);
            c.pool.data_mut(f)[100] = pid as u8;
            c.pool.mark_dirty(f, pid, 0);
        }
        let cached: Vec<PageId> = (1..=40).collect();
        c.write_batch(&cached, &mut log, WriteReason::Checkpoint)
            .unwrap();
        c.splits.note_thread();
        if several {
            std::thread::scope(|s| {
                s.spawn(|| c.splits.note_thread());
            });
        }
        c
    }

    /// A log durable past every change the tests make.
    fn durable_log() -> MemLog {
        MemLog {
            durable: 1000,
            ..Default::default()
        }
    }

    /// The first miss: the stock is empty, so it is reserved exclusive (which fills the stock
    /// if several threads run) and read. Returns the pages still missing.
    fn first_miss(
        c: &mut PageCache,
        log: &mut MemLog,
        health: &crate::health::Health,
    ) -> Vec<PageId> {
        let missing = absent(c);
        assert!(missing.len() >= 8);
        assert!(c.reserve_shared(missing[0], health).is_none());
        let r = c.reserve(missing[0], log, health).unwrap();
        read(c, Some(r));
        missing
    }

    /// Pins the frames of the cached pages but the first `spare`: the frames pinned.
    fn pin_cached(c: &mut PageCache, spare: usize) -> Vec<u32> {
        let cached: Vec<u32> = (1..=40).filter_map(|p| c.pool.lookup(p)).collect();
        for &f in &cached[spare..] {
            c.pool.pin(f);
        }
        cached[spare..].to_vec()
    }

    /// Unpins `pinned` and checks the pool.
    fn unpin_and_check(c: &mut PageCache, pinned: &[u32]) {
        for &f in pinned {
            c.pool.unpin(f);
        }
        c.pool.check_invariants();
    }

    /// A cache as [`cache`] makes it after its first miss ([`first_miss`]), with the health,
    /// the log and the pages still missing.
    fn after_first_miss(several: bool) -> (PageCache, crate::health::Health, MemLog, Vec<PageId>) {
        let mut c = cache(several);
        let health = crate::health::Health::default();
        let mut log = durable_log();
        let missing = first_miss(&mut c, &mut log, &health);
        (c, health, log, missing)
    }

    fn absent(c: &PageCache) -> Vec<PageId> {
        (1..=40).filter(|&p| c.pool.state(p).is_none()).collect()
    }

    fn read(c: &PageCache, r: Option<Reserved>) {
        match r {
            Some(Reserved::Load(load)) => load.read(&c.wp, None).unwrap(),
            _ => panic!("expected a frame reserved for a load"),
        }
    }

    #[test]
    fn misses_take_frames_set_aside_with_the_latch_shared() {
        // The stock is empty: an exclusive reservation is needed, and it fills the stock.
        let (mut c, health, _, missing) = after_first_miss(true);
        // Two misses from the stock; a second thread missing the same page waits for its load.
        let (p, q) = (missing[1], missing[2]);
        let load = c.reserve_shared(p, &health);
        assert!(matches!(
            c.reserve_shared(p, &health),
            Some(Reserved::Wait(_))
        ));
        read(&c, load);
        assert!(matches!(
            c.reserve_shared(p, &health),
            Some(Reserved::Cached)
        ));
        read(&c, c.reserve_shared(q, &health));
        assert!(
            c.reserve_shared(missing[3], &health).is_none(),
            "the stock of two frames is used up"
        );
        for pid in [missing[0], p, q] {
            let f = c.pool.lookup(pid).expect("cached");
            assert_eq!(
                c.pool.data(f)[100],
                pid as u8,
                "page {pid} read into its frame"
            );
        }
        // The frames' bookkeeping waits for the exclusive latch.
        let f = c.pool.lookup(p).unwrap();
        assert_eq!(c.pool.frames[f as usize].pid, None);
        c.adopt_loaded_pages();
        assert_eq!(c.pool.frames[f as usize].pid, Some(p));
        assert_eq!(c.pool.frames[f as usize].pins, 0);
        assert_eq!(c.pool.state(q).map(|_| ()), Some(()));
        c.pool.check_invariants();
        let s = c.pool.stats();
        assert_eq!((s.reserved_shared, s.misses), (2, 3));
    }

    #[test]
    fn the_stock_is_a_thirty_second_of_the_pool_and_small_pools_keep_a_few() {
        let sizes: Vec<usize> = [8, 16, 32, 64, 100, 2048, 8192, 16384, 1 << 20]
            .iter()
            .map(|&n| stock_size(n))
            .collect();
        assert_eq!(sizes, [0, 1, 2, 2, 3, 64, 256, 512, 512]);
    }

    #[test]
    fn a_lone_thread_sets_no_frame_aside() {
        let (c, health, _, missing) = after_first_miss(false);
        assert!(c.reserve_shared(missing[1], &health).is_none());
        assert!(crate::sync::lock(&c.misses.frames).is_empty());
        assert!(c.pool.lookup(missing[0]).is_some());
        c.pool.check_invariants();
    }

    /// An exclusive reservation that would fill the stock when every frame but its own is
    /// pinned leaves the stock short: it does not wait for a loading frame, its own among them,
    /// whose load can only start once it returns (it waited forever before).
    #[test]
    fn a_reservation_with_every_other_frame_pinned_leaves_the_stock_short() {
        let (mut c, health, mut log, missing) = after_first_miss(true);
        read(&c, c.reserve_shared(missing[1], &health));
        read(&c, c.reserve_shared(missing[2], &health));
        assert!(
            c.reserve_shared(missing[3], &health).is_none(),
            "stock used up"
        );
        c.adopt_loaded_pages();
        let pinned = pin_cached(&mut c, 1);
        assert_eq!(
            pinned.len(),
            31,
            "every frame holds a page, all but one pinned"
        );
        let (tx, rx) = std::sync::mpsc::channel();
        let pid = missing[3];
        std::thread::spawn(move || {
            let r = c.reserve(pid, &mut log, &health).unwrap();
            read(&c, Some(r));
            tx.send(c).unwrap();
        });
        let mut c = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the reservation returned");
        assert!(crate::sync::lock(&c.misses.frames).is_empty());
        assert_eq!(
            c.pool.data(c.pool.lookup(missing[3]).unwrap())[100],
            missing[3] as u8
        );
        unpin_and_check(&mut c, &pinned);
    }

    /// A pool whose other frames are all pinned takes the frames set aside back.
    #[test]
    fn an_eviction_with_every_other_frame_pinned_takes_the_stock_back() {
        let (mut c, _, mut log, missing) = after_first_miss(true);
        let pinned = pin_cached(&mut c, 0);
        assert_eq!(pinned.len(), 30, "two frames are set aside");
        let f = c.fetch(missing[1], &mut log).unwrap();
        assert_eq!(c.pool.data(f)[100], missing[1] as u8);
        assert!(crate::sync::lock(&c.misses.frames).is_empty());
        unpin_and_check(&mut c, &pinned);
    }
}
