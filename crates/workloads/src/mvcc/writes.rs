//! Rollback-segment writes (paper 003 section 5.1, Figure 4): concurrent snapshot-isolation
//! transactions, each appending the before-images of the rows it updates to its own rollback
//! segment on the undo device. Two workloads: TPC-C (the paper's), its terminals' transactions
//! interleaved statement by statement ([`crate::tpcc::interleaved`]), or plain updates of a
//! table, interleaved operation by operation.

use super::{key, value, MvccError};
use crate::hdd::HddDevice;
use crate::iotrace::{IoTrace, SharedTrace, WatchedDevice};
use crate::tpcc::input::Terminal;
use crate::tpcc::interleaved::run_interleaved;
use crate::tpcc::txns::TxnCounts;
use crate::tpcc::TpccConfig;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use wafer_engine::device::{BlockDevice, MemDevice, SimDevice, VirtualClock};
use wafer_engine::{Db, DbConfig, Devices, Error};

/// Rollback-segment writes (paper 003 Figure 4): concurrent snapshot-isolation transactions,
/// their operations interleaved round-robin, each appending its before-images to its own
/// rollback segment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MvccWriteConfig {
    /// What the transactions do.
    #[serde(default)]
    pub workload: WriteWorkload,
    /// The TPC-C database (the TPC-C workload).
    #[serde(default = "default_tpcc")]
    pub tpcc: TpccConfig,
    /// Rows of the table (the updates workload).
    pub rows: u64,
    /// Value bytes per row.
    pub value_bytes: usize,
    /// Concurrent transactions (clients).
    pub clients: u32,
    /// Updates per transaction (the updates workload).
    pub updates_per_txn: u32,
    /// Transactions to complete (TPC-C: committed or rolled back by design).
    pub txns: u64,
    /// Virtual CPU time per operation (TPC-C: per statement between pauses), ns: time passes
    /// between the undo device's writes.
    pub cpu_ns_per_op: u64,
    /// Seed of the rows each transaction updates.
    pub seed: u64,
}

impl Default for MvccWriteConfig {
    fn default() -> Self {
        MvccWriteConfig {
            workload: WriteWorkload::default(),
            tpcc: default_tpcc(),
            rows: 100_000,
            value_bytes: 200,
            clients: 16,
            updates_per_txn: 10,
            txns: 20_000,
            cpu_ns_per_op: 50_000,
            seed: 42,
        }
    }
}

/// The TPC-C database of a write run: 16 warehouses, one for each of the 16 terminals (the
/// engine's first updater wins and the others retry, where the paper's server queued them on the
/// row lock: with several terminals a warehouse most turns would go to retried Payments), at a
/// twentieth of the specification's populations, loaded in seconds.
fn default_tpcc() -> TpccConfig {
    TpccConfig {
        warehouses: 16,
        scale: 0.05,
        ..TpccConfig::default()
    }
}

/// What the transactions of a write run do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteWorkload {
    /// TPC-C's five transactions under snapshot isolation (the paper's Figure 4), one terminal
    /// a client, interleaved statement by statement.
    #[default]
    Tpcc,
    /// `updates_per_txn` updates of random rows of one table a transaction, interleaved
    /// operation by operation.
    Updates,
}

/// The undo device of a write run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UndoWriteDevice {
    /// The paper's disk with its 8 MB write cache (a write waits only when the cache is full).
    DiskCached,
    /// The same disk write-through (each write waits for the platter: seek, rotation).
    DiskWriteThrough,
    /// The paper's SLC SSD.
    Flash,
}

/// What one write run measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MvccWriteRun {
    /// The undo device.
    pub device: UndoWriteDevice,
    /// The workload.
    #[serde(default)]
    pub workload: WriteWorkload,
    /// Transactions committed, and refused (first updater wins: retried).
    pub committed: u64,
    /// Transactions that hit a write conflict and were retried.
    pub conflicts: u64,
    /// The undo device's writes over the run.
    pub timing: crate::iotrace::IoTiming,
    /// Mean virtual time per 4 KiB block written.
    pub write_ns_per_block: f64,
    /// Mean distance between consecutive writes, bytes (the paper: about 1 MB).
    pub mean_write_distance: f64,
    /// Rollback segments at the end (they grow with concurrency).
    pub segments: u64,
    /// TPC-C: transactions by type, and whether the consistency checks passed after the run.
    #[serde(default)]
    pub tpcc: Option<(TxnCounts, bool)>,
    /// The writes, time x address (Figure 4).
    pub trace: IoTrace,
}

/// Runs `clients` snapshot transactions whose updates interleave, with the rollback segments on
/// `kind`.
pub fn run_writes(cfg: &MvccWriteConfig, kind: UndoWriteDevice) -> Result<MvccWriteRun, MvccError> {
    let clock = VirtualClock::shared();
    let trace: SharedTrace = Arc::new(Mutex::new(IoTrace::new(20_000)));
    let timing = Arc::new(Mutex::new(crate::iotrace::IoTiming::default()));
    let inner: Box<dyn BlockDevice> = match kind {
        UndoWriteDevice::DiskCached => Box::new(HddDevice::new(
            flashsim::HddConfig::barracuda_7200_10(),
            clock.clone(),
        )?),
        UndoWriteDevice::DiskWriteThrough => Box::new(HddDevice::new(
            flashsim::HddConfig::barracuda_7200_10().with_write_cache(0),
            clock.clone(),
        )?),
        UndoWriteDevice::Flash => Box::new(SimDevice::new(
            flashsim::Drive::Mcaqe32g.config(1 << 30, 0.1),
            clock.clone(),
        )?),
    };
    let undo = WatchedDevice::watched(
        inner,
        clock.clone(),
        Some(trace.clone()),
        Some(timing.clone()),
    );
    let (committed, conflicts, segments, tpcc) = match cfg.workload {
        WriteWorkload::Updates => run_updates(cfg, Box::new(undo), &clock, &trace, &timing)?,
        WriteWorkload::Tpcc => run_tpcc(cfg, Box::new(undo), &clock, &trace, &timing)?,
    };
    let timing = *timing.lock().expect("timing");
    let trace = trace.lock().expect("trace").clone();
    let writes: Vec<u64> = (0..trace.offset.len())
        .filter(|&k| trace.write[k])
        .map(|k| trace.offset[k])
        .collect();
    let mean_write_distance = if writes.len() > 1 {
        writes
            .windows(2)
            .map(|w| w[0].abs_diff(w[1]) as f64)
            .sum::<f64>()
            / (writes.len() - 1) as f64
    } else {
        0.0
    };
    Ok(MvccWriteRun {
        device: kind,
        workload: cfg.workload,
        tpcc,
        committed,
        conflicts,
        write_ns_per_block: timing.write_ns as f64 / (timing.write_bytes as f64 / 4096.0).max(1.0),
        timing,
        mean_write_distance,
        segments,
        trace,
    })
}

/// Transactions completed, conflicts, rollback segments, TPC-C counts and check.
type WorkloadRun = (u64, u64, u64, Option<(TxnCounts, bool)>);

/// Forgets what the undo device did so far: the record covers the run, not the load.
fn reset_record(trace: &SharedTrace, timing: &Mutex<crate::iotrace::IoTiming>) {
    *trace.lock().expect("trace") = IoTrace::new(20_000);
    *timing.lock().expect("timing") = Default::default();
}

/// The updates workload: `clients` transactions in flight, one update each per round.
fn run_updates(
    cfg: &MvccWriteConfig,
    undo: Box<dyn BlockDevice>,
    clock: &Arc<VirtualClock>,
    trace: &SharedTrace,
    timing: &Mutex<crate::iotrace::IoTiming>,
) -> Result<WorkloadRun, MvccError> {
    use rand::{Rng, SeedableRng};
    let devices = Devices::new(
        Box::new(MemDevice::new(256 << 20, 4096)),
        Box::new(MemDevice::new(256 << 20, 4096)),
    )
    .with_undo(undo);
    let db = Db::open(
        devices,
        DbConfig {
            buffer_pages: 32_768,
            log_space_bytes: Some(256 << 20),
            ..DbConfig::default()
        },
    )?;
    let t = db.create_tree("table")?;
    let mut i = 0;
    while i < cfg.rows {
        let mut w = db.begin()?;
        for j in i..(i + 5000).min(cfg.rows) {
            w.put(&t, &key(j), &value(j, 0, cfg.value_bytes))?;
        }
        w.commit()?;
        i += 5000;
    }
    db.checkpoint()?;
    reset_record(trace, timing);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(cfg.seed);
    // (transaction, updates done)
    let mut live: Vec<Option<(wafer_engine::Txn, u32)>> = (0..cfg.clients).map(|_| None).collect();
    let (mut committed, mut conflicts, mut round) = (0u64, 0u64, 0u32);
    while committed < cfg.txns {
        round += 1;
        for slot in live.iter_mut() {
            if committed >= cfg.txns {
                break;
            }
            clock.advance_by(cfg.cpu_ns_per_op);
            let (txn, done) = match slot {
                Some(s) => s,
                None => slot.insert((db.begin_snapshot()?, 0)),
            };
            let row = rng.random_range(0..cfg.rows);
            match txn.put(&t, &key(row), &value(row, round, cfg.value_bytes)) {
                Ok(_) => {
                    *done += 1;
                    if *done >= cfg.updates_per_txn {
                        let (txn, _) = slot.take().expect("live");
                        txn.commit()?;
                        committed += 1;
                    }
                }
                Err(Error::Conflict { .. }) => {
                    let (txn, _) = slot.take().expect("live");
                    txn.abort()?;
                    conflicts += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    for slot in live.iter_mut() {
        if let Some((txn, _)) = slot.take() {
            txn.abort()?;
        }
    }
    let segments = db.stats().versions.unwrap_or_default().segments;
    Ok((committed, conflicts, segments, None))
}

/// The TPC-C workload: `clients` terminals under snapshot isolation, interleaved statement by
/// statement; the consistency checks run after it.
fn run_tpcc(
    cfg: &MvccWriteConfig,
    undo: Box<dyn BlockDevice>,
    clock: &Arc<VirtualClock>,
    trace: &SharedTrace,
    timing: &Mutex<crate::iotrace::IoTiming>,
) -> Result<WorkloadRun, MvccError> {
    cfg.tpcc.validate()?;
    let load_bytes = crate::tpcc::driver::estimate_load_bytes(&cfg.tpcc);
    // Room for the run's growth (about 1 KiB a New-Order); the whole database is cached.
    let data_bytes = (load_bytes * 3 + cfg.txns * 2048)
        .max(256 << 20)
        .next_multiple_of(1 << 20);
    let db = Db::open(
        Devices::new(
            Box::new(MemDevice::new(data_bytes, 4096)),
            Box::new(MemDevice::new(512 << 20, 4096)),
        )
        .with_undo(undo),
        DbConfig {
            buffer_pages: (data_bytes / 4096) as usize,
            log_space_bytes: Some(512 << 20),
            // The terminals take turns on their threads (a baton): a holder cannot run while
            // another terminal waits for it.
            wait_for_running_holders: false,
            ..DbConfig::default()
        },
    )?;
    let (tables, _) = crate::tpcc::load::load(&db, &cfg.tpcc, &mut |_| {})?;
    db.checkpoint()?;
    reset_record(trace, timing);
    let terminals = (0..cfg.clients)
        .map(|c| Terminal::new(&cfg.tpcc, c).with_snapshot_isolation(true))
        .collect();
    let run = run_interleaved(
        &db,
        &tables,
        terminals,
        cfg.txns,
        &|_| {
            clock.advance_by(cfg.cpu_ns_per_op);
        },
        &|| clock.now() / 1000 + 1,
    )?;
    let segments = db.stats().versions.unwrap_or_default().segments;
    let passed = crate::tpcc::check::check(&db, &tables, &cfg.tpcc)?.passed();
    let conflicts = run.txns.conflicts.iter().sum();
    Ok((
        run.txns.total(),
        conflicts,
        segments,
        Some((run.txns, passed)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_writers_append_to_their_own_segments() {
        let cfg = MvccWriteConfig {
            workload: WriteWorkload::Updates,
            rows: 5000,
            txns: 600,
            ..MvccWriteConfig::default()
        };
        let flash = run_writes(&cfg, UndoWriteDevice::Flash).unwrap();
        assert_eq!(flash.committed, 600);
        assert!(flash.segments >= cfg.clients as u64, "{}", flash.segments);
        // Consecutive writes go to different segments' extents, about 1 MiB apart.
        assert!(
            flash.mean_write_distance > 256.0 * 1024.0,
            "{}",
            flash.mean_write_distance
        );
        let raw = run_writes(&cfg, UndoWriteDevice::DiskWriteThrough).unwrap();
        assert!(raw.write_ns_per_block > 2.0 * flash.write_ns_per_block);
    }

    #[test]
    fn tpcc_terminals_interleave_each_in_its_own_segment_deterministically() {
        let cfg = MvccWriteConfig {
            clients: 8,
            txns: 400,
            tpcc: TpccConfig {
                warehouses: 1,
                scale: 0.02,
                ..TpccConfig::default()
            },
            ..MvccWriteConfig::default()
        };
        let run = run_writes(&cfg, UndoWriteDevice::Flash).unwrap();
        let (txns, passed) = run.tpcc.clone().expect("TPC-C counts");
        assert!(
            passed,
            "the consistency checks pass after the interleaved run"
        );
        assert!(txns.total() >= 400 && run.committed == txns.total());
        // Transactions overlapped: several writers at once, so several segments.
        assert!(run.segments >= 4, "{} segments", run.segments);
        assert!(run.timing.write_bytes > 0);
        let again = run_writes(&cfg, UndoWriteDevice::Flash).unwrap();
        assert_eq!(again.trace, run.trace, "the same seed, the same writes");
        assert_eq!(again.conflicts, run.conflicts);
    }
}
