//! Out-of-place writes (paper 002, "How to Write to SSDs"): every page write goes to a new place,
//! appended to an open *zone* (the DB GC unit), so the device sees large sequential writes and no
//! doublewrite buffer is needed (the old copy stays valid until the new one is durable and its
//! location is logged). The pieces, each a knob of [`OopConfig`]:
//!
//! * **Page map and zones** ([`space`]): page id -> (offset, stored length); zones with state,
//!   write pointer, valid bytes and pages, average EDT and a reverse map; a limit of open zones.
//! * **Batches**: written pages are staged and written `batch_pages` at a time, each zone's share
//!   as one sequential write; reads of staged pages are served from the stage.
//! * **Compression and 4 KiB packing** (section 3): each page compressed on its own (LZ4 or
//!   zstd), blobs placed into 4 KiB slots by best fit, never across a slot boundary; a page that
//!   does not compress is stored raw.
//! * **DB garbage collection** (section 4): when free zones run low (in the foreground before a
//!   write, in the background from `maintain`), greedy victims are taken until their invalid
//!   bytes free one zone; their valid pages are copied (still compressed) and the victims trimmed
//!   (conventional) or reset (ZNS) once the new locations are durable in the log.
//! * **Grouping by deathtime (GDT)** (section 4.2): EDT = current LSN + mean interval of the
//!   page's last writes (its header keeps them; GC copies do not change them); first writes use
//!   the mean interval seen for pages of the same type; each page goes to the open zone whose
//!   average EDT is closest (a fresh zone takes pages no open zone is close to); GC sorts the
//!   valid pages by EDT, coldest first, and places them the same way.
//! * **Aligned GC unit and NoWA** (sections 5.3-5.4, [`nowa`]): zone size x open zones = the
//!   device GC unit; new zones open only when every open zone is full; the model of which device
//!   GC units hold live data triggers compensation writes before the SSD would have to copy.
//! * **ZNS and FDP backends** (sections 5.1, 5.5): on a zoned device DB zones are device zones
//!   (zone append, reset, finish; no trim); on an FDP device every open zone writes with its own
//!   placement id and one id is kept for metadata.
//! * **Durability**: location changes are logged (`Body::Map`) after the pages are durable; a
//!   snapshot of the map (with zone EDTs and the NoWA model) is written to one of two slots at
//!   each checkpoint, tagged with the checkpoint's LSN; recovery loads the snapshot of the last
//!   checkpoint, replays later location records and rebuilds the zones from the final map.
//!
//! Device layout (docs/format.md): a header block at offset 0, two snapshot slots, then the
//! zones. On a zoned device the header and each slot occupy whole zones.

mod nowa;
mod snapshot;
mod space;

use self::nowa::{Groups, Owner};
use self::space::{Loc, Zone, ZoneState};
use super::pack::{self, Codec, SLOT_BYTES};
use super::{LogSink, WriteCounters, WritePath, WriteReason};
use crate::device::{BlockDevice, DeviceStats};
use crate::error::{Error, Result};
use crate::page::{self, get_u32, get_u64, put_u32, put_u64, Lsn, PageId};
use crate::wal::record::MapChange;
use rand::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};

const OOP_MAGIC: &[u8; 8] = b"WAFEROOP";
const OOP_VERSION: u32 = 1;
const HEADER_BYTES: usize = 85;
/// EDT of pages with no history: the coldest.
const MAX_EDT: u64 = u64::MAX / 4;

/// Settings of the out-of-place write path. The defaults are paper 002's plain "out-of-place"
/// row: no compression, random placement, greedy GC, no NoWA, zones not aligned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OopConfig {
    /// Page compression (`none`, `lz4`, `zstd`); compressed pages are packed into 4 KiB slots.
    pub codec: Codec,
    /// Grouping by deathtime: EDT-based placement and GC.
    pub gdt: bool,
    /// The NoWA write pattern: open zones together, compensation writes (conventional SSDs).
    pub nowa: bool,
    /// Zone size = device GC unit / open zones (conventional SSDs).
    pub aligned: bool,
    /// Zone size in bytes when not aligned (0: half the aligned size). Zoned devices use their
    /// zone size, FDP devices their reclaim unit.
    pub zone_bytes: u64,
    /// Open zones at once (0: 16; ZNS: at most the device limit less one; FDP: handles less one).
    pub max_open_zones: u32,
    /// Pages written together as one batch.
    pub batch_pages: u32,
    /// Foreground GC keeps at least this many zones free, plus what one batch fills.
    pub gc_reserve_zones: u32,
    /// Background GC keeps this many zones more.
    pub gc_background_zones: u32,
    /// Trim each 4 KiB slot once no live page is left in it (conventional and FDP devices), so
    /// the SSD knows as much about dead data as the database: without it the SSD keeps copying
    /// dead pages of zones that DB GC has not reclaimed yet.
    pub trim_slots: bool,
    /// Seed of random placement.
    pub seed: u64,
}

impl Default for OopConfig {
    fn default() -> Self {
        OopConfig {
            codec: Codec::None,
            gdt: false,
            nowa: false,
            aligned: false,
            zone_bytes: 0,
            max_open_zones: 0,
            batch_pages: 512,
            gc_reserve_zones: 2,
            gc_background_zones: 2,
            trim_slots: true,
            seed: 1,
        }
    }
}

impl OopConfig {
    pub fn validate(&self) -> Result<()> {
        if self.batch_pages == 0 {
            return Err(Error::Config(
                "out_of_place.batch_pages must be >= 1".into(),
            ));
        }
        if self.zone_bytes != 0 && !self.zone_bytes.is_multiple_of(SLOT_BYTES as u64) {
            return Err(Error::Config(format!(
                "out_of_place.zone_bytes {} must be a multiple of {SLOT_BYTES}",
                self.zone_bytes
            )));
        }
        if self.gc_reserve_zones == 0 {
            return Err(Error::Config(
                "out_of_place.gc_reserve_zones must be >= 1".into(),
            ));
        }
        Ok(())
    }
}

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
}

impl OopLayout {
    fn encode(&self) -> Vec<u8> {
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
        let crc = crc32c::crc32c(&b[..81]);
        put_u32(&mut b, 81, crc);
        b
    }

    fn decode(b: &[u8]) -> Result<OopLayout> {
        if b.len() < HEADER_BYTES || &b[..8] != OOP_MAGIC {
            return Err(Error::NotADatabase(
                "no out-of-place header on the data device".into(),
            ));
        }
        if get_u32(b, 81) != crc32c::crc32c(&b[..81]) {
            return Err(Error::NotADatabase(
                "out-of-place header checksum mismatch".into(),
            ));
        }
        let v = get_u32(b, 8);
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
        })
    }

    fn zone_start(&self, z: u32) -> u64 {
        self.data_start + z as u64 * self.zone_bytes
    }

    fn zone_of(&self, off: u64) -> u32 {
        ((off - self.data_start) / self.zone_bytes) as u32
    }

    /// Device zone number of a byte offset (zoned devices).
    fn device_zone(&self, off: u64) -> u32 {
        (off / self.zone_bytes) as u32
    }
}

/// Slots (of [`SLOT_BYTES`]) a stored page at `off` (in its zone) of `len` bytes touches.
fn slot_range(off: u64, len: u32) -> std::ops::Range<usize> {
    let s = SLOT_BYTES as u64;
    (off / s) as usize..(off + len as u64).div_ceil(s) as usize
}

/// Returns true if `b` (the first block of a data device) is an out-of-place header.
pub fn is_oop_header(b: &[u8]) -> bool {
    b.len() >= 8 && &b[..8] == OOP_MAGIC
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    Conventional,
    Fdp { handles: u32 },
    Zoned,
}

/// Why pages are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    User,
    Gc,
    Compensation,
}

struct Item {
    pid: PageId,
    bytes: Vec<u8>,
    edt: u64,
}

/// The out-of-place write path.
pub struct OutOfPlace {
    dev: Box<dyn BlockDevice>,
    cfg: OopConfig,
    layout: OopLayout,
    backend: Backend,
    map: Vec<Loc>,
    zones: Vec<Zone>,
    free: VecDeque<u32>,
    open: Vec<u32>,
    /// The zone GC and compensation copies go to: never a zone user writes go to, so pages that
    /// survived GC (cold) do not keep zones of hot pages alive.
    gc_zone: Option<u32>,
    /// Full zones without valid pages, reclaimable once the log is durable past `last_map_lsn`.
    dead: Vec<u32>,
    staged: Vec<Item>,
    staged_idx: HashMap<PageId, usize>,
    /// Location changes written but not yet logged.
    pending: Vec<MapChange>,
    last_map_lsn: Lsn,
    groups: Groups,
    snap_seq: u64,
    /// The snapshot image as last written, and per 4 KiB block of it the number of the
    /// snapshot it last changed for: a snapshot rewrites only the blocks changed since the
    /// one before last (the other slot holds the last one).
    snap_img: Vec<u8>,
    snap_dirty: Vec<u64>,
    /// Snapshots to write whole (after format or recovery, the slots' contents are unknown).
    snap_full: u8,
    /// The slot holding the snapshot of the last complete checkpoint (never overwritten), and
    /// the slot written by a checkpoint not confirmed complete yet.
    snap_confirmed: Option<usize>,
    snap_unconfirmed: Option<usize>,
    /// Recovery: the tag of the snapshot loaded (records before it are in it).
    snap_tag: Lsn,
    /// Mean write interval seen per page type (EDT of first writes), as (sum, count).
    type_interval: [(u128, u64); 8],
    rng: rand_pcg::Pcg64,
    counters: WriteCounters,
    failed: Option<String>,
    /// NoWA: a new group of zones is being opened.
    opening_group: bool,
    /// A batch flush may leave a zone's last, partly filled slot's pages staged.
    carrying: bool,
    carried: Vec<Item>,
    /// Pages left staged by the last batch flush (the next flush waits for a whole batch more).
    carry_base: usize,
    /// Slot trims: whether they are issued; slots emptied by changes not yet logged; and slots
    /// waiting for the log to be durable past the record that emptied them.
    slot_trims: bool,
    trim_unlogged: Vec<u64>,
    trim_waiting: VecDeque<(Lsn, Vec<u64>)>,
}

impl OutOfPlace {
    /// Formats `dev` for out-of-place writes.
    pub fn create(dev: Box<dyn BlockDevice>, page_size: u32, cfg: OopConfig) -> Result<OutOfPlace> {
        cfg.validate()?;
        let block = dev.block_bytes() as usize;
        if block > SLOT_BYTES || !SLOT_BYTES.is_multiple_of(block) {
            return Err(Error::Config(format!(
                "out-of-place writes need a device block dividing {SLOT_BYTES} (got {block})"
            )));
        }
        let caps = dev.capabilities();
        let cap = dev.capacity_bytes();
        let want_open = if cfg.max_open_zones == 0 {
            16
        } else {
            cfg.max_open_zones
        };
        let round = |b: u64| (b / SLOT_BYTES as u64 * SLOT_BYTES as u64).max(4 * page_size as u64);
        let (backend, zone_bytes, max_open, gc_unit) = match caps.zone_bytes {
            Some(zb) => {
                // One open zone is kept for metadata (snapshot slots), one for GC copies.
                let limit = caps.max_open_zones.unwrap_or(3).saturating_sub(2).max(1);
                (Backend::Zoned, zb, want_open.min(limit), zb)
            }
            None if caps.placement_ids >= 2 => {
                let ru = caps.gc_unit_bytes.unwrap_or(1 << 20);
                let zb = if cfg.zone_bytes > 0 {
                    cfg.zone_bytes
                } else {
                    ru
                };
                let handles = caps.placement_ids;
                (
                    Backend::Fdp { handles },
                    round(zb),
                    want_open.min(handles.saturating_sub(2).max(1)),
                    ru,
                )
            }
            None => {
                let unit = caps.gc_unit_bytes.unwrap_or(1 << 20);
                let aligned = round(unit / want_open as u64);
                let zb = if cfg.aligned {
                    aligned
                } else if cfg.zone_bytes > 0 {
                    cfg.zone_bytes
                } else {
                    round(aligned / 2)
                };
                (Backend::Conventional, zb, want_open, unit)
            }
        };
        if zone_bytes < 4 * page_size as u64 || !zone_bytes.is_multiple_of(SLOT_BYTES as u64) {
            return Err(Error::Config(format!(
                "zones of {zone_bytes} bytes: out-of-place writes need zones of at least 4 pages \
                 ({} bytes) and a multiple of {SLOT_BYTES}",
                4 * page_size
            )));
        }
        let pid_upper = cap / page_size as u64;
        let zone_upper = cap / zone_bytes;
        let snap_need = snapshot::image_bytes(pid_upper, zone_upper);
        let slot = SLOT_BYTES as u64;
        let (snap_bytes, snap_start, data_start) = if backend == Backend::Zoned {
            let k = snap_need.div_ceil(zone_bytes);
            let sb = k * zone_bytes;
            (sb, [zone_bytes, zone_bytes + sb], zone_bytes + 2 * sb)
        } else {
            let sb = snap_need.div_ceil(slot) * slot;
            let ds = (slot + 2 * sb).div_ceil(1 << 16) << 16;
            (sb, [slot, slot + sb], ds)
        };
        let zone_count = (cap.saturating_sub(data_start) / zone_bytes) as u32;
        let need = max_open + cfg.gc_reserve_zones + cfg.gc_background_zones + 4;
        if zone_count < need {
            return Err(Error::Config(format!(
                "data device of {cap} bytes holds {zone_count} zones of {zone_bytes} bytes; \
                 out-of-place writes need at least {need}"
            )));
        }
        // Page ids: what the zones hold uncompressed. Whether the data fits with room for GC
        // depends on compression; when it does not, writes fail with `Full`.
        let pages = (zone_count as u64 * zone_bytes / page_size as u64).min(pid_upper);
        let layout = OopLayout {
            page_size,
            zone_bytes,
            zone_count,
            data_start,
            snap_bytes,
            snap_start,
            zoned: backend == Backend::Zoned,
            max_open,
            gc_unit,
            pages,
        };
        let mut wp = OutOfPlace::with(dev, cfg, layout, backend);
        wp.map = vec![Loc::EMPTY; wp.page_capacity() as usize];
        wp.slot_trims = wp.cfg.trim_slots && !wp.layout.zoned && wp.dev.capabilities().trim;
        // Nothing of an earlier database may survive: a stale snapshot could be loaded, stale
        // zone contents would stay valid inside the SSD. The header is written last.
        if wp.layout.zoned {
            let zones = (cap / zone_bytes) as u32;
            for z in 0..zones {
                wp.dev.zone_reset(z)?;
            }
        } else {
            wp.dev.write_at(0, &[0u8; SLOT_BYTES])?;
            wp.groups.write(Owner::Meta(2), slot);
            for (s, &at) in snap_start.iter().enumerate() {
                wp.dev.write_at(at, &[0u8; SLOT_BYTES])?;
                wp.groups.write(Owner::Meta(s as u8), slot);
            }
            if wp.dev.capabilities().trim {
                wp.dev.trim(data_start, zone_count as u64 * zone_bytes)?;
            }
        }
        wp.dev.flush()?;
        Ok(wp)
    }

    /// Opens a data device formatted by [`OutOfPlace::create`]. The page map is loaded by
    /// recovery ([`WritePath::recover_begin`] .. [`WritePath::recover_end`]).
    pub fn open(dev: Box<dyn BlockDevice>, cfg: OopConfig) -> Result<OutOfPlace> {
        cfg.validate()?;
        let mut hdr = vec![0u8; SLOT_BYTES];
        let mut dev = dev;
        dev.read_at(0, &mut hdr)?;
        let layout = OopLayout::decode(&hdr)?;
        let caps = dev.capabilities();
        let backend = if layout.zoned {
            if caps.zone_bytes != Some(layout.zone_bytes) {
                return Err(Error::NotADatabase(
                    "the database was formatted for a zoned device with other zones".into(),
                ));
            }
            Backend::Zoned
        } else if caps.placement_ids >= 2 {
            Backend::Fdp {
                handles: caps.placement_ids,
            }
        } else {
            Backend::Conventional
        };
        if layout.data_start + layout.zone_count as u64 * layout.zone_bytes > dev.capacity_bytes() {
            return Err(Error::NotADatabase(
                "the out-of-place layout exceeds the data device".into(),
            ));
        }
        let mut wp = OutOfPlace::with(dev, cfg, layout, backend);
        wp.map = vec![Loc::EMPTY; wp.page_capacity() as usize];
        wp.slot_trims = wp.cfg.trim_slots && !wp.layout.zoned && wp.dev.capabilities().trim;
        Ok(wp)
    }

    fn with(
        dev: Box<dyn BlockDevice>,
        cfg: OopConfig,
        layout: OopLayout,
        backend: Backend,
    ) -> OutOfPlace {
        let zones = vec![Zone::empty(); layout.zone_count as usize];
        let free = (0..layout.zone_count).collect();
        OutOfPlace {
            rng: rand_pcg::Pcg64::seed_from_u64(cfg.seed),
            groups: Groups::new(layout.gc_unit),
            dev,
            cfg,
            layout,
            backend,
            map: Vec::new(),
            zones,
            free,
            open: Vec::new(),
            gc_zone: None,
            dead: Vec::new(),
            staged: Vec::new(),
            staged_idx: HashMap::new(),
            pending: Vec::new(),
            last_map_lsn: 0,
            snap_seq: 0,
            snap_img: Vec::new(),
            snap_dirty: Vec::new(),
            snap_full: 2,
            snap_confirmed: None,
            snap_unconfirmed: None,
            snap_tag: 0,
            type_interval: [(0, 0); 8],
            counters: WriteCounters::default(),
            failed: None,
            opening_group: false,
            carrying: false,
            carried: Vec::new(),
            carry_base: 0,
            slot_trims: false,
            trim_unlogged: Vec::new(),
            trim_waiting: VecDeque::new(),
        }
    }

    /// The layout on the device.
    pub fn layout(&self) -> &OopLayout {
        &self.layout
    }

    /// Free zones, open zones, live device GC units (NoWA model) and its limit.
    pub fn space_summary(&self) -> (usize, usize, usize, usize) {
        (
            self.free.len(),
            self.open.len(),
            self.groups.live(),
            self.nowa_limit(),
        )
    }

    fn fail_check(&self) -> Result<()> {
        match &self.failed {
            Some(why) => Err(Error::Poisoned(format!(
                "an earlier data device error: {why}"
            ))),
            None => Ok(()),
        }
    }

    fn note<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(Error::Device(e)) = &r {
            self.failed.get_or_insert_with(|| e.to_string());
        }
        r
    }

    /// Free zones foreground GC keeps: the reserve and what one batch fills (open zones are
    /// already taken out of the free pool).
    fn need_free(&self) -> usize {
        let batch = self.cfg.batch_pages as u64 * self.layout.page_size as u64;
        self.cfg.gc_reserve_zones as usize + batch.div_ceil(self.layout.zone_bytes) as usize
    }

    /// Live device GC units NoWA allows: fewer than the logical capacity holds.
    fn nowa_limit(&self) -> usize {
        ((self.dev.capacity_bytes() / self.layout.gc_unit) as usize).saturating_sub(2)
    }

    // ---------------------------------------------------------------- deathtime estimates

    /// EDT of a page being written now (its header's history includes this write).
    fn edt_of(&mut self, data: &[u8], now: Lsn) -> u64 {
        let h = page::write_history(data);
        let n = h.iter().take_while(|&&x| x != 0).count();
        let t = data[6] as usize & 7;
        if n >= 2 && h[0] > h[n - 1] {
            let interval = (h[0] - h[n - 1]) / (n as u64 - 1);
            let e = &mut self.type_interval[t];
            e.0 += interval as u128;
            e.1 += 1;
            now.saturating_add(interval)
        } else {
            // First write: pages of the same kind are grouped by the mean interval of their kind
            // (the header carries no tree id; page kinds separate inner nodes from leaves).
            let (sum, cnt) = self.type_interval[t];
            if cnt == 0 {
                MAX_EDT
            } else {
                now.saturating_add((sum / cnt as u128) as u64)
            }
        }
    }

    // ---------------------------------------------------------------- zones

    fn zone_room(&self, z: u32) -> u64 {
        self.layout.zone_bytes - self.zones[z as usize].wp
    }

    /// Opens a free zone (None if there is none or the open limit is reached).
    fn open_zone(&mut self) -> Option<u32> {
        if self.open.len() >= self.layout.max_open as usize {
            return None;
        }
        let z = self.free.pop_front()?;
        let used: Vec<u16> = self
            .open
            .iter()
            .map(|&o| self.zones[o as usize].piid)
            .collect();
        let zone = &mut self.zones[z as usize];
        zone.clear();
        zone.state = ZoneState::Open;
        zone.piid = (0..).find(|p| !used.contains(p)).unwrap_or(0);
        self.open.push(z);
        Some(z)
    }

    /// Closes an open zone (it takes no more appends).
    fn close_zone(&mut self, z: u32) -> Result<()> {
        self.open.retain(|&o| o != z);
        if self.gc_zone == Some(z) {
            self.gc_zone = None;
        }
        let zone = &mut self.zones[z as usize];
        zone.state = ZoneState::Full;
        if self.layout.zoned && zone.wp < self.layout.zone_bytes {
            let dz = self.layout.device_zone(self.layout.zone_start(z));
            self.dev.zone_finish(dz)?;
        }
        if zone.valid_pages == 0 {
            self.dead.push(z);
        }
        Ok(())
    }

    /// May a new zone open now? NoWA opens zones only as a group, when every open one is full.
    fn may_open(&self) -> bool {
        if self.free.is_empty() || self.open.len() >= self.layout.max_open as usize {
            return false;
        }
        !self.cfg.nowa || self.open.is_empty() || self.opening_group
    }

    /// Closes the open zones that cannot take `min_room` more bytes; with NoWA, opens a new
    /// active group (as many zones as may be open, together) when none is open.
    fn prepare_open(&mut self, min_room: u64) -> Result<()> {
        let closing: Vec<u32> = self
            .open
            .iter()
            .copied()
            .filter(|&z| self.zone_room(z) < min_room)
            .collect();
        for z in closing {
            self.close_zone(z)?;
        }
        if self.cfg.nowa && self.open.is_empty() {
            self.opening_group = true;
            while self.open.len() < self.layout.max_open as usize && self.open_zone().is_some() {}
            self.opening_group = false;
        }
        Ok(())
    }

    /// GDT: the open zone whose average EDT (counting `tent`, pages assigned but not written
    /// yet: zone -> (EDT sum, count)) is closest to `e`, or a fresh zone when none is within half
    /// the page's remaining lifetime (`allow_fresh`; GC copies take the closest, so a GC round
    /// frees zones instead of spreading its copies over fresh ones).
    fn closest_by_edt(
        &mut self,
        e: u64,
        now: Lsn,
        tent: &HashMap<u32, (u128, u64)>,
        allow_fresh: bool,
    ) -> Result<u32> {
        let horizon = e.saturating_sub(now).max(1);
        let mut best: Option<(u64, u32)> = None;
        let mut fresh = None;
        for &z in &self.open {
            let zone = &self.zones[z as usize];
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
                let opened = if self.may_open() {
                    self.open_zone()
                } else {
                    None
                };
                opened
                    .or(b.map(|(_, z)| z))
                    .ok_or_else(|| self.out_of_space())
            }
        }
    }

    /// Picks the zone for a page of EDT `edt` (GDT) or for a whole batch (random placement).
    fn pick_zone(
        &mut self,
        edt: Option<u64>,
        now: Lsn,
        min_room: u64,
        allow_fresh: bool,
    ) -> Result<u32> {
        self.prepare_open(min_room)?;
        if let Some(e) = edt {
            return self.closest_by_edt(e, now, &HashMap::new(), allow_fresh);
        }
        let slot = (self.rng.next_u64() % self.layout.max_open as u64) as usize;
        if slot < self.open.len() {
            return Ok(self.open[slot]);
        }
        if self.may_open() {
            if let Some(z) = self.open_zone() {
                return Ok(z);
            }
        }
        let n = self.open.len();
        if n == 0 {
            return Err(self.out_of_space());
        }
        Ok(self.open[slot % n])
    }

    fn out_of_space(&self) -> Error {
        let full = self
            .zones
            .iter()
            .filter(|z| z.state == ZoneState::Full)
            .count();
        let valid: u64 = self.zones.iter().map(|z| z.valid_bytes).sum();
        Error::Full(format!(
            "the data device has no free zone left ({} zones of {} bytes: {} full, {} open, \
             {} free; {} pages mapped, {} valid bytes)",
            self.layout.zone_count,
            self.layout.zone_bytes,
            full,
            self.open.len(),
            self.free.len(),
            self.map.iter().filter(|l| l.is_some()).count(),
            valid
        ))
    }

    // ---------------------------------------------------------------- writing

    /// The GC zone, with at least `min_room` bytes of room (a new one from the free pool if
    /// needed; the open user zones if there is none left).
    fn pick_gc_zone(&mut self, min_room: u64) -> Result<u32> {
        if let Some(z) = self.gc_zone {
            if self.zone_room(z) >= min_room {
                return Ok(z);
            }
            self.close_zone(z)?;
        }
        let Some(z) = self.free.pop_front() else {
            return self.pick_zone(None, 0, min_room, false);
        };
        let zone = &mut self.zones[z as usize];
        zone.clear();
        zone.state = ZoneState::Open;
        zone.piid = match self.backend {
            Backend::Fdp { handles } => handles.saturating_sub(2) as u16,
            _ => 0,
        };
        self.gc_zone = Some(z);
        Ok(z)
    }

    /// Places `items` into open zones (by EDT with GDT, else one random zone per batch), writes
    /// each zone's share as one sequential write and updates the map. Not yet durable or logged.
    fn place(&mut self, rest: &mut VecDeque<Item>, kind: Kind, now: Lsn) -> Result<()> {
        // Items leave `rest` as they are written: on an error the unwritten ones stay there.
        if rest.is_empty() {
            return Ok(());
        }
        if self.cfg.gdt {
            // Coldest first for GC (the coldest pages go to the coldest zones), hottest first
            // for user writes; either way neighbours in the order have similar deathtimes.
            rest.make_contiguous().sort_by_key(|i| i.edt);
            if kind != Kind::User {
                rest.make_contiguous().reverse();
            }
        }
        if self.cfg.gdt && kind == Kind::User {
            // Each zone's share of the batch is written at once (one packing, one write), so
            // grouping by deathtime does not cost a partly empty slot per group.
            let mut groups = self.assign_by_edt(rest, now)?.into_iter();
            while let Some((z, group)) = groups.next() {
                if self.zones[z as usize].state != ZoneState::Open {
                    rest.extend(group);
                    continue;
                }
                match self.write_run(z, group, kind) {
                    Ok(left) => rest.extend(left),
                    Err(e) => {
                        for (_, g) in groups {
                            rest.extend(g);
                        }
                        return Err(e);
                    }
                }
            }
        }
        while let Some(first) = rest.front() {
            let need = first.bytes.len().div_ceil(SLOT_BYTES) as u64 * SLOT_BYTES as u64;
            let z = if kind == Kind::User {
                self.pick_zone(self.cfg.gdt.then_some(first.edt), now, need, true)?
            } else {
                self.pick_gc_zone(need)?
            };
            // The run of items going to zone z: with GDT, those for which z is still the closest
            // choice (consecutive in EDT order); else the whole batch.
            let mut run = vec![rest.pop_front().expect("front")];
            let target = self.zones[z as usize].avg_edt();
            while let Some(next) = rest.front() {
                if self.cfg.gdt && kind == Kind::User {
                    let e = next.edt;
                    let horizon = e.saturating_sub(now).max(1);
                    let near = match target {
                        Some(a) => a.abs_diff(e) <= horizon / 2,
                        None => run[0].edt.abs_diff(e) <= horizon / 2,
                    };
                    if !near {
                        break;
                    }
                }
                run.push(rest.pop_front().expect("front"));
            }
            let leftover = self.write_run(z, run, kind)?;
            for it in leftover.into_iter().rev() {
                rest.push_front(it);
            }
        }
        Ok(())
    }

    /// GDT: the open zone for each page of a batch (sorted by EDT): the one whose average EDT,
    /// counting the pages assigned so far, is closest; a fresh zone for pages no open zone is
    /// close to (within half their remaining lifetime).
    fn assign_by_edt(
        &mut self,
        items: &mut VecDeque<Item>,
        now: Lsn,
    ) -> Result<Vec<(u32, Vec<Item>)>> {
        let mut groups: Vec<(u32, Vec<Item>)> = Vec::new();
        let r = self.assign_into(items, now, &mut groups);
        if r.is_err() {
            // Nothing is written yet: every item goes back.
            for (_, g) in groups.into_iter().rev() {
                for it in g.into_iter().rev() {
                    items.push_front(it);
                }
            }
            return r.map(|_| Vec::new());
        }
        Ok(groups)
    }

    fn assign_into(
        &mut self,
        items: &mut VecDeque<Item>,
        now: Lsn,
        groups: &mut Vec<(u32, Vec<Item>)>,
    ) -> Result<()> {
        self.prepare_open(SLOT_BYTES as u64)?;
        let mut tent: HashMap<u32, (u128, u64)> = HashMap::new();
        while let Some(it) = items.pop_front() {
            let z = match self.closest_by_edt(it.edt, now, &tent, true) {
                Ok(z) => z,
                Err(e) => {
                    items.push_front(it);
                    return Err(e);
                }
            };
            let t = tent.entry(z).or_default();
            t.0 += it.edt.min(MAX_EDT) as u128;
            t.1 += 1;
            match groups.iter_mut().find(|(g, _)| *g == z) {
                Some((_, v)) => v.push(it),
                None => groups.push((z, vec![it])),
            }
        }
        Ok(())
    }

    /// Packs and appends as many of `run` as fit zone `z`; returns the rest.
    fn write_run(&mut self, z: u32, run: Vec<Item>, kind: Kind) -> Result<Vec<Item>> {
        let room = self.zone_room(z) as usize;
        let plan_of = |items: &[Item]| {
            let lens: Vec<usize> = items.iter().map(|i| i.bytes.len()).collect();
            pack::plan_best_fit(&lens, SLOT_BYTES)
        };
        let mut run = run;
        let mut rest = Vec::new();
        let mut plan = plan_of(&run);
        if plan.slots * SLOT_BYTES > room {
            // The zone takes the pages of the first slots of the whole run's packing (dense
            // slots, as if the run were written at once), the rest goes on.
            let avail = room / SLOT_BYTES;
            let mut take = Vec::new();
            for (it, &(slot, off)) in run.into_iter().zip(&plan.places) {
                let end = (slot * SLOT_BYTES + off + it.bytes.len()).div_ceil(SLOT_BYTES);
                if end <= avail {
                    take.push(it);
                } else {
                    rest.push(it);
                }
            }
            run = take;
            plan = plan_of(&run);
            // Repacking a subset can differ: drop the largest pages until it fits.
            while !run.is_empty() && plan.slots * SLOT_BYTES > room {
                let big = (0..run.len())
                    .max_by_key(|&i| run[i].bytes.len())
                    .expect("not empty");
                rest.push(run.swap_remove(big));
                plan = plan_of(&run);
            }
        }
        if run.is_empty() {
            self.close_zone(z)?;
            return Ok(rest);
        }
        if self.carrying && kind == Kind::User && rest.is_empty() {
            // Pages that would only partly fill the last slot wait for the zone's next batch
            // (they stay staged; `sync` writes everything): no padding per batch and group.
            let last = plan.slots.saturating_sub(1);
            let in_last = |i: usize| plan.places[i].0 == last && run[i].bytes.len() < SLOT_BYTES;
            let used: usize = (0..run.len())
                .filter(|&i| plan.places[i].0 == last)
                .map(|i| run[i].bytes.len())
                .sum();
            if used < SLOT_BYTES * 9 / 10 {
                let carry: Vec<bool> = (0..run.len()).map(in_last).collect();
                let mut keep = Vec::with_capacity(run.len());
                for (it, c) in run.into_iter().zip(carry) {
                    if c {
                        self.carried.push(it);
                    } else {
                        keep.push(it);
                    }
                }
                run = keep;
                if run.is_empty() {
                    return Ok(rest);
                }
                plan = plan_of(&run);
            }
        }
        let slices: Vec<&[u8]> = run.iter().map(|i| i.bytes.as_slice()).collect();
        let (image, at) = pack::pack_planned(&slices, &plan, SLOT_BYTES);
        let stored: u64 = run.iter().map(|i| i.bytes.len() as u64).sum();
        let base = self.layout.zone_start(z) + self.zones[z as usize].wp;
        match self.backend {
            Backend::Zoned => {
                let dz = self.layout.device_zone(base);
                let got = self.dev.zone_append(dz, &image)?;
                if got != base {
                    return Err(Error::Config(format!(
                        "zone append landed at {got}, expected {base}: the zone's write \
                         pointer is not where the database left it"
                    )));
                }
            }
            Backend::Fdp { .. } => {
                let piid = self.zones[z as usize].piid;
                self.dev.write_placed(base, &image, piid)?
            }
            Backend::Conventional => self.dev.write_at(base, &image)?,
        }
        let len = image.len() as u64;
        self.groups.write(Owner::Zone(z), len);
        let c = &mut self.counters;
        c.db_write_bytes += len;
        c.padding_bytes += len - stored;
        match kind {
            Kind::User => c.stored_user_bytes += stored,
            Kind::Gc => c.gc_write_bytes += stored,
            Kind::Compensation => c.compensation_bytes += stored,
        }
        self.zones[z as usize].wp += len;
        for (it, &o) in run.iter().zip(&at) {
            let off = base + o as u64;
            self.relocate_entry(
                it.pid,
                off,
                it.bytes.len() as u32,
                it.edt,
                kind == Kind::User,
            );
            self.pending.push(MapChange {
                pid: it.pid,
                offset: off,
                len: it.bytes.len() as u32,
            });
        }
        if self.zone_room(z) < SLOT_BYTES as u64 {
            self.close_zone(z)?;
        }
        Ok(rest)
    }

    /// Points page `pid` at its new copy and invalidates the old one.
    fn relocate_entry(&mut self, pid: PageId, off: u64, len: u32, edt: u64, note_edt: bool) {
        self.invalidate(pid);
        let z = self.layout.zone_of(off);
        let zs = self.layout.zone_start(z);
        let zone = &mut self.zones[z as usize];
        zone.valid_bytes += len as u64;
        zone.valid_pages += 1;
        zone.rev.push(((off - zs) as u32, pid));
        if self.slot_trims {
            if zone.slot_live.is_empty() {
                zone.slot_live = vec![0; (self.layout.zone_bytes / SLOT_BYTES as u64) as usize];
            }
            for s in slot_range(off - zs, len) {
                zone.slot_live[s] += 1;
            }
        }
        if note_edt || edt != MAX_EDT {
            zone.note_edt(edt.min(MAX_EDT));
        }
        self.map[pid as usize] = Loc { off, len, edt };
        self.touch_page(pid);
        self.touch_zone(z);
    }

    fn invalidate(&mut self, pid: PageId) {
        let old = self.map[pid as usize];
        if !old.is_some() {
            return;
        }
        let z = self.layout.zone_of(old.off);
        let zs = self.layout.zone_start(z);
        let zone = &mut self.zones[z as usize];
        zone.valid_bytes -= old.len as u64;
        zone.valid_pages -= 1;
        if !zone.slot_live.is_empty() {
            for s in slot_range(old.off - zs, old.len) {
                zone.slot_live[s] -= 1;
                if zone.slot_live[s] == 0 {
                    self.trim_unlogged.push(zs + (s * SLOT_BYTES) as u64);
                }
            }
        }
        if zone.valid_pages == 0 && zone.state == ZoneState::Full {
            self.dead.push(z);
        }
        self.map[pid as usize] = Loc::EMPTY;
    }

    /// Makes the writes so far durable and logs their locations. Returns the record's LSN (0 if
    /// nothing was pending).
    fn commit_locations(&mut self, log: &mut dyn LogSink) -> Result<Lsn> {
        if self.pending.is_empty() {
            return Ok(0);
        }
        self.dev.flush()?;
        let lsn = log.log_map(&self.pending)?;
        self.pending.clear();
        self.last_map_lsn = lsn;
        if !self.trim_unlogged.is_empty() {
            let slots = std::mem::take(&mut self.trim_unlogged);
            self.trim_waiting.push_back((lsn, slots));
        }
        Ok(lsn)
    }

    /// Trims the dead slots whose emptying record is durable (the new copies of their pages are
    /// then what recovery finds).
    fn issue_slot_trims(&mut self, log: &dyn LogSink) -> Result<()> {
        let durable = log.durable_lsn();
        let mut slots = Vec::new();
        while let Some((lsn, _)) = self.trim_waiting.front() {
            if *lsn >= durable {
                break;
            }
            slots.extend(self.trim_waiting.pop_front().expect("front").1);
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
            self.dev.trim(start, end - start)?;
        }
        self.counters.slots_trimmed += slots.len() as u64;
        Ok(())
    }

    /// Writes the staged pages (`all`: every one; else pages that would only partly fill a last
    /// slot may stay staged).
    fn flush_staged(&mut self, log: &mut dyn LogSink, all: bool) -> Result<()> {
        if self.staged.is_empty() {
            // Locations written by a batch that failed part-way are logged now.
            return self.commit_locations(log).map(|_| ());
        }
        self.ensure_free(log)?;
        let mut items: VecDeque<Item> = std::mem::take(&mut self.staged).into();
        self.staged_idx.clear();
        self.carrying = !all;
        let r = self.place(&mut items, Kind::User, log.next_lsn());
        self.carrying = false;
        // Pages not written (carried to the next batch, or left by an error) stay staged.
        let left: Vec<Item> = std::mem::take(&mut self.carried)
            .into_iter()
            .chain(items)
            .collect();
        for it in left {
            self.staged_idx.insert(it.pid, self.staged.len());
            self.staged.push(it);
        }
        self.carry_base = self.staged.len();
        // What was written is logged even if the batch failed part-way.
        let c = self.commit_locations(log);
        r?;
        c?;
        self.issue_slot_trims(log)
    }

    // ---------------------------------------------------------------- garbage collection

    /// Trims or resets zones with no valid page left, once the log records that emptied them
    /// are durable.
    fn reclaim_dead(&mut self, log: &mut dyn LogSink) -> Result<usize> {
        self.dead.retain(|&z| {
            let zone = &self.zones[z as usize];
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
        let dead = std::mem::take(&mut self.dead);
        for &z in &dead {
            self.reclaim(z)?;
        }
        Ok(dead.len())
    }

    fn reclaim(&mut self, z: u32) -> Result<()> {
        let start = self.layout.zone_start(z);
        if self.layout.zoned {
            self.dev.zone_reset(self.layout.device_zone(start))?;
        } else if self.dev.capabilities().trim {
            self.dev.trim(start, self.layout.zone_bytes)?;
        }
        self.groups.kill(Owner::Zone(z));
        self.zones[z as usize].clear();
        self.touch_zone(z);
        // The zone trim covers its dead slots; a slot trim issued later would hit new data.
        let end = start + self.layout.zone_bytes;
        let outside = |o: &u64| *o < start || *o >= end;
        self.trim_unlogged.retain(outside);
        for (_, v) in self.trim_waiting.iter_mut() {
            v.retain(outside);
        }
        self.free.push_back(z);
        self.counters.zones_reclaimed += 1;
        Ok(())
    }

    /// Copies the valid pages of `victims` elsewhere, logs and forces their locations, and
    /// reclaims the victims.
    fn collect(&mut self, victims: &[u32], kind: Kind, log: &mut dyn LogSink) -> Result<()> {
        let mut items = Vec::new();
        let now = log.next_lsn();
        for &z in victims {
            let zone = &self.zones[z as usize];
            let len = zone.wp as usize;
            if zone.valid_pages == 0 || len == 0 {
                continue;
            }
            let start = self.layout.zone_start(z);
            let mut buf = vec![0u8; len];
            self.dev.read_at(start, &mut buf)?;
            self.counters.gc_read_bytes += len as u64;
            for &(o, pid) in &self.zones[z as usize].rev {
                let loc = self.map[pid as usize];
                if loc.off == start + o as u64 {
                    let b = &buf[o as usize..o as usize + loc.len as usize];
                    // A page that outlived its estimated deathtime was mispredicted: it is
                    // cold, and GC places it with the coldest pages.
                    let edt = if loc.edt == 0 || loc.edt <= now {
                        MAX_EDT
                    } else {
                        loc.edt
                    };
                    items.push(Item {
                        pid,
                        bytes: b.to_vec(),
                        edt,
                    });
                }
            }
        }
        // Victims must not receive the copies.
        for &z in victims {
            if self.zones[z as usize].state == ZoneState::Open {
                self.close_zone(z)?;
            }
        }
        let mut items: VecDeque<Item> = items.into();
        if let Err(e) = self.place(&mut items, kind, log.next_lsn()) {
            // The copies made so far are logged; the victims keep the rest and stay.
            self.commit_locations(log)?;
            return Err(e);
        }
        let lsn = self.commit_locations(log)?;
        log.force(lsn.max(self.last_map_lsn))?;
        for &z in victims {
            if self.zones[z as usize].valid_pages == 0 {
                self.dead.retain(|&d| d != z);
                self.reclaim(z)?;
            }
        }
        Ok(())
    }

    /// One round of DB GC: greedy victims (fewest valid bytes) until their invalid bytes free
    /// one zone. Returns false if nothing could be gained.
    fn gc_round(&mut self, log: &mut dyn LogSink) -> Result<bool> {
        let mut full: Vec<(u64, u32)> = (0..self.layout.zone_count)
            .filter(|&z| self.zones[z as usize].state == ZoneState::Full)
            .map(|z| (self.zones[z as usize].valid_bytes, z))
            .collect();
        full.sort_unstable();
        let zb = self.layout.zone_bytes;
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
        let free_bytes = (self.free.len().saturating_sub(1)) as u64 * zb
            + self.open.iter().map(|&z| self.zone_room(z)).sum::<u64>()
            + self.gc_zone.map_or(0, |z| self.zone_room(z));
        while valid > free_bytes && victims.len() > 1 {
            let z = victims.pop().expect("victim");
            valid -= self.zones[z as usize].valid_bytes;
            invalid -= zb - self.zones[z as usize].valid_bytes;
        }
        if victims.is_empty() || invalid < SLOT_BYTES as u64 || valid > free_bytes {
            return Ok(false);
        }
        self.counters.gc_rounds += 1;
        self.collect(&victims, Kind::Gc, log)?;
        Ok(true)
    }

    /// NoWA: while more device GC units hold live data than the limit, relocate the live zones
    /// of the cheapest complete unit (compensation writes).
    fn compensate(&mut self, log: &mut dyn LogSink) -> Result<bool> {
        if !self.cfg.nowa || self.groups.live() <= self.nowa_limit() {
            return Ok(false);
        }
        let mut best: Option<(u64, Vec<u32>)> = None;
        for (_, owners) in self.groups.complete_live() {
            let mut cost = 0u64;
            let mut zones = Vec::new();
            let mut ok = true;
            for o in owners {
                match *o {
                    Owner::Zone(z) if self.zones[z as usize].state == ZoneState::Full => {
                        cost += self.zones[z as usize].valid_bytes;
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
        self.counters.compensation_rounds += 1;
        self.collect(&zones, Kind::Compensation, log)?;
        Ok(true)
    }

    /// Foreground: enough free zones for the next batch and the NoWA limit respected.
    fn ensure_free(&mut self, log: &mut dyn LogSink) -> Result<()> {
        if self.free.len() < self.need_free() {
            self.reclaim_dead(log)?;
        }
        // Rounds are bounded: each logs a location record, and a round that only moves data
        // around (tight space) must not fill the log.
        let mut rounds = 0;
        while self.free.len() < self.need_free() {
            rounds += 1;
            if !self.gc_round(log)? || rounds > 64 {
                if self.free.is_empty() && self.open.is_empty() {
                    return Err(self.out_of_space());
                }
                break;
            }
        }
        let mut guard = 0;
        while guard < 8 && self.compensate(log)? {
            guard += 1;
        }
        Ok(())
    }
}

impl WritePath for OutOfPlace {
    fn read_page(&mut self, pid: PageId, buf: &mut [u8]) -> Result<()> {
        self.fail_check()?;
        if pid >= self.map.len() as u64 {
            return Err(Error::Full(format!("page {pid} is beyond the data device")));
        }
        if let Some(&i) = self.staged_idx.get(&pid) {
            let b = &self.staged[i].bytes;
            return pack::unpack_into(b, 0, b.len(), pid, buf);
        }
        let loc = self.map[pid as usize];
        if !loc.is_some() {
            buf.fill(0);
            return Ok(());
        }
        let slot = SLOT_BYTES as u64;
        let start = loc.off / slot * slot;
        let end = (loc.off + loc.len as u64).div_ceil(slot) * slot;
        let mut io = vec![0u8; (end - start) as usize];
        let r = self.dev.read_at(start, &mut io).map_err(Error::from);
        self.note(r)?;
        self.counters.page_reads += 1;
        self.counters.read_bytes += io.len() as u64;
        pack::unpack_into(&io, (loc.off - start) as usize, loc.len as usize, pid, buf)
    }

    fn write_pages(
        &mut self,
        pages: &[(PageId, &[u8])],
        reason: WriteReason,
        log: &mut dyn LogSink,
    ) -> Result<()> {
        self.fail_check()?;
        let now = log.next_lsn();
        for &(pid, data) in pages {
            if pid >= self.map.len() as u64 {
                return Err(Error::Full(format!("page {pid} is beyond the data device")));
            }
            let c = &mut self.counters;
            c.user_write_bytes += data.len() as u64;
            match reason {
                WriteReason::Eviction => c.eviction_writes += 1,
                WriteReason::Checkpoint => c.checkpoint_writes += 1,
                WriteReason::Shutdown => c.shutdown_writes += 1,
            }
            let edt = if self.cfg.gdt {
                self.edt_of(data, now)
            } else {
                0
            };
            let bytes = pack::stored_bytes(pid, &pack::compress_page(self.cfg.codec, data));
            let item = Item { pid, bytes, edt };
            match self.staged_idx.get(&pid) {
                Some(&i) => self.staged[i] = item,
                None => {
                    self.staged_idx.insert(pid, self.staged.len());
                    self.staged.push(item);
                }
            }
            if self.staged.len() >= self.carry_base + self.cfg.batch_pages as usize {
                let r = self.flush_staged(log, false);
                self.note(r)?;
            }
        }
        Ok(())
    }

    fn sync(&mut self, log: &mut dyn LogSink) -> Result<()> {
        self.fail_check()?;
        let r = self.flush_staged(log, true);
        self.note(r)?;
        let r = self.dev.flush().map_err(Error::from);
        self.note(r)
    }

    fn maintain(&mut self, log: &mut dyn LogSink) -> Result<bool> {
        self.fail_check()?;
        let target = self.need_free() + self.cfg.gc_background_zones as usize;
        let mut did = false;
        if self.free.len() < target {
            let r = self.reclaim_dead(log);
            did |= self.note(r)? > 0;
        }
        if self.free.len() < target {
            let r = self.gc_round(log);
            did |= self.note(r)?;
        }
        let r = self.compensate(log);
        did |= self.note(r)?;
        let r = self.issue_slot_trims(log);
        self.note(r)?;
        Ok(did)
    }

    fn checkpoint_done(&mut self) {
        if let Some(s) = self.snap_unconfirmed.take() {
            self.snap_confirmed = Some(s);
        }
    }

    fn checkpoint(&mut self, tag: Lsn) -> Result<()> {
        self.fail_check()?;
        debug_assert!(self.staged.is_empty() && self.pending.is_empty());
        let r = self.write_snapshot(tag);
        self.note(r)
    }

    fn recover_begin(&mut self, checkpoint_lsn: Lsn) -> Result<()> {
        let mut best: Option<(Lsn, u64, Vec<u8>, usize)> = None;
        for s in 0..2 {
            if let Some((tag, seq, img)) = self.read_snapshot(s)? {
                if tag <= checkpoint_lsn && best.as_ref().is_none_or(|b| tag > b.0) {
                    best = Some((tag, seq, img, s));
                }
            }
        }
        let Some((tag, seq, img, slot)) = best else {
            return Err(Error::NotADatabase(format!(
                "no map snapshot for the checkpoint at LSN {checkpoint_lsn}"
            )));
        };
        let info = self.load_snapshot(&img)?;
        self.snap_confirmed = Some(slot);
        self.snap_unconfirmed = None;
        self.snap_tag = tag;
        self.snap_seq = seq + 1;
        for (z, (wp, edt)) in info.into_iter().enumerate() {
            let zone = &mut self.zones[z];
            zone.wp = wp;
            if edt != 0 {
                zone.note_edt(edt);
            }
        }
        Ok(())
    }

    fn redo_map(&mut self, lsn: Lsn, changes: &[MapChange]) -> Result<()> {
        if lsn < self.snap_tag {
            return Ok(());
        }
        for m in changes {
            let ok = (m.pid as usize) < self.map.len()
                && m.offset >= self.layout.data_start
                && m.offset + m.len as u64 <= self.layout.zone_start(self.layout.zone_count);
            if !ok {
                return Err(Error::CorruptLog {
                    lsn,
                    reason: format!("location of page {} outside the data zones", m.pid),
                });
            }
            self.map[m.pid as usize] = Loc {
                off: m.offset,
                len: m.len,
                edt: 0,
            };
            self.touch_page(m.pid);
        }
        Ok(())
    }

    fn recover_end(&mut self) -> Result<()> {
        let snap_wp: Vec<u64> = self.zones.iter().map(|z| z.wp).collect();
        let snap_edt: Vec<Option<u64>> = self.zones.iter().map(|z| z.avg_edt()).collect();
        for z in self.zones.iter_mut() {
            z.clear();
        }
        for (pid, l) in self.map.iter_mut().enumerate() {
            if !l.is_some() {
                continue;
            }
            let z = self.layout.zone_of(l.off);
            let zs = self.layout.zone_start(z);
            let zone = &mut self.zones[z as usize];
            zone.valid_bytes += l.len as u64;
            zone.valid_pages += 1;
            zone.rev.push(((l.off - zs) as u32, pid as PageId));
            let end = (l.off - zs + l.len as u64).div_ceil(SLOT_BYTES as u64) * SLOT_BYTES as u64;
            zone.wp = zone.wp.max(end);
            l.edt = snap_edt[z as usize].unwrap_or(0);
        }
        self.free.clear();
        self.open.clear();
        self.gc_zone = None;
        self.dead.clear();
        let trim = self.dev.capabilities().trim;
        for z in 0..self.layout.zone_count {
            let zi = z as usize;
            let start = self.layout.zone_start(z);
            if self.zones[zi].valid_pages == 0 {
                // Whatever the zone held is garbage now (trimmed below, runs of free zones at
                // once).
                if self.layout.zoned {
                    self.dev.zone_reset(self.layout.device_zone(start))?;
                }
                self.groups.kill(Owner::Zone(z));
                self.free.push_back(z);
            } else {
                self.zones[zi].rev.sort_unstable();
                self.zones[zi].state = ZoneState::Full;
                if let Some(e) = snap_edt[zi] {
                    self.zones[zi].note_edt(e);
                }
                if self.layout.zoned {
                    self.dev.zone_finish(self.layout.device_zone(start))?;
                }
                // Bytes appended after the snapshot went to the end of the stream (approximate:
                // the exact order of those writes is not logged).
                let after = self.zones[zi].wp.saturating_sub(snap_wp[zi]);
                if snap_wp[zi] > self.zones[zi].wp {
                    self.groups.kill(Owner::Zone(z));
                    let wp = self.zones[zi].wp;
                    self.groups.write(Owner::Zone(z), wp);
                } else {
                    self.groups.write(Owner::Zone(z), after);
                }
            }
        }
        if trim && !self.layout.zoned {
            let mut free: Vec<u32> = self.free.iter().copied().collect();
            free.sort_unstable();
            let mut i = 0;
            while i < free.len() {
                let mut j = i + 1;
                while j < free.len() && free[j] == free[j - 1] + 1 {
                    j += 1;
                }
                let start = self.layout.zone_start(free[i]);
                self.dev
                    .trim(start, (j - i) as u64 * self.layout.zone_bytes)?;
                i = j;
            }
        }
        self.dev.flush()?;
        Ok(())
    }

    fn finish_format(&mut self) -> Result<()> {
        self.fail_check()?;
        let hdr = self.layout.encode();
        let r = if self.layout.zoned {
            self.dev
                .zone_append(0, &hdr)
                .and_then(|_| self.dev.zone_finish(0))
                .map_err(Error::from)
        } else {
            self.dev.write_at(0, &hdr).map_err(Error::from)
        };
        self.note(r)?;
        self.counters.metadata_bytes += hdr.len() as u64;
        self.counters.db_write_bytes += hdr.len() as u64;
        let r = self.dev.flush().map_err(Error::from);
        self.note(r)
    }

    fn system_log_reserve_bytes(&self, buffer_pages: usize) -> u64 {
        buffer_pages as u64 * 48 + (256 << 10)
    }

    fn kind(&self) -> &'static str {
        "out-of-place"
    }

    fn page_capacity(&self) -> u64 {
        self.layout.pages
    }

    fn counters(&self) -> &WriteCounters {
        &self.counters
    }

    fn device_stats(&self) -> DeviceStats {
        self.dev.stats()
    }
}

#[cfg(test)]
mod tests;
