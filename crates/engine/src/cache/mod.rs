//! The page cache: the buffer pool's frames (`buffer.rs`) plus the write path underneath, and
//! the decisions that connect them: reading a missing page (then the after-read hook), choosing
//! and evicting a victim (through the eviction policy), and writing dirty pages under the
//! write-ahead rule.
//!
//! Seams for the techniques that change eviction (paper 001, flushing-less eviction):
//! - [`EvictionPolicy`]: may a frame with uncommitted changes be evicted (steal or no-steal), and
//!   is a dirty victim written back or dropped (the page table then says `EvictedDirty`);
//! - [`AfterRead`]: called with every page image read from the device, told whether the page was
//!   evicted dirty, so a component that kept the page's redo can re-apply it (on-the-fly redo).
//!
//! Today's engine uses [`WriteBack`] (steal, write dirty victims) and no hook.
//!
//! A miss of an operation that runs with the core latch shared is read with the latch released:
//! [`PageCache::reserve`] (exclusive) picks the victim and reserves the frame, or, with several
//! threads, [`PageCache::reserve_shared`] takes a frame set aside for misses (`miss_stock.rs`);
//! [`PendingLoad::write_victim`] writes the dirty victims' copies and [`PendingLoad::read`] reads
//! the page (see `buffer.rs` for the loading frame, docs/engine.md "Misses" for the protocol).

mod clean_ahead;
mod miss_stock;
mod unlatched;

pub(crate) use self::unlatched::{Detached, PendingLoad, Reserved, SharedWritePath};
use self::unlatched::{InFlight, InFlightGuard, VictimCopy};
use crate::buffer::{BufferPool, PageState, Seen};
use crate::error::{Error, Result};
use crate::page::{self, PageId};
use crate::writepath::{LogSink, PageReader, WritePath, WriteReason};

/// What eviction does with a dirty victim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirtyVictim {
    /// Write it through the write path (after forcing the log to its LSN), then drop it.
    WriteBack,
    /// Drop it without a write; the page table keeps it as `EvictedDirty` (paper 001's
    /// flushing-less eviction).
    Drop,
}

/// How the buffer chooses and treats victims.
pub trait EvictionPolicy: Send + Sync {
    /// Whether a frame holding uncommitted changes may be evicted (steal). A no-steal policy
    /// returns false.
    fn steal(&self) -> bool;
    /// What to do with a dirty victim.
    fn dirty_victim(&mut self, pid: PageId) -> DirtyVictim;
}

/// Steal, and write dirty victims back: ARIES's buffer policy and the engine's default.
pub struct WriteBack;

impl EvictionPolicy for WriteBack {
    fn steal(&self) -> bool {
        true
    }
    fn dirty_victim(&mut self, _pid: PageId) -> DirtyVictim {
        DirtyVictim::WriteBack
    }
}

/// Called with each page image read from the device, before anyone sees it.
pub trait AfterRead: Send + Sync {
    /// `evicted_dirty`: the page was dropped dirty, so the image may be older than the page.
    /// Returns whether the page now holds changes its stored image lacks (it stays dirty).
    fn after_read(&mut self, pid: PageId, data: &mut [u8], evicted_dirty: bool) -> Result<bool>;
    /// Whether it acts on pages read while `EvictedDirty` only (the flushless mode's on-the-fly
    /// redo: a page with no entry in the page table has no records to apply). The other misses
    /// are then read with the core latch released, the hook not called; otherwise (the
    /// default) every page is read with the latch held, for the hook to see.
    fn evicted_dirty_only(&self) -> bool {
        false
    }
}

/// Buffer pool + write path.
pub(crate) struct PageCache {
    pub pool: BufferPool,
    /// The write path, under its own mutex: a checkpoint's batch ([`PageCache::detach`]), a
    /// dirty victim in place and a miss ([`PendingLoad::read`]) use it with the core latch
    /// released (a batch's writer holding a ticket may take the log latch after it, an append
    /// at a time); other uses hold the core latch exclusive (most with the log latch, taken
    /// before it) or nothing (`Db::stats`), and may wait for those.
    pub wp: SharedWritePath,
    /// Never-used pages an allocation must leave untouched once the free list is empty: the
    /// pages the rollbacks of live transactions may need (`TxnTable::pages_reserved`). Zero while
    /// a rollback or recovery runs: they may take them.
    pub page_reserve: u64,
    /// Pages the write path can hold (fixed by its layout): read once, so that an allocation
    /// does not wait for the write path's mutex (held across device reads and writes).
    pub page_capacity: u64,
    /// Whether the write path's page writes log ([`WritePath::writes_log`], fixed by its
    /// kind): if not, a dirty victim is written with the core latch released.
    writes_log: bool,
    /// The write path's reader for other threads ([`WritePath::page_reader`]): a miss read
    /// with the core latch released uses it, not the write path's mutex, unless a write of
    /// the page is in flight ([`PageCache::in_flight`]).
    reader: Option<std::sync::Arc<dyn PageReader>>,
    /// Pages being written with the core latch released (kept only with a `reader`).
    in_flight: std::sync::Arc<InFlight>,
    eviction: Box<dyn EvictionPolicy>,
    after_read: Option<Box<dyn AfterRead>>,
    /// Leaf splits made with the core latch shared: their frames, allocations and pending
    /// separators (`splits.rs`).
    pub splits: crate::splits::Splits,
    /// Free frames for misses reserved with the core latch shared, and the pages loaded into
    /// them since the latch was last exclusive (`miss_stock.rs`).
    misses: miss_stock::MissStock,
    /// Out of place and journaled, batches of the next victims written ahead of the misses
    /// with the core latch released, to attach when it is next exclusive (`clean_ahead.rs`).
    written_ahead: std::sync::Arc<clean_ahead::Written>,
    /// Key heads of recently read internal nodes, for readers with the core latch shared (see
    /// `btree/node/hints.rs`: never trusted, so never invalidated).
    pub hints: crate::btree::node::SearchHints,
}

impl PageCache {
    pub fn new(pool: BufferPool, wp: Box<dyn WritePath>) -> PageCache {
        PageCache {
            hints: crate::btree::node::SearchHints::for_frames(pool.frame_count()),
            pool,
            page_capacity: wp.page_capacity(),
            writes_log: wp.writes_log(),
            reader: wp.page_reader(),
            in_flight: Default::default(),
            wp: std::sync::Arc::new(std::sync::Mutex::new(wp)),
            page_reserve: 0,
            eviction: Box::new(WriteBack),
            after_read: None,
            splits: crate::splits::Splits::new(crate::config::LeafSplits::Auto),
            misses: Default::default(),
            written_ahead: Default::default(),
        }
    }

    /// Replaces the eviction policy.
    pub fn set_eviction(&mut self, p: Box<dyn EvictionPolicy>) {
        // Per-frame lists of uncommitted writers matter only to a policy that refuses them.
        self.pool.track_uncommitted = !p.steal();
        self.eviction = p;
    }

    /// Installs the hook that sees every page read from the device.
    pub fn set_after_read(&mut self, h: Option<Box<dyn AfterRead>>) {
        self.after_read = h;
    }

    /// Whether the after-read hook must see a page read that was not evicted dirty (so it is
    /// read with the core latch held).
    pub(crate) fn hook_sees_every_read(&self) -> bool {
        self.after_read
            .as_ref()
            .is_some_and(|h| !h.evicted_dirty_only())
    }

    /// The frame holding `pid`, reading it through the write path on a miss.
    pub fn fetch(&mut self, pid: PageId, log: &mut dyn LogSink) -> Result<u32> {
        let evicted_dirty = match self.pool.state(pid) {
            Some(PageState::Resident(f)) => {
                self.pool.touch_hit(f);
                return Ok(f);
            }
            Some(PageState::EvictedDirty) => true,
            None => false,
        };
        self.pool.stats.misses += 1;
        let f = self.victim(log)?;
        let fr = &mut self.pool.frames[f as usize];
        crate::sync::lock(&self.wp).read_page(pid, &mut fr.data)?;
        let dirty = match self.after_read.as_mut() {
            Some(h) => h.after_read(pid, &mut fr.data, evicted_dirty)?,
            None => evicted_dirty,
        };
        self.pool.install(f, pid);
        let leaf = crate::buffer::is_leaf(self.pool.data(f));
        self.pool.set_guarded(f, leaf);
        if dirty {
            // Brought up to date from records that are not on the device yet: still dirty.
            let lsn = page::page_lsn(self.pool.data(f));
            self.pool.mark_dirty(f, lsn, 0);
        }
        Ok(f)
    }

    /// Readies a miss of `pid` to be read with the core latch released ([`PendingLoad`]): the
    /// victim is chosen (and a dirty one written or dropped) as [`PageCache::fetch`] would, and the
    /// frame reserved for the page; the frames set aside for misses are refilled if a miss found
    /// none (`miss_stock.rs`), in place with their dirty victims' copies in the load's. Or the page
    /// is cached already (another thread's load), or it is read here and now, exclusive, when an
    /// after-read hook must see it or it was evicted dirty (its redo is applied under the latch).
    pub fn reserve(
        &mut self,
        pid: PageId,
        log: &mut dyn LogSink,
        health: &crate::health::Health,
    ) -> Result<Reserved> {
        let read_here = match self.pool.seen(pid) {
            Seen::Resident(_) => return Ok(Reserved::Cached),
            Seen::Loading(f) => return Ok(Reserved::Wait(self.pool.load_wait(f))),
            Seen::EvictedDirty => true,
            Seen::Absent => self.hook_sees_every_read(),
        };
        if read_here {
            self.fetch(pid, log)?;
            // The operation's retry will count a hit on the page: this miss stands for both.
            self.pool.rehits_ahead();
            return Ok(Reserved::Cached);
        }
        // Batches written ahead and queued (none since the core latch was taken exclusive: a
        // writer holds its ticket until its batch is queued, `engine/latch.rs`).
        self.adopt_cleaned_pages();
        self.pool.stats.misses += 1;
        // Out of place and journaled a victim's write can fail without poisoning (no space:
        // `Full`, `LogFull`): it is written here, the frame still dirty, and the error goes to
        // the operation. In place only a device error can fail it.
        let (f, victim) = self.victim_with(log, !self.writes_log)?;
        let mut victims: Vec<VictimCopy> = victim.into_iter().collect();
        let slot = self.pool.install_loading(f, pid);
        // The frames for the next misses, which other threads then reserve with the latch
        // shared; in place their dirty victims are written with this one, out of place and
        // journaled the dirty pages the hand reaches next after it (`clean_ahead.rs`).
        let ahead = self.fill_miss_stock(log, &mut victims, health);
        let mut load = self.pending_load(pid, slot, victims, health);
        load.ahead = ahead;
        Ok(Reserved::Load(load))
    }

    /// The load of `pid` into the frame of `slot`, its dirty victims' copies to be written
    /// first: read through the write path's reader unless a write of the page is in flight.
    fn pending_load(
        &self,
        pid: PageId,
        slot: crate::buffer::LoadSlot,
        victims: Vec<VictimCopy>,
        health: &crate::health::Health,
    ) -> PendingLoad {
        let reader = self
            .reader
            .clone()
            .filter(|_| !self.in_flight.contains(pid));
        PendingLoad {
            pid,
            slot,
            victims,
            victims_log: None,
            ahead: None,
            reader,
            health: health.clone(),
        }
    }

    /// A frame for a page that is being created (not read from the device): zeroed.
    pub fn create(&mut self, pid: PageId, log: &mut dyn LogSink) -> Result<u32> {
        if let Some(f) = self.pool.lookup(pid) {
            self.pool.data_mut(f).fill(0);
            return Ok(f);
        }
        let f = self.victim(log)?;
        self.pool.data_mut(f).fill(0);
        self.pool.install(f, pid);
        Ok(f)
    }

    /// A frame holding no page, for a page the caller will put in it (a victim evicted as
    /// [`PageCache::create`] would).
    pub(crate) fn free_frame(&mut self, log: &mut dyn LogSink) -> Result<u32> {
        Ok(self.victim_from(log, false, false)?.0)
    }

    /// Frees a frame: CLOCK over the frames the policy lets go; a dirty victim is written back
    /// or dropped as the policy says.
    fn victim(&mut self, log: &mut dyn LogSink) -> Result<u32> {
        Ok(self.victim_with(log, false)?.0)
    }

    /// [`PageCache::victim`]; with `detach`, a dirty victim to be written back is not written
    /// here: its sealed copy is returned, to be written after the log is forced past it, both
    /// with the core latch released ([`PendingLoad::force_victim`], [`PendingLoad::write_victim`]).
    fn victim_with(
        &mut self,
        log: &mut dyn LogSink,
        detach: bool,
    ) -> Result<(u32, Option<VictimCopy>)> {
        self.victim_from(log, detach, true)
    }

    /// [`PageCache::victim_with`]; with `take_stock`, the frames set aside for splits beside
    /// other threads are given back to the pool when every other frame is pinned (not when the
    /// victim is for that stock itself).
    fn victim_from(
        &mut self,
        log: &mut dyn LogSink,
        detach: bool,
        take_stock: bool,
    ) -> Result<(u32, Option<VictimCopy>)> {
        let steal = self.eviction.steal();
        let mut chosen = self
            .pool
            .pick_victim_waiting(|fr| steal || fr.uncommitted.is_empty());
        if chosen.is_none()
            && take_stock
            && (self.release_split_stock() | self.release_miss_stock())
        {
            // The frames set aside for splits beside other threads come back first.
            chosen = self
                .pool
                .pick_victim_waiting(|fr| steal || fr.uncommitted.is_empty());
        }
        let chosen = chosen.ok_or_else(|| {
            Error::PoolExhausted(format!(
                "all {} buffer frames are pinned{}: the buffer pool is too small for this \
                     operation",
                self.pool.frame_count(),
                if steal {
                    ""
                } else {
                    " or hold uncommitted changes"
                }
            ))
        })?;
        Ok((chosen, self.evict_victim(chosen, log, detach)?))
    }

    /// Empties frame `chosen`, picked by the CLOCK sweep: a dirty page is written back (with
    /// `detach`, its sealed copy returned instead, to be written with the core latch
    /// released) or dropped as the policy says.
    fn evict_victim(
        &mut self,
        chosen: u32,
        log: &mut dyn LogSink,
        detach: bool,
    ) -> Result<Option<VictimCopy>> {
        let fr = &self.pool.frames[chosen as usize];
        let mut copy = None;
        if let Some(pid) = fr.pid {
            let mut keep_dirty = false;
            if fr.dirty {
                match self.eviction.dirty_victim(pid) {
                    DirtyVictim::WriteBack if detach => {
                        let data = self.pool.data_mut(chosen);
                        page::note_write(data);
                        page::seal(data);
                        copy = Some(VictimCopy {
                            pid,
                            lsn: page::page_lsn(data),
                            data: data.to_vec(),
                            _in_flight: self.enter_in_flight(vec![pid]),
                        });
                    }
                    DirtyVictim::WriteBack => {
                        self.write_frames(&[chosen], log, WriteReason::Eviction)?;
                    }
                    DirtyVictim::Drop => keep_dirty = true,
                }
                self.pool.stats.dirty_evictions += 1;
            }
            self.pool.evict(chosen, keep_dirty);
        }
        Ok(copy)
    }

    /// Writes several dirty pages as one batch (checkpoints, the page cleaner). Pages not
    /// cached or not dirty are skipped. Returns how many were written.
    pub fn write_batch(
        &mut self,
        pids: &[PageId],
        log: &mut dyn LogSink,
        reason: WriteReason,
    ) -> Result<usize> {
        let frames: Vec<u32> = pids
            .iter()
            .filter_map(|&p| self.pool.lookup(p))
            .filter(|&f| self.pool.frames[f as usize].dirty)
            .collect();
        if frames.is_empty() {
            return Ok(0);
        }
        self.write_frames(&frames, log, reason)?;
        Ok(frames.len())
    }

    /// Writes page images that are not (or not as they are) in a frame: a checkpoint of the
    /// flushless mode writes a stored image brought up to date with only the committed records.
    /// The caller made the log durable past every change in them.
    pub fn write_images(
        &mut self,
        images: &mut [(PageId, Vec<u8>)],
        log: &mut dyn LogSink,
        reason: WriteReason,
    ) -> Result<()> {
        if images.is_empty() {
            return Ok(());
        }
        for (_, data) in images.iter_mut() {
            debug_assert!(
                page::page_lsn(data) < log.durable_lsn(),
                "write-ahead rule: a page image is newer than the durable log"
            );
            page::note_write(data);
            page::seal(data);
        }
        let batch: Vec<(PageId, &[u8])> = images.iter().map(|(p, d)| (*p, &d[..])).collect();
        crate::sync::lock(&self.wp).write_pages(&batch, reason, log)
    }

    /// Reads page `pid` as the device holds it (not through the pool): a zeroed buffer if it was
    /// never written.
    pub fn read_stored(&mut self, pid: PageId) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; self.pool.page_size()];
        crate::sync::lock(&self.wp).read_page(pid, &mut buf)?;
        Ok(buf)
    }

    /// Takes copies of the dirty pages among `pids` (sealed, as a write seals them) for a write
    /// with the core latch released ([`Detached::write`]); the frames stay dirty until
    /// [`PageCache::attach`]. `None` when none is cached and dirty.
    pub fn detach(&mut self, pids: &[PageId], reason: WriteReason) -> Option<Detached> {
        let mut pages = Vec::new();
        for &pid in pids {
            let Some(f) = self
                .pool
                .lookup(pid)
                .filter(|&f| self.pool.frames[f as usize].dirty)
            else {
                continue;
            };
            let data = self.pool.data_mut(f);
            page::note_write(data);
            page::seal(data);
            pages.push((f, pid, page::page_lsn(data), data.to_vec()));
        }
        let max_lsn = pages.iter().map(|p| p.2).max()?;
        let _in_flight = self.enter_in_flight(pages.iter().map(|p| p.1).collect());
        Some(Detached {
            pages,
            max_lsn,
            reason,
            _in_flight,
        })
    }

    /// Enters `pids` as being written with the core latch released, until the guard is
    /// dropped; nothing to do without a reader (every read takes the write path's mutex).
    fn enter_in_flight(&self, pids: Vec<PageId>) -> Option<InFlightGuard> {
        self.reader
            .as_ref()
            .map(|_| InFlightGuard::enter(&self.in_flight, pids))
    }

    /// The [`PageReader`] misses read through, if any: its reads are not in the write path's
    /// counters.
    pub fn page_reader(&self) -> Option<std::sync::Arc<dyn PageReader>> {
        self.reader.clone()
    }

    /// A detached write is done (`written`: it succeeded): each frame that still holds its
    /// page as copied is clean; one changed since stays dirty, its recovery LSN raised to the
    /// copy's (the device holds every change up to it). A frame evicted or written again
    /// meanwhile is left as it is. Returns how many frames it made clean.
    pub fn attach(&mut self, d: &Detached, written: bool) -> usize {
        if !written {
            return 0;
        }
        let mut cleaned = 0;
        for &(f, pid, lsn, _) in &d.pages {
            if self.pool.lookup(pid) != Some(f) || !self.pool.frames[f as usize].dirty {
                continue;
            }
            if page::page_lsn(self.pool.data(f)) == lsn {
                self.pool.mark_clean(f);
                cleaned += 1;
            } else {
                self.pool.raise_rec_lsn(f, lsn);
            }
        }
        cleaned
    }

    /// Writes dirty frames through the write path, after forcing the log up to their newest page
    /// LSN (the write-ahead rule), and marks them clean.
    fn write_frames(
        &mut self,
        frames: &[u32],
        log: &mut dyn LogSink,
        reason: WriteReason,
    ) -> Result<()> {
        let max_lsn = frames
            .iter()
            .map(|&f| page::page_lsn(self.pool.data(f)))
            .max()
            .unwrap_or(0);
        log.force(max_lsn)?;
        // The write-ahead rule: no page reaches the device before the log that describes it.
        debug_assert!(
            max_lsn == 0 || log.durable_lsn() > max_lsn,
            "write-ahead rule: page LSN {max_lsn} not durable (durable below {})",
            log.durable_lsn()
        );
        for &f in frames {
            let data = self.pool.data_mut(f);
            page::note_write(data);
            page::seal(data);
        }
        let batch: Vec<(PageId, &[u8])> = frames
            .iter()
            .map(|&f| {
                let fr = &self.pool.frames[f as usize];
                (fr.pid.expect("page"), &fr.data[..])
            })
            .collect();
        crate::sync::lock(&self.wp).write_pages(&batch, reason, log)?;
        for &f in frames {
            self.pool.mark_clean(f);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::MemDevice;
    use crate::writepath::{InPlace, MemLog};
    use std::sync::{Arc, Mutex};

    /// No-steal, and dirty victims dropped: the policy of paper 001.
    struct DropNoSteal;
    impl EvictionPolicy for DropNoSteal {
        fn steal(&self) -> bool {
            false
        }
        fn dirty_victim(&mut self, _pid: PageId) -> DirtyVictim {
            DirtyVictim::Drop
        }
    }

    struct Seen(Arc<Mutex<Vec<(PageId, bool)>>>);
    impl AfterRead for Seen {
        fn after_read(
            &mut self,
            pid: PageId,
            data: &mut [u8],
            evicted_dirty: bool,
        ) -> Result<bool> {
            self.0.lock().unwrap().push((pid, evicted_dirty));
            if evicted_dirty {
                // What on-the-fly redo would do: bring the page up to date.
                data[100] = 0xAB;
            }
            Ok(evicted_dirty)
        }
    }

    fn cache() -> PageCache {
        let dev = Box::new(MemDevice::new(4 << 20, 4096));
        let wp = InPlace::create(dev, 4096, 8, false).unwrap();
        PageCache::new(BufferPool::new(8, 4096).unwrap(), Box::new(wp))
    }

    #[test]
    fn no_steal_drop_policy_and_after_read_hook() {
        let mut c = cache();
        let seen = Arc::new(Mutex::new(Vec::new()));
        c.set_eviction(Box::new(DropNoSteal));
        c.set_after_read(Some(Box::new(Seen(seen.clone()))));
        let mut log = MemLog::default();
        // Eight pages changed by transaction 7, which has not committed.
        let pages: Vec<PageId> = (1..=8).collect();
        for (i, &pid) in pages.iter().enumerate() {
            let f = c.create(pid, &mut log).unwrap();
            c.pool.mark_dirty(f, i as u64 + 1, 7);
            assert_eq!(c.pool.uncommitted(pid), &[7]);
        }
        // No frame may be stolen from the live transaction.
        assert!(matches!(c.fetch(9, &mut log), Err(Error::PoolExhausted(_))));
        c.pool.check_invariants();
        // Once it ended, a dirty victim is dropped without a write.
        c.pool.txn_ended(7, &pages);
        c.fetch(9, &mut log).unwrap();
        assert_eq!(
            crate::sync::lock(&c.wp).counters().user_write_bytes,
            0,
            "nothing written"
        );
        let dropped: Vec<PageId> = pages
            .iter()
            .copied()
            .filter(|&p| c.pool.state(p) == Some(PageState::EvictedDirty))
            .collect();
        assert_eq!(dropped.len(), 1);
        assert_eq!(seen.lock().unwrap().as_slice(), &[(9, false)]);
        // Reading the dropped page again runs the hook with `evicted_dirty`.
        let f = c.fetch(dropped[0], &mut log).unwrap();
        assert_eq!(c.pool.data(f)[100], 0xAB);
        assert_eq!(seen.lock().unwrap().last(), Some(&(dropped[0], true)));
        assert_eq!(c.pool.state(dropped[0]), Some(PageState::Resident(f)));
        c.pool.check_invariants();
    }

    /// Leaf pages `pids` created dirty, page `pid` at LSN `40 + pid`: their frames.
    fn dirty_leaves(
        c: &mut PageCache,
        log: &mut MemLog,
        pids: std::ops::RangeInclusive<PageId>,
    ) -> Vec<u32> {
        pids.map(|pid| {
            let f = c.create(pid, log).unwrap();
            crate::page::init(c.pool.data_mut(f), pid, crate::page::PageType::Leaf);
            crate::page::set_page_lsn(c.pool.data_mut(f), 40 + pid);
            c.pool.mark_dirty(f, 40 + pid, 3);
            f
        })
        .collect()
    }

    #[test]
    fn write_back_writes_dirty_victims_under_the_wal_rule() {
        let mut c = cache();
        let mut log = MemLog::default();
        dirty_leaves(&mut c, &mut log, 1..=8);
        c.fetch(9, &mut log).unwrap();
        assert_eq!(crate::sync::lock(&c.wp).counters().eviction_writes, 1);
        assert!(log.durable > 41, "the log was forced before the page write");
        c.pool.check_invariants();
    }

    /// A batch written with the core latch released (a checkpoint's or the page cleaner's):
    /// a failed write leaves every frame dirty; after a good one, frames still as copied are
    /// clean, and a frame changed since stays dirty with its recovery LSN raised to the copy's.
    #[test]
    fn a_detached_batch_cleans_only_the_frames_still_as_copied() {
        let mut c = cache();
        let mut log = MemLog::default();
        let frames = dirty_leaves(&mut c, &mut log, 1..=3);
        let dirty = |c: &PageCache| {
            frames
                .iter()
                .map(|&f| c.pool.frames[f as usize].dirty)
                .collect::<Vec<_>>()
        };
        let d = c.detach(&[1, 2, 3], WriteReason::Eviction).unwrap();
        assert_eq!(d.page_count(), 3);
        c.attach(&d, false);
        assert_eq!(
            dirty(&c),
            [true, true, true],
            "a failed write cleans nothing"
        );
        // Page 2 changes after the copy.
        crate::page::set_page_lsn(c.pool.data_mut(frames[1]), 50);
        c.pool.mark_dirty(frames[1], 50, 4);
        d.force(&mut log).unwrap();
        d.write_pages(&mut **crate::sync::lock(&c.wp), &mut log)
            .unwrap();
        c.attach(&d, true);
        assert_eq!(dirty(&c), [false, true, false]);
        assert_eq!(
            c.pool.min_rec_lsn(),
            Some(42),
            "the device holds page 2 up to its copy's LSN"
        );
        assert_eq!(crate::sync::lock(&c.wp).counters().eviction_writes, 3);
        c.pool.check_invariants();
    }
}
