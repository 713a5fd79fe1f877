//! The HTML report of wafer's results: one self-contained page (inline CSS and SVG, no scripts,
//! no external resources) comparing the runs of one or more result files.
//!
//! * [`load`] reads and checks one result file, whatever wafer command wrote it: engine
//!   benchmarks (`wafer bench ycsb`, `bench tpcc --out`, `--tpcc-out`, `wafer demo`), device
//!   simulations (`wafer sim --json`/`--out`, the per-configuration files of `wafer bench device`)
//!   and `wafer bench device`'s comparison table (`comparison.json`, or its `--json` output),
//!   the result of `wafer bench query --out`, the results of `wafer realdb --out` and of
//!   `wafer bench mvcc --out`;
//! * [`figures`] turns the runs into the data of each chart (pure, tested here);
//! * [`charts`] draws SVG charts; [`html`] lays out the engine benchmark page (with [`tpcc`]'s
//!   tables for TPC-C runs), [`device`] the device page, [`query`] the query page, [`realdb`]
//!   the real-database page.
//!
//! One page holds one kind of result: engine benchmark runs of one workload (YCSB-A, TPC-C, ...),
//! device-level results (simulations and device comparisons, each in its own section), or one
//! `wafer bench query` result, or real-database results (one section per file). Other mixes are refused ([`ReportError::Mixed`],
//! [`ReportError::MixedKinds`], [`ReportError::SeveralQueries`]): their numbers do not share a
//! table.

pub mod charts;
mod device;
pub mod figures;
mod html;
mod mvcc;
mod query;
mod realdb;
mod tpcc;

use crate::cli::device::DeviceRow;
use std::fmt;
use std::path::{Path, PathBuf};
use wafer_workloads::bench::{BenchReport, BenchSummary};
use wafer_workloads::query::bench::QueryBenchResult;
use wafer_workloads::simrun::RunSummary;
use wafer_workloads::tpcc::TpccSummary;

/// What one result file holds.
pub enum Content {
    /// Engine benchmark runs (`wafer bench ycsb`, `wafer bench tpcc`, `wafer demo`).
    Bench(BenchReport),
    /// One device simulation (`wafer sim`, or one configuration of `wafer bench device`).
    Sim(Box<RunSummary>),
    /// The comparison table of `wafer bench device`.
    Device(Vec<DeviceRow>),
    /// The sorts and joins of `wafer bench query`.
    Query(Box<QueryBenchResult>),
    /// An unmodified database on the simulated SSD (`wafer realdb`).
    Realdb(Box<crate::realdb::RealdbResult>),
    /// The MVCC reads of `wafer bench mvcc`.
    Mvcc(Box<wafer_workloads::mvcc::MvccBenchResult>),
}

/// The kinds of page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Engine benchmarks.
    Bench,
    /// Device-level results (simulations and device comparisons).
    Device,
    /// A `wafer bench query` result.
    Query,
    /// `wafer realdb` results.
    Realdb,
    /// A `wafer bench mvcc` result.
    Mvcc,
}

impl Kind {
    fn describe(self) -> &'static str {
        match self {
            Kind::Bench => "engine benchmark runs (`wafer bench ycsb`/`tpcc`, `wafer demo`)",
            Kind::Device => "device results (`wafer sim`, `wafer bench device`)",
            Kind::Query => "query operator runs (`wafer bench query`)",
            Kind::Realdb => "real-database runs (`wafer realdb`)",
            Kind::Mvcc => "MVCC read runs (`wafer bench mvcc`)",
        }
    }
}

impl Content {
    /// The kind of page it goes on.
    pub fn kind(&self) -> Kind {
        match self {
            Content::Bench(_) => Kind::Bench,
            Content::Sim(_) | Content::Device(_) => Kind::Device,
            Content::Query(_) => Kind::Query,
            Content::Realdb(_) => Kind::Realdb,
            Content::Mvcc(_) => Kind::Mvcc,
        }
    }

    /// Runs (or table rows) it holds.
    pub fn count(&self) -> usize {
        match self {
            Content::Bench(r) => r.runs.len(),
            Content::Sim(_) => 1,
            Content::Device(rows) => rows.len(),
            Content::Query(q) => q.runs.len(),
            Content::Realdb(r) => r.runs.len() + r.crashes.len(),
            Content::Mvcc(r) => r.runs.len() + r.writes.len(),
        }
    }

    /// The title it carries, if any.
    pub fn title(&self) -> &str {
        match self {
            Content::Bench(r) => &r.title,
            _ => "",
        }
    }
}

/// A result file, read and checked (or a report made in this process).
pub struct Input {
    /// Where the report came from, as shown on the page (a file name; empty when made in
    /// process).
    pub source: String,
    pub content: Content,
}

impl Input {
    /// Benchmark runs made in this process (`wafer demo`).
    pub fn bench(report: BenchReport) -> Input {
        Input {
            source: String::new(),
            content: Content::Bench(report),
        }
    }

    /// The benchmark report it holds, if it holds one.
    pub fn bench_report(&self) -> Option<&BenchReport> {
        match &self.content {
            Content::Bench(r) => Some(r),
            _ => None,
        }
    }

    /// A short name for a single-run input: the file name without its extension.
    fn stem(&self) -> String {
        Path::new(&self.source)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
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
    /// The file is JSON, but not a wafer result.
    Schema {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// The file looks like one kind of wafer result (`what`) but does not read as one.
    Damaged {
        path: PathBuf,
        what: &'static str,
        source: serde_json::Error,
    },
    /// None of the files holds a run.
    NoRuns,
    /// The files hold runs of different workloads (one comparison table cannot mix them).
    Mixed(String),
    /// The files hold different kinds of result (engine benchmarks, device results, query runs).
    MixedKinds(String),
    /// Several `wafer bench query` results: a query page shows one.
    SeveralQueries(String),
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
                 an object with \"title\" and \"runs\", or by `wafer sim`, `wafer bench \
                 device`'s table or `wafer bench query`): {source}",
                path.display()
            ),
            ReportError::Damaged { path, what, source } => write!(
                f,
                "{} looks like {what} but does not read as one (damaged, or written by another \
                 version): {source}",
                path.display()
            ),
            ReportError::NoRuns => f.write_str("the input files contain no benchmark runs"),
            ReportError::Mixed(m) => write!(
                f,
                "the inputs hold runs of different workloads ({m}); their numbers are not \
                 comparable in one table: make one report per workload"
            ),
            ReportError::MixedKinds(m) => write!(
                f,
                "the inputs hold different kinds of result ({m}); a page shows one kind: make \
                 one report per kind"
            ),
            ReportError::SeveralQueries(m) => write!(
                f,
                "the inputs hold several results of `wafer bench query` ({m}); a query page \
                 shows one: make one report per file"
            ),
            ReportError::Unsupported { path, what } => write!(
                f,
                "{} is {what}, which `wafer report` does not render (it renders the JSON of \
                 `wafer bench ycsb`, `wafer bench tpcc`, `wafer demo`, `wafer sim`, \
                 `wafer bench device`, `wafer bench query`, `wafer bench mvcc` and `wafer realdb`)",
                path.display()
            ),
            ReportError::Chart(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ReportError {}

/// A TPC-C summary (`--tpcc-out`) as a benchmark run, with its TPC-C figures.
fn tpcc_run(s: TpccSummary) -> BenchSummary {
    let figures = s.bench.tpcc.clone().unwrap_or_else(|| s.figures());
    let mut run = s.bench;
    run.tpcc = Some(figures);
    run
}

/// What a JSON value that is no result `wafer report` renders is, when it is another wafer
/// output.
fn other_output(v: &serde_json::Value) -> Option<&'static str> {
    let has = |v: &serde_json::Value, k: &str| v.get(k).is_some();
    let first = v.as_array().and_then(|a| a.first());
    if has(v, "trials") && has(v, "failures_by_class") {
        Some("the summary of `wafer torture`")
    } else if first.is_some_and(|e| has(e, "ops_per_s") && has(e, "seconds")) {
        Some("wall-clock results (`wafer bench wall --json`)")
    } else if first.is_some_and(|e| has(e, "tpmc") && has(e, "seconds")) {
        Some("wall-clock results (`wafer bench tpcc --wall --json`)")
    } else {
        None
    }
}

/// Reads one result file: engine benchmark runs (a [`BenchReport`], a lone [`BenchSummary`], or
/// the list of [`TpccSummary`] of `--tpcc-out`), a `wafer sim` result ([`RunSummary`]),
/// `wafer bench device`'s comparison rows, or a `wafer bench query` result
/// ([`QueryBenchResult`], an object with `"kind": "query"`).
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
    let input = |content| {
        Ok(Input {
            source: path.display().to_string(),
            content,
        })
    };
    let damaged = |what, source| ReportError::Damaged {
        path: path.to_path_buf(),
        what,
        source,
    };
    if let Some(what) = other_output(&value) {
        return Err(ReportError::Unsupported {
            path: path.to_path_buf(),
            what,
        });
    }
    if value.get("kind").and_then(|k| k.as_str()) == Some("query") {
        let q = serde_json::from_value::<QueryBenchResult>(value)
            .map_err(|e| damaged("the result of `wafer bench query`", e))?;
        return input(Content::Query(Box::new(q)));
    }
    if value.get("kind").and_then(|k| k.as_str()) == Some("mvcc") {
        let r = serde_json::from_value::<wafer_workloads::mvcc::MvccBenchResult>(value)
            .map_err(|e| damaged("the result of `wafer bench mvcc`", e))?;
        return input(Content::Mvcc(Box::new(r)));
    }
    if value.get("kind").and_then(|k| k.as_str()) == Some("realdb") {
        let r = serde_json::from_value::<crate::realdb::RealdbResult>(value)
            .map_err(|e| damaged("the result of `wafer realdb`", e))?;
        return input(Content::Realdb(Box::new(r)));
    }
    let has = |k: &str| value.get(k).is_some();
    if has("ssd") && has("workload") && has("rows") {
        let s = serde_json::from_value::<RunSummary>(value)
            .map_err(|e| damaged("the result of `wafer sim`", e))?;
        return input(Content::Sim(Box::new(s)));
    }
    if let Some(first) = value.as_array().and_then(|a| a.first()) {
        if first.get("bench").is_some() && first.get("tpmc").is_some() {
            let runs = serde_json::from_value::<Vec<TpccSummary>>(value)
                .map_err(|e| damaged("the TPC-C detail of `wafer bench tpcc --tpcc-out`", e))?;
            let title = runs
                .first()
                .map(|r| r.bench.config.workload_label.clone().unwrap_or_default())
                .unwrap_or_default();
            return input(Content::Bench(BenchReport {
                title,
                runs: runs.into_iter().map(tpcc_run).collect(),
            }));
        }
        if first.get("waf_steady").is_some() && first.get("dwpd_rated_5y").is_some() {
            let rows = serde_json::from_value::<Vec<DeviceRow>>(value)
                .map_err(|e| damaged("the comparison of `wafer bench device`", e))?;
            return input(Content::Device(rows));
        }
    }
    if value.as_array().is_some_and(|a| a.is_empty()) {
        return input(Content::Device(Vec::new()));
    }
    let report = match serde_json::from_value::<BenchReport>(value.clone()) {
        Ok(r) => r,
        Err(source) => match serde_json::from_value::<BenchSummary>(value) {
            Ok(run) => BenchReport {
                title: run.name.clone(),
                runs: vec![run],
            },
            Err(_) => {
                return Err(ReportError::Schema {
                    path: path.to_path_buf(),
                    source,
                })
            }
        },
    };
    input(Content::Bench(report))
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
        .filter_map(|i| Some((i.source.as_str(), i.bench_report()?)))
        .flat_map(|(source, r)| r.runs.iter().map(move |run| (source, run)))
        .collect();
    let labels = unique_labels(all.iter().map(|(_, r)| r.name.as_str()));
    all.iter()
        .zip(labels)
        .enumerate()
        .map(|(i, ((source, run), label))| RunView {
            label,
            color: charts::run_color(i),
            source,
            run,
        })
        .collect()
}

/// Labels for names in page order: "run N" for an empty name, "NAME #2" for a repeated one.
pub fn unique_labels<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for (i, name) in names.enumerate() {
        let base = if name.trim().is_empty() {
            format!("run {}", i + 1)
        } else {
            name.to_string()
        };
        let mut label = base.clone();
        let mut k = 2;
        while seen.contains(&label) {
            label = format!("{base} #{k}");
            k += 1;
        }
        seen.push(label);
    }
    seen
}

/// One device simulation as the page shows it.
pub struct SimView<'a> {
    pub label: String,
    pub color: plotters::style::RGBColor,
    pub run: &'a RunSummary,
}

/// The simulations of all inputs in order, named after their files, with a colour each.
pub fn sim_runs(inputs: &[Input]) -> Vec<SimView<'_>> {
    let all: Vec<(&Input, &RunSummary)> = inputs
        .iter()
        .filter_map(|i| match &i.content {
            Content::Sim(s) => Some((i, s.as_ref())),
            _ => None,
        })
        .collect();
    let stems: Vec<String> = all.iter().map(|(i, _)| i.stem()).collect();
    let labels = unique_labels(stems.iter().map(|s| s.as_str()));
    all.iter()
        .zip(labels)
        .enumerate()
        .map(|(i, ((_, run), label))| SimView {
            label,
            color: charts::run_color(i),
            run,
        })
        .collect()
}

/// Renders the page for `inputs`; `title` overrides the title taken from the inputs.
pub fn render(inputs: &[Input], title: Option<&str>) -> Result<String, ReportError> {
    if inputs.iter().map(|i| i.content.count()).sum::<usize>() == 0 {
        return Err(ReportError::NoRuns);
    }
    let mut kinds: Vec<(Kind, &str)> = Vec::new();
    for i in inputs {
        let k = i.content.kind();
        if !kinds.iter().any(|(x, _)| *x == k) {
            kinds.push((k, &i.source));
        }
    }
    if kinds.len() > 1 {
        let list: Vec<String> = kinds
            .iter()
            .map(|(k, src)| format!("{} in {src}", k.describe()))
            .collect();
        return Err(ReportError::MixedKinds(list.join(", ")));
    }
    if kinds[0].0 == Kind::Query {
        let queries: Vec<(&str, &QueryBenchResult)> = inputs
            .iter()
            .filter_map(|i| match &i.content {
                Content::Query(q) => Some((i.source.as_str(), q.as_ref())),
                _ => None,
            })
            .collect();
        if let [(_, res)] = queries.as_slice() {
            let title = match title {
                Some(t) => t.to_string(),
                None => query::default_title(res),
            };
            return query::page(&title, inputs, res);
        }
        let list: Vec<&str> = queries.iter().map(|q| q.0).collect();
        return Err(ReportError::SeveralQueries(list.join(", ")));
    }
    if kinds[0].0 == Kind::Mvcc {
        let first = inputs.iter().find_map(|i| match &i.content {
            Content::Mvcc(r) => Some(r.as_ref()),
            _ => None,
        });
        let title = match (title, first) {
            (Some(t), _) => t.to_string(),
            (None, Some(r)) => mvcc::default_title(r),
            (None, None) => "wafer bench mvcc".to_string(),
        };
        return mvcc::page(&title, inputs);
    }
    if kinds[0].0 == Kind::Realdb {
        let title = match title {
            Some(t) => t.to_string(),
            None => realdb::default_title(inputs),
        };
        return realdb::page(&title, inputs);
    }
    if kinds[0].0 == Kind::Device {
        let title = match title {
            Some(t) => t.to_string(),
            None => device::default_title(inputs),
        };
        return device::page(&title, inputs);
    }
    let views = runs(inputs);
    if views.is_empty() {
        return Err(ReportError::NoRuns);
    }
    let mut workloads: Vec<(String, String)> = Vec::new();
    for v in &views {
        let w = workload_of(v.run);
        if !workloads.iter().any(|(x, _)| *x == w) {
            workloads.push((w, v.source.to_string()));
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
    let tpcc = workloads[0].0 == "TPC-C" && views.iter().any(|v| v.run.tpcc.is_some());
    let figures = figures::draw_all(&views, tpcc).map_err(ReportError::Chart)?;
    Ok(html::page(&title, inputs, &views, &figures, tpcc))
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
        let t = i.content.title().trim();
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
