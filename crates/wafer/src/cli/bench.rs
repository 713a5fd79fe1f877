//! `wafer bench`: benchmarks. `ycsb` runs YCSB on the engine over simulated SSDs in virtual time
//! for several write-path configurations side by side (same workload, same seed) and prints a
//! table in the shape of paper 002 Table 1; `wall` measures the engine's own wall-clock
//! throughput in memory; `device` compares device configurations without the engine.

use super::CliError;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use wafer_workloads::bench::vtime::{self, BenchObserver};
use wafer_workloads::bench::wall::{self, WallConfig, WallLoad};
use wafer_workloads::bench::{BenchConfig, BenchReport, BenchSummary, Preset};
use wafer_workloads::ycsb::{KeyDist, ValueSizes, YcsbConfig, YcsbWorkload};

#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// YCSB on the engine over simulated SSDs, in virtual time, one run per configuration
    Ycsb(Box<YcsbArgs>),
    /// Wall-clock throughput of the engine, in memory or on files (whole data set cached unless --buffer-mib)
    Wall(WallArgs),
    /// Device-level comparison of flashsim configurations (no engine)
    Device(super::device::DeviceArgs),
    /// TPC-C on the engine: virtual time over simulated SSDs per configuration (or --wall)
    Tpcc(Box<super::tpcc::TpccArgs>),
    /// Paper 001's experiments on TPC-C: ARIES (original) against the flushless mode
    /// (proposed) by memory size, log-table share, group commit, abort rate, restart, and with
    /// out-of-place writes
    Flushless(Box<super::flushless::FlushlessArgs>),
    /// Paper 003's temp-space experiments: external sort, hash join and sort-merge join with
    /// temp space on the simulated disk or flash SSD, by cluster and memory size (Figures 6-8)
    Query(Box<super::query::QueryArgs>),
    /// Paper 003's commit-time experiments: TPC-B with the data cached and the log on the
    /// simulated disk or flash SSD, by the number of clients, with group commit (Tables 2-3)
    Tpcb(Box<super::tpcb::TpcbArgs>),
    /// Paper 003 Table 4: a snapshot scan that reads three old versions of every row from the
    /// rollback segments (the undo device), on the paper's disk and on its flash SSD.
    Mvcc(super::mvcc::MvccArgs),
    /// Paper 004's sensitivity experiments on the journal write path: checkpoint time by
    /// clients, throughput by checkpoint interval and by the SSD's mapping unit (Figures 10, 12,
    /// 13); the ladder itself is `bench ycsb --configs baseline,isc-a,isc-b,isc-c,check-in`
    Checkin(Box<super::checkin::CheckinArgs>),
}

/// Defaults of the flags of `wafer bench ycsb` (applied where neither a flag nor a config file
/// gives a value).
pub const DEFAULT_DATA_SIZE: u64 = 256 << 20;
const DEFAULT_SF: f64 = 0.10;
const DEFAULT_THETA: f64 = 0.8;

/// Options of `wafer bench ycsb` (and of `wafer demo`). Every setting is optional: a flag given
/// explicitly overrides `--config FILE`, which overrides the default shown in the help.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct YcsbArgs {
    /// Configurations to compare, comma separated: in-place, in-place-nodw, oop, oop+comp,
    /// oop+gdt, oop+nowa, oop-all, oop-all-nocomp, zns, fdp (paper 002 Table 1's ladder, then
    /// its ZNS and FDP devices), flushless, oop-all+flushless (in-place and oop-all in paper
    /// 001's flushless buffer mode).
    #[arg(long, default_value = "in-place,oop-all", value_delimiter = ',')]
    pub configs: Vec<Preset>,
    /// YCSB workload: a, b, c, d, e, f or wo (write-only) [default: a]
    #[arg(long)]
    pub workload: Option<YcsbWorkload>,
    /// Zipf skew of key popularity (scrambled); 0 means uniform; workload d reads the latest
    /// inserts instead [default: 0.8]
    #[arg(long, value_parser = super::parse_non_negative)]
    pub theta: Option<f64>,
    /// Logical size of the simulated data SSD (e.g. 256MiB, 4GiB); the log SSD is an eighth of
    /// it, at least 32 MiB [default: 256MiB]
    /// A size that is not a multiple of 4 KiB (e.g. 1GB) is rounded down to one, with a note.
    #[arg(long, value_parser = super::size::parse_device_size)]
    pub data_size: Option<u64>,
    /// Spare factor of the data SSD: (physical - logical) / physical [default: 0.10]
    #[arg(long)]
    pub sf: Option<f64>,
    /// Fraction of the data device the load fills [default: 0.9]
    #[arg(long)]
    pub fill: Option<f64>,
    /// Buffer pool size as a fraction of the loaded data [default: 0.1]
    #[arg(long)]
    pub buffer: Option<f64>,
    /// Value sizes: BYTES (fixed, e.g. 1000), MIN..MAX (uniform in bytes, e.g. 128..4096),
    /// SIZE,SIZE,... (each equally likely, e.g. 128,512,4096), or mix1 (128, 256, .. 4096 B
    /// equally likely, mean 1344 B), mix2 (small-heavy, mean 390 B), mix3 (large-heavy, mean
    /// 2773 B), mix4 (uniform 128..4096, mean 2112 B); a record keeps its size [default: 1000]
    #[arg(long, value_name = "SIZES")]
    pub value_size: Option<ValueSizes>,
    /// FTL mapping unit of the data SSD in bytes: 512, 1024, 2048 or 4096 (a power of two from
    /// 512 to the engine page size) [default: 4096]
    #[arg(long, value_name = "BYTES", value_parser = super::size::parse_size)]
    pub mapping_unit: Option<u64>,
    /// Closed-loop clients [default: 16]
    #[arg(long)]
    pub clients: Option<u32>,
    /// Stop when DB-issued writes reach this multiple of the data device capacity [default: 4]
    #[arg(long, value_parser = super::parse_positive)]
    pub capacity_multiple: Option<f64>,
    /// Or stop after this many operations.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_ops: Option<u64>,
    /// Or stop after this many seconds of virtual time.
    #[arg(long, value_parser = super::parse_positive)]
    pub max_seconds: Option<f64>,
    /// Seed of the workload (the same for every configuration) [default: 42]
    #[arg(long)]
    pub seed: Option<u64>,
    /// Hot-page-aware checkpointing: defer a checkpointed page up to N consecutive times
    /// (paper 000; 0 = plain checkpoints) [default: 0]
    #[arg(long)]
    pub max_checkpoint_count: Option<u32>,
    /// Group commit in virtual time: a commit waits up to this many microseconds for others to
    /// share its log flush (0 and --group-commit-min-batch 1: every commit flushes alone)
    /// [default: 0]
    #[arg(long)]
    pub group_commit_delay_us: Option<u64>,
    /// ... and the flush happens as soon as this many commits wait [default: 1]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub group_commit_min_batch: Option<u32>,
    #[command(flatten)]
    pub output: super::RunOutput,
    /// Write the per-interval series of every run here, one JSON object per line.
    #[arg(long)]
    pub series: Option<PathBuf>,
    /// Also write the results as CSV: PATH gets one row per configuration and phase (load, run,
    /// steady) with every summary metric, and PATH with `-series` before its extension one row
    /// per configuration and interval. Units are in the column names (bytes, MB = 10^6 bytes,
    /// seconds of virtual time).
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    /// Also write every operation latency of each run as an HdrHistogram interval log:
    /// DIR/CONFIG.hlog, one V2-compressed histogram per series interval (values in virtual ns,
    /// timestamps in virtual seconds), readable by HdrHistogram tools (HistogramLogAnalyzer,
    /// hdr-plot).
    #[arg(long, value_name = "DIR")]
    pub hdr: Option<PathBuf>,
}

/// The key choice of `workload` with skew `theta` (workload D reads the latest inserts).
fn key_dist(workload: YcsbWorkload, theta: f64) -> KeyDist {
    if workload == YcsbWorkload::D {
        KeyDist::Standard
    } else if theta > 0.0 {
        KeyDist::Zipf { theta }
    } else {
        KeyDist::Uniform
    }
}

impl YcsbArgs {
    /// The configuration file of `--config`, read once.
    fn file(&self) -> Result<Option<super::ConfigFile<BenchConfig>>, CliError> {
        self.output.config_file()
    }

    /// The configuration of one run: the file (or the defaults), then every flag given.
    fn config(
        &self,
        preset: Preset,
        file: Option<&super::ConfigFile<BenchConfig>>,
    ) -> Result<BenchConfig, CliError> {
        let mut cfg = match file {
            Some(f) => {
                let mut cfg = f.config.clone();
                cfg.preset = preset;
                if self.data_size.is_some() || self.sf.is_some() {
                    cfg.data_ssd = super::resize_ssd(&cfg.data_ssd, self.data_size, self.sf);
                }
                if let Some(bytes) = self.data_size {
                    // The log SSD follows the data SSD as without a file.
                    cfg.log_ssd = super::resize_ssd(&cfg.log_ssd, Some(log_bytes(bytes)), None);
                }
                cfg
            }
            None => {
                let ycsb = YcsbConfig {
                    workload: YcsbWorkload::A,
                    dist: key_dist(YcsbWorkload::A, DEFAULT_THETA),
                    ..YcsbConfig::default()
                };
                BenchConfig::new(
                    preset,
                    self.data_size.unwrap_or(DEFAULT_DATA_SIZE),
                    self.sf.unwrap_or(DEFAULT_SF),
                    ycsb,
                )
            }
        };
        if self.workload.is_some() || self.theta.is_some() {
            let workload = self.workload.unwrap_or(cfg.ycsb.workload);
            let theta = self.theta.unwrap_or(match cfg.ycsb.dist {
                KeyDist::Zipf { theta } => theta,
                KeyDist::Uniform => 0.0,
                _ => DEFAULT_THETA,
            });
            cfg.ycsb.workload = workload;
            cfg.ycsb.dist = key_dist(workload, theta);
        }
        use super::set;
        if let Some(sizes) = &self.value_size {
            cfg.ycsb.set_value_sizes(sizes.clone());
        }
        if let Some(mu) = self.mapping_unit {
            check_mapping_unit(mu, cfg.engine.page_size, "--mapping-unit")?;
            cfg.data_ssd.mapping_unit_bytes = mu as u32;
            cfg.data_ssd.fit_reserve();
        }
        check_mapping_unit(
            u64::from(cfg.data_ssd.mapping_unit_bytes),
            cfg.engine.page_size,
            "data_ssd.mapping_unit_bytes",
        )?;
        cover_the_device(&mut cfg);
        set(&mut cfg.ycsb.seed, self.seed);
        set(&mut cfg.fill, self.fill);
        set(&mut cfg.buffer_fraction, self.buffer);
        set(
            &mut cfg.engine.max_checkpoint_count,
            self.max_checkpoint_count,
        );
        let r = &mut cfg.run;
        set(&mut r.group_commit_delay_us, self.group_commit_delay_us);
        set(&mut r.group_commit_min_batch, self.group_commit_min_batch);
        set(&mut r.clients, self.clients);
        set(&mut r.capacity_multiple, self.capacity_multiple);
        if self.max_ops.is_some() {
            r.max_ops = self.max_ops;
        }
        if self.max_seconds.is_some() {
            r.max_virtual_s = self.max_seconds;
        }
        super::settle_flushless(preset, &mut cfg.engine);
        cfg.engine.out_of_place = super::merge_out_of_place(
            preset,
            file.and_then(|f| Some((f.path.as_path(), f.out_of_place.as_ref()?))),
        )?;
        cfg.validate().map_err(CliError::Usage)?;
        Ok(cfg)
    }

    /// The configuration of every run, in the order of `--configs`.
    pub fn configs(&self) -> Result<Vec<BenchConfig>, CliError> {
        super::check_distinct(&self.configs)?;
        let file = self.file()?;
        self.configs
            .iter()
            .map(|&p| self.config(p, file.as_ref()))
            .collect()
    }
}

/// A data SSD mapping unit must be a power of two from 512 B to the engine's page size.
fn check_mapping_unit(bytes: u64, page_size: u32, what: &str) -> Result<(), CliError> {
    let page_size = u64::from(page_size);
    if bytes.is_power_of_two() && (512..=page_size).contains(&bytes) {
        return Ok(());
    }
    let mut ok = Vec::new();
    let mut u = 512u64;
    while u <= page_size {
        ok.push(u.to_string());
        u *= 2;
    }
    Err(CliError::Usage(format!(
        "{what} {bytes} must be a power of two from 512 bytes to the engine page size ({page_size}): one of {}",
        ok.join(", ")
    )))
}

/// With value sizes that vary, makes the workload's record count (the most records the load
/// may insert) cover the data SSD at the mean value size, as small values need more records than
/// the default holds. The fixed size keeps its record count (and so its results).
fn cover_the_device(cfg: &mut BenchConfig) {
    if cfg.ycsb.value_sizes == ValueSizes::Fixed {
        return;
    }
    // Every record's value takes its bytes of some page, so no load needs more.
    let most = (cfg.data_ssd.logical_bytes as f64 / cfg.ycsb.mean_value_bytes()).ceil() as u64;
    cfg.ycsb.record_count = cfg.ycsb.record_count.max(most);
}

/// The log SSD's size for a `data_bytes` data SSD (as [`BenchConfig::new`] makes it).
fn log_bytes(data_bytes: u64) -> u64 {
    (data_bytes / 8).max(32 << 20)
}

/// The title of a report: the settings every run shares, from the configuration that ran.
fn title(cfg: &BenchConfig) -> String {
    let dist = match cfg.ycsb.key_dist() {
        KeyDist::Zipf { theta } => format!("zipf {theta}"),
        d => d.to_string(),
    };
    format!(
        "YCSB-{} ({dist}), {} data SSD at {:.0}% fill, buffer {:.0}% of the data, {} clients, seed {}, {}, mapping unit {}",
        cfg.ycsb.workload,
        super::size::format_bytes(cfg.data_ssd.logical_bytes),
        cfg.fill * 100.0,
        cfg.buffer_fraction * 100.0,
        cfg.run.clients,
        cfg.ycsb.seed,
        cfg.ycsb.describe_values(),
        super::size::format_bytes(u64::from(cfg.data_ssd.mapping_unit_bytes))
    )
}

/// Options of `wafer bench wall`.
#[derive(clap::Args, Debug)]
pub struct WallArgs {
    /// YCSB workloads to run, comma separated (a..f, wo). `load` measures the load instead:
    /// the threads insert the records, each its share in hashed key order (inserts all over
    /// the tree, which split its leaves), `--load-batch` to a transaction.
    #[arg(long, default_value = "c,a", value_delimiter = ',')]
    pub workloads: Vec<WallWorkload>,
    /// Thread counts to run, comma separated.
    #[arg(long, default_value = "1,2", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: Vec<u32>,
    /// Records inserted per transaction by the `load` workload (default 1; refused without
    /// `load` among the workloads).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub load_batch: Option<u32>,
    /// Longest scan of workload E: each scan reads a number of records uniform in
    /// `1..=this` (default 100, YCSB's; refused without `e` among the workloads).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_scan_len: Option<u64>,
    /// Records loaded (all cached).
    #[arg(long, default_value_t = 100_000)]
    pub records: u64,
    /// Value size in bytes.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Seconds per run (a `load` runs until its records are in).
    #[arg(long, default_value_t = 5.0, value_parser = super::parse_positive)]
    pub seconds: f64,
    /// Seed of the data and of the request streams (each thread's stream is derived from it
    /// and the thread's index).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Put the database in files in this directory (default: in memory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Run each read as a one-read transaction (begin, get, commit) instead of `Db::get`
    /// (a read outside any transaction, which takes no lock).
    #[arg(long)]
    pub read_txn: bool,
    /// Commits return once their record is in the log buffer, not once it is durable (the
    /// engine's `durable_commits = false`; a crash may lose the last commits).
    #[arg(long)]
    pub buffered_commits: bool,
    /// Run the engine's background maintenance (`Db::start_background`) every this many
    /// milliseconds during the run: checkpoints then proceed a batch of pages at a time beside
    /// the clients (each batch's writes with the core latch released) rather than inside the
    /// operation that finds one due. Default: off.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub background_ms: Option<u64>,
    /// Start a checkpoint also whenever this many milliseconds have passed since the last one
    /// (the engine's `checkpoint_interval_ms`; default 0: by log volume only).
    #[arg(long, default_value_t = 0)]
    pub checkpoint_interval_ms: u64,
    /// Buffer pool size in MiB (default: the whole data device, so every page stays cached).
    /// Smaller than the data, operations read pages from the device: misses, each read with
    /// the engine's core latch released.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub buffer_mib: Option<u64>,
    /// Write pages out of place (paper 002: the engine's default out-of-place settings, no
    /// doublewrite buffer) instead of in place.
    #[arg(long, conflicts_with = "journal")]
    pub out_of_place: bool,
    /// Journal page writes (paper 004) and move them home by this method: baseline, isc-a,
    /// isc-b, isc-c or check-in (the engine's default journal settings, no doublewrite). On
    /// files, remaps are the filesystem's copies by reference where it has them, else copies.
    #[arg(long, value_parser = super::parse_home_method)]
    pub journal: Option<wafer_workloads::bench::HomeMethod>,
    /// The page cleaner keeps clean the next victims, this fraction of the buffer frames, that
    /// eviction would take (the engine's `cleaner_clean_fraction`, in [0, 0.9); 0: off). It runs in the background maintenance,
    /// so it needs `--background-ms`; with a pool that holds every page it has nothing to do.
    /// Out of place, 0.2 also lets misses read staged pages without waiting for a batch's
    /// writes: the tail falls several-fold (docs/results.md, twentieth run).
    #[arg(long, default_value_t = 0.0, requires = "background_ms", value_parser = super::parse_clean_fraction)]
    pub cleaner_clean_fraction: f64,
    /// Where a full leaf splits (the engine's `leaf_splits`): `auto` beside the other threads
    /// once a second thread has run operations, `beside` always where the split allows it,
    /// `exclusive` always with the tree to itself (the engine before 2026-11-27).
    #[arg(long, value_enum, default_value_t = LeafSplitsArg::Auto)]
    pub leaf_splits: LeafSplitsArg,
    /// The flushless buffer mode (paper 001: flushing-less eviction, no-steal, redo-only log;
    /// the engine's default settings) instead of ARIES's. Its plain leaf changes and their
    /// commits run beside other threads; splits, rollbacks of changes and maintenance run with
    /// the core latch exclusive. Needs durable commits.
    #[arg(long, conflicts_with_all = ["buffered_commits", "cleaner_clean_fraction"])]
    pub flushless: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `--leaf-splits` (the engine's [`wafer_workloads::bench::LeafSplits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LeafSplitsArg {
    Auto,
    Beside,
    Exclusive,
}

impl From<LeafSplitsArg> for wafer_workloads::bench::LeafSplits {
    fn from(a: LeafSplitsArg) -> Self {
        match a {
            LeafSplitsArg::Auto => wafer_workloads::bench::LeafSplits::Auto,
            LeafSplitsArg::Beside => wafer_workloads::bench::LeafSplits::Beside,
            LeafSplitsArg::Exclusive => wafer_workloads::bench::LeafSplits::Exclusive,
        }
    }
}

/// A workload of `wafer bench wall`: a YCSB workload, or the load itself.
#[derive(Clone, Copy, Debug)]
pub enum WallWorkload {
    /// The records inserted by the threads, measured.
    Load,
    /// A YCSB workload run on the loaded records.
    Ycsb(YcsbWorkload),
}

impl std::str::FromStr for WallWorkload {
    type Err = String;
    fn from_str(s: &str) -> Result<WallWorkload, String> {
        if s.trim().eq_ignore_ascii_case("load") {
            return Ok(WallWorkload::Load);
        }
        s.parse()
            .map(WallWorkload::Ycsb)
            .map_err(|e| format!("{e} (or \"load\")"))
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

fn bar(show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr());
    b.set_style(
        ProgressStyle::with_template("{msg:28} [{bar:30}] {percent:>3}% ETA {eta}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    b
}

/// Runs every configuration of `args`; returns the report.
pub fn run_ycsb(args: &YcsbArgs, show_progress: bool) -> Result<BenchReport, CliError> {
    let configs: Vec<(Preset, BenchConfig)> =
        args.configs.iter().copied().zip(args.configs()?).collect();
    // The runs are independent (own devices, own virtual clock, same seed), so they run on as
    // many threads as there are cores; the report keeps the order of --configs.
    let multi = indicatif::MultiProgress::new();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(configs.len())
        .max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Result<BenchSummary, CliError>>>> = configs
        .iter()
        .map(|_| std::sync::Mutex::new(None))
        .collect();
    let title_of_all = configs.first().map(|(_, c)| title(c)).unwrap_or_default();
    // With --out, the report of the runs finished so far is saved as each one finishes, so an
    // interrupted comparison keeps them.
    let saving = std::sync::Mutex::new(());
    let save_finished = || {
        let Some(path) = &args.output.out else {
            return;
        };
        let _one_at_a_time = saving.lock().unwrap_or_else(|p| p.into_inner());
        let runs: Vec<BenchSummary> = results
            .iter()
            .filter_map(|r| match &*r.lock().unwrap_or_else(|p| p.into_inner()) {
                Some(Ok(s)) => Some(s.clone()),
                _ => None,
            })
            .collect();
        let partial = BenchReport {
            title: title_of_all.clone(),
            runs,
        };
        if let Err(e) = write_json(path, &partial) {
            eprintln!("warning: could not save the finished runs: {e}");
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((preset, cfg)) = configs.get(i) else {
                    break;
                };
                let mut obs = Bar {
                    bar: multi.add(bar(show_progress)),
                    label: preset.name().to_string(),
                };
                let r = vtime::run_logged(preset.name(), cfg, &mut obs)
                    .map_err(|e| CliError::Run(format!("{}: {e}", preset.name())))
                    .and_then(|(s, log)| match &args.hdr {
                        Some(dir) => {
                            super::hdr::write(dir, "wafer bench ycsb", &s.name, &log).map(|_| s)
                        }
                        None => Ok(s),
                    });
                obs.bar.finish_and_clear();
                *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                save_finished();
            });
        }
    });
    let mut runs: Vec<BenchSummary> = Vec::new();
    for r in results {
        let r = r.into_inner().unwrap_or_else(|p| p.into_inner());
        runs.push(r.expect("every configuration ran")?);
    }
    for s in &runs {
        super::warn_short_run(
            &s.name,
            "ops",
            s.run.ops,
            s.run.db_issued_bytes,
            s.config.data_ssd.logical_bytes,
        );
    }
    Ok(BenchReport {
        title: title_of_all,
        runs,
    })
}

/// `a/b.csv` -> `a/b-series.csv`.
pub fn series_csv_path(p: &std::path::Path) -> PathBuf {
    super::csv::sibling(p, "series")
}

/// The summaries (one row per configuration and phase) and the series as CSV.
fn write_csv(path: &std::path::Path, r: &BenchReport) -> Result<(), CliError> {
    let quote = |s: &str| super::csv::cell(&serde_json::Value::String(s.to_string()));
    let mut summary = Vec::new();
    let mut series = Vec::new();
    for s in &r.runs {
        for (phase, w) in [("load", &s.load), ("run", &s.run), ("steady", &s.steady)] {
            summary.push((vec![quote(&s.name), quote(phase)], w));
        }
        for (i, row) in s.series.iter().enumerate() {
            series.push((vec![quote(&s.name), i.to_string()], row));
        }
    }
    let write = |p: &std::path::Path, text: String| {
        std::fs::write(p, text)
            .map_err(|e| CliError::Run(format!("cannot write {}: {e}", p.display())))
    };
    write(
        path,
        super::csv::table(&["configuration", "phase"], &summary),
    )?;
    write(
        &series_csv_path(path),
        super::csv::table(&["configuration", "interval"], &series),
    )
}

/// The side-by-side table (paper 002 Table 1 shape), steady-state window.
pub fn print_table(r: &BenchReport) {
    println!("{}\n", r.title);
    println!(
        "{:<16} {:>10} {:>8} {:>8} {:>9} {:>12} {:>13} {:>9}",
        "configuration",
        "OPS",
        "DB WAF",
        "SSD WAF",
        "total WAF",
        "logical B/op",
        "physical B/op",
        "hit ratio"
    );
    for s in &r.runs {
        let w = &s.steady;
        println!(
            "{:<16} {:>10.0} {:>8.2} {:>8.2} {:>9.2} {:>12.0} {:>13.0} {:>9.3}",
            s.name,
            w.ops_per_s,
            w.db_waf,
            w.ssd_waf,
            w.total_waf,
            w.logical_bytes_per_op,
            w.physical_bytes_per_op,
            w.hit_ratio
        );
    }
    println!(
        "\nsteady state = the last full interval of each run (a short final interval is merged into the one before); OPS in virtual time (flashsim timing model)."
    );
    for s in &r.runs {
        for line in s.steady_state.lines() {
            println!("  {:<16} {line}", s.name);
        }
    }
    for s in &r.runs {
        println!(
            "  {:<16} {}: {} records ({:.0}% fill), {} ops, p99 latency {:.0} us",
            s.name,
            s.description,
            s.records,
            s.fill_achieved * 100.0,
            s.run.ops,
            s.latency.p99_ns as f64 / 1e3
        );
    }
    super::ladder::print_ladder(r);
}

fn write_json(path: &PathBuf, r: &BenchReport) -> Result<(), CliError> {
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)
                .map_err(|e| CliError::Run(format!("cannot create {}: {e}", dir.display())))?;
        }
    }
    let json = serde_json::to_string_pretty(r).map_err(|e| CliError::Run(e.to_string()))?;
    // Written whole or not at all (a partial report is rewritten as runs finish, and Ctrl-C may
    // come at any time): a temporary file beside it, renamed over it.
    let tmp = path.with_extension("json.partial");
    let err = |e: std::io::Error| CliError::Run(format!("cannot write {}: {e}", path.display()));
    std::fs::write(&tmp, format!("{json}\n")).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}

pub fn main(cmd: &BenchCommand) -> Result<(), CliError> {
    match cmd {
        BenchCommand::Ycsb(args) => {
            if args.output.dump_config {
                return super::print_first_config(args.configs()?);
            }
            if let Some(p) = &args.output.out {
                super::check_writable("--out", p)?;
            }
            if let Some(p) = &args.series {
                super::check_writable("--series", p)?;
            }
            if let Some(p) = &args.csv {
                super::check_writable("--csv", p)?;
                super::check_writable("--csv", &series_csv_path(p))?;
            }
            if let Some(d) = &args.hdr {
                super::hdr::prepare(d)?;
            }
            let show = std::io::stderr().is_terminal() && !args.output.json;
            let r = run_ycsb(args, show)?;
            if let Some(p) = &args.output.out {
                write_json(p, &r)?;
            }
            if let Some(p) = &args.series {
                write_series(p, &r)?;
            }
            if let Some(p) = &args.csv {
                write_csv(p, &r)?;
            }
            if args.output.json {
                let json =
                    serde_json::to_string_pretty(&r).map_err(|e| CliError::Run(e.to_string()))?;
                super::human::print_stdout(&json);
            } else {
                print_table(&r);
            }
            Ok(())
        }
        BenchCommand::Wall(args) => {
            let loads = args
                .workloads
                .iter()
                .any(|w| matches!(w, WallWorkload::Load));
            if args.load_batch.is_some() && !loads {
                return Err(CliError::Usage(
                    "--load-batch applies to the `load` workload, and --workloads has none".into(),
                ));
            }
            let load_batch = args.load_batch.unwrap_or(1);
            let scans = args
                .workloads
                .iter()
                .any(|w| matches!(w, WallWorkload::Ycsb(YcsbWorkload::E)));
            if args.max_scan_len.is_some() && !scans {
                return Err(CliError::Usage(
                    "--max-scan-len applies to workload `e`, and --workloads has none".into(),
                ));
            }
            let mut results = Vec::new();
            for &w in &args.workloads {
                for &threads in &args.threads {
                    let (workload, load) = match w {
                        WallWorkload::Load => {
                            (YcsbWorkload::C, Some(WallLoad { batch: load_batch }))
                        }
                        WallWorkload::Ycsb(w) => (w, None),
                    };
                    let cfg = WallConfig {
                        ycsb: YcsbConfig {
                            workload,
                            record_count: args.records,
                            value_bytes: args.value_size,
                            seed: args.seed,
                            max_scan_len: args
                                .max_scan_len
                                .map_or(YcsbConfig::default().max_scan_len, |n| n as usize),
                            ..YcsbConfig::default()
                        },
                        dir: args.dir.clone(),
                        threads,
                        duration_ms: (args.seconds * 1000.0) as u64,
                        read_txn: args.read_txn,
                        buffered_commits: args.buffered_commits,
                        background_ms: args.background_ms,
                        checkpoint_interval_ms: args.checkpoint_interval_ms,
                        buffer_mib: args.buffer_mib,
                        out_of_place: args.out_of_place,
                        journal: args.journal,
                        load,
                        cleaner_clean_fraction: args.cleaner_clean_fraction,
                        leaf_splits: args.leaf_splits.into(),
                        flushless: args.flushless,
                    };
                    let r = wall::run(&cfg).map_err(|e| CliError::Run(e.to_string()))?;
                    if !args.json {
                        let name = match w {
                            WallWorkload::Load => format!("load ({load_batch} a txn)"),
                            WallWorkload::Ycsb(w) => format!("YCSB-{w}"),
                        };
                        println!(
                            "{name} {threads} thread(s): {:.0} ops/s ({} ops in {:.2} s, hit ratio {:.3}, {} aborts), latency p50 {:.1} us p99 {:.1} us p99.9 {:.1} us; latch shared {} / given up {} ({} scans resumed), {} splits beside others, {} checkpoints ({} the journal's own), {} misses ({} read unlatched, {} reserved shared), {} written ahead, {} cleaner writes, core latch exclusive {} times",
                            r.ops_per_s, r.ops, r.seconds, r.hit_ratio, r.aborts,
                            r.latency.p50_ns as f64 / 1e3, r.latency.p99_ns as f64 / 1e3,
                            r.latency.p999_ns as f64 / 1e3,
                            r.shared_ops, r.shared_retries, r.scans_resumed, r.splits_beside,
                            r.checkpoints, r.journal_checkpoints, r.misses,
                            r.unlatched_reads, r.reserved_shared, r.written_ahead, r.cleaner_writes,
                            r.exclusive_latches
                        );
                    }
                    results.push(r);
                }
            }
            if args.json {
                let json = serde_json::to_string_pretty(&results)
                    .map_err(|e| CliError::Run(e.to_string()))?;
                super::human::print_stdout(&json);
            }
            Ok(())
        }
        BenchCommand::Device(args) => super::device::main(args),
        BenchCommand::Tpcc(args) => super::tpcc::main(args),
        BenchCommand::Flushless(args) => super::flushless::main(args),
        BenchCommand::Query(args) => super::query::main(args),
        BenchCommand::Tpcb(args) => super::tpcb::main(args),
        BenchCommand::Mvcc(args) => super::mvcc::main(args),
        BenchCommand::Checkin(args) => super::checkin::main(args),
    }
}

/// Writes every run's series as JSON lines: `{"run": name, ...row}`.
fn write_series(path: &PathBuf, r: &BenchReport) -> Result<(), CliError> {
    let mut out = String::new();
    for run in &r.runs {
        for row in &run.series {
            let mut v = serde_json::to_value(row).map_err(|e| CliError::Run(e.to_string()))?;
            if let serde_json::Value::Object(m) = &mut v {
                m.insert("run".into(), serde_json::Value::String(run.name.clone()));
            }
            out.push_str(&v.to_string());
            out.push('\n');
        }
    }
    std::fs::write(path, out)
        .map_err(|e| CliError::Run(format!("cannot write {}: {e}", path.display())))
}

/// Writes the report JSON (for `wafer demo`).
pub fn save(path: &PathBuf, r: &BenchReport) -> Result<(), CliError> {
    write_json(path, r)
}
