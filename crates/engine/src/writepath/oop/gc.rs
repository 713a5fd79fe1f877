//! DB garbage collection (paper 002 section 4) and NoWA compensation writes (section 5.4):
//! victim choice, collection (copy the live pages elsewhere, still compressed; log and force
//! their locations; reclaim the victims), and when each runs (in the foreground before a
//! batch, in the background from `maintain`).
//!
//! GC reads come from the device, not through the buffer pool (a deviation from section 6.2: a
//! cached copy may be newer than the stored one, so it could be used only for clean frames).

use super::area::nowa::Owner;
use super::area::space::{StoredPage, ZoneState, MAX_EDT};
use super::placement::Kind;
use super::OutOfPlace;
use crate::error::Result;
use crate::writepath::pack::SLOT_BYTES;
use crate::writepath::LogSink;
use std::collections::VecDeque;

/// Foreground GC rounds before a batch gives up (each logs a location record, and rounds that
/// only move data around when space is tight must not fill the log).
const MAX_FOREGROUND_ROUNDS: u32 = 64;
/// Compensation rounds at most per foreground call.
const MAX_COMPENSATION_ROUNDS: u32 = 8;
/// Live bytes a background GC step moves at most with other threads beside it
/// ([`OutOfPlace::maintain_space_beside`]): on ext4 with `O_DIRECT` a whole round held the
/// write path 40-540 ms (docs/results.md, twenty-third run), a slice about a tenth of that.
pub(super) const SLICE_LIVE_BYTES: u64 = 1 << 20;

impl OutOfPlace {
    /// Free zones foreground GC keeps: the reserve and what one batch fills (open zones are
    /// already taken out of the free pool).
    pub(super) fn need_free(&self) -> usize {
        let layout = self.area.layout();
        let batch = self.cfg.batch_pages as u64 * layout.page_size as u64;
        self.cfg.gc_reserve_zones as usize + batch.div_ceil(layout.zone_bytes) as usize
    }

    /// Live device GC units NoWA allows: fewer than the logical capacity holds.
    pub(super) fn nowa_limit(&self) -> usize {
        ((self.area.device_capacity_bytes() / self.area.layout().gc_unit) as usize)
            .saturating_sub(2)
    }

    /// Copies the valid pages of `victims` elsewhere, logs and forces their locations, and
    /// reclaims the victims.
    fn collect(&mut self, victims: &[u32], kind: Kind, log: &mut dyn LogSink) -> Result<()> {
        let mut items = Vec::new();
        for &z in victims {
            items.extend(self.area.live_copies(z)?);
        }
        self.collect_copies(victims, items, kind, log)
    }

    /// Copies `items` (live pages of `victims`: all of them, or a slice) elsewhere, logs and
    /// forces their locations, and reclaims the victims left without a live page.
    fn collect_copies(
        &mut self,
        victims: &[u32],
        mut items: Vec<StoredPage>,
        kind: Kind,
        log: &mut dyn LogSink,
    ) -> Result<()> {
        let now = log.next_lsn();
        for copy in &mut items {
            // A page that outlived its estimated deathtime was mispredicted: it is cold, and
            // GC places it with the coldest pages.
            if copy.edt == 0 || copy.edt <= now {
                copy.edt = MAX_EDT;
            }
        }
        // Victims must not receive the copies.
        for &z in victims {
            if self.area.zone(z).state == ZoneState::Open {
                self.placement.close_zone(&mut self.area, z)?;
            }
        }
        let mut items: VecDeque<StoredPage> = items.into();
        let r = self
            .placement
            .place(&mut self.area, &mut items, kind, log.next_lsn(), None);
        if let Err(e) = r {
            // The copies made so far are logged; the victims keep the rest and stay.
            self.area.commit_locations(log)?;
            return Err(e);
        }
        self.area.force_and_reclaim(victims, log)
    }

    /// One round of DB GC: greedy victims (fewest valid bytes) until their invalid bytes free
    /// one zone. Returns false if nothing could be gained.
    pub(super) fn gc_round(&mut self, log: &mut dyn LogSink) -> Result<bool> {
        let mut full: Vec<(u64, u32)> = self
            .area
            .full_zones()
            .map(|(z, zone)| (zone.valid_bytes, z))
            .collect();
        full.sort_unstable();
        let zb = self.area.layout().zone_bytes;
        let mut victims = Vec::new();
        let mut invalid = 0u64;
        let mut valid = 0u64;
        for (v, z) in full {
            if invalid >= zb {
                break;
            }
            if v >= zb - SLOT_BYTES as u64 {
                break;
            }
            victims.push(z);
            invalid += zb - v;
            valid += v;
        }
        // The copies must fit the free zones without using the last one: when space is that
        // tight, fewer victims (the emptiest first) still free zones.
        let free_bytes = (self.area.free_zones().saturating_sub(1)) as u64 * zb
            + self.placement.open_room(&self.area);
        while valid > free_bytes && victims.len() > 1 {
            let z = victims.pop().expect("victim");
            let v = self.area.zone(z).valid_bytes;
            valid -= v;
            invalid -= zb - v;
        }
        if victims.is_empty() || invalid < SLOT_BYTES as u64 || valid > free_bytes {
            return Ok(false);
        }
        self.area.counters_mut().gc_rounds += 1;
        self.collect(&victims, Kind::Gc, log)?;
        self.debug_check_invariants();
        Ok(true)
    }

    /// A slice of a GC round, with other threads beside it: up to `slice_bytes` (by default
    /// [`SLICE_LIVE_BYTES`]) of the
    /// live pages of the zone a round would take first (the full zone with the fewest valid
    /// bytes) copied elsewhere, their locations logged and forced, and the zone reclaimed once
    /// it has no live page left (the next slices take the same zone while it stays the
    /// emptiest). Returns false if nothing could be gained.
    fn gc_slice(&mut self, log: &mut dyn LogSink) -> Result<bool> {
        let zb = self.area.layout().zone_bytes;
        let Some((valid, z)) = self
            .area
            .full_zones()
            .map(|(z, zone)| (zone.valid_bytes, z))
            .min()
        else {
            return Ok(false);
        };
        let free_bytes = (self.area.free_zones().saturating_sub(1)) as u64 * zb
            + self.placement.open_room(&self.area);
        if valid >= zb - SLOT_BYTES as u64 || valid.min(self.slice_bytes) > free_bytes {
            return Ok(false);
        }
        let items = self.area.live_copies_upto(z, self.slice_bytes)?;
        self.area.counters_mut().gc_rounds += 1;
        self.collect_copies(&[z], items, Kind::Gc, log)?;
        self.debug_check_invariants();
        Ok(true)
    }

    /// NoWA: while more device GC units hold live data than the limit, relocate the live zones
    /// of the cheapest complete unit (compensation writes).
    pub(super) fn compensate(&mut self, log: &mut dyn LogSink) -> Result<bool> {
        if !self.cfg.nowa || self.area.stream().live() <= self.nowa_limit() {
            return Ok(false);
        }
        let mut best: Option<(u64, Vec<u32>)> = None;
        for (_, owners) in self.area.stream().complete_live() {
            let mut cost = 0u64;
            let mut zones = Vec::new();
            let mut ok = true;
            for o in owners {
                match *o {
                    Owner::Zone(z) if self.area.zone(z).state == ZoneState::Full => {
                        cost += self.area.zone(z).valid_bytes;
                        zones.push(z);
                    }
                    _ => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok && best.as_ref().is_none_or(|(c, _)| cost < *c) {
                best = Some((cost, zones));
            }
        }
        let Some((_, zones)) = best else {
            return Ok(false);
        };
        self.area.counters_mut().compensation_rounds += 1;
        self.collect(&zones, Kind::Compensation, log)?;
        self.debug_check_invariants();
        Ok(true)
    }

    /// Foreground: enough free zones for the next batch and the NoWA limit respected.
    pub(super) fn ensure_free(&mut self, log: &mut dyn LogSink) -> Result<()> {
        if self.area.free_zones() < self.need_free() {
            self.area.reclaim_dead(log)?;
        }
        let mut rounds = 0;
        while self.area.free_zones() < self.need_free() {
            rounds += 1;
            if !self.gc_round(log)? || rounds > MAX_FOREGROUND_ROUNDS {
                if self.area.free_zones() == 0 && self.placement.open_zones().is_empty() {
                    return Err(self.placement.out_of_space(&self.area));
                }
                break;
            }
        }
        let mut guard = 0;
        while guard < MAX_COMPENSATION_ROUNDS && self.compensate(log)? {
            guard += 1;
        }
        Ok(())
    }

    /// Background: reclaim dead zones and run a GC round when free zones fall below the
    /// background target, compensate, and trim dead slots whose records are durable. Returns
    /// true if it freed or moved anything.
    pub(super) fn maintain_space(&mut self, log: &mut dyn LogSink) -> Result<bool> {
        let target = self.need_free() + self.cfg.gc_background_zones as usize;
        let mut did = false;
        if self.area.free_zones() < target {
            let r = self.area.reclaim_dead(log);
            did |= self.note(r)? > 0;
        }
        if self.area.free_zones() < target {
            let r = self.gc_round(log);
            did |= self.note(r)?;
        }
        let r = self.compensate(log);
        did |= self.note(r)?;
        let r = self.area.issue_slot_trims(log);
        self.note(r)?;
        Ok(did)
    }

    /// [`OutOfPlace::maintain_space`] with other threads beside it: dead zones reclaimed one a
    /// step, garbage collection a slice at a time ([`OutOfPlace::gc_slice`]); compensation
    /// and slot trims once neither is due.
    /// Returns whether to step again at once (free zones still below the background target
    /// after a slice that moved something).
    pub(super) fn maintain_space_beside(&mut self, log: &mut dyn LogSink) -> Result<bool> {
        let target = self.need_free() + self.cfg.gc_background_zones as usize;
        if self.area.free_zones() < target {
            // One dead zone a step (its trim may stall the device); the next step at once.
            let r = self.area.reclaim_dead_upto(log, 1);
            if self.note(r)? > 0 {
                return Ok(self.area.free_zones() < target);
            }
        }
        if self.area.free_zones() < target {
            let r = self.gc_slice(log);
            if self.note(r)? {
                return Ok(self.area.free_zones() < target);
            }
        }
        let r = self.compensate(log);
        self.note(r)?;
        let r = self.area.issue_slot_trims(log);
        self.note(r)?;
        Ok(false)
    }
}
