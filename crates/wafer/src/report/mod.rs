//! The HTML report of benchmark results: one self-contained page (inline CSS and SVG, no scripts,
//! no external resources) comparing the runs of one or more `wafer bench` result files.
//!
//! * [`load`] reads and checks one result file ([`BenchReport`], or a single [`BenchSummary`]);
//! * [`figures`] turns the runs into the data of each chart (pure, tested here);
//! * [`charts`] draws SVG charts; [`html`] lays out the page.

pub mod charts;
pub mod figures;
mod html;

use std::fmt;
use std::path::{Path, PathBuf};
use wafer_workloads::bench::{BenchReport, BenchSummary};

/// A result file, read and checked (or a report made in this process).
pub struct Input {
    /// Where the report came from, as shown on the page (a file name; empty when made in
    /// process).
    pub source: String,
    pub report: BenchReport,
}

/// Why a report could not be made.
#[derive(Debug)]
pub enum ReportError {
    /// The file could not be read.
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not JSON.
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// The file is JSON, but not a benchmark result.
    Schema {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// None of the files holds a run.
    NoRuns,
    /// The files hold runs of different workloads (one comparison table cannot mix them).
    Mixed(String),
    /// The file is another wafer result this page does not render.
    Unsupported { path: PathBuf, what: &'static str },
    /// A chart could not be drawn.
    Chart(String),
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            ReportError::Json { path, source } => {
                write!(f, "{} is not valid JSON: {source}", path.display())
            }
            ReportError::Schema { path, source } => write!(
                f,
                "{} is not a wafer benchmark result (expected the JSON written by `wafer bench`, \
                 an object with \"title\" and \"runs\"): {source}",
                path.display()
            ),
            ReportError::NoRuns => f.write_str("the input files contain no benchmark runs"),
            ReportError::Mixed(m) => write!(
                f,
                "the inputs hold runs of different workloads ({m}); their numbers are not \
                 comparable in one table: make one report per workload"
            ),
            ReportError::Unsupported { path, what } => write!(
                f,
                "{} is {what}, which `wafer report` does not render (it renders the JSON of \
                 `wafer bench ycsb` and `wafer bench tpcc --out`)",
                path.display()
            ),
            ReportError::Chart(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ReportError {}

/// Reads one result file: a [`BenchReport`], or a lone [`BenchSummary`] (one run).
pub fn load(path: &Path) -> Result<Input, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| ReportError::Json {
            path: path.to_path_buf(),
            source,
        })?;
    let source_value = value.clone();
    let report = match serde_json::from_value::<BenchReport>(value.clone()) {
        Ok(r) => r,
        Err(source) => match serde_json::from_value::<BenchSummary>(value) {
            Ok(run) => BenchReport {
                title: run.name.clone(),
                runs: vec![run],
            },
            Err(_) => {
                let obj = |k: &str| source_value.get(k).is_some();
                let what = if obj("ssd") && obj("workload") && obj("rows") {
                    Some("the result of `wafer sim` (or of one `wafer bench device` case)")
                } else if source_value.is_array() {
                    Some("a list (the TPC-C detail `wafer bench tpcc --tpcc-out` writes)")
                } else {
                    None
                };
                return Err(match what {
                    Some(what) => ReportError::Unsupported {
                        path: path.to_path_buf(),
                        what,
                    },
                    None => ReportError::Schema {
                        path: path.to_path_buf(),
                        source,
                    },
                });
            }
        },
    };
    Ok(Input {
        source: path.display().to_string(),
        report,
    })
}

/// One run as the page shows it.
pub struct RunView<'a> {
    /// Unique within the page (the run name, made unique if two inputs share one).
    pub label: String,
    pub color: plotters::style::RGBColor,
    pub source: &'a str,
    pub run: &'a BenchSummary,
}

/// The runs of all inputs in order, with unique labels and a colour each.
pub fn runs(inputs: &[Input]) -> Vec<RunView<'_>> {
    let all: Vec<(&str, &BenchSummary)> = inputs
        .iter()
        .flat_map(|i| i.report.runs.iter().map(move |r| (i.source.as_str(), r)))
        .collect();
    let mut seen: Vec<String> = Vec::new();
    all.iter()
        .enumerate()
        .map(|(i, (source, run))| {
            let base = if run.name.trim().is_empty() {
                format!("run {}", i + 1)
            } else {
                run.name.clone()
            };
            let mut label = base.clone();
            let mut k = 2;
            while seen.contains(&label) {
                label = format!("{base} #{k}");
                k += 1;
            }
            seen.push(label.clone());
            RunView {
                label,
                color: charts::run_color(i),
                source,
                run,
            }
        })
        .collect()
}

/// Renders the page for `inputs`; `title` overrides the title taken from the inputs.
pub fn render(inputs: &[Input], title: Option<&str>) -> Result<String, ReportError> {
    let views = runs(inputs);
    if views.is_empty() {
        return Err(ReportError::NoRuns);
    }
    let mut workloads: Vec<(String, String)> = Vec::new();
    for i in inputs {
        for r in &i.report.runs {
            let w = workload_of(r);
            if !workloads.iter().any(|(x, _)| *x == w) {
                workloads.push((w, i.source.clone()));
            }
        }
    }
    if workloads.len() > 1 {
        let list: Vec<String> = workloads
            .iter()
            .map(|(w, src)| format!("{w} in {src}"))
            .collect();
        return Err(ReportError::Mixed(list.join(", ")));
    }
    let title = match title {
        Some(t) => t.to_string(),
        None => default_title(inputs),
    };
    let figures = figures::draw_all(&views).map_err(ReportError::Chart)?;
    Ok(html::page(&title, inputs, &views, &figures))
}

/// The workload a run measured: TPC-C runs carry their label, YCSB runs their workload letter.
fn workload_of(r: &BenchSummary) -> String {
    match &r.config.workload_label {
        Some(l) => l.split([',', ' ']).next().unwrap_or(l).to_string(),
        None => match serde_json::to_value(r.config.ycsb.workload) {
            Ok(serde_json::Value::String(w)) => format!("YCSB-{w}"),
            _ => "YCSB".to_string(),
        },
    }
}

fn default_title(inputs: &[Input]) -> String {
    let mut titles: Vec<&str> = Vec::new();
    for i in inputs {
        let t = i.report.title.trim();
        if !t.is_empty() && !titles.contains(&t) {
            titles.push(t);
        }
    }
    match titles.len() {
        0 => "wafer benchmark report".to_string(),
        1 => titles[0].to_string(),
        _ => format!("wafer benchmark report: {}", titles.join(" | ")),
    }
}
