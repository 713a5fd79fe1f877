//! The query page: one result of `wafer bench query` (paper 003's external sort and joins with
//! temp space on the simulated disk and the simulated flash SSD), in the shape of the paper's
//! figures: the sort by cluster size (Figure 7a) and by memory size (Figure 7b), the joins
//! (Figure 8), the sort's phases (Figure 6), and the time x address scatter of every run that
//! recorded its temp I/O. Each section only when the file holds its experiment.

use super::charts::{self, Bar, Line, LinePanel, Segment};
use super::figures::CHART_WIDTH;
use super::html::{best, esc, figure, fixed, grouped, page_start, sources, swatch};
use super::{Input, ReportError};
use crate::cli::size::format_bytes;
use plotters::style::RGBColor;
use std::fmt::Write as _;
use wafer_workloads::query::bench::{Experiment, Operator, QueryBenchResult, QueryRun, TempDevice};

/// The devices in the order the page shows them.
const DEVICES: [TempDevice; 2] = [TempDevice::Disk, TempDevice::Flash];

/// The colour of a device's lines.
fn device_color(d: TempDevice) -> RGBColor {
    match d {
        TempDevice::Disk => charts::RUN_COLORS[2],
        TempDevice::Flash => charts::RUN_COLORS[6],
    }
}

/// Scatter colours: writes and reads.
const WRITE_COLOR: RGBColor = charts::RUN_COLORS[1];
const READ_COLOR: RGBColor = charts::RUN_COLORS[0];

/// The phases operators report, with their bar colours (none is the scatter's write or read
/// colour); any other name is drawn as "other".
const PHASES: [Segment; 8] = [
    Segment {
        label: "run-generation",
        color: charts::RUN_COLORS[4],
    },
    Segment {
        label: "merge",
        color: charts::RUN_COLORS[5],
    },
    Segment {
        label: "partition",
        color: charts::RUN_COLORS[2],
    },
    Segment {
        label: "build-probe",
        color: charts::RUN_COLORS[3],
    },
    Segment {
        label: "left-sort",
        color: charts::RUN_COLORS[6],
    },
    Segment {
        label: "right-sort",
        color: charts::RUN_COLORS[7],
    },
    Segment {
        label: "merge-join",
        color: RGBColor(166, 118, 29),
    },
    Segment {
        label: "other",
        color: RGBColor(170, 170, 170),
    },
];

/// The title when none is given.
pub fn default_title(res: &QueryBenchResult) -> String {
    let devices: Vec<&str> = res.config.devices.iter().map(|d| d.name()).collect();
    format!(
        "wafer bench query: sort and joins with temp space on {} ({} rows per table)",
        devices.join(" and "),
        grouped(res.config.rows as f64)
    )
}

fn secs_f(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Virtual seconds with three significant digits or more.
fn secs(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Decimal megabytes (traffic), one decimal.
fn mb(bytes: u64) -> String {
    fixed(bytes as f64 / 1e6, 1)
}

/// A phase's virtual seconds (0 when the run has no such phase).
fn phase_s(r: &QueryRun, name: &str) -> f64 {
    r.phases
        .iter()
        .filter(|p| p.name == name)
        .map(|p| secs_f(p.stats.time_ns))
        .sum()
}

/// A cluster size as an axis label: 2K, 64K, 1M.
fn size_tick(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{}M", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{}K", bytes >> 10)
    } else {
        bytes.to_string()
    }
}

/// The runs of experiment `e` on `d` by `op`, in file order.
fn runs_of(
    res: &QueryBenchResult,
    e: Experiment,
    d: TempDevice,
    op: Operator,
) -> impl Iterator<Item = &QueryRun> {
    res.runs
        .iter()
        .filter(move |r| r.experiment == e && r.device == d && r.operator == op)
}

/// The devices with a run in experiment `e`.
fn devices_in(res: &QueryBenchResult, e: Experiment) -> Vec<TempDevice> {
    DEVICES
        .into_iter()
        .filter(|&d| res.runs.iter().any(|r| r.experiment == e && r.device == d))
        .collect()
}

/// Whether the page has a section for `e`: it ran, or the file holds runs of it.
fn has(res: &QueryBenchResult, e: Experiment) -> bool {
    res.experiments.contains(&e) || res.runs.iter().any(|r| r.experiment == e)
}

fn device_legend(out: &mut String, devices: &[TempDevice]) {
    out.push_str("<div class=\"legend\">");
    for &d in devices {
        let _ = write!(
            out,
            "<span class=\"item\">{}{}</span>",
            swatch(device_color(d)),
            d.name()
        );
    }
    out.push_str("</div>\n");
}

/// The setup: tables, memory, clusters, timing model, devices.
fn setup(out: &mut String, res: &QueryBenchResult) {
    let c = &res.config;
    let t = &c.timing;
    let sizes = |v: &[usize]| -> String {
        v.iter()
            .map(|&b| format_bytes(b as u64))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let fractions: Vec<String> = c
        .memory_fractions
        .iter()
        .map(|f| charts::tick(f * 100.0) + "%")
        .collect();
    let g = &res.flash.geometry;
    let ft = &res.flash.timing;
    let d = &res.disk;
    let experiments: Vec<&str> = res.experiments.iter().map(|e| e.name()).collect();
    let rows: Vec<(&str, String)> = vec![
        ("experiments", experiments.join(", ")),
        (
            "tables",
            format!(
                "2 (a and b), {} rows each, {} B per row in temp space, {} per table",
                grouped(c.rows as f64),
                c.row_bytes,
                format_bytes(c.table_bytes())
            ),
        ),
        (
            "operator memory",
            format!(
                "{} (cluster sweep, joins, phases)",
                format_bytes(c.memory_bytes)
            ),
        ),
        ("cluster sweep", sizes(&c.clusters)),
        (
            "memory sweep",
            format!("{} of a table", fractions.join(", ")),
        ),
        (
            "cluster outside the sweep",
            format!(
                "disk {}, flash {}",
                format_bytes(c.disk_cluster as u64),
                format_bytes(c.flash_cluster as u64)
            ),
        ),
        ("CPU per row and step", format!("{} ns", t.cpu_ns_per_row)),
        (
            "read-ahead",
            format!("{} cluster(s) per run reader", t.read_ahead),
        ),
        (
            "write-behind",
            format!("{} cluster buffer(s) of writes in flight", t.write_behind),
        ),
        ("queue depth", t.queue_depth.to_string()),
        (
            "temp space",
            format!("{} on each device", format_bytes(c.temp_bytes)),
        ),
        (
            "flash SSD",
            format!(
                "{}: {}; {} channels x {} dies, {} pages, read {} µs, program {} µs, channel \
                 {} MB/s, mapping unit {}",
                c.flash_drive.name(),
                c.flash_drive.description(),
                g.channels,
                g.dies_per_channel,
                format_bytes(g.page_size_bytes as u64),
                fixed(ft.read_ns as f64 / 1e3, 0),
                fixed(ft.program_ns as f64 / 1e3, 0),
                ft.channel_mb_s,
                format_bytes(res.flash.mapping_unit_bytes as u64)
            ),
        ),
        (
            "disk",
            format!(
                "{} rpm, {} MB/s, write-back cache {}, seek {}-{} ms, {} (temp space at the \
                 start)",
                d.rpm,
                d.transfer_mb_s,
                if d.write_cache_bytes == 0 {
                    "none".to_string()
                } else {
                    format_bytes(d.write_cache_bytes)
                },
                fixed(d.track_to_track_seek_ns as f64 / 1e6, 1),
                fixed(d.full_stroke_seek_ns as f64 / 1e6, 0),
                format_bytes(d.capacity_bytes)
            ),
        ),
        ("seed", c.seed.to_string()),
    ];
    out.push_str(
        "<table>\n<thead><tr><th>setting</th><th class=\"text\">value</th></tr></thead>\n<tbody>\n",
    );
    for (k, v) in rows {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"text\">{}</td></tr>",
            esc(k),
            esc(&v)
        );
    }
    out.push_str("</tbody>\n</table>\n");
}

/// The five cells of a sort run: total, run generation, merge, fan-in, extra merges.
fn sort_cells(out: &mut String, r: Option<&QueryRun>, best: bool) {
    let Some(r) = r else {
        out.push_str("<td>-</td><td>-</td><td>-</td><td>-</td><td>-</td>");
        return;
    };
    let class = if best { " class=\"best\"" } else { "" };
    let _ = write!(
        out,
        "<td{class}>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
        secs(secs_f(r.time_ns)),
        secs(phase_s(r, "run-generation")),
        secs(phase_s(r, "merge")),
        r.fan,
        r.extra_passes
    );
}

/// The header of a table with a group of sort columns per device.
fn sort_head(out: &mut String, first: &[&str], devices: &[TempDevice], ratio: bool) {
    out.push_str("<table>\n<thead><tr>");
    for h in first {
        let _ = write!(out, "<th rowspan=\"2\">{}</th>", esc(h));
    }
    for &d in devices {
        let _ = write!(
            out,
            "<th colspan=\"5\" class=\"group\">{}{}</th>",
            swatch(device_color(d)),
            d.name()
        );
    }
    if ratio {
        out.push_str("<th rowspan=\"2\">disk / flash</th>");
    }
    out.push_str("</tr>\n<tr>");
    for _ in devices {
        out.push_str(
            "<th>total (s)</th><th>run generation (s)</th><th>merge (s)</th><th>fan-in</th>\
             <th>extra merges</th>",
        );
    }
    out.push_str("</tr></thead>\n<tbody>\n");
}

/// For each device, the indices among `rows` of the fastest run (none when all print alike).
fn fastest(rows: &[Vec<Option<&QueryRun>>], devices: usize) -> Vec<Vec<usize>> {
    (0..devices)
        .map(|i| {
            let times: Vec<f64> = rows
                .iter()
                .map(|row| row[i].map_or(f64::NAN, |r| secs_f(r.time_ns)))
                .collect();
            best(&times, secs, true)
        })
        .collect()
}

fn cluster_section(out: &mut String, res: &QueryBenchResult) -> Result<(), ReportError> {
    let e = Experiment::Cluster;
    let devices = devices_in(res, e);
    let mut clusters: Vec<usize> = res.config.clusters.clone();
    clusters.extend(
        res.runs
            .iter()
            .filter(|r| r.experiment == e)
            .map(|r| r.cluster_bytes),
    );
    clusters.sort_unstable();
    clusters.dedup();
    let pick =
        |d: TempDevice, c: usize| runs_of(res, e, d, Operator::Sort).find(|r| r.cluster_bytes == c);
    let lines: Vec<Line> = devices
        .iter()
        .map(|&d| Line {
            color: device_color(d),
            points: clusters
                .iter()
                .filter_map(|&c| Some(((c as f64).log2(), secs_f(pick(d, c)?.time_ns))))
                .collect(),
        })
        .collect();
    let ticks: Vec<(f64, String)> = clusters
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| ((c as f64).log2(), size_tick(c)))
        .collect();
    let svg = charts::line_chart_ticks(
        &LinePanel {
            caption: None,
            x_desc: "cluster size (bytes, log2 scale)",
            y_desc: "sort time (virtual s)",
            lines: &lines,
        },
        &ticks,
        (CHART_WIDTH, 440),
    )
    .map_err(ReportError::Chart)?;
    out.push_str("<h2>Figure 7(a): sort time by cluster size</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">External sort of table a with {} of memory, temp space on each \
         device at each cluster size (the temp I/O unit). Time is the operator's virtual time: \
         run generation (writing the sorted runs) plus merge (any intermediate merges and the \
         final merge's reads); reading the input is not timed, the CPU cost per row is. The \
         fastest cluster of each device is in bold.</p>",
        esc(&format_bytes(res.config.memory_bytes))
    );
    device_legend(out, &devices);
    figure(
        out,
        "fig-query-cluster",
        &svg,
        "Sort time against cluster size, one line per temp device.",
    );
    let rows: Vec<Vec<Option<&QueryRun>>> = clusters
        .iter()
        .map(|&c| devices.iter().map(|&d| pick(d, c)).collect())
        .collect();
    let fast = fastest(&rows, devices.len());
    sort_head(out, &["cluster"], &devices, false);
    for (i, (c, row)) in clusters.iter().zip(&rows).enumerate() {
        let _ = write!(out, "<tr><td>{}</td>", esc(&format_bytes(*c as u64)));
        for (j, r) in row.iter().enumerate() {
            sort_cells(out, *r, fast[j].contains(&i));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    Ok(())
}

fn memory_section(out: &mut String, res: &QueryBenchResult) -> Result<(), ReportError> {
    let e = Experiment::Memory;
    let devices = devices_in(res, e);
    let mut fractions: Vec<f64> = res.config.memory_fractions.clone();
    fractions.extend(
        res.runs
            .iter()
            .filter(|r| r.experiment == e)
            .map(|r| r.memory_fraction),
    );
    fractions.retain(|f| f.is_finite() && *f > 0.0);
    fractions.sort_by(f64::total_cmp);
    fractions.dedup();
    let pick =
        |d: TempDevice, f: f64| runs_of(res, e, d, Operator::Sort).find(|r| r.memory_fraction == f);
    // Log spacing: the default sweep spans 1% to 50% of a table.
    let x = |f: f64| (f * 100.0).log10();
    let lines: Vec<Line> = devices
        .iter()
        .map(|&d| Line {
            color: device_color(d),
            points: fractions
                .iter()
                .filter_map(|&f| Some((x(f), secs_f(pick(d, f)?.time_ns))))
                .collect(),
        })
        .collect();
    let ticks: Vec<(f64, String)> = fractions
        .iter()
        .map(|&f| (x(f), charts::tick(f * 100.0) + "%"))
        .collect();
    let svg = charts::line_chart_ticks(
        &LinePanel {
            caption: None,
            x_desc: "operator memory, % of one table (log scale)",
            y_desc: "sort time (virtual s)",
            lines: &lines,
        },
        &ticks,
        (CHART_WIDTH, 440),
    )
    .map_err(ReportError::Chart)?;
    out.push_str("<h2>Figure 7(b): sort time by memory size</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">The same sort with memory as a share of one table ({}), each device \
         at its own cluster (disk {}, flash {}); memory is rounded to whole clusters and raised \
         to the operator's minimum where the share is less. The fastest memory of each device is \
         in bold; disk / flash is the ratio of their times.</p>",
        esc(&format_bytes(res.config.table_bytes())),
        esc(&format_bytes(res.config.disk_cluster as u64)),
        esc(&format_bytes(res.config.flash_cluster as u64))
    );
    device_legend(out, &devices);
    figure(
        out,
        "fig-query-memory",
        &svg,
        "Sort time against operator memory, one line per temp device.",
    );
    let both = devices.len() == 2;
    let rows: Vec<Vec<Option<&QueryRun>>> = fractions
        .iter()
        .map(|&f| devices.iter().map(|&d| pick(d, f)).collect())
        .collect();
    let fast = fastest(&rows, devices.len());
    let memory = if both {
        "memory (disk / flash)"
    } else {
        "memory"
    };
    sort_head(out, &[memory, "share of the table"], &devices, both);
    for (i, (f, row)) in fractions.iter().zip(&rows).enumerate() {
        let mut mems: Vec<String> = row
            .iter()
            .flatten()
            .map(|r| format_bytes(r.memory_bytes))
            .collect();
        mems.dedup();
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td>",
            esc(&mems.join(" / ")),
            charts::tick(f * 100.0) + "%"
        );
        for (j, r) in row.iter().enumerate() {
            sort_cells(out, *r, fast[j].contains(&i));
        }
        if both {
            let ratio = match (row[0], row[1]) {
                (Some(a), Some(b)) if b.time_ns > 0 => {
                    fixed(a.time_ns as f64 / b.time_ns as f64, 2)
                }
                _ => "-".into(),
            };
            let _ = write!(out, "<td>{ratio}</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    Ok(())
}

/// The phase segments `runs` use (in [`PHASES`] order) and a bar per run.
fn phase_bars(runs: &[(&QueryRun, String)]) -> (Vec<Segment>, Vec<Bar>) {
    let slot = |name: &str| {
        PHASES[..PHASES.len() - 1]
            .iter()
            .position(|s| s.label == name)
            .unwrap_or(PHASES.len() - 1)
    };
    let mut used = [false; PHASES.len()];
    for (r, _) in runs {
        for p in &r.phases {
            used[slot(&p.name)] = true;
        }
    }
    let shown: Vec<usize> = (0..PHASES.len()).filter(|&i| used[i]).collect();
    let bars = runs
        .iter()
        .map(|(r, label)| {
            let mut values = vec![0.0; shown.len()];
            for p in &r.phases {
                if let Some(k) = shown.iter().position(|&i| i == slot(&p.name)) {
                    values[k] += secs_f(p.stats.time_ns);
                }
            }
            Bar {
                label: label.clone(),
                values,
            }
        })
        .collect();
    let segments = shown
        .iter()
        .map(|&i| Segment {
            label: PHASES[i].label,
            color: PHASES[i].color,
        })
        .collect();
    (segments, bars)
}

fn phase_legend(out: &mut String, segments: &[Segment]) {
    super::html::segment_legend(out, segments);
}

/// A stacked bar per run of its phase times, with its legend.
fn phase_chart(
    out: &mut String,
    id: &str,
    runs: &[(&QueryRun, String)],
    caption: &str,
) -> Result<(), ReportError> {
    let (segments, bars) = phase_bars(runs);
    let svg = charts::stacked_bars(
        &segments,
        &bars,
        "virtual seconds by phase (bar length = operator time)",
        "no time",
        CHART_WIDTH,
    )
    .map_err(ReportError::Chart)?;
    phase_legend(out, &segments);
    figure(out, id, &svg, caption);
    Ok(())
}

fn joins_section(out: &mut String, res: &QueryBenchResult) -> Result<(), ReportError> {
    let e = Experiment::Joins;
    let runs: Vec<(&QueryRun, String)> = [Operator::HashJoin, Operator::SortMergeJoin]
        .into_iter()
        .flat_map(|op| {
            DEVICES
                .into_iter()
                .flat_map(move |d| runs_of(res, e, d, op))
        })
        .map(|r| (r, format!("{}, {}", r.operator.name(), r.device.name())))
        .collect();
    out.push_str("<h2>Figure 8: joins</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">Grace hash join and sort-merge join of tables a and b on their \
         attribute (every row matches once), {} of memory, each device at its own cluster. \
         Temp traffic in MB = 10^6 bytes; fan is the merge fan-in of each side's sort \
         (sort-merge join) or the partitions (hash join); extra passes are intermediate merges \
         or recursive partitionings.</p>",
        esc(&format_bytes(res.config.memory_bytes))
    );
    out.push_str(
        "<table>\n<thead><tr><th>join</th><th>device</th><th>cluster</th><th>time (s)</th>\
         <th class=\"text\">phases (s)</th><th>MB written</th><th>MB read</th><th>writes</th>\
         <th>reads</th><th>fan</th><th>extra passes</th></tr></thead>\n<tbody>\n",
    );
    for (r, _) in &runs {
        let phases: Vec<String> = r
            .phases
            .iter()
            .map(|p| format!("{} {}", p.name, secs(secs_f(p.stats.time_ns))))
            .collect();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            r.operator.name(),
            swatch(device_color(r.device)),
            r.device.name(),
            esc(&format_bytes(r.cluster_bytes as u64)),
            secs(secs_f(r.time_ns)),
            esc(&phases.join(", ")),
            mb(r.io.bytes_written),
            mb(r.io.bytes_read),
            grouped(r.io.writes as f64),
            grouped(r.io.reads as f64),
            r.fan,
            r.extra_passes
        );
    }
    out.push_str("</tbody>\n</table>\n");
    phase_chart(
        out,
        "fig-query-joins",
        &runs,
        "Virtual time of each join on each device, by phase.",
    )?;
    scatters(out, res, e)
}

fn phases_section(out: &mut String, res: &QueryBenchResult) -> Result<(), ReportError> {
    let e = Experiment::Phases;
    let runs: Vec<(&QueryRun, String)> = DEVICES
        .into_iter()
        .flat_map(|d| runs_of(res, e, d, Operator::Sort))
        .map(|r| (r, format!("sort, {}", r.device.name())))
        .collect();
    out.push_str("<h2>Figure 6: sort phases</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">The sort of table a with {} of memory, each device at its own \
         cluster: run generation (sorting memory-sized runs and writing them) against the merge \
         (reading them back, with any intermediate merges).</p>",
        esc(&format_bytes(res.config.memory_bytes))
    );
    out.push_str(
        "<table>\n<thead><tr><th>device</th><th>cluster</th><th>initial runs</th>\
         <th>run generation (s)</th><th>merge (s)</th><th>total (s)</th>\
         <th>merge / run generation</th><th>MB written</th><th>MB read</th></tr></thead>\n\
         <tbody>\n",
    );
    for (r, _) in &runs {
        let (g, m) = (phase_s(r, "run-generation"), phase_s(r, "merge"));
        let initial = r
            .stats
            .get("initial_run_bytes")
            .and_then(|v| v.as_array())
            .map_or("n/a".to_string(), |a| a.len().to_string());
        let _ = writeln!(
            out,
            "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>",
            swatch(device_color(r.device)),
            r.device.name(),
            esc(&format_bytes(r.cluster_bytes as u64)),
            initial,
            secs(g),
            secs(m),
            secs(secs_f(r.time_ns)),
            if g > 0.0 {
                fixed(m / g, 2)
            } else {
                "n/a".into()
            },
            mb(r.io.bytes_written),
            mb(r.io.bytes_read)
        );
    }
    out.push_str("</tbody>\n</table>\n");
    phase_chart(
        out,
        "fig-query-phases",
        &runs,
        "Virtual time of the sort's run generation and merge on each device.",
    )?;
    scatters(out, res, e)
}

/// The time x address scatter of each run of `e` with a trace, two to a row.
fn scatters(out: &mut String, res: &QueryBenchResult, e: Experiment) -> Result<(), ReportError> {
    let traced: Vec<(usize, &QueryRun)> = res
        .runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.experiment == e && r.trace.is_some())
        .collect();
    if traced.is_empty() {
        return Ok(());
    }
    out.push_str(
        "<p class=\"note\">Temp I/O over time: each recorded read and write at its submission \
         time (virtual seconds since the operator started) and its address on the device \
         (MB = 10^6 bytes). Long runs are thinned evenly to the recorded points.</p>\n",
    );
    out.push_str("<div class=\"legend\">");
    let _ = write!(
        out,
        "<span class=\"item\">{}writes</span><span class=\"item\">{}reads</span>",
        swatch(WRITE_COLOR),
        swatch(READ_COLOR)
    );
    out.push_str("</div>\n<div class=\"pair\">\n");
    for (i, r) in traced {
        let Some(t) = &r.trace else { continue };
        let n = t.t_ns.len().min(t.offset.len()).min(t.write.len());
        let svg = charts::io_scatter(t, 0, (WRITE_COLOR, READ_COLOR), (CHART_WIDTH / 2, 420))
            .map_err(ReportError::Chart)?;
        let phases: Vec<String> = r
            .phases
            .iter()
            .scan(0u64, |start, p| {
                let from = *start;
                *start += p.stats.time_ns;
                Some(format!(
                    "{} {}-{} s",
                    p.name,
                    secs(secs_f(from)),
                    secs(secs_f(*start))
                ))
            })
            .collect();
        let thinned = if t.stride > 1 {
            format!(" (one in {})", t.stride)
        } else {
            String::new()
        };
        let caption = format!(
            "{}: {} on {}, cluster {}, memory {}. {} of {} commands shown{thinned}; {}.",
            e.name(),
            r.operator.name(),
            r.device.name(),
            format_bytes(r.cluster_bytes as u64),
            format_bytes(r.memory_bytes),
            grouped(n as f64),
            grouped(t.commands as f64),
            phases.join(", ")
        );
        figure(out, &format!("fig-query-io-{i}"), &svg, &caption);
    }
    out.push_str("</div>\n");
    Ok(())
}

/// The query page.
pub fn page(title: &str, inputs: &[Input], res: &QueryBenchResult) -> Result<String, ReportError> {
    let mut out = String::with_capacity(256 * 1024);
    page_start(&mut out, title);
    sources(&mut out, title, inputs, "operator run");
    out.push_str("<h2>Setup</h2>\n");
    setup(&mut out, res);
    let _ = writeln!(
        out,
        "<p class=\"note\">{} operator runs, each on a fresh device and clock; read-ahead, \
         write-behind and queue depth let temp I/O overlap the operator's CPU time (charged per \
         row, in virtual time).</p>",
        res.runs.len()
    );
    if has(res, Experiment::Cluster) {
        cluster_section(&mut out, res)?;
    }
    if has(res, Experiment::Memory) {
        memory_section(&mut out, res)?;
    }
    if has(res, Experiment::Joins) {
        joins_section(&mut out, res)?;
    }
    if has(res, Experiment::Phases) {
        phases_section(&mut out, res)?;
    }
    out.push_str("</body>\n</html>\n");
    Ok(out)
}

#[cfg(test)]
mod tests;
