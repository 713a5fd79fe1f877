//! The device page: `wafer sim` results (one file per simulation, the per-configuration files of
//! `wafer bench device` included) and `wafer bench device` comparison tables, each kind in its
//! own section.

use super::figures::{self, SimFigures};
use super::html::{
    esc, figure, fixed, grouped, latency, page_start, percent, sources, swatch, traffic,
};
use super::{charts, sim_runs, Content, Input, ReportError, SimView};
use crate::cli::device::DeviceRow;
use crate::cli::size::format_bytes;
use flashsim::{Mode, SsdConfig};
use std::fmt::Write as _;
use wafer_workloads::simrun::RunSummary;

/// The title when none is given: the simulations' device and workload when there is one, else a
/// general one.
pub fn default_title(inputs: &[Input]) -> String {
    let sims: Vec<&RunSummary> = inputs
        .iter()
        .filter_map(|i| match &i.content {
            Content::Sim(s) => Some(s.as_ref()),
            _ => None,
        })
        .collect();
    match sims.as_slice() {
        [s] => format!(
            "wafer sim: {} {} SSD, {}",
            format_bytes(s.capacity.logical_bytes),
            s.mode,
            workload(s)
        ),
        [] => "wafer bench device: device configurations compared".to_string(),
        _ => "wafer device simulations compared".to_string(),
    }
}

/// The workload of a simulation in a few words.
fn workload(s: &RunSummary) -> String {
    if let Some(t) = &s.trace {
        return format!("trace {} ({:.2} passes)", t.path, t.passes);
    }
    let w = &s.workload;
    let mut text = format!(
        "{} {} requests",
        w.pattern,
        format_bytes(w.write_size_bytes)
    );
    if w.read_share > 0.0 {
        let _ = write!(text, ", {} reads", percent(w.read_share));
    }
    text
}

/// The erase units GC keeps in reserve (none on a ZNS device: the host collects).
fn gc_reserve(ssd: &SsdConfig) -> String {
    if matches!(ssd.mode, Mode::Zns(_)) {
        return "none (host GC)".to_string();
    }
    let eus = ssd.reserve_eus_per_lane() as u64 * ssd.lanes() as u64;
    let bytes = eus * ssd.eu_bytes();
    let physical = ssd.geometry.physical_bytes().max(1);
    format!(
        "{eus} EU{} ({}, {} of flash)",
        if eus == 1 { "" } else { "s" },
        format_bytes(bytes),
        percent(bytes as f64 / physical as f64)
    )
}

fn mode(s: &RunSummary) -> String {
    match &s.ssd.mode {
        Mode::Conventional => "conventional".to_string(),
        Mode::Zns(z) => format!(
            "ZNS, {} open zones of {} EU",
            s.params.open_zones.unwrap_or(z.max_open_zones),
            z.zone_eus
        ),
        Mode::Fdp(f) => format!("FDP, {} handles", f.handles),
    }
}

/// The simulations' devices. Each is named after its file (the page's first line lists the
/// files with their directories).
fn devices_table(out: &mut String, views: &[SimView<'_>]) {
    out.push_str(
        "<table>\n<thead><tr><th>simulation</th><th class=\"text\">mode</th>\
         <th>logical / flash</th><th>spare factor (OP)</th><th class=\"text\">GC reserve</th>\
         <th class=\"text\">GC, mapping unit</th><th class=\"text\">workload</th>\
         </tr></thead>\n<tbody>\n",
    );
    for v in views {
        let s = v.run;
        let unit = match s.ssd.gc.unit {
            flashsim::GcUnit::Superblock => "superblock",
            flashsim::GcUnit::Block => "block",
        };
        let _ = writeln!(
            out,
            "<tr><td>{}{}</td><td class=\"text\">{}</td><td>{} / {}</td>\
             <td>{} ({})</td><td class=\"text\">{}</td><td class=\"text\">{}, {unit} \
             units; {}</td><td class=\"text\">{}, QD {}, seed {}, timing {}</td></tr>",
            swatch(v.color),
            esc(&v.label),
            esc(&mode(s)),
            esc(&format_bytes(s.capacity.logical_bytes)),
            esc(&format_bytes(s.capacity.physical_bytes)),
            fixed(s.capacity.spare_factor, 3),
            percent(s.capacity.op),
            esc(&gc_reserve(&s.ssd)),
            esc(&s.ssd.gc.policy.to_string()),
            esc(&format_bytes(s.ssd.mapping_unit_bytes as u64)),
            esc(&workload(s)),
            s.params.queue_depth,
            s.workload.seed,
            if s.ssd.timing.enabled { "on" } else { "off" },
        );
    }
    out.push_str("</tbody>\n</table>\n");
}

fn results_table(out: &mut String, views: &[SimView<'_>]) {
    out.push_str(
        "<table>\n<thead><tr><th>simulation</th><th>host writes</th><th>flash writes</th>\
         <th>WAF (whole run)</th><th>steady WAF</th><th>GC runs</th><th>erases</th>\
         <th>DWPD 5 y</th><th>life used</th></tr></thead>\n<tbody>\n",
    );
    for v in views {
        let s = v.run;
        let row = DeviceRow::new(&v.label, "", s);
        let media = s
            .counters
            .media_write_bytes
            .saturating_sub(s.counters_run_start.media_write_bytes);
        let _ = writeln!(
            out,
            "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td></tr>",
            swatch(v.color),
            esc(&v.label),
            traffic(s.run.host_write_bytes),
            traffic(media),
            fixed(s.waf_cumulative, 3),
            fixed(s.waf_steady, 3),
            grouped(row.gc_runs as f64),
            grouped(row.eu_erases as f64),
            fixed(s.wear.dwpd_rated_5y, 2),
            fixed(s.wear.life_used * 100.0, 4) + "%",
        );
    }
    out.push_str("</tbody>\n</table>\n");
}

/// Virtual time, rates and latencies of the simulations that ran with the timing model.
fn timing_table(out: &mut String, views: &[SimView<'_>]) {
    // Read latencies only when some simulation read.
    let reads = views.iter().any(|v| v.run.read_latency.count > 0);
    out.push_str(
        "<table>\n<thead><tr><th>simulation</th><th>virtual time</th>\
         <th>host writes MB/s</th><th>kIOPS</th><th>write p50</th><th>write p99</th>\
         <th>write p99.9</th><th>write p99.99</th>",
    );
    if reads {
        out.push_str("<th>read p50</th><th>read p99</th>");
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for v in views {
        let s = v.run;
        let Some(ns) = s.run.virtual_elapsed_ns else {
            let _ = writeln!(
                out,
                "<tr><td>{}{}</td><td class=\"text\" colspan=\"{}\">no timing model (run \
                 with --no-timing)</td></tr>",
                swatch(v.color),
                esc(&v.label),
                if reads { 9 } else { 7 }
            );
            continue;
        };
        let opt = |x: Option<f64>, d: usize| x.map_or("n/a".to_string(), |x| fixed(x, d));
        let _ = writeln!(
            out,
            "<tr><td>{}{}</td><td>{} s</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td>",
            swatch(v.color),
            esc(&v.label),
            fixed(ns as f64 / 1e9, 3),
            opt(s.run.write_mb_s, 1),
            opt(s.run.ops_per_s.map(|o| o / 1e3), 1),
            latency(s.write_latency.p50_ns),
            latency(s.write_latency.p99_ns),
            latency(s.write_latency.p999_ns),
            latency(s.write_latency.p9999_ns),
        );
        if reads {
            let _ = write!(
                out,
                "<td>{}</td><td>{}</td>",
                latency(s.read_latency.p50_ns),
                latency(s.read_latency.p99_ns)
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

fn comparison_table(out: &mut String, rows: &[DeviceRow]) {
    out.push_str(
        "<table>\n<thead><tr><th>configuration</th><th class=\"text\">what it is</th>\
         <th>SSD WAF (steady)</th><th>SSD WAF (whole run)</th><th>GC runs</th><th>erases</th>\
         <th>write kIOPS</th><th>write p99</th><th>write p99.99</th><th>DWPD 5 y</th>\
         </tr></thead>\n<tbody>\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.name),
            esc(&r.what),
            fixed(r.waf_steady, 3),
            fixed(r.waf_cumulative, 3),
            grouped(r.gc_runs as f64),
            grouped(r.eu_erases as f64),
            r.write_kiops_virtual
                .map_or("n/a".to_string(), |k| fixed(k, 1)),
            latency((r.write_latency_us_p99 * 1e3) as u64),
            latency((r.write_latency_us_p9999 * 1e3) as u64),
            fixed(r.dwpd_rated_5y, 2),
        );
    }
    out.push_str("</tbody>\n</table>\n");
}

fn legend(out: &mut String, views: &[SimView<'_>]) {
    out.push_str("<div class=\"legend\">");
    for v in views {
        let _ = write!(
            out,
            "<span class=\"item\">{}{}</span>",
            swatch(v.color),
            esc(&v.label)
        );
    }
    out.push_str("</div>\n");
}

/// The device page.
pub fn page(title: &str, inputs: &[Input]) -> Result<String, ReportError> {
    let views = sim_runs(inputs);
    let figs: Option<SimFigures> = if views.is_empty() {
        None
    } else {
        Some(figures::draw_sim(&views).map_err(ReportError::Chart)?)
    };
    let mut out = String::with_capacity(64 * 1024);
    page_start(&mut out, title);
    sources(&mut out, title, inputs, "result");
    if views.len() > charts::RUN_COLORS.len() {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} simulations: colours repeat after {}.</p>",
            views.len(),
            charts::RUN_COLORS.len()
        );
    }
    for i in inputs {
        let Content::Device(rows) = &i.content else {
            continue;
        };
        out.push_str("<h2>Device comparison (<code>wafer bench device</code>)</h2>\n");
        if !i.source.is_empty() {
            let _ = writeln!(
                out,
                "<p class=\"note\">From <code>{}</code>. The same write workload on each \
                 configuration, side by side with the same seed; SSD WAF (steady) is the last \
                 full interval's; throughput and latency are virtual (flashsim timing \
                 model).</p>",
                esc(&i.source)
            );
        }
        comparison_table(&mut out, rows);
    }
    if let Some(f) = &figs {
        out.push_str("<h2>Simulated devices</h2>\n");
        out.push_str(
            "<p class=\"note\">Spare factor = (flash - logical) / flash as built: flash comes \
             in whole erase units (EU), so it can be above the one asked. The GC reserve is the \
             erase units GC keeps free beyond the logical data (the foreground threshold, one \
             open unit per write frontier, one of slack).</p>\n",
        );
        devices_table(&mut out, &views);
        out.push_str("<h2>Results (measured run)</h2>\n");
        out.push_str(
            "<p class=\"note\">After the preconditioning fill; writes in decimal units \
             (MB = 10^6 bytes). WAF = flash (media) / host bytes written; steady WAF = the last full interval's. DWPD 5 y = drive writes per \
             day the flash sustains for 5 years at the observed WAF; life used = mean erase \
             count / P/E limit at the end.</p>\n",
        );
        results_table(&mut out, &views);
        out.push_str(
            "<p class=\"note\">Timing: virtual time of the measured run, host throughput \
             (MB = 10^6 bytes per virtual second), commands per second, and command latencies \
             from submission to completion (n/a: no such command).</p>\n",
        );
        timing_table(&mut out, &views);
        out.push_str("<h2>Write amplification over time</h2>\n");
        legend(&mut out, &views);
        figure(
            &mut out,
            "fig-sim-waf",
            &f.waf_svg,
            "SSD WAF of each interval (the interval rows of the run) and since the measured run \
             started.",
        );
        if let Some(svg) = &f.rate_svg {
            out.push_str("<h2>Write throughput over time</h2>\n");
            legend(&mut out, &views);
            figure(
                &mut out,
                "fig-sim-rate",
                svg,
                "Host write throughput of each interval, MB (10^6 bytes) per second of virtual \
                 time.",
            );
        }
    }
    out.push_str("</body>\n</html>\n");
    Ok(out)
}
