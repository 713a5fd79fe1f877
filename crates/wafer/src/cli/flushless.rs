//! `wafer bench flushless`: the experiments of paper 001 (Jeong et al., flushing-less eviction
//! with on-the-fly redo) on TPC-C in virtual time: the ARIES mode ("original": dirty victims are
//! written) against the flushless mode ("proposed") at several memory sizes (Figures 8 and 9),
//! the log table's share of memory (Figure 6), group commit (Figure 7), the abort rate
//! (Figure 10), restart after a crash, and the combination with paper 002's out-of-place writes.
//! Every run of an experiment uses the same TPC-C transactions (same seed) and stops after the
//! same number of them, so virtual times compare directly.

use super::CliError;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use wafer_workloads::bench::vtime::Silent;
use wafer_workloads::bench::Preset;
use wafer_workloads::tpcc::driver::{estimate_load_bytes, run_vtime};
use wafer_workloads::tpcc::{SizeMode, TpccBenchConfig, TpccConfig, TpccSummary};

/// The experiments.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Experiment {
    /// Original vs proposed at each memory size: time, page writes and reads (Figures 8, 9).
    Compare,
    /// The log table's share of memory at each memory size (Figure 6).
    Table,
    /// Group commit: minimum log-buffer fill, and against immediate commit (Figure 7).
    GroupCommit,
    /// Transactions rolled back by the terminals, 0-20% (Figure 10).
    Aborts,
    /// Crash at the end of a run and restart: phases, page writes, consistency.
    Recovery,
    /// With paper 002's out-of-place writes and all its optimizations: total WAF.
    Oop,
    /// Every experiment above.
    All,
}

/// Options of `wafer bench flushless`.
#[derive(clap::Args, Debug, Clone)]
pub struct FlushlessArgs {
    /// Which experiment to run.
    #[arg(long, value_enum, default_value = "compare")]
    pub experiment: Experiment,
    /// Memory sizes (buffer frames plus, in the flushless mode, the log table), as fractions of
    /// the pages the load used, comma separated (paper 001: 20, 40 and 60 MB for a 1 GB
    /// database).
    #[arg(long, value_delimiter = ',', default_value = "0.07,0.14,0.28")]
    pub memory: Vec<f64>,
    /// Transactions per run (every run of an experiment runs the same ones).
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub txns: u64,
    /// Warehouses.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub warehouses: u32,
    /// TPC-C population scale (1.0: the specification).
    #[arg(long, default_value_t = 0.1, value_parser = super::parse_positive)]
    pub scale: f64,
    /// Terminals.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub clients: u32,
    /// Log space of the engine (large, so that the log does not drive checkpoints: paper 001's
    /// checkpoints are driven by the log table's free space).
    #[arg(long, default_value = "16MiB", value_parser = super::size::parse_size)]
    pub log_space: u64,
    /// The log buffer (what one log write holds at most; group commit waits for a share of it).
    #[arg(long, default_value = "64KiB", value_parser = super::size::parse_size)]
    pub log_buffer: u64,
    /// Dies of the log SSD (on 1 channel when 1): 1 makes log writes queue one behind the other,
    /// as the writes of one log file did on the paper's SSD; the benchmark SSD's 32 dies serve
    /// concurrent commits in parallel. [default: 32, the benchmark SSD]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=32))]
    pub log_dies: Option<u32>,
    /// Group commit's longest wait (the group-commit experiment), in virtual microseconds.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    pub group_commit_delay_us: u64,
    /// Seed of the load and the terminals.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Pages of program work each die of the data and log SSDs buffers before a host write
    /// waits for flash (the controller's write cache). 0, the default here: every write waits
    /// for its program, so a write costs what it costs on flash (paper 001's premise: reads
    /// cheap, writes dear); 4 is the benchmark SSDs' usual cache, which hides most write
    /// latency.
    #[arg(long, default_value_t = 0)]
    pub write_buffer_pages: u32,
    /// Write every run's TPC-C summary and the experiment tables here (JSON).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// An experiment's body: runs its configurations and appends its table.
type Step = fn(&mut Bench<'_>, &mut String) -> Result<(), CliError>;

/// One run of an experiment.
#[derive(Serialize)]
struct Run {
    experiment: &'static str,
    /// The varied setting, e.g. "memory 0.07, table 0.3".
    label: String,
    config: String,
    virtual_s: f64,
    tpmc: f64,
    pages_written: u64,
    pages_read: u64,
    log_mb: f64,
    total_waf: f64,
    summary: TpccSummary,
}

impl Run {
    fn of(experiment: &'static str, label: String, s: TpccSummary) -> Run {
        let b = &s.bench;
        let log = b.devices.iter().find(|d| d.role == "log");
        Run {
            experiment,
            label,
            config: s.bench.name.clone(),
            virtual_s: b.run.virtual_s,
            tpmc: s.tpmc,
            pages_written: s.pages_written_eviction + s.pages_written_checkpoint,
            pages_read: s.pages_read,
            log_mb: log.map_or(0.0, |d| d.write_bytes as f64 / 1e6),
            total_waf: b.run.total_waf,
            summary: s,
        }
    }
}

struct Bench<'a> {
    args: &'a FlushlessArgs,
    data_bytes: u64,
    runs: Vec<Run>,
    started: std::time::Instant,
}

impl Bench<'_> {
    /// The base configuration of a run of `preset` with `memory`.
    fn config(&self, preset: Preset, memory: f64) -> TpccBenchConfig {
        let a = self.args;
        let tpcc = TpccConfig {
            warehouses: a.warehouses,
            scale: a.scale,
            mode: SizeMode::Growing,
            seed: a.seed,
            abort_fraction: 0.0,
        };
        let mut cfg = TpccBenchConfig::new(preset, tpcc, self.data_bytes, 0.10);
        cfg.data_ssd.timing.write_buffer_pages_per_die = a.write_buffer_pages;
        if let Some(dies) = a.log_dies {
            let mut g = cfg.log_ssd.geometry.clone();
            g.channels = dies.min(8);
            g.dies_per_channel = dies.div_ceil(8);
            let sized = flashsim::SsdConfig::sized(g, cfg.log_ssd.logical_bytes, 0.2);
            cfg.log_ssd.geometry = sized.geometry;
        }
        cfg.log_ssd.timing.write_buffer_pages_per_die = a.write_buffer_pages;
        cfg.engine.log_buffer_bytes = Some(a.log_buffer);
        cfg.buffer_fraction = memory;
        cfg.run.clients = a.clients;
        cfg.run.max_ops = Some(a.txns);
        cfg.run.capacity_multiple = 10_000.0;
        cfg.engine.log_space_bytes = Some(a.log_space);
        cfg.check = true;
        cfg
    }

    /// Runs `cfg` and records it.
    fn run(
        &mut self,
        experiment: &'static str,
        label: String,
        cfg: TpccBenchConfig,
    ) -> Result<&Run, CliError> {
        let name = cfg.preset.name();
        let s = run_vtime(name, &cfg, &mut Silent).map_err(|e| CliError::Run(e.to_string()))?;
        if let Some(c) = s.check_after_run.as_ref().filter(|c| !c.passed()) {
            return Err(CliError::Run(format!(
                "{experiment} {label} {name}: TPC-C consistency check failed: {}",
                c.describe()
            )));
        }
        let r = Run::of(experiment, label, s);
        eprintln!(
            "[{:>4.0}s] {experiment:<12} {:<28} {:<18} {:>7.2} virtual s, {:>7} pages written, \
             {:>7} read",
            self.started.elapsed().as_secs_f64(),
            r.label,
            r.config,
            r.virtual_s,
            r.pages_written,
            r.pages_read
        );
        self.runs.push(r);
        Ok(self.runs.last().expect("pushed"))
    }
}

fn pct(new: f64, old: f64) -> String {
    if old == 0.0 {
        return "-".into();
    }
    format!("{:+.0}%", 100.0 * (new - old) / old)
}

fn table_head(out: &mut String) {
    out.push_str(&format!(
        "{:<30} {:<18} {:>9} {:>8} {:>10} {:>10} {:>8} {:>6}\n",
        "setting", "configuration", "virtual s", "tpmC", "pages W", "pages R", "log MB", "WAF"
    ));
}

fn table_row(out: &mut String, r: &Run) {
    out.push_str(&format!(
        "{:<30} {:<18} {:>9.2} {:>8.0} {:>10} {:>10} {:>8.1} {:>6.2}\n",
        r.label,
        r.config,
        r.virtual_s,
        r.tpmc,
        r.pages_written,
        r.pages_read,
        r.log_mb,
        r.total_waf
    ));
}

/// Original vs proposed at each memory size.
fn compare(b: &mut Bench<'_>, out: &mut String) -> Result<(), CliError> {
    out.push_str("\n## Original (ARIES, in-place) vs proposed (flushless) by memory size\n\n");
    table_head(out);
    for &m in &b.args.memory.clone() {
        let label = format!("memory {m}");
        let o = b.run("compare", label.clone(), b.config(Preset::InPlace, m))?;
        table_row(out, o);
        let (ot, ow, or) = (o.virtual_s, o.pages_written, o.pages_read);
        let p = b.run("compare", label, b.config(Preset::Flushless, m))?;
        table_row(out, p);
        out.push_str(&format!(
            "{:<30} proposed vs original: time {}, page writes {}, page reads {}\n",
            "",
            pct(p.virtual_s, ot),
            pct(p.pages_written as f64, ow as f64),
            pct(p.pages_read as f64, or as f64)
        ));
    }
    Ok(())
}

/// The log table's share of memory.
fn table_share(b: &mut Bench<'_>, out: &mut String) -> Result<(), CliError> {
    out.push_str("\n## The log table's share of memory (flushless)\n\n");
    table_head(out);
    for &m in &b.args.memory.clone() {
        let mut best: Option<(f64, f64)> = None;
        for share in [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7] {
            let mut cfg = b.config(Preset::Flushless, m);
            cfg.engine.flushless = Some(wafer_workloads::bench::FlushlessConfig {
                table_fraction: share,
                ..Default::default()
            });
            let r = b.run("table", format!("memory {m}, table {share}"), cfg)?;
            table_row(out, r);
            if best.is_none_or(|(_, t)| r.virtual_s < t) {
                best = Some((share, r.virtual_s));
            }
        }
        if let Some((share, t)) = best {
            out.push_str(&format!(
                "{:<30} fastest at table share {share} ({t:.2} virtual s)\n",
                ""
            ));
        }
    }
    Ok(())
}

/// Group commit: immediate against minimum log-buffer fills, up to 1 ms of delay.
fn group_commit(b: &mut Bench<'_>, out: &mut String) -> Result<(), CliError> {
    out.push_str(&format!(
        "\n## Group commit (flushless; a commit waits at most {} us for the log buffer to \
         fill)\n\n",
        b.args.group_commit_delay_us
    ));
    table_head(out);
    let m = b.args.memory[b.args.memory.len() / 2];
    let imm = b.run(
        "group-commit",
        format!("memory {m}, immediate"),
        b.config(Preset::Flushless, m),
    )?;
    table_row(out, imm);
    let imm_t = imm.virtual_s;
    let mut best = f64::MAX;
    for fill in [0.2, 0.4, 0.6, 0.8, 1.0] {
        let mut cfg = b.config(Preset::Flushless, m);
        cfg.run.group_commit_delay_us = b.args.group_commit_delay_us;
        cfg.run.group_commit_min_fill = fill;
        let r = b.run("group-commit", format!("memory {m}, min fill {fill}"), cfg)?;
        table_row(out, r);
        best = best.min(r.virtual_s);
    }
    out.push_str(&format!(
        "{:<30} best group commit vs immediate: time {}\n",
        "",
        pct(best, imm_t)
    ));
    Ok(())
}

/// The abort rate.
fn aborts(b: &mut Bench<'_>, out: &mut String) -> Result<(), CliError> {
    out.push_str("\n## Transactions rolled back by the terminals\n\n");
    table_head(out);
    let m = b.args.memory[b.args.memory.len() / 2];
    for frac in [0.0, 0.05, 0.1, 0.15, 0.2] {
        for preset in [Preset::InPlace, Preset::Flushless] {
            let mut cfg = b.config(preset, m);
            cfg.tpcc.abort_fraction = frac;
            let r = b.run("aborts", format!("memory {m}, aborts {frac}"), cfg)?;
            table_row(out, r);
        }
    }
    Ok(())
}

/// Crash at the end and restart.
fn recovery(b: &mut Bench<'_>, out: &mut String) -> Result<(), CliError> {
    out.push_str(
        "\n## Crash at the end of the run, then restart (and the TPC-C check after it)\n\n",
    );
    out.push_str(&format!(
        "{:<18} {:>10} {:>10} {:>14} {:>6} {:>8} {:>8} {:>10} {:>10} {:>6}\n",
        "configuration",
        "restart ms",
        "log recs",
        "redo",
        "undo",
        "pages R",
        "pages W",
        "lazy redos",
        "W after",
        "check"
    ));
    let m = b.args.memory[b.args.memory.len() / 2];
    for preset in [Preset::InPlace, Preset::Flushless] {
        let mut cfg = b.config(preset, m);
        cfg.crash_at_end = true;
        let r = b.run("recovery", format!("memory {m}, crash"), cfg)?;
        let rec = r.summary.recovery.as_ref().expect("crash_at_end");
        let rep = &rec.report;
        let passed = r
            .summary
            .check_after_run
            .as_ref()
            .is_some_and(|c| c.passed());
        out.push_str(&format!(
            "{:<18} {:>10.2} {:>10} {:>14} {:>6} {:>8} {:>8} {:>10} {:>10} {:>6}\n",
            r.config,
            rec.virtual_ms,
            rep.redo_records,
            if rep.flushless {
                format!("{}_loaded", rep.reload_records)
            } else {
                format!("{}_applied", rep.redo_applied)
            },
            rep.undo_records,
            rep.reload_pages_read,
            rec.pages_written,
            rec.lazy_redos,
            rec.pages_written_after,
            if passed { "pass" } else { "FAIL" }
        ));
    }
    out.push_str(
        "(redo: records loaded into the log table (flushless) or page changes applied (ARIES); \
         undo: records undone; pages R/W: read and written by the restart; lazy redos: pages \
         the check after it brought up to date; W after: pages written meanwhile)\n",
    );
    Ok(())
}

/// With out-of-place writes.
fn oop(b: &mut Bench<'_>, out: &mut String) -> Result<(), CliError> {
    out.push_str("\n## With paper 002's out-of-place writes (all optimizations)\n\n");
    table_head(out);
    let m = b.args.memory[b.args.memory.len() / 2];
    for preset in [
        Preset::InPlace,
        Preset::Flushless,
        Preset::OopAll,
        Preset::OopAllFlushless,
    ] {
        let r = b.run("oop", format!("memory {m}"), b.config(preset, m))?;
        table_row(out, r);
    }
    Ok(())
}

pub fn main(args: &FlushlessArgs) -> Result<(), CliError> {
    if args.memory.is_empty() || args.memory.iter().any(|m| !(0.001..=2.0).contains(m)) {
        return Err(CliError::Usage(
            "--memory takes fractions in [0.001, 2] of the loaded pages".into(),
        ));
    }
    if let Some(p) = &args.out {
        super::check_writable("--out", p)?;
    }
    let tpcc = TpccConfig {
        warehouses: args.warehouses,
        scale: args.scale,
        mode: SizeMode::Growing,
        seed: args.seed,
        abort_fraction: 0.0,
    };
    // The load fills about 40% of the data SSD: a growing run has room.
    let want = estimate_load_bytes(&tpcc) as f64 / 0.4;
    let data_bytes = (want as u64).div_ceil(64 << 20).max(1) * (64 << 20);
    let mut b = Bench {
        args,
        data_bytes,
        runs: Vec::new(),
        started: std::time::Instant::now(),
    };
    let mut out = format!(
        "Paper 001 on TPC-C: {} warehouse(s) at scale {}, {} terminals, {} transactions per run, \
         log space {} MiB, log buffer {} KiB, seed {}, SSD write cache {} pages per die; memory \
         as a fraction of the loaded pages; times are virtual (simulated SSDs).\n",
        args.warehouses,
        args.scale,
        args.clients,
        args.txns,
        args.log_space >> 20,
        args.log_buffer >> 10,
        args.seed,
        args.write_buffer_pages
    );
    let all = args.experiment == Experiment::All;
    let todo: [(Experiment, Step); 6] = [
        (Experiment::Compare, compare),
        (Experiment::Table, table_share),
        (Experiment::GroupCommit, group_commit),
        (Experiment::Aborts, aborts),
        (Experiment::Recovery, recovery),
        (Experiment::Oop, oop),
    ];
    for (e, f) in todo {
        if all || args.experiment == e {
            f(&mut b, &mut out)?;
        }
    }
    print!("{out}");
    std::io::stdout().flush().ok();
    if let Some(p) = &args.out {
        #[derive(Serialize)]
        struct Report<'a> {
            text: &'a str,
            runs: &'a [Run],
        }
        let json = serde_json::to_string_pretty(&Report {
            text: &out,
            runs: &b.runs,
        })
        .map_err(|e| CliError::Run(e.to_string()))?;
        let tmp = p.with_extension("json.partial");
        let err = |e: std::io::Error| CliError::Run(format!("cannot write {}: {e}", p.display()));
        std::fs::write(&tmp, format!("{json}\n")).map_err(err)?;
        std::fs::rename(&tmp, p).map_err(err)?;
    }
    Ok(())
}
