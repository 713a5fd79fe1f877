//! The write path: how pages get to and from the data device. One trait, several strategies
//! (in-place with an optional doublewrite buffer today; out-of-place and journal + remap later).
//!
//! Counters follow DESIGN.md: *user writes* are pages written because of eviction or checkpointing,
//! counted uncompressed (one page each); *DB-issued writes* are every byte the engine writes to the
//! data device (user writes as stored, doublewrite copies, GC copies, padding).

pub mod factory;
mod inplace;
pub mod journal;
pub mod oop;
pub mod pack;

pub use factory::{Probe, WritePathConfig};
pub use inplace::InPlace;
pub use journal::{HomeMethod, Journal, JournalConfig, JournalStats};
pub use oop::{OopConfig, OutOfPlace};

use crate::error::Result;
use crate::page::{Lsn, PageId};
use crate::wal::record::MapChange;
use serde::{Deserialize, Serialize};

/// What a write path may ask of the log while it writes: the write-ahead rule (`force`), the
/// current end of the log (`next_lsn`, the clock of deathtime estimates), and logging page
/// location changes (out-of-place writes log them after the pages are durable and before the
/// old locations are reused).
pub trait LogSink {
    /// Makes the log durable up to and including the record at `lsn`.
    fn force(&mut self, lsn: Lsn) -> Result<()>;
    /// LSN the next record will get.
    fn next_lsn(&self) -> Lsn;
    /// Every record starting below this LSN is durable.
    fn durable_lsn(&self) -> Lsn;
    /// Appends a record of page location changes (not yet durable). Returns its LSN.
    fn log_map(&mut self, changes: &[MapChange]) -> Result<Lsn>;
}

impl LogSink for crate::wal::Wal {
    fn force(&mut self, lsn: Lsn) -> Result<()> {
        self.flush_to(lsn)
    }
    fn next_lsn(&self) -> Lsn {
        crate::wal::Wal::next_lsn(self)
    }
    fn durable_lsn(&self) -> Lsn {
        crate::wal::Wal::durable_lsn(self)
    }
    fn log_map(&mut self, changes: &[MapChange]) -> Result<Lsn> {
        self.append_system(&crate::wal::record::Body::Map(changes.to_vec()))
    }
}

/// The shared log as seen by a page write that runs with no latch held (a detached batch, a
/// dirty victim, the write path's background work): each call takes the log's latch for
/// itself, for one append or one look, and `force` flushes with it let go
/// ([`crate::wal::SharedWal::force`]), so other threads log and commit while the pages are at
/// the device. The caller holds the write path's mutex (which is why it may not hold the log
/// latch: that comes before the write path's mutex for every other thread) and a writer's
/// ticket (`engine/latch.rs`, `Writers`), which keeps every thread that might take the log
/// latch and then the write path's mutex (the core latch exclusive) waiting, holding nothing.
pub(crate) struct SharedLog<'a>(pub &'a crate::wal::SharedWal);

impl LogSink for SharedLog<'_> {
    fn force(&mut self, lsn: Lsn) -> Result<()> {
        self.0.force(lsn)
    }
    fn next_lsn(&self) -> Lsn {
        self.0.lock().next_lsn()
    }
    fn durable_lsn(&self) -> Lsn {
        self.0.lock().durable_lsn()
    }
    fn log_map(&mut self, changes: &[MapChange]) -> Result<Lsn> {
        self.0.lock().log_map(changes)
    }
}

/// The log as seen by a write path that writes pages while another thread may append to it
/// ([`WritePath::writes_log`] false): the durable and next LSNs as they were when the caller
/// let the log go. Forcing below the durable end is a no-op; anything else is refused.
pub(crate) struct DurableLog {
    durable: Lsn,
    next: Lsn,
}

impl DurableLog {
    pub fn of(log: &dyn LogSink) -> DurableLog {
        DurableLog {
            durable: log.durable_lsn(),
            next: log.next_lsn(),
        }
    }
}

impl LogSink for DurableLog {
    fn force(&mut self, lsn: Lsn) -> Result<()> {
        if lsn < self.durable {
            return Ok(());
        }
        Err(crate::error::Error::Poisoned(format!(
            "a page write asked for log record {lsn} without the log (durable below {})",
            self.durable
        )))
    }
    fn next_lsn(&self) -> Lsn {
        self.next
    }
    fn durable_lsn(&self) -> Lsn {
        self.durable
    }
    fn log_map(&mut self, _changes: &[MapChange]) -> Result<Lsn> {
        Err(crate::error::Error::Poisoned(
            "a page write asked to log page locations without the log".into(),
        ))
    }
}

#[cfg(test)]
/// A log kept in memory, for exercising a write path without a database: location records are
/// kept with their LSNs; `durable` is what `force` reached.
#[derive(Debug, Default)]
pub struct MemLog {
    pub next: Lsn,
    pub durable: Lsn,
    pub records: Vec<(Lsn, Vec<MapChange>)>,
}

#[cfg(test)]
impl LogSink for MemLog {
    fn force(&mut self, lsn: Lsn) -> Result<()> {
        self.durable = self.durable.max(lsn + 1);
        Ok(())
    }
    fn next_lsn(&self) -> Lsn {
        self.next
    }
    fn durable_lsn(&self) -> Lsn {
        self.durable
    }
    fn log_map(&mut self, changes: &[MapChange]) -> Result<Lsn> {
        let lsn = self.next;
        self.next += 1 + changes.len() as u64;
        self.records.push((lsn, changes.to_vec()));
        Ok(lsn)
    }
}

/// Zeroes `len` bytes of `dev` at `offset` (formatting a data device): a trim where the device
/// reads trimmed blocks as zeros, else writes of zeros.
pub(crate) fn zero_range(
    dev: &mut dyn crate::device::BlockDevice,
    offset: u64,
    len: u64,
) -> Result<()> {
    if dev.capabilities().trim {
        dev.trim(offset, len)?;
        let mut probe = vec![0u8; dev.block_bytes() as usize];
        dev.read_at(offset, &mut probe)?;
        if crate::page::is_zeroed(&probe) {
            return Ok(());
        }
    }
    let chunk = vec![0u8; 1 << 20];
    let mut at = offset;
    while at < offset + len {
        let n = (offset + len - at).min(chunk.len() as u64);
        dev.write_at(at, &chunk[..n as usize])?;
        at += n;
    }
    Ok(())
}

/// Why a page is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteReason {
    /// The buffer pool evicts a dirty page (or the page cleaner prepares a clean frame).
    Eviction,
    /// The checkpointer writes a page to advance the checkpoint.
    Checkpoint,
}

/// Counters of a write path. DB WAF = `db_write_bytes / user_write_bytes`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteCounters {
    /// Page-size bytes of pages written for eviction or checkpoint.
    pub user_write_bytes: u64,
    pub eviction_writes: u64,
    pub checkpoint_writes: u64,
    /// Every byte written to the data device.
    pub db_write_bytes: u64,
    /// Bytes of doublewrite copies.
    pub doublewrite_bytes: u64,
    /// Out-of-place writes: stored bytes of live pages copied by DB garbage collection, and by
    /// NoWA compensation writes (their padding is in `padding_bytes`). `db_write_bytes` =
    /// `stored_user_bytes + gc_write_bytes + compensation_bytes + padding_bytes +
    /// metadata_bytes` (+ `doublewrite_bytes` and whole pages in place).
    #[serde(default)]
    pub gc_write_bytes: u64,
    #[serde(default)]
    pub compensation_bytes: u64,
    /// Zero bytes written to fill 4 KiB slots (page packing), of user and GC writes alike.
    #[serde(default)]
    pub padding_bytes: u64,
    /// Bytes of mapping snapshots and the device header.
    #[serde(default)]
    pub metadata_bytes: u64,
    /// Stored bytes of user-written pages (after compression, before padding).
    #[serde(default)]
    pub stored_user_bytes: u64,
    /// Bytes read by DB garbage collection.
    #[serde(default)]
    pub gc_read_bytes: u64,
    /// DB GC rounds, zones reclaimed, NoWA compensation rounds.
    #[serde(default)]
    pub gc_rounds: u64,
    #[serde(default)]
    pub zones_reclaimed: u64,
    #[serde(default)]
    pub compensation_rounds: u64,
    /// Dead 4 KiB slots trimmed (out of place, conventional devices).
    #[serde(default)]
    pub slots_trimmed: u64,
    /// Pages read from the data device.
    pub page_reads: u64,
    pub read_bytes: u64,
    /// Torn or stale pages repaired from the doublewrite buffer at startup.
    pub pages_repaired: u64,
}

impl WriteCounters {
    /// DB write amplification (1.0 before any write).
    pub fn db_waf(&self) -> f64 {
        if self.user_write_bytes == 0 {
            1.0
        } else {
            self.db_write_bytes as f64 / self.user_write_bytes as f64
        }
    }
}

/// Reads of pages from any thread, beside each other and beside the write path's own work,
/// with no lock held across the device read ([`WritePath::page_reader`]).
///
/// Where a page's place is fixed (in place), [`PageReader::read_page`] reads it with no lock at
/// all. Where pages move (out of place, journaled: [`PageReader::moves`]), the place is looked
/// up first under the write path's mutex ([`WritePath::locate`]), read with the mutex let go
/// ([`PageReader::read_placed`]), and confirmed under it after ([`WritePath::confirm`]): the
/// place still holds the page and was not emptied and reused meanwhile, so the bytes read were
/// the page's. A read not confirmed is made again under the mutex.
pub trait PageReader: Send + Sync {
    /// Whether pages move: reads go through [`WritePath::locate`], [`PageReader::read_placed`]
    /// and [`WritePath::confirm`] instead of [`PageReader::read_page`].
    fn moves(&self) -> bool {
        false
    }
    /// Reads page `pid` into `buf` and verifies it, as [`WritePath::read_page`] does (but an
    /// error poisons nothing: the caller reads again through the write path, which reports
    /// it). The caller keeps the read apart from a write of the same page in flight. Only
    /// where pages do not move.
    fn read_page(&self, pid: PageId, buf: &mut [u8]) -> Result<()> {
        let _ = (pid, buf);
        Err(crate::error::Error::InvalidArgument(
            "internal: pages that move are read at the place the write path gives".into(),
        ))
    }
    /// Reads page `pid` from `place` (as [`WritePath::locate`] gave it) into `buf` and
    /// verifies it. Only where pages move; errors as [`PageReader::read_page`].
    fn read_placed(&self, pid: PageId, place: &Place, buf: &mut [u8]) -> Result<()> {
        let _ = (pid, place, buf);
        Err(crate::error::Error::InvalidArgument(
            "internal: this page reader reads pages at fixed places".into(),
        ))
    }
    /// Where pages move: whether this reader also looks their places up and confirms them
    /// itself ([`PageReader::locate`], [`PageReader::confirm`]), with no part of the write
    /// path's mutex, so a miss never waits for the write path's device I/O.
    fn locates(&self) -> bool {
        false
    }
    /// Where page `pid` is now, as [`WritePath::locate`] says; None: ask the write path (it
    /// holds the page in memory, or never wrote it). Only where [`PageReader::locates`].
    fn locate(&self, pid: PageId) -> Result<Option<Place>> {
        let _ = pid;
        Err(crate::error::Error::InvalidArgument(
            "internal: this page reader leaves places to the write path".into(),
        ))
    }
    /// Reads page `pid` from the write path's staged copy, kept where this reader sees it, into
    /// `buf`; false if there is none (not staged, or no longer: locate it again). Only where
    /// [`PageReader::locates`], after [`PageReader::locate`] said to ask the write path.
    fn read_staged(&self, pid: PageId, buf: &mut [u8]) -> Result<bool> {
        let _ = (pid, buf);
        Ok(false)
    }
    /// As [`WritePath::confirm`]. Only where [`PageReader::locates`].
    fn confirm(&self, pid: PageId, place: &Place) -> bool {
        let _ = (pid, place);
        false
    }
    /// Pages read so far and their bytes, to add to the write path's counters.
    fn reads(&self) -> (u64, u64);
}

/// Pages a [`PageReader`] read and their bytes (striped: readers on several cores).
#[derive(Default)]
pub(crate) struct ReadCount {
    pages: crate::sync::Striped,
    bytes: crate::sync::Striped,
}

impl ReadCount {
    /// A read of `bytes` (none: the device read failed, nothing is counted).
    pub fn note(&self, bytes: u64) {
        if bytes > 0 {
            self.pages.add(1);
            self.bytes.add(bytes);
        }
    }

    /// (pages, bytes) so far.
    pub fn get(&self) -> (u64, u64) {
        (self.pages.get(), self.bytes.get())
    }
}

/// Where a page that moves is stored, for a [`PageReader`] to read it without the write path's
/// mutex ([`WritePath::locate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// Byte offset of the stored page on the data device.
    pub offset: u64,
    /// Its stored bytes.
    pub len: u32,
    /// What the write path needs to tell, at [`WritePath::confirm`], whether the place was
    /// emptied since (out of place: the zone's reset count; journaled: the journal's).
    pub epoch: u64,
    /// Journaled: the page is read from its home (not from a journal image).
    pub home: bool,
}

/// What [`WritePath::locate`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Located {
    /// The page is in the caller's buffer already (a copy the write path holds in memory, or
    /// zeros: never written).
    Served,
    /// Read it there with the [`PageReader`], then [`WritePath::confirm`] it.
    At(Place),
}

/// A strategy for storing pages on the data device.
pub trait WritePath: Send + Sync {
    /// Reads page `pid` into `buf` and verifies it; a page never written reads as zeros (Ok).
    fn read_page(&mut self, pid: PageId, buf: &mut [u8]) -> Result<()>;
    /// Writes a batch of sealed pages. They are durable after the next `sync`. The log up to each
    /// page's LSN is already durable.
    fn write_pages(
        &mut self,
        pages: &[(PageId, &[u8])],
        reason: WriteReason,
        log: &mut dyn LogSink,
    ) -> Result<()>;
    /// Makes every page written so far durable (and, out of place, logs their new locations).
    fn sync(&mut self, log: &mut dyn LogSink) -> Result<()>;
    /// Background work (out of place: garbage collection when free space runs low). Returns true
    /// if it did something.
    fn maintain(&mut self, _log: &mut dyn LogSink) -> Result<bool> {
        Ok(false)
    }
    /// [`WritePath::maintain`] with other threads running beside it: work that can go in
    /// short steps goes one step at a time (out of place: garbage collection, a slice of a
    /// victim's live pages a step), so that the write path (and the ticket of the thread that
    /// runs it, which every operation that needs the core latch exclusive waits for) is held
    /// for a short while each time. Returns whether to step again at once. The default does it
    /// all in one go.
    fn maintain_beside(&mut self, log: &mut dyn LogSink) -> Result<bool> {
        self.maintain(log).map(|_| false)
    }
    /// Whether [`WritePath::maintain`] may have something to do now (a cheap look, no I/O;
    /// when in doubt, true: a path that leaves it so is asked at every step).
    fn maintenance_due(&self) -> bool {
        true
    }
    /// Called by a checkpoint after `sync` and before its record is logged at `tag` (= the log's
    /// next LSN): persist whatever recovery needs besides the log (out of place: the mapping
    /// snapshot, which also carries the checkpoint's `generation` and the log's `durable` LSN
    /// now, see `identity.rs`).
    fn checkpoint(&mut self, _tag: Lsn, _generation: u64, _durable: Lsn) -> Result<()> {
        Ok(())
    }
    /// Called by a checkpoint once its record is durable and before the log master names it:
    /// record `stamp` on the data device (in place: the header; out of place: the header once,
    /// at creation, the snapshot carries the rest). The first call formats a new device: until
    /// then it opens as blank.
    fn set_stamp(&mut self, stamp: &crate::identity::Stamp) -> Result<()>;
    /// The stamp the data device held when it was opened (or the last one set).
    fn stamp(&self) -> crate::identity::DataStamp;
    /// Recovery: the newest stamp belongs to a checkpoint that never logged its record (out of
    /// place: a snapshot written just before a crash); make it invalid before anything is
    /// logged, so no later record at its LSN can confirm it.
    fn discard_unfinished_checkpoint(&mut self) -> Result<()> {
        Ok(())
    }
    /// The checkpoint whose `checkpoint` call came last is complete (its record is durable and
    /// the log master names it): what it saved is now what recovery needs.
    fn checkpoint_done(&mut self) {}
    /// Recovery, first step: the last complete checkpoint is at `checkpoint_lsn`.
    fn recover_begin(&mut self, _checkpoint_lsn: Lsn) -> Result<()> {
        Ok(())
    }
    /// Recovery: a location record found in the log after the checkpoint.
    fn redo_map(&mut self, _lsn: Lsn, _changes: &[MapChange]) -> Result<()> {
        Ok(())
    }
    /// Recovery: every location record is replayed; rebuild derived state before pages are read.
    fn recover_end(&mut self) -> Result<()> {
        Ok(())
    }
    /// Makes the write path read and write the database's shared poison signal (a failed data
    /// device write poisons the whole handle; a poisoned handle writes nothing more).
    fn share_health(&mut self, health: crate::health::Health);
    /// Lets readers without the write path's mutex read the pages it holds in memory (out of
    /// place: its staged pages, from copies kept beside its shared map). Off by default: see
    /// `docs/engine.md`, "Misses" (the engine turns it on with the page cleaner).
    fn serve_held_pages(&mut self, _on: bool) {}
    /// A short name of the strategy ("in-place", "out-of-place").
    fn kind(&self) -> &'static str;
    /// Whether no page the log's redo meets can be torn: every page write is atomic, or a torn
    /// one is repaired before redo (the doublewrite buffer). Page operations in the log need it.
    fn pages_untorn(&self) -> bool {
        true
    }
    /// Whether [`WritePath::checkpoint`] is cheap enough to run after every compaction of the
    /// flushless mode (in place it saves nothing; out of place it writes the page map).
    fn cheap_checkpoint(&self) -> bool {
        true
    }
    /// Log bytes this write path needs kept for its own records (the log's system reserve: out
    /// of place, the location records of a checkpoint that writes the whole pool of
    /// `buffer_pages` and of the DB GC it may run must fit even when the log is otherwise full).
    fn system_log_reserve_bytes(&self, _buffer_pages: usize) -> u64 {
        0
    }
    /// Counters of the journal path (None for the others).
    fn journal_stats(&self) -> Option<JournalStats> {
        None
    }
    /// Whether [`WritePath::write_pages`] may append to or force the log (page locations,
    /// deathtime clocks). If not, a caller may let the log go once the log is durable past the
    /// pages, and hand it a [`DurableLog`] (in place: background checkpoint batches).
    fn writes_log(&self) -> bool {
        true
    }
    /// A reader of pages for other threads ([`PageReader`]), where a page's place on the device
    /// is fixed and the device offers one ([`crate::device::BlockDevice::shared_reader`]): in
    /// place, on files. `None` (the default): every read goes through the write path.
    fn page_reader(&self) -> Option<std::sync::Arc<dyn PageReader>> {
        None
    }
    /// Where pages move and the write path offers a [`PageReader`]: where page `pid` is now, for
    /// that reader to read it with the mutex let go; or the page itself, into `buf`, if it is
    /// held in memory or was never written. Errors as [`WritePath::read_page`]'s.
    fn locate(&mut self, pid: PageId, buf: &mut [u8]) -> Result<Located> {
        self.read_page(pid, buf)?;
        Ok(Located::Served)
    }
    /// Whether `place`, as [`WritePath::locate`] gave it for `pid`, held page `pid` all the
    /// time since: still its place, and not emptied and written again in between.
    fn confirm(&self, pid: PageId, place: &Place) -> bool {
        let _ = (pid, place);
        false
    }
    /// Number of page ids the data device can hold.
    fn page_capacity(&self) -> u64;
    fn counters(&self) -> &WriteCounters;
    /// Statistics of the data device underneath.
    fn device_stats(&self) -> crate::device::DeviceStats;
}
