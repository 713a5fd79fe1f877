//! The page: header, comparison tables and the figures, with inline CSS. Every piece of text
//! that comes from the inputs goes through [`esc`].

use super::figures::{Figures, SEGMENTS};
use super::{charts, Input, RunView};
use crate::cli::size::format_bytes;
use std::fmt::Write as _;
use wafer_workloads::bench::{BenchSummary, Window};

pub(super) const CSS: &str = "\
:root{color-scheme:light}
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif;\
color:#1d1d1f;background:#fff;max-width:1240px;margin:0 auto;padding:24px 28px 48px;line-height:1.45}
h1{font-size:1.7em;margin:0 0 .2em}
h2{font-size:1.25em;margin:2em 0 .4em;padding-bottom:.2em;border-bottom:1px solid #ddd}
p.note,p.sources{color:#555;font-size:.92em;margin:.3em 0}
table{border-collapse:collapse;margin:.6em 0;display:block;overflow-x:auto;max-width:100%;font-size:.93em;font-variant-numeric:tabular-nums}
th,td{padding:5px 10px;border-bottom:1px solid #e3e3e3;text-align:right;vertical-align:top}
td{white-space:nowrap}
th{background:#f5f5f7;font-weight:600;border-bottom:2px solid #ccc}
th:first-child,td:first-child{text-align:left}
td.text,th.text{text-align:left;white-space:normal;min-width:11em}
td.best{font-weight:700;color:#0a5a2a}
.swatch{display:inline-block;width:13px;height:13px;border-radius:2px;margin-right:6px;\
vertical-align:-1px}
.legend{display:flex;flex-wrap:wrap;gap:6px 20px;margin:.4em 0 .2em;font-size:.95em}
.legend span.item{white-space:nowrap}
figure.chart{margin:.4em 0 1em}
figure.chart svg{display:block;width:100%;height:auto;max-width:1200px}
figcaption{color:#555;font-size:.9em;margin-top:.2em}
th.group{text-align:center;border-bottom:1px solid #ccc}
div.pair{display:grid;grid-template-columns:repeat(auto-fit,minmax(480px,1fr));gap:0 24px}
details{margin:.6em 0}
summary{cursor:pointer;color:#333}
code{font-size:.95em}
span.src{color:#666;font-size:.88em}
";

/// Escapes text for HTML content and attribute values.
pub(super) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A number with thousands separators, "n/a" when not finite.
pub(super) fn grouped(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 && digits != "0" {
        out.insert(0, '-');
    }
    out
}

/// A volume of traffic in decimal units (docs/metrics.md: sizes binary, traffic decimal):
/// "201.3 MB", "1.17 GB".
pub(super) fn traffic(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["kB", "MB", "GB", "TB", "PB"];
    let mut v = bytes as f64;
    if v < 1e3 {
        return format!("{bytes} B");
    }
    let mut i = 0;
    v /= 1e3;
    while v >= 1e3 && i + 1 < UNITS.len() {
        v /= 1e3;
        i += 1;
    }
    let d = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.d$} {}", UNITS[i])
}

pub(super) fn fixed(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "n/a".into()
    }
}

pub(super) fn percent(v: f64) -> String {
    if v.is_finite() {
        format!("{:.1}%", v * 100.0)
    } else {
        "n/a".into()
    }
}

pub(super) fn latency(ns: u64) -> String {
    let v = ns as f64;
    if ns == 0 {
        "n/a".into()
    } else if v < 1e3 {
        format!("{ns} ns")
    } else if v < 1e6 {
        format!("{:.1} µs", v / 1e3)
    } else if v < 1e9 {
        format!("{:.2} ms", v / 1e6)
    } else {
        format!("{:.2} s", v / 1e9)
    }
}

/// The indices of the best of `values` (lowest or highest) as shown by `show`, so that values
/// that print the same tie; empty when there is no difference to show.
pub(super) fn best(values: &[f64], show: fn(f64) -> String, lower_is_better: bool) -> Vec<usize> {
    let finite: Vec<(usize, f64)> = values
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .collect();
    let top = finite
        .iter()
        .map(|p| p.1)
        .reduce(|a, b| if (b < a) == lower_is_better { b } else { a });
    let Some(top) = top else {
        return Vec::new();
    };
    let shown = show(top);
    let winners: Vec<usize> = finite
        .iter()
        .filter(|(_, v)| show(*v) == shown)
        .map(|(i, _)| *i)
        .collect();
    if winners.len() == finite.len() {
        Vec::new()
    } else {
        winners
    }
}

/// The workload of a run in a few words, e.g. "YCSB-A, zipf:0.99, 1000 B values, LZ4 ratio 0.41".
fn workload(run: &BenchSummary) -> String {
    if let Some(label) = &run.config.workload_label {
        return label.clone();
    }
    let y = &run.config.ycsb;
    format!(
        "YCSB-{}, {}, {}, LZ4 ratio {:.2}",
        y.workload.name().to_uppercase(),
        y.key_dist(),
        y.describe_values(),
        y.compressibility
    )
}

/// One column of a window table.
struct Column {
    head: &'static str,
    value: fn(&Window) -> f64,
    show: fn(f64) -> String,
    /// `Some(true)`: lower is better; `Some(false)`: higher is better; `None`: not ranked.
    lower_is_better: Option<bool>,
}

const WINDOW_COLUMNS: [Column; 7] = [
    Column {
        head: "OPS (virtual, ops/s)",
        value: |w| w.ops_per_s,
        show: grouped,
        lower_is_better: Some(false),
    },
    Column {
        head: "DB WAF",
        value: |w| w.db_waf,
        show: |v| fixed(v, 2),
        lower_is_better: Some(true),
    },
    Column {
        head: "SSD WAF",
        value: |w| w.ssd_waf,
        show: |v| fixed(v, 2),
        lower_is_better: Some(true),
    },
    Column {
        head: "total WAF",
        value: |w| w.total_waf,
        show: |v| fixed(v, 2),
        lower_is_better: Some(true),
    },
    Column {
        head: "logical bytes/op",
        value: |w| w.logical_bytes_per_op,
        show: grouped,
        lower_is_better: Some(true),
    },
    Column {
        head: "physical bytes/op",
        value: |w| w.physical_bytes_per_op,
        show: grouped,
        lower_is_better: Some(true),
    },
    Column {
        head: "hit ratio",
        value: |w| w.hit_ratio,
        show: percent,
        lower_is_better: Some(false),
    },
];

pub(super) fn swatch(color: plotters::style::RGBColor) -> String {
    format!(
        "<span class=\"swatch\" style=\"background:{}\"></span>",
        charts::hex(color)
    )
}

pub(super) fn window_table(
    out: &mut String,
    views: &[RunView<'_>],
    window: fn(&BenchSummary) -> &Window,
) {
    out.push_str("<table>\n<thead><tr><th>configuration</th>");
    for c in &WINDOW_COLUMNS {
        let _ = write!(out, "<th>{}</th>", esc(c.head));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let best_of: Vec<Vec<usize>> = WINDOW_COLUMNS
        .iter()
        .map(|c| {
            let values: Vec<f64> = views.iter().map(|v| (c.value)(window(v.run))).collect();
            c.lower_is_better
                .map(|lower| best(&values, c.show, lower))
                .unwrap_or_default()
        })
        .collect();
    for (i, v) in views.iter().enumerate() {
        let _ = write!(out, "<tr><td>{}{}</td>", swatch(v.color), esc(&v.label));
        for (c, b) in WINDOW_COLUMNS.iter().zip(&best_of) {
            let class = if b.contains(&i) {
                " class=\"best\""
            } else {
                ""
            };
            let _ = write!(
                out,
                "<td{class}>{}</td>",
                (c.show)((c.value)(window(v.run)))
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

/// Which part of each run the steady-state table shows, and each run's warnings (a metric
/// still trending at the end), worded as the CLI prints them.
fn steady_notes(out: &mut String, views: &[RunView<'_>]) {
    out.push_str("<ul class=\"steady\">\n");
    for v in views {
        let st = &v.run.steady_state;
        if st.label.is_empty() {
            // A result file written before the steady state was described.
            continue;
        }
        let _ = write!(
            out,
            "<li>{}{}: steady state: {}",
            swatch(v.color),
            esc(&v.label),
            esc(&st.label)
        );
        for w in &st.warnings {
            let _ = write!(out, "<br><strong class=\"warn\">{}</strong>", esc(w));
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ul>\n");
}

fn config_table(out: &mut String, views: &[RunView<'_>], several_inputs: bool) {
    out.push_str(
        "<table>\n<thead><tr><th>run</th><th class=\"text\">description</th>\
         <th>data device</th><th>fill (target / reached)</th><th>buffer pool</th>\
         <th class=\"text\">workload</th><th>clients (cores)</th><th>seed</th>\
         <th>records</th></tr></thead>\n<tbody>\n",
    );
    for v in views {
        let c = &v.run.config;
        // With several inputs, where each run comes from goes under its description.
        let source = if several_inputs && !v.source.is_empty() {
            format!("<br><span class=\"src\">{}</span>", esc(v.source))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<tr><td>{sw}{name}</td><td class=\"text\">{desc}{source}</td><td>{dev}</td>\
             <td>{fill} / {reached}</td><td>{buf} of data</td><td class=\"text\">{wl}</td>\
             <td>{clients} ({cores})</td><td>{seed}</td><td>{records}</td></tr>",
            sw = swatch(v.color),
            name = esc(&v.label),
            desc = esc(&v.run.description),
            dev = esc(&format_bytes(c.data_ssd.logical_bytes)),
            fill = percent(c.fill),
            reached = percent(v.run.fill_achieved),
            buf = percent(c.buffer_fraction),
            wl = esc(&workload(v.run)),
            clients = c.run.clients,
            cores = c.run.cores,
            seed = c.ycsb.seed,
            records = grouped(v.run.records as f64),
        );
    }
    out.push_str("</tbody>\n</table>\n");
}

fn run_details_table(out: &mut String, views: &[RunView<'_>]) {
    out.push_str(
        "<table>\n<thead><tr><th>configuration</th><th>ops</th><th>virtual time (s)</th>\
         <th>WAL bytes/op</th><th>page reads/op</th><th>checkpoint flush share</th>\
         <th>p50</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>aborts</th>\
         <th>SSD GC runs</th><th>erases</th><th>life used</th></tr></thead>\n<tbody>\n",
    );
    for v in views {
        let r = v.run;
        let w = &r.run;
        let _ = writeln!(
            out,
            "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td></tr>",
            swatch(v.color),
            esc(&v.label),
            grouped(w.ops as f64),
            fixed(w.virtual_s, 3),
            grouped(w.wal_bytes_per_op),
            fixed(w.page_reads_per_op, 3),
            percent(w.checkpoint_flush_share),
            latency(r.latency.p50_ns),
            latency(r.latency.p99_ns),
            latency(r.latency.p999_ns),
            latency(r.latency.p9999_ns),
            grouped(r.aborts as f64),
            grouped(r.ssd_gc_runs as f64),
            grouped(r.ssd_erases as f64),
            fixed(r.wear.life_used * 100.0, 4) + "%",
        );
    }
    out.push_str("</tbody>\n</table>\n");
}

pub(super) fn run_legend(out: &mut String, views: &[RunView<'_>]) {
    out.push_str("<div class=\"legend\">");
    for v in views {
        let empty = if v.run.series.is_empty() {
            " <em>(no series data)</em>"
        } else {
            ""
        };
        let _ = write!(
            out,
            "<span class=\"item\">{}{}{empty}</span>",
            swatch(v.color),
            esc(&v.label)
        );
    }
    out.push_str("</div>\n");
}

/// A legend of coloured segments (of stacked bars).
pub(super) fn segment_legend(out: &mut String, segments: &[super::charts::Segment]) {
    out.push_str("<div class=\"legend\">");
    for s in segments {
        let _ = write!(
            out,
            "<span class=\"item\">{}{}</span>",
            swatch(s.color),
            esc(s.label)
        );
    }
    out.push_str("</div>\n");
}

pub(super) fn figure(out: &mut String, id: &str, svg: &str, caption: &str) {
    let _ = write!(
        out,
        "<figure class=\"chart\" id=\"{id}\">\n{svg}<figcaption>{}</figcaption>\n</figure>\n",
        esc(caption)
    );
}

fn breakdown_section(out: &mut String, views: &[RunView<'_>], f: &Figures) {
    out.push_str("<h2>Where the writes go (per user byte)</h2>\n");
    out.push_str(
        "<p class=\"note\">Bytes written during the run phase, divided by the user bytes \
         (pages written for eviction or checkpointing, counted uncompressed), as in paper 002 \
         Figure 13b. The DB part adds up to the DB WAF; the SSD GC part is what the SSD \
         relocated, so a bar is as long as the total WAF.</p>\n",
    );
    out.push_str("<div class=\"legend\">");
    for &s in &f.breakdown.shown {
        let _ = write!(
            out,
            "<span class=\"item\">{}{}</span>",
            swatch(SEGMENTS[s].color),
            esc(SEGMENTS[s].label)
        );
    }
    out.push_str("</div>\n");
    figure(
        out,
        "fig-breakdown",
        &f.breakdown_svg,
        "Write amplification breakdown, run phase.",
    );
    out.push_str("<table>\n<thead><tr><th>configuration</th>");
    for &s in &f.breakdown.shown {
        let _ = write!(out, "<th>{}</th>", esc(SEGMENTS[s].label));
    }
    out.push_str("<th>sum</th><th>total WAF (reported)</th></tr></thead>\n<tbody>\n");
    for (v, row) in views.iter().zip(&f.breakdown.rows) {
        let _ = write!(out, "<tr><td>{}{}</td>", swatch(v.color), esc(&v.label));
        match row {
            Some(r) => {
                for &s in &f.breakdown.shown {
                    let _ = write!(out, "<td>{}</td>", fixed(r[s], 3));
                }
                let sum: f64 = f.breakdown.shown.iter().map(|&s| r[s]).sum();
                let _ = write!(out, "<td>{}</td>", fixed(sum, 3));
            }
            None => {
                let _ = write!(
                    out,
                    "<td class=\"text\" colspan=\"{}\">no user writes</td>",
                    f.breakdown.shown.len() + 1
                );
            }
        }
        let _ = writeln!(out, "<td>{}</td></tr>", fixed(v.run.run.total_waf, 3));
    }
    out.push_str("</tbody>\n</table>\n");
}

/// The start of every page: head with the inline CSS, the title.
pub(super) fn page_start(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{t}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<h1>{t}</h1>\n",
        t = esc(title)
    );
}

/// The line naming the input files, how many runs each holds and its title.
pub(super) fn sources(out: &mut String, title: &str, inputs: &[Input], what: &str) {
    sources_then(
        out,
        title,
        inputs,
        what,
        "All times and rates are virtual (simulated device time).",
    );
}

/// [`sources`] with another closing sentence.
pub(super) fn sources_then(
    out: &mut String,
    title: &str,
    inputs: &[Input],
    what: &str,
    closing: &str,
) {
    let files: Vec<String> = inputs
        .iter()
        .map(|i| {
            let n = i.content.count();
            let mut s = format!("{n} {what}{}", if n == 1 { "" } else { "s" });
            if !i.source.is_empty() {
                s = format!("<code>{}</code> ({s})", esc(&i.source));
            }
            let t = i.content.title().trim();
            if !t.is_empty() && t != title.trim() {
                let _ = write!(s, ": {}", esc(t));
            }
            s
        })
        .collect();
    out.push_str("<p class=\"sources\">");
    out.push_str(&files.join("; "));
    let _ = writeln!(out, ". {closing}</p>");
}

/// The whole page; `tpcc`: the TPC-C layout (its own results table first, tpmC and New-Orders
/// in the charts).
pub fn page(
    title: &str,
    inputs: &[Input],
    views: &[RunView<'_>],
    f: &Figures,
    tpcc: bool,
) -> String {
    let mut out = String::with_capacity(64 * 1024 + f.breakdown_svg.len() * 4);
    page_start(&mut out, title);
    sources(&mut out, title, inputs, "run");
    if views.len() > charts::RUN_COLORS.len() {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} runs: colours repeat after {}.</p>",
            views.len(),
            charts::RUN_COLORS.len()
        );
    }

    out.push_str("<h2>Runs</h2>\n");
    config_table(&mut out, views, inputs.len() > 1);

    if tpcc {
        super::tpcc::sections(&mut out, views, f);
        out.push_str("<h2>Engine metrics (steady state)</h2>\n");
    } else {
        out.push_str("<h2>Comparison (steady state)</h2>\n");
    }
    out.push_str(
        "<p class=\"note\">The last full interval of each run (a final interval holding less \
         than half an interval's writes, as when a run stops at an operation limit, is merged \
         into the one before), in the shape of paper 002 Table 1. \
         DB WAF = DB-issued / user bytes; SSD WAF = media / host bytes; total WAF = DB WAF \
         &times; SSD WAF; logical bytes/op = DB-issued bytes per operation; physical bytes/op = \
         media bytes per operation. The best value of a column is in bold.</p>\n",
    );
    window_table(&mut out, views, |r| &r.steady);
    steady_notes(&mut out, views);
    out.push_str(
        "<details>\n<summary>Whole run phase (all intervals), latency and wear</summary>\n",
    );
    window_table(&mut out, views, |r| &r.run);
    run_details_table(&mut out, views);
    out.push_str("</details>\n");

    breakdown_section(&mut out, views, f);

    out.push_str("<h2>Throughput over time</h2>\n");
    run_legend(&mut out, views);
    figure(
        &mut out,
        "fig-throughput",
        &f.throughput_svg,
        if tpcc {
            "New-Orders per minute of virtual time (tpmC), per interval (an interval ends each \
             time the DB-issued writes grow by a fixed share of the data device)."
        } else {
            "Operations per second of virtual time, per interval (an interval ends each time the \
             DB-issued writes grow by a fixed share of the data device)."
        },
    );

    if tpcc {
        out.push_str("<h2>Flash writes against New-Orders</h2>\n");
    } else {
        out.push_str("<h2>Flash writes against transactions</h2>\n");
    }
    run_legend(&mut out, views);
    figure(
        &mut out,
        "fig-media",
        &f.media_svg,
        if tpcc {
            "Cumulative bytes programmed to flash by the data SSD since the run started, against \
             completed New-Orders (paper 002 Figure 16). A flatter line writes less flash per \
             New-Order."
        } else {
            "Cumulative bytes programmed to flash by the data SSD since the run started, against \
             committed transactions (paper 002 Figure 16). A flatter line writes less flash per \
             transaction."
        },
    );

    out.push_str("<h2>Write amplification per interval</h2>\n");
    run_legend(&mut out, views);
    figure(
        &mut out,
        "fig-waf",
        &f.waf_svg,
        "DB WAF and SSD WAF of each interval against virtual time.",
    );

    out.push_str("<h2>Latency tail</h2>\n");
    run_legend(&mut out, views);
    figure(
        &mut out,
        "fig-latency",
        &f.latency_svg,
        "Latency of the measured run's operations (virtual time, from submission to completion) \
         at the 50th, 99th, 99.9th and 99.99th percentiles, on a scale of nines.",
    );

    out.push_str("<h2>Latency over time</h2>\n");
    run_legend(&mut out, views);
    figure(
        &mut out,
        "fig-latency-time",
        &f.latency_time_svg,
        "The 50th, 99th and 99.9th percentile latency of the operations that completed in each \
         interval, against virtual time (each panel has its own scale). The --hdr DIR option of \
         bench ycsb and bench tpcc writes the full histograms as HdrHistogram interval logs.",
    );
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(
            esc("<a href=\"x\">&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(grouped(1234567.4), "1,234,567");
        assert_eq!(grouped(999.0), "999");
        assert_eq!(grouped(-1234.0), "-1,234");
        assert_eq!(grouped(f64::INFINITY), "n/a");
        assert_eq!(fixed(f64::NAN, 2), "n/a");
        assert_eq!(percent(0.5), "50.0%");
        assert_eq!(latency(1_500), "1.5 µs");
        assert_eq!(traffic(999), "999 B");
        assert_eq!(traffic(201_326_592), "201 MB");
        assert_eq!(traffic(1_170_000_000), "1.17 GB");
        assert_eq!(traffic(12_340), "12.3 kB");
    }

    #[test]
    fn best_values() {
        let two = |v| fixed(v, 2);
        assert_eq!(best(&[2.0, 1.0, 3.0], two, true), vec![1]);
        assert_eq!(best(&[2.0, 1.0, 3.0], two, false), vec![2]);
        assert_eq!(best(&[1.0, 2.0, 1.001], two, true), vec![0, 2]);
        assert!(best(&[1.0, 1.001], two, true).is_empty());
        assert!(best(&[1.0], two, true).is_empty());
        assert!(best(&[f64::NAN, 1.0], two, true).is_empty());
    }
}
