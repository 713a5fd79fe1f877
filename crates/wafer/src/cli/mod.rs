//! The `wafer` command line: argument definitions and one module per subcommand.

pub mod bench;
pub mod demo;
pub mod device;
pub mod human;
pub mod report;
pub mod sim;
pub mod size;
pub mod torture;
pub mod tpcc;

use clap::{Parser, Subcommand};

/// Reads a TOML configuration file into `T`; an unreadable or malformed file is a usage error
/// naming the file.
pub fn read_toml<T: serde::de::DeserializeOwned>(path: &std::path::Path) -> Result<T, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))?;
    toml::from_str(&text)
        .map_err(|e| CliError::Usage(format!("bad config file {}: {e}", path.display())))
}

/// Output and configuration-file options shared by the engine benchmarks.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RunOutput {
    /// Print the summaries as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write the benchmark report (input of `wafer report`) here.
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// A TOML file holding a full benchmark configuration (`--dump-config` prints one). It
    /// replaces the workload and device flags; the preset of each run still comes from --configs.
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// Print the configuration of the first run as TOML and exit.
    #[arg(long)]
    pub dump_config: bool,
}

/// Errors of a subcommand, by exit code.
#[derive(Debug)]
pub enum CliError {
    /// Bad arguments or configuration (exit code 2).
    Usage(String),
    /// The run itself failed (exit code 1).
    Run(String),
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Run(_) => 1,
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Run(m) => f.write_str(m),
        }
    }
}

/// wafer: a flash-aware storage engine and flash SSD simulator.
#[derive(Parser, Debug)]
#[command(name = "wafer", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Compare every write path of the engine on YCSB-A over a simulated SSD (about two minutes)
    Demo(demo::DemoArgs),
    /// Benchmarks: YCSB and TPC-C on the engine (virtual time), wall-clock engine throughput, device-only
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Run a synthetic workload on a simulated flash SSD (flashsim) and report write
    /// amplification, GC, latency and wear
    Sim(Box<sim::SimArgs>),
    /// Render benchmark results (the JSON of `wafer bench`) as one self-contained HTML page with
    /// comparison tables and charts
    Report(report::ReportArgs),
    /// The engine's randomized torture suite: power cuts (also during recovery), damaged
    /// databases and concurrent transfers, checked against an oracle; deterministic by seed
    Torture(torture::TortureArgs),
}

/// Runs the parsed command line.
pub fn dispatch(cli: &Cli) -> Result<(), CliError> {
    match &cli.command {
        Command::Sim(args) => sim::main(args),
        Command::Demo(args) => demo::main(args),
        Command::Report(args) => report::main(args),
        Command::Bench(cmd) => bench::main(cmd),
        Command::Torture(args) => torture::main(args),
    }
}
