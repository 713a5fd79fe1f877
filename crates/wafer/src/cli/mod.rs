//! The `wafer` command line: argument definitions and one module per subcommand.

pub mod bench;
pub mod demo;
pub mod device;
pub mod human;
pub mod report;
pub mod sim;
pub mod size;
pub mod tpcc;

use clap::{Parser, Subcommand};

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
}

/// Runs the parsed command line.
pub fn dispatch(cli: &Cli) -> Result<(), CliError> {
    match &cli.command {
        Command::Sim(args) => sim::main(args),
        Command::Demo(args) => demo::main(args),
        Command::Report(args) => report::main(args),
        Command::Bench(cmd) => bench::main(cmd),
    }
}
