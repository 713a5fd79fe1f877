//! The data device as the log-structured area sees it: zones of bytes that are appended to,
//! closed early, and emptied. What differs between device kinds is behind [`ZoneBackend`], so
//! the area and the policies above it never ask which kind of device they run on:
//!
//! | | conventional | FDP | ZNS |
//! |---|---|---|---|
//! | zone size | GC unit / open zones (aligned), or configured | reclaim unit, or configured | device zone |
//! | append | write at the write pointer | write with the zone's placement id | zone append (checked) |
//! | close early | nothing | nothing | zone finish |
//! | empty a zone | trim | trim | zone reset |
//! | snapshot slots | 4 KiB aligned, rewritten block by block | the same, last placement id | whole zones, rewritten whole |
//! | dead 4 KiB slots | trimmed | trimmed | no (zones are reset whole) |
//!
//! The backend owns the device; the area reads through [`ZoneBackend::dev_mut`] (reads are the
//! same everywhere).

mod flat;
mod zoned;

use super::nowa::Groups;
use crate::device::BlockDevice;
use crate::error::{Error, Result};
use crate::writepath::oop::layout::{MetaLayout, OopLayout, ZoneGeometry};

pub(crate) use flat::Flat;
pub(crate) use zoned::Zoned;

/// What the caller asks for; the backend fits it to the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ZoneRequest {
    /// Zones open at once.
    pub open_zones: u32,
    /// Zone size = device GC unit / open zones (conventional devices).
    pub aligned: bool,
    /// Zone size when not aligned (0: the backend's default).
    pub zone_bytes: u64,
}

/// Who writes into a zone, for placement hints: user writes, or copies of live pages (GC and
/// compensation writes), which are kept apart from user writes inside the device too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ZoneRole {
    User,
    Relocation,
}

/// Zone commands of one kind of device. Offsets are byte offsets on the device; `start` is the
/// first byte of a DB zone.
pub(crate) trait ZoneBackend: Send + Sync {
    fn dev(&self) -> &dyn BlockDevice;
    fn dev_mut(&mut self) -> &mut dyn BlockDevice;
    /// DB zones are device zones (recorded in the header).
    fn zoned(&self) -> bool;
    /// Zone size, open zones and the device GC unit for this device.
    fn zone_geometry(&self, req: &ZoneRequest, page_size: u32) -> ZoneGeometry;
    /// Where the two snapshot slots of `snap_need_bytes` each and the first zone go.
    fn metadata_layout(&self, snap_need_bytes: u64, zone_bytes: u64) -> MetaLayout;
    /// Erases what an earlier database left (its header, snapshots and zone contents); the
    /// bytes written in place are recorded in the NoWA model `stream`.
    fn format(&mut self, layout: &OopLayout, stream: &mut Groups) -> Result<()>;
    /// Writes the header block at offset 0.
    fn write_header(&mut self, hdr: &[u8]) -> Result<()>;
    /// The placement id of a zone opened for `role`, given those of the open user zones.
    fn placement_for(&self, role: ZoneRole, in_use: &[u16]) -> u16;
    /// Writes `image` at `at`, the write pointer of its zone, with placement id `piid`. A zoned
    /// device that puts it elsewhere is an `Error::Device` (the device's state is not what the
    /// database knows: the write path must stop).
    fn append_run(&mut self, at: u64, image: &[u8], piid: u16) -> Result<()>;
    /// The zone at `start` takes no more appends; `written_bytes` of it are written.
    fn finish_zone(&mut self, start: u64, written_bytes: u64) -> Result<()>;
    /// The zone at `start` (`len` bytes) holds nothing live any more: trim or reset it.
    fn reset_zone(&mut self, start: u64, len: u64) -> Result<()>;
    /// Whether dead 4 KiB slots inside a zone can be trimmed one by one.
    fn trims_slots(&self) -> bool;
    /// Writes snapshot image `img` into the slot at `start` (`slot_bytes` long): at least the
    /// `(offset, len)` runs of `img` given in `changed`. Adds the bytes written to `written`
    /// (also when it fails part-way).
    fn write_snapshot(
        &mut self,
        start: u64,
        slot_bytes: u64,
        img: &[u8],
        changed: &[(usize, usize)],
        written: &mut u64,
    ) -> Result<()>;
    /// Recovery: the zone at `start` is rebuilt as full (`live`) or free.
    fn recovered_zone(&mut self, start: u64, live: bool) -> Result<()>;
    /// Recovery: these `(start, len)` runs of free zones hold only garbage.
    fn release_free(&mut self, runs: &[(u64, u64)]) -> Result<()>;
}

/// The backend for a device being formatted: ZNS if it has zones, FDP if it has at least two
/// placement ids, conventional otherwise.
pub(crate) fn detect(dev: Box<dyn BlockDevice>) -> Box<dyn ZoneBackend> {
    let caps = dev.capabilities();
    match caps.zone_bytes {
        Some(zone_bytes) => Box::new(Zoned::new(dev, zone_bytes, caps.max_open_zones)),
        None if caps.placement_ids >= 2 => Box::new(Flat::fdp(
            dev,
            caps.trim,
            caps.placement_ids,
            caps.gc_unit_bytes,
        )),
        None => Box::new(Flat::conventional(dev, caps.trim, caps.gc_unit_bytes)),
    }
}

/// The backend for a device formatted with `layout`: the zones it was formatted for must still
/// be the device's.
pub(crate) fn for_layout(
    dev: Box<dyn BlockDevice>,
    layout: &OopLayout,
) -> Result<Box<dyn ZoneBackend>> {
    let caps = dev.capabilities();
    if layout.zoned {
        if caps.zone_bytes != Some(layout.zone_bytes) {
            return Err(Error::NotADatabase(
                "the database was formatted for a zoned device with other zones".into(),
            ));
        }
        Ok(Box::new(Zoned::new(
            dev,
            layout.zone_bytes,
            caps.max_open_zones,
        )))
    } else if caps.placement_ids >= 2 {
        Ok(Box::new(Flat::fdp(
            dev,
            caps.trim,
            caps.placement_ids,
            caps.gc_unit_bytes,
        )))
    } else {
        Ok(Box::new(Flat::conventional(
            dev,
            caps.trim,
            caps.gc_unit_bytes,
        )))
    }
}
