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

/// A conventional SSD (or file, or disk).
pub(crate) struct Conventional {
    dev: Box<dyn BlockDevice>,
    trim: bool,
    gc_unit_bytes: Option<u64>,
}

impl Conventional {
    pub(crate) fn new(
        dev: Box<dyn BlockDevice>,
        trim: bool,
        gc_unit_bytes: Option<u64>,
    ) -> Conventional {
        Conventional {
            dev,
            trim,
            gc_unit_bytes,
        }
    }
}

/// An FDP SSD with `handles` placement ids.
pub(crate) struct Fdp {
    dev: Box<dyn BlockDevice>,
    trim: bool,
    handles: u32,
    gc_unit_bytes: Option<u64>,
}

impl Fdp {
    pub(crate) fn new(
        dev: Box<dyn BlockDevice>,
        trim: bool,
        handles: u32,
        gc_unit_bytes: Option<u64>,
    ) -> Fdp {
        Fdp {
            dev,
            trim,
            handles,
            gc_unit_bytes,
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

/// Writes the changed runs of a snapshot image in place with `write`.
fn flat_write_snapshot(
    dev: &mut dyn BlockDevice,
    start: u64,
    img: &[u8],
    changed: &[(usize, usize)],
    written: &mut u64,
    mut write: impl FnMut(&mut dyn BlockDevice, u64, &[u8]) -> Result<(), DeviceError>,
) -> Result<()> {
    for &(off, len) in changed {
        write(dev, start + off as u64, &img[off..off + len])?;
        *written += len as u64;
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

impl ZoneBackend for Conventional {
    fn dev(&self) -> &dyn BlockDevice {
        self.dev.as_ref()
    }
    fn dev_mut(&mut self) -> &mut dyn BlockDevice {
        self.dev.as_mut()
    }
    fn zoned(&self) -> bool {
        false
    }
    /// Aligned (paper 002 section 5.3): zone size x open zones = the device GC unit, so each
    /// active group fills whole device GC units. Otherwise the configured size, or half the
    /// aligned one.
    fn zone_geometry(&self, req: &ZoneRequest, page_size: u32) -> ZoneGeometry {
        let unit = self.gc_unit_bytes.unwrap_or(DEFAULT_GC_UNIT_BYTES);
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
    fn metadata_layout(&self, snap_need_bytes: u64, _zone_bytes: u64) -> MetaLayout {
        flat_metadata_layout(snap_need_bytes)
    }
    fn format(&mut self, layout: &OopLayout, stream: &mut Groups) -> Result<()> {
        flat_format(self.dev.as_mut(), self.trim, layout, stream)
    }
    fn write_header(&mut self, hdr: &[u8]) -> Result<()> {
        Ok(self.dev.write_at(0, hdr)?)
    }
    fn placement_for(&self, _role: ZoneRole, _in_use: &[u16]) -> u16 {
        0
    }
    fn append_run(&mut self, at: u64, image: &[u8], _piid: u16) -> Result<()> {
        Ok(self.dev.write_at(at, image)?)
    }
    fn finish_zone(&mut self, _start: u64, _written_bytes: u64) -> Result<()> {
        Ok(())
    }
    fn reset_zone(&mut self, start: u64, len: u64) -> Result<()> {
        trim_runs(self.dev.as_mut(), self.trim, &[(start, len)])
    }
    fn trims_slots(&self) -> bool {
        self.trim
    }
    fn write_snapshot(
        &mut self,
        start: u64,
        _slot_bytes: u64,
        img: &[u8],
        changed: &[(usize, usize)],
        written: &mut u64,
    ) -> Result<()> {
        flat_write_snapshot(
            self.dev.as_mut(),
            start,
            img,
            changed,
            written,
            |d, at, b| d.write_at(at, b),
        )
    }
    fn recovered_zone(&mut self, _start: u64, _live: bool) -> Result<()> {
        Ok(())
    }
    fn release_free(&mut self, runs: &[(u64, u64)]) -> Result<()> {
        trim_runs(self.dev.as_mut(), self.trim, runs)
    }
}

impl ZoneBackend for Fdp {
    fn dev(&self) -> &dyn BlockDevice {
        self.dev.as_ref()
    }
    fn dev_mut(&mut self) -> &mut dyn BlockDevice {
        self.dev.as_mut()
    }
    fn zoned(&self) -> bool {
        false
    }
    /// Zone = reclaim unit (section 5.3: FDP tells the GC unit), one placement id per open zone
    /// with two ids kept (GC copies, snapshots).
    fn zone_geometry(&self, req: &ZoneRequest, page_size: u32) -> ZoneGeometry {
        let ru = self.gc_unit_bytes.unwrap_or(DEFAULT_GC_UNIT_BYTES);
        let zone_bytes = if req.zone_bytes > 0 {
            req.zone_bytes
        } else {
            ru
        };
        ZoneGeometry {
            zone_bytes: round_zone_bytes(zone_bytes, page_size),
            max_open: req.open_zones.min(self.handles.saturating_sub(2).max(1)),
            gc_unit: ru,
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
        match role {
            ZoneRole::User => (0..).find(|p| !in_use.contains(p)).unwrap_or(0),
            ZoneRole::Relocation => self.handles.saturating_sub(2) as u16,
        }
    }
    fn append_run(&mut self, at: u64, image: &[u8], piid: u16) -> Result<()> {
        Ok(self.dev.write_placed(at, image, piid)?)
    }
    fn finish_zone(&mut self, _start: u64, _written_bytes: u64) -> Result<()> {
        Ok(())
    }
    fn reset_zone(&mut self, start: u64, len: u64) -> Result<()> {
        trim_runs(self.dev.as_mut(), self.trim, &[(start, len)])
    }
    fn trims_slots(&self) -> bool {
        self.trim
    }
    fn write_snapshot(
        &mut self,
        start: u64,
        _slot_bytes: u64,
        img: &[u8],
        changed: &[(usize, usize)],
        written: &mut u64,
    ) -> Result<()> {
        let piid = (self.handles - 1) as u16;
        flat_write_snapshot(
            self.dev.as_mut(),
            start,
            img,
            changed,
            written,
            |d, at, b| d.write_placed(at, b, piid),
        )
    }
    fn recovered_zone(&mut self, _start: u64, _live: bool) -> Result<()> {
        Ok(())
    }
    fn release_free(&mut self, runs: &[(u64, u64)]) -> Result<()> {
        trim_runs(self.dev.as_mut(), self.trim, runs)
    }
}
