//! The backend of a zoned (ZNS) device (paper 002 section 5.1): DB zones are device zones,
//! written with zone append and reset after GC; a zone closed before it is full is finished
//! (which releases its open-zone resource). The header and each snapshot slot occupy whole
//! zones; a snapshot resets its slot's zones and is appended whole. Nothing is trimmed: the
//! device keeps no stale copies (SSD WAF = 1).

use super::{ZoneBackend, ZoneRequest, ZoneRole};
use crate::device::{BlockDevice, DeviceError};
use crate::error::{Error, Result};
use crate::writepath::oop::area::nowa::Groups;
use crate::writepath::oop::layout::{MetaLayout, OopLayout, ZoneGeometry};

/// The open-zone limit when the device does not say.
const DEFAULT_MAX_OPEN_ZONES: u32 = 3;
/// Zone appends of a snapshot are at most this long.
const SNAPSHOT_APPEND_BYTES: usize = 1 << 20;

pub(crate) struct Zoned {
    dev: Box<dyn BlockDevice>,
    /// The device's zone size (= the DB zone size).
    zone_bytes: u64,
    max_open_zones: Option<u32>,
}

impl Zoned {
    pub(crate) fn new(
        dev: Box<dyn BlockDevice>,
        zone_bytes: u64,
        max_open_zones: Option<u32>,
    ) -> Zoned {
        Zoned {
            dev,
            zone_bytes,
            max_open_zones,
        }
    }

    /// Device zone number of a byte offset.
    fn device_zone(&self, off: u64) -> u32 {
        (off / self.zone_bytes) as u32
    }

    /// A zone append that must land at `at`.
    fn append_at(&mut self, at: u64, data: &[u8]) -> Result<()> {
        let zone = self.device_zone(at);
        let got = self.dev.zone_append(zone, data)?;
        if got != at {
            return Err(Error::Device(DeviceError::Io(format!(
                "zone append to zone {zone} landed at byte {got}, expected {at}: the zone's \
                 write pointer is not where the database left it"
            ))));
        }
        Ok(())
    }
}

impl ZoneBackend for Zoned {
    fn dev(&self) -> &dyn BlockDevice {
        self.dev.as_ref()
    }
    fn dev_mut(&mut self) -> &mut dyn BlockDevice {
        self.dev.as_mut()
    }
    fn zoned(&self) -> bool {
        true
    }
    /// One open zone is kept for metadata (snapshot slots), one for GC copies.
    fn zone_geometry(&self, req: &ZoneRequest, _page_size: u32) -> ZoneGeometry {
        let limit = self
            .max_open_zones
            .unwrap_or(DEFAULT_MAX_OPEN_ZONES)
            .saturating_sub(2)
            .max(1);
        ZoneGeometry {
            zone_bytes: self.zone_bytes,
            max_open: req.open_zones.min(limit),
            gc_unit: self.zone_bytes,
        }
    }
    /// The header takes zone 0, each snapshot slot whole zones after it.
    fn metadata_layout(&self, snap_need_bytes: u64, zone_bytes: u64) -> MetaLayout {
        let k = snap_need_bytes.div_ceil(zone_bytes);
        let sb = k * zone_bytes;
        MetaLayout {
            snap_bytes: sb,
            snap_start: [zone_bytes, zone_bytes + sb],
            data_start: zone_bytes + 2 * sb,
        }
    }
    fn format(&mut self, _layout: &OopLayout, _stream: &mut Groups) -> Result<()> {
        let zones = (self.dev.capacity_bytes() / self.zone_bytes) as u32;
        for z in 0..zones {
            self.dev.zone_reset(z)?;
        }
        Ok(())
    }
    fn write_header(&mut self, hdr: &[u8]) -> Result<()> {
        self.append_at(0, hdr)?;
        Ok(self.dev.zone_finish(0)?)
    }
    fn placement_for(&self, _role: ZoneRole, _in_use: &[u16]) -> u16 {
        0
    }
    fn append_run(&mut self, at: u64, image: &[u8], _piid: u16) -> Result<()> {
        self.append_at(at, image)
    }
    fn finish_zone(&mut self, start: u64, written_bytes: u64) -> Result<()> {
        if written_bytes < self.zone_bytes {
            self.dev.zone_finish(self.device_zone(start))?;
        }
        Ok(())
    }
    fn reset_zone(&mut self, start: u64, _len: u64) -> Result<()> {
        Ok(self.dev.zone_reset(self.device_zone(start))?)
    }
    fn trims_slots(&self) -> bool {
        false
    }
    /// Zones are append-only: the slot is reset and rewritten whole.
    fn write_snapshot(
        &mut self,
        start: u64,
        slot_bytes: u64,
        img: &[u8],
        _changed: &[(usize, usize)],
        written: &mut u64,
    ) -> Result<()> {
        let first = self.device_zone(start);
        let k = (slot_bytes / self.zone_bytes) as u32;
        for dz in first..first + k {
            self.dev.zone_reset(dz)?;
        }
        for (i, chunk) in img.chunks(self.zone_bytes as usize).enumerate() {
            let dz = first + i as u32;
            for part in chunk.chunks(SNAPSHOT_APPEND_BYTES) {
                self.dev.zone_append(dz, part)?;
            }
            if (chunk.len() as u64) < self.zone_bytes {
                self.dev.zone_finish(dz)?;
            }
        }
        *written += img.len() as u64;
        Ok(())
    }
    fn recovered_zone(&mut self, start: u64, live: bool) -> Result<()> {
        let dz = self.device_zone(start);
        if live {
            self.dev.zone_finish(dz)?;
        } else {
            self.dev.zone_reset(dz)?;
        }
        Ok(())
    }
    fn release_free(&mut self, _runs: &[(u64, u64)]) -> Result<()> {
        Ok(())
    }
}
