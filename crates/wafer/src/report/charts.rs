//! SVG charts for the HTML report, drawn with plotters' SVG backend.
//!
//! The SVG backend writes text as plain `<text>` elements (the browser picks the font), so no font
//! files are read here. Legends are drawn by the page in HTML, next to each chart, so they never
//! cover data; a chart only draws axes, grid, lines and bars. Points that are not finite are
//! dropped, and a chart without any data still renders (axes and a "no data" note).

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Font family of every label (the browser resolves it).
const FONT: &str = "sans-serif";
/// Font sizes in plotters units (the SVG backend writes `size / 1.24` px).
const TICK_FONT: f64 = 19.0;
const DESC_FONT: f64 = 20.0;
const CAPTION_FONT: f64 = 21.0;

/// Run colours: the Okabe-Ito palette (readable by most colour-blind readers) without its yellow,
/// which is too light on white, plus a purple and a dark grey.
pub const RUN_COLORS: [RGBColor; 8] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(230, 159, 0),   // orange
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(106, 61, 154),  // purple
    RGBColor(80, 80, 80),    // dark grey
];

/// The colour of run `i` (repeats after eight runs).
pub fn run_color(i: usize) -> RGBColor {
    RUN_COLORS[i % RUN_COLORS.len()]
}

/// `#rrggbb` of a colour, for the HTML legends.
pub fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// One line of a line chart.
pub struct Line {
    pub color: RGBColor,
    pub points: Vec<(f64, f64)>,
}

/// A panel of a line chart: axes descriptions and lines.
pub struct LinePanel<'a> {
    /// Drawn above the plot when set (used when several panels share one SVG).
    pub caption: Option<&'a str>,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    pub lines: &'a [Line],
}

/// One category of a stacked bar.
pub struct Segment {
    pub label: &'static str,
    pub color: RGBColor,
}

/// One stacked bar: a value per segment, in the order of the segments.
pub struct Bar {
    pub label: String,
    pub values: Vec<f64>,
}

type DrawResult<T> = Result<T, String>;

fn err<E: std::fmt::Display>(e: E) -> String {
    format!("drawing a chart failed: {e}")
}

/// A number as an axis tick label: at most three significant decimals, no trailing zeros.
pub fn tick(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let a = v.abs();
    let s = if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

fn finite(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect()
}

/// Axis range `[lo, hi)` covering `values` and zero, with headroom above; never empty.
fn range_from_zero(values: impl Iterator<Item = f64>, headroom: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi - lo < 1e-9 {
        return (lo, lo + 1.0);
    }
    (lo, hi + (hi - lo) * headroom)
}

/// A line chart with one panel.
pub fn line_chart(panel: &LinePanel<'_>, size: (u32, u32)) -> DrawResult<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw_line_panel(&root, panel)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Line charts side by side in one SVG (one row, a panel each).
pub fn line_panels(panels: &[LinePanel<'_>], size: (u32, u32)) -> DrawResult<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let areas = root.split_evenly((1, panels.len().max(1)));
        for (area, panel) in areas.iter().zip(panels) {
            draw_line_panel(area, panel)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// A line chart whose x ticks the caller places: `ticks` are positions in the panel's x units
/// with their labels (for a log axis the caller passes log x values and labels them with the
/// values they stand for). The x axis spans the ticks and the points, with a little room each
/// side; the y axis starts at zero.
pub fn line_chart_ticks(
    panel: &LinePanel<'_>,
    ticks: &[(f64, String)],
    size: (u32, u32),
) -> DrawResult<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw_panel(&root, panel, Some(ticks))?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn draw_line_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &LinePanel<'_>,
) -> DrawResult<()> {
    draw_panel(area, panel, None)
}

/// Axis range covering `values`, with `pad` of the span each side (half a unit when they are
/// all equal); `(0, 1)` without any.
fn range_padded(values: impl Iterator<Item = f64>, pad: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > hi {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-9 {
        return (lo - 0.5, hi + 0.5);
    }
    let d = (hi - lo) * pad;
    (lo - d, hi + d)
}

/// A panel on `area`: x from zero with the axis' own ticks, or spanning `ticks` at their places.
fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &LinePanel<'_>,
    ticks: Option<&[(f64, String)]>,
) -> DrawResult<()> {
    let lines: Vec<(RGBColor, Vec<(f64, f64)>)> = panel
        .lines
        .iter()
        .map(|l| (l.color, finite(&l.points)))
        .collect();
    let xs = || lines.iter().flat_map(|l| l.1.iter().map(|p| p.0));
    let (y0, y1) = range_from_zero(lines.iter().flat_map(|l| l.1.iter().map(|p| p.1)), 0.08);
    let mut builder = ChartBuilder::on(area);
    builder
        .margin_top(14)
        .margin_right(24)
        .margin_left(6)
        .margin_bottom(6)
        .x_label_area_size(50)
        .y_label_area_size(76);
    if let Some(caption) = panel.caption {
        builder.caption(
            caption,
            (FONT, CAPTION_FONT).into_font().style(FontStyle::Bold),
        );
    }
    match ticks {
        None => {
            let (x0, x1) = range_from_zero(xs(), 0.02);
            let mut chart = builder.build_cartesian_2d(x0..x1, y0..y1).map_err(err)?;
            lines_on(&mut chart, panel, &lines, &|v: &f64| tick(*v))?;
        }
        Some(ticks) => {
            let (x0, x1) = range_padded(xs().chain(ticks.iter().map(|t| t.0)), 0.05);
            let axis = TickedAxis {
                lo: x0,
                hi: x1,
                at: ticks.iter().map(|t| t.0).collect(),
            };
            let mut chart = builder.build_cartesian_2d(axis, y0..y1).map_err(err)?;
            let label = |v: &f64| {
                ticks
                    .iter()
                    .find(|t| (t.0 - v).abs() < 1e-9)
                    .map_or_else(|| tick(*v), |t| t.1.clone())
            };
            lines_on(&mut chart, panel, &lines, &label)?;
        }
    }
    if lines.iter().all(|l| l.1.is_empty()) {
        no_data(area)?;
    }
    Ok(())
}

/// A linear f64 axis whose ticks (and grid lines) are at given places.
struct TickedAxis {
    lo: f64,
    hi: f64,
    at: Vec<f64>,
}

impl Ranged for TickedAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let share = (v - self.lo) / (self.hi - self.lo);
        let pixels = (limit.1 - limit.0) as f64;
        if !share.is_finite() {
            return limit.0;
        }
        limit.0 + (pixels * share).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.at.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// Mesh, axes and lines of a line panel whose chart is built.
fn lines_on<DB: DrawingBackend, X>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, RangedCoordf64>>,
    panel: &LinePanel<'_>,
    lines: &[(RGBColor, Vec<(f64, f64)>)],
    x_label: &dyn Fn(&f64) -> String,
) -> DrawResult<()>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let fmt = |v: &f64| tick(*v);
    chart
        .configure_mesh()
        .x_desc(panel.x_desc)
        .y_desc(panel.y_desc)
        .x_labels(8)
        .y_labels(7)
        .x_label_formatter(x_label)
        .y_label_formatter(&fmt)
        .label_style((FONT, TICK_FONT).into_font().color(&RGBColor(40, 40, 40)))
        .axis_desc_style((FONT, DESC_FONT).into_font().color(&BLACK))
        .bold_line_style(RGBColor(224, 224, 224).stroke_width(1))
        .max_light_lines(0)
        .axis_style(RGBColor(90, 90, 90).stroke_width(1))
        .draw()
        .map_err(err)?;
    for (color, points) in lines {
        if points.is_empty() {
            continue;
        }
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(err)?;
        // Markers show where the samples are when there are few of them.
        if points.len() <= 60 {
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(err)?;
        }
    }
    Ok(())
}

/// One colour of points in a scatter plot.
pub struct ScatterSeries {
    pub color: RGBColor,
    pub points: Vec<(f64, f64)>,
}

/// Edge of a scatter point, pixels. Points falling in the same cell of this size are drawn once,
/// so the SVG grows with the area the points cover, not with their number.
const DOT: i32 = 2;

/// A scatter plot: each series' points as small squares, later series on top; both axes from
/// zero.
pub fn scatter(
    series: &[ScatterSeries],
    x_desc: &str,
    y_desc: &str,
    size: (u32, u32),
) -> DrawResult<String> {
    let series: Vec<(RGBColor, Vec<(f64, f64)>)> = series
        .iter()
        .map(|s| (s.color, finite(&s.points)))
        .collect();
    let (x0, x1) = range_from_zero(series.iter().flat_map(|s| s.1.iter().map(|p| p.0)), 0.02);
    let (y0, y1) = range_from_zero(series.iter().flat_map(|s| s.1.iter().map(|p| p.1)), 0.04);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin_top(14)
            .margin_right(24)
            .margin_left(6)
            .margin_bottom(6)
            .x_label_area_size(50)
            .y_label_area_size(76)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(err)?;
        let fmt = |v: &f64| tick(*v);
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels(8)
            .y_labels(7)
            .x_label_formatter(&fmt)
            .y_label_formatter(&fmt)
            .label_style((FONT, TICK_FONT).into_font().color(&RGBColor(40, 40, 40)))
            .axis_desc_style((FONT, DESC_FONT).into_font().color(&BLACK))
            .bold_line_style(RGBColor(224, 224, 224).stroke_width(1))
            .max_light_lines(0)
            .axis_style(RGBColor(90, 90, 90).stroke_width(1))
            .draw()
            .map_err(err)?;
        for (color, points) in &series {
            let mut seen = std::collections::HashSet::new();
            let kept: Vec<(f64, f64)> = points
                .iter()
                .copied()
                .filter(|p| {
                    let (px, py) = chart.backend_coord(p);
                    seen.insert((px.div_euclid(DOT), py.div_euclid(DOT)))
                })
                .collect();
            let h = DOT / 2;
            chart
                .draw_series(kept.into_iter().map(|p| {
                    EmptyElement::at(p)
                        + Rectangle::new([(-h, -h), (DOT - h, DOT - h)], color.filled())
                }))
                .map_err(err)?;
        }
        if series.iter().all(|s| s.1.is_empty()) {
            no_data(&root)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn no_data<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>) -> DrawResult<()> {
    let (w, h) = area.dim_in_pixel();
    let style = (FONT, DESC_FONT)
        .into_font()
        .color(&RGBColor(120, 120, 120))
        .pos(Pos::new(HPos::Center, VPos::Center));
    area.draw(&Text::new(
        "no data",
        ((w / 2) as i32, (h / 2) as i32),
        style,
    ))
    .map_err(err)
}

/// Horizontal stacked bars, one per entry of `bars`, first bar on top; the total of each bar is
/// written at its end (`empty` for a bar without any), and its label left of the axis.
///
/// The bar axis is continuous (bar `i` of `n` spans `n - 1 - i .. n - i`) and the labels are
/// placed in pixels, so no discrete coordinate or tick computation is involved.
pub fn stacked_bars(
    segments: &[Segment],
    bars: &[Bar],
    x_desc: &str,
    empty: &str,
    width: u32,
) -> DrawResult<String> {
    let n = bars.len().max(1);
    let height = 100 + 60 * n as u32;
    let totals: Vec<f64> = bars
        .iter()
        .map(|b| b.values.iter().filter(|v| v.is_finite() && **v > 0.0).sum())
        .collect();
    let (_, x1) = range_from_zero(totals.iter().copied(), 0.14);
    let longest = bars
        .iter()
        .map(|b| b.label.chars().count())
        .max()
        .unwrap_or(4);
    // About 8.5 px per character at the tick font size, within sane bounds; longer labels are
    // shortened below.
    const MAX_LABEL_AREA: u32 = 300;
    let wanted = longest as u32 * 17 / 2 + 24;
    let label_area = wanted.clamp(80, MAX_LABEL_AREA);
    let max_chars = if wanted <= MAX_LABEL_AREA {
        longest
    } else {
        ((MAX_LABEL_AREA - 24) * 2 / 17) as usize
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin_top(14)
            .margin_right(24)
            .margin_left(6)
            .margin_bottom(6)
            .x_label_area_size(50)
            .y_label_area_size(label_area)
            .build_cartesian_2d(0.0..x1, 0.0..n as f64)
            .map_err(err)?;
        let fmt = |v: &f64| tick(*v);
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc(x_desc)
            .x_labels(10)
            .x_label_formatter(&fmt)
            .label_style((FONT, TICK_FONT).into_font().color(&RGBColor(40, 40, 40)))
            .axis_desc_style((FONT, DESC_FONT).into_font().color(&BLACK))
            .bold_line_style(RGBColor(224, 224, 224).stroke_width(1))
            .max_light_lines(0)
            .axis_style(RGBColor(90, 90, 90).stroke_width(1))
            .draw()
            .map_err(err)?;
        let label_style = (FONT, TICK_FONT)
            .into_font()
            .color(&RGBColor(40, 40, 40))
            .pos(Pos::new(HPos::Right, VPos::Center));
        let total_style = (FONT, TICK_FONT)
            .into_font()
            .style(FontStyle::Bold)
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (i, bar) in bars.iter().enumerate() {
            let bottom = (n - 1 - i) as f64;
            let (lo, hi, mid) = (bottom + 0.2, bottom + 0.8, bottom + 0.5);
            let mut left = 0.0;
            for (seg, v) in segments.iter().zip(&bar.values) {
                if !(v.is_finite() && *v > 0.0) {
                    continue;
                }
                let right = left + v;
                // A thin white outline keeps neighbouring segments apart.
                chart
                    .draw_series([
                        Rectangle::new([(left, lo), (right, hi)], seg.color.filled()),
                        Rectangle::new([(left, lo), (right, hi)], WHITE.stroke_width(1)),
                    ])
                    .map_err(err)?;
                left = right;
            }
            let text = if totals[i] > 0.0 {
                format!("{:.2}", totals[i])
            } else {
                empty.to_string()
            };
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((left, mid)) + Text::new(text, (6, 0), total_style.clone()),
                ))
                .map_err(err)?;
            let (px, py) = chart.backend_coord(&(0.0, mid));
            root.draw(&Text::new(
                shorten(&bar.label, max_chars),
                (px - 8, py),
                label_style.clone(),
            ))
            .map_err(err)?;
        }
        if bars.is_empty() {
            no_data(&root)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// `s` cut to `max` characters with an ellipsis (the page's tables carry the full name).
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// The time x address scatter of a device's recorded I/O: writes and reads in the two colours
/// given, time in seconds since `t0_ns`, addresses in MB (10^6 bytes).
pub fn io_scatter(
    t: &wafer_workloads::iotrace::IoTrace,
    t0_ns: u64,
    (write, read): (RGBColor, RGBColor),
    size: (u32, u32),
) -> DrawResult<String> {
    let n = t.t_ns.len().min(t.offset.len()).min(t.write.len());
    let point = |k: usize| {
        (
            t.t_ns[k].saturating_sub(t0_ns) as f64 / 1e9,
            t.offset[k] as f64 / 1e6,
        )
    };
    let series = [
        ScatterSeries {
            color: write,
            points: (0..n).filter(|&k| t.write[k]).map(point).collect(),
        },
        ScatterSeries {
            color: read,
            points: (0..n).filter(|&k| !t.write[k]).map(point).collect(),
        },
    ];
    scatter(&series, "virtual time (s)", "address (MB)", size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_short() {
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(1200.0), "1200");
        assert_eq!(tick(12.5), "12.5");
        assert_eq!(tick(2.0), "2");
        assert_eq!(tick(1.25), "1.25");
        assert_eq!(tick(0.125), "0.125");
        assert_eq!(tick(f64::NAN), "");
    }

    #[test]
    fn ranges_never_empty() {
        assert_eq!(range_from_zero(std::iter::empty(), 0.1), (0.0, 1.0));
        assert_eq!(range_from_zero([f64::NAN].into_iter(), 0.1), (0.0, 1.0));
        let (lo, hi) = range_from_zero([2.0, 4.0].into_iter(), 0.5);
        assert_eq!((lo, hi), (0.0, 6.0));
    }

    #[test]
    fn empty_charts_render() {
        let svg = line_chart(
            &LinePanel {
                caption: None,
                x_desc: "x",
                y_desc: "y",
                lines: &[Line {
                    color: run_color(0),
                    points: vec![(f64::NAN, 1.0)],
                }],
            },
            (400, 300),
        )
        .unwrap();
        assert!(svg.contains("no data"));
        assert!(!svg.contains("NaN"));
        let svg = stacked_bars(&[], &[], "x", "none", 400).unwrap();
        assert!(svg.contains("no data"));
        for n in 1..=9 {
            let bars: Vec<Bar> = (0..n)
                .map(|i| Bar {
                    label: format!("run {i}"),
                    values: vec![1.0, i as f64],
                })
                .collect();
            let segments = [
                Segment {
                    label: "a",
                    color: RUN_COLORS[0],
                },
                Segment {
                    label: "b",
                    color: RUN_COLORS[1],
                },
            ];
            let svg = stacked_bars(&segments, &bars, "x", "none", 600).unwrap();
            assert!(svg.contains(&format!("run {}", n - 1)));
        }
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
    }
    #[test]
    fn ticks_at_given_places() {
        let lines = [Line {
            color: run_color(0),
            points: vec![(11.0, 3.0), (14.0, 1.0), (17.0, 0.5)],
        }];
        let ticks: Vec<(f64, String)> = [11, 14, 17]
            .into_iter()
            .map(|e| (e as f64, format!("{}K", (1u64 << e) >> 10)))
            .collect();
        let svg = line_chart_ticks(
            &LinePanel {
                caption: None,
                x_desc: "cluster",
                y_desc: "s",
                lines: &lines,
            },
            &ticks,
            (600, 300),
        )
        .unwrap();
        for label in ["2K", "16K", "128K"] {
            assert!(svg.contains(&format!(">\n{label}\n</text>")), "{label}");
        }
        // Only the given ticks on the x axis: no label between them.
        assert!(!svg.contains(">\n12\n</text>") && !svg.contains(">\n11\n</text>"));
        assert!(!svg.contains("no data"));
    }

    #[test]
    fn scatter_draws_a_cell_once() {
        let rects = |svg: &str| svg.matches("<rect").count();
        let empty = scatter(&[], "t", "a", (400, 300)).unwrap();
        assert!(empty.contains("no data"));
        let base = rects(&empty);
        // 10,000 points on one spot and a line of 100 well-separated ones.
        let series = [
            ScatterSeries {
                color: run_color(0),
                points: vec![(0.5, 0.5); 10_000],
            },
            ScatterSeries {
                color: run_color(1),
                points: (0..100).map(|i| (i as f64, i as f64)).collect(),
            },
        ];
        let svg = scatter(&series, "t", "a", (800, 600)).unwrap();
        assert!(!svg.contains("no data"));
        let drawn = rects(&svg) - base;
        assert!((90..=101).contains(&drawn), "{drawn} points drawn");
    }
}
