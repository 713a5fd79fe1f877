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

use crate::btree::{self, tree as bt};
use crate::buffer::{BufferPool, PoolStats};
use crate::checkpoint::{CheckpointPolicy, WriteAll};
use crate::clock::{Clock, WallClock};
use crate::config::{DbConfig, OpenMode};
use crate::device::{BlockDevice, FileDevice, MemDevice, SharedDevice};
use crate::error::{Error, Result};
use crate::locks::{LockKey, LockManager};
use crate::meta::{self, META_PID};
use crate::mtr::{LeafChange, Mtr};
use crate::page::{Lsn, PageId};
use crate::txn::Txn;
use crate::wal::record::{Body, TreeId, TxnId, Undo};
use crate::wal::{SharedWal, Wal, WalConfig, WalStats};
use crate::writepath::{InPlace, OutOfPlace, WriteCounters, WritePath};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The devices of a database, one per role (DESIGN.md): `data` (pages) and `log` (the WAL), and
/// optionally `undo` (version store) and `temp` (sort and hash spill) for the components that use
/// them; plus the clock the devices' time runs on (wall time, or a simulation's virtual time).
pub struct Devices {
    pub data: Box<dyn BlockDevice>,
    pub log: Box<dyn BlockDevice>,
    pub undo: Option<Box<dyn BlockDevice>>,
    pub temp: Option<Box<dyn BlockDevice>>,
    pub clock: Arc<dyn Clock>,
}

impl Devices {
    /// A data and a log device, on the wall clock.
    pub fn new(data: Box<dyn BlockDevice>, log: Box<dyn BlockDevice>) -> Devices {
        Devices {
            data,
            log,
            undo: None,
            temp: None,
            clock: WallClock::shared(),
        }
    }

    /// The same devices measured on `clock` (simulated devices: their shared virtual clock).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Devices {
        self.clock = clock;
        self
    }

    /// Adds a device for the `undo` role.
    pub fn with_undo(mut self, undo: Box<dyn BlockDevice>) -> Devices {
        self.undo = Some(undo);
        self
    }

    /// Adds a device for the `temp` role.
    pub fn with_temp(mut self, temp: Box<dyn BlockDevice>) -> Devices {
        self.temp = Some(temp);
        self
    }

    /// Two in-memory devices (tests, examples).
    pub fn memory(data_bytes: u64, log_bytes: u64) -> Devices {
        Devices::new(
            Box::new(MemDevice::new(data_bytes, 4096)),
            Box::new(MemDevice::new(log_bytes, 4096)),
        )
    }

    /// Data and log on one device: the log takes its last `log_bytes`.
    pub fn one_device(dev: Box<dyn BlockDevice>, log_bytes: u64) -> Result<Devices> {
        let cap = dev.capacity_bytes();
        if log_bytes == 0 || log_bytes >= cap {
            return Err(Error::Config(format!(
                "log of {log_bytes} bytes does not fit a device of {cap} bytes"
            )));
        }
        let shared = SharedDevice::from_box(dev);
        let data = shared.partition(0, cap - log_bytes)?;
        let log = shared.partition(cap - log_bytes, log_bytes)?;
        Ok(Devices::new(Box::new(data), Box::new(log)))
    }

    /// Files `data.wafer` and `log.wafer` in `dir` (created with the given sizes if missing).
    pub fn files(dir: &std::path::Path, data_bytes: u64, log_bytes: u64) -> Result<Devices> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Config(format!("cannot create {}: {e}", dir.display())))?;
        let data = FileDevice::open(dir.join("data.wafer"), Some(data_bytes), true)?;
        let log = FileDevice::open(dir.join("log.wafer"), Some(log_bytes), true)?;
        Ok(Devices::new(Box::new(data), Box::new(log)))
    }
}

/// Background maintenance running on its own thread (wall-clock mode); stops when dropped.
pub struct Background {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<()>>>,
}

impl Background {
    /// Stops the thread and returns the first error it met, if any.
    pub fn stop(mut self) -> Result<()> {
        self.halt()
    }

    fn halt(&mut self) -> Result<()> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(Error::Poisoned("background thread panicked".into()))),
            None => Ok(()),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.halt();
    }
}

/// A handle on a named tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    pub(crate) id: TreeId,
    pub(crate) root: PageId,
    name: String,
    /// The `Db` handle (one open of a database) the tree belongs to.
    pub(crate) instance: u64,
}

impl Tree {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn id(&self) -> TreeId {
        self.id
    }
    /// Page id of the tree's root (it never moves), for tools and tests.
    pub fn root_page(&self) -> PageId {
        self.root
    }
}

/// Per-transaction state kept by the engine.
#[derive(Default)]
pub(crate) struct TxnState {
    pub first_lsn: Lsn,
    pub last_lsn: Lsn,
    /// (LSN of the update, how to undo it), oldest first.
    pub undo: Vec<(Lsn, Undo)>,
    pub locks: Vec<LockKey>,
    /// The commit record is in the log: the transaction is no longer a candidate for undo
    /// (a checkpoint taken before its end must not list it as active).
    pub committing: bool,
    /// Log bytes reserved for this transaction's rollback (part of `Core::log_reserved`).
    pub reserved: u64,
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
}

/// A snapshot of every counter, for reports and DB WAF.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DbStats {
    pub engine: EngineStats,
    pub pool: PoolStats,
    pub writes: WriteCounters,
    pub wal: WalStats,
    pub data_device: crate::device::DeviceStats,
    pub log_device: crate::device::DeviceStats,
    pub recovery: Option<crate::recovery::RecoveryReport>,
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

pub(crate) struct Core {
    pub cfg: DbConfig,
    pub pool: BufferPool,
    pub wp: Box<dyn WritePath>,
    pub trees: HashMap<String, Tree>,
    pub locks: LockManager,
    pub txns: HashMap<TxnId, TxnState>,
    pub next_txn: TxnId,
    pub stats: EngineStats,
    pub poisoned: Option<String>,
    pub policy: Box<dyn CheckpointPolicy>,
    /// Log bytes reserved by live transactions for their rollback.
    pub log_reserved: u64,
    /// Distinguishes this open of the database from every other (tree handles carry it).
    pub instance: u64,
    /// End of the log when the last checkpoint began (checkpoints run every
    /// `checkpoint_log_fill` x log space of log growth).
    pub last_checkpoint_begin_lsn: Lsn,
    pub checkpoint_in_progress: Option<crate::checkpoint::InProgress>,
    pub recovery: Option<crate::recovery::RecoveryReport>,
    pub clock: Arc<dyn Clock>,
    pub last_checkpoint_ns: u64,
}

pub(crate) struct Inner {
    pub core: Mutex<Core>,
    pub wal: SharedWal,
}

/// An open database. Cheap to clone (shared handle).
#[derive(Clone)]
pub struct Db {
    pub(crate) inner: Arc<Inner>,
}

/// A process-wide counter of opened databases: tree handles carry the number of the open they
/// came from, so a handle used with another database is refused instead of touching whatever
/// page has its root's number there.
fn next_instance() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

pub(crate) fn lock(m: &Mutex<Core>) -> MutexGuard<'_, Core> {
    // A panic while holding the latch leaves the core in an unknown state; the next user sees
    // the poison flag set below, so recovering the guard here is safe.
    match m.lock() {
        Ok(g) => g,
        Err(p) => {
            let mut g = p.into_inner();
            g.poisoned
                .get_or_insert_with(|| "a thread panicked inside the engine".into());
            g
        }
    }
}

impl Core {
    pub fn check(&self) -> Result<()> {
        match &self.poisoned {
            Some(why) => Err(Error::Poisoned(why.clone())),
            None => Ok(()),
        }
    }

    pub fn poison(&mut self, e: &Error) {
        self.poisoned.get_or_insert_with(|| e.to_string());
    }

    /// Passes a result through, poisoning the handle on a device error: after a failed write or
    /// flush the device may hold anything (a failed fsync may even have dropped earlier writes),
    /// so only recovery can tell what is durable.
    pub fn guard<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(e @ Error::Device(_)) = &r {
            self.poison(e);
        }
        r
    }

    /// Runs one tree operation as a mini-transaction and logs it with `body_of(redo)`.
    /// Returns the operation's result and the LSN of its record (0 if it changed nothing).
    pub fn run_op<R>(
        &mut self,
        wal: &mut Wal,
        txn: TxnId,
        prev_lsn: Lsn,
        op: impl FnOnce(&mut Mtr<'_>) -> Result<(R, Option<LeafInfo>)>,
        body_of: impl FnOnce(&R, crate::wal::record::Redo) -> Body,
    ) -> Result<(R, Lsn)> {
        let mut mtr = Mtr::new(&mut self.pool, self.wp.as_mut(), wal);
        let res = op(&mut mtr);
        match res {
            Ok((r, leaf)) => {
                let redo = mtr.redo(leaf.as_ref().map(|l| l.as_change()));
                let body = redo.map(|redo| body_of(&r, redo));
                match mtr.append(txn, prev_lsn, body) {
                    Ok(lsn) => Ok((r, lsn)),
                    Err((mtr, e)) => {
                        // Not logged (e.g. the log is full): undo the change in memory.
                        mtr.release();
                        if matches!(e, Error::Device(_)) {
                            self.poison(&e);
                        }
                        Err(e)
                    }
                }
            }
            Err(e) => {
                // Pages are restored to their state before the operation: only a device error
                // (the device may hold anything now) poisons the handle.
                mtr.release();
                if matches!(e, Error::Device(_)) {
                    self.poison(&e);
                }
                Err(e)
            }
        }
    }

    /// Applies a logical change (put or delete) to a tree for transaction `txn` whose previous
    /// record is `prev_lsn`; returns the old value and the LSN logged.
    pub fn apply(
        &mut self,
        wal: &mut Wal,
        (txn, prev_lsn): (TxnId, Lsn),
        tree: &Tree,
        key: &[u8],
        value: Option<&[u8]>,
        body_of: impl FnOnce(&Option<Vec<u8>>, crate::wal::record::Redo) -> Body,
    ) -> Result<(Option<Vec<u8>>, Lsn)> {
        let root = tree.root;
        self.run_op(
            wal,
            txn,
            prev_lsn,
            |m| match value {
                Some(v) => {
                    let out = bt::put(m, root, key, v)?;
                    let leaf = out.leaf.map(|pid| LeafInfo::Put {
                        pid,
                        key: key.to_vec(),
                        value: v.to_vec(),
                    });
                    Ok((out.old, leaf))
                }
                None => {
                    let out = bt::delete(m, root, key)?;
                    let leaf = out.leaf.map(|pid| LeafInfo::Del {
                        pid,
                        key: key.to_vec(),
                    });
                    Ok((out.old, leaf))
                }
            },
            body_of,
        )
    }

    /// A mini-transaction over this core's pool and write path.
    pub fn mtr<'a>(&'a mut self, wal: &'a mut Wal) -> Mtr<'a> {
        Mtr::new(&mut self.pool, self.wp.as_mut(), wal)
    }

    pub fn tree_by_id(&self, id: TreeId) -> Result<Tree> {
        self.trees
            .values()
            .find(|t| t.id == id)
            .cloned()
            .ok_or_else(|| Error::NoSuchTree(format!("#{id}")))
    }

    /// Reloads the catalog from the meta page.
    pub fn load_catalog(&mut self, wal: &mut Wal) -> Result<()> {
        let mut mtr = Mtr::new(&mut self.pool, self.wp.as_mut(), wal);
        let entries = btree::PageStore::read_page(&mut mtr, META_PID, meta::trees)?;
        mtr.release();
        self.trees = entries?
            .into_iter()
            .map(|e| {
                (
                    e.name.clone(),
                    Tree {
                        id: e.id,
                        root: e.root,
                        name: e.name,
                        instance: self.instance,
                    },
                )
            })
            .collect();
        Ok(())
    }
}

/// What the tree reported about a plain leaf change (owned, for the log record).
pub(crate) enum LeafInfo {
    Put {
        pid: PageId,
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Del {
        pid: PageId,
        key: Vec<u8>,
    },
}

impl LeafInfo {
    fn as_change(&self) -> LeafChange<'_> {
        match self {
            LeafInfo::Put { pid, key, value } => LeafChange::Put {
                pid: *pid,
                key,
                value,
            },
            LeafInfo::Del { pid, key } => LeafChange::Del { pid: *pid, key },
        }
    }
}

impl Db {
    /// Opens (or creates, per `cfg.open_mode`) a database on `devices`, running crash recovery.
    pub fn open(devices: Devices, cfg: DbConfig) -> Result<Db> {
        cfg.validate()?;
        let Devices {
            mut data,
            mut log,
            undo: _,
            temp: _,
            clock,
        } = devices;
        let (blank, oop_header) = {
            let mut hdr = vec![0u8; data.block_bytes().max(512) as usize];
            data.read_at(0, &mut hdr)?;
            (
                hdr.iter().all(|&b| b == 0),
                crate::writepath::oop::is_oop_header(&hdr),
            )
        };
        let create = match cfg.open_mode {
            OpenMode::Create => true,
            OpenMode::Open => false,
            OpenMode::OpenOrCreate => blank,
        };
        let log_space = cfg
            .log_space_bytes
            .unwrap_or(cfg.buffer_bytes())
            .min(log.capacity_bytes());
        let wal_cfg = WalConfig {
            space_bytes: log_space,
            group_commit: crate::wal::GroupCommit {
                max_delay_us: cfg.group_commit.max_delay_us,
                min_batch_records: cfg.group_commit.min_batch,
            },
        };
        let page_size_check = |theirs: u32| {
            if theirs != cfg.page_size {
                return Err(Error::Config(format!(
                    "the database has {theirs}-byte pages, the config asks for {}",
                    cfg.page_size
                )));
            }
            Ok(())
        };
        let (wp, wal, master): (Box<dyn WritePath>, Wal, Option<crate::wal::Master>) =
            if create {
                let wp: Box<dyn WritePath> = match &cfg.out_of_place {
                    Some(o) => Box::new(OutOfPlace::create(data, cfg.page_size, o.clone())?),
                    None => Box::new(InPlace::create(
                        data,
                        cfg.page_size,
                        cfg.doublewrite_pages,
                        cfg.doublewrite,
                    )?),
                };
                log.flush()?;
                let wal = Wal::create(log, wal_cfg)?;
                (wp, wal, None)
            } else {
                let wp: Box<dyn WritePath> =
                    match (&cfg.out_of_place, oop_header) {
                        (Some(o), true) => {
                            let wp = OutOfPlace::open(data, o.clone())?;
                            page_size_check(wp.layout().page_size)?;
                            Box::new(wp)
                        }
                        (None, false) => {
                            let wp = InPlace::open(data, cfg.doublewrite)?;
                            page_size_check(wp.layout().page_size)?;
                            Box::new(wp)
                        }
                        (None, true) => return Err(Error::Config(
                            "the database was created with out-of-place writes: set out_of_place \
                         in the configuration to open it"
                                .into(),
                        )),
                        (Some(_), false) => return Err(Error::Config(
                            "the database was created with in-place writes: unset out_of_place \
                         to open it"
                                .into(),
                        )),
                    };
                let (wal, master) = Wal::open(log, wal_cfg)?;
                (wp, wal, Some(master))
            };
        let mut wal = wal;
        if cfg.out_of_place.is_some() {
            // Location records of a checkpoint that writes the whole pool, and of the DB GC it
            // may run, must fit even when the log is otherwise full.
            wal.set_system_reserve(cfg.buffer_pages as u64 * 48 + (256 << 10));
        }
        let pool = BufferPool::new(cfg.buffer_pages, cfg.page_size as usize);
        let policy: Box<dyn CheckpointPolicy> = if cfg.max_checkpoint_count > 0 {
            Box::new(crate::checkpoint::HotPageAware {
                max_checkpoint_count: cfg.max_checkpoint_count,
            })
        } else {
            Box::new(WriteAll)
        };
        let core = Core {
            cfg,
            pool,
            wp,
            trees: HashMap::new(),
            locks: LockManager::default(),
            txns: HashMap::new(),
            next_txn: 1,
            stats: EngineStats::default(),
            poisoned: None,
            policy,
            log_reserved: 0,
            instance: next_instance(),
            last_checkpoint_begin_lsn: 0,
            checkpoint_in_progress: None,
            recovery: None,
            clock,
            last_checkpoint_ns: 0,
        };
        let db = Db {
            inner: Arc::new(Inner {
                core: Mutex::new(core),
                wal: SharedWal::new(wal),
            }),
        };
        {
            let mut core = lock(&db.inner.core);
            let mut wal = db.inner.wal.lock();
            match master {
                None => crate::recovery::format(&mut core, &mut wal)?,
                Some(m) => crate::recovery::recover(&mut core, &mut wal, m)?,
            }
            core.load_catalog(&mut wal)?;
        }
        db.checkpoint()?;
        let mut core = lock(&db.inner.core);
        if create {
            let r = core.wp.finish_format();
            core.guard(r)?;
        }
        // Checkpoint intervals count from the end of the open.
        core.last_checkpoint_ns = core.clock.now_ns();
        drop(core);
        Ok(db)
    }

    /// Creates a tree (committed at once). Error if the name exists.
    pub fn create_tree(&self, name: &str) -> Result<Tree> {
        let mut core = lock(&self.inner.core);
        core.check()?;
        if core.trees.contains_key(name) {
            return Err(Error::TreeExists(name.into()));
        }
        if name.is_empty() || name.len() > meta::MAX_TREE_NAME {
            return Err(Error::InvalidArgument(format!(
                "tree name must be 1..={} bytes",
                meta::MAX_TREE_NAME
            )));
        }
        let mut wal = self.inner.wal.lock();
        let need = 8 * core.cfg.page_size as u64;
        let r = crate::checkpoint::ensure_log_space(&mut core, &mut wal, need);
        core.guard(r)?;
        let (id, lsn) = core.run_op(
            &mut wal,
            0,
            0,
            |m| {
                let root = bt::create(m)?;
                let id =
                    btree::PageStore::write_page(m, META_PID, |p| meta::add_tree(p, name, root))??;
                Ok(((id, root), None))
            },
            |_, redo| Body::System { redo },
        )?;
        let r = wal.flush_to(lsn);
        drop(wal);
        core.guard(r)?;
        let tree = Tree {
            id: id.0,
            root: id.1,
            name: name.into(),
            instance: core.instance,
        };
        core.trees.insert(name.into(), tree.clone());
        Ok(tree)
    }

    /// The tree called `name`.
    pub fn open_tree(&self, name: &str) -> Result<Tree> {
        let core = lock(&self.inner.core);
        core.check()?;
        core.trees
            .get(name)
            .cloned()
            .ok_or_else(|| Error::NoSuchTree(name.into()))
    }

    /// The tree called `name`, created if missing.
    pub fn tree(&self, name: &str) -> Result<Tree> {
        match self.open_tree(name) {
            Err(Error::NoSuchTree(_)) => self.create_tree(name),
            r => r,
        }
    }

    /// Names of all trees.
    pub fn tree_names(&self) -> Vec<String> {
        let core = lock(&self.inner.core);
        let mut v: Vec<String> = core.trees.keys().cloned().collect();
        v.sort();
        v
    }

    /// Starts a transaction.
    pub fn begin(&self) -> Result<Txn> {
        let mut core = lock(&self.inner.core);
        core.check()?;
        let id = core.next_txn;
        core.next_txn += 1;
        core.txns.insert(id, TxnState::default());
        Ok(Txn::new(self.clone(), id))
    }

    /// Runs a full checkpoint: writes every dirty page, logs a checkpoint record and frees the
    /// log space behind it.
    pub fn checkpoint(&self) -> Result<()> {
        let mut core = lock(&self.inner.core);
        core.check()?;
        let mut wal = self.inner.wal.lock();
        let r = crate::checkpoint::checkpoint(&mut core, &mut wal);
        if let Err(e) = &r {
            core.poison(e);
        }
        r
    }

    /// Background work, one step: a checkpoint when the log is filling up, the page cleaner when
    /// clean frames run short. Call it from a timer thread (wall clock) or the virtual-time
    /// scheduler.
    pub fn maintenance(&self) -> Result<()> {
        let mut core = lock(&self.inner.core);
        core.check()?;
        let mut wal = self.inner.wal.lock();
        let r = crate::checkpoint::maintenance(&mut core, &mut wal);
        if let Err(e) = &r {
            core.poison(e);
        }
        r
    }

    /// Makes the whole log durable (one log write for every commit record appended since the
    /// last flush: the flush of a group commit). Returns the durable LSN.
    pub fn flush_log(&self) -> Result<Lsn> {
        let mut wal = self.inner.wal.lock();
        let r = wal.flush().map(|_| wal.durable_lsn());
        drop(wal);
        if let Err(e) = &r {
            lock(&self.inner.core).poison(e);
        }
        r
    }

    /// Runs [`Db::maintenance`] every `every` on a background thread (the wall-clock driver of
    /// the steppable background work; in virtual time the scheduler calls `maintenance` itself).
    pub fn start_background(&self, every: std::time::Duration) -> Background {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let db = self.clone();
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                db.maintenance()?;
                std::thread::sleep(every);
            }
            Ok(())
        });
        Background {
            stop,
            thread: Some(thread),
        }
    }

    /// Replaces the checkpoint policy (which dirty pages a checkpoint writes).
    pub fn set_checkpoint_policy(&self, policy: Box<dyn CheckpointPolicy>) {
        lock(&self.inner.core).policy = policy;
    }

    /// All counters.
    pub fn stats(&self) -> DbStats {
        let core = lock(&self.inner.core);
        let wal = self.inner.wal.lock();
        DbStats {
            engine: EngineStats {
                conflicts: core.locks.conflicts,
                ..core.stats.clone()
            },
            pool: core.pool.stats.clone(),
            writes: core.wp.counters().clone(),
            wal: wal.stats(),
            data_device: core.wp.device_stats(),
            log_device: wal.device_stats(),
            recovery: core.recovery.clone(),
            pool_frames: core.pool.frame_count(),
            checkpoint_lsn: wal.master().checkpoint_lsn,
            log_start_lsn: wal.master().start_lsn,
        }
    }

    /// Verifies every tree's structure (keys ordered, separators, depth, checksums of the pages
    /// read). Returns the number of keys per tree.
    pub fn verify(&self) -> Result<Vec<(String, u64)>> {
        let mut core = lock(&self.inner.core);
        core.check()?;
        let mut wal = self.inner.wal.lock();
        let trees: Vec<Tree> = core.trees.values().cloned().collect();
        let mut out = Vec::new();
        for t in trees {
            let mut mtr = core.mtr(&mut wal);
            let r = bt::check(&mut mtr, t.root);
            mtr.release();
            out.push((t.name.clone(), r?.keys));
        }
        out.sort();
        Ok(out)
    }

    /// Pages ever allocated (the high-water mark; freed pages are reused first) and the page
    /// capacity of the data device.
    pub fn page_usage(&self) -> Result<(u64, u64)> {
        let mut core = lock(&self.inner.core);
        core.check()?;
        let mut wal = self.inner.wal.lock();
        let cap = core.wp.page_capacity();
        let mut mtr = core.mtr(&mut wal);
        let used = btree::PageStore::read_page(&mut mtr, META_PID, meta::next_pid);
        mtr.release();
        Ok((used?, cap))
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> u32 {
        lock(&self.inner.core).cfg.page_size
    }

    /// Checkpoints and makes everything durable. The handle stays usable.
    pub fn close(&self) -> Result<()> {
        self.checkpoint()
    }
}
