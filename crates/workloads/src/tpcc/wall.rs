//! The wall-clock TPC-C driver: T threads (one terminal each) on in-memory devices with the whole
//! database cached, for a duration. Measures the engine's own TPC-C throughput (CPU, latching,
//! lock conflicts) in New-Orders per minute; a conflict aborts the transaction and the terminal
//! retries it.

use super::check::{check, CheckReport};
use super::input::Terminal;
use super::load::load;
use super::txns::TxnCounts;
use super::{TpccConfig, TpccError};
use flashsim::LatencyHistogram;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};
use wafer_engine::{Db, DbConfig, Devices};

/// Settings of a wall-clock run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TpccWallConfig {
    /// The database and workload.
    pub tpcc: TpccConfig,
    /// Threads, one terminal each (terminal id = thread index).
    pub threads: u32,
    /// Length of the measured run.
    pub duration_ms: u64,
    /// The engine's settings (write path, doublewrite, checkpoints, page cleaner): the run
    /// sizes the pool to cache the whole database and opens in-memory devices sized for it, so
    /// `buffer_pages`, `log_space_bytes` (the whole log device) and `open_mode` are its own.
    pub engine: DbConfig,
}

/// Result of a wall-clock run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TpccWallResult {
    /// The settings.
    pub config: TpccWallConfig,
    /// Transactions by type.
    pub txns: TxnCounts,
    /// Measured mix in percent.
    pub mix_percent: [f64; 5],
    /// Wall seconds of the run.
    pub seconds: f64,
    /// New-Orders per minute.
    pub tpmc: f64,
    /// Transactions of every type per second.
    pub txns_per_s: f64,
    /// Per-transaction latency (wall clock), committed or rolled back.
    pub latency: flashsim::LatencySummary,
    /// Consistency after the run.
    pub check: CheckReport,
    /// What the engine's threads did during the measured run: how often one ran alone.
    #[serde(default)]
    pub engine: TpccWallEngine,
    /// The most tries one transaction's input took (1: never refused; each conflict adds one).
    #[serde(default)]
    pub most_tries: u32,
    /// The longest time from an input's first try to its end, retries included (`latency`
    /// times the last try only), nanoseconds.
    #[serde(default)]
    pub longest_with_retries_ns: u64,
}

/// Engine counters of a wall-clock run's measured part (differences of `Db::stats`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TpccWallEngine {
    /// Times the core latch was taken exclusive (every other thread then waits).
    pub exclusive_latches: u64,
    /// Reads, scans and plain leaf changes run with the latch shared.
    pub shared_ops: u64,
    /// Leaf splits made beside other threads.
    pub splits_beside: u64,
    /// Changes rollbacks undid beside other threads.
    pub undone_beside: u64,
}

/// Loads `cfg.tpcc` into an in-memory database sized to cache it, then runs `cfg.threads`
/// terminals for `cfg.duration_ms`, then checks consistency.
pub fn run_wall(cfg: &TpccWallConfig) -> Result<TpccWallResult, TpccError> {
    cfg.tpcc.validate()?;
    if cfg.threads == 0 {
        return Err(TpccError::Config("threads must be at least 1".into()));
    }
    let load_bytes = super::driver::estimate_load_bytes(&cfg.tpcc);
    // Room for the run's growth (the growing mode adds about 1 KiB per New-Order).
    let data_bytes = (load_bytes * 3).max(256 << 20).next_multiple_of(1 << 20);
    let db_cfg = DbConfig {
        buffer_pages: (data_bytes / cfg.engine.page_size as u64) as usize,
        log_space_bytes: None,
        open_mode: wafer_engine::OpenMode::Create,
        ..cfg.engine.clone()
    };
    let log_bytes = (db_cfg.buffer_bytes() / 4 + (8 << 20)).min(1 << 30);
    let db = Db::open(Devices::memory(data_bytes, log_bytes), db_cfg.clone())?;
    let (tables, _) = load(&db, &cfg.tpcc, &mut |_| {})?;
    db.checkpoint()?;
    let before = db.stats().engine;
    let started = Instant::now();
    let deadline = started + Duration::from_millis(cfg.duration_ms);
    let handles: Vec<_> = (0..cfg.threads)
        .map(|th| {
            let db = db.clone();
            let tables = tables.clone();
            let mut term = Terminal::new(&cfg.tpcc, th);
            std::thread::spawn(move || -> Result<Terminated, TpccError> {
                let mut counts = TxnCounts::default();
                let mut lat = LatencyHistogram::new();
                let (mut tries, mut most_tries, mut longest) = (0u32, 0u32, 0u64);
                let mut first_try = Instant::now();
                while Instant::now() < deadline {
                    let t0 = Instant::now();
                    if tries == 0 {
                        first_try = t0;
                    }
                    tries += 1;
                    let now = started.elapsed().as_micros() as u64 + 1;
                    let out = term.step(&db, &tables, now)?;
                    if out.exec.is_some() {
                        lat.record(t0.elapsed().as_nanos() as u64);
                        most_tries = most_tries.max(tries);
                        longest = longest.max(first_try.elapsed().as_nanos() as u64);
                        tries = 0;
                    } else {
                        // A conflict: let the lock holder finish before the retry.
                        std::thread::yield_now();
                    }
                    counts.record(out.kind, out.exec.as_ref());
                }
                Ok((counts, lat, most_tries, longest))
            })
        })
        .collect();
    let mut txns = TxnCounts::default();
    let mut latency = LatencyHistogram::new();
    let (mut most_tries, mut longest_with_retries_ns) = (0, 0);
    for h in handles {
        let (c, l, tries, longest) = h
            .join()
            .map_err(|_| TpccError::Config("a terminal thread panicked".into()))??;
        txns.add(&c);
        latency.merge(&l);
        most_tries = most_tries.max(tries);
        longest_with_retries_ns = longest_with_retries_ns.max(longest);
    }
    let seconds = started.elapsed().as_secs_f64();
    let after = db.stats().engine;
    let engine = TpccWallEngine {
        exclusive_latches: after.exclusive_latches - before.exclusive_latches,
        shared_ops: after.shared_ops - before.shared_ops,
        splits_beside: after.splits_beside - before.splits_beside,
        undone_beside: after.undone_beside - before.undone_beside,
    };
    let check = check(&db, &tables, &cfg.tpcc)?;
    Ok(TpccWallResult {
        // The engine's settings as the run used them (its pool and log space).
        config: TpccWallConfig {
            engine: db_cfg,
            ..cfg.clone()
        },
        mix_percent: txns.mix_percent(),
        seconds,
        tpmc: txns.new_orders() as f64 * 60.0 / seconds,
        txns_per_s: txns.total() as f64 / seconds,
        latency: latency.summary(),
        check,
        txns,
        engine,
        most_tries,
        longest_with_retries_ns,
    })
}

/// What a terminal's thread gives back: its transactions, their latencies (last tries), the
/// most tries one input took and the longest time from a first try to the end.
type Terminated = (TxnCounts, LatencyHistogram, u32, u64);
