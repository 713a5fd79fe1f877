//! Backends of devices without zones: conventional SSDs and FDP SSDs. DB zones are byte ranges
//! written sequentially; emptied zones and dead slots are trimmed (when the device trims); the
//! header and the snapshot slots are rewritten in place.
//!
//! FDP (paper 002 section 5.5) differs only in placement: each open user zone writes with its own
//! placement id (the lowest one no other open zone uses, rather than zone id modulo handles,
//! which can collide), GC copies with the second-to-last one and snapshots with the last one, so
//! the SSD never mixes data of different zones in one reclaim unit.

use super::{ZoneBackend, ZoneRequest, ZoneRole};
use crate::device::{BlockDevice, DeviceError};
use crate::error::Result;
use crate::writepath::oop::area::nowa::{Groups, Owner};
use crate::writepath::oop::layout::{round_zone_bytes, MetaLayout, OopLayout, ZoneGeometry};
use crate::writepath::pack::SLOT_BYTES;

/// The device GC unit when the device does not say.
const DEFAULT_GC_UNIT_BYTES: u64 = 1 << 20;
/// Zone 0 starts at a multiple of this, after the header and the snapshot slots.
const DATA_ALIGN_BYTES: u64 = 1 << 16;

/// A device without zones: a conventional SSD (or file, or disk), or an FDP SSD with `handles`
/// placement ids.
pub(crate) struct Flat {
    dev: Box<dyn BlockDevice>,
    trim: bool,
    gc_unit_bytes: Option<u64>,
    /// FDP: the number of placement ids (at least 2); None: a conventional device.
    handles: Option<u32>,
}

impl Flat {
    pub(crate) fn conventional(
        dev: Box<dyn BlockDevice>,
        trim: bool,
        gc_unit_bytes: Option<u64>,
    ) -> Flat {
        Flat {
            dev,
            trim,
            gc_unit_bytes,
            handles: None,
        }
    }

    pub(crate) fn fdp(
        dev: Box<dyn BlockDevice>,
        trim: bool,
        handles: u32,
        gc_unit_bytes: Option<u64>,
    ) -> Flat {
        debug_assert!(handles >= 2);
        Flat {
            dev,
            trim,
            gc_unit_bytes,
            handles: Some(handles),
        }
    }

    /// Writes `data` at `at`, with placement id `piid` on an FDP device.
    fn write(&mut self, at: u64, data: &[u8], piid: u16) -> Result<(), DeviceError> {
        match self.handles {
            Some(_) => self.dev.write_placed(at, data, piid),
            None => self.dev.write_at(at, data),
        }
    }
}

/// Snapshot slots right after the header, in whole slots; zone 0 aligned after them.
fn flat_metadata_layout(snap_need_bytes: u64) -> MetaLayout {
    let slot = SLOT_BYTES as u64;
    let sb = snap_need_bytes.div_ceil(slot) * slot;
    let ds = (slot + 2 * sb).div_ceil(DATA_ALIGN_BYTES) * DATA_ALIGN_BYTES;
    MetaLayout {
        snap_bytes: sb,
        snap_start: [slot, slot + sb],
        data_start: ds,
    }
}

/// Zeroes the header and the first block of each snapshot slot (so nothing of an earlier
/// database is loaded) and trims the zones (so the SSD keeps none of their old contents).
fn flat_format(
    dev: &mut dyn BlockDevice,
    trim: bool,
    layout: &OopLayout,
    stream: &mut Groups,
) -> Result<()> {
    let slot = SLOT_BYTES as u64;
    dev.write_at(0, &[0u8; SLOT_BYTES])?;
    stream.write(Owner::Meta(2), slot);
    for (s, &at) in layout.snap_start.iter().enumerate() {
        dev.write_at(at, &[0u8; SLOT_BYTES])?;
        stream.write(Owner::Meta(s as u8), slot);
    }
    if trim {
        dev.trim(
            layout.data_start,
            layout.zone_count as u64 * layout.zone_bytes,
        )?;
    }
    Ok(())
}

fn trim_runs(dev: &mut dyn BlockDevice, trim: bool, runs: &[(u64, u64)]) -> Result<()> {
    if trim {
        for &(start, len) in runs {
            dev.trim(start, len)?;
        }
    }
    Ok(())
}

impl ZoneBackend for Flat {
    fn dev(&self) -> &dyn BlockDevice {
        self.dev.as_ref()
    }
    fn dev_mut(&mut self) -> &mut dyn BlockDevice {
        self.dev.as_mut()
    }
    fn zoned(&self) -> bool {
        false
    }
    /// Conventional, aligned (paper 002 section 5.3): zone size x open zones = the device GC
    /// unit, so each active group fills whole device GC units; otherwise the configured size, or
    /// half the aligned one. FDP: zone = reclaim unit (FDP tells the GC unit), one placement id
    /// per open zone with two ids kept (GC copies, snapshots).
    fn zone_geometry(&self, req: &ZoneRequest, page_size: u32) -> ZoneGeometry {
        let unit = self.gc_unit_bytes.unwrap_or(DEFAULT_GC_UNIT_BYTES);
        match self.handles {
            Some(handles) => {
                let zone_bytes = if req.zone_bytes > 0 {
                    req.zone_bytes
                } else {
                    unit
                };
                ZoneGeometry {
                    zone_bytes: round_zone_bytes(zone_bytes, page_size),
                    max_open: req.open_zones.min(handles.saturating_sub(2).max(1)),
                    gc_unit: unit,
                }
            }
            None => {
                let aligned = round_zone_bytes(unit / req.open_zones as u64, page_size);
                let zone_bytes = if req.aligned {
                    aligned
                } else if req.zone_bytes > 0 {
                    req.zone_bytes
                } else {
                    round_zone_bytes(aligned / 2, page_size)
                };
                ZoneGeometry {
                    zone_bytes,
                    max_open: req.open_zones,
                    gc_unit: unit,
                }
            }
        }
    }
    fn metadata_layout(&self, snap_need_bytes: u64, _zone_bytes: u64) -> MetaLayout {
        flat_metadata_layout(snap_need_bytes)
    }
    fn format(&mut self, layout: &OopLayout, stream: &mut Groups) -> Result<()> {
        flat_format(self.dev.as_mut(), self.trim, layout, stream)
    }
    fn write_header(&mut self, hdr: &[u8]) -> Result<()> {
        Ok(self.dev.write_at(0, hdr)?)
    }
    fn placement_for(&self, role: ZoneRole, in_use: &[u16]) -> u16 {
        match (self.handles, role) {
            (None, _) => 0,
            (Some(_), ZoneRole::User) => (0..).find(|p| !in_use.contains(p)).unwrap_or(0),
            (Some(h), ZoneRole::Relocation) => h.saturating_sub(2) as u16,
        }
    }
    fn append_run(&mut self, at: u64, image: &[u8], piid: u16) -> Result<()> {
        Ok(self.write(at, image, piid)?)
    }
    fn finish_zone(&mut self, _start: u64, _written_bytes: u64) -> Result<()> {
        Ok(())
    }
    fn reset_zone(&mut self, start: u64, len: u64) -> Result<()> {
        trim_runs(self.dev.as_mut(), self.trim, &[(start, len)])
    }
    fn trims_slots(&self) -> bool {
        self.trim && self.dev.capabilities().block_trims
    }
    /// Snapshots are rewritten in place (FDP: with the last placement id).
    fn write_snapshot(
        &mut self,
        start: u64,
        _slot_bytes: u64,
        img: &[u8],
        changed: &[(usize, usize)],
        written: &mut u64,
    ) -> Result<()> {
        let piid = self.handles.map_or(0, |h| (h - 1) as u16);
        for &(off, len) in changed {
            self.write(start + off as u64, &img[off..off + len], piid)?;
            *written += len as u64;
        }
        Ok(())
    }
    fn recovered_zone(&mut self, _start: u64, _live: bool) -> Result<()> {
        Ok(())
    }
    fn release_free(&mut self, runs: &[(u64, u64)]) -> Result<()> {
        trim_runs(self.dev.as_mut(), self.trim, runs)
    }
}
