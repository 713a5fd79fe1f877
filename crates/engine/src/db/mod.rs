//! The public API: [`Db`], [`Tree`] handles and [`Txn`] transactions.
//!
//! ```
//! use wafer_engine::{Db, DbConfig, Devices};
//! let db = Db::open(Devices::memory(64 << 20, 16 << 20), DbConfig::default()).unwrap();
//! let users = db.create_tree("users").unwrap();
//! let mut txn = db.begin().unwrap();
//! txn.put(&users, b"alice", b"42").unwrap();
//! txn.commit().unwrap();
//! let mut txn = db.begin().unwrap();
//! assert_eq!(txn.get(&users, b"alice").unwrap().as_deref(), Some(&b"42"[..]));
//! txn.commit().unwrap();
//! ```
//!
//! Concurrency: a `Db` is `Send + Sync` and may be shared between threads; operations are
//! serialised by one core latch (a B+tree operation at a time), while transactions interleave
//! freely between operations and are isolated by record and tree locks (see `locks.rs`). A
//! conflict fails fast with [`Error::Conflict`]: abort and retry.
//!
//! This module and `txn.rs` are the facade: they hold the handles and call into the engine
//! (`engine/`), which owns the components.

use crate::buffer::{BufferPool, PoolStats};
use crate::cache::PageCache;
use crate::catalog::{Catalog, Tree};
use crate::checkpoint::{CheckpointPolicy, Checkpointer};
use crate::config::{DbConfig, OpenMode};
use crate::device::{BlockDevice, DeviceStats};
use crate::engine::{Core, OpStats, Shared};
use crate::error::{Error, Result};
use crate::health::Health;
use crate::page::Lsn;
use crate::txn::Txn;
use crate::txn_table::{TxnAge, TxnTable};
use crate::wal::{LogProbe, SharedWal, Wal, WalConfig, WalStats};
use crate::writepath::{factory, Probe, WriteCounters};
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;
use std::sync::Arc;

mod background;
mod devices;

pub use background::{Background, CLEANER_BURST};
pub use devices::Devices;

/// Refuses to open a pair of devices one of which is blank while the other holds a database
/// (a zeroed data header beside a log master, or a formatted data device beside a blank log):
/// opening would recover from nothing or format over a database.
fn refuse_blank_partner(found: Probe, log_found: LogProbe) -> Result<()> {
    match (found, log_found) {
        (Probe::Blank, LogProbe::Database { id, generation }) if generation > 0 => {
            Err(Error::Mismatch(format!(
                "the log master of database {} (checkpoint generation {generation}) is present \
                 but the data header is blank: refusing to open or create a database over it",
                crate::identity::show(id)
            )))
        }
        (Probe::Blank, LogProbe::Unreadable) => Err(Error::Mismatch(
            "the data header is blank and the log device holds a master that does not read \
             back: refusing to open or create a database over it"
                .into(),
        )),
        (Probe::Formatted(kind), LogProbe::Blank) => Err(Error::Mismatch(format!(
            "the data device holds a database ({kind} writes) but the log device is blank (no \
             master): refusing to open it without its log or to create a new one over it"
        ))),
        _ => Ok(()),
    }
}

/// Engine-wide counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineStats {
    pub commits: u64,
    pub aborts: u64,
    pub conflicts: u64,
    pub checkpoints: u64,
    pub cleaner_writes: u64,
    pub ops: u64,
    /// Checkpoint selections deferred by the checkpoint policy.
    pub checkpoint_deferrals: u64,
    /// The most consecutive deferrals any page reached.
    pub max_consecutive_deferrals: u32,
    /// Reads, scans and plain leaf changes that ran beside other threads' (the core latch
    /// shared).
    #[serde(default)]
    pub shared_ops: u64,
    /// Attempts with the core latch shared that gave up: a page not in memory (read with the
    /// latch released, then the operation tried again, see `PoolStats::unlatched_reads`), or
    /// more than a shared attempt may do (a split, a checkpoint due, a leaf not yet guarded:
    /// run again exclusive).
    #[serde(default)]
    pub shared_retries: u64,
    /// Scans that a miss stopped after part of their range, with several threads: the page
    /// was read with the core latch released and the scan went on after the last key it had
    /// read (its key-range claim kept), shared, rather than starting over or, after a few
    /// pages, running exclusive.
    #[serde(default)]
    pub scans_resumed: u64,
    /// Leaf splits made beside other threads (the core latch shared; `DbConfig::leaf_splits`),
    /// their separators posted to the parents later.
    #[serde(default)]
    pub splits_beside: u64,
    /// Changes rollbacks undid beside other threads (the core latch shared), each logged as
    /// its compensation record; the rest of such a rollback, if any, ran exclusive.
    #[serde(default)]
    pub undone_beside: u64,
    /// Times the core latch was taken exclusive (every thread then waits; this call's own
    /// counted): operations run alone, misses reserved exclusive, background steps.
    #[serde(default)]
    pub exclusive_latches: u64,
}

/// A snapshot of every counter, for reports and DB WAF.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DbStats {
    pub engine: EngineStats,
    pub pool: PoolStats,
    pub writes: WriteCounters,
    pub wal: WalStats,
    /// Device statistics per role: data, log, and the optional undo and temp devices.
    pub data_device: DeviceStats,
    pub log_device: DeviceStats,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo_device: Option<DeviceStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp_device: Option<DeviceStats>,
    /// The version store (snapshot isolation), when the database has an undo device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<crate::mvcc::VersionStats>,
    pub recovery: Option<crate::recovery::RecoveryReport>,
    /// The flushless mode's log table, on-the-fly redo and compaction (None in the ARIES mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flushless: Option<crate::flushless::FlushlessStats>,
    /// The journal write path's images, checkpoints and home moves (None on the others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<crate::writepath::JournalStats>,
    /// Frames of the buffer pool.
    pub pool_frames: usize,
    /// LSN of the last complete checkpoint and the oldest LSN the log still keeps.
    pub checkpoint_lsn: Lsn,
    pub log_start_lsn: Lsn,
}

impl DbStats {
    /// DB WAF = DB-issued bytes / user bytes (DESIGN.md).
    pub fn db_waf(&self) -> f64 {
        self.writes.db_waf()
    }
}

/// An open database. Cheap to clone (shared handle).
#[derive(Clone)]
pub struct Db {
    pub(crate) shared: Arc<Shared>,
}

impl Db {
    /// Opens (or creates, per `cfg.open_mode`) a database on `devices`, running crash recovery.
    pub fn open(devices: Devices, cfg: DbConfig) -> Result<Db> {
        cfg.validate()?;
        let Devices {
            mut data,
            mut log,
            undo,
            temp,
            clock,
        } = devices;
        let found = factory::probe(data.as_mut())?;
        let log_found = crate::wal::probe_log(log.as_mut())?;
        let create = match cfg.open_mode {
            OpenMode::Create => true,
            OpenMode::Open => false,
            // A blank data device beside a log whose creation never completed a checkpoint is a
            // creation cut short: format again. Beside a log of a database, refuse (below).
            OpenMode::OpenOrCreate => {
                found == Probe::Blank
                    && matches!(
                        log_found,
                        LogProbe::Blank | LogProbe::Database { generation: 0, .. }
                    )
            }
        };
        if !create {
            refuse_blank_partner(found, log_found)?;
        }
        // By default the pool's size, and never less than the engine accepts (a small pool
        // asked for no log space would otherwise be refused its own default).
        let log_space = cfg
            .log_space_bytes
            .unwrap_or_else(|| {
                cfg.buffer_bytes().max(
                    crate::engine::min_log_space(cfg.page_size)
                        .next_multiple_of(u64::from(log.block_bytes().max(1))),
                )
            })
            .min(log.capacity_bytes());
        let wal_cfg = WalConfig {
            space_bytes: log_space,
            group_commit: crate::wal::GroupCommit {
                max_delay_us: cfg.group_commit.max_delay_us,
                min_batch_records: cfg.group_commit.min_batch,
                min_share_pct: cfg.group_commit.min_share_pct,
            },
            buffer_bytes: cfg.log_buffer_bytes,
            image_holes: cfg.log_image_holes,
            page_ops: cfg.page_ops(),
        };
        let wp_cfg = cfg.write_path();
        let (wp, mut wal, master) = if create {
            let wp = factory::create(&wp_cfg, data, cfg.page_size)?;
            log.flush()?;
            (wp, Wal::create(log, wal_cfg)?, None)
        } else {
            let wp = factory::open(&wp_cfg, data, cfg.page_size, found)?;
            let (wal, master) = Wal::open(log, wal_cfg)?;
            if let Some(asked) = cfg.log_space_bytes {
                wal.check_space(asked)?;
            }
            // The two devices must belong together and be at the same checkpoint, or the data
            // device one ahead (identity.rs); recovery confirms the latter.
            let agreement = crate::identity::check(&wp.stamp(), wal.db_id(), &master)?;
            (wp, wal, Some((master, agreement)))
        };
        // Page operations only where the write path as opened (not as configured: an in-place
        // device formatted without a doublewrite area has none) leaves no torn page for redo.
        wal.set_page_ops(cfg.page_ops() && wp.pages_untorn());
        let health = Health::new();
        let mut wp = wp;
        wp.share_health(health.clone());
        // Misses read staged pages without the write path's mutex only beside a page cleaner:
        // without one, misses that no longer wait write more victims ahead themselves and
        // the tail grows (docs/results.md, twentieth run).
        wp.serve_held_pages(cfg.cleaner_clean_fraction > 0.0);
        wal.share_health(health.clone());
        // Log space only checkpoints, the write path's location records and recovery may use:
        // what the write path asks for, plus a checkpoint record that lists every buffer frame.
        // In the flushless mode the checkpoint lists the pages with records in the log table,
        // which may be more than the frames: at most one per 48 bytes of its budget.
        let listed = cfg.frames().max((cfg.table_bytes() / 48) as usize);
        let reserve =
            wp.system_log_reserve_bytes(cfg.frames()) + crate::checkpoint::record_bound(listed);
        wal.set_system_reserve(reserve);
        let min_log = crate::engine::min_log_space(cfg.page_size);
        if wal.capacity_bytes() < min_log {
            return Err(Error::Config(format!(
                "a log space of {} bytes is too small for {}-byte pages: at least {min_log} bytes \
                 are needed (room for an update and its rollback beside the log's reserves)",
                wal.capacity_bytes(),
                cfg.page_size
            )));
        }
        let mut cache = PageCache::new(BufferPool::new(cfg.frames(), cfg.page_size as usize)?, wp);
        cache.splits.mode = match cfg.flushless {
            // The flushless mode writes with the core latch exclusive.
            Some(_) => crate::config::LeafSplits::Exclusive,
            None => cfg.leaf_splits,
        };
        let flushless = cfg.flushless.clone().map(|f| {
            let fl = crate::flushless::Flushless::new(f, cfg.table_bytes(), clock.clone(), &cfg);
            fl.install(&mut cache);
            fl
        });
        // The undo device holds the version store (rollback segments), rebuilt empty at every
        // open; the flushless mode keeps no before-images, so there it stays a plain device.
        let (undo, versions) = match undo {
            Some(dev) if flushless.is_none() => (
                None,
                Some(std::sync::Arc::new(crate::mvcc::Versions::new(
                    crate::mvcc::VersionStore::new(dev)?,
                ))),
            ),
            other => (other, None),
        };
        let mut txns = TxnTable::new(cfg.page_size);
        // Every space check leaves the log the postings of pending leaf splits need.
        txns.share_reserved(cache.splits.posting_reserve());
        let core = Core {
            versions,
            cache,
            txns,
            catalog: Catalog::new(),
            checkpointer: Checkpointer::new(&cfg, clock.clone()),
            stats: OpStats::default(),
            recovery: None,
            health,
            roles: crate::engine::RoleDevices {
                undo,
                temp: temp.map(crate::device::Handle::new),
            },
            flushless,
            max_value: crate::engine::max_value_len(
                cfg.page_size,
                cfg.frames(),
                wal.capacity_bytes(),
                wal.system_reserve_bytes(),
            ),
            cfg,
            exclusive_epoch: 0,
        };
        let db = Db {
            shared: Arc::new(Shared::new(core, SharedWal::new(wal))),
        };
        {
            let mut guard = db.shared.core();
            let core = &mut *guard;
            let mut wal = db.shared.wal.lock();
            match master {
                None => {
                    crate::recovery::format(&mut core.cache, &mut wal, core.flushless.as_ref())?
                }
                Some((m, agreement)) => {
                    let frames = core.cache.pool.frame_count();
                    let r = match core.flushless.as_mut() {
                        Some(fl) => crate::flushless::restart::restart(
                            fl,
                            &mut core.cache,
                            &mut wal,
                            clock.as_ref(),
                            m,
                            agreement,
                        )
                        .map_err(|e| crate::recovery::out_of_frames(e, frames))?,
                        None => crate::recovery::recover(
                            &mut core.cache,
                            &mut wal,
                            &mut core.catalog,
                            clock.as_ref(),
                            m,
                            agreement,
                        )
                        .map_err(|e| crate::recovery::out_of_frames(e, frames))?,
                    };
                    core.txns.set_next_txn(r.next_txn);
                    core.recovery = Some(r.report);
                }
            }
            crate::recovery::load_catalog(&mut core.cache, &mut wal, &mut core.catalog)?;
            // Recovery could use every page; from now on ordinary allocations leave a spare.
            core.sync_page_reserve();
        }
        // The first checkpoint of a new database also writes its data header (the stamp).
        {
            let mut core = db.shared.core();
            let mut wal = db.shared.wal.lock();
            core.open_checkpoint(&mut wal)?;
        }
        let mut core = db.shared.core();
        // Checkpoint intervals count from the end of the open.
        core.checkpointer.restart_interval();
        drop(core);
        Ok(db)
    }

    /// Creates a tree (committed at once: durable when this returns). Error if the name
    /// exists. A log that another thread's transaction holds full is waited out (up to 2 s),
    /// as a write waits. The log is forced with no latch held, as a commit waits for it: other
    /// threads' operations go on meanwhile (a write into the new tree logs after its creation,
    /// so none of its commits can be durable without it).
    pub fn create_tree(&self, name: &str) -> Result<Tree> {
        let shared = &self.shared;
        let r = shared.exclusive_log_wait(0, |core, wal| {
            let (tree, lsn) = core.create_tree(wal, name)?;
            // Before the latch goes: whoever finds the tree from now on waits for this.
            shared.created_lsn.fetch_max(lsn, Ordering::AcqRel);
            Ok(tree)
        });
        // Durable before it returns, and before a refusal says the name exists.
        shared.trees_durable()?;
        r
    }

    /// The tree called `name` (its creation durable: see [`Db::create_tree`]).
    pub fn open_tree(&self, name: &str) -> Result<Tree> {
        let tree = {
            // Shared: the catalog changes only with the core latch exclusive.
            let core = self.shared.core_read();
            core.check()?;
            core.catalog.get(name)?
        };
        self.shared.trees_durable()?;
        Ok(tree)
    }

    /// The tree called `name`, created if missing.
    pub fn tree(&self, name: &str) -> Result<Tree> {
        match self.open_tree(name) {
            Err(Error::NoSuchTree(_)) => self.create_tree(name),
            r => r,
        }
    }

    /// The device of the `temp` role (sort and hash spill), if the database was opened with
    /// one: a handle the caller's query operators write through (the database reports its
    /// statistics per role). Query operators are not part of the engine: they use the handle
    /// as any block device, one operator at a time.
    pub fn temp_device(&self) -> Option<Box<dyn BlockDevice>> {
        let core = self.shared.core();
        core.roles
            .temp
            .as_ref()
            .map(|h| Box::new(h.clone()) as Box<dyn BlockDevice>)
    }

    /// Names of all trees.
    pub fn tree_names(&self) -> Vec<String> {
        let names = self.shared.core_read().catalog.names();
        // Best effort (this returns no error): a failed force has poisoned the handle.
        let _ = self.shared.trees_durable();
        names
    }

    /// Reads `key` of `tree` outside any transaction: the latest committed value, as a
    /// transaction of this one read would see it (serializable: the read takes its place among
    /// the transactions at one instant). It takes no lock, writes no line another reader
    /// writes, and allocates only the returned value, so it is the fast way to read one record;
    /// several reads that must agree with each other belong in one transaction.
    ///
    /// When a transaction holds an uncommitted change of the key (or of a key that shares its
    /// lock stripe), a page must be read from the device, or the database keeps versions, it
    /// runs as a one-read transaction instead; a writer that holds the key for more than 2 s
    /// makes it fail with [`crate::Error::Conflict`].
    ///
    /// ```
    /// use wafer_engine::{Db, DbConfig, Devices};
    /// let db = Db::open(Devices::memory(16 << 20, 4 << 20), DbConfig::default()).unwrap();
    /// let t = db.create_tree("t").unwrap();
    /// let mut w = db.begin().unwrap();
    /// w.put(&t, b"k", b"v").unwrap();
    /// w.commit().unwrap();
    /// assert_eq!(db.get(&t, b"k").unwrap().as_deref(), Some(&b"v"[..]));
    /// assert_eq!(db.get(&t, b"other").unwrap(), None);
    /// ```
    pub fn get(&self, tree: &Tree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut v = Vec::new();
        Ok(self.get_into(tree, key, &mut v)?.then_some(v))
    }

    /// [`Db::get`] into a buffer of the caller's: whether `key` has a value, and if it has, the
    /// value in `out` (its contents replaced, its capacity reused), so a loop of reads need not
    /// allocate. When it returns false or an error, `out`'s contents mean nothing: usually they
    /// are left as they were, but a read that had to be run again (a writer held the key, or a
    /// page was not in memory) may have copied a value there that the read's final answer does
    /// not include.
    ///
    /// ```
    /// use wafer_engine::{Db, DbConfig, Devices};
    /// let db = Db::open(Devices::memory(16 << 20, 4 << 20), DbConfig::default()).unwrap();
    /// let t = db.create_tree("t").unwrap();
    /// let mut w = db.begin().unwrap();
    /// w.put(&t, b"k", b"value").unwrap();
    /// w.commit().unwrap();
    /// let mut buf = Vec::new();
    /// assert!(db.get_into(&t, b"k", &mut buf).unwrap());
    /// assert_eq!(buf, b"value");
    /// assert!(!db.get_into(&t, b"other", &mut buf).unwrap());
    /// ```
    pub fn get_into(&self, tree: &Tree, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        if let Some(r) = self.shared.shared_op(crate::engine::POINT_READS, |c| {
            c.get_committed(tree, key, out)
        }) {
            return r;
        }
        let deadline = std::time::Instant::now() + Self::GET_WAIT;
        loop {
            let mut t = self.begin()?;
            match t.get(tree, key) {
                Ok(v) => {
                    t.commit()?;
                    let Some(v) = v else { return Ok(false) };
                    out.clear();
                    out.extend_from_slice(&v);
                    return Ok(true);
                }
                Err(crate::Error::Conflict { .. }) if std::time::Instant::now() < deadline => {
                    drop(t);
                    std::thread::yield_now();
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// How long [`Db::get`] retries a read that a writer of the key refuses.
    const GET_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

    /// Starts a transaction (serializable: strict two-phase locking).
    pub fn begin(&self) -> Result<Txn> {
        let begun = self.shared.core_read().begin(None)?;
        Ok(Txn::new(self.shared.clone(), begun))
    }

    /// Starts a transaction to try again work whose earlier try, begun at `age`
    /// ([`Txn::age`] of the first try), failed with [`crate::Error::Conflict`]: as old as that
    /// try, so that with each retry it is older than more of the others, and is waited for by
    /// younger lock holders' requests instead of refused by them (wait-die; see [`TxnAge`]).
    /// A new transaction in all else (its own id, no locks, nothing of the earlier try).
    ///
    /// ```
    /// use wafer_engine::{Db, DbConfig, Devices, Error};
    /// let db = Db::open(Devices::memory(16 << 20, 4 << 20), DbConfig::default()).unwrap();
    /// let t = db.create_tree("t").unwrap();
    /// let mut txn = db.begin().unwrap();
    /// let first = txn.age();
    /// loop {
    ///     match txn.put(&t, b"k", b"v").and_then(|_| Ok(txn.commit()?)) {
    ///         Ok(()) => break,
    ///         Err(Error::Conflict { .. }) => txn = db.begin_retry(first).unwrap(),
    ///         Err(e) => panic!("{e}"),
    ///     }
    /// }
    /// ```
    pub fn begin_retry(&self, age: TxnAge) -> Result<Txn> {
        let begun = self.shared.core_read().begin(Some(age))?;
        Ok(Txn::new(self.shared.clone(), begun))
    }

    /// Starts a snapshot-isolation transaction: it reads the database as of its start and
    /// takes no lock to read (readers never wait for writers, nor writers for them); a write to
    /// a record that another transaction changed after the snapshot (or is changing) fails
    /// with [`crate::Error::Conflict`] (first updater wins: retry the transaction). Write skew
    /// is possible, as under every snapshot isolation. Its writes take the same exclusive locks
    /// as a serializable transaction's. Needs an undo device ([`Devices::with_undo`]): the
    /// versions it may read are kept there, in rollback segments.
    ///
    /// ```
    /// use wafer_engine::device::MemDevice;
    /// use wafer_engine::{Db, DbConfig, Devices};
    /// let devs = Devices::memory(16 << 20, 4 << 20).with_undo(Box::new(MemDevice::new(4 << 20, 4096)));
    /// let db = Db::open(devs, DbConfig::default()).unwrap();
    /// let t = db.create_tree("t").unwrap();
    /// let mut w = db.begin().unwrap();
    /// w.put(&t, b"k", b"old").unwrap();
    /// w.commit().unwrap();
    /// let mut reader = db.begin_snapshot().unwrap();
    /// let mut w = db.begin().unwrap();
    /// w.put(&t, b"k", b"new").unwrap();
    /// w.commit().unwrap();
    /// assert_eq!(reader.get(&t, b"k").unwrap().as_deref(), Some(&b"old"[..]));
    /// reader.commit().unwrap();
    /// ```
    pub fn begin_snapshot(&self) -> Result<Txn> {
        let begun = self.shared.core_read().begin_snapshot(None)?;
        Ok(Txn::new(self.shared.clone(), begun))
    }

    /// [`Db::begin_snapshot`] for a retry, as old as the first try ([`Db::begin_retry`]): its
    /// snapshot is new (the newest commit), its place in wait-die's order the first try's.
    pub fn begin_snapshot_retry(&self, age: TxnAge) -> Result<Txn> {
        let begun = self.shared.core_read().begin_snapshot(Some(age))?;
        Ok(Txn::new(self.shared.clone(), begun))
    }

    /// Runs a full checkpoint: writes the dirty pages (all of them, unless a hot-page-aware
    /// policy defers some), logs a checkpoint record and frees the log space behind it. The
    /// pages are written a batch at a time with the engine's core latch released: other
    /// threads' operations on cached pages go on meanwhile (in place, their commits too).
    pub fn checkpoint(&self) -> Result<()> {
        self.shared.checkpoint()
    }

    /// Checkpoints completed since open: the engine's, plus the journal write path's own (it
    /// checkpoints its journal when it fills). A cheap counter: a benchmark compares it before
    /// and after an operation to tell which operations ran a checkpoint.
    pub fn checkpoints_done(&self) -> u64 {
        let core = self.shared.core();
        let journal = crate::sync::lock(&core.cache.wp)
            .journal_stats()
            .map_or(0, |j| j.journal_checkpoints);
        core.checkpointer.stats.checkpoints + journal
    }

    /// Background work, one step: a checkpoint when the log is filling up, the page cleaner when
    /// clean frames run short. Call it from a timer thread (wall clock) or the virtual-time
    /// scheduler.
    pub fn maintenance(&self) -> Result<()> {
        self.shared.maintenance().map(|_| ())
    }

    /// Makes the whole log durable (one log write for every commit record appended since the
    /// last flush: the flush of a group commit). Returns the durable LSN.
    pub fn flush_log(&self) -> Result<Lsn> {
        // With the log unlocked during the write: commits and updates append meanwhile.
        let r = self.shared.wal.flush_all();
        if let Err(e) = &r {
            self.shared.health.poison(e);
        }
        r
    }

    /// The log's appended but not yet durable bytes, as a fraction of its buffer (what a group
    /// commit that waits for a fuller buffer looks at).
    pub fn log_buffer_fill(&self) -> f64 {
        let wal = self.shared.wal.lock();
        wal.next_lsn().saturating_sub(wal.durable_lsn()) as f64 / wal.buffer_bytes().max(1) as f64
    }

    /// Replaces the checkpoint policy (which dirty pages a checkpoint writes).
    pub fn set_checkpoint_policy(&self, policy: Box<dyn CheckpointPolicy>) {
        self.shared.core().checkpointer.set_policy(policy);
    }

    /// All counters. The write path's are read last, with the core and log latches released:
    /// its mutex may be held across device I/O (a miss's read, a background batch's writes),
    /// which no other thread should wait for behind these latches.
    pub fn stats(&self) -> DbStats {
        let core = self.shared.core();
        let wal = self.shared.wal.lock();
        let ck = &core.checkpointer.stats;
        let wp_shared = std::sync::Arc::clone(&core.cache.wp);
        let mut s = DbStats {
            engine: EngineStats {
                commits: core.stats.commits.get(),
                aborts: core.stats.aborts.get(),
                conflicts: core.txns.conflicts(),
                checkpoints: ck.checkpoints
                    + core.flushless.as_ref().map_or(0, |f| f.stats.checkpoints),
                cleaner_writes: ck.cleaner_writes,
                ops: core.stats.ops.get(),
                checkpoint_deferrals: ck.deferrals,
                max_consecutive_deferrals: ck.max_consecutive_deferrals,
                shared_ops: core.stats.shared.get(),
                shared_retries: core.stats.shared_retries.get(),
                scans_resumed: core.stats.scans_resumed.get(),
                splits_beside: core.stats.splits_beside.get(),
                undone_beside: core.stats.undone_beside.get(),
                exclusive_latches: core.exclusive_epoch,
            },
            pool: core.cache.pool.stats(),
            writes: WriteCounters::default(),
            wal: wal.stats(),
            data_device: Default::default(),
            log_device: wal.device_stats(),
            undo_device: match &core.versions {
                Some(vs) => Some(vs.store().device_stats()),
                None => core.roles.undo.as_ref().map(|d| d.stats()),
            },
            versions: core.versions.as_ref().map(|vs| vs.store().snapshot_stats()),
            temp_device: core.roles.temp.as_ref().map(|d| d.stats()),
            recovery: core.recovery.clone(),
            flushless: core.flushless.as_ref().map(|f| f.snapshot(&core.cache)),
            journal: None,
            pool_frames: core.cache.pool.frame_count(),
            checkpoint_lsn: wal.master().checkpoint_lsn,
            log_start_lsn: wal.master().start_lsn,
        };
        let reader = core.cache.page_reader();
        drop(wal);
        drop(core);
        let wp = crate::sync::lock(&wp_shared);
        s.writes = wp.counters().clone();
        s.data_device = wp.device_stats();
        // Reads made without the write path's mutex are counted beside it, read right after
        // the device's, which count them too (reads in between can still make those larger).
        if let Some((pages, bytes)) = reader.map(|r| r.reads()) {
            s.writes.page_reads += pages;
            s.writes.read_bytes += bytes;
        }
        s.journal = wp.journal_stats();
        s
    }

    /// Verifies every tree's structure (keys ordered, separators, depth, checksums of the pages
    /// read). Returns the number of keys per tree.
    pub fn verify(&self) -> Result<Vec<(String, u64)>> {
        let mut core = self.shared.core();
        let mut wal = self.shared.wal.lock();
        core.verify(&mut wal)
    }

    /// An fsck of page allocation: every page below the high-water mark must be the meta page,
    /// a node or overflow page of exactly one tree, or on the free list. Returns one line per
    /// violation (leak, double use, damaged free list); empty when consistent.
    pub fn check_pages(&self) -> Result<Vec<String>> {
        let mut core = self.shared.core();
        let mut wal = self.shared.wal.lock();
        core.check_pages(&mut wal)
    }

    /// Pages ever allocated (the high-water mark; freed pages are reused first) and the page
    /// capacity of the data device.
    pub fn page_usage(&self) -> Result<(u64, u64)> {
        let mut core = self.shared.core();
        let mut wal = self.shared.wal.lock();
        core.page_usage(&mut wal)
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> u32 {
        self.shared.core().cfg.page_size
    }

    /// Checkpoints and makes everything durable. The handle stays usable.
    pub fn close(&self) -> Result<()> {
        self.checkpoint()
    }
}
