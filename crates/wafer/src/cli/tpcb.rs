//! `wafer bench tpcb`: paper 003's commit-time experiments (section 4, Tables 2-3, Figure 3):
//! TPC-B with the data cached and the log on the simulated disk or flash SSD, by the number of
//! clients, in virtual time with group commit.

use super::CliError;
use std::fmt::Write as _;
use std::path::PathBuf;
use wafer_workloads::bench::vtime::LogDevice;
use wafer_workloads::tpcb::{run_vtime, TpcbBenchConfig, TpcbConfig, TpcbSummary};

/// Log devices.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogArg {
    /// The paper's 7200 rpm disk (Seagate Barracuda 7200.10), write-through: a forced log write
    /// waits for the platter.
    Disk,
    /// The flash SSD of --flash-drive.
    Flash,
}

/// Options of `wafer bench tpcb`.
#[derive(clap::Args, Debug, Clone)]
pub struct TpcbArgs {
    /// Concurrent clients, comma separated: one run per count and log device (paper 003 Table 2
    /// and Figure 3: 4 to 64).
    #[arg(long, value_delimiter = ',', default_value = "4,8,16,20,32,64")]
    pub clients: Vec<u32>,
    /// Log devices, comma separated.
    #[arg(
        long = "log-device",
        value_enum,
        value_delimiter = ',',
        default_value = "disk,flash"
    )]
    pub log_device: Vec<LogArg>,
    /// The flash SSD of the log: a drive preset of `wafer sim --drive` (mcaqe32g: the paper's
    /// 2008 PATA SLC SSD).
    #[arg(long, default_value = "mcaqe32g", value_parser = super::sim::parse_drive)]
    pub flash_drive: flashsim::Drive,
    /// Pages of program work each die of the flash log buffers before a write waits for flash.
    /// 0 (the default here): a forced log write waits for its programs, as on the paper's drive,
    /// which has no power-safe cache (its Table 3: 1.3 ms for a 30-sector log write); 4 is the
    /// drive preset's buffer, which acknowledges a write once the controller holds it.
    #[arg(long, default_value_t = 0)]
    pub flash_write_buffer_pages: u32,
    /// Branches (TPC-B's scale; 10 tellers each). Every transaction updates its branch, so the
    /// branches bound how many commits can wait on the log at once. 45: the paper's 450 MB
    /// database at TPC-B's 100,000 accounts of 100 bytes a branch (the paper does not say).
    #[arg(long, default_value_t = 45, value_parser = clap::value_parser!(u32).range(1..))]
    pub branches: u32,
    /// Accounts per branch (TPC-B: 100,000; fewer load faster and change little, as the data
    /// is cached and accounts rarely conflict).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub accounts_per_branch: u32,
    /// Transactions per run.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub txns: u64,
    /// Simulated cores (the paper's server: a dual-core).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub cores: u32,
    /// CPU time of a transaction, virtual microseconds.
    #[arg(long, default_value_t = 400)]
    pub cpu_us: u64,
    /// Seed of the clients' choices.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Write every run's summary here (JSON).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Runs `wafer bench tpcb`.
pub fn main(args: &TpcbArgs) -> Result<(), CliError> {
    let tpcb = TpcbConfig {
        branches: args.branches,
        tellers_per_branch: 10,
        accounts_per_branch: args.accounts_per_branch,
        seed: args.seed,
    };
    tpcb.validate().map_err(CliError::Usage)?;
    if args.clients.is_empty() || args.clients.contains(&0) {
        return Err(CliError::Usage("--clients: counts must be positive".into()));
    }
    let started = std::time::Instant::now();
    let mut runs = Vec::new();
    for &dev in &args.log_device {
        for &clients in &args.clients {
            let log = match dev {
                LogArg::Disk => {
                    LogDevice::Disk(flashsim::HddConfig::barracuda_7200_10().with_write_cache(0))
                }
                LogArg::Flash => {
                    let mut c = args.flash_drive.config(256 << 20, 0.1);
                    c.data = flashsim::DataMode::Memory;
                    c.timing.enabled = true;
                    c.timing.write_buffer_pages_per_die = args.flash_write_buffer_pages;
                    LogDevice::Ssd(c)
                }
            };
            let mut cfg =
                TpcbBenchConfig::new(tpcb.clone(), log, clients, args.txns, args.cpu_us * 1000);
            cfg.run.cores = args.cores;
            let s = run_vtime(&cfg).map_err(|e| CliError::Run(e.to_string()))?;
            eprintln!(
                "[{:>4.0}s] log {:<5} {clients:>3} clients: {:>7.0} TPS, CPU {:>3.0}%, log write \
                 {:>5.1} sectors in {:>5.2} ms, {:>5.1} txns a write",
                started.elapsed().as_secs_f64(),
                s.log_device,
                s.tps,
                s.cpu_utilization * 100.0,
                s.log_write_sectors,
                s.log_write_ms,
                s.txns_per_log_write
            );
            runs.push(s);
        }
    }
    super::human::print_stdout(&table(&runs, args));
    if let Some(path) = &args.out {
        let text = serde_json::to_string_pretty(&runs)
            .map_err(|e| CliError::Run(format!("encoding the results: {e}")))?;
        std::fs::write(path, text)
            .map_err(|e| CliError::Run(format!("writing {}: {e}", path.display())))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn table(runs: &[TpcbSummary], args: &TpcbArgs) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n## TPC-B commit time (paper 003 Tables 2-3, Figure 3): {} branches, {} accounts each, \
         {} cores x {} us a transaction, {} transactions a run\n",
        args.branches, args.accounts_per_branch, args.cores, args.cpu_us, args.txns
    );
    let _ = writeln!(
        out,
        "| log | clients | TPS | CPU | log write (sectors) | log write (ms) | txns a write | \
         conflicts | attempt latency mean (ms) |\n|---|---|---|---|---|---|---|---|---|"
    );
    for s in runs {
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {:.0}% | {:.1} | {:.2} | {:.1} | {} | {:.2} |",
            s.log_device,
            s.clients,
            s.tps,
            s.cpu_utilization * 100.0,
            s.log_write_sectors,
            s.log_write_ms,
            s.txns_per_log_write,
            s.conflicts,
            s.latency.mean_ns / 1e6
        );
    }
    let find = |dev: &str, c: u32| runs.iter().find(|s| s.log_device == dev && s.clients == c);
    let both: Vec<String> = args
        .clients
        .iter()
        .filter_map(|&c| match (find("disk", c), find("flash", c)) {
            (Some(d), Some(f)) => Some(format!("{c} clients {:.2}x", f.tps / d.tps.max(1e-9))),
            _ => None,
        })
        .collect();
    if !both.is_empty() {
        let _ = writeln!(out, "\nflash / disk TPS: {}", both.join(", "));
    }
    out
}
