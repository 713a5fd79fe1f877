//! Engine configuration: one typed struct passed to `Db::open`.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// The most buffer frames a pool may have (2^32 - 2: 16 TiB of 4 KiB pages, the page table's
/// 4-byte entries keep two values for itself); more is a typo.
pub const MAX_BUFFER_PAGES: usize = crate::page_table::MAX_FRAME as usize + 1;

/// How `Db::open` treats the devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OpenMode {
    /// Open an existing database; error if the devices hold none.
    Open,
    /// Format the devices (destroying what they hold).
    Create,
    /// Open if formatted, format if the data device is blank (all zero header); a foreign device
    /// is an error either way.
    OpenOrCreate,
}

/// Where a leaf split runs when several threads write (docs/engine.md, "Leaf splits beside
/// other threads").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeafSplits {
    /// Beside other threads once a second thread has run an operation on this database (from
    /// then on, even if that thread has stopped: one read from a monitoring thread is enough),
    /// with the tree to itself before: a lone thread keeps the exclusive split's single record,
    /// so single-threaded runs (virtual time among them) log and write what they always did.
    #[default]
    Auto,
    /// Always beside other threads where the split allows it (a leaf below the root, an inline
    /// value, pages and log space to spare): for tests of the pending-split state.
    Beside,
    /// Always with the core latch exclusive (the builds before 2026-11-27's thirteenth session).
    Exclusive,
}

/// Group commit with threads (paper 001 section 5.1 tunes the first two): once the log device
/// is free, the leader of the next flush waits for more committers until `min_batch` commits
/// wait, or `min_share_pct` percent of the threads that committed recently do, or `max_delay_us`
/// passed (never longer than a flush takes: a moving average of the last flushes); then one
/// flush serves all. `min_batch = 1` flushes at once. See docs/engine.md, "Group commit".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupCommitConfig {
    pub max_delay_us: u64,
    pub min_batch: u32,
    /// Percent (1..=100) of the recent committers whose commits are enough for a flush. At 100
    /// the leader waits for every one (up to the delay), which waits for the slowest.
    #[serde(default = "share_by_default")]
    pub min_share_pct: u32,
}

fn share_by_default() -> u32 {
    GroupCommitConfig::default().min_share_pct
}

impl Default for GroupCommitConfig {
    /// Wait for three in five recent committers, at most 1 ms and a flush's time; at once with
    /// one thread. Measured on files (docs/results.md, issue 19, "Eleventh run"): durable
    /// YCSB-A with 2, 4 and 8 client threads made more operations a second than flushing at
    /// once, 16 about as many.
    fn default() -> Self {
        GroupCommitConfig {
            max_delay_us: 1000,
            min_batch: 64,
            min_share_pct: 60,
        }
    }
}

/// Engine settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DbConfig {
    pub open_mode: OpenMode,
    /// Page size in bytes: 4096, 8192 or 16384.
    pub page_size: u32,
    /// Buffer pool size in pages.
    pub buffer_pages: usize,
    /// Write every page through a doublewrite buffer first (repairs torn pages after a crash).
    /// Opening a database formatted without a doublewrite area (`doublewrite_pages = 0`) with
    /// this on is refused with a `Config` error; turning it off on a database that has the area
    /// is allowed (pages then go straight home).
    pub doublewrite: bool,
    /// Pages in the doublewrite area (its batch size). Part of the format: it applies when the
    /// database is created, and an existing database keeps the area it was formatted with
    /// (`Db::open` reads it from the data device's header).
    pub doublewrite_pages: u32,
    /// Log space the engine may use before it must checkpoint; default (None): the buffer pool
    /// size, as in paper 002, or the smallest space the engine accepts if that is more (about
    /// 144 KiB with 4 KiB pages). Bounded by the log device. Fixed when the database is created:
    /// an open that asks for another size is refused with `Config` (None opens any).
    pub log_space_bytes: Option<u64>,
    /// The log buffer: what one log write holds at most (a group commit that waits for a fuller
    /// buffer waits for a share of it); default (None): 1/16 of the log space, at most 1 MiB.
    #[serde(default)]
    pub log_buffer_bytes: Option<u64>,
    pub group_commit: GroupCommitConfig,
    /// Checkpoint interval in log volume: a checkpoint starts each time the log has grown by
    /// this fraction of the log space since the last one began (and always when the log is
    /// more than 85% full).
    pub checkpoint_log_fill: f64,
    /// Also start one when this long has passed since the last (0: only by log fill). Measured
    /// on the database's clock: wall time, or virtual time on simulated devices.
    pub checkpoint_interval_ms: u64,
    /// Pages the checkpointer writes per step (per `maintenance` call).
    pub checkpoint_batch_pages: usize,
    /// The page cleaner keeps the victims eviction takes next clean: each maintenance step it
    /// writes up to `checkpoint_batch_pages` dirty pages among the next this fraction of the
    /// frames the CLOCK hand would take (0 disables it). On the wall clock
    /// (`Db::start_background`) steps follow each other while it finds whole batches. Out of
    /// place, a cleaner also lets misses read staged pages without the write path's mutex
    /// (docs/engine.md, "Misses"): with YCSB-A at 2 threads, 0.2 cut p99.99 from 14-15 ms to
    /// 3-6 ms.
    pub cleaner_clean_fraction: f64,
    /// Hot-page-aware checkpointing (paper 000): a checkpoint defers a page it selects until it
    /// has been deferred this many consecutive times (0: plain checkpoints, write everything).
    #[serde(default)]
    pub max_checkpoint_count: u32,
    /// Out-of-place writes (paper 002) instead of in-place homes; `None`: in place. Fixed when
    /// the database is created (opening needs the same choice). Out of place there is no
    /// doublewrite buffer (an old copy stays valid until the new one is durable), so
    /// `doublewrite` and `doublewrite_pages` do not apply.
    #[serde(default)]
    pub out_of_place: Option<crate::writepath::OopConfig>,
    /// The journal write path (paper 004): fixed homes, page writes appended to a journal area,
    /// each checkpoint moving the newest images home by host copy, device copy or remap
    /// ([`crate::writepath::HomeMethod`]); `None`: not journaled. Fixed when the database is
    /// created. Excludes `out_of_place`; the journal protects home writes from tearing, so
    /// `doublewrite` does not apply.
    #[serde(default)]
    pub journal: Option<crate::writepath::JournalConfig>,
    /// The buffer and logging scheme. `None`: ARIES (steal, no-force: dirty victims are written,
    /// the log holds undo and redo, rollback writes compensation records). `Some`: flushless
    /// eviction with on-the-fly redo, no-steal and a redo-only log (paper 001; see
    /// [`crate::FlushlessConfig`]). Fixed when the database is created (the log formats differ;
    /// opening in the other mode is refused with `Config`). Composes with both write paths.
    /// Needs `cleaner_clean_fraction` 0, `max_checkpoint_count` 0, at least 16 frames after the
    /// table's share and a table of at least 4 pages.
    #[serde(default)]
    pub flushless: Option<crate::flushless::FlushlessConfig>,
    /// `true` (the default): a commit returns once its commit record is durable (group commit
    /// shares the log write). `false`: it returns once the record is in the log buffer, locks
    /// released, and becomes durable with the next log write: a full buffer, a checkpoint,
    /// [`crate::Db::flush_log`], a step of [`crate::Db::start_background`], or the close (and
    /// the drop of the last handle). A crash may then lose the last commits, never part of a
    /// transaction and never a commit without every commit before it (the log is a prefix).
    /// Other transactions (and `Db::get`) see a commit as soon as it returns, so they may read
    /// a value that such a crash then loses.
    /// RocksDB's `sync = false`, PostgreSQL's `synchronous_commit = off`. ARIES mode only.
    #[serde(default = "durable_by_default")]
    pub durable_commits: bool,
    /// `true` (the default): a record lock held by a transaction still running, whose latest
    /// operation ran on another thread, is waited for (up to 100 ms an operation) by a
    /// transaction older than it, and refused at once to a younger one (wait-die by
    /// [`crate::TxnAge`]; a
    /// committing holder is waited for either way). `false`: refused at once (no-wait), for
    /// drivers that run transactions on several threads but one at a time, whose holder cannot
    /// run while the waiter waits (a waiter would sit out the whole 100 ms).
    #[serde(default = "wait_by_default")]
    pub wait_for_running_holders: bool,
    /// Log each page image (splits, merges, overflow chains, allocations) without its longest
    /// run of zero bytes: the free middle of a slotted page, most of a new page; as PostgreSQL
    /// leaves the hole out of its full-page images. Fewer log bytes for the same redo, byte for
    /// byte (docs/format.md, redo tag 4). A log may hold both forms; every build since this
    /// option reads both. `false` logs whole images, as builds before commit a16a298 did (the
    /// tables of docs/results.md before "The log format of 2026-11-26").
    #[serde(default = "on_by_default")]
    pub log_image_holes: bool,
    /// Log a page that a structure change altered only in ways a page operation describes (a
    /// leaf split's new link, the left half of a split, a separator added to a parent, the
    /// meta page's allocation fields) as those operations instead of its image
    /// (docs/format.md, redo tag 5): an append split logs a few hundred bytes, not three
    /// pages. Operations need the page they were logged against, so they are used only where
    /// no torn page can reach redo: with the doublewrite buffer, out of place, with the
    /// journal, and not in the flushless mode (whose log table compacts by images). `false`
    /// logs images, as builds before commit a16a298 did.
    #[serde(default = "on_by_default")]
    pub log_page_ops: bool,
    /// Where a full leaf splits when the plain change of a put finds it full: beside other
    /// threads (the core latch shared, the leaf's latch exclusive, the separator posted to the
    /// parent later), or with the tree to itself. See [`LeafSplits`]; ARIES mode only (the
    /// flushless mode writes exclusive).
    #[serde(default)]
    pub leaf_splits: LeafSplits,
}

fn on_by_default() -> bool {
    true
}

fn durable_by_default() -> bool {
    true
}

fn wait_by_default() -> bool {
    true
}

impl Default for DbConfig {
    fn default() -> Self {
        DbConfig {
            open_mode: OpenMode::OpenOrCreate,
            page_size: 4096,
            buffer_pages: 4096,
            doublewrite: true,
            doublewrite_pages: 64,
            log_space_bytes: None,
            log_buffer_bytes: None,
            group_commit: GroupCommitConfig::default(),
            checkpoint_log_fill: 0.5,
            checkpoint_interval_ms: 0,
            checkpoint_batch_pages: 64,
            cleaner_clean_fraction: 0.0,
            max_checkpoint_count: 0,
            out_of_place: None,
            journal: None,
            flushless: None,
            durable_commits: true,
            wait_for_running_holders: true,
            log_image_holes: true,
            log_page_ops: true,
            leaf_splits: LeafSplits::Auto,
        }
    }
}

impl DbConfig {
    pub fn validate(&self) -> Result<()> {
        if ![4096, 8192, 16384].contains(&self.page_size) {
            return Err(Error::Config(format!(
                "page_size {} must be 4096, 8192 or 16384",
                self.page_size
            )));
        }
        if !(1..=100).contains(&self.group_commit.min_share_pct) {
            return Err(Error::Config(format!(
                "group_commit.min_share_pct {} must be in 1..=100",
                self.group_commit.min_share_pct
            )));
        }
        if self.buffer_pages < 16 {
            return Err(Error::Config("buffer_pages must be at least 16".into()));
        }
        if self.buffer_pages > MAX_BUFFER_PAGES {
            return Err(Error::Config(format!(
                "buffer_pages {} is more than {MAX_BUFFER_PAGES}",
                self.buffer_pages
            )));
        }
        if !(0.05..=0.95).contains(&self.checkpoint_log_fill) {
            return Err(Error::Config(
                "checkpoint_log_fill must be in [0.05, 0.95]".into(),
            ));
        }
        if self.doublewrite && self.doublewrite_pages == 0 {
            return Err(Error::Config(
                "doublewrite needs doublewrite_pages >= 1".into(),
            ));
        }
        if let Some(o) = &self.out_of_place {
            o.validate()?;
        }
        if let Some(j) = &self.journal {
            j.validate()?;
            if self.out_of_place.is_some() {
                return Err(Error::Config(
                    "journal and out_of_place are two write paths: choose one".into(),
                ));
            }
            if self.flushless.is_some() {
                return Err(Error::Config(
                    "the journal write path does not yet compose with the flushless mode (its \
                     compaction checkpoints would move the journal home each time)"
                        .into(),
                ));
            }
        }
        if self.checkpoint_batch_pages == 0 {
            return Err(Error::Config("checkpoint_batch_pages must be >= 1".into()));
        }
        if !(0.0..0.9).contains(&self.cleaner_clean_fraction) {
            return Err(Error::Config(
                "cleaner_clean_fraction must be in [0, 0.9)".into(),
            ));
        }
        if let Some(f) = &self.flushless {
            f.validate()?;
            if !self.durable_commits {
                return Err(Error::Config(
                    "durable_commits = false needs the ARIES mode: the flushless mode's \
                     redo-only log cannot undo a transaction whose pages were written before \
                     its commit record was durable"
                        .into(),
                ));
            }
            if self.max_checkpoint_count > 0 {
                return Err(Error::Config(
                    "max_checkpoint_count (hot-page-aware checkpoints, paper 000) applies to the \
                     ARIES mode; the flushless mode chooses the pages a checkpoint writes by \
                     flushless.min_del and flushless.max_age_ms"
                        .into(),
                ));
            }
            if self.cleaner_clean_fraction > 0.0 {
                return Err(Error::Config(
                    "cleaner_clean_fraction must be 0 in the flushless mode: the page cleaner \
                     writes dirty pages, which that mode leaves to its checkpoints"
                        .into(),
                ));
            }
            if self.frames() < 16 {
                return Err(Error::Config(format!(
                    "buffer_pages {} leaves {} frames after the flushless log table's share \
                     ({}): at least 16 are needed",
                    self.buffer_pages,
                    self.frames(),
                    f.table_fraction
                )));
            }
            // A write first asks the table for room for a leaf split (two leaves and their
            // parent) beside its key and value: a smaller table refuses every write.
            let least = 4 * self.page_size as u64;
            if self.table_bytes() < least {
                return Err(Error::Config(format!(
                    "buffer_pages {} with flushless.table_fraction {} leaves the flushless log \
                     table {} bytes: at least {least} (4 pages: a leaf split and a change) are \
                     needed",
                    self.buffer_pages,
                    f.table_fraction,
                    self.table_bytes()
                )));
            }
        }
        Ok(())
    }

    /// The write path this configuration asks for.
    pub fn write_path(&self) -> crate::writepath::WritePathConfig {
        if let Some(j) = &self.journal {
            return crate::writepath::WritePathConfig::Journal(j.clone());
        }
        match &self.out_of_place {
            Some(o) => crate::writepath::WritePathConfig::OutOfPlace(o.clone()),
            None => crate::writepath::WritePathConfig::InPlace {
                doublewrite: self.doublewrite,
                doublewrite_pages: self.doublewrite_pages,
            },
        }
    }

    /// Whether structure changes may log page operations: asked for, and no page the log's
    /// redo meets can be torn (in place needs the doublewrite buffer), and not flushless. (The
    /// database also asks the write path as opened: `WritePath::pages_untorn`.)
    pub fn page_ops(&self) -> bool {
        let untorn = self.journal.is_some() || self.out_of_place.is_some() || self.doublewrite;
        self.log_page_ops && untorn && self.flushless.is_none()
    }

    /// Bytes of the buffer pool (in the flushless mode: frames and log table together).
    pub fn buffer_bytes(&self) -> u64 {
        self.buffer_pages as u64 * self.page_size as u64
    }

    /// Buffer frames: `buffer_pages`, less the flushless log table's share of the memory.
    pub fn frames(&self) -> usize {
        match &self.flushless {
            Some(f) => ((1.0 - f.table_fraction) * self.buffer_pages as f64) as usize,
            None => self.buffer_pages,
        }
    }

    /// Bytes the flushless log table may hold (0 in the ARIES mode).
    pub fn table_bytes(&self) -> u64 {
        self.buffer_bytes() - self.frames() as u64 * self.page_size as u64
    }
}
