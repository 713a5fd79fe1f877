//! The virtual-time driver: K closed-loop clients and the background maintenance task, all in one
//! OS thread, ordered by a deterministic discrete-event scheduler over simulated devices.
//!
//! Model: the data and log SSDs (flashsim, data mode) share one [`VirtualClock`]. The scheduler
//! takes the task with the earliest time (ties by task number), sets the clock to it and runs one
//! step: a client runs one whole YCSB operation as a transaction; the maintenance task runs one
//! `Db::maintenance` step. Every device command is submitted at the clock and advances it to its
//! completion (synchronous I/O), and flashsim keeps per-die and per-channel busy times, so work
//! queued on a die by another task (including GC) delays later commands. Each operation also needs
//! `cpu_ns_per_op` on one of `cores` simulated cores. A client's next operation starts when its
//! previous one completed. Throughput = operations / virtual time; latency = completion - start.
//!
//! The shared clock is the submission time of the step being run, so it moves back and forth
//! between steps (a step's own I/O runs it ahead of steps that start later). The run's time line
//! is the horizon: the latest completion of any step run so far, which never decreases. A series
//! row (and the run's end) at horizon T counts the operations run so far, all of which completed
//! by T, with the device work they caused. So a run with more clients than the device can serve
//! (its steps dispatched at CPU speed while the dies queue their I/O) measures the device's
//! pace, not the dispatch's.

use super::metrics::{self, Snapshot};
use super::{BenchConfig, BenchSummary};
use crate::iotrace::{IoTiming, WatchedDevice};
use crate::ycsb::{YcsbGenerator, YcsbOp};
use flashsim::LatencyHistogram;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};
use wafer_engine::device::{BlockDevice, Handle, SimDevice, VirtualClock};
use wafer_engine::{Db, DbConfig, Devices, Error, Tree};

/// Progress of a run, for progress bars.
pub trait BenchObserver {
    /// A phase starts ("load", "run").
    fn phase(&mut self, _name: &str) {}
    /// Fraction of the phase done, 0..=1.
    fn progress(&mut self, _done: f64) {}
    /// A series row is complete.
    fn row(&mut self, _row: &metrics::SeriesRow) {}
}

/// Ignores progress.
pub struct Silent;
impl BenchObserver for Silent {}

/// Why a benchmark failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The configuration is inconsistent.
    #[error("invalid benchmark configuration: {0}")]
    Config(String),
    /// The engine failed.
    #[error("engine: {0}")]
    Engine(#[from] Error),
    /// A device failed.
    #[error("device: {0}")]
    Device(#[from] wafer_engine::device::DeviceError),
}

/// The databases's pieces a run keeps a handle on.
pub struct Rig {
    /// The database.
    pub db: Db,
    /// The workload's main table (YCSB's "usertable"); None until the workload creates it.
    pub tree: Option<Tree>,
    /// The virtual clock both SSDs and the database share.
    pub clock: Arc<VirtualClock>,
    /// The data SSD.
    pub data: Handle<SimDevice>,
    /// The log device (an SSD or the disk model), timed.
    pub log: Handle<Box<dyn BlockDevice>>,
    /// Count and time of the log device's writes and flushes.
    pub log_timing: Arc<Mutex<IoTiming>>,
    /// The undo device (the version store's rollback segments), when there is one: the
    /// device, its timing and its time x address scatter.
    pub undo: Option<UndoRole>,
}

/// The undo device of a rig, watched.
pub struct UndoRole {
    /// The device (shared with the database).
    pub dev: Handle<Box<dyn BlockDevice>>,
    /// Count and time of its writes.
    pub timing: Arc<Mutex<IoTiming>>,
    /// Its reads and writes, time x address.
    pub trace: crate::iotrace::SharedTrace,
}

/// The device of the log role.
#[derive(Clone, Debug, PartialEq)]
pub enum LogDevice {
    /// A simulated SSD.
    Ssd(flashsim::SsdConfig),
    /// flashsim's disk model (write-through unless its config has a write cache).
    Disk(flashsim::HddConfig),
}

impl Rig {
    /// Builds the devices and opens an empty database on them, with the YCSB table.
    pub fn open(cfg: &BenchConfig) -> Result<Rig, BenchError> {
        cfg.validate().map_err(BenchError::Config)?;
        let mut rig = Rig::open_devices(
            &cfg.run_data_ssd(),
            &LogDevice::Ssd(cfg.log_ssd.clone()),
            cfg.engine_config(cfg.buffer_pages().max(64)),
        )?;
        rig.tree = Some(rig.db.create_tree("usertable")?);
        Ok(rig)
    }

    /// Builds a data SSD and a log device sharing one virtual clock and opens a database on them
    /// with `db_cfg` (`tree` is None: the caller creates its tables).
    pub fn open_devices(
        data_ssd: &flashsim::SsdConfig,
        log_dev: &LogDevice,
        db_cfg: DbConfig,
    ) -> Result<Rig, BenchError> {
        Rig::open_devices_with(data_ssd, log_dev, None, db_cfg)
    }

    /// [`Rig::open_devices`] with an undo device (the version store: snapshot isolation) on the
    /// same clock, timed and traced.
    pub fn open_devices_with(
        data_ssd: &flashsim::SsdConfig,
        log_dev: &LogDevice,
        undo_dev: Option<&LogDevice>,
        db_cfg: DbConfig,
    ) -> Result<Rig, BenchError> {
        let clock = VirtualClock::shared();
        let undo = match undo_dev {
            None => None,
            Some(kind) => {
                let inner: Box<dyn BlockDevice> = match kind {
                    LogDevice::Ssd(c) => Box::new(SimDevice::new(c.clone(), clock.clone())?),
                    LogDevice::Disk(c) => {
                        Box::new(crate::hdd::HddDevice::new(c.clone(), clock.clone())?)
                    }
                };
                let timing = Arc::new(Mutex::new(IoTiming::default()));
                let trace = Arc::new(Mutex::new(crate::iotrace::IoTrace::new(4000)));
                let dev: Handle<Box<dyn BlockDevice>> =
                    Handle::new(Box::new(WatchedDevice::watched(
                        inner,
                        clock.clone(),
                        Some(trace.clone()),
                        Some(timing.clone()),
                    )));
                Some(UndoRole { dev, timing, trace })
            }
        };
        let mut sim = SimDevice::new(data_ssd.clone(), clock.clone())?;
        if db_cfg.journal.is_some() {
            // The journal path addresses its SSD in 512-byte sectors (its descriptors and
            // sector-aligned images), whatever the FTL maps.
            sim = sim.with_block_bytes(512)?;
        }
        let data = Handle::new(sim);
        let inner: Box<dyn BlockDevice> = match log_dev {
            LogDevice::Ssd(c) => Box::new(SimDevice::new(c.clone(), clock.clone())?),
            LogDevice::Disk(c) => Box::new(crate::hdd::HddDevice::new(c.clone(), clock.clone())?),
        };
        let log_timing = Arc::new(Mutex::new(IoTiming::default()));
        let log: Handle<Box<dyn BlockDevice>> = Handle::new(Box::new(WatchedDevice::timed(
            inner,
            clock.clone(),
            log_timing.clone(),
        )));
        let mut devices =
            Devices::new(Box::new(data.clone()), Box::new(log.clone())).with_clock(clock.clone());
        if let Some(u) = &undo {
            devices = devices.with_undo(Box::new(u.dev.clone()));
        }
        let db = Db::open(devices, db_cfg)?;
        Ok(Rig {
            db,
            tree: None,
            clock,
            data,
            log,
            log_timing,
            undo,
        })
    }

    /// Closes the database and opens it again on the same devices with `db_cfg` (e.g. another
    /// buffer pool size after a load); recovery finds a clean log.
    pub fn reopen(&mut self, db_cfg: DbConfig) -> Result<(), BenchError> {
        self.db.close()?;
        self.open_again(db_cfg)
    }

    /// Opens a new engine on the same devices (running recovery) and replaces `db` with it.
    fn open_again(&mut self, db_cfg: DbConfig) -> Result<(), BenchError> {
        let mut devices = Devices::new(Box::new(self.data.clone()), Box::new(self.log.clone()))
            .with_clock(self.clock.clone());
        if let Some(u) = &self.undo {
            devices = devices.with_undo(Box::new(u.dev.clone()));
        }
        let db = Db::open(
            devices,
            DbConfig {
                open_mode: wafer_engine::OpenMode::Open,
                ..db_cfg
            },
        )?;
        if let Some(t) = &self.tree {
            self.tree = Some(db.open_tree(t.name())?);
        }
        self.db = db;
        Ok(())
    }

    /// Simulates a crash and recovers: the engine is dropped without a checkpoint (its buffer
    /// pool and unflushed log tail are lost; the power-loss-protected SSDs keep every write
    /// they acknowledged) and a new engine opens the same devices, running crash recovery.
    pub fn crash_and_reopen(&mut self, db_cfg: DbConfig) -> Result<(), BenchError> {
        // The old handle is replaced without a close: its dirty pages are never written.
        self.open_again(db_cfg)
    }

    /// The main table (panics if the workload has not created one: a bug in the driver).
    pub fn table(&self) -> &Tree {
        self.tree.as_ref().expect("the workload created its table")
    }

    /// The raw counters now.
    pub fn snapshot(&self, ops: u64, txns: u64) -> Snapshot {
        Snapshot {
            ops,
            txns,
            t_ns: self.clock.now(),
            db: self.db.stats(),
            ssd: self.data.lock().ssd().counters().clone(),
        }
    }
}

/// Loads records in key order until the data device reaches `cfg.fill`. Returns the count.
fn load(rig: &Rig, cfg: &BenchConfig, obs: &mut dyn BenchObserver) -> Result<u64, BenchError> {
    obs.phase("load");
    let gen = YcsbGenerator::new(&cfg.ycsb).map_err(|e| BenchError::Config(e.to_string()))?;
    // The same data for every configuration: `fill` of the conventional data SSD's logical
    // capacity in pages (a ZNS device exposes more, an out-of-place one keeps a few zones free).
    let (_, capacity) = rig.db.page_usage()?;
    let target =
        (cfg.fill * (cfg.data_ssd.logical_bytes / cfg.engine.page_size as u64) as f64) as u64;
    if target >= capacity {
        return Err(BenchError::Config(format!(
            "fill {} needs {target} pages but the database holds {capacity}",
            cfg.fill
        )));
    }
    let mut n = 0u64;
    loop {
        let mut t = rig.db.begin()?;
        for _ in 0..100 {
            t.put(rig.table(), &gen.load_key(n), &gen.load_value(n))?;
            n += 1;
        }
        t.commit()?;
        rig.db.maintenance()?;
        if n.is_multiple_of(2000) {
            let (used, _) = rig.db.page_usage()?;
            obs.progress((used as f64 / target as f64).min(1.0));
            if used >= target {
                break;
            }
        }
    }
    rig.db.checkpoint()?;
    Ok(n)
}

/// Runs one YCSB operation as a transaction. Returns false if it aborted on a conflict.
fn run_op(rig: &Rig, op: &YcsbOp) -> Result<bool, BenchError> {
    ycsb_txn(&rig.db, rig.table(), op)
}

/// Runs one YCSB operation on `tree` as one transaction (both drivers use it). Returns false if
/// it aborted on a conflict (no-wait locking), true if it committed.
pub fn ycsb_txn(db: &wafer_engine::Db, tree: &Tree, op: &YcsbOp) -> Result<bool, BenchError> {
    let mut t = db.begin()?;
    match apply_op(&mut t, tree, op) {
        Ok(()) => {
            t.commit()?;
            Ok(true)
        }
        Err(Error::Conflict { .. }) => {
            t.abort()?;
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

/// The reads and writes of one YCSB operation inside transaction `t`.
fn apply_op(t: &mut wafer_engine::Txn, tree: &Tree, op: &YcsbOp) -> Result<(), Error> {
    match op {
        YcsbOp::Read { key } => t.get(tree, key).map(|_| ()),
        YcsbOp::Update { key, value } | YcsbOp::Insert { key, value } => {
            t.put(tree, key, value).map(|_| ())
        }
        YcsbOp::ReadModifyWrite { key, value } => t
            .get(tree, key)
            .and_then(|_| t.put(tree, key, value).map(|_| ())),
        YcsbOp::Scan { start_key, len } => {
            // Into a buffer each client thread reuses: no allocation per pair.
            thread_local! {
                static BUF: std::cell::RefCell<wafer_engine::ScanBuf> =
                    std::cell::RefCell::new(wafer_engine::ScanBuf::new());
            }
            let range = (
                std::ops::Bound::Included(&start_key[..]),
                std::ops::Bound::Unbounded,
            );
            BUF.with(|b| t.scan_into(tree, range, false, *len, &mut b.borrow_mut()))
        }
    }
}

/// One client step: runs one transaction. Returns true if it committed, false if it aborted
/// (a conflict; the client simply goes on).
pub trait ClientWork {
    /// Runs client `client`'s next transaction on `rig.db`.
    fn step(&mut self, client: u32, rig: &Rig) -> Result<bool, BenchError>;

    /// Like `step`, but may stop short of the log flush and return the pending commit, so the
    /// loop can group the flushes of several clients (group commit in virtual time). The
    /// default runs `step`.
    fn step_deferred(&mut self, client: u32, rig: &Rig) -> Result<Step, BenchError> {
        Ok(if self.step(client, rig)? {
            Step::Committed
        } else {
            Step::Aborted
        })
    }
}

/// What a client step did.
pub enum Step {
    /// Committed (durable).
    Committed,
    /// Aborted on a conflict.
    Aborted,
    /// Its commit record is in the log, waiting for a flush.
    Pending(wafer_engine::PendingCommit),
}

/// What a closed loop measured.
pub struct LoopResult {
    /// Committed transactions.
    pub txns: u64,
    /// Aborted transactions.
    pub aborts: u64,
    /// Latency of every transaction (committed or not), virtual ns.
    pub latency: LatencyHistogram,
    /// Checkpoints: how many, how long, and the latency of the transactions they overlapped.
    pub checkpoints: super::ckptwatch::CheckpointCost,
    /// The same latencies, one histogram per series interval.
    pub latency_log: metrics::LatencyLog,
    /// Counters when the loop started.
    pub start: Snapshot,
    /// Counters when it ended.
    pub end: Snapshot,
    /// The steady-state window ([`metrics::steady_state`]).
    pub steady: metrics::Window,
    /// Which part of the run it covers.
    pub steady_state: metrics::SteadyState,
    /// One row per interval.
    pub series: Vec<metrics::SeriesRow>,
}

/// Runs `cfg.clients` closed-loop clients and the maintenance task in virtual time until the
/// stop rule of `cfg` holds.
pub fn closed_loop(
    rig: &Rig,
    cfg: &super::LoopConfig,
    page_size: u32,
    work: &mut dyn ClientWork,
    obs: &mut dyn BenchObserver,
) -> Result<LoopResult, BenchError> {
    let data_capacity = rig.data.lock().ssd().capacity().logical_bytes;
    let stop_bytes = (cfg.capacity_multiple * data_capacity as f64) as u64;
    let interval_bytes = ((cfg.interval_fraction * data_capacity as f64) as u64).max(1);
    let maint_id = cfg.clients;
    let t0 = rig.clock.now();
    let mut tasks: BinaryHeap<Reverse<(u64, u32)>> =
        (0..=cfg.clients).map(|c| Reverse((t0, c))).collect();
    let mut cores: BinaryHeap<Reverse<u64>> = (0..cfg.cores).map(|_| Reverse(t0)).collect();
    let mut latency = Latencies::default();
    let mut latency_log = metrics::LatencyLog::default();
    let (mut txns, mut aborts) = (0u64, 0u64);
    let start = rig.snapshot(0, 0);
    let mut last_row = start.clone();
    // The last (up to three) interval boundaries, for the steady-state window.
    let mut bounds = std::collections::VecDeque::from([start.clone()]);
    // The time line: the latest completion of any step run so far.
    let mut horizon = t0;
    let mut next_row = interval_bytes;
    let mut series = Vec::new();
    let mut steps = 0u64;
    // Group commit: clients whose commit waits for a log flush, and the flush timer (task
    // `flush_id`, valid while `flush_gen` matches).
    let flush_id = cfg.clients + 1;
    let grouped = cfg.group_commit_delay_us > 0
        || cfg.group_commit_min_batch > 1
        || cfg.group_commit_min_fill > 0.0
        || cfg.group_commit_on_idle;
    // When the last log flush completes (the on-idle rule).
    let mut log_free = t0;
    // Whether the commits waiting fill the group: enough of them, or enough log bytes.
    let group_full = |rig: &Rig, waiting: usize| {
        if cfg.group_commit_min_fill > 0.0 {
            rig.db.log_buffer_fill() >= cfg.group_commit_min_fill
        } else {
            waiting as u32 >= cfg.group_commit_min_batch
        }
    };
    // (client, task start, when its commit record was ready, the commit)
    let mut waiting: Vec<(u32, u64, u64, wafer_engine::PendingCommit)> = Vec::new();
    let mut flush_gen = 0u64;
    let mut timer_gen = None;
    // A flush at `at` acknowledges the commits whose records were ready by then. A step runs
    // whole when its task starts, so a commit whose CPU ends after `at` has its record in the
    // log buffer already and the flush writes it, but it could not have been in a write that
    // started before it existed: under the on-idle rule it waits for the next flush (the rules
    // with a delay or a batch acknowledge every waiting commit, as before).
    let on_idle = cfg.group_commit_on_idle;
    let flush = |rig: &Rig,
                 at: u64,
                 waiting: &mut Vec<(u32, u64, u64, wafer_engine::PendingCommit)>,
                 tasks: &mut BinaryHeap<Reverse<(u64, u32)>>,
                 latency: &mut Latencies,
                 horizon: &mut u64|
     -> Result<u64, BenchError> {
        rig.clock.set(at);
        rig.db.flush_log()?;
        let done = rig.clock.now().max(at);
        let (acked, later): (Vec<_>, Vec<_>) = waiting
            .drain(..)
            .partition(|&(_, _, ready, _)| !on_idle || ready <= at);
        *waiting = later;
        let n = acked.len() as u64;
        for (client, started, _, p) in acked {
            p.finish()?;
            latency.record(started, done);
            tasks.push(Reverse((done, client)));
        }
        *horizon = (*horizon).max(done);
        Ok(n)
    };
    while let Some(Reverse((t, id))) = tasks.pop() {
        latency.watch.advance(t);
        if id == maint_id {
            rig.clock.set(t);
            let c0 = rig.db.checkpoints_done();
            rig.db.maintenance()?;
            let c1 = rig.db.checkpoints_done();
            if c1 > c0 {
                latency.watch.checkpoint(t, rig.clock.now(), c1 - c0);
            }
            horizon = horizon.max(rig.clock.now());
            let next = rig.clock.now().max(t) + cfg.maintenance_every_us * 1000;
            tasks.push(Reverse((next, id)));
            continue;
        }
        if id == flush_id {
            // The group commit timer: valid only if no flush happened since it was set.
            if timer_gen == Some(flush_gen) && !waiting.is_empty() {
                txns += flush(rig, t, &mut waiting, &mut tasks, &mut latency, &mut horizon)?;
                log_free = rig.clock.now().max(t);
                flush_gen += 1;
                timer_gen = None;
                if let Some(ready) = waiting.iter().map(|w| w.2).min() {
                    // Commits not ready when this flush started: the next one, when this one
                    // has ended and the first of them is ready.
                    timer_gen = Some(flush_gen);
                    tasks.push(Reverse((log_free.max(ready), flush_id)));
                }
            }
            continue;
        }
        let Reverse(core_free) = cores.pop().expect("cores >= 1");
        let begin = t.max(core_free);
        let cpu_done = begin + cfg.cpu_ns_per_op;
        rig.clock.set(cpu_done);
        let c0 = rig.db.checkpoints_done();
        let step = if grouped {
            work.step_deferred(id, rig)?
        } else if work.step(id, rig)? {
            Step::Committed
        } else {
            Step::Aborted
        };
        steps += 1;
        let mut done = rig.clock.now().max(cpu_done);
        let c1 = rig.db.checkpoints_done();
        if c1 > c0 {
            latency.watch.checkpoint(begin, done, c1 - c0);
        }
        match (&step, cfg.abort_cpu_ns) {
            (Step::Aborted, Some(abort_cpu)) => {
                // The abort used less of the core than a whole transaction.
                let saved = cfg.cpu_ns_per_op.saturating_sub(abort_cpu);
                done -= saved;
                cores.push(Reverse(cpu_done - saved));
            }
            _ => cores.push(Reverse(cpu_done)),
        }
        horizon = horizon.max(done);
        match step {
            Step::Committed => {
                txns += 1;
                latency.record(t, done);
                tasks.push(Reverse((done, id)));
            }
            Step::Aborted => {
                aborts += 1;
                latency.record(t, done);
                // Under the on-idle rule the locks it met are released when the running flush
                // ends: try again then.
                let again = if cfg.group_commit_on_idle && cfg.abort_cpu_ns.is_some() {
                    done.max(log_free)
                } else {
                    done
                };
                tasks.push(Reverse((again, id)));
            }
            Step::Pending(p) if p.lsn == 0 => {
                p.finish()?;
                txns += 1;
                latency.record(t, done);
                tasks.push(Reverse((done, id)));
            }
            Step::Pending(p) => {
                waiting.push((id, t, done, p));
                // Flush now, or set the group-commit timer to a time (None: wait for the timer
                // already set).
                let (flush_now, timer_at) = if cfg.group_commit_on_idle {
                    if timer_gen.is_some() {
                        // A flush is due when the running one ends: this commit joins it.
                        (false, None)
                    } else if done >= log_free {
                        (true, None)
                    } else {
                        (false, Some(log_free))
                    }
                } else if group_full(rig, waiting.len()) {
                    (true, None)
                } else if timer_gen.is_none() {
                    (false, Some(done + cfg.group_commit_delay_us * 1000))
                } else {
                    (false, None)
                };
                if flush_now {
                    txns += flush(
                        rig,
                        done,
                        &mut waiting,
                        &mut tasks,
                        &mut latency,
                        &mut horizon,
                    )?;
                    log_free = rig.clock.now().max(done);
                    flush_gen += 1;
                    timer_gen = None;
                } else if let Some(at) = timer_at {
                    timer_gen = Some(flush_gen);
                    tasks.push(Reverse((at, flush_id)));
                }
            }
        }
        if steps.is_multiple_of(64) {
            let now = Snapshot {
                t_ns: horizon,
                ..rig.snapshot(txns, txns)
            };
            debug_assert!(
                now.t_ns >= last_row.t_ns,
                "virtual time went backwards: {} after {}",
                now.t_ns,
                last_row.t_ns
            );
            let issued = now.db.writes.db_write_bytes - start.db.writes.db_write_bytes;
            let elapsed_s = (now.t_ns - start.t_ns) as f64 / 1e9;
            let mut done_frac = issued as f64 / stop_bytes as f64;
            if let Some(m) = cfg.max_ops {
                done_frac = done_frac.max(txns as f64 / m as f64);
            }
            if let Some(m) = cfg.max_virtual_s {
                done_frac = done_frac.max(elapsed_s / m);
            }
            obs.progress(done_frac.min(1.0));
            if done_frac >= 1.0 {
                break;
            }
            if issued >= next_row {
                let mut row = metrics::series_row(&start, &last_row, &now, page_size);
                latency.end_interval(&mut row, &mut latency_log);
                obs.row(&row);
                series.push(row);
                last_row = now;
                bounds.push_back(last_row.clone());
                if bounds.len() > 3 {
                    bounds.pop_front();
                }
                while next_row <= issued {
                    next_row += interval_bytes;
                }
            }
        }
    }
    if !waiting.is_empty() {
        let ready = waiting.iter().map(|w| w.2).max().unwrap_or(0);
        let at = rig.clock.now().max(ready);
        txns += flush(
            rig,
            at,
            &mut waiting,
            &mut tasks,
            &mut latency,
            &mut horizon,
        )?;
    }
    // The run ends when every operation started has completed.
    let end = Snapshot {
        t_ns: horizon,
        ..rig.snapshot(txns, txns)
    };
    debug_assert!(end.t_ns >= last_row.t_ns && end.ops >= last_row.ops);
    if end.ops > last_row.ops || series.is_empty() {
        let mut row = metrics::series_row(&start, &last_row, &end, page_size);
        latency.end_interval(&mut row, &mut latency_log);
        obs.row(&row);
        series.push(row);
        bounds.push_back(end.clone());
        if bounds.len() > 3 {
            bounds.pop_front();
        }
    } else if let (Some(row), Some(last)) = (series.last_mut(), latency_log.intervals.last_mut()) {
        // Operations that completed after the last row without committing (aborts) belong to
        // the last interval.
        let mut h = last.histogram();
        h.merge(&latency.interval);
        last.counts = h.counts();
        row.set_latency(&h.summary());
    }
    let bounds: Vec<Snapshot> = bounds.into();
    let (steady, steady_state) = metrics::steady_state(&start, &bounds, &series, interval_bytes);
    let Latencies { run, watch, .. } = latency;
    Ok(LoopResult {
        txns,
        aborts,
        checkpoints: watch.finish(horizon - t0),
        latency: run,
        latency_log,
        start,
        end,
        steady,
        steady_state,
        series,
    })
}

/// The run's latency histogram and the current series interval's.
#[derive(Default)]
struct Latencies {
    run: LatencyHistogram,
    interval: LatencyHistogram,
    /// Which operations overlapped a checkpoint.
    watch: super::ckptwatch::CheckpointWatch,
}

impl Latencies {
    /// An operation (a transaction, committed or not) ran from `start` to `end`.
    fn record(&mut self, start: u64, end: u64) {
        let ns = end - start;
        self.run.record(ns);
        self.interval.record(ns);
        self.watch.op(start, end);
    }

    /// Closes the interval that `row` ends: its percentiles go into the row and its samples into
    /// `log`.
    fn end_interval(&mut self, row: &mut metrics::SeriesRow, log: &mut metrics::LatencyLog) {
        row.set_latency(&self.interval.summary());
        let start_s = log.intervals.last().map_or(0.0, |i| i.end_s);
        log.intervals.push(metrics::LatencyInterval {
            start_s,
            end_s: row.virtual_s,
            counts: self.interval.counts(),
        });
        self.interval.reset();
    }
}

/// YCSB clients: one generator shared by all clients (one op per transaction).
struct YcsbWork {
    gen: YcsbGenerator,
}

impl ClientWork for YcsbWork {
    fn step(&mut self, _client: u32, rig: &Rig) -> Result<bool, BenchError> {
        let op = self.gen.next_op();
        run_op(rig, &op)
    }

    fn step_deferred(&mut self, _client: u32, rig: &Rig) -> Result<Step, BenchError> {
        let op = self.gen.next_op();
        let mut t = rig.db.begin()?;
        match apply_op(&mut t, rig.table(), &op) {
            Ok(()) => Ok(Step::Pending(t.commit_deferred()?)),
            Err(Error::Conflict { .. }) => {
                t.abort()?;
                Ok(Step::Aborted)
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Runs a whole YCSB benchmark in virtual time.
pub fn run(
    name: &str,
    cfg: &BenchConfig,
    obs: &mut dyn BenchObserver,
) -> Result<BenchSummary, BenchError> {
    run_logged(name, cfg, obs).map(|(s, _)| s)
}

/// [`run`], also returning every operation latency of the run phase, one histogram per series
/// interval.
pub fn run_logged(
    name: &str,
    cfg: &BenchConfig,
    obs: &mut dyn BenchObserver,
) -> Result<(BenchSummary, metrics::LatencyLog), BenchError> {
    let rig = Rig::open(cfg)?;
    let before_load = rig.snapshot(0, 0);
    let records = load(&rig, cfg, obs)?;
    let after_load = rig.snapshot(0, 0);
    let (used, capacity) = rig.db.page_usage()?;
    let mut ycsb = cfg.ycsb.clone();
    ycsb.record_count = records;
    let gen = YcsbGenerator::new(&ycsb).map_err(|e| BenchError::Config(e.to_string()))?;
    obs.phase("run");
    let r = closed_loop(
        &rig,
        &cfg.run,
        cfg.engine.page_size,
        &mut YcsbWork { gen },
        obs,
    )?;
    let ssd_end = rig.data.lock().ssd().report();
    let summary = BenchSummary {
        name: name.to_string(),
        description: cfg.preset.describe().to_string(),
        // The engine configuration the run used (the preset's write path, the run's pool).
        config: BenchConfig {
            engine: cfg.engine_config(cfg.buffer_pages().max(64)),
            ..cfg.clone()
        },
        records,
        fill_achieved: used as f64 / capacity as f64,
        load: metrics::window(&before_load, &after_load),
        run: metrics::window(&r.start, &r.end),
        steady: r.steady,
        steady_state: r.steady_state,
        bytes: metrics::breakdown(&r.start, &r.end),
        aborts: r.aborts,
        latency: r.latency.summary(),
        ssd_gc_runs: r.end.ssd.gc_runs - r.start.ssd.gc_runs,
        ssd_erases: r.end.ssd.eu_erases - r.start.ssd.eu_erases,
        ssd_redundant_write_bytes: r.end.ssd.redundant_write_bytes
            - r.start.ssd.redundant_write_bytes,
        checkpoints: r.checkpoints,
        journal: match (&r.end.db.journal, &r.start.db.journal) {
            (Some(e), Some(b)) => Some(e.since(b)),
            (e, _) => e.clone(),
        },
        devices: metrics::roles(&r.start, &r.end),
        wear: ssd_end.wear,
        series: r.series,
        tpcc: None,
    };
    Ok((summary, r.latency_log))
}
