//! `wafer demo`, the README's first command: YCSB-A (zipf 0.8) loaded to 90% of a simulated data
//! SSD, buffer pool 10% of the data, run to steady state for in-place writes, plain out-of-place
//! writes and out-of-place writes with every optimization of paper 002, side by side with the
//! same seed; prints the comparison table and writes the JSON report and its HTML rendering.

use super::bench::{print_table, run_ycsb, save, YcsbArgs};
use super::CliError;
use std::io::IsTerminal;
use std::path::PathBuf;
use wafer_workloads::bench::Preset;

/// Options of `wafer demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Logical size of the simulated data SSD (512 MiB keeps the demo near one minute; the
    /// results page uses 1 GiB).
    #[arg(long, default_value = "512MiB", value_parser = super::size::parse_size)]
    pub data_size: u64,
    /// Host writes to run after the load, as a multiple of the data device (steady state).
    #[arg(long, default_value_t = 4.0)]
    pub capacity_multiple: f64,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Write-path configurations (see `wafer bench ycsb --help`); the default is the baseline,
    /// plain out-of-place writes and every optimization of paper 002.
    #[arg(long, default_value = "in-place,oop,oop-all", value_delimiter = ',')]
    pub configs: Vec<Preset>,
    /// Directory for report.json and report.html.
    #[arg(long, default_value = "out/demo")]
    pub out: PathBuf,
}

pub fn main(args: &DemoArgs) -> Result<(), CliError> {
    let ycsb = YcsbArgs {
        configs: args.configs.clone(),
        data_size: Some(args.data_size),
        capacity_multiple: Some(args.capacity_multiple),
        seed: Some(args.seed),
        ..YcsbArgs::default()
    };
    // The report goes here: find out now, not after two minutes of simulation.
    let json = args.out.join("report.json");
    let html = args.out.join("report.html");
    super::check_writable("--out", &json)?;
    super::check_writable("--out", &html)?;
    println!("wafer demo: write paths side by side on the same YCSB-A workload, in virtual time\n");
    let started = std::time::Instant::now();
    let report = run_ycsb(&ycsb, std::io::stderr().is_terminal())?;
    print_table(&report);
    save(&json, &report)?;
    super::report::write_html(&report, &html)?;
    println!(
        "\nreport: {} (data: {}); {:.0} s wall time",
        html.display(),
        json.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
