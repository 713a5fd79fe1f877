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

use super::metrics::{self, Snapshot};
use super::{BenchConfig, BenchSummary};
use crate::ycsb::{YcsbGenerator, YcsbOp};
use flashsim::LatencyHistogram;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use wafer_engine::device::{Handle, SimDevice, VirtualClock};
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
    /// The YCSB table.
    pub tree: Tree,
    /// The virtual clock both SSDs and the database share.
    pub clock: Arc<VirtualClock>,
    /// The data SSD.
    pub data: Handle<SimDevice>,
    /// The log SSD.
    pub log: Handle<SimDevice>,
}

impl Rig {
    /// Builds the devices and opens an empty database on them.
    pub fn open(cfg: &BenchConfig) -> Result<Rig, BenchError> {
        cfg.validate().map_err(BenchError::Config)?;
        let clock = VirtualClock::shared();
        let data = Handle::new(SimDevice::new(cfg.data_ssd.clone(), clock.clone())?);
        let log = Handle::new(SimDevice::new(cfg.log_ssd.clone(), clock.clone())?);
        let data_bytes = cfg.data_ssd.logical_bytes as f64;
        let buffer_pages =
            ((cfg.buffer_fraction * cfg.fill * data_bytes) / cfg.page_size as f64) as usize;
        let db_cfg = DbConfig {
            page_size: cfg.page_size,
            buffer_pages: buffer_pages.max(64),
            doublewrite: cfg.preset.doublewrite(),
            ..DbConfig::default()
        };
        let db = Db::open(
            Devices {
                data: Box::new(data.clone()),
                log: Box::new(log.clone()),
            },
            db_cfg,
        )?;
        db.use_virtual_clock(clock.clone());
        let tree = db.create_tree("usertable")?;
        Ok(Rig {
            db,
            tree,
            clock,
            data,
            log,
        })
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
    let (_, capacity) = rig.db.page_usage()?;
    let target = (cfg.fill * capacity as f64) as u64;
    let mut n = 0u64;
    loop {
        let mut t = rig.db.begin()?;
        for _ in 0..100 {
            t.put(&rig.tree, &gen.load_key(n), &gen.load_value(n))?;
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
    let mut t = rig.db.begin()?;
    let r = match op {
        YcsbOp::Read { key } => t.get(&rig.tree, key).map(|_| ()),
        YcsbOp::Update { key, value } | YcsbOp::Insert { key, value } => {
            t.put(&rig.tree, key, value).map(|_| ())
        }
        YcsbOp::ReadModifyWrite { key, value } => t
            .get(&rig.tree, key)
            .and_then(|_| t.put(&rig.tree, key, value).map(|_| ())),
        YcsbOp::Scan { start_key, len } => t
            .scan(
                &rig.tree,
                (
                    std::ops::Bound::Included(&start_key[..]),
                    std::ops::Bound::Unbounded,
                ),
                false,
                *len,
            )
            .map(|_| ()),
    };
    match r {
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

/// Runs a whole benchmark in virtual time.
pub fn run(
    name: &str,
    cfg: &BenchConfig,
    obs: &mut dyn BenchObserver,
) -> Result<BenchSummary, BenchError> {
    let rig = Rig::open(cfg)?;
    let before_load = rig.snapshot(0, 0);
    let records = load(&rig, cfg, obs)?;
    let after_load = rig.snapshot(0, 0);
    let (used, capacity) = rig.db.page_usage()?;
    let mut ycsb = cfg.ycsb.clone();
    ycsb.record_count = records;
    let mut gen = YcsbGenerator::new(&ycsb).map_err(|e| BenchError::Config(e.to_string()))?;

    obs.phase("run");
    let data_capacity = cfg.data_ssd.logical_bytes;
    let stop_bytes = (cfg.capacity_multiple * data_capacity as f64) as u64;
    let interval_bytes = ((cfg.interval_fraction * data_capacity as f64) as u64).max(1);
    let maint_id = cfg.clients;
    let t0 = rig.clock.now();
    let mut tasks: BinaryHeap<Reverse<(u64, u32)>> =
        (0..=cfg.clients).map(|c| Reverse((t0, c))).collect();
    let mut cores: BinaryHeap<Reverse<u64>> = (0..cfg.cores).map(|_| Reverse(t0)).collect();
    let mut latency = LatencyHistogram::new();
    let (mut ops, mut txns, mut aborts) = (0u64, 0u64, 0u64);
    let start = rig.snapshot(0, 0);
    let mut last_row = start.clone();
    let mut prev_row = start.clone();
    let mut next_row = interval_bytes;
    let mut series = Vec::new();
    while let Some(Reverse((t, id))) = tasks.pop() {
        if id == maint_id {
            rig.clock.set(t);
            rig.db.maintenance()?;
            let next = rig.clock.now().max(t) + cfg.maintenance_every_us * 1000;
            tasks.push(Reverse((next, id)));
            continue;
        }
        let Reverse(core_free) = cores.pop().expect("cores >= 1");
        let begin = t.max(core_free);
        let cpu_done = begin + cfg.cpu_ns_per_op;
        cores.push(Reverse(cpu_done));
        rig.clock.set(cpu_done);
        let op = gen.next_op();
        if run_op(&rig, &op)? {
            ops += 1;
            txns += 1;
        } else {
            aborts += 1;
        }
        let done = rig.clock.now().max(cpu_done);
        latency.record(done - t);
        tasks.push(Reverse((done, id)));
        if ops % 64 == 0 {
            let now = rig.snapshot(ops, txns);
            let issued = now.db.writes.db_write_bytes - start.db.writes.db_write_bytes;
            obs.progress((issued as f64 / stop_bytes as f64).min(1.0));
            let elapsed_s = (now.t_ns - start.t_ns) as f64 / 1e9;
            let finished = issued >= stop_bytes
                || cfg.max_ops.is_some_and(|m| ops >= m)
                || cfg.max_virtual_s.is_some_and(|m| elapsed_s >= m);
            if issued >= next_row || finished {
                let row = metrics::series_row(&start, &last_row, &now, cfg.page_size);
                obs.row(&row);
                series.push(row);
                prev_row = std::mem::replace(&mut last_row, now);
                while next_row <= issued {
                    next_row += interval_bytes;
                }
            }
            if finished {
                break;
            }
        }
    }
    let end = rig.snapshot(ops, txns);
    let ssd_end = rig.data.lock().ssd().report();
    Ok(BenchSummary {
        name: name.to_string(),
        description: cfg.preset.describe().to_string(),
        config: cfg.clone(),
        records,
        fill_achieved: used as f64 / capacity as f64,
        load: metrics::window(&before_load, &after_load),
        run: metrics::window(&start, &end),
        steady: metrics::window(&prev_row, &last_row),
        bytes: metrics::breakdown(&start, &end),
        aborts,
        latency: latency.summary(),
        ssd_gc_runs: end.ssd.gc_runs - start.ssd.gc_runs,
        ssd_erases: end.ssd.eu_erases - start.ssd.eu_erases,
        wear: ssd_end.wear,
        series,
    })
}
