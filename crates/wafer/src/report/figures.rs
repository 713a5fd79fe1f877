//! The data of each figure of the report, derived from the runs, and the drawn SVGs.

use super::charts::{self, Bar, Line, LinePanel, Segment};
use super::RunView;
use plotters::style::RGBColor;
use wafer_workloads::bench::BenchSummary;

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

/// Every figure of the page, drawn.
pub struct Figures {
    pub breakdown: BreakdownData,
    pub breakdown_svg: String,
    pub throughput_svg: String,
    pub media_svg: String,
    pub waf_svg: String,
    pub latency_svg: String,
}

fn with_unit(what: &str, unit: &str) -> String {
    if unit.is_empty() {
        what.to_string()
    } else {
        format!("{what} ({unit})")
    }
}

pub fn draw_all(views: &[RunView<'_>]) -> Result<Figures, String> {
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
        CHART_WIDTH,
    )?;

    let (t, o, lines) = throughput(views);
    let throughput_svg = charts::line_chart(
        &LinePanel {
            caption: None,
            x_desc: &with_unit("virtual time since the run started", t.name),
            y_desc: &with_unit("throughput per interval", o.name),
            lines: &lines,
        },
        (CHART_WIDTH, 460),
    )?;

    let (x, y, lines) = media_writes(views);
    let media_svg = charts::line_chart(
        &LinePanel {
            caption: None,
            x_desc: &with_unit("transactions", x.name),
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
    Ok(Figures {
        breakdown: data,
        breakdown_svg,
        throughput_svg,
        media_svg,
        waf_svg,
        latency_svg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
