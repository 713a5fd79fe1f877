//! The wall-clock driver: real threads running YCSB on the engine, over in-memory devices (the
//! engine's own throughput: CPU and latching) or files, with the whole data set cached (or a
//! buffer pool smaller than the data, so that operations read pages from the device).

use super::vtime::BenchError;
use crate::ycsb::{LoadOrder, YcsbConfig, YcsbGenerator, YcsbOp};
use flashsim::LatencyHistogram;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};
use wafer_engine::{Db, DbConfig, Devices};

/// Settings of a wall-clock run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WallConfig {
    /// The workload; `record_count` records are loaded.
    pub ycsb: YcsbConfig,
    /// Directory for file devices (data.wafer, log.wafer); None: in-memory devices.
    pub dir: Option<std::path::PathBuf>,
    /// Client threads.
    pub threads: u32,
    /// Length of the measured run.
    pub duration_ms: u64,
    /// Run each read as a one-read transaction (begin, get, commit) rather than with
    /// [`Db::get`] outside any transaction (what a user reading one record calls).
    #[serde(default)]
    pub read_txn: bool,
    /// Commits return once their record is in the log buffer
    /// ([`DbConfig::durable_commits`] off).
    #[serde(default)]
    pub buffered_commits: bool,
    /// Run `Db::start_background` with this interval (ms) during the measured run: checkpoints
    /// a batch at a time beside the clients instead of inside their operations.
    #[serde(default)]
    pub background_ms: Option<u64>,
    /// The engine's `checkpoint_interval_ms` (0: checkpoints by log volume only, the default).
    #[serde(default)]
    pub checkpoint_interval_ms: u64,
    /// Buffer pool size in MiB; None: the whole data device (every page stays cached).
    #[serde(default)]
    pub buffer_mib: Option<u64>,
    /// Write pages out of place (paper 002, the engine's default `OopConfig`, no doublewrite)
    /// rather than in place.
    #[serde(default)]
    pub out_of_place: bool,
    /// Journal page writes (paper 004, the engine's default `JournalConfig` with this method,
    /// no doublewrite) rather than write them in place.
    #[serde(default)]
    pub journal: Option<wafer_engine::HomeMethod>,
    /// Measure the load instead of a workload: `threads` threads insert the `record_count`
    /// records, each its share in hashed key order (so every thread's inserts land all over the
    /// tree and split its leaves), and nothing runs after it. None: one thread loads in key
    /// order, unmeasured, and the workload is measured. (With a load, `ycsb.workload` is not
    /// used: only the records' keys and values are.)
    #[serde(default)]
    pub load: Option<WallLoad>,
    /// The engine's `cleaner_clean_fraction`: the page cleaner, run by the background
    /// maintenance (`background_ms`), keeps clean the next victims, this fraction of the
    /// frames, that eviction would take (0: off).
    #[serde(default)]
    pub cleaner_clean_fraction: f64,
    /// The engine's `leaf_splits`: where a full leaf splits (beside the other threads, or
    /// with the tree to itself).
    #[serde(default)]
    pub leaf_splits: wafer_engine::LeafSplits,
    /// The flushless buffer mode (paper 001, the engine's default `FlushlessConfig`) instead
    /// of ARIES's; it needs durable commits.
    #[serde(default)]
    pub flushless: bool,
}

/// A measured load ([`WallConfig::load`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WallLoad {
    /// Records inserted per transaction (YCSB's load inserts one per operation).
    pub batch: u32,
}

/// Result of a wall-clock run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct WallResult {
    pub config: WallConfig,
    /// Operations completed: YCSB operations, or records inserted by a measured load.
    pub ops: u64,
    pub aborts: u64,
    pub seconds: f64,
    pub ops_per_s: f64,
    pub hit_ratio: f64,
    /// Per-operation latency (wall clock), transaction begin to commit (per transaction of a
    /// measured load).
    pub latency: flashsim::LatencySummary,
    /// The log during the measured run (differences of the engine's `WalStats`): how many
    /// commits waited for it, how many flushes served them, and the bytes written.
    #[serde(default)]
    pub log: WallLog,
    /// Operations that ran with the engine's core latch shared (beside the other threads), and
    /// those tried so and run again exclusive, during the measured run.
    #[serde(default)]
    pub shared_ops: u64,
    #[serde(default)]
    pub shared_retries: u64,
    /// Scans that a miss stopped part way and that went on after the last key they had read
    /// (several threads; the engine's `scans_resumed`).
    #[serde(default)]
    pub scans_resumed: u64,
    /// Leaf splits made beside the other threads during the measured run (the engine's
    /// `leaf_splits`).
    #[serde(default)]
    pub splits_beside: u64,
    /// Checkpoints during the measured run.
    #[serde(default)]
    pub checkpoints: u64,
    /// Journaled: the journal's own checkpoints during the measured run (it filled between
    /// the engine's).
    #[serde(default)]
    pub journal_checkpoints: u64,
    /// Journaled, several threads: of those (slices), the ones an append moved itself (flow
    /// control, `JournalStats::foreground_slices`).
    #[serde(default)]
    pub foreground_slices: u64,
    /// Pages read from the device during the measured run, and of those the ones read with the
    /// core latch released (`PoolStats::unlatched_reads`).
    #[serde(default)]
    pub misses: u64,
    #[serde(default)]
    pub unlatched_reads: u64,
    /// Of the misses, those reserved with the core latch shared (`PoolStats::reserved_shared`).
    #[serde(default)]
    pub reserved_shared: u64,
    /// Out of place and journaled, dirty pages written ahead of the misses that would take
    /// their frames, the core latch released (`PoolStats::written_ahead`).
    #[serde(default)]
    pub written_ahead: u64,
    /// Times the core latch was taken exclusive during the measured run.
    #[serde(default)]
    pub exclusive_latches: u64,
    /// Pages the page cleaner wrote during the measured run.
    #[serde(default)]
    pub cleaner_writes: u64,
}

/// Log activity of a wall-clock run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct WallLog {
    pub commits: u64,
    pub commit_flushes: u64,
    pub flushes: u64,
    pub device_flushes: u64,
    pub bytes_written: u64,
    /// Group-commit flushes per commit (1 = no sharing).
    pub flushes_per_commit: f64,
    /// Bytes written to the log device per commit.
    pub bytes_per_commit: f64,
}

impl WallLog {
    fn between(a: &wafer_engine::WalStats, b: &wafer_engine::WalStats) -> WallLog {
        let commits = b.commits - a.commits;
        let commit_flushes = b.commit_flushes - a.commit_flushes;
        let bytes_written = b.bytes_written - a.bytes_written;
        WallLog {
            commits,
            commit_flushes,
            flushes: b.flushes - a.flushes,
            device_flushes: b.device_flushes - a.device_flushes,
            bytes_written,
            flushes_per_commit: commit_flushes as f64 / commits.max(1) as f64,
            bytes_per_commit: bytes_written as f64 / commits.max(1) as f64,
        }
    }
}

/// One YCSB operation: a read with [`Db::get`] (unless `read_txn`), anything else as one
/// transaction. Returns false if it was refused on a conflict.
fn wall_op(
    db: &Db,
    tree: &wafer_engine::Tree,
    op: &YcsbOp,
    read_txn: bool,
) -> Result<bool, BenchError> {
    match op {
        YcsbOp::Read { key } if !read_txn => match db.get(tree, key) {
            Ok(_) => Ok(true),
            Err(wafer_engine::Error::Conflict { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        },
        _ => super::vtime::ycsb_txn(db, tree, op),
    }
}

/// Operations done, operations refused on a conflict, and their latencies: one thread's share.
type Counts = (u64, u64, LatencyHistogram);

/// One thread's YCSB operations until `deadline`.
fn run_ops(
    db: &Db,
    tree: &wafer_engine::Tree,
    mut gen: YcsbGenerator,
    read_txn: bool,
    deadline: Instant,
) -> Result<Counts, BenchError> {
    let (mut ops, mut aborts) = (0u64, 0u64);
    let mut lat = LatencyHistogram::new();
    while Instant::now() < deadline {
        for _ in 0..64 {
            let op = gen.next_op();
            let t0 = Instant::now();
            if wall_op(db, tree, &op, read_txn)? {
                ops += 1;
                lat.record(t0.elapsed().as_nanos() as u64);
            } else {
                aborts += 1;
            }
        }
    }
    Ok((ops, aborts, lat))
}

/// Thread `th` of `threads` inserts the load's records `th, th + threads, ...` (in hashed
/// order: all over the key space), `load.batch` to a transaction; a transaction refused on a
/// conflict is rolled back and tried again (as old as its first try).
fn load_share(
    db: &Db,
    tree: &wafer_engine::Tree,
    gen: &YcsbGenerator,
    load: WallLoad,
    th: u64,
    threads: u64,
) -> Result<Counts, BenchError> {
    let n = gen.config().record_count;
    let batch = u64::from(load.batch.max(1));
    let (mut ops, mut aborts) = (0u64, 0u64);
    let mut lat = LatencyHistogram::new();
    let mut i = th;
    // A retried batch keeps its first try's age (wait-die's order: it is not starved).
    let mut first_try = None;
    while i < n {
        let t0 = Instant::now();
        let mut t = match first_try {
            Some(age) => db.begin_retry(age)?,
            None => db.begin()?,
        };
        let mut j = i;
        let mut k = 0;
        let done = loop {
            if k == batch || j >= n {
                break Ok(());
            }
            if let Err(e) = t.put(tree, &gen.load_key(j), &gen.load_value(j)) {
                break Err(e);
            }
            j += threads;
            k += 1;
        };
        match done {
            Ok(()) => {
                t.commit()?;
                first_try = None;
                ops += k;
                i = j;
                lat.record(t0.elapsed().as_nanos() as u64);
            }
            Err(wafer_engine::Error::Conflict { .. }) => {
                first_try.get_or_insert(t.age());
                t.abort()?;
                aborts += 1;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok((ops, aborts, lat))
}

/// Loads `cfg.ycsb.record_count` records into a database (in memory or files) whose buffer
/// pool caches them all unless `buffer_mib` says less, then runs `threads` threads for
/// `duration_ms`. With [`WallConfig::load`], the load itself is what `threads` threads run and
/// what is measured.
pub fn run(cfg: &WallConfig) -> Result<WallResult, BenchError> {
    let n = cfg.ycsb.record_count;
    // The mean record: with value sizes that vary, the data set is their mean times the count.
    let bytes_per_record =
        (cfg.ycsb.key_bytes as f64 + cfg.ycsb.mean_value_bytes()).ceil() as u64 + 16;
    // Whole MiB: the devices take only multiples of their block.
    let data_bytes = (n * bytes_per_record * 3)
        .max(64 << 20)
        .next_multiple_of(1 << 20);
    let buffer_bytes = cfg
        .buffer_mib
        .map_or(data_bytes, |m| (m << 20).min(data_bytes));
    let db_cfg = DbConfig {
        buffer_pages: (buffer_bytes / 4096) as usize,
        // A fresh database every run, also when the files exist.
        open_mode: wafer_engine::OpenMode::Create,
        durable_commits: !cfg.buffered_commits,
        checkpoint_interval_ms: cfg.checkpoint_interval_ms,
        doublewrite: !cfg.out_of_place && cfg.journal.is_none(),
        out_of_place: cfg.out_of_place.then(wafer_engine::OopConfig::default),
        journal: cfg.journal.map(wafer_engine::JournalConfig::new),
        cleaner_clean_fraction: cfg.cleaner_clean_fraction,
        leaf_splits: cfg.leaf_splits,
        flushless: cfg.flushless.then(wafer_engine::FlushlessConfig::default),
        ..DbConfig::default()
    };
    let log_bytes = (db_cfg.buffer_bytes() + (8 << 20)).min(1 << 30);
    let devices = match &cfg.dir {
        Some(dir) => Devices::files(dir, data_bytes, log_bytes)?,
        None => Devices::memory(data_bytes, log_bytes),
    };
    let db = Db::open(devices, db_cfg)?;
    let tree = db.create_tree("usertable")?;
    let mut ycsb = cfg.ycsb.clone();
    if cfg.load.is_some() {
        ycsb.load_order = LoadOrder::Hashed;
    }
    let gen = std::sync::Arc::new(
        YcsbGenerator::new(&ycsb).map_err(|e| BenchError::Config(e.to_string()))?,
    );
    if cfg.load.is_none() {
        let mut i = 0;
        while i < n {
            let mut t = db.begin()?;
            for _ in 0..100.min(n - i) {
                t.put(&tree, &gen.load_key(i), &gen.load_value(i))?;
                i += 1;
            }
            t.commit()?;
        }
        db.checkpoint()?;
    }
    let background = cfg
        .background_ms
        .map(|ms| db.start_background(Duration::from_millis(ms)));
    let before = db.stats();
    let deadline = Instant::now() + Duration::from_millis(cfg.duration_ms);
    let started = Instant::now();
    let handles: Vec<_> = (0..cfg.threads)
        .map(|th| {
            let db = db.clone();
            let tree = tree.clone();
            let gen = gen.clone();
            let mut ycsb = ycsb.clone();
            let (read_txn, load, threads) = (cfg.read_txn, cfg.load, u64::from(cfg.threads));
            ycsb.seed = ycsb.seed.wrapping_add(th as u64 * 0x9E37_79B9);
            std::thread::spawn(move || -> Result<Counts, BenchError> {
                match load {
                    Some(l) => load_share(&db, &tree, &gen, l, th.into(), threads),
                    None => {
                        let gen = YcsbGenerator::new(&ycsb)
                            .map_err(|e| BenchError::Config(e.to_string()))?;
                        run_ops(&db, &tree, gen, read_txn, deadline)
                    }
                }
            })
        })
        .collect();
    let (mut ops, mut aborts) = (0, 0);
    let mut latency = LatencyHistogram::new();
    for h in handles {
        let (o, a, l) = h
            .join()
            .map_err(|_| BenchError::Config("a benchmark thread panicked".into()))??;
        ops += o;
        aborts += a;
        latency.merge(&l);
    }
    let seconds = started.elapsed().as_secs_f64();
    let after = db.stats();
    if let Some(bg) = background {
        bg.stop()?;
    }
    let hits = after.pool.hits - before.pool.hits;
    let misses = after.pool.misses - before.pool.misses;
    Ok(WallResult {
        config: cfg.clone(),
        ops,
        aborts,
        seconds,
        ops_per_s: ops as f64 / seconds,
        hit_ratio: hits as f64 / (hits + misses).max(1) as f64,
        latency: latency.summary(),
        log: WallLog::between(&before.wal, &after.wal),
        shared_ops: after.engine.shared_ops - before.engine.shared_ops,
        shared_retries: after.engine.shared_retries - before.engine.shared_retries,
        scans_resumed: after.engine.scans_resumed - before.engine.scans_resumed,
        splits_beside: after.engine.splits_beside - before.engine.splits_beside,
        checkpoints: after.engine.checkpoints - before.engine.checkpoints,
        journal_checkpoints: match (&after.journal, &before.journal) {
            (Some(a), Some(b)) => a.journal_checkpoints - b.journal_checkpoints,
            _ => 0,
        },
        foreground_slices: match (&after.journal, &before.journal) {
            (Some(a), Some(b)) => a.foreground_slices - b.foreground_slices,
            _ => 0,
        },
        misses,
        unlatched_reads: after.pool.unlatched_reads - before.pool.unlatched_reads,
        reserved_shared: after.pool.reserved_shared - before.pool.reserved_shared,
        written_ahead: after.pool.written_ahead - before.pool.written_ahead,
        exclusive_latches: after.engine.exclusive_latches - before.engine.exclusive_latches,
        cleaner_writes: after.engine.cleaner_writes - before.engine.cleaner_writes,
    })
}
