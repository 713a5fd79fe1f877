//! The experiments of paper 003's sections 6-7 (`wafer bench query`): external sort and joins
//! of tables stored in the engine, with temp space on the simulated disk or the simulated flash
//! SSD, in virtual time.
//!
//! Two tables `a` and `b` of `rows` rows are loaded into an in-memory database (the paper's
//! tables are cached too). A row is `id -> attr ++ filler`: `attr` is a permutation of the ids
//! (8 bytes, big-endian), so the sort by `attr` has to reorder everything and the join
//! `a.attr = b.attr` matches every row once. An operator reads its input through the engine's
//! cursor as `(attr, id ++ filler)`, `row_bytes` bytes per row in temp space. Reading the input
//! is not timed (the paper's Figure 7 excludes it); the CPU cost per row step is
//! ([`TempTiming::cpu_ns_per_row`]).
//!
//! Every operator run gets a fresh device and clock, so runs are independent and run on
//! `threads` threads in any order with the same numbers.

use super::hdd::HddDevice;
use super::temp::{IoCounters, TempClock, TempSpace, TempTiming};
use super::{
    external_sort, grace_hash_join_into, sort_merge_join_into, PhaseStats, QueryError, Row,
};
use crate::iotrace::{IoTrace, TracedDevice};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use wafer_engine::device::{BlockDevice, SimDevice, VirtualClock};
use wafer_engine::{Db, DbConfig, Devices, Tree};

/// Bytes of a row's sort/join attribute.
const ATTR_BYTES: usize = 8;
/// Bytes of a row's id (the tree key).
const ID_BYTES: usize = 8;

/// Where temp space lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TempDevice {
    /// flashsim's disk model: the paper's Seagate Barracuda 7200.10 (7200 rpm, 110 MB/s, 8 MB
    /// write-back cache), temp space at the start of the disk.
    Disk,
    /// A simulated flash SSD (the drive preset of [`QueryBenchConfig::flash_drive`]).
    Flash,
}

impl TempDevice {
    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            TempDevice::Disk => "disk",
            TempDevice::Flash => "flash",
        }
    }
}

/// The operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operator {
    /// External merge sort of table `a` by `attr`.
    Sort,
    /// Grace hash join of `a` and `b` on `attr`.
    HashJoin,
    /// Sort-merge join of `a` and `b` on `attr`.
    SortMergeJoin,
}

impl Operator {
    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Operator::Sort => "sort",
            Operator::HashJoin => "hash-join",
            Operator::SortMergeJoin => "sort-merge-join",
        }
    }
}

/// The experiments (paper 003's figures).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Experiment {
    /// Figure 7(a): the sort at each cluster size, on each device.
    Cluster,
    /// Figure 7(b): the sort at each memory size, each device at its cluster.
    Memory,
    /// Figure 8: hash join and sort-merge join on each device, with their I/O scatter.
    Joins,
    /// Figure 6: the sort's run generation and merge phases on each device, with the scatter.
    Phases,
}

impl Experiment {
    /// Every experiment, in the order they run.
    pub const ALL: [Experiment; 4] = [
        Experiment::Cluster,
        Experiment::Memory,
        Experiment::Joins,
        Experiment::Phases,
    ];

    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::Cluster => "cluster",
            Experiment::Memory => "memory",
            Experiment::Joins => "joins",
            Experiment::Phases => "phases",
        }
    }
}

/// Settings of `wafer bench query`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueryBenchConfig {
    /// Rows per table (the paper: two million).
    pub rows: u64,
    /// Bytes a row takes in temp space, header included (the paper: ~100, 200 MB per table).
    pub row_bytes: usize,
    /// Memory of an operator (the paper: 2 MB) for the cluster sweep, the joins and the phases.
    pub memory_bytes: u64,
    /// Cluster sizes of the sweep.
    pub clusters: Vec<usize>,
    /// Memory sizes of the memory sweep, as fractions of one table's bytes.
    pub memory_fractions: Vec<f64>,
    /// The disk's cluster outside the cluster sweep (the paper: 64 KB).
    pub disk_cluster: usize,
    /// The flash SSD's cluster outside the cluster sweep (the paper: 2 KB).
    pub flash_cluster: usize,
    /// Devices to compare.
    pub devices: Vec<TempDevice>,
    /// The flash SSD.
    pub flash_drive: flashsim::Drive,
    /// How temp I/O overlaps with the operators.
    pub timing: TempTiming,
    /// Temp space on each device, bytes.
    pub temp_bytes: u64,
    /// Most points of each recorded I/O scatter.
    pub trace_points: usize,
    /// Seed of the tables.
    pub seed: u64,
    /// Operator runs at once.
    pub threads: usize,
}

impl QueryBenchConfig {
    /// Bytes of one table in temp space.
    pub fn table_bytes(&self) -> u64 {
        self.rows * self.row_bytes as u64
    }

    /// The cluster of `dev` outside the cluster sweep.
    pub fn cluster_of(&self, dev: TempDevice) -> usize {
        match dev {
            TempDevice::Disk => self.disk_cluster,
            TempDevice::Flash => self.flash_cluster,
        }
    }

    fn check(&self) -> Result<(), QueryError> {
        let min_row = super::run::RECORD_HEADER_BYTES + ATTR_BYTES + ID_BYTES;
        if self.row_bytes < min_row {
            return Err(QueryError::Config(format!(
                "row size {} is below {min_row} bytes (header, attribute and id)",
                self.row_bytes
            )));
        }
        if self.rows == 0 || self.devices.is_empty() || self.threads == 0 {
            return Err(QueryError::Config(
                "rows, devices and threads must not be empty or zero".into(),
            ));
        }
        if let Some(f) = self
            .memory_fractions
            .iter()
            .find(|f| !(f.is_finite() && **f > 0.0))
        {
            return Err(QueryError::Config(format!(
                "memory fraction {f} must be positive"
            )));
        }
        Ok(())
    }
}

/// A phase of an operator run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NamedPhase {
    /// Phase name (run-generation, merge, partition, build-probe, left-sort, ...).
    pub name: String,
    /// Its time and temp I/O.
    #[serde(flatten)]
    pub stats: PhaseStats,
}

/// One operator run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueryRun {
    /// The experiment it belongs to.
    pub experiment: Experiment,
    /// Temp device.
    pub device: TempDevice,
    /// Operator.
    pub operator: Operator,
    /// Cluster size (the temp I/O unit), bytes.
    pub cluster_bytes: usize,
    /// Memory of the operator, bytes.
    pub memory_bytes: u64,
    /// Memory as a fraction of one table (in the memory sweep: the fraction asked for; the
    /// memory is raised to the operator's minimum of clusters where that is more).
    pub memory_fraction: f64,
    /// Virtual time of the operator, ns (input reads untimed, CPU per row charged).
    pub time_ns: u64,
    /// Phases, in order; their times add up to `time_ns`.
    pub phases: Vec<NamedPhase>,
    /// All temp I/O of the run.
    pub io: IoCounters,
    /// Rows out (sorted rows, or joined rows); checked against the expected count.
    pub output_rows: u64,
    /// Merge fan-in (sort; per side for the sort-merge join) or partitions (hash join).
    pub fan: usize,
    /// Merges that wrote runs (sorts: intermediate merges; hash join: recursive partitionings).
    pub extra_passes: usize,
    /// The operator's own counters.
    pub stats: serde_json::Value,
    /// The temp device's I/O scatter (joins and phases experiments).
    pub trace: Option<IoTrace>,
    /// Wall time of the run, ms (for progress only; the measure is `time_ns`).
    pub wall_ms: u64,
}

/// What `wafer bench query` measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QueryBenchResult {
    /// Always "query" (what `wafer report` keys on).
    pub kind: String,
    /// The settings.
    pub config: QueryBenchConfig,
    /// The experiments run.
    pub experiments: Vec<Experiment>,
    /// The disk model.
    pub disk: flashsim::HddConfig,
    /// The flash SSD (resolved configuration).
    pub flash: flashsim::SsdConfig,
    /// Every operator run, in job order.
    pub runs: Vec<QueryRun>,
    /// Wall time of loading the tables, ms.
    pub load_wall_ms: u64,
}

/// One operator run to do.
#[derive(Clone, Copy, Debug)]
struct Job {
    experiment: Experiment,
    device: TempDevice,
    operator: Operator,
    cluster: usize,
    memory: u64,
    /// The memory sweep's share of a table (the memory may be raised to the operator's minimum).
    fraction: Option<f64>,
    trace: bool,
}

/// The jobs of `experiments`.
fn jobs(cfg: &QueryBenchConfig, experiments: &[Experiment]) -> Vec<Job> {
    let mut out = Vec::new();
    let table = cfg.table_bytes();
    for &e in experiments {
        for &d in &cfg.devices {
            let job = |operator, cluster, memory, trace| Job {
                experiment: e,
                device: d,
                operator,
                cluster,
                memory,
                fraction: None,
                trace,
            };
            match e {
                Experiment::Cluster => {
                    for &c in &cfg.clusters {
                        out.push(job(Operator::Sort, c, cfg.memory_bytes, false));
                    }
                }
                Experiment::Memory => {
                    let c = cfg.cluster_of(d);
                    let t = cfg.timing;
                    let min = (2 * (1 + t.read_ahead) + 1 + t.write_behind) as u64;
                    for &f in &cfg.memory_fractions {
                        let m = ((table as f64 * f) as u64 / c as u64).max(min) * c as u64;
                        out.push(Job {
                            fraction: Some(f),
                            ..job(Operator::Sort, c, m, false)
                        });
                    }
                }
                Experiment::Joins => {
                    let c = cfg.cluster_of(d);
                    out.push(job(Operator::HashJoin, c, cfg.memory_bytes, true));
                    out.push(job(Operator::SortMergeJoin, c, cfg.memory_bytes, true));
                }
                Experiment::Phases => {
                    out.push(job(
                        Operator::Sort,
                        cfg.cluster_of(d),
                        cfg.memory_bytes,
                        true,
                    ));
                }
            }
        }
    }
    out
}

/// The disk model of the runs.
pub fn disk_config() -> flashsim::HddConfig {
    flashsim::HddConfig::barracuda_7200_10()
}

/// The flash SSD of the runs: the drive preset exporting `temp_bytes`, contents kept, timed.
pub fn flash_config(cfg: &QueryBenchConfig) -> flashsim::SsdConfig {
    let mut c = cfg.flash_drive.config(cfg.temp_bytes, 0.1);
    c.data = flashsim::DataMode::Memory;
    c.timing.enabled = true;
    c
}

/// The tables, loaded.
struct Tables {
    db: Db,
    a: Tree,
    b: Tree,
}

/// The value of row `id` of a table: `attr ++ filler`.
fn row_value(attr: u64, id: u64, row_bytes: usize) -> Vec<u8> {
    let filler = row_bytes - super::run::RECORD_HEADER_BYTES - ATTR_BYTES - ID_BYTES;
    let mut v = Vec::with_capacity(ATTR_BYTES + filler);
    v.extend_from_slice(&attr.to_be_bytes());
    let mut x = id.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    while v.len() < ATTR_BYTES + filler {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(b'a' + (x % 26) as u8);
    }
    v
}

fn load(cfg: &QueryBenchConfig) -> Result<Tables, QueryError> {
    let data_bytes = (cfg.table_bytes() * 5)
        .max(64 << 20)
        .next_multiple_of(1 << 20);
    let db_cfg = DbConfig {
        buffer_pages: (data_bytes / 4096) as usize,
        ..DbConfig::default()
    };
    let log_bytes = 1 << 30;
    let db = Db::open(Devices::memory(data_bytes, log_bytes), db_cfg)?;
    let a = db.create_tree("a")?;
    let b = db.create_tree("b")?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(cfg.seed);
    for tree in [&a, &b] {
        let mut attrs: Vec<u64> = (0..cfg.rows).collect();
        attrs.shuffle(&mut rng);
        for chunk in attrs.chunks(1000).enumerate() {
            let (i, part) = chunk;
            let mut t = db.begin()?;
            for (j, &attr) in part.iter().enumerate() {
                let id = (i * 1000 + j) as u64;
                t.put(tree, &id.to_be_bytes(), &row_value(attr, id, cfg.row_bytes))?;
            }
            t.commit()?;
        }
        db.checkpoint()?;
    }
    Ok(Tables { db, a, b })
}

/// The operator input from `tree`: `(attr, id ++ filler)` per row.
fn input_rows<'t>(
    txn: &'t mut wafer_engine::Txn,
    tree: &Tree,
) -> Result<impl Iterator<Item = Result<Row, QueryError>> + 't, QueryError> {
    let cursor = txn.cursor(tree, (Bound::Unbounded, Bound::Unbounded), false)?;
    Ok(cursor.map(|r| {
        let (id, v) = r?;
        let (attr, filler) = v.split_at(ATTR_BYTES);
        let mut value = Vec::with_capacity(ID_BYTES + filler.len());
        value.extend_from_slice(&id);
        value.extend_from_slice(filler);
        Ok((attr.to_vec(), value))
    }))
}

/// The I/O trace a traced device records into, shared with the run that reads it back.
type SharedTrace = Arc<Mutex<IoTrace>>;

/// A temp space on a fresh device of `job`'s kind, and the trace it records into.
fn temp_space(
    cfg: &QueryBenchConfig,
    job: &Job,
) -> Result<(TempSpace, Option<SharedTrace>), QueryError> {
    let clock = VirtualClock::shared();
    let dev: Box<dyn BlockDevice> = match job.device {
        TempDevice::Disk => Box::new(HddDevice::new(disk_config(), clock.clone())?),
        TempDevice::Flash => Box::new(SimDevice::new(flash_config(cfg), clock.clone())?),
    };
    let (dev, trace): (Box<dyn BlockDevice>, _) = if job.trace {
        let t = Arc::new(Mutex::new(IoTrace::new(cfg.trace_points)));
        (
            Box::new(TracedDevice::new(dev, clock.clone(), t.clone())),
            Some(t),
        )
    } else {
        (dev, None)
    };
    let temp = TempSpace::with_timing(
        dev,
        job.cluster,
        Some(cfg.temp_bytes),
        TempClock::Virtual(clock),
        cfg.timing,
    )?;
    Ok((temp, trace))
}

fn phase(name: &str, stats: PhaseStats) -> NamedPhase {
    NamedPhase {
        name: name.to_string(),
        stats,
    }
}

fn json<T: Serialize>(t: &T) -> serde_json::Value {
    serde_json::to_value(t).unwrap_or(serde_json::Value::Null)
}

/// Runs one job.
fn run_job(cfg: &QueryBenchConfig, tables: &Tables, job: &Job) -> Result<QueryRun, QueryError> {
    let started = std::time::Instant::now();
    let (mut temp, trace) = temp_space(cfg, job)?;
    let mut txn = tables.db.begin()?;
    let mut run = QueryRun {
        experiment: job.experiment,
        device: job.device,
        operator: job.operator,
        cluster_bytes: job.cluster,
        memory_bytes: job.memory,
        memory_fraction: job
            .fraction
            .unwrap_or(job.memory as f64 / cfg.table_bytes() as f64),
        time_ns: 0,
        phases: Vec::new(),
        io: IoCounters::default(),
        output_rows: 0,
        fan: 0,
        extra_passes: 0,
        stats: serde_json::Value::Null,
        trace: None,
        wall_ms: 0,
    };
    let budget = job.memory as usize;
    let expected = cfg.rows;
    match job.operator {
        Operator::Sort => {
            let input = input_rows(&mut txn, &tables.a)?;
            let mut stream = external_sort(&mut temp, budget, input)?;
            let mut prev: Option<Vec<u8>> = None;
            for row in stream.by_ref() {
                let (k, _) = row?;
                if prev.as_ref().is_some_and(|p| *p > k) {
                    return Err(QueryError::Corrupt("sort output out of order".into()));
                }
                prev = Some(k);
                run.output_rows += 1;
            }
            let s = stream.stats().clone();
            drop(stream);
            run.fan = s.fan_in;
            run.extra_passes = s.intermediate_merges;
            run.phases = vec![
                phase("run-generation", s.run_generation),
                phase("merge", s.merge),
            ];
            run.stats = json(&s);
        }
        Operator::HashJoin | Operator::SortMergeJoin => {
            let mut txn_b = tables.db.begin()?;
            let left = input_rows(&mut txn, &tables.a)?;
            let right = input_rows(&mut txn_b, &tables.b)?;
            let mut count = 0u64;
            let mut sink = |k: &[u8], l: &[u8], r: &[u8]| {
                debug_assert!(k.len() == ATTR_BYTES && !l.is_empty() && !r.is_empty());
                count += 1;
            };
            if job.operator == Operator::HashJoin {
                let s = grace_hash_join_into(&mut temp, budget, left, right, &mut sink)?;
                run.fan = s.fan_out;
                run.extra_passes = s.recursive_partitionings;
                run.phases = vec![
                    phase("partition", s.partition),
                    phase("build-probe", s.build_probe),
                ];
                run.stats = json(&s);
            } else {
                let s = sort_merge_join_into(&mut temp, budget, left, right, &mut sink)?;
                run.fan = s.left_sort.fan_in;
                run.extra_passes =
                    s.left_sort.intermediate_merges + s.right_sort.intermediate_merges;
                let mut left_sort = s.left_sort.run_generation;
                left_sort.add(&s.left_sort.merge);
                let mut right_sort = s.right_sort.run_generation;
                right_sort.add(&s.right_sort.merge);
                run.phases = vec![
                    phase("left-sort", left_sort),
                    phase("right-sort", right_sort),
                    phase("merge-join", s.merge),
                ];
                run.stats = json(&s);
            }
            run.output_rows = count;
            txn_b.commit()?;
        }
    }
    txn.commit()?;
    if run.output_rows != expected {
        return Err(QueryError::Corrupt(format!(
            "{} gave {} rows, expected {expected}",
            job.operator.name(),
            run.output_rows
        )));
    }
    run.time_ns = run.phases.iter().map(|p| p.stats.time_ns).sum();
    run.io = temp.io();
    debug_assert_eq!(run.time_ns, temp.now_ns());
    if temp.clusters_in_use() != 0 {
        return Err(QueryError::Corrupt(format!(
            "{} left {} clusters of temp space in use",
            job.operator.name(),
            temp.clusters_in_use()
        )));
    }
    run.trace = trace.map(|t| t.lock().expect("trace lock").clone());
    run.wall_ms = started.elapsed().as_millis() as u64;
    Ok(run)
}

/// Runs `experiments`; `progress` hears of each finished run (index, total, the run).
pub fn run(
    cfg: &QueryBenchConfig,
    experiments: &[Experiment],
    progress: &(dyn Fn(usize, usize, &QueryRun) + Sync),
) -> Result<QueryBenchResult, QueryError> {
    cfg.check()?;
    let all = jobs(cfg, experiments);
    // Every cluster must suit its device before the tables are loaded.
    for j in &all {
        temp_space(cfg, &Job { trace: false, ..*j })?;
    }
    let started = std::time::Instant::now();
    let tables = load(cfg)?;
    let load_wall_ms = started.elapsed().as_millis() as u64;
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<QueryRun, QueryError>>>> =
        Mutex::new((0..all.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..cfg.threads.min(all.len()).max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = all.get(i) else { break };
                let r = run_job(cfg, &tables, job);
                let failed = r.is_err();
                if let Ok(run) = &r {
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    progress(n, all.len(), run);
                }
                results.lock().expect("results lock")[i] = Some(r);
                if failed {
                    // Stop handing out jobs: the error is reported once the others finish.
                    next.store(all.len(), Ordering::Relaxed);
                }
            });
        }
    });
    let mut runs = Vec::with_capacity(all.len());
    for r in results
        .into_inner()
        .expect("results lock")
        .into_iter()
        .flatten()
    {
        runs.push(r?);
    }
    Ok(QueryBenchResult {
        kind: "query".to_string(),
        config: cfg.clone(),
        experiments: experiments.to_vec(),
        disk: disk_config(),
        flash: flash_config(cfg),
        runs,
        load_wall_ms,
    })
}
