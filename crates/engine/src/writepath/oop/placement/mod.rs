//! Placement: which zone a page goes to. The open user zones (their order matters: random
//! placement picks by index), the GC zone, opening zones as a group (NoWA), the choice of a
//! zone by estimated deathtime (GDT) or at random; EDT estimation (`edt.rs`); cutting a batch
//! into runs, one per zone, and packing each (`runs.rs`).
//!
//! The zones themselves are the area's; placement only decides which of them to open, append
//! to and close.

mod edt;
mod runs;

pub(super) use self::edt::EdtEstimator;

use super::area::backend::ZoneRole;
use super::area::LogArea;
use super::OopConfig;
use crate::error::{Error, Result};
use crate::page::Lsn;
use rand::{RngCore, SeedableRng};
use std::collections::HashMap;

/// Why pages are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    User,
    Gc,
    Compensation,
}

/// Tentative assignments of a batch: zone -> (sum, count) of the EDTs of pages assigned to it but
/// not written yet.
type Tentative = HashMap<u32, (u128, u64)>;

/// The placement policy's state.
pub(super) struct Placement {
    gdt: bool,
    nowa: bool,
    /// Open user zones, in the order they were opened.
    open: Vec<u32>,
    /// The zone GC and compensation copies go to: never a zone user writes go to, so pages that
    /// survived GC (cold) do not keep zones of hot pages alive.
    gc_zone: Option<u32>,
    /// NoWA: a new group of zones is being opened.
    opening_group: bool,
    /// Random placement (without GDT).
    rng: rand_pcg::Pcg64,
    pub(super) edt: EdtEstimator,
}

impl Placement {
    pub(super) fn new(cfg: &OopConfig) -> Placement {
        Placement {
            gdt: cfg.gdt,
            nowa: cfg.nowa,
            open: Vec::new(),
            gc_zone: None,
            opening_group: false,
            rng: rand_pcg::Pcg64::seed_from_u64(cfg.seed),
            edt: EdtEstimator::default(),
        }
    }

    /// Open user zones.
    pub(super) fn open_zones(&self) -> &[u32] {
        &self.open
    }

    /// No zone is open (recovery: every zone comes back full or free).
    pub(super) fn reset(&mut self) {
        self.open.clear();
        self.gc_zone = None;
    }

    /// Bytes the open zones (user and GC) can still take.
    pub(super) fn open_room(&self, area: &LogArea) -> u64 {
        self.open.iter().map(|&z| area.zone_room(z)).sum::<u64>()
            + self.gc_zone.map_or(0, |z| area.zone_room(z))
    }

    pub(super) fn out_of_space(&self, area: &LogArea) -> Error {
        area.full_error(self.open.len())
    }

    /// Opens a free zone for user writes (None if there is none or the open limit is reached).
    fn open_zone(&mut self, area: &mut LogArea) -> Option<u32> {
        if self.open.len() >= area.layout().max_open as usize {
            return None;
        }
        let used: Vec<u16> = self.open.iter().map(|&o| area.zone(o).piid).collect();
        let piid = area.backend().placement_for(ZoneRole::User, &used);
        let z = area.open_zone(piid)?;
        self.open.push(z);
        Some(z)
    }

    /// Closes an open zone (it takes no more appends).
    pub(super) fn close_zone(&mut self, area: &mut LogArea, z: u32) -> Result<()> {
        self.open.retain(|&o| o != z);
        if self.gc_zone == Some(z) {
            self.gc_zone = None;
        }
        area.close_zone(z)
    }

    /// May a new zone open now? NoWA opens zones only as a group, when every open one is full.
    fn may_open(&self, area: &LogArea) -> bool {
        if area.free_zones() == 0 || self.open.len() >= area.layout().max_open as usize {
            return false;
        }
        !self.nowa || self.open.is_empty() || self.opening_group
    }

    /// Closes the open zones that cannot take `min_room` more bytes; with NoWA, opens a new
    /// active group (as many zones as may be open, together) when none is open.
    fn prepare_open(&mut self, area: &mut LogArea, min_room: u64) -> Result<()> {
        let closing: Vec<u32> = self
            .open
            .iter()
            .copied()
            .filter(|&z| area.zone_room(z) < min_room)
            .collect();
        for z in closing {
            self.close_zone(area, z)?;
        }
        if self.nowa && self.open.is_empty() {
            self.opening_group = true;
            let max_open = area.layout().max_open as usize;
            while self.open.len() < max_open && self.open_zone(area).is_some() {}
            self.opening_group = false;
        }
        Ok(())
    }

    /// GDT: the open zone whose average EDT (counting `tent`, pages assigned but not written
    /// yet) is closest to `e`, or a fresh zone when none is within half the page's remaining
    /// lifetime (`allow_fresh`; GC copies take the closest, so a GC round frees zones instead
    /// of spreading its copies over fresh ones).
    fn closest_by_edt(
        &mut self,
        area: &mut LogArea,
        e: u64,
        now: Lsn,
        tent: &Tentative,
        allow_fresh: bool,
    ) -> Result<u32> {
        let horizon = e.saturating_sub(now).max(1);
        let mut best: Option<(u64, u32)> = None;
        let mut fresh = None;
        for &z in &self.open {
            let zone = area.zone(z);
            let (ts, tn) = tent.get(&z).copied().unwrap_or((0, 0));
            let n = zone.edt_n + tn;
            if n == 0 {
                fresh = fresh.or(Some(z));
                continue;
            }
            let d = (((zone.edt_sum + ts) / n as u128) as u64).abs_diff(e);
            if best.is_none_or(|(bd, _)| d < bd) {
                best = Some((d, z));
            }
        }
        match (best, fresh) {
            (Some((d, z)), _) if d <= horizon / 2 || !allow_fresh => Ok(z),
            (_, Some(z)) => Ok(z),
            (b, None) => {
                let opened = if self.may_open(area) {
                    self.open_zone(area)
                } else {
                    None
                };
                opened
                    .or(b.map(|(_, z)| z))
                    .ok_or_else(|| self.out_of_space(area))
            }
        }
    }

    /// Picks the zone for a page of EDT `edt` (GDT) or for a whole batch (random placement).
    fn pick_zone(
        &mut self,
        area: &mut LogArea,
        edt: Option<u64>,
        now: Lsn,
        min_room: u64,
        allow_fresh: bool,
    ) -> Result<u32> {
        self.prepare_open(area, min_room)?;
        if let Some(e) = edt {
            return self.closest_by_edt(area, e, now, &HashMap::new(), allow_fresh);
        }
        let max_open = area.layout().max_open as u64;
        let slot = (self.rng.next_u64() % max_open) as usize;
        if slot < self.open.len() {
            return Ok(self.open[slot]);
        }
        if self.may_open(area) {
            if let Some(z) = self.open_zone(area) {
                return Ok(z);
            }
        }
        let n = self.open.len();
        if n == 0 {
            return Err(self.out_of_space(area));
        }
        Ok(self.open[slot % n])
    }

    /// The GC zone, with at least `min_room` bytes of room (a new one from the free pool if
    /// needed; the open user zones if there is none left).
    fn pick_gc_zone(&mut self, area: &mut LogArea, min_room: u64) -> Result<u32> {
        if let Some(z) = self.gc_zone {
            if area.zone_room(z) >= min_room {
                return Ok(z);
            }
            self.close_zone(area, z)?;
        }
        let piid = area.backend().placement_for(ZoneRole::Relocation, &[]);
        let Some(z) = area.open_zone(piid) else {
            return self.pick_zone(area, None, 0, min_room, false);
        };
        self.gc_zone = Some(z);
        Ok(z)
    }

    /// Checks that the zones placement holds open are open in the area, once each.
    pub(super) fn check(&self, area: &LogArea) -> std::result::Result<(), String> {
        let mut seen = std::collections::HashSet::new();
        for &z in self.open.iter().chain(&self.gc_zone) {
            if !seen.insert(z) {
                return Err(format!("zone {z} is open twice"));
            }
            if area.zone(z).state != super::area::space::ZoneState::Open {
                return Err(format!(
                    "zone {z} is held open but is {:?}",
                    area.zone(z).state
                ));
            }
        }
        if self.open.len() > area.layout().max_open as usize {
            return Err(format!("{} zones open", self.open.len()));
        }
        Ok(())
    }
}
