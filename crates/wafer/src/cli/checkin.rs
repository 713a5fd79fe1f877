//! `wafer bench checkin`: paper 004's sensitivity experiments on the journal write path, each a
//! sweep of YCSB runs in virtual time (the ladder itself is `wafer bench ycsb --configs
//! baseline,isc-a,isc-b,isc-c,check-in`):
//!
//! * `clients` (Figure 10): checkpoint time of every rung as the clients grow;
//! * `interval` (Figure 12): throughput and latency of the baseline and Check-In as the time
//!   between checkpoints grows;
//! * `units` (Figure 13): throughput of ISC-C and Check-In and Check-In's space overhead as the
//!   SSD's mapping unit grows from 512 B to 4 KiB.
//!
//! Every point runs the same workload and seed; points run on as many threads as there are cores
//! (each run has its own devices and virtual clock, so the numbers do not depend on it).

use super::bench::YcsbArgs;
use super::CliError;
use std::fmt::Write as _;
use wafer_workloads::bench::vtime::{self, Silent};
use wafer_workloads::bench::{BenchConfig, BenchSummary, Preset};

/// The experiments.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Experiment {
    /// Figure 10: checkpoint time by the number of clients, every rung.
    Clients,
    /// Figure 12: baseline and Check-In by the time between checkpoints.
    Interval,
    /// Figure 13: ISC-C and Check-In by the SSD's mapping unit.
    Units,
    /// All three.
    All,
}

/// Options of `wafer bench checkin`.
#[derive(clap::Args, Debug, Clone)]
pub struct CheckinArgs {
    /// Which experiment.
    #[arg(long, value_enum, default_value = "all")]
    pub experiment: Experiment,
    /// Clients of the `clients` sweep (paper: 4 to 128 threads).
    #[arg(long, value_delimiter = ',', default_value = "4,8,16,32,64,128")]
    pub client_counts: Vec<u32>,
    /// Checkpoint intervals of the `interval` sweep, virtual milliseconds (paper: 0 to 240 s
    /// on a run of 5 million queries; scaled to these short runs: past a few tens of ms the
    /// journal fills first, and its own checkpoints set the pace).
    #[arg(long, value_delimiter = ',', default_value = "2,5,10,20,40")]
    pub intervals_ms: Vec<u64>,
    /// Mapping units of the `units` sweep, bytes.
    #[arg(long, value_delimiter = ',', default_value = "512,1024,2048,4096")]
    pub units: Vec<u32>,
    /// The workload, devices and stop rule of every run (the experiments choose the
    /// configurations, and the swept setting, themselves); `--out FILE` gets every point's
    /// summary (JSON).
    #[command(flatten)]
    pub ycsb: YcsbArgs,
}

/// One run of a sweep.
#[derive(serde::Serialize)]
struct Point {
    experiment: &'static str,
    x: u64,
    summary: BenchSummary,
}

/// Runs `jobs` (name, config) on up to as many threads as there are cores, in order.
fn run_all(jobs: Vec<(String, BenchConfig)>) -> Result<Vec<BenchSummary>, CliError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len())
        .max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done: Vec<std::sync::Mutex<Option<Result<BenchSummary, String>>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((name, cfg)) = jobs.get(i) else {
                    break;
                };
                let r = vtime::run(name, cfg, &mut Silent).map_err(|e| format!("{name}: {e}"));
                eprintln!("  done: {name}");
                *done[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
            });
        }
    });
    done.into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .unwrap_or_else(|| Err("a run did not finish".into()))
                .map_err(CliError::Run)
        })
        .collect()
}

/// The base configuration of `preset` from the shared flags.
fn base(args: &CheckinArgs, preset: Preset) -> Result<BenchConfig, CliError> {
    let ycsb = YcsbArgs {
        configs: vec![preset],
        ..args.ycsb.clone()
    };
    ycsb.configs()?
        .into_iter()
        .next()
        .ok_or_else(|| CliError::Usage("no configuration".into()))
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

/// Runs `wafer bench checkin`.
pub fn main(args: &CheckinArgs) -> Result<(), CliError> {
    let out_path = args.ycsb.output.out.as_ref();
    if let Some(p) = out_path {
        super::check_writable("--out", p)?;
    }
    let want = |e: Experiment| args.experiment == e || args.experiment == Experiment::All;
    let mut points: Vec<Point> = Vec::new();
    let mut out = String::new();
    if want(Experiment::Clients) {
        if args.client_counts.is_empty() || args.client_counts.contains(&0) {
            return Err(CliError::Usage(
                "--client-counts: counts must be positive".into(),
            ));
        }
        let mut jobs = Vec::new();
        for &c in &args.client_counts {
            for p in Preset::LADDER {
                let mut cfg = base(args, p)?;
                cfg.run.clients = c;
                jobs.push((format!("{} {c} clients", p.name()), cfg));
            }
        }
        eprintln!("clients: {} runs", jobs.len());
        let runs = run_all(jobs)?;
        let _ = writeln!(
            out,
            "\n## Checkpoint time by clients (paper 004 Figure 10): mean checkpoint, virtual ms \
             (normalized to the baseline)\n\n| clients | {} |\n|---|{}",
            Preset::LADDER.map(|p| p.name()).join(" | "),
            "---|".repeat(Preset::LADDER.len())
        );
        for (i, &c) in args.client_counts.iter().enumerate() {
            let row = &runs[i * Preset::LADDER.len()..(i + 1) * Preset::LADDER.len()];
            let b = row[0].checkpoints.mean_ns.max(1.0);
            let cells: Vec<String> = row
                .iter()
                .map(|s| {
                    format!(
                        "{:.2} ({:.2})",
                        ms(s.checkpoints.mean_ns),
                        s.checkpoints.mean_ns / b
                    )
                })
                .collect();
            let _ = writeln!(out, "| {c} | {} |", cells.join(" | "));
            for s in row {
                points.push(Point {
                    experiment: "clients",
                    x: c as u64,
                    summary: s.clone(),
                });
            }
        }
    }
    if want(Experiment::Interval) {
        if args.intervals_ms.is_empty() || args.intervals_ms.contains(&0) {
            return Err(CliError::Usage(
                "--intervals-ms: intervals must be positive".into(),
            ));
        }
        let pair = [Preset::Baseline, Preset::CheckIn];
        let mut jobs = Vec::new();
        for &ms_ in &args.intervals_ms {
            for p in pair {
                let mut cfg = base(args, p)?;
                cfg.engine.checkpoint_interval_ms = ms_;
                jobs.push((format!("{} {ms_} ms", p.name()), cfg));
            }
        }
        eprintln!("interval: {} runs", jobs.len());
        let runs = run_all(jobs)?;
        let _ = writeln!(
            out,
            "\n## By checkpoint interval (paper 004 Figure 12): steady-state OPS and mean latency \
             (virtual ms)\n\n| interval (ms) | baseline OPS | check-in OPS | baseline mean \
             latency | check-in mean latency | checkpoints (baseline, check-in) |\n|---|---|---|---|---|---|"
        );
        for (i, &x) in args.intervals_ms.iter().enumerate() {
            let (b, c) = (&runs[2 * i], &runs[2 * i + 1]);
            let _ = writeln!(
                out,
                "| {x} | {:.0} | {:.0} | {:.3} | {:.3} | {}, {} |",
                b.steady.ops_per_s,
                c.steady.ops_per_s,
                ms(b.latency.mean_ns),
                ms(c.latency.mean_ns),
                b.checkpoints.checkpoints,
                c.checkpoints.checkpoints
            );
            for s in [b, c] {
                points.push(Point {
                    experiment: "interval",
                    x,
                    summary: s.clone(),
                });
            }
        }
    }
    if want(Experiment::Units) {
        let bad = |u: u32| !u.is_power_of_two() || !(512..=4096).contains(&u);
        if args.units.is_empty() || args.units.iter().any(|&u| bad(u)) {
            return Err(CliError::Usage(
                "--units: powers of two from 512 to 4096".into(),
            ));
        }
        let pair = [Preset::IscC, Preset::CheckIn];
        let mut jobs = Vec::new();
        for &u in &args.units {
            for p in pair {
                let mut cfg = base(args, p)?;
                cfg.data_ssd.mapping_unit_bytes = u;
                cfg.check_in_unit_bytes = u;
                jobs.push((format!("{} {u} B unit", p.name()), cfg));
            }
        }
        eprintln!("units: {} runs", jobs.len());
        let runs = run_all(jobs)?;
        let _ = writeln!(
            out,
            "\n## By mapping unit (paper 004 Figure 13): steady-state OPS, and the journal's \
             bytes per image (descriptors and padding included; ISC-C journals raw pages behind a \
             descriptor sector, Check-In compressed images sized to the unit)\n\n| unit (B) | \
             isc-c OPS | check-in OPS | check-in / isc-c | isc-c journal B/image | check-in \
             journal B/image | check-in padding share | check-in merged images |\n\
             |---|---|---|---|---|---|---|---|"
        );
        let per_image = |s: &BenchSummary| {
            let images = s.journal.as_ref().map_or(0, |j| j.images);
            (s.bytes.db_issued_bytes - s.bytes.metadata_bytes.min(s.bytes.db_issued_bytes)) as f64
                / images.max(1) as f64
        };
        for (i, &u) in args.units.iter().enumerate() {
            let (c, k) = (&runs[2 * i], &runs[2 * i + 1]);
            let b = &k.bytes;
            let share = b.padding_bytes as f64 / b.db_issued_bytes.max(1) as f64;
            let _ = writeln!(
                out,
                "| {u} | {:.0} | {:.0} | {:.2} | {:.0} | {:.0} | {:.1}% | {} |",
                c.steady.ops_per_s,
                k.steady.ops_per_s,
                k.steady.ops_per_s / c.steady.ops_per_s.max(1e-9),
                per_image(c)
                    + c.bytes.metadata_bytes as f64
                        / c.journal.as_ref().map_or(1, |j| j.images.max(1)) as f64,
                per_image(k),
                100.0 * share,
                k.journal.as_ref().map_or(0, |j| j.images_merged)
            );
            for s in [c, k] {
                points.push(Point {
                    experiment: "units",
                    x: u as u64,
                    summary: s.clone(),
                });
            }
        }
    }
    super::human::print_stdout(&out);
    if let Some(p) = out_path {
        let text = serde_json::to_string_pretty(&points)
            .map_err(|e| CliError::Run(format!("encoding: {e}")))?;
        std::fs::write(p, text)
            .map_err(|e| CliError::Run(format!("writing {}: {e}", p.display())))?;
    }
    Ok(())
}
