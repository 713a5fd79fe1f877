//! Page I/O of the cache with the core latch released: a miss's reserved frame read (and, in
//! place, its dirty victim written) by [`PendingLoad`], checkpoint and cleaner batches written
//! from sealed copies ([`Detached`]), and the set of pages whose copies are being written
//! meanwhile ([`InFlight`]), which readers without the write path's mutex keep away from. See
//! docs/engine.md, "Misses".

use crate::error::{Error, Result};
use crate::page::{self, PageId};
use crate::writepath::{LogSink, PageReader, WritePath, WriteReason};

/// Copies of dirty pages to be written with the core latch released (a checkpoint's batch, or
/// the page cleaner's, see `Db::maintenance`): what the write saw, to be told to the pool
/// after.
pub(crate) struct Detached {
    /// (frame, page, page LSN, sealed image).
    pub(super) pages: Vec<(u32, PageId, crate::page::Lsn, Vec<u8>)>,
    pub(super) max_lsn: crate::page::Lsn,
    pub(super) reason: WriteReason,
    /// The pages, as written while readers read without the write path's mutex.
    pub(super) _in_flight: Option<InFlightGuard>,
}

/// Pages whose sealed copies were taken under the core latch and are being written with it
/// released (a dirty victim's, a detached checkpoint batch's), while other threads read pages
/// through the write path's [`crate::writepath::PageReader`], without its mutex. Until the
/// write is done, the device holds an older image of such a page (or, mid-write, a torn one),
/// so a miss of it is read through the write path's mutex instead, after the write. Entered
/// under the core latch, where the copy is taken, and looked at under it, where a miss is
/// reserved: a page not entered then has no write in flight, and none can start while its
/// frame is being loaded (only a cached page is written).
#[derive(Default)]
pub(crate) struct InFlight(std::sync::Mutex<std::collections::HashMap<PageId, u32>>);

impl InFlight {
    pub(super) fn contains(&self, pid: PageId) -> bool {
        crate::sync::lock(&self.0).contains_key(&pid)
    }
}

/// Pages entered in an [`InFlight`] set until this is dropped (after their write).
pub(crate) struct InFlightGuard {
    set: std::sync::Arc<InFlight>,
    pids: Vec<PageId>,
}

impl InFlightGuard {
    pub(super) fn enter(set: &std::sync::Arc<InFlight>, pids: Vec<PageId>) -> InFlightGuard {
        let mut m = crate::sync::lock(&set.0);
        for &p in &pids {
            *m.entry(p).or_insert(0) += 1;
        }
        drop(m);
        InFlightGuard {
            set: set.clone(),
            pids,
        }
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        let mut m = crate::sync::lock(&self.set.0);
        for p in &self.pids {
            if let std::collections::hash_map::Entry::Occupied(mut e) = m.entry(*p) {
                *e.get_mut() -= 1;
                if *e.get() == 0 {
                    e.remove();
                }
            }
        }
    }
}

impl Detached {
    /// Pages in the batch.
    pub fn page_count(&self) -> usize {
        self.pages.len()
    }

    /// Forces the log up to the newest copy's LSN (the write-ahead rule).
    pub fn force(&self, log: &mut dyn LogSink) -> Result<()> {
        log.force(self.max_lsn)
    }

    /// Writes the copies through `wp` (the log forced past them already). The caller holds
    /// the write path's mutex and a writer's ticket (`engine/latch.rs`), and neither the core
    /// latch nor the log latch: a write path that logs ([`WritePath::writes_log`]) is given a
    /// log that takes the latch for each append (`writepath::SharedLog`).
    pub fn write_pages(&self, wp: &mut dyn WritePath, log: &mut dyn LogSink) -> Result<()> {
        debug_assert!(self.max_lsn < log.durable_lsn(), "write-ahead rule");
        let batch: Vec<(PageId, &[u8])> = self.pages.iter().map(|p| (p.1, &p.3[..])).collect();
        wp.write_pages(&batch, self.reason, log)
    }
}

/// What [`PageCache::reserve`] made of a miss.
pub(crate) enum Reserved {
    /// The page is in memory now.
    Cached,
    /// Another thread is reading it: wait for that ([`LoadWait::wait`]) with the latches
    /// released, then try again.
    Wait(crate::buffer::LoadWait),
    /// A frame is reserved for it: write the dirty victim ([`PendingLoad::write_victim`]),
    /// then read the page ([`PendingLoad::read`]), latches released.
    Load(PendingLoad),
}

/// A page to read into its reserved frame with no core latch held (see `buffer/mod.rs`, module
/// notes): other threads' operations on cached pages go on meanwhile, and a thread that needs
/// this page waits for it. In place, a dirty victim's sealed copy is written first, also with
/// the core latch released, after the log is forced past it ([`PendingLoad::force_victim`]).
pub(crate) struct PendingLoad {
    pub(super) pid: PageId,
    pub(super) slot: crate::buffer::LoadSlot,
    /// Dirty victims to write first, in place: the frame's own victim and those of frames the
    /// reservation set aside for misses reserved with the latch shared (`miss_stock.rs`).
    pub(super) victims: Vec<VictimCopy>,
    /// The log, once forced past the victims (a page write in place logs nothing).
    pub(super) victims_log: Option<crate::writepath::DurableLog>,
    /// Out of place and journaled, the dirty pages the CLOCK hand reaches next, to write
    /// before the read ([`PendingLoad::take_ahead`]).
    pub(super) ahead: Option<super::clean_ahead::AheadBatch>,
    /// Reads the page without the write path's mutex, if the write path offers that and no
    /// write of the page is in flight ([`InFlight`]).
    pub(super) reader: Option<std::sync::Arc<dyn PageReader>>,
    pub(super) health: crate::health::Health,
}

/// A dirty victim, evicted under the core latch, to be written with the latch released.
pub(super) struct VictimCopy {
    pub(super) pid: PageId,
    pub(super) data: Vec<u8>,
    pub(super) lsn: page::Lsn,
    /// The page, entered as in flight until the copy is written.
    pub(super) _in_flight: Option<InFlightGuard>,
}

impl PendingLoad {
    /// Whether dirty victims are to be written first. Then the caller takes the write path's
    /// mutex before it lets the core latch go: until the write, the device holds an older image
    /// of a page the pool no longer has, and whoever reads that page, or checkpoints, needs the
    /// mutex too, so they come after the write. It also forces the log past the victims
    /// ([`PendingLoad::force_victim`]), with no latch held.
    pub fn writes_victim(&self) -> bool {
        !self.victims.is_empty()
    }

    /// The dirty pages to write ahead of the misses (`clean_ahead.rs`), if the reservation
    /// took any: the caller lets the core and log latches go and writes them
    /// (`Shared::write_detached`) before the read. Never with victims to
    /// write (those are in place, these out of place and journaled).
    pub fn take_ahead(&mut self) -> Option<super::clean_ahead::AheadBatch> {
        debug_assert!(self.ahead.is_none() || self.victims.is_empty());
        self.ahead.take()
    }

    /// Forces the log past the dirty victims' changes (the write-ahead rule). A failure
    /// poisons the handle: the pool no longer has the pages, and their changes are in a log
    /// that cannot be made durable.
    pub fn force_victim(&mut self, log: &mut dyn LogSink) -> Result<()> {
        let Some(lsn) = self.victims.iter().map(|v| v.lsn).max() else {
            return Ok(());
        };
        if let Err(e) = log.force(lsn) {
            self.health.poison(&e);
            return Err(e);
        }
        self.victims_log = Some(crate::writepath::DurableLog::of(log));
        Ok(())
    }

    /// Writes the dirty victims (if any; the log forced past them, in place), as one batch,
    /// through `held`, the write path under its mutex, taken before the latches were let go,
    /// with no core or log latch held. A failure poisons the database, since the pool no
    /// longer has those pages' changes (the log does: reopening recovers them); the frame is
    /// freed when the load is dropped.
    pub fn write_victim(&mut self, held: &mut Option<WritePathGuard<'_>>) -> Result<()> {
        if self.victims.is_empty() {
            return Ok(());
        }
        let victims = std::mem::take(&mut self.victims);
        let batch: Vec<(PageId, &[u8])> = victims.iter().map(|v| (v.pid, &v.data[..])).collect();
        let r = match (self.victims_log.take(), held.as_mut()) {
            (Some(mut durable), Some(w)) => {
                w.write_pages(&batch, WriteReason::Eviction, &mut durable)
            }
            _ => Err(Error::Poisoned(
                "internal: a dirty victim was to be written without forcing the log or without \
                 the write path's mutex"
                    .into(),
            )),
        };
        if let Err(e) = &r {
            self.health.poison(e);
        }
        r
    }

    /// Reads the page and publishes the frame, with no core or log latch held (after
    /// [`PendingLoad::write_victim`], `held` the write path's mutex if that took it). The page
    /// is read through the [`PageReader`] if there is one, without the mutex (other threads'
    /// reads and writes go on); else, or if that read fails, through the write path `wp` under
    /// its mutex, which reports the error as an exclusive read would. On an error the page is
    /// left uncached (the frame freed).
    pub fn read(
        mut self,
        wp: &SharedWritePath,
        mut held: Option<WritePathGuard<'_>>,
    ) -> Result<()> {
        debug_assert!(
            self.victims.is_empty(),
            "the dirty victims are written first"
        );
        // A poisoned handle reads through the write path, which reports it (a victim whose
        // write failed has left the in-flight set, and its page's home is stale).
        if let Some(reader) = self.reader.take().filter(|_| self.health.check().is_ok()) {
            if self.read_unlocked(&*reader, wp, held.take()) {
                self.slot.publish();
                return Ok(());
            }
        }
        let mut w = held.unwrap_or_else(|| crate::sync::lock(wp));
        let r = w.read_page(self.pid, self.slot.bytes_mut());
        drop(w);
        match r {
            Ok(()) => self.slot.publish(),
            Err(_) => self.slot.fail(),
        }
        r
    }
}

impl PendingLoad {
    /// Reads the page through `reader` with no lock held across the device read: at once where
    /// pages have fixed places; else at the place the write path gives under its mutex (`held`,
    /// or taken), confirmed under it after. Whether the page was read (else it is read again
    /// under the mutex, which reports an error as an exclusive read would).
    fn read_unlocked(
        &mut self,
        reader: &dyn PageReader,
        wp: &SharedWritePath,
        held: Option<WritePathGuard<'_>>,
    ) -> bool {
        let buf = self.slot.bytes_mut();
        if !reader.moves() {
            drop(held);
            return reader.read_page(self.pid, buf).is_ok();
        }
        if reader.locates() {
            // The reader keeps the places itself, and the copies of staged pages: no part of
            // this read waits for the mutex, unless the write path holds the page in memory
            // where the reader does not see it (then it serves it, below). A staged page
            // written meanwhile has a place when looked up again.
            for _ in 0..2 {
                match reader.locate(self.pid) {
                    Ok(Some(place)) => {
                        drop(held);
                        return reader.read_placed(self.pid, &place, buf).is_ok()
                            && reader.confirm(self.pid, &place);
                    }
                    Ok(None) => match reader.read_staged(self.pid, buf) {
                        Ok(true) => return true,
                        Ok(false) => {}
                        Err(_) => return false,
                    },
                    Err(_) => return false,
                }
            }
        }
        let mut w = held.unwrap_or_else(|| crate::sync::lock(wp));
        let place = match w.locate(self.pid, buf) {
            Ok(crate::writepath::Located::Served) => return true,
            Ok(crate::writepath::Located::At(place)) => place,
            Err(_) => return false,
        };
        drop(w);
        reader.read_placed(self.pid, &place, buf).is_ok()
            && crate::sync::lock(wp).confirm(self.pid, &place)
    }
}

/// The write path's mutex, held.
pub(crate) type WritePathGuard<'a> = std::sync::MutexGuard<'a, Box<dyn WritePath>>;

/// The write path as the page cache holds it.
pub(crate) type SharedWritePath = std::sync::Arc<std::sync::Mutex<Box<dyn WritePath>>>;
