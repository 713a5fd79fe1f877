//! Drives a simulated SSD ([`flashsim::Ssd`]) with a synthetic [`Workload`] and measures write
//! amplification, GC, wear and latency.
//!
//! A run has two phases:
//! 1. precondition (optional, default on): a sequential fill of the whole logical space in
//!    128 KiB writes, so the device starts full;
//! 2. the measured run: the workload until the host has written `capacity_multiple` x the logical
//!    capacity, with one [`IntervalRow`] every `interval_capacity_fraction` x capacity.
//!
//! Virtual time is a closed loop of `queue_depth` clients: each client submits its next command at
//! its previous command's completion time; commands are issued in submit-time order (ties by
//! client number) from a binary heap, so a run is deterministic. With timing disabled in the
//! device every command completes when it is submitted and only the counters matter.
//!
//! Modes: on a conventional device writes go where the pattern says. On an FDP device the
//! placement id of a write is the slice of the address space it falls in (the space split evenly
//! over the reclaim unit handles, so `streams:K` with K = handles gives each stream its own
//! handle). On a ZNS device writes go through a [`ZoneWriter`] (zone append, round-robin over the
//! open zones, reset of the oldest full zone when no empty one is left): the pattern only picks
//! read addresses, and the SSD WAF is exactly 1.0 by construction.

use crate::synthetic::{Generator, Op, OpKind, Workload, WorkloadError};
use crate::zoned::ZoneWriter;
use flashsim::{
    Capacity, Counters, HandleStats, LatencySummary, Mode, SimError, Ssd, SsdConfig, WearReport,
};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};

/// Size of the sequential writes that precondition the device.
pub const FILL_CHUNK_BYTES: u64 = 128 << 10;

const GIB: f64 = (1u64 << 30) as f64;

/// The most host writes a run may be asked for, in device capacities (a larger value is a typo:
/// it would run for days).
pub const MAX_CAPACITY_MULTIPLE: f64 = 10_000.0;

/// How long to run and how to drive the device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunParams {
    /// Host bytes to write in the measured run, as a multiple of the logical capacity.
    pub capacity_multiple: f64,
    /// Fill the logical space sequentially before the measured run.
    pub precondition: bool,
    /// One report row per this fraction of the logical capacity written.
    pub interval_capacity_fraction: f64,
    /// Outstanding commands (closed-loop clients).
    pub queue_depth: u32,
    /// ZNS only: zones appended to round-robin (default: the device's max open zones).
    pub open_zones: Option<u32>,
}

impl Default for RunParams {
    fn default() -> Self {
        RunParams {
            capacity_multiple: 4.0,
            precondition: true,
            interval_capacity_fraction: 0.25,
            queue_depth: 32,
            open_zones: None,
        }
    }
}

impl RunParams {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), RunError> {
        let pos = |field: &'static str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(bad(field, format!("{v} must be a positive number")))
            }
        };
        pos("capacity_multiple", self.capacity_multiple)?;
        if self.capacity_multiple > MAX_CAPACITY_MULTIPLE {
            return Err(bad(
                "capacity_multiple",
                format!(
                    "{} is more than {MAX_CAPACITY_MULTIPLE} device capacities of writes",
                    self.capacity_multiple
                ),
            ));
        }
        pos(
            "interval_capacity_fraction",
            self.interval_capacity_fraction,
        )?;
        if self.queue_depth == 0 || self.queue_depth > 65536 {
            return Err(bad("queue_depth", "must be in 1..=65536"));
        }
        if self.open_zones == Some(0) {
            return Err(bad("open_zones", "must be at least 1"));
        }
        Ok(())
    }
}

/// Errors of a simulation run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// The workload description is invalid.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// The device rejected its configuration or a command.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A run parameter out of range, or a workload that does not suit the device.
    #[error("invalid run parameter: {field}: {reason}")]
    BadParam {
        /// The parameter.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

fn bad(field: &'static str, reason: impl Into<String>) -> RunError {
    RunError::BadParam {
        field,
        reason: reason.into(),
    }
}

/// The phases of a run, announced to the [`RunObserver`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The sequential fill of the logical space.
    Precondition,
    /// The measured run.
    Run,
}

/// Receives progress while a run goes on. Every method does nothing by default.
pub trait RunObserver {
    /// A phase starts.
    fn phase(&mut self, _phase: Phase) {}
    /// Host bytes written so far over both phases, of `total_bytes` (called ~1000 times per run).
    fn progress(&mut self, _done_bytes: u64, _total_bytes: u64) {}
    /// A report row is complete.
    fn row(&mut self, _row: &IntervalRow) {}
}

/// An observer that ignores everything.
pub struct Quiet;
impl RunObserver for Quiet {}

/// An observer that only forwards progress to a `fn(done_bytes, total_bytes)`.
pub struct ProgressFn<F: FnMut(u64, u64)>(pub F);
impl<F: FnMut(u64, u64)> RunObserver for ProgressFn<F> {
    fn progress(&mut self, done_bytes: u64, total_bytes: u64) {
        (self.0)(done_bytes, total_bytes)
    }
}

/// One report row of the measured run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalRow {
    /// Host bytes written since the measured run began.
    pub host_write_bytes: u64,
    /// The same in GiB.
    pub host_written_gib: f64,
    /// `host_write_bytes` / logical capacity.
    pub capacity_multiple: f64,
    /// SSD WAF of this interval's writes.
    pub waf_interval: f64,
    /// SSD WAF since the measured run began.
    pub waf_cumulative: f64,
    /// GC victims collected during the interval.
    pub gc_runs: u64,
    /// Erase units erased during the interval.
    pub eu_erases: u64,
    /// Free erase units at the end of the interval.
    pub free_eus: u64,
    /// Virtual time since the measured run began (timing enabled only).
    pub virtual_time_s: Option<f64>,
    /// Host write throughput over the interval, MB/s (10^6 bytes), virtual time.
    pub write_mb_s: Option<f64>,
    /// Host read throughput over the interval, MB/s, virtual time.
    pub read_mb_s: Option<f64>,
    /// Commands per second over the interval, virtual time.
    pub ops_per_s: Option<f64>,
}

/// Totals of one phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseSummary {
    /// Host bytes written.
    pub host_write_bytes: u64,
    /// Host bytes read.
    pub host_read_bytes: u64,
    /// Write commands.
    pub write_ops: u64,
    /// Read commands.
    pub read_ops: u64,
    /// SSD WAF of the phase's writes.
    pub waf: f64,
    /// Virtual duration of the phase (timing enabled only).
    pub virtual_elapsed_ns: Option<u64>,
    /// Host write throughput, MB/s (10^6 bytes), virtual time.
    pub write_mb_s: Option<f64>,
    /// Host read throughput, MB/s, virtual time.
    pub read_mb_s: Option<f64>,
    /// Commands per second, virtual time.
    pub ops_per_s: Option<f64>,
}

/// Everything a run measured, with the full configuration that produced it. Contains no
/// wall-clock quantities, so the same inputs serialise to the same bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The device configuration (includes the device seed).
    pub ssd: SsdConfig,
    /// The workload (includes the workload seed).
    pub workload: Workload,
    /// The run parameters, with defaults resolved (e.g. `open_zones`).
    pub params: RunParams,
    /// "conventional", "zns" or "fdp".
    pub mode: String,
    /// Logical and physical capacity, OP and spare factor of the device.
    pub capacity: Capacity,
    /// Totals of the preconditioning fill (`None` when skipped).
    pub precondition: Option<PhaseSummary>,
    /// Totals of the measured run.
    pub run: PhaseSummary,
    /// SSD WAF over the whole measured run.
    pub waf_cumulative: f64,
    /// SSD WAF of the last full interval (steady state): a final interval shorter than half an
    /// interval (a run that stopped part-way through one) is merged into the one before.
    pub waf_steady: f64,
    /// Device counters at the end (cumulative since the device was created).
    pub counters: Counters,
    /// Device counters when the measured run began (after preconditioning).
    pub counters_run_start: Counters,
    /// Erase counts and lifetime projections at the end.
    pub wear: WearReport,
    /// Read latencies of the measured run (histograms are cleared after preconditioning).
    pub read_latency: LatencySummary,
    /// Write latencies of the measured run.
    pub write_latency: LatencySummary,
    /// Per reclaim unit handle statistics (one entry unless FDP).
    pub handles: Vec<HandleStats>,
    /// Fraction of the logical space mapped at the end.
    pub fill: f64,
    /// Free erase units at the end.
    pub free_eus: u64,
    /// One row per interval of the measured run.
    pub rows: Vec<IntervalRow>,
    /// The replayed trace, when the run replayed one instead of the synthetic workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::TraceInfo>,
}

/// Builds a device from `cfg` and runs `workload` on it.
pub fn run(
    cfg: SsdConfig,
    workload: &Workload,
    params: &RunParams,
    obs: &mut dyn RunObserver,
) -> Result<RunSummary, RunError> {
    let mut ssd = Ssd::new(cfg)?;
    run_on(&mut ssd, workload, params, obs)
}

/// The name of a device mode in summaries.
pub fn mode_name(mode: &Mode) -> &'static str {
    match mode {
        Mode::Conventional => "conventional",
        Mode::Zns(_) => "zns",
        Mode::Fdp(_) => "fdp",
    }
}

/// Where writes go and how commands reach the device.
struct Driver<'a> {
    ssd: &'a mut Ssd,
    zoned: Option<ZoneWriter>,
    capacity_bytes: u64,
    handles: u32,
    timing: bool,
}

impl Driver<'_> {
    fn exec(&mut self, op: Op, at: u64) -> Result<u64, SimError> {
        match op.kind {
            OpKind::Read => self.ssd.read(at, op.offset_bytes, op.len_bytes, None),
            // Zoned devices have no trim: a zone is reset when its data is dead.
            OpKind::Trim if self.zoned.is_some() => Ok(at),
            OpKind::Trim => self.ssd.trim(at, op.offset_bytes, op.len_bytes),
            OpKind::Write => match &mut self.zoned {
                Some(z) => z.append(self.ssd, at, op.len_bytes),
                None => {
                    let pid = (op.offset_bytes as u128 * self.handles as u128
                        / self.capacity_bytes as u128) as u16;
                    self.ssd.write(at, op.offset_bytes, op.len_bytes, pid, None)
                }
            },
        }
    }

    /// Tells the device a command will follow soon (a speed hint; results do not change).
    fn prefetch(&self, op: &Op) {
        match op.kind {
            OpKind::Write if self.zoned.is_some() => {}
            OpKind::Read | OpKind::Write => self.ssd.prefetch(op.offset_bytes),
            OpKind::Trim => {}
        }
    }
}

/// A source of commands for the closed loop.
trait OpSource {
    fn next_op(&mut self) -> Op;
}

impl OpSource for crate::trace::TraceSource<'_> {
    fn next_op(&mut self) -> Op {
        crate::trace::TraceSource::next_op(self)
    }
}

impl OpSource for Generator {
    fn next_op(&mut self) -> Op {
        Generator::next_op(self)
    }
}

/// The sequential fill of preconditioning.
struct Fill {
    at: u64,
    end: u64,
}

impl OpSource for Fill {
    fn next_op(&mut self) -> Op {
        let len = FILL_CHUNK_BYTES.min(self.end - self.at);
        let op = Op {
            kind: OpKind::Write,
            offset_bytes: self.at,
            len_bytes: len,
        };
        self.at += len;
        op
    }
}

/// Running totals of a closed loop.
#[derive(Clone, Copy, Debug, Default)]
struct LoopState {
    write_bytes: u64,
    read_bytes: u64,
    write_ops: u64,
    read_ops: u64,
    trim_ops: u64,
    /// Latest completion time seen.
    now_ns: u64,
}

/// Commands the timed closed loop draws ahead of their execution, so the device can prefetch what
/// they will need (see [`Ssd::prefetch`]).
const LOOKAHEAD: usize = 16;

/// Runs `qd` clients from `start_ns` until `target_write_bytes` have been written, calling
/// `after` once per command.
///
/// Commands are drawn from `src` up to [`LOOKAHEAD`] ahead of their execution, and a command is
/// drawn only if it will be executed (the write bytes drawn before it are below the target), so
/// `src` is consumed exactly as if each command were drawn when its client is up.
fn closed_loop(
    drv: &mut Driver<'_>,
    src: &mut dyn OpSource,
    qd: u32,
    start_ns: u64,
    target_write_bytes: u64,
    mut after: impl FnMut(&mut Driver<'_>, &LoopState) -> Result<(), RunError>,
) -> Result<LoopState, RunError> {
    let mut st = LoopState {
        now_ns: start_ns,
        ..LoopState::default()
    };
    if !drv.timing && drv.zoned.is_none() && drv.handles == 1 {
        return batched_loop(drv, src, st, target_write_bytes, after);
    }
    let mut heap: BinaryHeap<Reverse<(u64, u32)>> =
        (0..qd).map(|c| Reverse((start_ns, c))).collect();
    let mut ahead: VecDeque<Op> = VecDeque::with_capacity(LOOKAHEAD);
    let mut drawn_write_bytes = 0;
    while let Some(top) = heap.peek_mut() {
        if st.write_bytes >= target_write_bytes {
            PeekMut::pop(top);
            continue;
        }
        let Reverse((t, client)) = *top;
        while ahead.len() < LOOKAHEAD && drawn_write_bytes < target_write_bytes {
            let op = src.next_op();
            if op.kind == OpKind::Write {
                drawn_write_bytes += op.len_bytes;
            }
            drv.prefetch(&op);
            ahead.push_back(op);
        }
        let op = ahead.pop_front().expect("a command drawn ahead");
        let done = drv.exec(op, t)?;
        debug_assert!(done >= t);
        match op.kind {
            OpKind::Write => {
                st.write_bytes += op.len_bytes;
                st.write_ops += 1;
            }
            OpKind::Read => {
                st.read_bytes += op.len_bytes;
                st.read_ops += 1;
            }
            OpKind::Trim => st.trim_ops += 1,
        }
        st.now_ns = st.now_ns.max(done);
        after(drv, &st)?;
        // The client's next command is submitted when this one completes (replacing the top of
        // the heap sifts once, where a pop and a push would sift twice; same order).
        let mut top = top;
        *top = Reverse((done, client));
    }
    Ok(st)
}

/// Commands per `write_batch` call on the untimed path.
const BATCH_OPS: usize = 1024;

/// The closed loop without timing: every command completes at its submit time, so the clients'
/// order degenerates to one sequence. Runs of one-unit writes go to `Ssd::write_batch` (which
/// prefetches mapping entries ahead); anything else is executed singly. Same commands in the same
/// order as the timed loop, so the same device state; `after` is called once per batch.
fn batched_loop(
    drv: &mut Driver<'_>,
    src: &mut dyn OpSource,
    mut st: LoopState,
    target_write_bytes: u64,
    mut after: impl FnMut(&mut Driver<'_>, &LoopState) -> Result<(), RunError>,
) -> Result<LoopState, RunError> {
    let unit = drv.ssd.unit_bytes() as u64;
    let at = st.now_ns;
    let mut batch: Vec<u64> = Vec::with_capacity(BATCH_OPS);
    while st.write_bytes < target_write_bytes {
        batch.clear();
        let mut single = None;
        while batch.len() < BATCH_OPS
            && st.write_bytes + (batch.len() as u64) * unit < target_write_bytes
        {
            let op = src.next_op();
            if op.kind == OpKind::Write && op.len_bytes == unit {
                batch.push(op.offset_bytes);
            } else {
                single = Some(op);
                break;
            }
        }
        if !batch.is_empty() {
            drv.ssd.write_batch(at, &batch, unit, 0)?;
            st.write_bytes += batch.len() as u64 * unit;
            st.write_ops += batch.len() as u64;
            after(drv, &st)?;
        }
        if let Some(op) = single {
            drv.exec(op, at)?;
            match op.kind {
                OpKind::Write => {
                    st.write_bytes += op.len_bytes;
                    st.write_ops += 1;
                }
                OpKind::Read => {
                    st.read_bytes += op.len_bytes;
                    st.read_ops += 1;
                }
                OpKind::Trim => st.trim_ops += 1,
            }
            after(drv, &st)?;
        }
    }
    Ok(st)
}

/// Rates over a span of virtual time, or `None` without timing or time.
fn rates(timing: bool, dt_ns: u64, wb: u64, rb: u64, ops: u64) -> [Option<f64>; 3] {
    if !timing || dt_ns == 0 {
        return [None; 3];
    }
    let per_s = 1e9 / dt_ns as f64;
    [
        Some(wb as f64 * per_s / 1e6),
        Some(rb as f64 * per_s / 1e6),
        Some(ops as f64 * per_s),
    ]
}

fn phase_summary(timing: bool, st: &LoopState, start_ns: u64, waf: f64) -> PhaseSummary {
    let dt = st.now_ns - start_ns;
    let [w, r, o] = rates(
        timing,
        dt,
        st.write_bytes,
        st.read_bytes,
        st.write_ops + st.read_ops,
    );
    PhaseSummary {
        host_write_bytes: st.write_bytes,
        host_read_bytes: st.read_bytes,
        write_ops: st.write_ops,
        read_ops: st.read_ops,
        waf,
        virtual_elapsed_ns: timing.then_some(dt),
        write_mb_s: w,
        read_mb_s: r,
        ops_per_s: o,
    }
}

/// Checks that the workload suits the device and resolves defaults.
fn check_fit(ssd: &Ssd, workload: &Workload, params: &mut RunParams) -> Result<(), RunError> {
    params.validate()?;
    workload.validate()?;
    if workload.read_share >= 1.0 {
        return Err(bad(
            "read_share",
            "1.0 never writes, but a run is measured in bytes written; use a value below 1",
        ));
    }
    let unit = ssd.unit_bytes() as u64;
    let ws = workload.write_size_bytes;
    if ssd.zone_count() > 0 {
        if !ws.is_multiple_of(unit) {
            return Err(bad(
                "write_size_bytes",
                format!("{ws} is not a multiple of the mapping unit {unit} (zone appends must be)"),
            ));
        }
        let max_active = match &ssd.config().mode {
            Mode::Zns(z) => z.max_active_zones,
            _ => u32::MAX,
        };
        let open = params
            .open_zones
            .unwrap_or_else(|| match &ssd.config().mode {
                Mode::Zns(z) => z.max_open_zones,
                _ => 1,
            });
        params.open_zones = Some(open.min(max_active).min(ssd.zone_count()).max(1));
    } else {
        let align = unit.min(4096);
        if !ws.is_multiple_of(align) {
            return Err(bad(
                "write_size_bytes",
                format!(
                    "{ws} is not a multiple of {align} (4 KiB or the mapping unit, whichever is smaller)"
                ),
            ));
        }
        params.open_zones = None;
    }
    Ok(())
}

/// Runs `workload` on an existing device (normally a fresh one). See the module documentation.
pub fn run_on(
    ssd: &mut Ssd,
    workload: &Workload,
    params: &RunParams,
    obs: &mut dyn RunObserver,
) -> Result<RunSummary, RunError> {
    run_source(ssd, workload, params, obs, None)
}

/// [`run_on`], with the commands of the measured run from `source` instead of `workload`'s
/// generator when given.
fn run_source(
    ssd: &mut Ssd,
    workload: &Workload,
    params: &RunParams,
    obs: &mut dyn RunObserver,
    source: Option<&mut dyn OpSource>,
) -> Result<RunSummary, RunError> {
    let mut params = params.clone();
    check_fit(ssd, workload, &mut params)?;
    let capacity = ssd.capacity().clone();
    let cap = capacity.logical_bytes;
    let mut generator = Generator::new(workload, cap)?;
    let source: &mut dyn OpSource = match source {
        Some(s) => s,
        None => &mut generator,
    };
    // Preconditioning fills the zones in order with one open zone; the run then grows to
    // `open_zones`.
    let zoned = match params.open_zones {
        Some(n) => Some(ZoneWriter::new(
            ssd,
            if params.precondition { 1 } else { n },
        )?),
        None => None,
    };
    let handles = match &ssd.config().mode {
        Mode::Fdp(f) => f.handles,
        _ => 1,
    };
    let timing = ssd.config().timing.enabled;
    let mut drv = Driver {
        ssd,
        zoned,
        capacity_bytes: cap,
        handles,
        timing,
    };
    let qd = params.queue_depth;
    let target = (params.capacity_multiple * cap as f64).ceil() as u64;
    let pre_bytes = if params.precondition { cap } else { 0 };
    let total = pre_bytes + target;
    let progress_step = (total / 1000).max(1);
    let mut next_progress = progress_step;

    // Phase 1: sequential fill.
    let mut precondition = None;
    let mut start_ns = 0;
    if params.precondition {
        obs.phase(Phase::Precondition);
        let c0 = drv.ssd.counters().clone();
        let mut fill = Fill { at: 0, end: cap };
        let st = closed_loop(&mut drv, &mut fill, qd, 0, cap, |_, st| {
            if st.write_bytes >= next_progress {
                obs.progress(st.write_bytes, total);
                next_progress = st.write_bytes + progress_step;
            }
            Ok(())
        })?;
        let waf = drv.ssd.counters().waf_since(&c0);
        precondition = Some(phase_summary(timing, &st, 0, waf));
        start_ns = st.now_ns;
    }
    drv.ssd.reset_latency();
    if let (Some(z), Some(n)) = (drv.zoned.as_mut(), params.open_zones) {
        z.grow_open_zones(n);
    }

    // Phase 2: the measured run.
    obs.phase(Phase::Run);
    let run_start = drv.ssd.counters().clone();
    let interval = ((params.interval_capacity_fraction * cap as f64).ceil() as u64).max(1);
    let mut rows: Vec<IntervalRow> = Vec::new();
    let mut prev = run_start.clone();
    let mut prev_st = LoopState {
        now_ns: start_ns,
        ..LoopState::default()
    };
    let mut next_row = interval;
    let st = closed_loop(&mut drv, source, qd, start_ns, target, |drv, st| {
        let done = pre_bytes + st.write_bytes;
        if done >= next_progress {
            obs.progress(done, total);
            next_progress = done + progress_step;
        }
        if st.write_bytes < next_row && st.write_bytes < target {
            return Ok(());
        }
        while next_row <= st.write_bytes {
            next_row += interval;
        }
        let c = drv.ssd.counters();
        let [w, r, o] = rates(
            drv.timing,
            st.now_ns - prev_st.now_ns,
            st.write_bytes - prev_st.write_bytes,
            st.read_bytes - prev_st.read_bytes,
            st.write_ops + st.read_ops - prev_st.write_ops - prev_st.read_ops,
        );
        let row = IntervalRow {
            host_write_bytes: st.write_bytes,
            host_written_gib: st.write_bytes as f64 / GIB,
            capacity_multiple: st.write_bytes as f64 / cap as f64,
            waf_interval: c.waf_since(&prev),
            waf_cumulative: c.waf_since(&run_start),
            gc_runs: c.gc_runs - prev.gc_runs,
            eu_erases: c.eu_erases - prev.eu_erases,
            free_eus: drv.ssd.free_eus(),
            virtual_time_s: drv.timing.then(|| (st.now_ns - start_ns) as f64 / 1e9),
            write_mb_s: w,
            read_mb_s: r,
            ops_per_s: o,
        };
        obs.row(&row);
        rows.push(row);
        prev = c.clone();
        prev_st = *st;
        Ok(())
    })?;
    obs.progress(total, total);

    let ssd = drv.ssd;
    let end = ssd.counters().clone();
    let waf_cumulative = end.waf_since(&run_start);
    let run = phase_summary(timing, &st, start_ns, waf_cumulative);
    let report = ssd.report();
    Ok(RunSummary {
        ssd: ssd.config().clone(),
        workload: workload.clone(),
        params,
        mode: mode_name(&ssd.config().mode).to_string(),
        capacity,
        precondition,
        run,
        waf_cumulative,
        waf_steady: steady_waf(&rows, interval).unwrap_or(waf_cumulative),
        counters: end,
        counters_run_start: run_start,
        wear: report.wear,
        read_latency: report.read_latency,
        write_latency: report.write_latency,
        handles: report.handles,
        fill: report.fill,
        free_eus: report.free_eus,
        rows,
        trace: None,
    })
}

/// SSD WAF of the last full interval of `rows` (`interval` host bytes each): a last row that
/// covers less than half an interval is merged with the row before (WAFs weighted by host bytes).
fn steady_waf(rows: &[IntervalRow], interval: u64) -> Option<f64> {
    let host = |i: usize| {
        rows[i].host_write_bytes
            - if i == 0 {
                0
            } else {
                rows[i - 1].host_write_bytes
            }
    };
    let n = rows.len();
    let last = rows.last()?;
    if n < 2 || host(n - 1) * 2 >= interval {
        return Some(last.waf_interval);
    }
    let (a, b) = (host(n - 2) as f64, host(n - 1) as f64);
    Some((rows[n - 2].waf_interval * a + last.waf_interval * b) / (a + b))
}

/// Builds a device from `cfg` and replays `trace` (read from `path`) on it after the usual
/// preconditioning, until `params.capacity_multiple` of the capacity is written. The summary's
/// `workload` is the default one with 4 KiB writes (unused); `trace` says what was replayed.
pub fn run_trace(
    cfg: SsdConfig,
    trace: &crate::trace::Trace,
    path: &str,
    params: &RunParams,
    obs: &mut dyn RunObserver,
) -> Result<RunSummary, RunError> {
    let mut ssd = Ssd::new(cfg)?;
    let cap = ssd.capacity().logical_bytes;
    let unit = ssd.unit_bytes() as u64;
    let mut src = crate::trace::TraceSource::new(trace, cap, unit);
    let workload = Workload::default();
    let mut s = run_source(&mut ssd, &workload, params, obs, Some(&mut src))?;
    let mut info = trace.info(path);
    info.passes = src.passes();
    s.trace = Some(info);
    Ok(s)
}

#[cfg(test)]
mod tests;
