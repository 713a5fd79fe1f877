//! Metrics of a benchmark run, computed only from raw counters: the engine's (`DbStats`) and the
//! data SSD's (`flashsim::Counters`). Two snapshots give a window; nothing is kept on the side.
//!
//! Definitions (DESIGN.md, after paper 002 section 7.1):
//! * user bytes: pages written for eviction or checkpointing, one page each;
//! * DB-issued bytes: everything the engine wrote to the data device;
//! * DB WAF = DB-issued / user; SSD WAF = media / host bytes of the data SSD;
//! * total WAF = DB WAF x SSD WAF (= media / user when the SSD saw exactly the DB-issued bytes).
//!
//! Field names carry their units (`_bytes`, `_mb`, `_s`, `_per_op`); docs/metrics.md defines each.

#![allow(missing_docs)]

use super::BenchConfig;
use flashsim::{Counters, LatencySummary, WearReport};
use serde::{Deserialize, Serialize};
use wafer_engine::device::DeviceStats;
use wafer_engine::DbStats;

/// Counters at one instant of a run.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub ops: u64,
    pub txns: u64,
    pub t_ns: u64,
    pub db: DbStats,
    pub ssd: Counters,
}

/// One device role's I/O over a window, as the host sees it (and the flash, for simulated SSDs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoleIo {
    /// `data`, `log`, `undo` or `temp`.
    pub role: String,
    pub write_bytes: u64,
    pub read_bytes: u64,
    pub writes: u64,
    pub reads: u64,
    pub flushes: u64,
    /// Bytes programmed into flash (simulated SSDs only).
    pub media_write_bytes: Option<u64>,
}

/// The I/O of every device role between `a` and `b`.
pub fn roles(a: &Snapshot, b: &Snapshot) -> Vec<RoleIo> {
    let one = |role: &str, x: Option<&DeviceStats>, y: Option<&DeviceStats>| {
        let (x, y) = (x?, y?);
        Some(RoleIo {
            role: role.to_string(),
            write_bytes: y.write_bytes - x.write_bytes,
            read_bytes: y.read_bytes - x.read_bytes,
            writes: y.writes - x.writes,
            reads: y.reads - x.reads,
            flushes: y.flushes - x.flushes,
            media_write_bytes: match (x.media_write_bytes, y.media_write_bytes) {
                (Some(p), Some(q)) => Some(q - p),
                _ => None,
            },
        })
    };
    [
        one("data", Some(&a.db.data_device), Some(&b.db.data_device)),
        one("log", Some(&a.db.log_device), Some(&b.db.log_device)),
        one("undo", a.db.undo_device.as_ref(), b.db.undo_device.as_ref()),
        one("temp", a.db.temp_device.as_ref(), b.db.temp_device.as_ref()),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Metrics over a window between two snapshots.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub ops: u64,
    pub txns: u64,
    pub virtual_s: f64,
    pub ops_per_s: f64,
    pub db_waf: f64,
    pub ssd_waf: f64,
    pub total_waf: f64,
    pub user_bytes: u64,
    pub db_issued_bytes: u64,
    pub ssd_host_bytes: u64,
    pub ssd_media_bytes: u64,
    pub logical_bytes_per_op: f64,
    pub physical_bytes_per_op: f64,
    /// Page bytes read from the data device per operation.
    #[serde(default)]
    pub read_bytes_per_op: f64,
    /// Data device write and read rates (host side), MB per virtual second.
    #[serde(default)]
    pub write_mb_s: f64,
    #[serde(default)]
    pub read_mb_s: f64,
    pub wal_bytes_per_op: f64,
    pub hit_ratio: f64,
    pub page_reads_per_op: f64,
    /// Share of page writes done by the checkpointer (the rest: eviction and cleaner).
    pub checkpoint_flush_share: f64,
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The window between `a` (earlier) and `b`.
pub fn window(a: &Snapshot, b: &Snapshot) -> Window {
    let wa = &a.db.writes;
    let wb = &b.db.writes;
    let user = wb.user_write_bytes - wa.user_write_bytes;
    let issued = wb.db_write_bytes - wa.db_write_bytes;
    let host = b.ssd.host_write_bytes - a.ssd.host_write_bytes;
    let media = b.ssd.media_write_bytes - a.ssd.media_write_bytes;
    let ops = b.ops - a.ops;
    let dt = b.t_ns.saturating_sub(a.t_ns);
    let db_waf = if user == 0 { 1.0 } else { ratio(issued, user) };
    let ssd_waf = if host == 0 { 1.0 } else { ratio(media, host) };
    let hits = b.db.pool.hits - a.db.pool.hits;
    let misses = b.db.pool.misses - a.db.pool.misses;
    let ck = wb.checkpoint_writes - wa.checkpoint_writes;
    let ev = wb.eviction_writes - wa.eviction_writes;
    // Log record bytes (the log device writes whole blocks, so it sees more: `Breakdown::wal_bytes`).
    let wal = b.db.wal.appended_bytes - a.db.wal.appended_bytes;
    Window {
        ops,
        txns: b.txns - a.txns,
        virtual_s: dt as f64 / 1e9,
        ops_per_s: if dt == 0 {
            0.0
        } else {
            ops as f64 * 1e9 / dt as f64
        },
        db_waf,
        ssd_waf,
        total_waf: db_waf * ssd_waf,
        user_bytes: user,
        db_issued_bytes: issued,
        ssd_host_bytes: host,
        ssd_media_bytes: media,
        logical_bytes_per_op: ratio(issued, ops),
        physical_bytes_per_op: ratio(media, ops),
        read_bytes_per_op: ratio(wb.read_bytes - wa.read_bytes, ops),
        write_mb_s: if dt == 0 {
            0.0
        } else {
            issued as f64 * 1e3 / dt as f64
        },
        read_mb_s: if dt == 0 {
            0.0
        } else {
            (wb.read_bytes - wa.read_bytes) as f64 * 1e3 / dt as f64
        },
        wal_bytes_per_op: ratio(wal, ops),
        hit_ratio: if hits + misses == 0 {
            1.0
        } else {
            ratio(hits, hits + misses)
        },
        page_reads_per_op: ratio(misses, ops),
        checkpoint_flush_share: ratio(ck, ck + ev),
    }
}

/// Where the bytes went (run phase), paper 002 Figure 13b style.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// User writes as stored (after compression, without padding).
    pub user_bytes: u64,
    pub doublewrite_bytes: u64,
    /// DB garbage collection copies (out-of-place write paths).
    pub db_gc_bytes: u64,
    /// NoWA compensation writes.
    pub compensation_bytes: u64,
    pub padding_bytes: u64,
    /// Out-of-place map snapshots and the device header.
    #[serde(default)]
    pub metadata_bytes: u64,
    pub db_issued_bytes: u64,
    /// Bytes the data SSD's GC relocated.
    pub ssd_gc_bytes: u64,
    pub ssd_media_bytes: u64,
    /// Bytes written to the log device (whole blocks: a commit rewrites the log's tail block).
    pub wal_bytes: u64,
}

pub fn breakdown(a: &Snapshot, b: &Snapshot) -> Breakdown {
    let wa = &a.db.writes;
    let wb = &b.db.writes;
    let dw = wb.doublewrite_bytes - wa.doublewrite_bytes;
    let issued = wb.db_write_bytes - wa.db_write_bytes;
    let gc = wb.gc_write_bytes - wa.gc_write_bytes;
    let comp = wb.compensation_bytes - wa.compensation_bytes;
    let pad = wb.padding_bytes - wa.padding_bytes;
    let meta = wb.metadata_bytes - wa.metadata_bytes;
    // Disjoint parts: stored user pages, doublewrite copies, GC and compensation copies (stored
    // bytes), padding of every write, snapshots and header.
    let user = issued - dw - gc - comp - pad - meta;
    Breakdown {
        user_bytes: user,
        doublewrite_bytes: dw,
        db_gc_bytes: gc,
        compensation_bytes: comp,
        padding_bytes: pad,
        metadata_bytes: meta,
        db_issued_bytes: issued,
        ssd_gc_bytes: b.ssd.gc_write_bytes - a.ssd.gc_write_bytes,
        ssd_media_bytes: b.ssd.media_write_bytes - a.ssd.media_write_bytes,
        wal_bytes: b.db.wal.bytes_written - a.db.wal.bytes_written,
    }
}

/// One row of the per-interval series.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SeriesRow {
    pub virtual_s: f64,
    pub ops: u64,
    pub txns: u64,
    pub ops_per_s: f64,
    pub hit_ratio: f64,
    pub read_mb: f64,
    pub write_mb: f64,
    pub eviction_mb: f64,
    pub checkpoint_mb: f64,
    pub doublewrite_mb: f64,
    pub db_gc_mb: f64,
    pub wal_mb: f64,
    pub db_waf: f64,
    pub ssd_waf: f64,
    pub db_waf_cumulative: f64,
    pub ssd_waf_cumulative: f64,
    /// Media bytes written by the data SSD since the run started, cumulative.
    pub media_mb_cumulative: f64,
    /// Latency percentiles of the operations (transactions, committed or aborted) that completed
    /// in this interval, virtual ns; 0 when none did (and in files written before these were
    /// recorded).
    #[serde(default)]
    pub latency_ns_p50: u64,
    #[serde(default)]
    pub latency_ns_p99: u64,
    #[serde(default)]
    pub latency_ns_p999: u64,
}

impl SeriesRow {
    /// Sets the row's latency percentiles from the interval's latency summary.
    pub fn set_latency(&mut self, l: &LatencySummary) {
        self.latency_ns_p50 = l.p50_ns;
        self.latency_ns_p99 = l.p99_ns;
        self.latency_ns_p999 = l.p999_ns;
    }
}

/// One interval's latency samples (the interval of a [`SeriesRow`]), kept compact.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencyInterval {
    /// Virtual seconds since the run started at the interval's start and end.
    pub start_s: f64,
    pub end_s: f64,
    /// `flashsim::LatencyHistogram::counts` of the interval: (bucket value, count), virtual ns.
    pub counts: Vec<(u64, u64)>,
}

impl LatencyInterval {
    /// The interval's histogram.
    pub fn histogram(&self) -> flashsim::LatencyHistogram {
        flashsim::LatencyHistogram::from_counts(&self.counts)
    }
}

/// Every operation latency of a run's measured phase, one histogram per series interval (in the
/// order of the series), for exporting as an HdrHistogram interval log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencyLog {
    pub intervals: Vec<LatencyInterval>,
}

const MB: f64 = 1e6;

pub fn series_row(start: &Snapshot, a: &Snapshot, b: &Snapshot, page_size: u32) -> SeriesRow {
    let w = window(a, b);
    let c = window(start, b);
    let wa = &a.db.writes;
    let wb = &b.db.writes;
    let ps = page_size as f64;
    SeriesRow {
        virtual_s: (b.t_ns - start.t_ns) as f64 / 1e9,
        ops: b.ops - start.ops,
        txns: b.txns - start.txns,
        ops_per_s: w.ops_per_s,
        hit_ratio: w.hit_ratio,
        read_mb: (wb.read_bytes - wa.read_bytes) as f64 / MB,
        write_mb: w.db_issued_bytes as f64 / MB,
        eviction_mb: (wb.eviction_writes - wa.eviction_writes) as f64 * ps / MB,
        checkpoint_mb: (wb.checkpoint_writes - wa.checkpoint_writes) as f64 * ps / MB,
        doublewrite_mb: (wb.doublewrite_bytes - wa.doublewrite_bytes) as f64 / MB,
        db_gc_mb: 0.0,
        wal_mb: (b.db.wal.bytes_written - a.db.wal.bytes_written) as f64 / MB,
        db_waf: w.db_waf,
        ssd_waf: w.ssd_waf,
        db_waf_cumulative: c.db_waf,
        ssd_waf_cumulative: c.ssd_waf,
        media_mb_cumulative: c.ssd_media_bytes as f64 / MB,
        latency_ns_p50: 0,
        latency_ns_p99: 0,
        latency_ns_p999: 0,
    }
}

/// Which part of a run its steady-state window covers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SteadyState {
    /// What the window is, for tables: e.g. "last full interval, ops 10688..16640".
    pub label: String,
    /// Operations (since the run started) at the window's start and end.
    pub from_ops: u64,
    pub to_ops: u64,
    /// Full intervals in the run (a short final interval merged into the one before counts
    /// as part of it).
    pub full_intervals: u64,
    /// The run's final interval held less than half an interval and was merged into the one
    /// before.
    pub merged_short_tail: bool,
    /// Why the window may not be a steady state (a metric still trending at the end, too few
    /// intervals to tell); empty when the last intervals are flat.
    pub warnings: Vec<String>,
}

impl SteadyState {
    /// "steady state: LABEL" and each warning, one line each.
    pub fn lines(&self) -> Vec<String> {
        let mut v = vec![format!("steady state: {}", self.label)];
        v.extend(self.warnings.iter().cloned());
        v
    }
}

/// A WAF counts as still rising when each of the last two full intervals is more than this
/// fraction above the interval before it.
pub const RISING_PER_INTERVAL: f64 = 0.03;

/// Warnings for per-interval values of the full intervals of a run, oldest first: a metric
/// still rising at the end, or too few intervals to tell.
pub fn trend_warnings(db_waf: &[f64], ssd_waf: &[f64]) -> Vec<String> {
    let n = ssd_waf.len();
    if n < 3 {
        return vec![format!(
            "only {n} full interval{}: too few to tell whether the run reached a steady state; run longer",
            if n == 1 { "" } else { "s" }
        )];
    }
    let mut out = Vec::new();
    for (name, v) in [("SSD WAF", ssd_waf), ("DB WAF", db_waf)] {
        let [a, b, c] = [v[v.len() - 3], v[v.len() - 2], v[v.len() - 1]];
        let rising = |x: f64, y: f64| y > x * (1.0 + RISING_PER_INTERVAL);
        if rising(a, b) && rising(b, c) {
            out.push(format!(
                "{name} still rising at the end ({a:.2}, {b:.2}, {c:.2} over the last three intervals): steady state not reached; run longer"
            ));
        }
    }
    out
}

/// Chooses the steady-state window of a run: its last full interval. `bounds` are the last
/// (up to three) interval boundaries, the run's end last; `series` the run's interval rows;
/// `interval_bytes` the DB-issued bytes of a full interval. A final interval with less than
/// half of `interval_bytes` (a run stopped by an operation or time limit) is merged into the
/// interval before it; when the whole run is shorter than that, there is no steady state and
/// the window is the whole run.
pub fn steady_state(
    start: &Snapshot,
    bounds: &[Snapshot],
    series: &[SeriesRow],
    interval_bytes: u64,
) -> (Window, SteadyState) {
    let end = bounds.last().unwrap_or(start);
    let issued =
        |a: &Snapshot, b: &Snapshot| b.db.writes.db_write_bytes - a.db.writes.db_write_bytes;
    let n = series.len();
    let k = bounds.len();
    let whole = |why: &str| {
        let st = SteadyState {
            label: format!(
                "none ({why}): whole run shown, ops 0..{}",
                end.ops - start.ops
            ),
            from_ops: 0,
            to_ops: end.ops - start.ops,
            full_intervals: 0,
            merged_short_tail: false,
            warnings: vec![format!("no steady state: {why}; run longer")],
        };
        (window(start, end), st)
    };
    if n == 0 || k < 2 {
        return whole("the run has no interval");
    }
    let short = 2 * issued(&bounds[k - 2], end) < interval_bytes;
    if short && (n < 2 || k < 3) {
        return whole("the run is shorter than half an interval");
    }
    let from = if short {
        &bounds[k - 3]
    } else {
        &bounds[k - 2]
    };
    let w = window(from, end);
    let full = if short { n - 1 } else { n };
    // Per-interval WAFs of the full intervals: the series rows, the merged one last.
    let rows = &series[..full - 1];
    let mut db: Vec<f64> = rows.iter().map(|r| r.db_waf).collect();
    let mut ssd: Vec<f64> = rows.iter().map(|r| r.ssd_waf).collect();
    db.push(w.db_waf);
    ssd.push(w.ssd_waf);
    let (a, b) = (from.ops - start.ops, end.ops - start.ops);
    let st = SteadyState {
        label: if short {
            format!("last full interval (the short final one merged in), ops {a}..{b}")
        } else {
            format!("last full interval, ops {a}..{b}")
        },
        from_ops: a,
        to_ops: b,
        full_intervals: full as u64,
        merged_short_tail: short,
        warnings: trend_warnings(&db, &ssd),
    };
    (w, st)
}

/// The result of one benchmark run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchSummary {
    pub name: String,
    pub description: String,
    pub config: BenchConfig,
    /// Records loaded and the fill of the data device they reached.
    pub records: u64,
    pub fill_achieved: f64,
    pub load: Window,
    /// The whole measured run.
    pub run: Window,
    /// The steady state: the last full interval of the run ([`steady_state`] says how it is
    /// chosen; `steady_state` describes the choice).
    pub steady: Window,
    /// Which part of the run `steady` covers, and whether the run reached a steady state.
    #[serde(default)]
    pub steady_state: SteadyState,
    pub bytes: Breakdown,
    pub aborts: u64,
    pub latency: LatencySummary,
    pub ssd_gc_runs: u64,
    pub ssd_erases: u64,
    /// Flash bytes the data SSD programmed for data it already held (checkpoint copies: host
    /// rewrites, copy commands, remap fallbacks; flashsim's `redundant_write_bytes`).
    #[serde(default)]
    pub ssd_redundant_write_bytes: u64,
    /// Checkpoints of the run: count, duration, and the latency of the operations that
    /// overlapped one (paper 004 Figure 9).
    #[serde(default)]
    pub checkpoints: super::ckptwatch::CheckpointCost,
    /// The journal write path's counters over the run (journal presets only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<wafer_engine::JournalStats>,
    /// I/O of each device role over the run (data, log, and undo and temp when present).
    #[serde(default)]
    pub devices: Vec<RoleIo>,
    pub wear: WearReport,
    pub series: Vec<SeriesRow>,
    /// TPC-C runs: tpmC, New-Orders, bytes per New-Order, the mix run, checks, recovery
    /// (absent for YCSB runs and in TPC-C files written before it was added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpcc: Option<crate::tpcc::TpccFigures>,
}

/// The output file of `wafer bench`: every run of one command, compared side by side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// What was run (workload and shared settings), for titles.
    pub title: String,
    pub runs: Vec<BenchSummary>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waf_rising_over_the_last_intervals_is_reported() {
        // Flat at the end (noise under 3%): no warning.
        assert!(trend_warnings(&[1.0; 5], &[1.0, 2.0, 3.0, 3.05, 3.04]).is_empty());
        // Still climbing: the warning names the metric and the last three values.
        let w = trend_warnings(&[1.0; 4], &[1.0, 1.5, 2.0, 2.5]);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("SSD WAF still rising at the end (1.50, 2.00, 2.50")
                && w[0].ends_with("steady state not reached; run longer"),
            "{w:?}"
        );
        // One rising step is not a trend.
        assert!(trend_warnings(&[1.0; 4], &[1.0, 1.0, 1.0, 1.5]).is_empty());
        // DB WAF too (out-of-place GC warming up).
        assert_eq!(trend_warnings(&[1.0, 1.2, 1.4], &[1.0; 3]).len(), 1);
        // Too few intervals to tell.
        assert!(trend_warnings(&[1.0; 2], &[1.0; 2])[0].contains("too few to tell"));
    }
}
