//! MVCC reads from rollback segments on disk and on flash (paper 003 section 5.2, Table 4 and
//! Figure 5): transaction T1 scans a table under snapshot isolation; T2, T3 and T4 each update
//! every row and commit; T1 scans again, and every row's version at its snapshot is three
//! before-images deep in the rollback segments on the undo device. The second scan's undo reads
//! are timed on the undo device's own virtual clock: the paper's disk (Barracuda 7200.10) or
//! its flash SSD (`mcaqe32g`). The table is cached (the paper sizes the buffer cache to hold
//! it), so the undo device is the only one whose time counts.

use crate::hdd::HddDevice;
use crate::iotrace::{IoTrace, SharedTrace, WatchedDevice};
use serde::{Deserialize, Serialize};
use std::ops::Bound;
use std::sync::{Arc, Mutex};
use wafer_engine::device::{BlockDevice, MemDevice, SimDevice, VirtualClock};
use wafer_engine::{Db, DbConfig, Devices, Error, VersionStats};

mod writes;
pub use writes::{run_writes, MvccWriteConfig, MvccWriteRun, UndoWriteDevice, WriteWorkload};

/// The undo device of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UndoDevice {
    /// flashsim's hard-disk model, the paper's Barracuda 7200.10.
    Disk,
    /// flashsim, the paper's SLC SSD (`mcaqe32g`).
    Flash,
}

/// The experiment's size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MvccReadConfig {
    /// Rows of the table.
    pub rows: u64,
    /// Value bytes per row (keys are 8 bytes).
    pub value_bytes: usize,
    /// Transactions that each update every row between the two scans.
    pub updaters: u32,
    /// Logical bytes of the flash undo device (the disk is the whole 250 GB drive).
    pub undo_bytes: u64,
    /// Points kept of the second scan's read scatter.
    pub trace_points: usize,
}

impl Default for MvccReadConfig {
    fn default() -> Self {
        MvccReadConfig {
            rows: 100_000,
            value_bytes: 400,
            updaters: 3,
            undo_bytes: 1 << 30,
            trace_points: 4000,
        }
    }
}

/// What one run measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MvccReadRun {
    /// Where the rollback segments were.
    pub device: UndoDevice,
    /// Rows of the table.
    pub rows: u64,
    /// Pages of the table: its rows' bytes (key and value) packed into 4 KiB pages, the `N`
    /// of "about 3N pages".
    pub table_pages: u64,
    /// Rows the second scan returned (all of them, at their original values).
    pub rows_scanned: u64,
    /// Undo blocks (4 KiB) the second scan read from the device.
    pub undo_pages_read: u64,
    /// Before-images it followed.
    pub chain_reads: u64,
    /// Virtual time the undo device spent on the second scan's reads.
    pub read_ns: u64,
    /// Mean time per undo page read.
    pub read_ns_per_page: f64,
    /// Bytes the updaters appended to rollback segments.
    pub undo_appended_bytes: u64,
    /// Rollback segments used.
    pub segments: u64,
    /// The second scan's reads, time x address (Figure 5).
    pub trace: IoTrace,
    /// The version store's counters at the end of the second scan.
    pub versions: VersionStats,
}

/// The result of `wafer bench mvcc` (the input of `wafer report`; `kind` is `"mvcc"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MvccBenchResult {
    /// Always "mvcc".
    pub kind: String,
    /// The experiment's size.
    pub config: MvccReadConfig,
    /// One run per undo device.
    pub runs: Vec<MvccReadRun>,
    /// The write experiment's size (when it ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_config: Option<MvccWriteConfig>,
    /// Its runs, one per undo device.
    #[serde(default)]
    pub writes: Vec<MvccWriteRun>,
}

/// Why the experiment failed.
#[derive(Debug, thiserror::Error)]
pub enum MvccError {
    /// The engine refused an operation.
    #[error("engine: {0}")]
    Engine(#[from] Error),
    /// A device could not be built.
    #[error("device: {0}")]
    Device(#[from] wafer_engine::device::DeviceError),
    /// The TPC-C workload failed.
    #[error("tpcc: {0}")]
    Tpcc(#[from] crate::tpcc::TpccError),
    /// The scans disagree.
    #[error("check failed: {0}")]
    Check(String),
}

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

fn value(i: u64, round: u32, len: usize) -> Vec<u8> {
    let mut v = vec![b'a' + (round % 26) as u8; len];
    v[..8.min(len)].copy_from_slice(&i.to_le_bytes()[..8.min(len)]);
    v
}

/// The undo device of `kind` on its own clock, watched for its reads.
fn undo_device(
    kind: UndoDevice,
    cfg: &MvccReadConfig,
    clock: Arc<VirtualClock>,
    trace: SharedTrace,
) -> Result<Box<dyn BlockDevice>, MvccError> {
    let inner: Box<dyn BlockDevice> = match kind {
        UndoDevice::Disk => Box::new(HddDevice::new(
            flashsim::HddConfig::barracuda_7200_10(),
            clock.clone(),
        )?),
        UndoDevice::Flash => Box::new(SimDevice::new(
            flashsim::Drive::Mcaqe32g.config(cfg.undo_bytes, 0.1),
            clock.clone(),
        )?),
    };
    Ok(Box::new(WatchedDevice::traced(inner, clock, trace)))
}

/// Runs the scenario with the rollback segments on `kind`.
pub fn run(cfg: &MvccReadConfig, kind: UndoDevice) -> Result<MvccReadRun, MvccError> {
    let clock = VirtualClock::shared();
    let trace: SharedTrace = Arc::new(Mutex::new(IoTrace::new(cfg.trace_points)));
    let row_bytes = 8 + cfg.value_bytes as u64 + 16;
    let table_bytes = cfg.rows * row_bytes * 2;
    // The log holds one updater's whole transaction (every row) at a time.
    let mib = |b: u64| b.div_ceil(1 << 20) << 20;
    let log_bytes = mib(cfg.rows * (row_bytes * 2 + 128) * 2).max(64 << 20);
    let data_bytes = mib(table_bytes * 2).max(64 << 20);
    let devices = Devices::new(
        Box::new(MemDevice::new(data_bytes, 4096)),
        Box::new(MemDevice::new(log_bytes, 4096)),
    )
    .with_undo(undo_device(kind, cfg, clock.clone(), trace.clone())?);
    let db_cfg = DbConfig {
        buffer_pages: (table_bytes / 4096 * 2).max(1024) as usize,
        log_space_bytes: Some(log_bytes),
        ..DbConfig::default()
    };
    let db = Db::open(devices, db_cfg)?;
    let t = db.create_tree("table")?;
    let chunk = 5000;
    let mut i = 0;
    while i < cfg.rows {
        let mut w = db.begin()?;
        for j in i..(i + chunk).min(cfg.rows) {
            w.put(&t, &key(j), &value(j, 0, cfg.value_bytes))?;
        }
        w.commit()?;
        i += chunk;
    }
    db.checkpoint()?;
    let table_pages = (cfg.rows * (8 + cfg.value_bytes as u64)).div_ceil(4096);
    let all = (Bound::Unbounded, Bound::Unbounded);
    // (1) T1 scans under its snapshot.
    let mut t1 = db.begin_snapshot()?;
    let first = t1.scan(&t, all, false, usize::MAX)?;
    // (2) Each updater changes every row and commits.
    for round in 1..=cfg.updaters {
        let mut w = db.begin()?;
        for j in 0..cfg.rows {
            w.put(&t, &key(j), &value(j, round, cfg.value_bytes))?;
        }
        w.commit()?;
    }
    let v0 = db.stats().versions.unwrap_or_default();
    let t0 = clock.now();
    *trace.lock().expect("trace") = IoTrace::new(cfg.trace_points);
    // (3) T1 scans again: every row's version is `updaters` images deep.
    let mut second = Vec::with_capacity(cfg.rows as usize);
    let mut cursor = t1.cursor(&t, all, false)?;
    for kv in &mut cursor {
        second.push(kv?);
    }
    drop(cursor);
    let read_ns = clock.now() - t0;
    let v1 = db.stats().versions.unwrap_or_default();
    t1.commit()?;
    if second != first {
        return Err(MvccError::Check(format!(
            "the second scan under the snapshot returned {} rows differing from the first's {}",
            second.len(),
            first.len()
        )));
    }
    let pages = v1.blocks_read - v0.blocks_read;
    let run = MvccReadRun {
        device: kind,
        rows: cfg.rows,
        table_pages,
        rows_scanned: second.len() as u64,
        undo_pages_read: pages,
        chain_reads: v1.chain_reads - v0.chain_reads,
        read_ns,
        read_ns_per_page: read_ns as f64 / pages.max(1) as f64,
        undo_appended_bytes: v0.appended_bytes,
        segments: v1.segments,
        trace: trace.lock().expect("trace").clone(),
        versions: v1,
    };
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_scan_reads_every_old_version_from_the_undo_device() {
        let cfg = MvccReadConfig {
            rows: 3000,
            undo_bytes: 64 << 20,
            ..MvccReadConfig::default()
        };
        let flash = run(&cfg, UndoDevice::Flash).unwrap();
        assert_eq!(flash.rows_scanned, 3000);
        assert_eq!(
            flash.chain_reads,
            3 * 3000,
            "three images deep for every row"
        );
        // Three versions of the table's rows, a page at a time (the undo records are a little
        // larger than the rows).
        let ratio = flash.undo_pages_read as f64 / flash.table_pages as f64;
        assert!(
            (3.0..3.6).contains(&ratio),
            "{ratio}: {} undo pages for {} table pages",
            flash.undo_pages_read,
            flash.table_pages
        );
        let disk = run(&cfg, UndoDevice::Disk).unwrap();
        assert_eq!(disk.undo_pages_read, flash.undo_pages_read);
        assert!(
            disk.read_ns > 5 * flash.read_ns,
            "disk {} vs flash {}",
            disk.read_ns,
            flash.read_ns
        );
        // Deterministic.
        let again = run(&cfg, UndoDevice::Flash).unwrap();
        assert_eq!(again.read_ns, flash.read_ns);
    }
}
