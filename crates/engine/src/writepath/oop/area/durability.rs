//! When written pages count and when old copies may go: location logging after the data is
//! durable, and reclaiming (zone trims or resets, slot trims) only after the log is durable past
//! the records that left the space without a live page. Until then recovery may still need the
//! old copies (it replays only durable records), so the old copies stay untouched: this is what
//! replaces the doublewrite buffer.

use super::nowa::Owner;
use super::{LogArea, ZoneState};
use crate::error::Result;
use crate::page::Lsn;
use crate::writepath::pack::SLOT_BYTES;
use crate::writepath::LogSink;

impl LogArea {
    /// Whether location changes are waiting to be logged.
    pub(crate) fn has_unlogged(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Makes the writes so far durable and logs their locations. Returns the record's LSN (0 if
    /// nothing was pending). The record is not forced: whoever reuses space forces it.
    pub(crate) fn commit_locations(&mut self, log: &mut dyn LogSink) -> Result<Lsn> {
        if self.pending.is_empty() {
            return Ok(0);
        }
        self.flush()?;
        let lsn = log.log_map(&self.pending)?;
        self.pending.clear();
        self.last_map_lsn = lsn;
        if !self.trims.unlogged.is_empty() {
            let slots = std::mem::take(&mut self.trims.unlogged);
            self.trims.waiting.push_back((lsn, slots));
        }
        Ok(lsn)
    }

    /// Logs the pending locations, forces the log past every location record, and reclaims
    /// those of `zones` left without a live page (the relocation of their pages is then what
    /// recovery finds).
    pub(crate) fn force_and_reclaim(&mut self, zones: &[u32], log: &mut dyn LogSink) -> Result<()> {
        self.commit_locations(log)?;
        log.force(self.last_map_lsn)?;
        for &z in zones {
            if self.zones[z as usize].valid_pages == 0 {
                self.dead.retain(|&d| d != z);
                self.reclaim(z)?;
            }
        }
        Ok(())
    }

    /// Trims or resets the full zones with no valid page left, after logging the changes that
    /// emptied them and forcing the log past them. Returns how many were reclaimed.
    pub(crate) fn reclaim_dead(&mut self, log: &mut dyn LogSink) -> Result<usize> {
        self.reclaim_dead_upto(log, usize::MAX)
    }

    /// [`LogArea::reclaim_dead`], at most `max` zones (the rest stay dead for a later call;
    /// with other threads beside it, one a step: a zone's trim in a file punches a hole, which
    /// stalls the file's other I/O for tens of milliseconds). Returns how many were reclaimed.
    pub(crate) fn reclaim_dead_upto(&mut self, log: &mut dyn LogSink, max: usize) -> Result<usize> {
        let zones = &self.zones;
        self.dead.retain(|&z| {
            let zone = &zones[z as usize];
            zone.state == ZoneState::Full && zone.valid_pages == 0
        });
        self.dead.sort_unstable();
        self.dead.dedup();
        if self.dead.is_empty() {
            return Ok(0);
        }
        // Zones may have emptied through changes not logged yet.
        self.commit_locations(log)?;
        log.force(self.last_map_lsn)?;
        let rest = self.dead.split_off(self.dead.len().min(max));
        let dead = std::mem::replace(&mut self.dead, rest);
        for &z in &dead {
            self.reclaim(z)?;
        }
        Ok(dead.len())
    }

    /// Zone `z` holds nothing recovery needs: trim or reset it and free it.
    fn reclaim(&mut self, z: u32) -> Result<()> {
        let start = self.layout.zone_start(z);
        // Counted before the reset: a read of the zone made without the write path's mutex
        // that overlaps the reset, or the zone's next writes, is not confirmed.
        self.shared.reset(z);
        self.backend.reset_zone(start, self.layout.zone_bytes)?;
        self.stream.kill(Owner::Zone(z));
        self.zones[z as usize].clear();
        self.touch_zone(z);
        // The zone trim covers its dead slots; a slot trim issued later would hit new data.
        let end = start + self.layout.zone_bytes;
        let outside = |o: &u64| *o < start || *o >= end;
        self.trims.unlogged.retain(outside);
        for (_, v) in self.trims.waiting.iter_mut() {
            v.retain(outside);
        }
        self.free.push_back(z);
        self.counters.zones_reclaimed += 1;
        Ok(())
    }

    /// Trims the dead slots whose emptying record is durable (the new copies of their pages are
    /// then what recovery finds), runs of adjacent slots with one command.
    pub(crate) fn issue_slot_trims(&mut self, log: &dyn LogSink) -> Result<()> {
        let durable = log.durable_lsn();
        let mut slots = Vec::new();
        while let Some((lsn, _)) = self.trims.waiting.front() {
            if *lsn >= durable {
                break;
            }
            slots.extend(self.trims.waiting.pop_front().expect("front").1);
        }
        if slots.is_empty() {
            return Ok(());
        }
        slots.sort_unstable();
        let slot = SLOT_BYTES as u64;
        let mut i = 0;
        while i < slots.len() {
            let start = slots[i];
            let mut end = start + slot;
            i += 1;
            while i < slots.len() && slots[i] == end {
                end += slot;
                i += 1;
            }
            self.backend.dev_mut().trim(start, end - start)?;
        }
        self.counters.slots_trimmed += slots.len() as u64;
        Ok(())
    }
}
