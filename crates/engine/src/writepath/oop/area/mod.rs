//! The log-structured area: a region of the data device cut into zones that are only appended
//! to, with the page map saying where the current copy of each page is. It is the mechanism of
//! out-of-place writes without their policies, so that other write paths (the journal of a
//! journal + remap path, paper 004) can store pages the same way.
//!
//! # What it owns
//!
//! * the device, through a [`backend::ZoneBackend`] (conventional, FDP or ZNS);
//! * the zones ([`space::Zone`]: state, write pointer, valid bytes and pages, reverse map,
//!   average EDT, live copies per 4 KiB slot) and the queue of free zones;
//! * the page map (page id -> offset, stored length, EDT of the copy);
//! * packed appends: a run of stored pages and its packing plan become one sequential write;
//! * map logging: every location change is kept until [`LogArea::commit_locations`] makes the
//!   written data durable (device flush) and logs the changes (`Body::Map`) through the
//!   [`LogSink`];
//! * reclaiming: a zone left without a live page is trimmed or reset, and a 4 KiB slot left
//!   without a live page is trimmed, only once the log is durable past the record that emptied
//!   it;
//! * map snapshots (two slots, written at checkpoints, see `snapshot.rs`) and recovery from a
//!   snapshot plus later location records (`recovery.rs`);
//! * the NoWA model of the device's write stream ([`nowa::Groups`]), fed by every write it
//!   makes and saved in its snapshots;
//! * the counters of what it writes and reads (device bytes, padding, metadata, reads, trims,
//!   zones reclaimed); callers add what only they know (user bytes, why bytes were written).
//!
//! # What callers do
//!
//! * Choose zones: open a free one ([`LogArea::open_zone`], with the backend's placement id
//!   for its role), append to it, close it ([`LogArea::close_zone`]) when it is full or should
//!   take no more. The area keeps no list of open zones: which zone gets which page is policy.
//! * Plan the packing of each run (`pack::plan_best_fit`) so that it fits the zone's room.
//! * Follow the write-ahead rule: a page is appended only after the log is durable past its page
//!   LSN (checked in debug builds by the caller, which knows the page LSNs).
//! * Call [`LogArea::commit_locations`] before anything may depend on the new copies being
//!   found after a crash (a sync, a checkpoint), and before the old copies may be overwritten:
//!   zones are reused only through [`LogArea::reclaim_dead`] or
//!   [`LogArea::force_and_reclaim`], which force the log first. Never trim or reset a zone
//!   directly.
//! * At a checkpoint: have every location logged, then [`LogArea::write_snapshot`] before the
//!   checkpoint record, and [`LogArea::snapshot_done`] once that record is durable.
//! * On restart: [`LogArea::recover_begin`], [`LogArea::redo_map`] for every location record
//!   from the checkpoint on, [`LogArea::recover_end`]; then every zone is full or free.
//! * Treat `Error::Device` from any call as fatal for the area (poison the handle): the device
//!   may hold writes the map does not know about.

pub(crate) mod backend;
mod durability;
mod invariants;
pub(crate) mod nowa;
mod recovery;
pub(crate) mod shared;
mod snapshot;
pub(crate) mod space;

use self::backend::ZoneBackend;
use self::nowa::{Groups, Owner};
use self::space::{Loc, StoredPage, Zone, ZoneState, MAX_EDT};
use super::layout::OopLayout;
use crate::device::DeviceStats;
use crate::error::{Error, Result};
use crate::page::{Lsn, PageId};
use crate::wal::record::MapChange;
use crate::writepath::pack::{self, Plan, SLOT_BYTES};
use crate::writepath::WriteCounters;
use std::collections::VecDeque;

// A slot holds at most SLOT_BYTES / 22 stored pages (a blob is at least its 21-byte header plus
// one byte): the per-slot live counts fit a u16.
const _: () = assert!(SLOT_BYTES / (pack::BLOB_HEADER_BYTES + 1) < u16::MAX as usize);

/// Bytes of a map snapshot of `pages` page ids and `zones` zones (the size of a snapshot slot).
pub(crate) fn snapshot_bytes(pages: u64, zones: u64) -> u64 {
    snapshot::image_bytes(pages, zones)
}

/// Slots (of [`SLOT_BYTES`]) a stored page at `off` (in its zone) of `len` bytes touches.
fn slot_range(off: u64, len: u32) -> std::ops::Range<usize> {
    let s = SLOT_BYTES as u64;
    (off / s) as usize..(off + len as u64).div_ceil(s) as usize
}

/// Reads the stored page at `off` (`len` bytes) through `read` (one aligned read of the
/// [`SLOT_BYTES`] slots holding it) and unpacks it into `buf` as page `pid`, verified. Returns
/// that and the bytes read (also when the unpacking fails).
pub(crate) fn read_stored(
    read: impl FnOnce(u64, &mut [u8]) -> Result<()>,
    off: u64,
    len: u32,
    pid: PageId,
    buf: &mut [u8],
) -> (Result<()>, u64) {
    let slot = SLOT_BYTES as u64;
    let start = off / slot * slot;
    let end = (off + len as u64).div_ceil(slot) * slot;
    let mut io = vec![0u8; (end - start) as usize];
    if let Err(e) = read(start, &mut io) {
        return (Err(e), 0);
    }
    let r = pack::unpack_into(&io, (off - start) as usize, len as usize, pid, buf);
    (r, io.len() as u64)
}

/// Dead 4 KiB slots waiting to be trimmed.
#[derive(Default)]
struct SlotTrims {
    /// Whether slots are trimmed at all (the device trims and is not zoned; configurable).
    enabled: bool,
    /// Slots emptied by location changes not logged yet.
    unlogged: Vec<u64>,
    /// Slots waiting for the log to be durable past the record that emptied them.
    waiting: VecDeque<(Lsn, Vec<u64>)>,
}

/// The log-structured area; see the module documentation for its contract.
pub(crate) struct LogArea {
    backend: Box<dyn ZoneBackend>,
    layout: OopLayout,
    map: Vec<Loc>,
    zones: Vec<Zone>,
    /// The map as readers share it, and the times each zone was reset (trimmed) since the
    /// area was opened: a read made without the write path's mutex is confirmed against them
    /// ([`LogArea::still_at`], [`shared::SharedMap::confirm`]).
    shared: std::sync::Arc<shared::SharedMap>,
    free: VecDeque<u32>,
    /// Full zones without valid pages, reclaimable once the log is durable past `last_map_lsn`.
    dead: Vec<u32>,
    /// Location changes written but not yet logged.
    pending: Vec<MapChange>,
    last_map_lsn: Lsn,
    trims: SlotTrims,
    stream: Groups,
    snap: snapshot::SnapState,
    /// The snapshot slots as read at open, until recovery takes them.
    opened: Option<[snapshot::SlotRead; 2]>,
    /// The header is on the device (false from format until the first checkpoint's stamp).
    header_written: bool,
    counters: WriteCounters,
}

impl LogArea {
    fn new(backend: Box<dyn ZoneBackend>, layout: OopLayout, trim_slots: bool) -> LogArea {
        let trims = SlotTrims {
            enabled: trim_slots && backend.trims_slots(),
            ..SlotTrims::default()
        };
        LogArea {
            zones: vec![Zone::empty(); layout.zone_count as usize],
            shared: std::sync::Arc::new(shared::SharedMap::new(
                layout.pages,
                layout.zone_count,
                layout.data_start,
                layout.zone_bytes,
            )),
            free: (0..layout.zone_count).collect(),
            map: vec![Loc::EMPTY; layout.pages as usize],
            stream: Groups::new(layout.gc_unit),
            backend,
            layout,
            dead: Vec::new(),
            pending: Vec::new(),
            last_map_lsn: 0,
            trims,
            snap: snapshot::SnapState::new(),
            opened: None,
            header_written: false,
            counters: WriteCounters::default(),
        }
    }

    /// A new area on a device being formatted: whatever an earlier database left is erased
    /// (a stale snapshot could be loaded, stale zone contents would stay valid inside the SSD).
    /// The header is written later ([`LogArea::write_header`]). `trim_slots`: trim dead 4 KiB
    /// slots where the backend can.
    pub(crate) fn format(
        backend: Box<dyn ZoneBackend>,
        layout: OopLayout,
        trim_slots: bool,
    ) -> Result<LogArea> {
        let mut area = LogArea::new(backend, layout, trim_slots);
        area.backend.format(&area.layout, &mut area.stream)?;
        area.backend.dev_mut().flush()?;
        Ok(area)
    }

    /// The area of a formatted device; its map is empty until recovery loads it. Both snapshot
    /// slots are read (what the device says about its checkpoint: [`LogArea::stamp`]).
    pub(crate) fn open(
        backend: Box<dyn ZoneBackend>,
        layout: OopLayout,
        trim_slots: bool,
    ) -> Result<LogArea> {
        let mut area = LogArea::new(backend, layout, trim_slots);
        area.header_written = true;
        area.opened = Some([area.read_snapshot(0)?, area.read_snapshot(1)?]);
        Ok(area)
    }

    /// Whether the header block is on the device.
    pub(crate) fn header_written(&self) -> bool {
        self.header_written
    }

    /// Writes the header block (of database `id`) and makes it durable: from then on the device
    /// opens as formatted. Written once, when the first checkpoint of a new database stamps the
    /// device (a zoned device cannot rewrite it in place).
    pub(crate) fn write_header(&mut self, id: crate::identity::DbId) -> Result<()> {
        self.layout.id = id;
        let hdr = self.layout.encode();
        self.backend.write_header(&hdr)?;
        self.counters.metadata_bytes += hdr.len() as u64;
        self.counters.db_write_bytes += hdr.len() as u64;
        self.flush()?;
        self.header_written = true;
        Ok(())
    }

    pub(crate) fn layout(&self) -> &OopLayout {
        &self.layout
    }

    pub(crate) fn backend(&self) -> &dyn ZoneBackend {
        self.backend.as_ref()
    }

    pub(crate) fn device_capacity_bytes(&self) -> u64 {
        self.backend.dev().capacity_bytes()
    }

    pub(crate) fn device_stats(&self) -> DeviceStats {
        self.backend.dev().stats()
    }

    /// Makes every completed write durable (logs nothing).
    pub(crate) fn flush(&mut self) -> Result<()> {
        Ok(self.backend.dev_mut().flush()?)
    }

    pub(crate) fn counters(&self) -> &WriteCounters {
        &self.counters
    }

    /// For the caller's share of the counters (user bytes and why bytes were written).
    pub(crate) fn counters_mut(&mut self) -> &mut WriteCounters {
        &mut self.counters
    }

    /// The NoWA model of the device's write stream.
    pub(crate) fn stream(&self) -> &Groups {
        &self.stream
    }

    // ------------------------------------------------------------------ the page map

    /// Page ids the map holds.
    pub(crate) fn page_capacity(&self) -> u64 {
        self.map.len() as u64
    }

    /// Reads the current copy of page `pid` into `buf` (one aligned read of the slots holding
    /// it) and verifies it; a page never written reads as zeros. A page id beyond the map is
    /// `CorruptPage`: whoever asks for it took it from a corrupt page.
    pub(crate) fn read(&mut self, pid: PageId, buf: &mut [u8]) -> Result<()> {
        let Some(&loc) = self.map.get(pid as usize) else {
            return Err(Error::CorruptPage {
                pid,
                reason: "page id beyond the page capacity of the data device",
            });
        };
        if !loc.is_some() {
            buf.fill(0);
            return Ok(());
        }
        let dev = self.backend.dev_mut();
        let read = read_stored(
            |at, io| Ok(dev.read_at(at, io)?),
            loc.off,
            loc.len,
            pid,
            buf,
        );
        if read.1 > 0 {
            self.counters.page_reads += 1;
            self.counters.read_bytes += read.1;
        }
        read.0
    }

    /// The map as readers share it (see `shared.rs`).
    pub(crate) fn shared_map(&self) -> &std::sync::Arc<shared::SharedMap> {
        &self.shared
    }

    /// Page `pid`'s newest copy is (`true`) or is no longer the caller's staged one, which
    /// readers without the write path's mutex do not see (they ask the write path).
    pub(crate) fn mark_staged(&self, pid: PageId, staged: bool) {
        self.shared.stage(pid, staged);
    }

    /// Keeps `bytes`, page `pid`'s newly staged copy, where readers without the write path's
    /// mutex find it; before [`LogArea::mark_staged`] marks the page.
    pub(crate) fn keep_staged(&self, pid: PageId, bytes: &[u8]) {
        self.shared.keep_staged(pid, bytes);
    }

    /// Where the current copy of page `pid` is, for a read without the write path's mutex
    /// ([`LogArea::still_at`] after it); None if it was never written. A page id beyond the
    /// map is `CorruptPage`, as in [`LogArea::read`].
    pub(crate) fn locate(&self, pid: PageId) -> Result<Option<crate::writepath::Place>> {
        let Some(&loc) = self.map.get(pid as usize) else {
            return Err(Error::CorruptPage {
                pid,
                reason: "page id beyond the page capacity of the data device",
            });
        };
        Ok(loc.is_some().then(|| crate::writepath::Place {
            offset: loc.off,
            len: loc.len,
            epoch: self.shared.resets(self.layout.zone_of(loc.off)),
            home: false,
        }))
    }

    /// Whether `place` ([`LogArea::locate`] of `pid`) held the copy of `pid` ever since: the
    /// map still names it and its zone was not reset in between. A copy stays where it is until
    /// the page is written again or moved by GC, which change the map; it could only come back
    /// to the same bytes after its zone was reset and written again, which the reset count
    /// tells. Its slots are trimmed only after it died, so they held it throughout.
    pub(crate) fn still_at(&self, pid: PageId, place: &crate::writepath::Place) -> bool {
        let Some(loc) = self.map.get(pid as usize) else {
            return false;
        };
        loc.is_some()
            && loc.off == place.offset
            && loc.len == place.len
            && self.shared.resets(self.layout.zone_of(loc.off)) == place.epoch
    }

    // ------------------------------------------------------------------ zones

    pub(crate) fn zone(&self, z: u32) -> &Zone {
        &self.zones[z as usize]
    }

    /// Bytes zone `z` can still take.
    pub(crate) fn zone_room(&self, z: u32) -> u64 {
        self.zones[z as usize].room(self.layout.zone_bytes)
    }

    pub(crate) fn free_zones(&self) -> usize {
        self.free.len()
    }

    /// Full zones (candidates for GC), in zone order.
    pub(crate) fn full_zones(&self) -> impl Iterator<Item = (u32, &Zone)> {
        (0..self.layout.zone_count)
            .map(|z| (z, &self.zones[z as usize]))
            .filter(|(_, zone)| zone.state == ZoneState::Full)
    }

    /// Opens the free zone free longest, writing with placement id `piid`; None if no zone is
    /// free.
    pub(crate) fn open_zone(&mut self, piid: u16) -> Option<u32> {
        let z = self.free.pop_front()?;
        let zone = &mut self.zones[z as usize];
        zone.clear();
        zone.state = ZoneState::Open;
        zone.piid = piid;
        Some(z)
    }

    /// Closes zone `z`: it takes no more appends (a zoned device finishes it).
    pub(crate) fn close_zone(&mut self, z: u32) -> Result<()> {
        let start = self.layout.zone_start(z);
        let zone = &mut self.zones[z as usize];
        zone.state = ZoneState::Full;
        let wp = zone.wp;
        self.backend.finish_zone(start, wp)?;
        if self.zones[z as usize].valid_pages == 0 {
            self.dead.push(z);
        }
        Ok(())
    }

    /// The `Full` error: no free zone left, with what the zones hold.
    pub(crate) fn full_error(&self, open_zones: usize) -> Error {
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
            open_zones,
            self.free.len(),
            self.map.iter().filter(|l| l.is_some()).count(),
            valid
        ))
    }

    // ------------------------------------------------------------------ appending

    /// Appends `run` to open zone `z` as one write, packed by `plan` (`pack::plan_best_fit` of
    /// exactly these pages' lengths; it must fit the zone's room), and points the map at the new
    /// copies (not durable or logged yet). The zone's average EDT counts every copy's EDT
    /// (`note_all_edts`) or only those below [`MAX_EDT`] (copies whose deathtime is unknown do
    /// not pull it). Returns the stored bytes (without padding).
    pub(crate) fn append(
        &mut self,
        z: u32,
        run: &[StoredPage],
        plan: &Plan,
        note_all_edts: bool,
    ) -> Result<u64> {
        let fits = self.zones.get(z as usize).is_some_and(|zone| {
            zone.state == ZoneState::Open
                && (plan.slots * SLOT_BYTES) as u64 <= zone.room(self.layout.zone_bytes)
        });
        let pages_ok = run.iter().all(|p| p.pid < self.map.len() as u64);
        if !fits || !pages_ok || plan.places.len() != run.len() {
            return Err(Error::InvalidArgument(format!(
                "a run of {} pages in {} slots does not fit zone {z} (or names pages beyond \
                 the map)",
                run.len(),
                plan.slots
            )));
        }
        let slices: Vec<&[u8]> = run.iter().map(|i| i.bytes.as_slice()).collect();
        let (image, at) = pack::pack_planned(&slices, plan, SLOT_BYTES);
        let stored: u64 = run.iter().map(|i| i.bytes.len() as u64).sum();
        let base = self.layout.zone_start(z) + self.zones[z as usize].wp;
        let piid = self.zones[z as usize].piid;
        self.backend.append_run(base, &image, piid)?;
        let len = image.len() as u64;
        self.stream.write(Owner::Zone(z), len);
        self.counters.db_write_bytes += len;
        self.counters.padding_bytes += len - stored;
        self.zones[z as usize].wp += len;
        for (it, &o) in run.iter().zip(&at) {
            let off = base + o as u64;
            let len = it.bytes.len() as u32;
            self.relocate(it.pid, off, len, it.edt, note_all_edts);
            self.pending.push(MapChange {
                pid: it.pid,
                offset: off,
                len,
            });
        }
        Ok(stored)
    }

    /// Points page `pid` at its new copy and invalidates the old one.
    fn relocate(&mut self, pid: PageId, off: u64, len: u32, edt: u64, note_edt: bool) {
        self.invalidate(pid);
        let z = self.layout.zone_of(off);
        let zs = self.layout.zone_start(z);
        let zone = &mut self.zones[z as usize];
        zone.valid_bytes += len as u64;
        zone.valid_pages += 1;
        zone.rev.push(((off - zs) as u32, pid));
        if self.trims.enabled {
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
        self.set_loc(pid, Loc { off, len, edt });
        self.touch_zone(z);
    }

    /// The copy of `pid` the map names is dead (its zone's and slots' counts; the caller
    /// points the map at the new copy).
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
                    self.trims.unlogged.push(zs + (s * SLOT_BYTES) as u64);
                }
            }
        }
        if zone.valid_pages == 0 && zone.state == ZoneState::Full {
            self.dead.push(z);
        }
    }

    /// Page `pid`'s copy is `loc` now: the map, its shared copy and the snapshot's dirty
    /// blocks change together.
    fn set_loc(&mut self, pid: PageId, loc: Loc) {
        self.map[pid as usize] = loc;
        self.shared
            .set(pid, loc.is_some().then_some((loc.off, loc.len)));
        self.touch_page(pid);
    }

    /// The first live copies in zone `z`, in write order, up to about `max_bytes` of them (at
    /// least one, and no more than a read of four times that spans), from one read of the
    /// stretch they span (counted as GC reads): a slice of a collection.
    pub(crate) fn live_copies_upto(&mut self, z: u32, max_bytes: u64) -> Result<Vec<StoredPage>> {
        let start = self.layout.zone_start(z);
        let mut picked: Vec<(u32, PageId, Loc)> = Vec::new();
        let (mut bytes, mut lo, mut hi) = (0u64, u64::MAX, 0u64);
        for &(o, pid) in &self.zones[z as usize].rev {
            let loc = self.map[pid as usize];
            if loc.off != start + o as u64 {
                continue;
            }
            let (new_lo, new_hi) = (lo.min(o as u64), hi.max(o as u64 + loc.len as u64));
            if !picked.is_empty() && (bytes >= max_bytes || new_hi - new_lo > 4 * max_bytes) {
                break;
            }
            (lo, hi) = (new_lo, new_hi);
            bytes += loc.len as u64;
            picked.push((o, pid, loc));
        }
        if picked.is_empty() {
            return Ok(Vec::new());
        }
        // Whole slots (packed pages start and end inside them; a device block divides a slot).
        let slot = SLOT_BYTES as u64;
        let (lo, hi) = (lo / slot * slot, hi.div_ceil(slot) * slot);
        let mut buf = vec![0u8; (hi - lo) as usize];
        self.backend.dev_mut().read_at(start + lo, &mut buf)?;
        self.counters.gc_read_bytes += hi - lo;
        Ok(picked
            .into_iter()
            .map(|(o, pid, loc)| {
                let at = (o as u64 - lo) as usize;
                StoredPage {
                    pid,
                    bytes: buf[at..at + loc.len as usize].to_vec(),
                    edt: loc.edt,
                    lsn: 0,
                }
            })
            .collect())
    }

    /// The live copies in zone `z`, in write order, with the EDT each was placed with (one read
    /// of the zone's written bytes, counted as GC reads).
    pub(crate) fn live_copies(&mut self, z: u32) -> Result<Vec<StoredPage>> {
        let zone = &self.zones[z as usize];
        let len = zone.wp as usize;
        if zone.valid_pages == 0 || len == 0 {
            return Ok(Vec::new());
        }
        let start = self.layout.zone_start(z);
        let mut buf = vec![0u8; len];
        self.backend.dev_mut().read_at(start, &mut buf)?;
        self.counters.gc_read_bytes += len as u64;
        let mut live = Vec::new();
        for &(o, pid) in &self.zones[z as usize].rev {
            let loc = self.map[pid as usize];
            if loc.off == start + o as u64 {
                live.push(StoredPage {
                    pid,
                    bytes: buf[o as usize..o as usize + loc.len as usize].to_vec(),
                    edt: loc.edt,
                    lsn: 0,
                });
            }
        }
        Ok(live)
    }
}
