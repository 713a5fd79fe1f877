//! `wafer bench tpcc`: TPC-C on the engine. In virtual time (the default) it runs every chosen
//! write-path configuration on its own simulated data and log SSDs with the same warehouses,
//! terminals and seed, and prints tpmC (New-Orders per virtual minute), the DESIGN.md write
//! amplification metrics, bytes per New-Order, the measured mix, the consistency check, and the
//! cumulative media writes against New-Orders (paper 002 Figure 16). With `--wall` it measures the
//! engine's own wall-clock TPC-C throughput with real threads in memory.

use super::size::{format_bytes, parse_size};
use super::CliError;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use wafer_workloads::bench::vtime::BenchObserver;
use wafer_workloads::bench::{BenchReport, Preset};
use wafer_workloads::tpcc::driver::estimate_load_bytes;
use wafer_workloads::tpcc::{
    self, SizeMode, TpccBenchConfig, TpccConfig, TpccSummary, TpccWallConfig,
};

/// Options of `wafer bench tpcc`. Every setting of the run is optional: a flag given explicitly
/// overrides `--config FILE`, which overrides the default shown in the help.
#[derive(clap::Args, Debug, Clone)]
pub struct TpccArgs {
    /// Write-path configurations to compare, comma separated (names as in `wafer bench ycsb`;
    /// default: in-place, in-place-nodw, oop-all).
    #[arg(long, value_delimiter = ',')]
    pub configs: Option<Vec<Preset>>,
    /// Warehouses (W) [default: 2]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub warehouses: Option<u32>,
    /// Population scale: 1.0 is the specification (100,000 items, 3,000 customers per
    /// district); smaller values shrink the per-warehouse tables for quick runs [default: 0.1]
    #[arg(long, value_parser = super::parse_positive)]
    pub scale: Option<f64>,
    /// growing (standard) or steady (old delivered orders and history are deleted, so the
    /// database size stays bounded) [default: growing]
    #[arg(long)]
    pub mode: Option<SizeMode>,
    /// Terminals (closed-loop clients; home warehouse = terminal mod W + 1; no think time)
    /// [default: 16]
    #[arg(long)]
    pub clients: Option<u32>,
    /// Simulated CPU cores shared by the terminals [default: 8]
    #[arg(long)]
    pub cores: Option<u32>,
    /// CPU time of one transaction in virtual microseconds [default: 50]
    #[arg(long)]
    pub cpu_us: Option<u64>,
    /// Logical size of the simulated data SSD (default: sized so the load fills about 70%).
    /// A size that is not a multiple of 4 KiB (e.g. 1GB) is rounded down to one, with a note.
    #[arg(long, value_parser = super::size::parse_device_size)]
    pub data_size: Option<u64>,
    /// Spare factor of the data SSD: (physical - logical) / physical [default: 0.10]
    #[arg(long)]
    pub sf: Option<f64>,
    /// Buffer pool as a fraction of the pages the load used (paper 000: 0.5, paper 002: 0.1)
    /// [default: 0.1]
    #[arg(long)]
    pub buffer: Option<f64>,
    /// Stop when DB-issued writes reach this multiple of the data device capacity [default: 2]
    #[arg(long, value_parser = super::parse_positive)]
    pub capacity_multiple: Option<f64>,
    /// Or stop after this many transactions.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_txns: Option<u64>,
    /// Or stop after this many seconds of virtual time.
    #[arg(long, value_parser = super::parse_positive)]
    pub max_seconds: Option<f64>,
    /// A series point each time DB-issued writes grow by this fraction of the data capacity
    /// [default: 0.05]
    #[arg(long, value_parser = super::parse_positive)]
    pub interval_fraction: Option<f64>,
    /// Engine page size in bytes (4096, 8192, 16384) [default: 4096]
    #[arg(long)]
    pub page_size: Option<u32>,
    /// Log space the engine may use (default: the buffer pool size).
    #[arg(long, value_parser = parse_size)]
    pub log_space: Option<u64>,
    /// Start a checkpoint when this fraction of the log space is used [default: 0.5]
    #[arg(long)]
    pub checkpoint_log_fill: Option<f64>,
    /// Also start one every this many virtual milliseconds (wall-clock ones with --wall; 0: by
    /// log fill only) [default: 0]
    #[arg(long)]
    pub checkpoint_interval_ms: Option<u64>,
    /// Pages the checkpointer writes per background step [default: 64]
    #[arg(long)]
    pub checkpoint_batch_pages: Option<usize>,
    /// Hot-page-aware checkpointing: defer a checkpointed page up to N consecutive times
    /// (paper 000; 0 = plain checkpoints) [default: 0]
    #[arg(long)]
    pub max_checkpoint_count: Option<u32>,
    /// The page cleaner keeps clean the next victims, this fraction of the buffer frames, that
    /// eviction would take, in [0, 0.9) (0: off)
    /// [default: 0]
    #[arg(long, value_parser = super::parse_clean_fraction)]
    pub cleaner_clean_fraction: Option<f64>,
    /// Seed of the load and the terminals (the same for every configuration) [default: 42]
    #[arg(long)]
    pub seed: Option<u64>,
    /// Fraction of transactions the terminals roll back after doing their work, besides the
    /// specification's 1% of New-Orders (paper 001 Figure 10) [default: 0]
    #[arg(long)]
    pub abort_fraction: Option<f64>,
    /// Group commit: a commit waits up to this many virtual microseconds for others to share
    /// its log flush [default: 0: every commit flushes at once]
    #[arg(long)]
    pub group_commit_delay_us: Option<u64>,
    /// Group commit: flush as soon as the unflushed log fills this fraction of the log buffer
    /// (paper 001: 0.8); needs --group-commit-delay-us as the upper bound [default: 0: off]
    #[arg(long)]
    pub group_commit_min_fill: Option<f64>,
    /// Skip the consistency checks after the load and the run.
    #[arg(long)]
    pub no_check: bool,
    /// After the run, crash (no final checkpoint) and recover; report the recovery phases and
    /// check the recovered database.
    #[arg(long)]
    pub crash_at_end: bool,
    /// The log device (paper 003's log role): `flash`, the log SSD (the default), or `disk`,
    /// flashsim's model of the paper's 7200 rpm disk, write-through (a forced log write waits
    /// for the platter). Overrides the config file's `log_disk`.
    #[arg(long, value_enum)]
    pub log_device: Option<super::tpcb::LogArg>,
    /// Run the transactions under snapshot isolation with the rollback segments (the version
    /// store) on this undo device: `flash`, the paper's SSD (mcaqe32g, 4 GiB), or `disk`, its
    /// Barracuda 7200.10 with its 8 MB write cache (paper 003 Figure 4). Overrides the config
    /// file's `snapshot_undo`.
    #[arg(long, value_enum)]
    pub undo_device: Option<super::tpcb::LogArg>,
    #[command(flatten)]
    pub output: super::RunOutput,
    /// Write the full TPC-C summaries (counts, mix, checks, writes-vs-New-Orders series) here.
    #[arg(long)]
    pub tpcc_out: Option<PathBuf>,
    /// Also write the results as CSV: PATH gets one row per configuration and phase (load, run,
    /// steady) with every summary metric (as `bench ycsb --csv`), PATH with `-series` before its
    /// extension one row per configuration and interval (with the New-Orders so far), and PATH
    /// with `-tpcc` one row per configuration with the TPC-C figures (tpmC, bytes per New-Order,
    /// the mix run, checks, recovery by phase). Units are in the column names.
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    /// Also write every transaction latency of each run as an HdrHistogram interval log:
    /// DIR/CONFIG.hlog, one V2-compressed histogram per series interval (values in virtual ns,
    /// timestamps in virtual seconds), readable by HdrHistogram tools (HistogramLogAnalyzer,
    /// hdr-plot). Virtual-time runs only.
    #[arg(long, value_name = "DIR")]
    pub hdr: Option<PathBuf>,
    /// Wall-clock mode: real threads on in-memory devices instead of virtual time, the whole
    /// database cached. Each configuration's engine settings apply (write path, doublewrite,
    /// the checkpoint and cleaner flags); flags of the virtual-time driver (clients, devices,
    /// buffer, log space, reports, config files) are refused.
    #[arg(long)]
    pub wall: bool,
    /// Wall-clock mode: thread (terminal) counts to run, comma separated.
    #[arg(long, default_value = "1,2", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: Vec<u32>,
    /// Wall-clock mode: seconds per run.
    #[arg(long, default_value_t = 5.0, value_parser = super::parse_positive)]
    pub seconds: f64,
}

/// Target fill of the data device by the load when `--data-size` is not given.
const AUTO_FILL: f64 = 0.7;
/// Default spare factor of the data SSD.
const DEFAULT_SF: f64 = 0.10;

impl TpccArgs {
    fn presets(&self) -> Vec<Preset> {
        self.configs
            .clone()
            .unwrap_or_else(|| vec![Preset::InPlace, Preset::InPlaceNoDw, Preset::OopAll])
    }

    fn file(&self) -> Result<Option<super::ConfigFile<TpccBenchConfig>>, CliError> {
        self.output.config_file()
    }

    /// The configuration of one run: the file (or the defaults), then every flag given.
    fn config(
        &self,
        preset: Preset,
        file: Option<&super::ConfigFile<TpccBenchConfig>>,
    ) -> Result<TpccBenchConfig, CliError> {
        use super::set;
        let mut tpcc = match file {
            Some(f) => f.config.tpcc.clone(),
            None => TpccConfig {
                warehouses: 2,
                scale: 0.1,
                mode: SizeMode::Growing,
                seed: 42,
                abort_fraction: 0.0,
            },
        };
        set(&mut tpcc.abort_fraction, self.abort_fraction);
        set(&mut tpcc.warehouses, self.warehouses);
        set(&mut tpcc.scale, self.scale);
        set(&mut tpcc.mode, self.mode);
        set(&mut tpcc.seed, self.seed);
        let mut cfg = match file {
            Some(f) => {
                let mut cfg = f.config.clone();
                cfg.preset = preset;
                cfg.tpcc = tpcc;
                if self.data_size.is_some() || self.sf.is_some() {
                    cfg.data_ssd = super::resize_ssd(&cfg.data_ssd, self.data_size, self.sf);
                }
                if let Some(bytes) = self.data_size {
                    // The log SSD follows the data SSD as without a file.
                    let log = (bytes / 8).max(32 << 20);
                    cfg.log_ssd = super::resize_ssd(&cfg.log_ssd, Some(log), None);
                }
                cfg
            }
            None => {
                let data_bytes = self.data_size.unwrap_or_else(|| {
                    let want = estimate_load_bytes(&tpcc) as f64 / AUTO_FILL;
                    (want as u64).div_ceil(64 << 20).max(1) * (64 << 20)
                });
                TpccBenchConfig::new(preset, tpcc, data_bytes, self.sf.unwrap_or(DEFAULT_SF))
            }
        };
        set(&mut cfg.buffer_fraction, self.buffer);
        if self.no_check {
            cfg.check = false;
        }
        if self.crash_at_end {
            cfg.crash_at_end = true;
        }
        match self.log_device {
            Some(super::tpcb::LogArg::Disk) => {
                cfg.log_disk = Some(flashsim::HddConfig::barracuda_7200_10().with_write_cache(0));
            }
            Some(super::tpcb::LogArg::Flash) => cfg.log_disk = None,
            None => {}
        }
        use wafer_workloads::tpcc::UndoDeviceConfig;
        match self.undo_device {
            Some(super::tpcb::LogArg::Disk) => {
                cfg.snapshot_undo = Some(UndoDeviceConfig::Disk(
                    flashsim::HddConfig::barracuda_7200_10(),
                ));
            }
            Some(super::tpcb::LogArg::Flash) => {
                cfg.snapshot_undo = Some(UndoDeviceConfig::Ssd(
                    flashsim::Drive::Mcaqe32g.config(4 << 30, 0.1),
                ));
            }
            None => {}
        }
        let e = &mut cfg.engine;
        set(&mut e.page_size, self.page_size);
        if self.log_space.is_some() {
            e.log_space_bytes = self.log_space;
        }
        set(&mut e.checkpoint_log_fill, self.checkpoint_log_fill);
        set(&mut e.checkpoint_interval_ms, self.checkpoint_interval_ms);
        set(&mut e.checkpoint_batch_pages, self.checkpoint_batch_pages);
        set(&mut e.max_checkpoint_count, self.max_checkpoint_count);
        set(&mut e.cleaner_clean_fraction, self.cleaner_clean_fraction);
        let r = &mut cfg.run;
        set(&mut r.clients, self.clients);
        set(&mut r.cores, self.cores);
        set(&mut r.cpu_ns_per_op, self.cpu_us.map(|us| us * 1000));
        set(&mut r.capacity_multiple, self.capacity_multiple);
        if self.max_txns.is_some() {
            r.max_ops = self.max_txns;
        }
        if self.max_seconds.is_some() {
            r.max_virtual_s = self.max_seconds;
        }
        set(&mut r.interval_fraction, self.interval_fraction);
        set(&mut r.group_commit_delay_us, self.group_commit_delay_us);
        set(&mut r.group_commit_min_fill, self.group_commit_min_fill);
        super::settle_flushless(preset, &mut cfg.engine);
        cfg.engine.out_of_place = super::merge_out_of_place(
            preset,
            file.and_then(|f| Some((f.path.as_path(), f.out_of_place.as_ref()?))),
        )?;
        cfg.validate().map_err(|e| CliError::Usage(e.to_string()))?;
        Ok(cfg)
    }

    /// The configuration of every run, in the order of `--configs`.
    fn configs(&self) -> Result<Vec<TpccBenchConfig>, CliError> {
        let presets = self.presets();
        super::check_distinct(&presets)?;
        let file = self.file()?;
        presets
            .into_iter()
            .map(|p| self.config(p, file.as_ref()))
            .collect()
    }

    /// The title of a report, from the configuration that ran. The spare factor is the one
    /// asked for (`--sf` or the default) unless a config file gave the device, whose actual
    /// spare factor it then shows.
    fn title(&self, cfg: &TpccBenchConfig) -> String {
        let sf = match (self.sf, &self.output.config) {
            (Some(sf), _) => sf.to_string(),
            (None, Some(_)) => format!("{:.3}", cfg.data_ssd.capacity().spare_factor),
            (None, None) => DEFAULT_SF.to_string(),
        };
        format!(
            "TPC-C, {} warehouse(s) at scale {} ({} mode), {} data SSD (sf {sf}), buffer {:.0}% of the loaded data, {} terminals, seed {}",
            cfg.tpcc.warehouses,
            cfg.tpcc.scale,
            match cfg.tpcc.mode {
                SizeMode::Growing => "growing",
                SizeMode::Steady => "steady-size",
            },
            format_bytes(cfg.data_ssd.logical_bytes),
            cfg.buffer_fraction * 100.0,
            cfg.run.clients,
            cfg.tpcc.seed
        )
    }
}

struct Bar {
    bar: ProgressBar,
    label: String,
}

impl BenchObserver for Bar {
    fn phase(&mut self, name: &str) {
        self.bar.set_message(format!("{} {name}", self.label));
        self.bar.set_position(0);
    }
    fn progress(&mut self, done: f64) {
        self.bar.set_position((done * 1000.0) as u64);
    }
}

fn bar(show: bool, label: &str) -> Bar {
    let bar = if show {
        let b = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("{msg:28} [{bar:30}] {percent:>3}% ETA {eta}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    Bar {
        bar,
        label: label.to_string(),
    }
}

/// Runs every configuration of `args` in virtual time.
pub fn run(args: &TpccArgs, show_progress: bool) -> Result<(String, Vec<TpccSummary>), CliError> {
    let configs = args.configs()?;
    let title = configs.first().map(|c| args.title(c)).unwrap_or_default();
    let mut runs = Vec::new();
    for cfg in configs {
        let name = cfg.preset.name();
        let mut obs = bar(show_progress, name);
        let (s, log) = tpcc::run_vtime_logged(name, &cfg, &mut obs)
            .map_err(|e| CliError::Run(format!("{name}: {e}")))?;
        obs.bar.finish_and_clear();
        if let Some(dir) = &args.hdr {
            super::hdr::write(dir, "wafer bench tpcc", name, &log)?;
        }
        super::warn_short_run(
            name,
            "transactions",
            s.bench.run.ops,
            s.bench.run.db_issued_bytes,
            cfg.data_ssd.logical_bytes,
        );
        runs.push(s);
    }
    Ok((title, runs))
}

fn check_text(s: &TpccSummary) -> String {
    s.check_text()
}

/// Prints the comparison table, the mix and the writes-vs-New-Orders series.
/// The undo device of snapshot-isolation runs (paper 003 Figure 4): its writes, their mean
/// size and time per 4 KiB block, and the version store.
fn print_undo(runs: &[TpccSummary]) {
    let with: Vec<&TpccSummary> = runs.iter().filter(|r| r.undo.is_some()).collect();
    if with.is_empty() {
        return;
    }
    let mut out = String::from(
        "\nSnapshot isolation: the rollback segments on the undo device over the run\n\n\
         | run | undo device | writes | MB written | mean write (KiB) | time per 4 KiB block (ms) \
         | before-images | segments | extents in use at the end | write conflicts |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in with {
        let u = r.undo.as_ref().expect("filtered");
        out.push_str(&format!(
            "| {} | {} | {} | {:.1} | {:.1} | {:.3} | {} | {} | {} | {} |\n",
            r.bench.name,
            u.device,
            u.timing.writes,
            u.timing.write_bytes as f64 / 1e6,
            u.timing.mean_write_bytes() / 1024.0,
            u.write_ns_per_block / 1e6,
            u.versions.before_images,
            u.versions.segments,
            u.versions.extents_in_use,
            u.versions.write_conflicts
        ));
    }
    super::human::print_stdout(&out);
}

pub fn print_table(title: &str, runs: &[TpccSummary]) {
    println!("{title}\n");
    println!(
        "{:<16} {:>9} {:>9} {:>8} {:>7} {:>8} {:>9} {:>10} {:>10} {:>10} {:>6} {:>6}",
        "configuration",
        "tpmC",
        "tpmC q4",
        "NO",
        "DB WAF",
        "SSD WAF",
        "total WAF",
        "user B/NO",
        "DB B/NO",
        "media B/NO",
        "hit",
        "check"
    );
    for s in runs {
        let w = &s.bench.run;
        println!(
            "{:<16} {:>9.0} {:>9.0} {:>8} {:>7.2} {:>8.2} {:>9.2} {:>10.0} {:>10.0} {:>10.0} {:>6.3} {:>6}",
            s.bench.name,
            s.tpmc,
            s.tpmc_last_quarter,
            s.new_orders,
            w.db_waf,
            w.ssd_waf,
            w.total_waf,
            s.user_bytes_per_new_order,
            s.db_issued_bytes_per_new_order,
            s.media_bytes_per_new_order,
            w.hit_ratio,
            check_text(s)
        );
    }
    println!(
        "\ntpmC = New-Orders per virtual minute over the run (q4: over its last quarter); WAF and bytes per New-Order (NO) over the whole run."
    );
    if let [base, rest @ ..] = runs {
        for s in rest {
            println!(
                "  {} vs {}: {:.2}x the throughput, {:.2}x fewer media bytes per New-Order",
                s.bench.name,
                base.bench.name,
                s.tpmc / base.tpmc.max(1e-9),
                base.media_bytes_per_new_order / s.media_bytes_per_new_order.max(1e-9)
            );
        }
    }
    println!("\nmix (new-order / payment / order-status / delivery / stock-level), counts:");
    for s in runs {
        let pct: Vec<String> = s.mix_percent.iter().map(|p| format!("{p:.2}%")).collect();
        let conflicts: u64 = s.txns.conflicts.iter().sum();
        println!(
            "  {:<16} {} of {} txns; {} rolled back New-Orders, {} conflicts retried, {} empty delivery districts; {} rows loaded ({} pages, {:.0}% of the device), {} pages at the end",
            s.bench.name,
            pct.join(" / "),
            s.txns.total(),
            s.txns.rolled_back,
            conflicts,
            s.txns.skipped_deliveries,
            s.load.rows,
            s.pages_after_load,
            100.0 * s.pages_after_load as f64 / s.capacity_pages.max(1) as f64,
            s.pages_at_end
        );
    }
    if runs.iter().any(|s| s.recovery.is_some()) {
        println!(
            "\ncrash after the run, then recovery (records; virtual ms per phase and for the whole reopen):"
        );
        for s in runs {
            if let Some(r) = &s.recovery {
                let p = &r.report;
                println!(
                    "  {:<16} analysis {} recs {:.1} ms, redo {} recs ({} page changes applied) {:.1} ms, undo {} txns {} recs {:.1} ms; reopen {:.1} virtual ms; recovered state {}",
                    s.bench.name,
                    p.analysis_records,
                    p.analysis_us as f64 / 1e3,
                    p.redo_records,
                    p.redo_applied,
                    p.redo_us as f64 / 1e3,
                    p.undo_txns,
                    p.undo_records,
                    p.undo_us as f64 / 1e3,
                    r.virtual_ms,
                    check_text(s)
                );
            }
        }
    }
    println!("\ncumulative media writes (MB) against New-Orders:");
    for s in runs {
        let step = s.series.len().div_ceil(8).max(1);
        let mut pts: Vec<String> = s
            .series
            .iter()
            .step_by(step)
            .map(|p| format!("{}:{:.0}", p.new_orders, p.media_mb_cumulative))
            .collect();
        if let Some(p) = s.series.last() {
            if (s.series.len() - 1) % step != 0 {
                pts.push(format!("{}:{:.0}", p.new_orders, p.media_mb_cumulative));
            }
        }
        println!("  {:<16} {}", s.bench.name, pts.join("  "));
    }
}

/// The three files of `--csv PATH`: summaries, series, TPC-C figures.
fn csv_paths(p: &Path) -> [PathBuf; 3] {
    [
        p.to_path_buf(),
        super::csv::sibling(p, "series"),
        super::csv::sibling(p, "tpcc"),
    ]
}

/// One row of the `-tpcc` CSV file: the TPC-C figures of a run, flat.
fn tpcc_csv_row(s: &TpccSummary) -> serde_json::Value {
    use serde_json::json;
    let f = s.bench.tpcc.clone().unwrap_or_else(|| s.figures());
    let w = &s.bench.run;
    let mut m = serde_json::Map::new();
    let mut put = |k: &str, v: serde_json::Value| {
        m.insert(k.to_string(), v);
    };
    put("tpmc", json!(f.tpmc));
    put("tpmc_last_quarter", json!(f.tpmc_last_quarter));
    put("new_orders", json!(f.new_orders));
    put("txns", json!(f.txns.total()));
    put("virtual_s", json!(w.virtual_s));
    put(
        "user_bytes_per_new_order",
        json!(f.user_bytes_per_new_order),
    );
    put(
        "host_bytes_per_new_order",
        json!(f.host_bytes_per_new_order),
    );
    put(
        "media_bytes_per_new_order",
        json!(f.media_bytes_per_new_order),
    );
    put("wal_bytes_per_new_order", json!(f.wal_bytes_per_new_order));
    put("db_waf", json!(w.db_waf));
    put("ssd_waf", json!(w.ssd_waf));
    put("total_waf", json!(w.total_waf));
    for (i, kind) in tpcc::TxnKind::ALL.iter().enumerate() {
        let k = kind.name().replace('-', "_");
        put(&format!("{k}_percent"), json!(f.mix_percent[i]));
        put(&format!("{k}_completed"), json!(f.txns.completed[i]));
        put(&format!("{k}_conflicts"), json!(f.txns.conflicts[i]));
    }
    put("new_orders_rolled_back", json!(f.txns.rolled_back));
    put(
        "delivery_districts_skipped",
        json!(f.txns.skipped_deliveries),
    );
    put("check", json!(f.check));
    let r = f.recovery.as_ref();
    let rep = r.map(|r| &r.report);
    put(
        "recovery_analysis_records",
        json!(rep.map(|p| p.analysis_records)),
    );
    put(
        "recovery_analysis_ms",
        json!(rep.map(|p| p.analysis_us as f64 / 1e3)),
    );
    put("recovery_redo_records", json!(rep.map(|p| p.redo_records)));
    put("recovery_redo_applied", json!(rep.map(|p| p.redo_applied)));
    put(
        "recovery_redo_ms",
        json!(rep.map(|p| p.redo_us as f64 / 1e3)),
    );
    put("recovery_undo_txns", json!(rep.map(|p| p.undo_txns)));
    put("recovery_undo_records", json!(rep.map(|p| p.undo_records)));
    put(
        "recovery_undo_ms",
        json!(rep.map(|p| p.undo_us as f64 / 1e3)),
    );
    put("recovery_virtual_ms", json!(r.map(|r| r.virtual_ms)));
    serde_json::Value::Object(m)
}

/// `--csv PATH`: the summaries (a row per configuration and phase), the series (a row per
/// configuration and interval, with the New-Orders completed by its end) and the TPC-C figures
/// (a row per configuration).
fn write_csv(path: &Path, runs: &[TpccSummary]) -> Result<(), CliError> {
    let quote = |s: &str| super::csv::cell(&serde_json::Value::String(s.to_string()));
    let mut summary = Vec::new();
    let mut series = Vec::new();
    let mut figures = Vec::new();
    for s in runs {
        let b = &s.bench;
        for (phase, w) in [("load", &b.load), ("run", &b.run), ("steady", &b.steady)] {
            summary.push((vec![quote(&b.name), quote(phase)], w));
        }
        for (i, row) in b.series.iter().enumerate() {
            let mut v = serde_json::to_value(row).map_err(|e| CliError::Run(e.to_string()))?;
            // The TPC-C series has a point at the start, then one per series row.
            let new_orders = s.series.get(i + 1).map(|p| p.new_orders);
            if let serde_json::Value::Object(m) = &mut v {
                m.insert("new_orders".into(), serde_json::json!(new_orders));
            }
            series.push((vec![quote(&b.name), i.to_string()], v));
        }
        figures.push((vec![quote(&b.name)], tpcc_csv_row(s)));
    }
    let [p_summary, p_series, p_tpcc] = csv_paths(path);
    let write = |p: &Path, text: String| {
        std::fs::write(p, text)
            .map_err(|e| CliError::Run(format!("cannot write {}: {e}", p.display())))
    };
    let series: Vec<(Vec<String>, &serde_json::Value)> =
        series.iter().map(|(c, v)| (c.clone(), v)).collect();
    let figures: Vec<(Vec<String>, &serde_json::Value)> =
        figures.iter().map(|(c, v)| (c.clone(), v)).collect();
    write(
        &p_summary,
        super::csv::table(&["configuration", "phase"], &summary),
    )?;
    write(
        &p_series,
        super::csv::table(&["configuration", "interval"], &series),
    )?;
    write(&p_tpcc, super::csv::table(&["configuration"], &figures))
}

fn write_json<T: serde::Serialize>(path: &Path, v: &T) -> Result<(), CliError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::Run(format!("cannot create {}: {e}", dir.display())))?;
    }
    let json = serde_json::to_string_pretty(v).map_err(|e| CliError::Run(e.to_string()))?;
    std::fs::write(path, format!("{json}\n"))
        .map_err(|e| CliError::Run(format!("cannot write {}: {e}", path.display())))
}

fn main_wall(args: &TpccArgs) -> Result<(), CliError> {
    let mut results = Vec::new();
    let configs = args.configs()?;
    for &threads in &args.threads {
        for run in &configs {
            let preset = run.preset;
            let cfg = TpccWallConfig {
                tpcc: run.tpcc.clone(),
                threads,
                duration_ms: (args.seconds * 1000.0) as u64,
                engine: run.engine_config(0),
            };
            let r = tpcc::run_wall(&cfg).map_err(|e| CliError::Run(e.to_string()))?;
            if !args.output.json {
                let conflicts: u64 = r.txns.conflicts.iter().sum();
                println!(
                    "TPC-C W={} scale {} {} {threads} thread(s): {:.0} tpmC, {:.0} txn/s ({} txns in {:.2} s, {conflicts} conflicts retried, at most {} tries, longest {:.1} ms with retries), p50 {:.0} us p99 {:.0} us, {} exclusive latches, {}",
                    run.tpcc.warehouses,
                    run.tpcc.scale,
                    preset.name(),
                    r.tpmc,
                    r.txns_per_s,
                    r.txns.total(),
                    r.seconds,
                    r.most_tries,
                    r.longest_with_retries_ns as f64 / 1e6,
                    r.latency.p50_ns as f64 / 1e3,
                    r.latency.p99_ns as f64 / 1e3,
                    r.engine.exclusive_latches,
                    r.check.describe()
                );
            }
            results.push(r);
        }
    }
    if args.output.json {
        let json =
            serde_json::to_string_pretty(&results).map_err(|e| CliError::Run(e.to_string()))?;
        super::human::print_stdout(&json);
    }
    Ok(())
}

/// Runs `wafer bench tpcc`.
pub fn main(args: &TpccArgs) -> Result<(), CliError> {
    if args.wall {
        // What only the virtual-time driver uses: never ignored silently. (--wall sizes its
        // own in-memory devices, pool and log, and runs one terminal per thread.)
        let virtual_only = [
            (args.hdr.is_some(), "--hdr"),
            (args.csv.is_some(), "--csv"),
            (args.log_device.is_some(), "--log-device"),
            (args.undo_device.is_some(), "--undo-device"),
            (args.clients.is_some(), "--clients"),
            (args.cores.is_some(), "--cores"),
            (args.cpu_us.is_some(), "--cpu-us"),
            (args.data_size.is_some(), "--data-size"),
            (args.sf.is_some(), "--sf"),
            (args.buffer.is_some(), "--buffer"),
            (args.capacity_multiple.is_some(), "--capacity-multiple"),
            (args.max_txns.is_some(), "--max-txns"),
            (args.max_seconds.is_some(), "--max-seconds"),
            (args.interval_fraction.is_some(), "--interval-fraction"),
            (args.log_space.is_some(), "--log-space"),
            (
                args.group_commit_delay_us.is_some(),
                "--group-commit-delay-us",
            ),
            (
                args.group_commit_min_fill.is_some(),
                "--group-commit-min-fill",
            ),
            (args.no_check, "--no-check"),
            (args.crash_at_end, "--crash-at-end"),
            (args.tpcc_out.is_some(), "--tpcc-out"),
            (args.output.out.is_some(), "--out"),
            // A file's devices, run, snapshot and check settings would be dropped: the engine
            // flags set what --wall uses.
            (args.output.config.is_some(), "--config"),
            (args.output.dump_config, "--dump-config"),
        ];
        if let Some((_, flag)) = virtual_only.iter().find(|(given, _)| *given) {
            return Err(CliError::Usage(format!(
                "{flag} applies to virtual-time runs, not to --wall"
            )));
        }
        return main_wall(args);
    }
    if args.output.dump_config {
        return super::print_first_config(args.configs()?);
    }
    if let Some(p) = &args.output.out {
        super::check_writable("--out", p)?;
    }
    if let Some(p) = &args.tpcc_out {
        super::check_writable("--tpcc-out", p)?;
    }
    if let Some(p) = &args.csv {
        for path in csv_paths(p) {
            super::check_writable("--csv", &path)?;
        }
    }
    if let Some(d) = &args.hdr {
        super::hdr::prepare(d)?;
    }
    let show = std::io::stderr().is_terminal() && !args.output.json;
    let (title, runs) = run(args, show)?;
    if let Some(p) = &args.output.out {
        let report = BenchReport {
            title: title.clone(),
            runs: runs.iter().map(|s| s.bench.clone()).collect(),
        };
        write_json(p, &report)?;
    }
    if let Some(p) = &args.tpcc_out {
        write_json(p, &runs)?;
    }
    if let Some(p) = &args.csv {
        write_csv(p, &runs)?;
    }
    if args.output.json {
        let json = serde_json::to_string_pretty(&runs).map_err(|e| CliError::Run(e.to_string()))?;
        super::human::print_stdout(&json);
    } else {
        print_table(&title, &runs);
        print_undo(&runs);
        let failed = runs.iter().any(|s| {
            [&s.check_after_load, &s.check_after_run]
                .iter()
                .any(|c| c.as_ref().is_some_and(|c| !c.passed()))
        });
        if failed {
            return Err(CliError::Run("a consistency check failed".into()));
        }
    }
    Ok(())
}
