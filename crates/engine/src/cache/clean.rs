//! A miss whose victim is dirty, out of place or journaled: the victim's write can fail without
//! a device fault (no free zone or journal space: `Full`; its location record refused:
//! `LogFull`), and the page must then still be in the pool, so it cannot be dropped before its
//! write as a victim in place is. Instead its sealed copy is written with the core latch
//! released while the page stays cached (the frame pinned, so no other eviction takes it), as
//! a page cleaner's batch is (`Shared::write_detached`); then, exclusive again, the frame is
//! taken for the missing page if the victim is still there and clean. Readers and writers of
//! cached pages go on during the write (writers of the log wait for its latch, which an
//! out-of-place write holds for its location record).
//!
//! With one thread the device sees what the write under the latch gave it, in the same order:
//! the same victim, its write (log forced first), then the read.

use super::{Detached, PageCache, Reserved};
use crate::cache::DirtyVictim;
use crate::error::Result;
use crate::page::PageId;
use crate::writepath::{LogSink, WriteReason};

/// A dirty victim to write before its frame takes a missing page ([`Reserved::Clean`]).
pub(crate) struct VictimClean {
    /// The victim's sealed copy, to be written with the latches released.
    pub batch: Detached,
    frame: u32,
    victim: PageId,
    /// The page the frame is for.
    pid: PageId,
}

impl PageCache {
    /// If the picked frame `chosen` holds a dirty page that this write path writes back with a
    /// log record (out of place, journaled): its copy, the frame pinned meanwhile.
    pub(super) fn clean_first(&mut self, chosen: u32, pid: PageId) -> Option<VictimClean> {
        if !self.writes_log {
            return None;
        }
        let fr = &self.pool.frames[chosen as usize];
        let victim = fr.pid.filter(|_| fr.dirty)?;
        if self.eviction.dirty_victim(victim) != DirtyVictim::WriteBack {
            return None;
        }
        let batch = self.detach(&[victim], WriteReason::Eviction)?;
        self.pool.pin(chosen);
        Some(VictimClean {
            batch,
            frame: chosen,
            victim,
            pid,
        })
    }

    /// After the victim's copy was written (`written`, core latch exclusive again): the frame
    /// reserved for the missing page, as [`PageCache::reserve`] reserves one. The victim's
    /// page is clean if it did not change meanwhile; if it did, or another eviction took the
    /// frame, another victim is chosen (and written as before: under the latch). A failed
    /// write leaves the victim dirty and is returned (the operation then runs exclusive, and
    /// its own eviction meets and reports the failure).
    pub fn finish_clean(
        &mut self,
        c: VictimClean,
        written: Result<()>,
        log: &mut dyn LogSink,
        health: &crate::health::Health,
    ) -> Result<Reserved> {
        self.pool.unpin(c.frame);
        self.attach(&c.batch, written.is_ok());
        written?;
        match self.pool.seen(c.pid) {
            // Another thread's miss brought the page in meanwhile.
            crate::buffer::Seen::Resident(_) => return Ok(Reserved::Cached),
            crate::buffer::Seen::Loading(f) => return Ok(Reserved::Wait(self.pool.load_wait(f))),
            _ => {}
        }
        let fr = &self.pool.frames[c.frame as usize];
        if fr.pid == Some(c.victim) && !fr.dirty && fr.pins == 0 {
            // The victim as the write under the latch would have left it: written, clean.
            self.pool.stats.dirty_evictions += 1;
            return self.load_into(c.frame, c.pid, log, health);
        }
        let chosen = self.pick_victim(true)?;
        self.load_into(chosen, c.pid, log, health)
    }
}
