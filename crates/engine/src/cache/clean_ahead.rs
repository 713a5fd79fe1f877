//! Out of place and journaled: the dirty pages the CLOCK hand reaches next, written ahead of
//! the misses that will take their frames (docs/engine.md, "Misses").
//!
//! There a dirty victim's write logs its new place and forces the log, and it can fail for
//! want of space (`Full`, `LogFull`) with the page still needed in the pool, so it cannot be
//! evicted first and written after, as in place. Such a victim is written by an exclusive
//! reservation, under the core latch, and the fill of the miss stock stops at the first one
//! (`miss_stock.rs`): with half the frames dirty (YCSB-A), half the misses took the core latch
//! exclusive and held every reader up for the write.
//!
//! So when the fill stops at a dirty victim, the reservation also takes sealed copies of the
//! dirty pages among the next victims the hand will take (as many as the stock holds, as the
//! page cleaner picks them: `BufferPool::cleaner_candidates`), and writes them as one batch
//! once it has let the core and log latches go, as a checkpoint's batch is written
//! (`Shared::write_detached`: the batch's location records take the log latch one append at
//! a time). Readers, writers and commits go on meanwhile. The frames keep their pages, dirty,
//! until the core latch is next taken exclusive, where the batch is attached as a
//! checkpoint's is (`PageCache::attach`): a page still as copied is clean, and the next fill
//! of the stock takes it without a write. A batch refused for want of space leaves its pages
//! dirty (the exclusive reservation that meets them then reports the error, as before); a
//! device error poisons the handle. The writer holds a ticket (`engine/latch.rs`, `Writers`)
//! until the batch is queued, so the core latch is not taken exclusive before: no other write
//! of the batch's pages comes between its copies and its write, and the next exclusive latch
//! finds the batch queued.
//!
//! A lone thread has no stock and writes nothing ahead: virtual time is unchanged.

use super::unlatched::Detached;
use super::PageCache;
use crate::health::Health;
use crate::writepath::WriteReason;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Batches written ahead, waiting to be attached with the core latch exclusive.
#[derive(Default)]
pub(crate) struct Written {
    /// Each batch and whether its write succeeded.
    batches: Mutex<Vec<(Detached, bool)>>,
    /// Whether `batches` may hold any (read without its mutex by every exclusive latch).
    any: AtomicBool,
}

/// Copies of the dirty pages the hand reaches next, to be written with the core latch
/// released ([`AheadBatch::batch`], [`AheadBatch::written`]).
pub(crate) struct AheadBatch {
    batch: Option<Detached>,
    /// Whether the batch was written (queued with it when this is dropped).
    ok: bool,
    written: Arc<Written>,
    health: Health,
}

impl Drop for AheadBatch {
    /// Queues the batch for the next exclusive latch (as unwritten, if it was never written:
    /// its pages stay dirty).
    fn drop(&mut self) {
        if let Some(batch) = self.batch.take() {
            crate::sync::lock(&self.written.batches).push((batch, self.ok));
            self.written.any.store(true, Ordering::Release);
        }
    }
}

impl AheadBatch {
    /// The copies, to be written by the caller with the core latch released
    /// (`Shared::write_detached`, as a checkpoint's batch).
    pub fn batch(&self) -> &Detached {
        self.batch.as_ref().expect("a batch until dropped")
    }

    /// The batch's write is done, with `r`: queued for the next exclusive latch (the caller
    /// still holds its writer's ticket, so the next exclusive latch finds it). A device error
    /// poisons the handle; a refusal for want of space leaves the pages dirty, for the
    /// reservation that meets them to report.
    pub fn written(mut self, r: &crate::error::Result<()>) {
        self.health.note(r);
        self.ok = r.is_ok();
    }
}

impl std::borrow::Borrow<Detached> for AheadBatch {
    fn borrow(&self) -> &Detached {
        self.batch()
    }
}

impl PageCache {
    /// Copies of the dirty pages among the next `victims` the hand will take, at most that
    /// many, to write ahead of the misses (core and log latches held, out of place or
    /// journaled, several threads running, after a fill of the stock stopped at a dirty
    /// victim). `None` if there are none.
    pub(super) fn clean_ahead(&mut self, victims: usize, health: &Health) -> Option<AheadBatch> {
        debug_assert!(self.writes_ahead());
        let mut picks = self.pool.cleaner_candidates(victims, victims);
        picks.retain(|&pid| self.eviction.dirty_victim(pid) == super::DirtyVictim::WriteBack);
        let batch = self.detach(&picks, WriteReason::Eviction)?;
        Some(AheadBatch {
            batch: Some(batch),
            ok: false,
            written: self.written_ahead.clone(),
            health: health.clone(),
        })
    }

    /// Whether dirty victims are written ahead of the misses here: out of place or journaled
    /// (a page write logs its place), steal, and no after-read hook (the flushless mode drops
    /// its dirty victims unwritten; its misses are read exclusive and never fill the stock
    /// anyway). Only pages the policy would write back are taken.
    pub(super) fn writes_ahead(&self) -> bool {
        self.writes_log && self.eviction.steal() && self.after_read.is_none()
    }

    /// Attaches the batches written ahead since the latch was last exclusive (core latch
    /// exclusive, after the dirty marks are applied, as a checkpoint's batch is attached):
    /// their pages still as copied are clean, and counted.
    pub fn adopt_cleaned_pages(&mut self) {
        if !self.written_ahead.any.swap(false, Ordering::Acquire) {
            return;
        }
        let batches = std::mem::take(&mut *crate::sync::lock(&self.written_ahead.batches));
        for (batch, ok) in batches {
            let cleaned = self.attach(&batch, ok);
            self.pool.stats.written_ahead += cleaned as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::BufferPool;
    use crate::cache::Reserved;
    use crate::device::MemDevice;
    use crate::error::{Error, Result};
    use crate::page::{Lsn, PageId};
    use crate::wal::record::MapChange;
    use crate::writepath::{LogSink, MemLog, OopConfig, OutOfPlace};

    /// Writes `ahead` as `Shared::write_detached` does out of place (the log forced, then the
    /// pages through the write path with the log as its sink).
    fn write(ahead: AheadBatch, log: &mut dyn LogSink, c: &PageCache) {
        let r = ahead.batch().force(log).and_then(|()| {
            let mut w = crate::sync::lock(&c.wp);
            ahead.batch().write_pages(&mut **w, log)
        });
        ahead.written(&r);
    }

    /// A log whose appends are refused for want of space (its forces succeed).
    struct FullLog(MemLog);
    impl LogSink for FullLog {
        fn force(&mut self, lsn: Lsn) -> Result<()> {
            self.0.force(lsn)
        }
        fn next_lsn(&self) -> Lsn {
            self.0.next_lsn()
        }
        fn durable_lsn(&self) -> Lsn {
            self.0.durable_lsn()
        }
        fn log_map(&mut self, _: &[MapChange]) -> Result<Lsn> {
            Err(Error::LogFull("test".into()))
        }
    }

    /// An out-of-place cache of 128 frames (a stock of 4) holding leaf pages 1-128, every one
    /// dirty (page `p` at LSN `p`, byte 100 = `p`), pages 129-160 on the device only, a second
    /// thread noted.
    fn cache() -> PageCache {
        let dev = Box::new(MemDevice::new(8 << 20, 4096));
        let cfg = OopConfig {
            zone_bytes: 256 * 1024,
            // A batch of four pages fills the stage: it is written (and its places logged)
            // within the batch's write.
            batch_pages: 4,
            ..OopConfig::default()
        };
        let wp = OutOfPlace::create(dev, 4096, cfg).unwrap();
        let mut c = PageCache::new(BufferPool::new(128, 4096).unwrap(), Box::new(wp));
        let mut log = MemLog::default();
        for pid in (129..=160).chain(1..=128) {
            let f = c.create(pid, &mut log).unwrap();
            crate::page::init(c.pool.data_mut(f), pid, crate::page::PageType::Leaf);
            crate::page::set_page_lsn(c.pool.data_mut(f), pid);
            c.pool.data_mut(f)[100] = pid as u8;
            c.pool.mark_dirty(f, pid, 0);
            if pid > 128 {
                c.write_batch(&[pid], &mut log, crate::writepath::WriteReason::Checkpoint)
                    .unwrap();
            }
        }
        assert_eq!(c.pool.dirty_pages().len(), 128);
        c.splits.note_thread();
        std::thread::scope(|s| {
            s.spawn(|| c.splits.note_thread());
        });
        c
    }

    /// An exclusive reservation of page 129 after a miss found the stock empty: the batch it
    /// writes ahead, with the pages in it.
    fn reserve_with_ahead(c: &mut PageCache, health: &Health) -> (AheadBatch, Vec<PageId>) {
        let mut log = MemLog::default();
        assert!(
            c.reserve_shared(129, health).is_none(),
            "the stock is empty"
        );
        let Reserved::Load(mut load) = c.reserve(129, &mut log, health).unwrap() else {
            panic!("a frame reserved");
        };
        let ahead = load.take_ahead().expect("dirty pages to write ahead");
        let pids: Vec<PageId> = ahead
            .batch
            .as_ref()
            .unwrap()
            .pages
            .iter()
            .map(|p| p.1)
            .collect();
        load.read(&c.wp, None).unwrap();
        (ahead, pids)
    }

    fn dirty(c: &PageCache, pid: PageId) -> bool {
        let f = c.pool.lookup(pid).expect("cached");
        c.pool.frames[f as usize].dirty
    }

    /// The fill stops at a dirty victim and takes the dirty pages the hand reaches next; they
    /// stay dirty until the batch, written with the core latch released, is attached at the
    /// next exclusive latch; then the device has them and the next fill takes their frames
    /// without a write.
    #[test]
    fn the_next_dirty_victims_are_written_ahead_and_then_taken_clean() {
        let mut c = cache();
        let health = Health::default();
        let (ahead, pids) = reserve_with_ahead(&mut c, &health);
        assert_eq!(pids.len(), 4, "as many as the stock holds");
        assert!(pids.iter().all(|&p| dirty(&c, p)));
        let mut log = MemLog {
            next: 1000,
            ..MemLog::default()
        };
        let writes_before = crate::sync::lock(&c.wp).counters().eviction_writes;
        write(ahead, &mut log, &c);
        assert_eq!(
            crate::sync::lock(&c.wp).counters().eviction_writes,
            writes_before + 4
        );
        assert!(
            log.durable > *pids.iter().max().unwrap(),
            "the log forced past the copies (page p at LSN p)"
        );
        assert!(
            pids.iter().all(|&p| dirty(&c, p)),
            "clean only once attached"
        );
        c.adopt_cleaned_pages();
        c.pool.check_invariants();
        for &p in &pids {
            assert!(!dirty(&c, p), "page {p} is clean");
            let f = c.pool.lookup(p).unwrap();
            let stored = c.read_stored(p).unwrap();
            assert_eq!(stored[100], p as u8);
            assert_eq!(&stored[..], c.pool.data(f), "the device holds page {p}");
        }
        assert_eq!(c.pool.stats().written_ahead, 4);
        // The next exclusive reservation takes one of those frames for itself and sets the
        // other three aside: no write. Its fill stops at the next dirty victim.
        let mut log = MemLog::default();
        assert!(
            c.reserve_shared(130, &health).is_none(),
            "the stock is empty"
        );
        let Reserved::Load(mut load) = c.reserve(130, &mut log, &health).unwrap() else {
            panic!("a frame reserved");
        };
        assert!(load.take_ahead().is_some(), "the next dirty victims");
        load.read(&c.wp, None).unwrap();
        for pid in [131, 132, 133] {
            match c.reserve_shared(pid, &health) {
                Some(Reserved::Load(load)) => load.read(&c.wp, None).unwrap(),
                _ => panic!("page {pid} reserved from the stock"),
            }
        }
        c.adopt_loaded_pages();
        c.adopt_cleaned_pages();
        assert!(pids.iter().all(|&p| c.pool.lookup(p).is_none()), "evicted");
        assert_eq!(
            crate::sync::lock(&c.wp).counters().eviction_writes,
            writes_before + 4,
            "nothing written since the batch"
        );
        c.pool.check_invariants();
    }

    /// A batch refused for want of log space leaves its pages dirty and the handle healthy; so
    /// does one never written; a page changed after its copy stays dirty.
    #[test]
    fn a_refused_batch_leaves_its_pages_dirty() {
        let mut c = cache();
        let health = Health::default();
        let (ahead, pids) = reserve_with_ahead(&mut c, &health);
        let mut full = FullLog(MemLog::default());
        write(ahead, &mut full, &c);
        c.adopt_cleaned_pages();
        assert!(pids.iter().all(|&p| dirty(&c, p)));
        assert!(health.check().is_ok(), "no space is not a device error");
        assert_eq!(c.pool.stats().written_ahead, 0);
        c.pool.check_invariants();
        // Written, but page `pids[1]` changed after its copy was taken.
        let mut c = cache();
        let (ahead, pids) = reserve_with_ahead(&mut c, &health);
        let f = c.pool.lookup(pids[1]).unwrap();
        crate::page::set_page_lsn(c.pool.data_mut(f), 500);
        write(ahead, &mut MemLog::default(), &c);
        c.adopt_cleaned_pages();
        assert!(dirty(&c, pids[1]));
        assert!(!dirty(&c, pids[0]) && !dirty(&c, pids[2]));
        c.pool.check_invariants();
    }
}
