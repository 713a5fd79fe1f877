//! Human-readable output of `wafer sim`: a device header, interval rows as they complete (with a
//! progress bar on stderr when it is a terminal) and a result block.

use super::sim::Plan;
use super::size::format_bytes;
use flashsim::{GcUnit, LatencySummary, Mode};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write;
use std::time::Duration;

/// Prints a line on stdout. A closed stdout (e.g. `| head`) ends the process quietly with the
/// exit status of a broken pipe instead of panicking.
pub fn print_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{text}").and_then(|_| out.flush()).is_err() {
        std::process::exit(141);
    }
}

fn plural(n: u32, what: &str) -> String {
    if n == 1 {
        format!("{n} {what}")
    } else {
        format!("{n} {what}s")
    }
}
use wafer_workloads::{IntervalRow, Phase, RunObserver, RunSummary};

/// Prints the header and rows of a run and drives the progress bar.
pub struct HumanOutput {
    plan: Plan,
    bar: ProgressBar,
    rows_started: bool,
}

impl HumanOutput {
    /// Output for `plan`; the progress bar is drawn on stderr only when `show_bar`.
    pub fn new(plan: &Plan, show_bar: bool) -> HumanOutput {
        let bar = if show_bar {
            ProgressBar::with_draw_target(Some(1), ProgressDrawTarget::stderr())
        } else {
            ProgressBar::hidden()
        };
        bar.set_style(
            ProgressStyle::with_template(
                "{msg:>13} [{bar:40.cyan/blue}] {binary_bytes}/{binary_total_bytes} host writes, ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        HumanOutput {
            plan: plan.clone(),
            bar,
            rows_started: false,
        }
    }

    fn say(&self, line: String) {
        self.bar.suspend(|| print_stdout(&line));
    }

    /// Prints the device and workload description.
    pub fn header(&self) {
        let cfg = &self.plan.ssd;
        let g = &cfg.geometry;
        let cap = cfg.capacity();
        let w = &self.plan.workload;
        let p = &self.plan.params;
        let mode = match &cfg.mode {
            Mode::Conventional => "conventional".to_string(),
            Mode::Zns(z) => format!(
                "ZNS: {} zones of {} ({} EU), {} open / {} active max, host appends to {} round-robin",
                cap.erase_units / z.zone_eus,
                format_bytes(z.zone_eus as u64 * cap.eu_bytes),
                z.zone_eus,
                z.max_open_zones,
                z.max_active_zones,
                p.open_zones.unwrap_or(z.max_open_zones)
            ),
            Mode::Fdp(f) => format!("FDP: {} reclaim unit handles", f.handles),
        };
        let unit = match cfg.gc.unit {
            GcUnit::Superblock => "superblock",
            GcUnit::Block => "block",
        };
        let mut out = vec![
            "wafer sim: flashsim SSD".to_string(),
            format!(
                "  geometry    {} x {} x {} x {} x {} of {} ({} dies)",
                plural(g.channels, "channel"),
                plural(g.dies_per_channel, "die"),
                plural(g.planes_per_die, "plane"),
                plural(g.blocks_per_plane, "block"),
                plural(g.pages_per_block, "page"),
                format_bytes(g.page_size_bytes as u64),
                g.dies()
            ),
            format!(
                "  capacity    logical {}, physical {}, OP {:.1}%, spare factor {:.1}%",
                format_bytes(cap.logical_bytes),
                format_bytes(cap.physical_bytes),
                cap.op * 100.0,
                cap.spare_factor * 100.0
            ),
            format!(
                "  erase unit  {} x {} ({unit}), mapping unit {}",
                cap.erase_units,
                format_bytes(cap.eu_bytes),
                format_bytes(cfg.mapping_unit_bytes as u64)
            ),
            format!(
                "  FTL         {mode}; GC {}{}, free EUs min {} / background {}",
                cfg.gc.policy,
                if cfg.gc.separate_gc_frontier {
                    " (separate GC frontier)"
                } else {
                    ""
                },
                cfg.gc.free_eus_min,
                cfg.gc.free_eus_background
            ),
            format!(
                "  workload    {} x {} requests, {:.0}% reads, QD {}, seed {}, timing {}",
                w.pattern,
                format_bytes(w.write_size_bytes),
                w.read_share * 100.0,
                p.queue_depth,
                w.seed,
                if cfg.timing.enabled { "on" } else { "off" }
            ),
        ];
        if let Some(d) = self.plan.drive {
            out.insert(
                1,
                format!(
                    "  drive       {d}: {} (size from --capacity)",
                    d.description()
                ),
            );
        }
        let run = format_bytes((p.capacity_multiple * cap.logical_bytes as f64) as u64);
        if p.precondition {
            out.push(format!(
                "  run         sequential fill to 100% of logical ({:.1}% of physical), then {} x logical = {run} of host writes",
                100.0 * cap.logical_bytes as f64 / cap.physical_bytes as f64,
                p.capacity_multiple
            ));
        } else {
            out.push(format!(
                "  run         from empty (no preconditioning), {} x logical = {run} of host writes",
                p.capacity_multiple
            ));
        }
        self.say(out.join("\n"));
    }

    /// Removes the progress bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl RunObserver for HumanOutput {
    fn phase(&mut self, phase: Phase) {
        self.bar.set_message(match phase {
            Phase::Precondition => "precondition",
            Phase::Run => "run",
        });
    }

    fn progress(&mut self, done_bytes: u64, total_bytes: u64) {
        self.bar.set_length(total_bytes);
        self.bar.set_position(done_bytes);
    }

    fn row(&mut self, r: &IntervalRow) {
        // Small devices count host writes in MiB, others in GiB.
        let in_mib = self.plan.ssd.capacity().logical_bytes < 4 << 30;
        if !self.rows_started {
            self.rows_started = true;
            let mut h = format!(
                "\n{:>9} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8}",
                if in_mib { "host MiB" } else { "host GiB" },
                "x cap",
                "WAF int",
                "WAF cum",
                "GC runs",
                "erases",
                "free EUs"
            );
            if r.virtual_time_s.is_some() {
                h += &format!(" {:>9} {:>9} {:>9}", "vtime s", "wr MB/s", "kIOPS");
            }
            self.say(h);
        }
        let mut line = format!(
            "{:>9.2} {:>6.2} {:>8.3} {:>8.3} {:>8} {:>8} {:>8}",
            if in_mib {
                r.host_write_bytes as f64 / (1u64 << 20) as f64
            } else {
                r.host_written_gib
            },
            r.capacity_multiple,
            r.waf_interval,
            r.waf_cumulative,
            r.gc_runs,
            r.eu_erases,
            r.free_eus
        );
        if let (Some(t), Some(w), Some(o)) = (r.virtual_time_s, r.write_mb_s, r.ops_per_s) {
            line += &format!(" {t:>9.3} {w:>9.1} {:>9.1}", o / 1e3);
        }
        self.say(line);
    }
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

fn latency_line(name: &str, l: &LatencySummary) -> String {
    if l.count == 0 {
        return format!("    {name:<6} (none)");
    }
    format!(
        "    {name:<6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  ({} commands)",
        format!("{:.1}", l.mean_ns / 1e3),
        us(l.p50_ns),
        us(l.p99_ns),
        us(l.p999_ns),
        us(l.p9999_ns),
        us(l.max_ns),
        l.count
    )
}

/// Prints the result block of a finished run, with the wall-clock time it took.
pub fn result(s: &RunSummary, wall: Duration) {
    let c = &s.counters;
    let r = &s.run;
    let unit = s.ssd.mapping_unit_bytes as u64;
    let mut out = vec![
        String::new(),
        "result".to_string(),
        format!(
            "  WAF         cumulative {:.3}, steady (last interval) {:.3}",
            s.waf_cumulative, s.waf_steady
        ),
        format!(
            "  host        {} written, {} read in {} + {} commands; media {} written (run only)",
            format_bytes(r.host_write_bytes),
            format_bytes(r.host_read_bytes),
            r.write_ops,
            r.read_ops,
            format_bytes(c.media_write_bytes - s.counters_run_start.media_write_bytes)
        ),
        format!(
            "  GC          {} runs ({} in background), {} EUs / {} blocks erased, {} units moved ({}){}",
            c.gc_runs,
            c.gc_runs_background,
            c.eu_erases,
            c.block_erases,
            c.gc_units_moved,
            format_bytes(c.gc_units_moved * unit),
            if c.zone_resets > 0 {
                format!(", {} zone resets", c.zone_resets)
            } else {
                String::new()
            }
        ),
        format!(
            "  device      {:.1}% of logical space mapped, {} free EUs at the end",
            s.fill * 100.0,
            s.free_eus
        ),
    ];
    if let (Some(t), Some(w), Some(rd), Some(o)) =
        (r.virtual_elapsed_ns, r.write_mb_s, r.read_mb_s, r.ops_per_s)
    {
        out.push(format!(
            "  throughput  write {w:.1} MB/s, read {rd:.1} MB/s, {:.1} kIOPS over {:.3} s of virtual time",
            o / 1e3,
            t as f64 / 1e9
        ));
        out.push(format!(
            "  latency us  {:<6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "", "mean", "p50", "p99", "p99.9", "p99.99", "max"
        ));
        out.push(latency_line("read", &s.read_latency));
        out.push(latency_line("write", &s.write_latency));
    } else {
        out.push("  timing      off (no latency or throughput)".to_string());
    }
    let wear = &s.wear;
    out.push(format!(
        "  wear        erase count min/mean/max {}/{:.2}/{} of {} P/E ({:.3}% of life used)",
        wear.erase_count_min,
        wear.erase_count_mean,
        wear.erase_count_max,
        wear.pe_limit,
        wear.life_used * 100.0
    ));
    let lifetime = match wear.lifetime_days_projected {
        Some(d) if d < 365.25 => format!("projected lifetime {d:.1} days at this rate"),
        Some(d) => format!("projected lifetime {:.1} years at this rate", d / 365.25),
        None => "projected lifetime n/a (needs timing)".to_string(),
    };
    out.push(format!(
        "              {lifetime}; {:.1} DWPD observed; rated {:.2} DWPD for 5 years at the observed WAF",
        wear.dwpd_observed, wear.dwpd_rated_5y
    ));
    out.push(format!(
        "  wall time   {:.2} s ({:.2} M simulated commands/s)",
        wall.as_secs_f64(),
        (r.write_ops + r.read_ops + s.precondition.as_ref().map_or(0, |p| p.write_ops)) as f64
            / wall.as_secs_f64().max(1e-9)
            / 1e6
    ));
    print_stdout(&out.join("\n"));
}
