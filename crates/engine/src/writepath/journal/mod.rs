//! The journal write path (paper 004, Check-In): pages have fixed homes, as in place, but a page
//! write is appended to a journal area instead; a journal mapping table (JMT: page id -> newest
//! journal image) serves reads of journaled pages, and each checkpoint moves the newest image of
//! every journaled page home, then empties the journal. How it moves them is the paper's ladder
//! ([`HomeMethod`]): the host reads and writes them (baseline), the device copies them (ISC-A one
//! range a command, ISC-B a batch a command), or the device remaps them, sharing the journal's
//! flash with the home (ISC-C; with sector-aligned journaling, Check-In).
//!
//! Old images are never overwritten before a checkpoint is complete, so, like the doublewrite
//! buffer in place, the journal makes home writes safe against tearing: a power cut during a
//! checkpoint leaves the previous checkpoint and the journal it names intact.
//!
//! Where images are, the log says: before anything moves home the write path logs the images'
//! locations (the records out-of-place writes use) and forces them, and recovery rebuilds the
//! JMT from the location records after the last checkpoint. Besides the engine's checkpoints,
//! the journal has its own (paper 004's): once it is filled beyond `checkpoint_fill`, its
//! images move home, a record per page says so, and it starts again. That runs as background
//! work ([`WritePath::maintain`], from `Db::maintenance`), beside the foreground; a write
//! runs it itself only when the journal is filled halfway from there to full (no background
//! work runs, or it fell behind). Old entries of a page stay in the journal but are out of
//! the JMT (Algorithm 1's OLD flag): a checkpoint moves only the newest.
//!
//! Data device layout (docs/format.md): a header block at 0 (magic `WAFERJN1`), the journal area
//! from `page_size`, then the homes, one page each.

mod append;
mod entry;
mod home;
mod places;
mod reader;
mod ring;
#[cfg(test)]
mod tests;

use self::entry::Format;
use super::{LogSink, WriteCounters, WritePath, WriteReason};
use crate::device::{BlockDevice, DeviceStats};
use crate::error::{Error, Result};
use crate::health::Health;
use crate::identity::{DataStamp, Stamp};
use crate::page::{self, get_u32, get_u64, put_u32, put_u64, Lsn, PageId};
use crate::wal::record::MapChange;
use serde::{Deserialize, Serialize};

const MAGIC: &[u8; 8] = b"WAFERJN1";
const FORMAT_VERSION: u32 = 1;
/// Offset of the header's CRC32C (of the bytes before it).
const HEADER_CRC_AT: usize = 72;

/// How a checkpoint moves journaled images home (paper 004's ladder, section IV.A).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HomeMethod {
    /// The host reads each image and writes it home (the baseline).
    Host,
    /// One in-device copy command per image (ISC-A).
    IscA,
    /// One in-device copy command for all of a checkpoint's images (ISC-B).
    IscB,
    /// One remap command for all images: the home shares the journal's flash where the image is
    /// aligned to the mapping unit, the device copies the rest (ISC-C).
    IscC,
    /// ISC-C with sector-aligned journaling: images compressed and sized to the mapping unit
    /// (Algorithm 2), so nearly all are remapped (Check-In).
    CheckIn,
}

impl HomeMethod {
    /// The ladder, in the paper's order.
    pub const ALL: [HomeMethod; 5] = [
        HomeMethod::Host,
        HomeMethod::IscA,
        HomeMethod::IscB,
        HomeMethod::IscC,
        HomeMethod::CheckIn,
    ];

    /// The name used by presets and reports.
    pub fn name(self) -> &'static str {
        match self {
            HomeMethod::Host => "baseline",
            HomeMethod::IscA => "isc-a",
            HomeMethod::IscB => "isc-b",
            HomeMethod::IscC => "isc-c",
            HomeMethod::CheckIn => "check-in",
        }
    }

    fn code(self) -> u32 {
        self as u32
    }

    fn from_code(c: u32) -> Option<HomeMethod> {
        HomeMethod::ALL.into_iter().find(|m| m.code() == c)
    }

    fn format(self) -> Format {
        match self {
            HomeMethod::CheckIn => Format::SectorAligned,
            _ => Format::Conventional,
        }
    }
}

/// Settings of the journal write path. Fixed when the database is created, except
/// `checkpoint_fill`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalConfig {
    /// How checkpoints move images home.
    pub method: HomeMethod,
    /// Bytes of the journal area (a multiple of the page size); 0: a sixteenth of the device.
    #[serde(default)]
    pub journal_bytes: u64,
    /// The journal is checkpointed (its newest images moved home, then it is emptied) by the
    /// background work (`Db::maintenance`) once it is filled beyond this fraction (the paper:
    /// 2 GB of journal or 60 s, whichever comes first; the engine's own checkpoints, by log
    /// space or `checkpoint_interval_ms`, move it home too); a write that would fill it beyond
    /// halfway from this fraction to full checkpoints it first itself.
    #[serde(default = "default_fill")]
    pub checkpoint_fill: f64,
}

fn default_fill() -> f64 {
    0.5
}

impl JournalConfig {
    /// A journal of a sixteenth of the device, checkpointed half full, with `method`.
    pub fn new(method: HomeMethod) -> JournalConfig {
        JournalConfig {
            method,
            journal_bytes: 0,
            checkpoint_fill: default_fill(),
        }
    }

    pub fn validate(&self) -> Result<()> {
        if !(0.05..=0.9).contains(&self.checkpoint_fill) {
            return Err(Error::Config(
                "journal.checkpoint_fill must be in [0.05, 0.9]".into(),
            ));
        }
        Ok(())
    }
}

/// Counters of the journal path beyond [`WriteCounters`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalStats {
    /// Images appended to the journal.
    pub images: u64,
    /// Images that were no longer the newest of their page when a checkpoint came (Algorithm 1's
    /// OLD entries: not moved home).
    pub superseded: u64,
    /// Checkpoints that moved images home (the engine's and the journal's own), and the images
    /// they moved.
    pub checkpoints: u64,
    /// Of them, the journal's own (it was filling), between the engine's; with several
    /// threads, each slice counts as one.
    pub journal_checkpoints: u64,
    /// Of those slices, the ones an append past the foreground limit moved itself (flow
    /// control: [`Journal::make_room`]).
    #[serde(default)]
    pub foreground_slices: u64,
    pub images_moved: u64,
    /// Images stored merged into a shared mapping unit (Check-In's PARTIAL ones).
    pub images_merged: u64,
    /// Bytes the host read and wrote to move images home (the baseline).
    pub host_move_bytes: u64,
    /// Copy commands and their ranges (ISC-A, ISC-B); remap commands and their ranges.
    pub copy_commands: u64,
    pub copy_ranges: u64,
    pub remap_commands: u64,
    pub remap_ranges: u64,
    /// Bytes of images moved home by device commands.
    pub device_move_bytes: u64,
    /// The most journal bytes in use at once.
    pub peak_journal_bytes: u64,
}

impl JournalStats {
    /// The counts since `earlier` (the peak stays this one's).
    pub fn since(&self, earlier: &JournalStats) -> JournalStats {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        JournalStats {
            images: d(self.images, earlier.images),
            superseded: d(self.superseded, earlier.superseded),
            checkpoints: d(self.checkpoints, earlier.checkpoints),
            journal_checkpoints: d(self.journal_checkpoints, earlier.journal_checkpoints),
            foreground_slices: d(self.foreground_slices, earlier.foreground_slices),
            images_moved: d(self.images_moved, earlier.images_moved),
            images_merged: d(self.images_merged, earlier.images_merged),
            host_move_bytes: d(self.host_move_bytes, earlier.host_move_bytes),
            copy_commands: d(self.copy_commands, earlier.copy_commands),
            copy_ranges: d(self.copy_ranges, earlier.copy_ranges),
            remap_commands: d(self.remap_commands, earlier.remap_commands),
            remap_ranges: d(self.remap_ranges, earlier.remap_ranges),
            device_move_bytes: d(self.device_move_bytes, earlier.device_move_bytes),
            peak_journal_bytes: self.peak_journal_bytes,
        }
    }
}

/// Where a journaled image is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Image {
    /// Byte offset on the device.
    offset: u64,
    /// Stored bytes (the page size: raw).
    len: u32,
    /// Bytes it occupies (a whole number of sectors).
    span: u32,
}

/// The journal write path.
pub struct Journal {
    dev: Box<dyn BlockDevice>,
    cfg: JournalConfig,
    page_size: u32,
    /// Device block (sector) and mapping unit.
    sector: u32,
    unit: u32,
    journal_start: u64,
    journal_bytes: u64,
    /// Where appends go and the live part starts, relative to `journal_start` (appends on a
    /// mapping-unit boundary; `ring.rs`).
    ring: ring::Ring,
    /// The journal's own checkpoint is under way in slices (several threads: `home.rs`) and
    /// goes on until the journal is back to half its threshold.
    draining: bool,
    /// Images a slice moves at most ([`home::SLICE_IMAGES`]; tests make it smaller).
    slice_images: usize,
    /// The journal's own checkpoint goes in slices (several threads: set by the first
    /// [`WritePath::maintain_beside`]); appends past the foreground limit then move slices
    /// home themselves ([`Journal::make_room`]).
    sliced: bool,
    /// During recovery: the order of the location records met.
    replayed: Option<ring::Replayed>,
    /// The journal map and the count of times the journal was emptied, shared with the page
    /// reader (`places.rs`).
    dir: places::Directory,
    /// Locations written since the last `sync`, logged by it.
    unlogged: Vec<MapChange>,
    /// Images moved home by `checkpoint`; the journal empties when the checkpoint is complete.
    moved: bool,
    counters: WriteCounters,
    stats: JournalStats,
    health: Health,
    stamp: Stamp,
}

impl Journal {
    /// Whether `b` (the first block of a data device) is this write path's header.
    pub fn recognizes(b: &[u8]) -> bool {
        b.len() >= 8 && &b[..8] == MAGIC
    }

    fn with(
        dev: Box<dyn BlockDevice>,
        cfg: JournalConfig,
        page_size: u32,
        journal_bytes: u64,
    ) -> Result<Journal> {
        let sector = dev.block_bytes();
        let unit = dev.capabilities().mapping_unit_bytes.max(sector);
        if !(page_size as u64).is_multiple_of(sector as u64)
            || !(page_size as u64).is_multiple_of(unit as u64)
        {
            return Err(Error::Config(format!(
                "the journal write path needs the data device's block ({sector}) and mapping \
                 unit ({unit}) to divide the page size {page_size}"
            )));
        }
        let caps = dev.capabilities();
        let needs = match cfg.method {
            HomeMethod::Host => None,
            HomeMethod::IscA | HomeMethod::IscB => (!caps.copy).then_some("copy commands"),
            HomeMethod::IscC | HomeMethod::CheckIn => (!caps.remap).then_some("remap commands"),
        };
        if let Some(what) = needs {
            return Err(Error::Config(format!(
                "journal method {} needs a data device with {what}",
                cfg.method.name()
            )));
        }
        let start = (page_size as u64).saturating_add(journal_bytes);
        let homes = places::Homes {
            start,
            page_size,
            pages: dev.capacity_bytes().saturating_sub(start) / page_size as u64,
        };
        Ok(Journal {
            dev,
            page_size,
            sector,
            unit,
            journal_start: page_size as u64,
            journal_bytes,
            ring: ring::Ring::new(journal_bytes),
            draining: false,
            slice_images: home::SLICE_IMAGES,
            sliced: false,
            replayed: None,
            dir: places::Directory::new(homes),
            unlogged: Vec::new(),
            moved: false,
            counters: WriteCounters::default(),
            stats: JournalStats::default(),
            health: Health::new(),
            stamp: Stamp::default(),
            cfg,
        })
    }

    /// Formats a new data device.
    pub fn create(
        dev: Box<dyn BlockDevice>,
        page_size: u32,
        cfg: JournalConfig,
    ) -> Result<Journal> {
        cfg.validate()?;
        let cap = dev.capacity_bytes();
        let ps = page_size as u64;
        let journal_bytes = if cfg.journal_bytes == 0 {
            (cap / 16 / ps) * ps
        } else {
            cfg.journal_bytes
        };
        let fill_bytes = (cfg.checkpoint_fill * journal_bytes as f64) as u64;
        if !journal_bytes.is_multiple_of(ps) || journal_bytes < 16 * ps || fill_bytes < 4 * ps {
            return Err(Error::Config(format!(
                "journal.journal_bytes {journal_bytes} must be a multiple of the page size, at \
                 least 16 pages, and with journal.checkpoint_fill {} hold 4 pages before it \
                 checkpoints",
                cfg.checkpoint_fill
            )));
        }
        if cap < ps + journal_bytes + 16 * ps {
            return Err(Error::Config(format!(
                "data device of {cap} bytes is too small for a journal of {journal_bytes} bytes"
            )));
        }
        let mut wp = Journal::with(dev, cfg, page_size, journal_bytes)?;
        // As in place: nothing of an earlier database may survive (stale pages could carry LSNs
        // above the new log's). The header is written by the first checkpoint.
        wp.dev.write_at(0, &vec![0u8; page_size as usize])?;
        let from = wp.journal_start;
        wp.clear(from, cap - from)?;
        wp.dev.flush()?;
        Ok(wp)
    }

    /// Opens a formatted data device.
    pub fn open(mut dev: Box<dyn BlockDevice>, cfg: JournalConfig) -> Result<Journal> {
        cfg.validate()?;
        let mut first = vec![0u8; (dev.block_bytes() as usize).max(512)];
        if dev.capacity_bytes() < first.len() as u64 {
            return Err(Error::NotADatabase(
                "data device is smaller than a header".into(),
            ));
        }
        dev.read_at(0, &mut first)?;
        if !Journal::recognizes(&first) {
            return Err(Error::NotADatabase(
                "data device has no journal header (wrong magic)".into(),
            ));
        }
        if crc32c::crc32c(&first[..HEADER_CRC_AT]) != get_u32(&first, HEADER_CRC_AT) {
            return Err(Error::NotADatabase(
                "data device header checksum mismatch".into(),
            ));
        }
        let version = get_u32(&first, 8);
        if version != FORMAT_VERSION {
            return Err(Error::NotADatabase(format!(
                "journal format version {version}, this build reads {FORMAT_VERSION}"
            )));
        }
        let page_size = get_u32(&first, 12);
        let journal_bytes = get_u64(&first, 16);
        let method = HomeMethod::from_code(get_u32(&first, 24)).ok_or_else(|| {
            Error::NotADatabase(format!(
                "unknown journal method {} in header",
                get_u32(&first, 24)
            ))
        })?;
        if method != cfg.method {
            return Err(Error::Config(format!(
                "the database journals with method {} and the configuration asks for {}",
                method.name(),
                cfg.method.name()
            )));
        }
        if !page_size.is_power_of_two() || page_size < 1024 || journal_bytes == 0 {
            return Err(Error::NotADatabase(format!(
                "bad page size {page_size} or journal size {journal_bytes} in header"
            )));
        }
        let cap = dev.capacity_bytes();
        if journal_bytes >= cap.saturating_sub(page_size as u64) {
            return Err(Error::NotADatabase(format!(
                "the header's journal of {journal_bytes} bytes does not fit the data device of \
                 {cap} bytes"
            )));
        }
        let mut id = [0u8; 16];
        id.copy_from_slice(&first[28..44]);
        let stamp = Stamp {
            id: u128::from_le_bytes(id),
            generation: get_u64(&first, 44),
            checkpoint_lsn: get_u64(&first, 52),
        };
        let mut wp = Journal::with(dev, cfg, page_size, journal_bytes)?;
        wp.stamp = stamp;
        Ok(wp)
    }

    /// The page size the device was formatted with.
    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    fn home(&self, pid: PageId) -> u64 {
        self.dir.homes().home(pid)
    }

    /// Zeroes a byte range: a trim where trimmed blocks read as zeros, else writes.
    fn clear(&mut self, offset: u64, len: u64) -> Result<()> {
        super::zero_range(self.dev.as_mut(), offset, len)
    }

    fn write_header(&mut self, stamp: &Stamp) -> Result<()> {
        let block = (self.dev.block_bytes() as usize).max(HEADER_CRC_AT + 4);
        let mut hdr = vec![0u8; block.min(self.page_size as usize)];
        hdr[..8].copy_from_slice(MAGIC);
        put_u32(&mut hdr, 8, FORMAT_VERSION);
        put_u32(&mut hdr, 12, self.page_size);
        put_u64(&mut hdr, 16, self.journal_bytes);
        put_u32(&mut hdr, 24, self.cfg.method.code());
        hdr[28..44].copy_from_slice(&stamp.id.to_le_bytes());
        put_u64(&mut hdr, 44, stamp.generation);
        put_u64(&mut hdr, 52, stamp.checkpoint_lsn);
        let c = crc32c::crc32c(&hdr[..HEADER_CRC_AT]);
        put_u32(&mut hdr, HEADER_CRC_AT, c);
        self.dev.write_at(0, &hdr)?;
        self.dev.flush()?;
        self.counters.db_write_bytes += hdr.len() as u64;
        self.counters.metadata_bytes += hdr.len() as u64;
        self.stamp = *stamp;
        Ok(())
    }

    fn note<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(Error::Device(e)) = &r {
            self.health
                .poison_with(|| format!("data device failed earlier: {e}"));
        }
        r
    }

    /// Reads the image at `img` of page `pid` into `buf` (the page).
    fn read_image(&mut self, pid: PageId, img: Image, buf: &mut [u8]) -> Result<()> {
        let dev = &mut self.dev;
        let (r, read) = reader::read_image(
            |at, io| Ok(dev.read_at(at, io)?),
            self.sector,
            pid,
            img.offset,
            img.len,
            buf,
        );
        self.counters.read_bytes += read;
        r
    }

    /// Reads page `pid` from its home: a raw page, a blob (a Check-In image remapped home), or
    /// zeros (never written).
    fn read_home(&mut self, pid: PageId, buf: &mut [u8]) -> Result<()> {
        let at = self.home(pid);
        let dev = &mut self.dev;
        let (r, read) = reader::read_home(|io| Ok(dev.read_at(at, io)?), pid, buf);
        self.counters.read_bytes += read;
        r
    }
}

impl WritePath for Journal {
    fn share_health(&mut self, health: Health) {
        self.health.join(health);
    }

    fn read_page(&mut self, pid: PageId, buf: &mut [u8]) -> Result<()> {
        self.health.check()?;
        if pid >= self.page_capacity() {
            return Err(Error::CorruptPage {
                pid,
                reason: "page id beyond the data device",
            });
        }
        self.counters.page_reads += 1;
        let img = self.dir.read().jmt.get(&pid).copied();
        let r = match img {
            Some(img) => self.read_image(pid, img, buf),
            None => self.read_home(pid, buf),
        };
        self.note(r)
    }

    fn page_reader(&self) -> Option<std::sync::Arc<dyn super::PageReader>> {
        Some(std::sync::Arc::new(reader::JournalReader::new(
            self.dev.shared_reader()?,
            self.sector,
            self.dir.clone(),
        )))
    }

    fn locate(&mut self, pid: PageId, _buf: &mut [u8]) -> Result<super::Located> {
        self.health.check()?;
        Ok(super::Located::At(self.dir.locate(pid)?))
    }

    /// A journal image stays where it is until the journal is emptied; a page is not written
    /// (and so neither enters the journal map nor has its home rewritten) while it is read.
    fn confirm(&self, pid: PageId, place: &super::Place) -> bool {
        self.dir.confirm(pid, place)
    }

    fn write_pages(
        &mut self,
        pages: &[(PageId, &[u8])],
        reason: WriteReason,
        log: &mut dyn LogSink,
    ) -> Result<()> {
        self.health.check()?;
        debug_assert!(
            pages
                .iter()
                .all(|(_, p)| page::page_lsn(p) == 0 || page::page_lsn(p) < log.durable_lsn()),
            "write-ahead rule: a page is newer than the durable log"
        );
        if let Some((pid, _)) = pages.iter().find(|(pid, _)| *pid >= self.page_capacity()) {
            return Err(Error::Full(format!(
                "page {pid} is beyond the {} pages the data device holds",
                self.page_capacity()
            )));
        }
        // A batch larger than the journal's checkpoint threshold goes in pieces, the journal
        // checkpointing itself between them (a checkpoint may write more pages than fit).
        let entry = (self.page_size + self.sector.max(self.unit)) as u64;
        let limit = (self.cfg.checkpoint_fill * self.journal_bytes as f64) as u64;
        let per = ((limit / entry) as usize).max(1);
        for chunk in pages.chunks(per) {
            let r = self.write_batch(chunk, reason, log);
            self.note(r)?;
        }
        Ok(())
    }

    fn maintenance_due(&self) -> bool {
        self.draining || self.ring.used() > self.background_limit()
    }

    /// The journal's own checkpoint, once it is filled beyond `checkpoint_fill`.
    fn maintain(&mut self, log: &mut dyn LogSink) -> Result<bool> {
        self.health.check()?;
        if self.ring.used() <= self.background_limit() {
            return Ok(false);
        }
        let r = self.journal_checkpoint(log);
        self.note(r)?;
        Ok(true)
    }

    /// The journal's own checkpoint with other threads beside it: a slice of the oldest images
    /// a step (`home.rs`).
    fn maintain_beside(&mut self, log: &mut dyn LogSink) -> Result<bool> {
        self.health.check()?;
        self.sliced = true;
        let r = self.journal_slice(log);
        self.note(r)
    }

    fn sync(&mut self, log: &mut dyn LogSink) -> Result<()> {
        self.health.check()?;
        let r = self.dev.flush().map_err(Error::from);
        self.note(r)?;
        // The images are durable: their locations may be logged (recovery trusts a location
        // record only for an image that is on the device). They are forced too: the checkpoint
        // that follows rewrites homes, and until it is complete a power cut must find every
        // page it moves through the journal map, never in a home half rewritten.
        self.log_locations(log)
    }

    fn checkpoint(&mut self, _tag: Lsn, _generation: u64, _durable: Lsn) -> Result<()> {
        self.health.check()?;
        debug_assert!(self.unlogged.is_empty(), "sync comes before checkpoint");
        let r = self.move_home();
        self.note(r)?;
        self.moved = true;
        Ok(())
    }

    fn checkpoint_done(&mut self) {
        if !self.moved {
            return;
        }
        self.moved = false;
        // The checkpoint that names the homes is complete: the journal is empty from now on.
        let r = self.empty_journal();
        let _ = self.note(r);
    }

    fn set_stamp(&mut self, stamp: &Stamp) -> Result<()> {
        self.health.check()?;
        let r = self.write_header(stamp);
        self.note(r)
    }

    fn stamp(&self) -> DataStamp {
        DataStamp {
            stamp: self.stamp,
            ..DataStamp::default()
        }
    }

    fn recover_begin(&mut self, _checkpoint_lsn: Lsn) -> Result<()> {
        // The journal as the last checkpoint left it: empty; the location records after it
        // rebuild the JMT. Recovery runs before any miss, but a place found before it would not
        // be confirmed after it either: the count of emptyings moves with the clearing.
        {
            let mut places = self.dir.write();
            places.jmt.clear();
            places.emptied += 1;
        }
        self.unlogged.clear();
        self.ring.reset();
        self.draining = false;
        self.replayed = Some(ring::Replayed::default());
        Ok(())
    }

    fn redo_map(&mut self, _lsn: Lsn, changes: &[MapChange]) -> Result<()> {
        for c in changes {
            if c.pid >= self.page_capacity() {
                return Err(Error::CorruptMetadata(format!(
                    "a journal location record names page {} beyond the device",
                    c.pid
                )));
            }
            if c.offset == self.home(c.pid) && c.len == self.page_size {
                // A journal checkpoint moved the page home.
                self.dir.write().jmt.remove(&c.pid);
                if let Some(r) = &mut self.replayed {
                    r.homed(c.pid);
                }
                continue;
            }
            let start = self.journal_start;
            let inside = c.offset >= start
                && c.offset + c.len as u64 <= start + self.journal_bytes
                && c.len > 0
                && c.len <= self.page_size;
            if !inside {
                return Err(Error::CorruptMetadata(format!(
                    "a journal location record names page {} at {}+{}, outside the journal",
                    c.pid, c.offset, c.len
                )));
            }
            let span = if c.len == self.page_size {
                c.len
            } else {
                entry::sized(c.len as usize, self.unit as usize, self.sector as usize).0 as u32
            };
            if let Some(r) = &mut self.replayed {
                r.placed(c.pid);
            }
            self.dir.write().jmt.insert(
                c.pid,
                Image {
                    offset: c.offset,
                    len: c.len,
                    span,
                },
            );
        }
        Ok(())
    }

    fn recover_end(&mut self) -> Result<()> {
        // Appends continue after the newest image the map still names (images after it are
        // superseded or were never logged), the live part from the oldest (`ring.rs`).
        let start = self.journal_start;
        let replayed = self.replayed.take().unwrap_or_default();
        self.ring = replayed.ring(self.journal_bytes, &self.dir.read().jmt, start, |i| {
            self.next_batch_at(i.offset - start + i.span as u64)
        });
        Ok(())
    }

    fn kind(&self) -> &'static str {
        "journal"
    }

    fn page_capacity(&self) -> u64 {
        self.dir.homes().pages
    }

    fn counters(&self) -> &WriteCounters {
        &self.counters
    }

    fn journal_stats(&self) -> Option<JournalStats> {
        Some(self.stats.clone())
    }

    fn device_stats(&self) -> DeviceStats {
        self.dev.stats()
    }
}
