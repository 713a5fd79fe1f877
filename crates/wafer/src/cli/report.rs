//! `wafer report`: renders result files (the JSON of `wafer bench ycsb`/`tpcc`, `wafer demo`,
//! `wafer sim`, `wafer bench device` and `wafer bench query`) as one self-contained HTML page with
//! comparison tables and charts. [`write_html`] does the same for a report made in process (`wafer demo`).

use super::CliError;
use crate::report::{self, Input, ReportError};
use std::path::{Path, PathBuf};
use wafer_workloads::bench::BenchReport;

/// Arguments of `wafer report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Result files: the JSON of `wafer bench ycsb --out`, `wafer bench tpcc --out` (or
    /// --tpcc-out), `wafer demo`, `wafer sim --json`/--out, `wafer bench device` (its
    /// per-configuration files and comparison.json), or `wafer bench query --out`. Their runs
    /// are compared together: engine benchmarks of one workload per page, device results
    /// (simulations and device comparisons, each in its own section), or one query result (one
    /// file per page); other mixes are refused.
    #[arg(value_name = "INPUT.json", required = true)]
    pub inputs: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(short, long, default_value = "report.html")]
    pub output: PathBuf,
    /// Title of the page (default: the titles of the inputs).
    #[arg(long)]
    pub title: Option<String>,
}

/// Runs `wafer report`.
pub fn main(args: &ReportArgs) -> Result<(), CliError> {
    let inputs = args
        .inputs
        .iter()
        .map(|p| report::load(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let page = report::render(&inputs, args.title.as_deref()).map_err(|e| match e {
        ReportError::Chart(m) => CliError::Run(m),
        other => CliError::Usage(other.to_string()),
    })?;
    write_page(&page, &args.output)?;
    let runs: usize = inputs.iter().map(|i| i.content.count()).sum();
    println!(
        "wrote {} ({runs} run{})",
        args.output.display(),
        if runs == 1 { "" } else { "s" }
    );
    Ok(())
}

/// Renders `report` (made in this process) as the HTML page of `wafer report`, to `path`.
pub fn write_html(report: &BenchReport, path: &Path) -> Result<(), CliError> {
    let inputs = [Input::bench(report.clone())];
    let page = report::render(&inputs, None).map_err(|e| CliError::Run(e.to_string()))?;
    write_page(&page, path)
}

fn write_page(page: &str, path: &Path) -> Result<(), CliError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            CliError::Run(format!("cannot create directory {}: {e}", dir.display()))
        })?;
    }
    std::fs::write(path, page)
        .map_err(|e| CliError::Run(format!("cannot write {}: {e}", path.display())))
}
