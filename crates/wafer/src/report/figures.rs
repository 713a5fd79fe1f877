//! The data of each figure of the report, derived from the runs, and the drawn SVGs.

use super::charts::{self, Bar, Line, LinePanel, Segment};
use super::RunView;
use plotters::style::RGBColor;
use wafer_workloads::bench::BenchSummary;
use wafer_workloads::tpcc::TpccFigures;

pub mod sim;
pub use sim::{draw_sim, SimFigures};

/// Width of every chart in SVG pixels (the page scales them to its width).
pub const CHART_WIDTH: u32 = 1200;

/// The categories of the WAF breakdown (paper 002 Figure 13b), bottom of the stack first.
pub const SEGMENTS: [Segment; 7] = [
    Segment {
        label: "user writes",
        color: RGBColor(78, 121, 167),
    },
    Segment {
        label: "doublewrite",
        color: RGBColor(242, 142, 43),
    },
    Segment {
        label: "DB GC",
        color: RGBColor(89, 161, 79),
    },
    Segment {
        label: "compensation",
        color: RGBColor(176, 122, 161),
    },
    Segment {
        label: "padding",
        color: RGBColor(186, 176, 172),
    },
    Segment {
        label: "map snapshots",
        color: RGBColor(156, 117, 95),
    },
    Segment {
        label: "SSD GC",
        color: RGBColor(225, 87, 89),
    },
];

/// Segments drawn even when every run has zero of them (the paper's categories); the others
/// (padding, map snapshots and other metadata) only when some run has them.
const ALWAYS_SHOWN: [bool; 7] = [true, true, true, true, false, false, true];

/// Bytes written per user byte, by category (the order of [`SEGMENTS`]), over the run phase.
///
/// The denominator is the run's user bytes counted uncompressed (the DESIGN definition), so the
/// first segment is 1.0, or the compressed share when pages are stored compressed, and the stack
/// adds up to DB-issued / user + SSD GC / user = total WAF. `None` when the run wrote nothing.
pub fn per_user_byte(run: &BenchSummary) -> Option<[f64; 7]> {
    let b = &run.bytes;
    let user = if run.run.user_bytes > 0 {
        run.run.user_bytes
    } else {
        b.user_bytes
    };
    if user == 0 {
        return None;
    }
    let parts =
        b.user_bytes + b.doublewrite_bytes + b.db_gc_bytes + b.compensation_bytes + b.padding_bytes;
    let other = b.db_issued_bytes.saturating_sub(parts);
    let u = user as f64;
    Some([
        b.user_bytes as f64 / u,
        b.doublewrite_bytes as f64 / u,
        b.db_gc_bytes as f64 / u,
        b.compensation_bytes as f64 / u,
        b.padding_bytes as f64 / u,
        other as f64 / u,
        b.ssd_gc_bytes as f64 / u,
    ])
}

/// The breakdown of every run, and which segments the figure shows.
pub struct BreakdownData {
    /// Indices into [`SEGMENTS`] that are shown.
    pub shown: Vec<usize>,
    /// Per run (in page order): the values of all segments, `None` when it wrote nothing.
    pub rows: Vec<Option<[f64; 7]>>,
}

pub fn breakdown(views: &[RunView<'_>]) -> BreakdownData {
    let rows: Vec<Option<[f64; 7]>> = views.iter().map(|v| per_user_byte(v.run)).collect();
    let shown = (0..SEGMENTS.len())
        .filter(|&s| ALWAYS_SHOWN[s] || rows.iter().flatten().any(|r| r[s] > 0.0))
        .collect();
    BreakdownData { shown, rows }
}

/// A unit for an axis: values are divided by `div` and the axis is described with `name`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unit {
    pub div: f64,
    pub name: &'static str,
}

/// The largest unit of `units` (ascending) that keeps `max` at least 1; the first one otherwise.
pub fn pick_unit(max: f64, units: &[Unit]) -> Unit {
    let mut best = units[0];
    for u in units {
        if max.is_finite() && max >= u.div {
            best = *u;
        }
    }
    best
}

const TIME_UNITS: [Unit; 2] = [
    Unit {
        div: 1e-3,
        name: "ms",
    },
    Unit {
        div: 1.0,
        name: "s",
    },
];
const OPS_UNITS: [Unit; 3] = [
    Unit {
        div: 1.0,
        name: "ops/s",
    },
    Unit {
        div: 1e3,
        name: "kops/s",
    },
    Unit {
        div: 1e6,
        name: "Mops/s",
    },
];
const MB_UNITS: [Unit; 3] = [
    Unit {
        div: 1.0,
        name: "MB",
    },
    Unit {
        div: 1e3,
        name: "GB",
    },
    Unit {
        div: 1e6,
        name: "TB",
    },
];
const COUNT_UNITS: [Unit; 3] = [
    Unit { div: 1.0, name: "" },
    Unit {
        div: 1e3,
        name: "thousands",
    },
    Unit {
        div: 1e6,
        name: "millions",
    },
];

fn max_of(views: &[RunView<'_>], f: impl Fn(&wafer_workloads::bench::SeriesRow) -> f64) -> f64 {
    views
        .iter()
        .flat_map(|v| v.run.series.iter().map(&f))
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max)
}

/// Throughput per interval against virtual time since the run started.
pub fn throughput(views: &[RunView<'_>]) -> (Unit, Unit, Vec<Line>) {
    let t = pick_unit(max_of(views, |r| r.virtual_s), &TIME_UNITS);
    let o = pick_unit(max_of(views, |r| r.ops_per_s), &OPS_UNITS);
    let lines = views
        .iter()
        .map(|v| Line {
            color: v.color,
            points: v
                .run
                .series
                .iter()
                .map(|r| (r.virtual_s / t.div, r.ops_per_s / o.div))
                .collect(),
        })
        .collect();
    (t, o, lines)
}

/// Cumulative media (flash) writes against committed transactions, from the origin.
pub fn media_writes(views: &[RunView<'_>]) -> (Unit, Unit, Vec<Line>) {
    let x = pick_unit(max_of(views, |r| r.txns as f64), &COUNT_UNITS);
    let y = pick_unit(max_of(views, |r| r.media_mb_cumulative), &MB_UNITS);
    let lines = views
        .iter()
        .map(|v| {
            let mut points = Vec::with_capacity(v.run.series.len() + 1);
            if !v.run.series.is_empty() {
                points.push((0.0, 0.0));
            }
            points.extend(
                v.run
                    .series
                    .iter()
                    .map(|r| (r.txns as f64 / x.div, r.media_mb_cumulative / y.div)),
            );
            Line {
                color: v.color,
                points,
            }
        })
        .collect();
    (x, y, lines)
}

/// DB WAF and SSD WAF of each interval against virtual time.
pub fn waf_intervals(views: &[RunView<'_>]) -> (Unit, Vec<Line>, Vec<Line>) {
    let t = pick_unit(max_of(views, |r| r.virtual_s), &TIME_UNITS);
    let line = |v: &RunView<'_>, f: fn(&wafer_workloads::bench::SeriesRow) -> f64| Line {
        color: v.color,
        points: v
            .run
            .series
            .iter()
            .map(|r| (r.virtual_s / t.div, f(r)))
            .collect(),
    };
    let db = views.iter().map(|v| line(v, |r| r.db_waf)).collect();
    let ssd = views.iter().map(|v| line(v, |r| r.ssd_waf)).collect();
    (t, db, ssd)
}

const LATENCY_UNITS: [Unit; 3] = [
    Unit {
        div: 1e3,
        name: "us",
    },
    Unit {
        div: 1e6,
        name: "ms",
    },
    Unit {
        div: 1e9,
        name: "s",
    },
];

/// The latency tail of each run's measured phase: latency against the percentile on a scale of
/// nines (0.3 = p50, 2 = p99, 3 = p99.9, 4 = p99.99), from the run's latency histogram.
pub fn latency_tail(views: &[RunView<'_>]) -> (Unit, Vec<Line>) {
    let max = views
        .iter()
        .map(|v| v.run.latency.p9999_ns as f64)
        .fold(0.0, f64::max);
    let u = pick_unit(max, &LATENCY_UNITS);
    let lines = views
        .iter()
        .map(|v| {
            let l = &v.run.latency;
            let points = if l.count == 0 {
                Vec::new()
            } else {
                [
                    (0.5f64, l.p50_ns),
                    (0.99, l.p99_ns),
                    (0.999, l.p999_ns),
                    (0.9999, l.p9999_ns),
                ]
                .iter()
                .map(|&(p, ns)| (-(1.0 - p).log10(), ns as f64 / u.div))
                .collect()
            };
            Line {
                color: v.color,
                points,
            }
        })
        .collect();
    (u, lines)
}

/// The latency percentiles of each interval against virtual time: the p50, p99 and p99.9
/// panels, each with its own latency unit and a line per run. Intervals without a value (no
/// operation completed, or a file written before the series carried percentiles) are left out.
pub fn latency_intervals(views: &[RunView<'_>]) -> (Unit, [(Unit, Vec<Line>); 3]) {
    let t = pick_unit(max_of(views, |r| r.virtual_s), &TIME_UNITS);
    let panel = |f: fn(&wafer_workloads::bench::SeriesRow) -> u64| {
        let u = pick_unit(max_of(views, |r| f(r) as f64), &LATENCY_UNITS);
        let lines = views
            .iter()
            .map(|v| Line {
                color: v.color,
                points: v
                    .run
                    .series
                    .iter()
                    .filter(|r| f(r) > 0)
                    .map(|r| (r.virtual_s / t.div, f(r) as f64 / u.div))
                    .collect(),
            })
            .collect();
        (u, lines)
    };
    (
        t,
        [
            panel(|r| r.latency_ns_p50),
            panel(|r| r.latency_ns_p99),
            panel(|r| r.latency_ns_p999),
        ],
    )
}

const TPMC_UNITS: [Unit; 3] = [
    Unit {
        div: 1.0,
        name: "tpmC",
    },
    Unit {
        div: 1e3,
        name: "thousand tpmC",
    },
    Unit {
        div: 1e6,
        name: "million tpmC",
    },
];

/// New-Orders per virtual minute between consecutive points of a TPC-C series: (end of the
/// interval in virtual seconds, tpmC).
pub fn tpmc_points(f: &TpccFigures) -> Vec<(f64, f64)> {
    f.series
        .windows(2)
        .filter(|w| w[1].virtual_s > w[0].virtual_s)
        .map(|w| {
            let dt = w[1].virtual_s - w[0].virtual_s;
            let n = w[1].new_orders.saturating_sub(w[0].new_orders) as f64;
            (w[1].virtual_s, n * 60.0 / dt)
        })
        .collect()
}

/// tpmC per interval against virtual time (runs without TPC-C figures have no line).
pub fn tpmc_intervals(views: &[RunView<'_>]) -> (Unit, Unit, Vec<Line>) {
    let points: Vec<Vec<(f64, f64)>> = views
        .iter()
        .map(|v| v.run.tpcc.as_ref().map(tpmc_points).unwrap_or_default())
        .collect();
    let max = |i: usize| {
        points
            .iter()
            .flatten()
            .map(|p| if i == 0 { p.0 } else { p.1 })
            .filter(|x| x.is_finite())
            .fold(0.0, f64::max)
    };
    let t = pick_unit(max(0), &TIME_UNITS);
    let y = pick_unit(max(1), &TPMC_UNITS);
    let lines = views
        .iter()
        .zip(points)
        .map(|(v, p)| Line {
            color: v.color,
            points: p.iter().map(|(x, q)| (x / t.div, q / y.div)).collect(),
        })
        .collect();
    (t, y, lines)
}

/// Cumulative media (flash) writes against New-Orders, from the origin (paper 002 Figure 16).
pub fn media_vs_new_orders(views: &[RunView<'_>]) -> (Unit, Unit, Vec<Line>) {
    let series = |v: &RunView<'_>| v.run.tpcc.as_ref().map(|f| f.series.clone());
    let all: Vec<(f64, f64)> = views
        .iter()
        .filter_map(series)
        .flatten()
        .map(|p| (p.new_orders as f64, p.media_mb_cumulative))
        .collect();
    let x = pick_unit(all.iter().map(|p| p.0).fold(0.0, f64::max), &COUNT_UNITS);
    let y = pick_unit(all.iter().map(|p| p.1).fold(0.0, f64::max), &MB_UNITS);
    let lines = views
        .iter()
        .map(|v| Line {
            color: v.color,
            points: series(v)
                .unwrap_or_default()
                .iter()
                .map(|p| (p.new_orders as f64 / x.div, p.media_mb_cumulative / y.div))
                .collect(),
        })
        .collect();
    (x, y, lines)
}

/// The phases of a recovery, as the stacked bar shows them.
pub const RECOVERY_SEGMENTS: [Segment; 4] = [
    Segment {
        label: "analysis",
        color: RGBColor(78, 121, 167),
    },
    Segment {
        label: "redo",
        color: RGBColor(242, 142, 43),
    },
    Segment {
        label: "undo",
        color: RGBColor(225, 87, 89),
    },
    Segment {
        label: "rest of the reopen",
        color: RGBColor(186, 176, 172),
    },
];

/// Virtual milliseconds of a run's recovery by phase: analysis, redo, undo, and the rest of the
/// reopen (opening the devices, the final checkpoint); `None` without a recovery.
pub fn recovery_phases(f: &TpccFigures) -> Option<[f64; 4]> {
    let r = f.recovery.as_ref()?;
    let p = &r.report;
    let [a, b, c] = [p.analysis_us, p.redo_us, p.undo_us].map(|us| us as f64 / 1e3);
    Some([a, b, c, (r.virtual_ms - a - b - c).max(0.0)])
}

/// Every figure of the page, drawn.
pub struct Figures {
    pub breakdown: BreakdownData,
    pub breakdown_svg: String,
    /// Operations per second per interval; tpmC per interval on a TPC-C page.
    pub throughput_svg: String,
    /// Flash writes against transactions; against New-Orders on a TPC-C page.
    pub media_svg: String,
    pub waf_svg: String,
    pub latency_svg: String,
    /// p50, p99 and p99.9 of each interval against virtual time.
    pub latency_time_svg: String,
    /// TPC-C page: recovery time by phase, when a run recovered from a crash.
    pub recovery_svg: Option<String>,
}

fn with_unit(what: &str, unit: &str) -> String {
    if unit.is_empty() {
        what.to_string()
    } else {
        format!("{what} ({unit})")
    }
}

/// Every figure of a benchmark page; `tpcc`: the TPC-C page (tpmC and New-Orders).
pub fn draw_all(views: &[RunView<'_>], tpcc: bool) -> Result<Figures, String> {
    let data = breakdown(views);
    let segments: Vec<Segment> = data
        .shown
        .iter()
        .map(|&s| Segment {
            label: SEGMENTS[s].label,
            color: SEGMENTS[s].color,
        })
        .collect();
    let bars: Vec<Bar> = views
        .iter()
        .zip(&data.rows)
        .map(|(v, row)| Bar {
            label: v.label.clone(),
            values: match row {
                Some(r) => data.shown.iter().map(|&s| r[s]).collect(),
                None => Vec::new(),
            },
        })
        .collect();
    let breakdown_svg = charts::stacked_bars(
        &segments,
        &bars,
        "bytes written per user byte (bar length = total WAF)",
        "no user writes",
        CHART_WIDTH,
    )?;

    let (t, o, lines) = if tpcc {
        tpmc_intervals(views)
    } else {
        throughput(views)
    };
    let throughput_svg = charts::line_chart(
        &LinePanel {
            caption: None,
            x_desc: &with_unit("virtual time since the run started", t.name),
            y_desc: &with_unit("throughput per interval", o.name),
            lines: &lines,
        },
        (CHART_WIDTH, 460),
    )?;

    let (x, y, lines) = if tpcc {
        media_vs_new_orders(views)
    } else {
        media_writes(views)
    };
    let media_svg = charts::line_chart(
        &LinePanel {
            caption: None,
            x_desc: &with_unit(if tpcc { "New-Orders" } else { "transactions" }, x.name),
            y_desc: &with_unit("cumulative flash (media) writes", y.name),
            lines: &lines,
        },
        (CHART_WIDTH, 460),
    )?;

    let (t, db, ssd) = waf_intervals(views);
    let x_desc = with_unit("virtual time", t.name);
    let waf_svg = charts::line_panels(
        &[
            LinePanel {
                caption: Some("DB WAF per interval"),
                x_desc: &x_desc,
                y_desc: "DB WAF (DB-issued / user bytes)",
                lines: &db,
            },
            LinePanel {
                caption: Some("SSD WAF per interval"),
                x_desc: &x_desc,
                y_desc: "SSD WAF (media / host bytes)",
                lines: &ssd,
            },
        ],
        (CHART_WIDTH, 440),
    )?;
    let (u, lines) = latency_tail(views);
    let latency_svg = charts::line_chart(
        &LinePanel {
            caption: None,
            x_desc: "percentile, in nines (0.3 = p50, 2 = p99, 3 = p99.9, 4 = p99.99)",
            y_desc: &with_unit("operation latency", u.name),
            lines: &lines,
        },
        (CHART_WIDTH, 420),
    )?;
    let (t, [(u50, p50), (u99, p99), (u999, p999)]) = latency_intervals(views);
    let x_desc = with_unit("virtual time", t.name);
    let y_desc = |u: Unit| with_unit("latency", u.name);
    let (y50, y99, y999) = (y_desc(u50), y_desc(u99), y_desc(u999));
    let latency_time_svg = charts::line_panels(
        &[
            LinePanel {
                caption: Some("p50 per interval"),
                x_desc: &x_desc,
                y_desc: &y50,
                lines: &p50,
            },
            LinePanel {
                caption: Some("p99 per interval"),
                x_desc: &x_desc,
                y_desc: &y99,
                lines: &p99,
            },
            LinePanel {
                caption: Some("p99.9 per interval"),
                x_desc: &x_desc,
                y_desc: &y999,
                lines: &p999,
            },
        ],
        (CHART_WIDTH, 400),
    )?;
    let recovery: Vec<Bar> = views
        .iter()
        .filter_map(|v| {
            let phases = recovery_phases(v.run.tpcc.as_ref()?)?;
            Some(Bar {
                label: v.label.clone(),
                values: phases.to_vec(),
            })
        })
        .collect();
    let recovery_svg = if tpcc && !recovery.is_empty() {
        Some(charts::stacked_bars(
            &RECOVERY_SEGMENTS,
            &recovery,
            "virtual milliseconds from the crash until the database is open again",
            "no recovery",
            CHART_WIDTH,
        )?)
    } else {
        None
    };
    Ok(Figures {
        breakdown: data,
        breakdown_svg,
        throughput_svg,
        media_svg,
        waf_svg,
        latency_svg,
        latency_time_svg,
        recovery_svg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wafer_workloads::bench::{BenchConfig, Breakdown, Preset, SeriesRow, SteadyState, Window};
    use wafer_workloads::tpcc::{RecoveryOutcome, TpccSeriesPoint};

    fn bench(series: Vec<SeriesRow>, tpcc: Option<TpccFigures>) -> BenchSummary {
        BenchSummary {
            name: "x".into(),
            description: String::new(),
            config: BenchConfig::new(
                Preset::InPlace,
                64 << 20,
                0.1,
                wafer_workloads::YcsbConfig::default(),
            ),
            records: 0,
            fill_achieved: 0.0,
            load: Window::default(),
            run: Window::default(),
            steady: Window::default(),
            steady_state: SteadyState::default(),
            bytes: Breakdown::default(),
            aborts: 0,
            latency: flashsim::LatencySummary::default(),
            ssd_gc_runs: 0,
            ssd_erases: 0,
            ssd_redundant_write_bytes: 0,
            checkpoints: Default::default(),
            journal: None,
            devices: Vec::new(),
            wear: flashsim::WearReport::default(),
            series,
            tpcc,
        }
    }

    fn view(run: &BenchSummary, i: usize) -> RunView<'_> {
        RunView {
            label: format!("run {i}"),
            color: charts::run_color(i),
            source: "",
            run,
        }
    }

    fn row(t: f64, p50: u64, p99: u64, p999: u64) -> SeriesRow {
        SeriesRow {
            virtual_s: t,
            latency_ns_p50: p50,
            latency_ns_p99: p99,
            latency_ns_p999: p999,
            ..SeriesRow::default()
        }
    }

    #[test]
    fn latency_percentiles_per_interval() {
        let a = bench(
            vec![
                row(0.5, 40_000, 900_000, 2_000_000),
                // No operation completed in this interval: no point.
                row(1.0, 0, 0, 0),
                row(1.5, 60_000, 1_100_000, 3_500_000),
            ],
            None,
        );
        // A file written before the series carried percentiles: no line, no error.
        let old = bench(vec![row(0.7, 0, 0, 0)], None);
        let views = [view(&a, 0), view(&old, 1)];
        let (t, [(u50, p50), (u99, p99), (u999, p999)]) = latency_intervals(&views);
        assert_eq!(t.name, "s");
        // Each panel has its own unit.
        assert_eq!((u50.name, u99.name, u999.name), ("us", "ms", "ms"));
        assert_eq!(p50[0].points, vec![(0.5, 40.0), (1.5, 60.0)]);
        assert_eq!(p99[0].points, vec![(0.5, 0.9), (1.5, 1.1)]);
        assert_eq!(p999[0].points, vec![(0.5, 2.0), (1.5, 3.5)]);
        assert!(p50[1].points.is_empty() && p999[1].points.is_empty());
        assert_eq!(p50[1].color, charts::run_color(1));
    }

    fn point(t: f64, new_orders: u64, media_mb: f64) -> TpccSeriesPoint {
        TpccSeriesPoint {
            virtual_s: t,
            new_orders,
            media_mb_cumulative: media_mb,
            ..TpccSeriesPoint::default()
        }
    }

    #[test]
    fn tpcc_figures_data() {
        let mut f = TpccFigures {
            series: vec![
                point(0.0, 0, 0.0),
                point(0.5, 1000, 4.0),
                point(0.5, 1000, 4.0),
                point(2.0, 4000, 20.0),
            ],
            ..TpccFigures::default()
        };
        // 1000 New-Orders in half a minute of a second... per minute: x 120; an empty interval
        // (no time passed) is skipped.
        assert_eq!(tpmc_points(&f), vec![(0.5, 120_000.0), (2.0, 120_000.0)]);
        let with = bench(Vec::new(), Some(f.clone()));
        let without = bench(Vec::new(), None);
        let views = [view(&with, 0), view(&without, 1)];
        let (t, y, lines) = tpmc_intervals(&views);
        assert_eq!((t.name, y.name), ("s", "thousand tpmC"));
        assert_eq!(lines[0].points, vec![(0.5, 120.0), (2.0, 120.0)]);
        assert!(lines[1].points.is_empty());
        let (x, y, lines) = media_vs_new_orders(&views);
        assert_eq!((x.name, y.name), ("thousands", "MB"));
        assert_eq!(lines[0].points[0], (0.0, 0.0));
        assert_eq!(lines[0].points[3], (4.0, 20.0));

        assert_eq!(recovery_phases(&f), None);
        f.recovery = Some(RecoveryOutcome {
            report: wafer_engine_report(1_500, 7_250, 0),
            virtual_ms: 10.0,
            pages_written: 0,
            lazy_redos: 0,
            lazy_records_applied: 0,
            pages_written_after: 0,
        });
        // Analysis, redo, undo, and the rest of the reopen (10 - 8.75 ms).
        assert_eq!(recovery_phases(&f), Some([1.5, 7.25, 0.0, 1.25]));
    }

    fn wafer_engine_report(
        analysis_us: u64,
        redo_us: u64,
        undo_us: u64,
    ) -> wafer_workloads::tpcc::RecoveryReport {
        wafer_workloads::tpcc::RecoveryReport {
            analysis_us,
            redo_us,
            undo_us,
            ..Default::default()
        }
    }

    #[test]
    fn units() {
        assert_eq!(pick_unit(0.5, &TIME_UNITS).name, "ms");
        assert_eq!(pick_unit(12.0, &TIME_UNITS).name, "s");
        assert_eq!(pick_unit(5000.0, &OPS_UNITS).name, "kops/s");
        assert_eq!(pick_unit(f64::NAN, &OPS_UNITS).name, "ops/s");
        assert_eq!(pick_unit(0.0, &MB_UNITS).name, "MB");
        assert_eq!(pick_unit(2.5e6, &COUNT_UNITS).name, "millions");
    }
}
