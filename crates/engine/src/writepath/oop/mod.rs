//! Out-of-place writes (paper 002, "How to Write to SSDs"): every page write goes to a new place,
//! appended to an open *zone* (the DB GC unit), so the device sees large sequential writes and no
//! doublewrite buffer is needed (the old copy stays valid until the new one is durable and its
//! location is logged). The pieces, each a knob of [`OopConfig`]:
//!
//! * **Log-structured area** ([`area`]): the mechanism without the policies: zones, the page
//!   map (page id -> offset, stored length), packed appends, location logging, reclaiming after
//!   the log force, snapshots and recovery, and the device behind a [`area::backend::ZoneBackend`]
//!   (conventional, FDP or ZNS: zone append, reset, finish; placement ids).
//! * **Batches** ([`stage`]): written pages are staged and written `batch_pages` at a time, each
//!   zone's share as one sequential write; reads of staged pages are served from the stage.
//! * **Compression and 4 KiB packing** (section 3, `pack`): each page compressed on its own
//!   (LZ4 or zstd), blobs placed into 4 KiB slots by best fit, never across a slot boundary; a
//!   page that does not compress is stored raw.
//! * **Placement and grouping by deathtime (GDT)** ([`placement`], section 4.2): EDT = current
//!   LSN + mean interval of the page's last writes (its header keeps them; GC copies do not change
//!   them); first writes use the mean interval seen for pages of the same type; each page goes
//!   to the open zone whose average EDT is closest (a fresh zone takes pages no open zone is
//!   close to); without GDT, one random open zone per batch.
//! * **DB garbage collection** ([`gc`], section 4): when free zones run low (in the foreground
//!   before a write, in the background from `maintain`), greedy victims are taken until their
//!   invalid bytes free one zone; their valid pages are copied (still compressed, coldest first
//!   with GDT) and the victims trimmed or reset once the new locations are durable in the log.
//! * **Aligned GC unit and NoWA** (sections 5.3-5.4, [`area::nowa`], [`gc`]): zone size x open
//!   zones = the device GC unit; new zones open only when every open zone is full; the model of
//!   which device GC units hold live data triggers compensation writes before the SSD would
//!   have to copy.
//!
//! Device layout ([`layout`], docs/format.md): a header block at offset 0, two snapshot slots,
//! then the zones. On a zoned device the header and each slot occupy whole zones.

pub(crate) mod area;
mod config;
mod gc;
mod layout;
mod placement;
mod reader;
mod stage;

pub use self::config::OopConfig;
pub use self::layout::{is_oop_header, OopLayout};

use self::area::backend::{self, ZoneRequest};
use self::area::LogArea;
use self::placement::Placement;
use self::stage::Stage;
use super::pack::SLOT_BYTES;
use super::{LogSink, WriteCounters, WritePath, WriteReason};
use crate::device::{BlockDevice, DeviceStats};
use crate::error::{Error, Result};
use crate::health::Health;
use crate::page::{Lsn, PageId};
use crate::wal::record::MapChange;

/// Open zones when the configuration says 0.
const DEFAULT_OPEN_ZONES: u32 = 16;
/// Zones a device needs beyond the open ones and the GC reserves (the GC zone, and room for GC
/// to make progress).
const SPARE_ZONES: u32 = 4;

/// The out-of-place write path: the log-structured area composed with the out-of-place policies
/// (batching, placement, GC, NoWA).
pub struct OutOfPlace {
    cfg: OopConfig,
    area: LogArea,
    placement: Placement,
    stage: Stage,
    /// The database's poison signal (shared once the database is open).
    health: Health,
    /// Live bytes a GC slice moves at most (`gc::SLICE_LIVE_BYTES`; tests make it smaller).
    slice_bytes: u64,
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
        if page_size == 0 {
            return Err(Error::Config("page size 0".into()));
        }
        let cap = dev.capacity_bytes();
        let backend = backend::detect(dev);
        let req = ZoneRequest {
            open_zones: if cfg.max_open_zones == 0 {
                DEFAULT_OPEN_ZONES
            } else {
                cfg.max_open_zones
            },
            aligned: cfg.aligned,
            zone_bytes: cfg.zone_bytes,
        };
        let geo = backend.zone_geometry(&req, page_size);
        layout::check_zone_bytes(geo.zone_bytes, page_size)?;
        let pid_upper = cap / page_size as u64;
        let zone_upper = cap / geo.zone_bytes;
        let snap_need = area::snapshot_bytes(pid_upper, zone_upper);
        let meta = backend.metadata_layout(snap_need, geo.zone_bytes);
        let reserve = cfg.gc_reserve_zones + cfg.gc_background_zones + SPARE_ZONES;
        let layout = OopLayout::plan(
            page_size,
            cap,
            geo,
            meta,
            backend.zoned(),
            reserve,
            pid_upper,
        )?;
        let area = LogArea::format(backend, layout, cfg.trim_slots)?;
        Ok(OutOfPlace::with(cfg, area))
    }

    /// Opens a data device formatted by [`OutOfPlace::create`]. The page map is loaded by
    /// recovery ([`WritePath::recover_begin`] .. [`WritePath::recover_end`]).
    pub fn open(dev: Box<dyn BlockDevice>, cfg: OopConfig) -> Result<OutOfPlace> {
        cfg.validate()?;
        let mut hdr = vec![0u8; SLOT_BYTES];
        let mut dev = dev;
        dev.read_at(0, &mut hdr)?;
        let layout = OopLayout::decode(&hdr)?;
        let backend = backend::for_layout(dev, &layout)?;
        layout.check_fits(backend.dev().capacity_bytes())?;
        let area = LogArea::open(backend, layout, cfg.trim_slots)?;
        Ok(OutOfPlace::with(cfg, area))
    }

    fn with(cfg: OopConfig, area: LogArea) -> OutOfPlace {
        OutOfPlace {
            placement: Placement::new(&cfg),
            cfg,
            area,
            stage: Stage::default(),
            health: Health::new(),
            slice_bytes: gc::SLICE_LIVE_BYTES,
        }
    }

    /// The layout on the device.
    pub fn layout(&self) -> &OopLayout {
        self.area.layout()
    }

    fn fail_check(&self) -> Result<()> {
        self.health.check()
    }

    /// Poisons the write path on a device error (the device may hold writes the map does not
    /// know about, or lack writes it does).
    fn note<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(Error::Device(e)) = &r {
            self.health
                .poison_with(|| format!("an earlier data device error: {e}"));
        }
        r
    }

    /// The zones agree with the page map, and the zones placement holds open are open.
    pub(crate) fn check_invariants(&self) -> std::result::Result<(), String> {
        self.area.check_consistency()?;
        let shared = self.area.shared_map();
        if shared.usable() {
            for pid in 0..self.area.page_capacity() {
                if shared.get(pid).1 != self.stage.get(pid).is_some() {
                    return Err(format!(
                        "page {pid}: the shared map's staged mark disagrees with the stage"
                    ));
                }
            }
        }
        self.placement.check(&self.area)
    }

    /// [`OutOfPlace::check_invariants`] in debug builds (after each GC round).
    fn debug_check_invariants(&self) {
        debug_assert_eq!(self.check_invariants(), Ok(()));
    }
}

impl WritePath for OutOfPlace {
    fn share_health(&mut self, health: Health) {
        self.health.join(health);
    }

    fn serve_held_pages(&mut self, on: bool) {
        self.area.shared_map().keep_copies(on);
    }

    fn read_page(&mut self, pid: PageId, buf: &mut [u8]) -> Result<()> {
        self.fail_check()?;
        if pid >= self.area.page_capacity() {
            // Not "full": a page id past the device comes from a corrupt page (a pointer).
            return Err(Error::CorruptPage {
                pid,
                reason: "page id beyond the page capacity of the data device",
            });
        }
        if self.read_staged(pid, buf)? {
            return Ok(());
        }
        let r = self.area.read(pid, buf);
        self.note(r)
    }

    fn page_reader(&self) -> Option<std::sync::Arc<dyn super::PageReader>> {
        Some(std::sync::Arc::new(reader::ZoneReader::new(
            self.area.backend().dev().shared_reader()?,
            self.area.shared_map().clone(),
            self.area.page_capacity(),
        )))
    }

    fn locate(&mut self, pid: PageId, buf: &mut [u8]) -> Result<super::Located> {
        self.fail_check()?;
        if self.read_staged(pid, buf)? {
            return Ok(super::Located::Served);
        }
        match self.area.locate(pid)? {
            Some(place) => Ok(super::Located::At(place)),
            None => {
                buf.fill(0);
                Ok(super::Located::Served)
            }
        }
    }

    fn confirm(&self, pid: PageId, place: &super::Place) -> bool {
        self.area.still_at(pid, place)
    }

    fn write_pages(
        &mut self,
        pages: &[(PageId, &[u8])],
        reason: WriteReason,
        log: &mut dyn LogSink,
    ) -> Result<()> {
        self.fail_check()?;
        self.stage_pages(pages, reason, log)
    }

    fn sync(&mut self, log: &mut dyn LogSink) -> Result<()> {
        self.fail_check()?;
        let r = self.flush_staged(log, true);
        self.note(r)?;
        let r = self.area.flush();
        self.note(r)
    }

    /// Garbage collection, compensation and slot trims: asked at every step (the default
    /// `maintenance_due`).
    fn maintain(&mut self, log: &mut dyn LogSink) -> Result<bool> {
        self.fail_check()?;
        self.maintain_space(log)
    }

    /// The same, garbage collection a slice of a victim's live pages a step (`gc.rs`).
    fn maintain_beside(&mut self, log: &mut dyn LogSink) -> Result<bool> {
        self.fail_check()?;
        self.maintain_space_beside(log)
    }

    fn checkpoint_done(&mut self) {
        self.area.snapshot_done();
    }

    fn checkpoint(&mut self, tag: Lsn, generation: u64, durable: Lsn) -> Result<()> {
        self.fail_check()?;
        debug_assert!(self.stage.is_empty() && !self.area.has_unlogged());
        let r = self.area.write_snapshot(tag, generation, durable);
        self.note(r)
    }

    fn set_stamp(&mut self, stamp: &crate::identity::Stamp) -> Result<()> {
        self.fail_check()?;
        if self.area.header_written() {
            // The snapshot written before the checkpoint record carries the generation.
            return Ok(());
        }
        let r = self.area.write_header(stamp.id);
        self.note(r)
    }

    fn stamp(&self) -> crate::identity::DataStamp {
        self.area.stamp()
    }

    fn discard_unfinished_checkpoint(&mut self) -> Result<()> {
        let r = self.area.discard_unfinished_snapshot();
        self.note(r)
    }

    fn recover_begin(&mut self, checkpoint_lsn: Lsn) -> Result<()> {
        self.area.recover_begin(checkpoint_lsn)
    }

    fn redo_map(&mut self, lsn: Lsn, changes: &[MapChange]) -> Result<()> {
        self.area.redo_map(lsn, changes)
    }

    fn recover_end(&mut self) -> Result<()> {
        self.placement.reset();
        self.area.recover_end()?;
        self.debug_check_invariants();
        Ok(())
    }

    fn system_log_reserve_bytes(&self, buffer_pages: usize) -> u64 {
        buffer_pages as u64 * 48 + (256 << 10)
    }

    fn cheap_checkpoint(&self) -> bool {
        false
    }
    fn kind(&self) -> &'static str {
        "out-of-place"
    }

    /// Page ids the engine may allocate. Uncompressed, only what fits in the zones that are
    /// neither open nor kept for GC, less one more zone: then some zone always holds a zone's
    /// worth of dead pages, so GC (and recovery's writes) always make progress and a device
    /// never fills so far that even recovery cannot write. Compressed pages are smaller, so
    /// with a codec every page id the map holds may be used; a device whose data does not
    /// compress enough then fails writes with `Full`.
    fn page_capacity(&self) -> u64 {
        let l = self.area.layout();
        if self.cfg.codec != crate::writepath::pack::Codec::None {
            return l.pages;
        }
        let keep =
            l.max_open + self.cfg.gc_reserve_zones + self.cfg.gc_background_zones + SPARE_ZONES + 1;
        let usable = l.zone_count.saturating_sub(keep) as u64;
        (usable * l.zone_bytes / l.page_size as u64).min(l.pages)
    }

    fn counters(&self) -> &WriteCounters {
        self.area.counters()
    }

    fn device_stats(&self) -> DeviceStats {
        self.area.device_stats()
    }
}

#[cfg(test)]
mod tests;
