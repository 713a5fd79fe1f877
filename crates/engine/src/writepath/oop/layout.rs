//! Where things are on an out-of-place data device: the header block at offset 0 (format in
//! docs/format.md), two snapshot slots, then the zones; and the geometry of the zones (size,
//! count, open limit, the device GC unit NoWA models).
//!
//! The backend (conventional, FDP, ZNS) decides the zone size and where the snapshot slots go
//! ([`ZoneGeometry`], [`MetaLayout`]); [`OopLayout::plan`] turns them into the layout that the
//! header stores, so a reopened database never recomputes it from a device that may have changed.

use crate::error::{Error, Result};
use crate::page::{get_u32, get_u64, put_u32, put_u64};
use crate::writepath::pack::SLOT_BYTES;

const OOP_MAGIC: &[u8; 8] = b"WAFEROOP";
const OOP_VERSION: u32 = 2;
/// Offset of the header's CRC32C (of the bytes before it).
const HEADER_CRC_AT: usize = 97;
/// Where version 1 had its CRC32C (to report an old header as an unknown version).
const V1_CRC_AT: usize = 81;
/// Bytes of the header that carry data (the rest of its block is zero).
pub(super) const HEADER_BYTES: usize = HEADER_CRC_AT + 4;

// The header is one block of its own, read and written whole; every field ends before the CRC.
const _: () = assert!(HEADER_BYTES <= SLOT_BYTES);
const _: () = assert!(
    HEADER_CRC_AT == 81 + 16,
    "the CRC follows the last field (database id, u128)"
);
// Slots are the unit of alignment, packing and trims: a power of two that device blocks divide.
const _: () = assert!(SLOT_BYTES.is_power_of_two() && SLOT_BYTES >= 512);

/// Where things are on the data device (stored in its header).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OopLayout {
    pub page_size: u32,
    pub zone_bytes: u64,
    pub zone_count: u32,
    /// Byte offset of zone 0.
    pub data_start: u64,
    /// Capacity of each snapshot slot, and where they start.
    pub snap_bytes: u64,
    pub snap_start: [u64; 2],
    /// DB zones are device zones.
    pub zoned: bool,
    pub max_open: u32,
    /// The device GC unit the NoWA model uses.
    pub gc_unit: u64,
    /// Page ids the device holds (the length of the page map).
    pub pages: u64,
    /// The database's id (`identity.rs`; 0 until the header is written).
    pub id: crate::identity::DbId,
}

/// Zone size, open zones and device GC unit, as a backend chooses them for a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ZoneGeometry {
    pub zone_bytes: u64,
    pub max_open: u32,
    pub gc_unit: u64,
}

/// Where a backend puts the snapshot slots and the first zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MetaLayout {
    pub snap_bytes: u64,
    pub snap_start: [u64; 2],
    pub data_start: u64,
}

/// Rounds a zone size down to whole slots, and up to at least 4 pages.
pub(crate) fn round_zone_bytes(bytes: u64, page_size: u32) -> u64 {
    (bytes / SLOT_BYTES as u64 * SLOT_BYTES as u64).max(4 * page_size as u64)
}

/// Refuses zones too small to hold a few pages, or not made of whole slots.
pub(crate) fn check_zone_bytes(zone_bytes: u64, page_size: u32) -> Result<()> {
    if zone_bytes < 4 * page_size as u64 || !zone_bytes.is_multiple_of(SLOT_BYTES as u64) {
        return Err(Error::Config(format!(
            "zones of {zone_bytes} bytes: out-of-place writes need zones of at least 4 pages \
             ({} bytes) and a multiple of {SLOT_BYTES}",
            4 * page_size
        )));
    }
    Ok(())
}

impl OopLayout {
    /// The layout of a device of `capacity_bytes` with the backend's zones and metadata
    /// placement. `reserve_zones` more zones than the open ones must fit (GC reserves); page ids
    /// are what the zones hold uncompressed, at most `pid_upper`.
    pub(crate) fn plan(
        page_size: u32,
        capacity_bytes: u64,
        geo: ZoneGeometry,
        meta: MetaLayout,
        zoned: bool,
        reserve_zones: u32,
        pid_upper: u64,
    ) -> Result<OopLayout> {
        let zone_bytes = geo.zone_bytes;
        let zone_count = (capacity_bytes.saturating_sub(meta.data_start) / zone_bytes) as u32;
        let need = geo.max_open + reserve_zones;
        if zone_count < need {
            return Err(Error::Config(format!(
                "data device of {capacity_bytes} bytes holds {zone_count} zones of {zone_bytes} \
                 bytes; out-of-place writes need at least {need}"
            )));
        }
        // Page ids: what the zones hold uncompressed. Whether the data fits with room for GC
        // depends on compression; when it does not, writes fail with `Full`.
        let pages = (zone_count as u64 * zone_bytes / page_size as u64).min(pid_upper);
        Ok(OopLayout {
            page_size,
            zone_bytes,
            zone_count,
            data_start: meta.data_start,
            snap_bytes: meta.snap_bytes,
            snap_start: meta.snap_start,
            zoned,
            max_open: geo.max_open,
            gc_unit: geo.gc_unit,
            pages,
            id: 0,
        })
    }

    /// The header block (little-endian, CRC32C at [`HEADER_CRC_AT`]).
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; SLOT_BYTES];
        b[..8].copy_from_slice(OOP_MAGIC);
        put_u32(&mut b, 8, OOP_VERSION);
        put_u32(&mut b, 12, self.page_size);
        put_u64(&mut b, 16, self.zone_bytes);
        put_u32(&mut b, 24, self.zone_count);
        put_u64(&mut b, 28, self.data_start);
        put_u64(&mut b, 36, self.snap_bytes);
        put_u64(&mut b, 44, self.snap_start[0]);
        put_u64(&mut b, 52, self.snap_start[1]);
        b[60] = self.zoned as u8;
        put_u32(&mut b, 61, self.max_open);
        put_u64(&mut b, 65, self.gc_unit);
        put_u64(&mut b, 73, self.pages);
        b[81..97].copy_from_slice(&self.id.to_le_bytes());
        let crc = crc32c::crc32c(&b[..HEADER_CRC_AT]);
        put_u32(&mut b, HEADER_CRC_AT, crc);
        b
    }

    /// Reads a header block; anything else is `NotADatabase`.
    pub(super) fn decode(b: &[u8]) -> Result<OopLayout> {
        if b.len() < HEADER_BYTES || &b[..8] != OOP_MAGIC {
            return Err(Error::NotADatabase(
                "no out-of-place header on the data device".into(),
            ));
        }
        let v = get_u32(b, 8);
        let crc_at = if v == OOP_VERSION {
            HEADER_CRC_AT
        } else {
            V1_CRC_AT
        };
        if get_u32(b, crc_at) != crc32c::crc32c(&b[..crc_at]) {
            return Err(Error::NotADatabase(
                "out-of-place header checksum mismatch".into(),
            ));
        }
        if v != OOP_VERSION {
            return Err(Error::NotADatabase(format!(
                "out-of-place format version {v} (this build reads {OOP_VERSION})"
            )));
        }
        Ok(OopLayout {
            page_size: get_u32(b, 12),
            zone_bytes: get_u64(b, 16),
            zone_count: get_u32(b, 24),
            data_start: get_u64(b, 28),
            snap_bytes: get_u64(b, 36),
            snap_start: [get_u64(b, 44), get_u64(b, 52)],
            zoned: b[60] != 0,
            max_open: get_u32(b, 61),
            gc_unit: get_u64(b, 65),
            pages: get_u64(b, 73),
            id: u128::from_le_bytes(b[81..97].try_into().expect("16 bytes")),
        })
    }

    /// Refuses a header that does not fit a device of `capacity_bytes`, or whose fields
    /// contradict each other (it passed its checksum, but was written by something else).
    pub(super) fn check_fits(&self, capacity_bytes: u64) -> Result<()> {
        if self.page_size == 0
            || self.zone_bytes == 0
            || self.pages > capacity_bytes / self.page_size as u64
        {
            return Err(Error::NotADatabase(
                "the out-of-place header is inconsistent".into(),
            ));
        }
        let end = (self.zone_count as u64)
            .checked_mul(self.zone_bytes)
            .and_then(|b| b.checked_add(self.data_start));
        if end.is_none_or(|e| e > capacity_bytes) {
            return Err(Error::NotADatabase(
                "the out-of-place layout exceeds the data device".into(),
            ));
        }
        Ok(())
    }

    /// Byte offset of zone `z` (of the end of the zones for `z == zone_count`).
    pub(crate) fn zone_start(&self, z: u32) -> u64 {
        self.data_start + z as u64 * self.zone_bytes
    }

    /// The zone holding byte offset `off` (which must be in the zones).
    pub(crate) fn zone_of(&self, off: u64) -> u32 {
        ((off - self.data_start) / self.zone_bytes) as u32
    }

    /// End of the last zone.
    pub(crate) fn data_end(&self) -> u64 {
        self.zone_start(self.zone_count)
    }
}

/// Returns true if `b` (the first block of a data device) is an out-of-place header.
pub fn is_oop_header(b: &[u8]) -> bool {
    b.len() >= 8 && &b[..8] == OOP_MAGIC
}
