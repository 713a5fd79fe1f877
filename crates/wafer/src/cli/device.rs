//! `wafer bench device`: runs one skewed write workload on the embedded
//! simulated SSD under several device configurations, side by side with the same seed, and prints
//! a comparison table (SSD WAF, GC, virtual throughput and latency, wear).
//! It shows how the device alone reacts to write patterns (GC policy, FDP placement, ZNS); the
//! engine's write paths are compared by `wafer bench ycsb` and `wafer demo`.

use super::CliError;
use flashsim::{FdpConfig, GcPolicy, Mode, SsdConfig, ZnsConfig};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};
use std::io::IsTerminal;
use std::path::PathBuf;
use wafer_workloads::simrun::{run, RunParams, RunSummary};
use wafer_workloads::synthetic::{Pattern, Workload};
use wafer_workloads::ProgressFn;

/// Arguments of `wafer bench device`.
#[derive(clap::Args, Debug)]
pub struct DeviceArgs {
    /// Logical capacity of the simulated SSD in GiB.
    #[arg(long, default_value_t = 32)]
    pub gib: u64,
    /// Host writes after the sequential fill, in multiples of the logical capacity.
    #[arg(long, default_value_t = 4.0)]
    pub capacity_multiple: f64,
    /// Seed of the workload (the same for every configuration).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Directory for the JSON summaries (one per configuration, as `wafer sim --json` writes)
    /// and the comparison table (comparison.json, the rows of --json); `wafer report DIR/*.json`
    /// renders them all.
    #[arg(long, default_value = "out/device")]
    pub out: PathBuf,
    /// Print the comparison as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One row of the comparison (the `--json` output and `comparison.json`; `wafer report` reads
/// both).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceRow {
    /// The configuration.
    pub name: String,
    /// What it is, in a few words.
    pub what: String,
    /// SSD WAF of the last full interval (steady state) and of the whole measured run.
    pub waf_steady: f64,
    pub waf_cumulative: f64,
    /// GC victims collected and erase units erased during the measured run.
    pub gc_runs: u64,
    pub eu_erases: u64,
    /// Write commands per second in thousands, virtual time (None without the timing model).
    pub write_kiops_virtual: Option<f64>,
    /// Write latency percentiles, virtual microseconds.
    pub write_latency_us_p99: f64,
    pub write_latency_us_p9999: f64,
    /// Drive writes per day the flash sustains for 5 years at the observed SSD WAF.
    pub dwpd_rated_5y: f64,
}

impl DeviceRow {
    /// The row of a finished run.
    pub fn new(name: &str, what: &str, s: &RunSummary) -> DeviceRow {
        DeviceRow {
            name: name.to_string(),
            what: what.to_string(),
            waf_steady: s.waf_steady,
            waf_cumulative: s.waf_cumulative,
            gc_runs: s.counters.gc_runs - s.counters_run_start.gc_runs,
            eu_erases: s.counters.eu_erases - s.counters_run_start.eu_erases,
            write_kiops_virtual: s.run.ops_per_s.map(|o| o / 1e3),
            write_latency_us_p99: s.write_latency.p99_ns as f64 / 1e3,
            write_latency_us_p9999: s.write_latency.p9999_ns as f64 / 1e3,
            dwpd_rated_5y: s.wear.dwpd_rated_5y,
        }
    }
}

struct Case {
    name: &'static str,
    what: &'static str,
    pattern: Pattern,
    policy: GcPolicy,
    mode: Mode,
}

/// The configurations compared: the same 90/10 hot/cold 4 KiB random writes (the hot 10% of the
/// space takes 90% of writes) except the uniform reference.
fn cases() -> Vec<Case> {
    let hotcold = Pattern::HotCold { r: 0.9, f: 0.1 };
    vec![
        Case {
            name: "uniform/greedy",
            what: "reference: uniform random writes, greedy GC",
            pattern: Pattern::Uniform,
            policy: GcPolicy::Greedy,
            mode: Mode::Conventional,
        },
        Case {
            name: "hotcold/greedy",
            what: "hot and cold mixed in one stream, greedy GC",
            pattern: hotcold,
            policy: GcPolicy::Greedy,
            mode: Mode::Conventional,
        },
        Case {
            name: "hotcold/cost-benefit",
            what: "mixed stream, cost-benefit GC (age-aware)",
            pattern: hotcold,
            policy: GcPolicy::CostBenefit,
            mode: Mode::Conventional,
        },
        Case {
            name: "hotcold/fdp",
            what: "FDP, 10 handles by address tenth: hot data on its own handle",
            pattern: hotcold,
            policy: GcPolicy::Greedy,
            mode: Mode::Fdp(FdpConfig { handles: 10 }),
        },
        Case {
            name: "zns/append",
            what: "ZNS, host appends and resets whole zones (host GC not counted here)",
            pattern: hotcold,
            policy: GcPolicy::Greedy,
            mode: Mode::Zns(ZnsConfig {
                zone_eus: 1,
                max_open_zones: 4,
                max_active_zones: 4,
            }),
        },
    ]
}

fn device(gib: u64, case: &Case) -> SsdConfig {
    let mut cfg = SsdConfig::datacenter(gib << 30, 0.10);
    cfg.gc.policy = case.policy;
    cfg.mode = case.mode.clone();
    cfg.fit_reserve();
    cfg
}

/// Runs `wafer bench device`.
pub fn main(args: &DeviceArgs) -> Result<(), CliError> {
    if args.gib == 0 || args.gib > 4096 {
        return Err(CliError::Usage("--gib must be in 1..=4096".into()));
    }
    if !(args.capacity_multiple > 0.0 && args.capacity_multiple <= 100.0) {
        return Err(CliError::Usage(
            "--capacity-multiple must be in (0, 100]".into(),
        ));
    }
    std::fs::create_dir_all(&args.out)
        .map_err(|e| CliError::Run(format!("cannot create {}: {e}", args.out.display())))?;
    let cases = cases();
    let params = RunParams {
        capacity_multiple: args.capacity_multiple,
        ..RunParams::default()
    };
    let per_case = (1.0 + args.capacity_multiple) * (args.gib << 30) as f64;
    let total = (per_case * cases.len() as f64) as u64;
    let bar = if std::io::stderr().is_terminal() && !args.json {
        let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template(
                "{msg:22} [{bar:30}] {percent:>3}% host data simulated, ETA {eta}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    if !args.json {
        println!(
            "wafer bench device: {} configurations on a simulated {} GiB datacenter TLC SSD (spare factor 0.10),",
            cases.len(),
            args.gib
        );
        println!(
            "sequential fill, then {} x capacity of 4 KiB random writes at QD 32 in virtual time, seed {}.\n",
            args.capacity_multiple, args.seed
        );
    }
    let mut rows = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        bar.set_message(case.name);
        let workload = Workload {
            pattern: case.pattern,
            seed: args.seed,
            ..Workload::default()
        };
        let base = (per_case * i as f64) as u64;
        let mut obs = ProgressFn(|done: u64, _total: u64| bar.set_position(base + done));
        let s: RunSummary = run(device(args.gib, case), &workload, &params, &mut obs)
            .map_err(|e| CliError::Run(format!("{}: {e}", case.name)))?;
        let json = serde_json::to_string_pretty(&s).map_err(|e| CliError::Run(e.to_string()))?;
        let path = args
            .out
            .join(format!("{}.json", case.name.replace('/', "-")));
        std::fs::write(&path, format!("{json}\n"))
            .map_err(|e| CliError::Run(format!("cannot write {}: {e}", path.display())))?;
        rows.push(DeviceRow::new(case.name, case.what, &s));
    }
    bar.finish_and_clear();
    let json = serde_json::to_string_pretty(&rows).map_err(|e| CliError::Run(e.to_string()))?;
    let path = args.out.join("comparison.json");
    std::fs::write(&path, format!("{json}\n"))
        .map_err(|e| CliError::Run(format!("cannot write {}: {e}", path.display())))?;
    if args.json {
        super::human::print_stdout(&json);
        return Ok(());
    }
    println!(
        "{:<22} {:>9} {:>8} {:>8} {:>8} {:>10} {:>10} {:>12} {:>9}",
        "configuration",
        "SSD WAF",
        "WAF cum",
        "GC runs",
        "erases",
        "write kIOPS",
        "p99 us",
        "p99.99 us",
        "DWPD 5y"
    );
    for r in &rows {
        println!(
            "{:<22} {:>9.3} {:>8.3} {:>8} {:>8} {:>10.1} {:>10.0} {:>12.0} {:>9.2}",
            r.name,
            r.waf_steady,
            r.waf_cumulative,
            r.gc_runs,
            r.eu_erases,
            r.write_kiops_virtual.unwrap_or(0.0),
            r.write_latency_us_p99,
            r.write_latency_us_p9999,
            r.dwpd_rated_5y
        );
    }
    println!();
    for r in &rows {
        println!("  {:<22} {}", r.name, r.what);
    }
    println!(
        "\nSSD WAF is over the last interval (steady state); kIOPS and latency are virtual (flashsim timing model)."
    );
    println!(
        "JSON summaries and comparison.json: {}/ (`wafer report {}/*.json` renders them)",
        args.out.display(),
        args.out.display()
    );
    Ok(())
}
