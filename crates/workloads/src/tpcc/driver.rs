//! The virtual-time TPC-C driver: builds a data and a log SSD (flashsim) and the engine with a
//! write-path configuration, loads W warehouses, reopens the engine with a buffer pool of
//! `buffer_fraction` x the pages the load used, runs the terminals as the closed-loop clients of
//! the benchmark harness ([`closed_loop`]; terminal = client, home warehouse = client mod W + 1;
//! think and keying times zero) until the harness's stop rule holds, then checks the consistency
//! conditions. The result is a [`TpccSummary`]: the harness's [`BenchSummary`] (every metric of
//! DESIGN.md, so `wafer report` reads it) plus tpmC, per-type counts, the measured mix, bytes per
//! New-Order and the series of cumulative media writes against New-Orders (paper 002 Figure 16).

use super::check::{check, CheckReport};
use super::input::Terminal;
use super::load::{load, LoadStats};
use super::schema::Tables;
use super::txns::TxnCounts;
use super::{Counts, TpccConfig, TpccError};
use crate::bench::metrics::{self, LatencyLog, SeriesRow, Snapshot};
use crate::bench::vtime::{closed_loop, BenchError, BenchObserver, ClientWork, Rig};
use crate::bench::{bench_ssd, BenchConfig, BenchSummary, LoopConfig, Preset};
use crate::ycsb::YcsbConfig;
use flashsim::SsdConfig;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;
use wafer_engine::DbConfig;

pub use super::wall::{run_wall, TpccWallConfig, TpccWallResult};

/// Everything a virtual-time TPC-C run depends on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TpccBenchConfig {
    /// The write-path configuration.
    pub preset: Preset,
    /// Warehouses, scale, size mode, seed.
    pub tpcc: TpccConfig,
    /// The data SSD (flashsim, data mode).
    pub data_ssd: SsdConfig,
    /// The log SSD.
    pub log_ssd: SsdConfig,
    /// The log on flashsim's disk model instead of `log_ssd` (paper 003's log-device role).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_disk: Option<flashsim::HddConfig>,
    /// Engine settings (page size, checkpoint and cleaner settings, log space, group commit);
    /// the buffer pool size and the doublewrite switch are set by the run from
    /// `buffer_fraction` and the preset.
    pub engine: DbConfig,
    /// Buffer pool of the run as a fraction of the pages the load used (paper 000: 0.5, paper
    /// 002: about 0.1).
    pub buffer_fraction: f64,
    /// Buffer pool pages during the load (None: a quarter of the data device, at most 256 MiB).
    pub load_buffer_pages: Option<usize>,
    /// Clients (terminals), CPU model and stop rule.
    pub run: LoopConfig,
    /// Check the consistency conditions after the load and after the run.
    pub check: bool,
    /// After the run, crash (drop the engine without a checkpoint: the buffer pool and the
    /// unflushed log tail are lost) and recover; report the recovery and check the result.
    #[serde(default)]
    pub crash_at_end: bool,
    /// Run the transactions under snapshot isolation, with the version store's rollback
    /// segments on this device (paper 003's undo role: flashsim's disk model or an SSD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_undo: Option<UndoDeviceConfig>,
}

/// The undo device of a snapshot-isolation run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UndoDeviceConfig {
    /// A simulated SSD.
    Ssd(SsdConfig),
    /// flashsim's disk model.
    Disk(flashsim::HddConfig),
}

/// What the undo device did over the run (snapshot isolation): paper 003 Figure 4.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UndoReport {
    /// "disk" or "ssd".
    pub device: String,
    /// Its writes and their virtual time.
    pub timing: crate::iotrace::IoTiming,
    /// Mean virtual time per 4 KiB block written.
    pub write_ns_per_block: f64,
    /// Its reads and writes over the run, time x address (thinned).
    pub trace: crate::iotrace::IoTrace,
    /// The version store's counters at the end.
    pub versions: wafer_engine::VersionStats,
}

impl TpccBenchConfig {
    /// A run of `tpcc` on a `data_bytes` data SSD with `spare_factor`, buffer pool 10% of the
    /// loaded data, 16 terminals on 8 cores with 50 us of CPU per transaction, stop at 2 x the
    /// device capacity of DB-issued writes, series rows every 5% of it.
    pub fn new(preset: Preset, tpcc: TpccConfig, data_bytes: u64, spare_factor: f64) -> Self {
        TpccBenchConfig {
            preset,
            tpcc,
            data_ssd: bench_ssd(data_bytes, spare_factor),
            log_ssd: bench_ssd((data_bytes / 8).max(32 << 20), 0.2),
            log_disk: None,
            snapshot_undo: None,
            engine: DbConfig::default(),
            buffer_fraction: 0.1,
            load_buffer_pages: None,
            run: LoopConfig {
                cpu_ns_per_op: 50_000,
                capacity_multiple: 2.0,
                interval_fraction: 0.05,
                ..LoopConfig::default()
            },
            check: true,
            crash_at_end: false,
        }
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), TpccError> {
        self.tpcc.validate()?;
        self.data_ssd
            .validate()
            .map_err(|e| TpccError::Config(e.to_string()))?;
        self.log_ssd
            .validate()
            .map_err(|e| TpccError::Config(e.to_string()))?;
        if !(0.001..=2.0).contains(&self.buffer_fraction) {
            return Err(TpccError::Config(
                "buffer_fraction must be in [0.001, 2]".into(),
            ));
        }
        self.run.validate().map_err(TpccError::Config)?;
        self.engine_config(1024).validate()?;
        Ok(())
    }

    /// The engine configuration with `buffer_pages` frames.
    pub fn engine_config(&self, buffer_pages: usize) -> DbConfig {
        self.preset.engine_config(&self.engine, buffer_pages)
    }

    fn load_buffer(&self) -> usize {
        self.load_buffer_pages.unwrap_or_else(|| {
            let pages = self.data_ssd.logical_bytes / self.engine.page_size as u64;
            let cap = (256u64 << 20) / self.engine.page_size as u64;
            (pages / 4).min(cap).max(256) as usize
        })
    }
}

/// One point of the cumulative-writes series (taken at each series row of the run).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TpccSeriesPoint {
    /// Virtual seconds since the run started.
    pub virtual_s: f64,
    /// Transactions completed.
    pub txns: u64,
    /// New-Orders completed.
    pub new_orders: u64,
    /// Media (NAND) bytes the data SSD programmed since the run started, MB.
    pub media_mb_cumulative: f64,
    /// DB-issued bytes since the run started, MB.
    pub db_issued_mb_cumulative: f64,
    /// User bytes (pages written for eviction and checkpoints) since the run started, MB.
    pub user_mb_cumulative: f64,
    /// Pages allocated in the database (high-water mark).
    pub pages_used: u64,
}

/// The result of one virtual-time TPC-C run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TpccSummary {
    /// The harness's summary: every DESIGN.md metric (what `wafer report` reads).
    pub bench: BenchSummary,
    /// The configuration of the run.
    pub config: TpccBenchConfig,
    /// Populations at the run's scale.
    pub counts: Counts,
    /// Rows the load wrote.
    pub load: LoadStats,
    /// Transactions of the run by type.
    pub txns: TxnCounts,
    /// Measured mix in percent (New-Order, Payment, Order-Status, Delivery, Stock-Level).
    pub mix_percent: [f64; 5],
    /// New-Orders completed in the run.
    pub new_orders: u64,
    /// New-Orders per virtual minute over the whole run.
    pub tpmc: f64,
    /// New-Orders per virtual minute over the last quarter of the run (from the first series
    /// point at or past 75% of its virtual time to the end).
    pub tpmc_last_quarter: f64,
    /// User, DB-issued and media bytes per New-Order over the run.
    pub user_bytes_per_new_order: f64,
    /// DB-issued bytes per New-Order.
    pub db_issued_bytes_per_new_order: f64,
    /// Media bytes per New-Order.
    pub media_bytes_per_new_order: f64,
    /// Pages allocated after the load and at the end, and the device's page capacity.
    pub pages_after_load: u64,
    /// Pages allocated at the end of the run.
    pub pages_at_end: u64,
    /// Page capacity of the data device.
    pub capacity_pages: u64,
    /// Cumulative writes against New-Orders, one point per series row (first point: 0).
    pub series: Vec<TpccSeriesPoint>,
    /// Consistency after the load.
    pub check_after_load: Option<CheckReport>,
    /// Consistency after the run.
    pub check_after_run: Option<CheckReport>,
    /// The crash and recovery after the run (`crash_at_end`); `check_after_run` then checks the
    /// recovered database.
    #[serde(default)]
    pub recovery: Option<RecoveryOutcome>,
    /// The flushless mode's counters over the run (log table, flushing-less evictions,
    /// on-the-fly redo, compaction); None in the ARIES mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flushless: Option<wafer_engine::FlushlessStats>,
    /// Pages the run wrote on eviction.
    #[serde(default)]
    pub pages_written_eviction: u64,
    /// Pages the run wrote at checkpoints (the flushless mode's compaction included).
    #[serde(default)]
    pub pages_written_checkpoint: u64,
    /// Pages the run read from the data device.
    #[serde(default)]
    pub pages_read: u64,
    /// The undo device over the run (snapshot isolation runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<UndoReport>,
}

impl TpccSummary {
    /// The figures `wafer report` shows, from this summary.
    pub fn figures(&self) -> TpccFigures {
        let run = &self.bench.run;
        TpccFigures {
            warehouses: self.config.tpcc.warehouses,
            scale: self.config.tpcc.scale,
            mode: self.config.tpcc.mode,
            tpmc: self.tpmc,
            tpmc_last_quarter: self.tpmc_last_quarter,
            new_orders: self.new_orders,
            user_bytes_per_new_order: self.user_bytes_per_new_order,
            host_bytes_per_new_order: per(run.ssd_host_bytes, self.new_orders),
            media_bytes_per_new_order: self.media_bytes_per_new_order,
            wal_bytes_per_new_order: per(self.bench.bytes.wal_bytes, self.new_orders),
            txns: self.txns.clone(),
            mix_percent: self.mix_percent,
            check: self.check_text(),
            recovery: self.recovery.clone(),
            series: self.series.clone(),
        }
    }

    /// "pass", "FAIL (what failed)" or "off".
    pub fn check_text(&self) -> String {
        check_text(
            self.check_after_load.as_ref(),
            self.check_after_run.as_ref(),
        )
    }
}

/// The TPC-C figures of a run, also carried in its [`BenchSummary`] (`tpcc`), so the report file
/// of `wafer bench tpcc --out` (what `wafer report` reads) has them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TpccFigures {
    /// Warehouses (W).
    pub warehouses: u32,
    /// Population scale (1.0 = the specification).
    pub scale: f64,
    /// Growing or steady-size database.
    pub mode: super::SizeMode,
    /// New-Orders per virtual minute over the whole run.
    pub tpmc: f64,
    /// New-Orders per virtual minute over the last quarter of the run.
    pub tpmc_last_quarter: f64,
    /// New-Orders completed in the run.
    pub new_orders: u64,
    /// User bytes (pages written for eviction and checkpoints, uncompressed) per New-Order over
    /// the run.
    pub user_bytes_per_new_order: f64,
    /// Host bytes written to the data SSD (= the DB-issued bytes) per New-Order.
    pub host_bytes_per_new_order: f64,
    /// Media (flash) bytes the data SSD programmed per New-Order.
    pub media_bytes_per_new_order: f64,
    /// Bytes written to the log device per New-Order.
    pub wal_bytes_per_new_order: f64,
    /// Transactions of the run by type, rolled-back New-Orders, conflicts, skipped deliveries.
    pub txns: TxnCounts,
    /// Measured mix in percent (New-Order, Payment, Order-Status, Delivery, Stock-Level).
    pub mix_percent: [f64; 5],
    /// The consistency checks: "pass", "FAIL (...)" or "off".
    pub check: String,
    /// The crash and recovery after the run (`--crash-at-end`), phase by phase.
    #[serde(default)]
    pub recovery: Option<RecoveryOutcome>,
    /// Cumulative writes against New-Orders, one point per series row (first point: 0).
    pub series: Vec<TpccSeriesPoint>,
}

/// "pass", "FAIL (what failed)" or "off" for the checks after the load and after the run.
pub fn check_text(after_load: Option<&CheckReport>, after_run: Option<&CheckReport>) -> String {
    match (after_load, after_run) {
        (Some(a), Some(b)) if a.passed() && b.passed() => "pass".into(),
        (Some(a), Some(b)) => format!("FAIL ({}; {})", a.describe(), b.describe()),
        _ => "off".into(),
    }
}

/// A crash after the run and the recovery that followed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecoveryOutcome {
    /// Records and times of analysis, redo and undo (virtual time: the engine runs on the
    /// simulated SSDs' clock).
    pub report: wafer_engine::RecoveryReport,
    /// Virtual time the reopen took (recovery's reads and writes on the simulated SSDs, and its
    /// final checkpoint).
    pub virtual_ms: f64,
    /// Pages the reopen wrote (redone pages written by its checkpoint; none in the flushless
    /// mode, whose restart leaves the work to on-the-fly redo).
    #[serde(default)]
    pub pages_written: u64,
    /// Flushless mode: pages the consistency check after the restart brought up to date by
    /// on-the-fly redo.
    #[serde(default)]
    pub lazy_redos: u64,
    /// ... and the records those redos applied.
    #[serde(default)]
    pub lazy_records_applied: u64,
    /// Pages written after the reopen, by the consistency check's operations.
    #[serde(default)]
    pub pages_written_after: u64,
}

/// The terminals as the harness's clients.
struct TpccWork {
    terminals: Vec<Terminal>,
    tables: Tables,
    counts: Rc<RefCell<TxnCounts>>,
    failure: Option<TpccError>,
}

impl TpccWork {
    fn run(
        &mut self,
        client: u32,
        rig: &Rig,
        deferred: bool,
    ) -> Result<(bool, Option<wafer_engine::PendingCommit>), BenchError> {
        let now = rig.clock.now().max(1);
        let term = &mut self.terminals[client as usize];
        match term.step_as(&rig.db, &self.tables, now, deferred) {
            Ok((out, pending)) => {
                self.counts.borrow_mut().record(out.kind, out.exec.as_ref());
                Ok((out.exec.is_some(), pending))
            }
            Err(TpccError::Engine(e)) => Err(BenchError::Engine(e)),
            Err(e) => {
                let msg = e.to_string();
                self.failure = Some(e);
                Err(BenchError::Config(msg))
            }
        }
    }
}

impl ClientWork for TpccWork {
    fn step(&mut self, client: u32, rig: &Rig) -> Result<bool, BenchError> {
        self.run(client, rig, false).map(|(done, _)| done)
    }

    fn step_deferred(
        &mut self,
        client: u32,
        rig: &Rig,
    ) -> Result<crate::bench::vtime::Step, BenchError> {
        use crate::bench::vtime::Step;
        Ok(match self.run(client, rig, true)? {
            (_, Some(p)) => Step::Pending(p),
            (true, None) => Step::Committed,
            (false, None) => Step::Aborted,
        })
    }
}

/// Passes progress on and records a series point at each series row.
struct SeriesObs<'a> {
    rig: &'a Rig,
    start: Snapshot,
    counts: Rc<RefCell<TxnCounts>>,
    points: Vec<TpccSeriesPoint>,
    inner: &'a mut dyn BenchObserver,
}

impl SeriesObs<'_> {
    fn point(&mut self) -> Result<(), TpccError> {
        let now = self.rig.snapshot(0, 0);
        let c = self.counts.borrow();
        let (a, b) = (&self.start, &now);
        const MB: f64 = 1e6;
        self.points.push(TpccSeriesPoint {
            virtual_s: (b.t_ns - a.t_ns) as f64 / 1e9,
            txns: c.total(),
            new_orders: c.new_orders(),
            media_mb_cumulative: (b.ssd.media_write_bytes - a.ssd.media_write_bytes) as f64 / MB,
            db_issued_mb_cumulative: (b.db.writes.db_write_bytes - a.db.writes.db_write_bytes)
                as f64
                / MB,
            user_mb_cumulative: (b.db.writes.user_write_bytes - a.db.writes.user_write_bytes)
                as f64
                / MB,
            pages_used: self.rig.db.page_usage()?.0,
        });
        Ok(())
    }
}

impl BenchObserver for SeriesObs<'_> {
    fn phase(&mut self, name: &str) {
        self.inner.phase(name);
    }
    fn progress(&mut self, done: f64) {
        self.inner.progress(done);
    }
    fn row(&mut self, row: &SeriesRow) {
        // page_usage only fails on a poisoned handle, which the loop reports itself.
        let _ = self.point();
        self.inner.row(row);
    }
}

fn per(bytes: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        bytes as f64 / n as f64
    }
}

/// Runs one TPC-C benchmark in virtual time; `name` names the run (the preset's name in tables).
pub fn run_vtime(
    name: &str,
    cfg: &TpccBenchConfig,
    obs: &mut dyn BenchObserver,
) -> Result<TpccSummary, TpccError> {
    run_vtime_logged(name, cfg, obs).map(|(s, _)| s)
}

/// [`run_vtime`], also returning every transaction latency of the run, one histogram per series
/// interval.
pub fn run_vtime_logged(
    name: &str,
    cfg: &TpccBenchConfig,
    obs: &mut dyn BenchObserver,
) -> Result<(TpccSummary, LatencyLog), TpccError> {
    cfg.validate()?;
    use crate::bench::vtime::LogDevice;
    let undo = cfg.snapshot_undo.as_ref().map(|u| match u {
        UndoDeviceConfig::Ssd(c) => LogDevice::Ssd(c.clone()),
        UndoDeviceConfig::Disk(c) => LogDevice::Disk(c.clone()),
    });
    let mut rig = Rig::open_devices_with(
        &cfg.preset.data_ssd(&cfg.data_ssd, 512),
        &match &cfg.log_disk {
            Some(d) => LogDevice::Disk(d.clone()),
            None => LogDevice::Ssd(cfg.log_ssd.clone()),
        },
        undo.as_ref(),
        cfg.engine_config(cfg.load_buffer()),
    )?;
    obs.phase("load");
    let before_load = rig.snapshot(0, 0);
    let (tables, load_stats) = load(&rig.db, &cfg.tpcc, &mut |f| obs.progress(f))?;
    rig.db.checkpoint()?;
    let after_load = rig.snapshot(0, 0);
    let check_after_load = match cfg.check {
        true => Some(check(&rig.db, &tables, &cfg.tpcc)?),
        false => None,
    };
    drop(tables);
    let (pages_after_load, capacity_pages) = rig.db.page_usage()?;
    let buffer_pages = ((cfg.buffer_fraction * pages_after_load as f64) as usize).max(256);
    rig.reopen(cfg.engine_config(buffer_pages))?;
    let tables = Tables::open(&rig.db)?;

    obs.phase("run");
    // The undo device's record covers the run only.
    let undo_start = rig.undo.as_ref().map(|u| {
        *u.trace.lock().expect("trace") = crate::iotrace::IoTrace::new(4000);
        *u.timing.lock().expect("timing")
    });
    let counts = Rc::new(RefCell::new(TxnCounts::default()));
    let mut work = TpccWork {
        terminals: (0..cfg.run.clients)
            .map(|c| {
                Terminal::new(&cfg.tpcc, c).with_snapshot_isolation(cfg.snapshot_undo.is_some())
            })
            .collect(),
        tables,
        counts: counts.clone(),
        failure: None,
    };
    let mut sobs = SeriesObs {
        rig: &rig,
        start: rig.snapshot(0, 0),
        counts: counts.clone(),
        points: Vec::new(),
        inner: obs,
    };
    sobs.point()?;
    let page_size = cfg.engine.page_size;
    let r = match closed_loop(&rig, &cfg.run, page_size, &mut work, &mut sobs) {
        Ok(r) => r,
        Err(e) => return Err(work.failure.take().unwrap_or(TpccError::Bench(e))),
    };
    let series = std::mem::take(&mut sobs.points);
    drop(sobs);
    let txns = counts.borrow().clone();
    let pages_at_end = rig.db.page_usage()?.0;
    let end_stats = rig.db.stats();
    let recovery = if cfg.crash_at_end {
        let t0 = rig.clock.now();
        // The same memory as the run (in the flushless mode `pool_frames` is only the frames).
        rig.crash_and_reopen(cfg.engine_config(buffer_pages))?;
        let virtual_ms = (rig.clock.now() - t0) as f64 / 1e6;
        let stats = rig.db.stats();
        let report = stats.recovery.unwrap_or_default();
        let pages_written = stats.writes.eviction_writes + stats.writes.checkpoint_writes;
        work.tables = Tables::open(&rig.db)?;
        Some(RecoveryOutcome {
            report,
            virtual_ms,
            pages_written,
            lazy_redos: 0,
            lazy_records_applied: 0,
            pages_written_after: 0,
        })
    } else {
        None
    };
    let check_after_run = match cfg.check {
        true => Some(check(&rig.db, &work.tables, &cfg.tpcc)?),
        false => None,
    };
    let mut recovery = recovery;
    if let Some(r) = recovery.as_mut() {
        let s = rig.db.stats();
        if let Some(f) = &s.flushless {
            r.lazy_redos = f.table.otf_redos;
            r.lazy_records_applied = f.table.otf_records_applied;
        }
        r.pages_written_after =
            (s.writes.eviction_writes + s.writes.checkpoint_writes).saturating_sub(r.pages_written);
    }
    let ssd_end = rig.data.lock().ssd().report();
    let run = metrics::window(&r.start, &r.end);
    let new_orders = txns.new_orders();
    let tpmc = new_orders as f64 * 60.0 / run.virtual_s.max(1e-9);
    let tpmc_last_quarter = match series.last() {
        Some(last) => {
            let from = series
                .iter()
                .find(|p| p.virtual_s >= 0.75 * last.virtual_s)
                .unwrap_or(last);
            let dt = last.virtual_s - from.virtual_s;
            if dt > 0.0 {
                (last.new_orders - from.new_orders) as f64 * 60.0 / dt
            } else {
                tpmc
            }
        }
        None => tpmc,
    };
    let fill = pages_after_load as f64 / capacity_pages.max(1) as f64;
    let bench_cfg = BenchConfig {
        preset: cfg.preset,
        data_ssd: cfg.data_ssd.clone(),
        log_ssd: cfg.log_ssd.clone(),
        // The engine configuration the run used (the preset's write path, the run's pool).
        engine: cfg.engine_config(buffer_pages),
        fill: fill.clamp(0.05, 0.98),
        buffer_fraction: cfg.buffer_fraction,
        check_in_unit_bytes: 512,
        ycsb: YcsbConfig {
            record_count: load_stats.rows,
            seed: cfg.tpcc.seed,
            ..YcsbConfig::default()
        },
        workload_label: Some(format!(
            "TPC-C, W={} at scale {}, {} size, {} rows loaded",
            cfg.tpcc.warehouses,
            cfg.tpcc.scale,
            match cfg.tpcc.mode {
                super::SizeMode::Growing => "growing",
                super::SizeMode::Steady => "steady",
            },
            load_stats.rows
        )),
        run: cfg.run.clone(),
    };
    let bench = BenchSummary {
        name: name.to_string(),
        description: cfg.preset.describe().to_string(),
        config: bench_cfg,
        records: load_stats.rows,
        fill_achieved: fill,
        load: metrics::window(&before_load, &after_load),
        run: run.clone(),
        steady: r.steady,
        steady_state: r.steady_state,
        bytes: metrics::breakdown(&r.start, &r.end),
        aborts: r.aborts,
        latency: r.latency.summary(),
        ssd_gc_runs: r.end.ssd.gc_runs - r.start.ssd.gc_runs,
        ssd_erases: r.end.ssd.eu_erases - r.start.ssd.eu_erases,
        ssd_redundant_write_bytes: r.end.ssd.redundant_write_bytes
            - r.start.ssd.redundant_write_bytes,
        checkpoints: r.checkpoints.clone(),
        journal: match (&r.end.db.journal, &r.start.db.journal) {
            (Some(e), Some(b)) => Some(e.since(b)),
            (e, _) => e.clone(),
        },
        devices: metrics::roles(&r.start, &r.end),
        wear: ssd_end.wear,
        series: r.series,
        tpcc: None,
    };
    let latency_log = r.latency_log;
    let mut s = TpccSummary {
        mix_percent: txns.mix_percent(),
        new_orders,
        tpmc,
        tpmc_last_quarter,
        user_bytes_per_new_order: per(run.user_bytes, new_orders),
        db_issued_bytes_per_new_order: per(run.db_issued_bytes, new_orders),
        media_bytes_per_new_order: per(run.ssd_media_bytes, new_orders),
        pages_after_load,
        pages_at_end,
        capacity_pages,
        series,
        check_after_load,
        check_after_run,
        recovery,
        flushless: end_stats.flushless.clone(),
        pages_written_eviction: end_stats.writes.eviction_writes,
        pages_written_checkpoint: end_stats.writes.checkpoint_writes,
        pages_read: end_stats.writes.page_reads,
        undo: match (&rig.undo, undo_start) {
            (Some(u), Some(t0)) => {
                let timing = u.timing.lock().expect("timing").since(&t0);
                Some(UndoReport {
                    device: match cfg.snapshot_undo {
                        Some(UndoDeviceConfig::Disk(_)) => "disk".into(),
                        _ => "ssd".into(),
                    },
                    timing,
                    write_ns_per_block: timing.write_ns as f64
                        / (timing.write_bytes as f64 / 4096.0).max(1.0),
                    trace: u.trace.lock().expect("trace").clone(),
                    versions: end_stats.versions.clone().unwrap_or_default(),
                })
            }
            _ => None,
        },
        counts: cfg.tpcc.counts(),
        load: load_stats,
        txns,
        config: cfg.clone(),
        bench,
    };
    s.bench.tpcc = Some(s.figures());
    Ok((s, latency_log))
}

/// Rough bytes of B+tree pages the load of `tpcc` needs (for sizing a device): rows times their
/// stored size with the page overhead, calibrated on this engine's 4 KiB pages (1 warehouse at
/// scale 1: 21,498 pages = 88 MB; the estimate is 90 MB).
pub fn estimate_load_bytes(tpcc: &TpccConfig) -> u64 {
    let c = tpcc.counts();
    let w = tpcc.warehouses as u64;
    let per_district = c.customers as u64 * (700 + 60 + 60 + 10)
        + c.orders as u64 * (40 + 20 + 10 * 75)
        + c.new_orders as u64 * 12;
    let per_warehouse = c.items as u64 * 320 + 10 * per_district;
    c.items as u64 * 90 + w * per_warehouse
}
