//! Invariants of the area, checked in debug builds (after GC rounds and recovery) and by
//! tests: the zones agree with the page map.

use super::space::ZoneState;
use super::{slot_range, LogArea};

impl LogArea {
    /// The page map (tests compare maps).
    #[cfg(test)]
    pub(crate) fn map(&self) -> &[super::space::Loc] {
        &self.map
    }

    /// The zones (tests compare zone metadata).
    #[cfg(test)]
    pub(crate) fn zones(&self) -> &[super::space::Zone] {
        &self.zones
    }

    /// The zone holding page `pid`'s current copy (tests).
    #[cfg(test)]
    pub(crate) fn zone_of_page(&self, pid: crate::page::PageId) -> Option<u32> {
        let l = self.map.get(pid as usize)?;
        l.is_some().then(|| self.layout.zone_of(l.off))
    }

    /// A zone to tamper with (tests of the checks).
    #[cfg(test)]
    pub(crate) fn zone_mut(&mut self, z: u32) -> &mut super::space::Zone {
        &mut self.zones[z as usize]
    }

    /// Checks that the zones agree with the page map: valid bytes and pages, live copies per
    /// slot, copies inside the written part of non-free zones, free zones empty, dead zones full
    /// and without valid pages. O(pages + zones); for debug builds and tests.
    pub(crate) fn check_consistency(&self) -> std::result::Result<(), String> {
        let zb = self.layout.zone_bytes;
        let mut bytes = vec![0u64; self.zones.len()];
        let mut pages = vec![0u32; self.zones.len()];
        let mut slots: Vec<Vec<u16>> = self
            .zones
            .iter()
            .map(|z| vec![0; z.slot_live.len()])
            .collect();
        let mirrored = self.shared.usable();
        for (pid, l) in self.map.iter().enumerate() {
            let at = l.is_some().then_some((l.off, l.len));
            if mirrored && self.shared.get(pid as u64).0 != at {
                return Err(format!(
                    "page {pid}: the shared map says {:?}, the map {l:?}",
                    self.shared.get(pid as u64)
                ));
            }
            if !l.is_some() {
                continue;
            }
            if l.off < self.layout.data_start || l.off + l.len as u64 > self.layout.data_end() {
                return Err(format!("page {pid} is mapped outside the zones: {l:?}"));
            }
            let z = self.layout.zone_of(l.off) as usize;
            let in_zone = l.off - self.layout.zone_start(z as u32);
            let zone = &self.zones[z];
            if zone.state == ZoneState::Empty || in_zone + l.len as u64 > zone.wp {
                return Err(format!(
                    "page {pid} is mapped to {l:?}, past the write pointer {} of zone {z} ({:?})",
                    zone.wp, zone.state
                ));
            }
            bytes[z] += l.len as u64;
            pages[z] += 1;
            if !slots[z].is_empty() {
                for s in slot_range(in_zone, l.len) {
                    slots[z][s] += 1;
                }
            }
        }
        for (z, zone) in self.zones.iter().enumerate() {
            if zone.valid_bytes != bytes[z] || zone.valid_pages != pages[z] {
                return Err(format!(
                    "zone {z} counts {} valid bytes in {} pages, the map {} in {}",
                    zone.valid_bytes, zone.valid_pages, bytes[z], pages[z]
                ));
            }
            if zone.slot_live != slots[z] {
                return Err(format!(
                    "zone {z}: live copies per slot disagree with the map"
                ));
            }
            if zone.wp > zb {
                return Err(format!("zone {z}: write pointer {} past its end", zone.wp));
            }
        }
        for &z in &self.free {
            let zone = &self.zones[z as usize];
            if zone.state != ZoneState::Empty || zone.wp != 0 {
                return Err(format!("free zone {z} is {:?} at {}", zone.state, zone.wp));
            }
        }
        for &z in &self.dead {
            let zone = &self.zones[z as usize];
            if zone.state != ZoneState::Full || zone.valid_pages != 0 {
                return Err(format!(
                    "dead zone {z} is {:?} with {} valid pages",
                    zone.state, zone.valid_pages
                ));
            }
        }
        Ok(())
    }
}
