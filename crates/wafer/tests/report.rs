//! `wafer report`: renders synthetic benchmark results and checks the page, and rejects bad input
//! with a clear message and exit code 2.

use flashsim::{LatencySummary, WearReport};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use wafer_workloads::bench::{
    BenchConfig, BenchReport, BenchSummary, Breakdown, Preset, SeriesRow, SteadyState, Window,
};
use wafer_workloads::tpcc::{
    RecoveryOutcome, RecoveryReport, TpccFigures, TpccSeriesPoint, TxnCounts,
};
use wafer_workloads::YcsbConfig;

const MIB: u64 = 1 << 20;

fn window(ops: u64, secs: f64, db_waf: f64, ssd_waf: f64, user_bytes: u64) -> Window {
    let issued = (user_bytes as f64 * db_waf) as u64;
    let media = (issued as f64 * ssd_waf) as u64;
    Window {
        ops,
        txns: ops,
        virtual_s: secs,
        ops_per_s: ops as f64 / secs,
        db_waf,
        ssd_waf,
        total_waf: db_waf * ssd_waf,
        user_bytes,
        db_issued_bytes: issued,
        ssd_host_bytes: issued,
        ssd_media_bytes: media,
        logical_bytes_per_op: issued as f64 / ops as f64,
        physical_bytes_per_op: media as f64 / ops as f64,
        read_bytes_per_op: 1600.0,
        write_mb_s: issued as f64 / secs / 1e6,
        read_mb_s: 10.0,
        wal_bytes_per_op: 180.0,
        hit_ratio: 0.87,
        page_reads_per_op: 0.4,
        checkpoint_flush_share: 0.3,
    }
}

fn series(rows: usize, ops_per_s: f64, db_waf: f64, ssd_waf: f64) -> Vec<SeriesRow> {
    (1..=rows)
        .map(|i| {
            let t = i as f64 * 2.5;
            let ops = (t * ops_per_s) as u64;
            SeriesRow {
                virtual_s: t,
                ops,
                txns: ops,
                ops_per_s: ops_per_s * (1.0 - 0.05 * i as f64),
                hit_ratio: 0.85,
                read_mb: 10.0,
                write_mb: 16.0,
                eviction_mb: 6.0,
                checkpoint_mb: 2.0,
                doublewrite_mb: 8.0,
                db_gc_mb: 0.0,
                wal_mb: 1.0,
                db_waf,
                ssd_waf: ssd_waf + 0.1 * i as f64,
                db_waf_cumulative: db_waf,
                ssd_waf_cumulative: ssd_waf,
                media_mb_cumulative: i as f64 * 16.0 * db_waf * ssd_waf,
                latency_ns_p50: 250_000 + 10_000 * i as u64,
                latency_ns_p99: 1_000_000 + 50_000 * i as u64,
                latency_ns_p999: 2_000_000 + 200_000 * i as u64,
            }
        })
        .collect()
}

fn summary(name: &str, description: &str, preset: Preset, rows: usize) -> BenchSummary {
    let dw = preset.doublewrite();
    let db_waf = if dw { 2.0 } else { 1.0 };
    let ssd_waf = if dw { 1.6 } else { 1.9 };
    let ops_per_s = if dw { 41_000.0 } else { 63_000.0 };
    let user = 64 * MIB;
    let config = BenchConfig::new(preset, 64 * MIB, 0.12, YcsbConfig::default());
    let run = window(500_000, 10.0, db_waf, ssd_waf, user);
    BenchSummary {
        name: name.to_string(),
        description: description.to_string(),
        config,
        records: 50_000,
        fill_achieved: 0.89,
        load: window(50_000, 1.0, 1.0, 1.0, 16 * MIB),
        steady: window(50_000, 1.2, db_waf, ssd_waf + 0.05, 8 * MIB),
        steady_state: SteadyState {
            label: "last full interval, ops 450000..500000".to_string(),
            from_ops: 450_000,
            to_ops: 500_000,
            full_intervals: 10,
            merged_short_tail: false,
            warnings: if dw {
                vec!["SSD WAF still rising at the end (1.50, 1.60, 1.70 over the last three intervals): steady state not reached; run longer".to_string()]
            } else {
                Vec::new()
            },
        },
        bytes: Breakdown {
            user_bytes: user,
            doublewrite_bytes: if dw { user } else { 0 },
            db_gc_bytes: 0,
            compensation_bytes: 0,
            padding_bytes: 0,
            metadata_bytes: 0,
            db_issued_bytes: run.db_issued_bytes,
            ssd_gc_bytes: run.ssd_media_bytes - run.ssd_host_bytes,
            ssd_media_bytes: run.ssd_media_bytes,
            wal_bytes: 90 * MIB,
        },
        run,
        aborts: 3,
        latency: LatencySummary {
            count: 500_000,
            mean_ns: 350_000.0,
            p50_ns: 300_000,
            p99_ns: 1_200_000,
            p999_ns: 2_500_000,
            p9999_ns: 4_000_000,
            max_ns: 9_000_000,
        },
        ssd_gc_runs: 120,
        ssd_erases: 480,
        ssd_redundant_write_bytes: 0,
        checkpoints: Default::default(),
        journal: None,
        devices: Vec::new(),
        wear: WearReport {
            pe_limit: 3000,
            life_used: 0.0004,
            ..WearReport::default()
        },
        series: series(rows, ops_per_s, db_waf, ssd_waf),
        tpcc: None,
    }
}

fn two_runs() -> BenchReport {
    BenchReport {
        title: "YCSB-A <zipf 0.99> & friends".to_string(),
        runs: vec![
            summary(
                "in-place",
                "fixed homes, doublewrite <b>buffer</b>",
                Preset::InPlace,
                4,
            ),
            summary(
                "in-place-nodw",
                "fixed homes, no doublewrite",
                Preset::InPlaceNoDw,
                3,
            ),
        ],
    }
}

fn write_json(dir: &Path, name: &str, report: &BenchReport) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(report).unwrap()).unwrap();
    path
}

fn wafer(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wafer"))
        .arg("report")
        .args(args)
        .output()
        .expect("run wafer")
}

fn render(inputs: &[PathBuf], out: &Path) -> String {
    let mut args: Vec<&std::ffi::OsStr> = inputs.iter().map(|p| p.as_os_str()).collect();
    args.push("-o".as_ref());
    args.push(out.as_os_str());
    let o = wafer(&args);
    assert!(
        o.status.success(),
        "wafer report failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(out).expect("report written")
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// `word` occurs as a whole word (not inside another word such as "information").
fn has_word(hay: &str, word: &str) -> bool {
    hay.match_indices(word).any(|(i, _)| {
        let before = hay[..i].chars().next_back();
        let after = hay[i + word.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric()) && !after.is_some_and(|c| c.is_alphanumeric())
    })
}

/// Checks that hold for every page.
fn check_page(html: &str, charts: usize) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));
    assert_eq!(count(html, "<svg "), charts, "one <svg> per chart");
    assert_eq!(count(html, "</svg>"), charts, "balanced <svg>");
    for (open, close) in [
        ("<table>", "</table>"),
        ("<tr>", "</tr>"),
        ("<figure ", "</figure>"),
        ("<details>", "</details>"),
        ("<text ", "</text>"),
    ] {
        assert_eq!(count(html, open), count(html, close), "balanced {open}");
    }
    for bad in ["NaN", "inf", "Infinity", "undefined"] {
        assert!(!has_word(html, bad), "page contains {bad:?}");
    }
    assert!(!html.contains("<script"), "no scripts");
    assert!(!html.contains("src="), "no external resources");
    assert!(!html.contains("<link"), "no external stylesheets");
}

#[test]
fn renders_tables_and_charts() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "bench.json", &two_runs());
    let out = dir.path().join("out/report.html");
    let html = render(&[input], &out);
    check_page(&html, 6);
    assert!(html.contains("Latency tail") && html.contains("fig-latency"));
    // Percentiles over time: a panel per percentile, each point an interval of the series.
    let over_time = &html[html.find("id=\"fig-latency-time\"").unwrap()..];
    let over_time = &over_time[..over_time.find("</figure>").unwrap()];
    for caption in ["p50 per interval", "p99 per interval", "p99.9 per interval"] {
        assert!(over_time.contains(caption), "{caption}");
    }
    assert!(over_time.contains("latency (us)") && over_time.contains("latency (ms)"));
    // The YCSB layout: no TPC-C tables.
    assert!(html.contains("Comparison (steady state)"));
    assert!(!html.contains("TPC-C results") && !html.contains("tpmC"));

    // Header: the title and the descriptions, escaped.
    assert!(html.contains("<title>YCSB-A &lt;zipf 0.99&gt; &amp; friends</title>"));
    assert!(html.contains("fixed homes, doublewrite &lt;b&gt;buffer&lt;/b&gt;"));
    assert!(!html.contains("<b>buffer"));
    // Key config: device size, fill, buffer, workload, clients, seed.
    assert!(html.contains("64 MiB"));
    assert!(html.contains("90.0% / 89.0%"));
    assert!(html.contains("10.0% of data"));
    assert!(html.contains("YCSB-A, zipf:0.99"));
    assert!(html.contains("<td>16 (8)</td>"));
    assert!(html.contains("<td>42</td>"));

    // The comparison table: a row per run with the steady window's numbers.
    let row = |name: &str| -> String {
        let start = html
            .find(&format!("</span>{name}</td><td>"))
            .unwrap_or_else(|| panic!("row of {name}"));
        html[start..start + html[start..].find("</tr>").unwrap()].to_string()
    };
    // Which part of each run the steady state is, and a warning when a WAF still rises.
    assert_eq!(
        count(
            &html,
            "steady state: last full interval, ops 450000..500000"
        ),
        2
    );
    assert_eq!(
        count(&html, "SSD WAF still rising at the end (1.50, 1.60, 1.70"),
        1
    );
    let a = row("in-place");
    assert!(a.contains("41,667"), "steady OPS: {a}");
    assert!(a.contains("<td>2.00</td>"), "DB WAF: {a}");
    assert!(a.contains("<td class=\"best\">1.65</td>"), "SSD WAF: {a}");
    assert!(a.contains("<td>3.30</td>"), "total WAF: {a}");
    assert!(a.contains("<td>87.0%</td>"), "hit ratio: {a}");
    let b = row("in-place-nodw");
    assert!(
        b.contains("<td class=\"best\">1.00</td>"),
        "best DB WAF: {b}"
    );

    // The breakdown: user 1 + doublewrite 1 + SSD GC 1.2 = total WAF 3.2 for the first run.
    assert!(html.contains(
        "<td>1.000</td><td>1.000</td><td>0.000</td><td>0.000</td><td>1.200</td><td>3.200</td>"
    ));
    // Bar labels are whole run names.
    let bars = &html[html.find("id=\"fig-breakdown\"").unwrap()..];
    let bars = &bars[..bars.find("</svg>").unwrap()];
    assert!(bars.contains(">\nin-place-nodw\n</text>"), "bar label");
    // The figures and their axes.
    for id in ["fig-breakdown", "fig-throughput", "fig-media", "fig-waf"] {
        assert!(html.contains(&format!("id=\"{id}\"")), "figure {id}");
    }
    for axis in [
        "bytes written per user byte",
        "throughput per interval (kops/s)",
        "virtual time since the run started (s)",
        "transactions (thousands)",
        "cumulative flash (media) writes (MB)",
        "DB WAF per interval",
        "SSD WAF per interval",
    ] {
        assert!(html.contains(axis), "axis {axis:?}");
    }
    assert!(!html.contains("no data"));
}

#[test]
fn empty_series_and_many_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut one = two_runs();
    for r in &mut one.runs {
        r.series.clear();
    }
    let a = write_json(dir.path(), "a.json", &one);
    let html = render(std::slice::from_ref(&a), &dir.path().join("empty.html"));
    check_page(&html, 6);
    assert!(html.contains("no data"));
    assert!(html.contains("(no series data)"));

    // Eight runs from four files, with repeated names: labels are made unique.
    let b = write_json(dir.path(), "b.json", &two_runs());
    let c = write_json(dir.path(), "c.json", &two_runs());
    let d = write_json(dir.path(), "d.json", &two_runs());
    let html = render(&[a, b, c, d], &dir.path().join("many.html"));
    check_page(&html, 6);
    assert!(html.contains("in-place-nodw #4"));
    assert!(html.contains("d.json"));
}

/// Files written before the series carried latency percentiles and TPC-C runs their figures
/// still render (serde defaults); the percentile chart then says it has no data.
#[test]
fn older_files_still_render() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = serde_json::to_value(two_runs()).unwrap();
    for run in v["runs"].as_array_mut().unwrap() {
        for row in run["series"].as_array_mut().unwrap() {
            let row = row.as_object_mut().unwrap();
            for k in ["latency_ns_p50", "latency_ns_p99", "latency_ns_p999"] {
                assert!(row.remove(k).is_some(), "{k}");
            }
        }
        assert!(run.get("tpcc").is_none(), "no TPC-C key in a YCSB run");
    }
    let path = dir.path().join("old.json");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    let html = render(&[path], &dir.path().join("old.html"));
    check_page(&html, 6);
    let over_time = &html[html.find("id=\"fig-latency-time\"").unwrap()..];
    assert!(over_time[..over_time.find("</figure>").unwrap()].contains("no data"));
    // The throughput chart still has its lines.
    let throughput = &html[html.find("id=\"fig-throughput\"").unwrap()..];
    assert!(!throughput[..throughput.find("</figure>").unwrap()].contains("no data"));
}

#[test]
fn help_names_every_input() {
    let o = Command::new(env!("CARGO_BIN_EXE_wafer"))
        .args(["report", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    for what in [
        "wafer bench ycsb --out",
        "wafer bench tpcc --out",
        "--tpcc-out",
        "wafer sim --json",
        "wafer bench device",
        "comparison.json",
        "wafer bench query --out",
        "other mixes are refused",
    ] {
        assert!(text.contains(what), "{what} in {text}");
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    let check = |input: &Path, expect: &str| {
        let o = wafer(&[input.as_os_str(), "-o".as_ref(), out.as_os_str()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "exit code for {expect}: {err}");
        assert!(err.contains(expect), "expected {expect:?} in {err:?}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(!out.exists(), "no page written on error");
    };
    check(&dir.path().join("missing.json"), "cannot read");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"title\": \"x\", \"runs\": [").unwrap();
    check(&bad, "is not valid JSON");
    let wrong = dir.path().join("wrong.json");
    std::fs::write(&wrong, "{\"title\": \"x\", \"rows\": []}").unwrap();
    check(&wrong, "is not a wafer benchmark result");
    let none = dir.path().join("none.json");
    std::fs::write(&none, "{\"title\": \"x\", \"runs\": []}").unwrap();
    check(&none, "no benchmark runs");

    // No input at all is a usage error too.
    let o = Command::new(env!("CARGO_BIN_EXE_wafer"))
        .arg("report")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// Issue 17: runs of different workloads are not compared in one table, and other wafer results
/// are named as what they are rather than "not a benchmark result".
#[test]
fn mixed_workloads_and_other_results_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let ycsb = write_json(dir.path(), "ycsb.json", &two_runs());
    let mut tpcc = two_runs();
    for r in &mut tpcc.runs {
        r.config.workload_label = Some("TPC-C, 1 warehouse".into());
    }
    let tpcc = write_json(dir.path(), "tpcc.json", &tpcc);
    let out = dir.path().join("r.html");
    let o = wafer(&[
        ycsb.as_os_str(),
        tpcc.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("different workloads"),
        "{err}"
    );
    assert!(
        err.contains("TPC-C in") && err.contains("YCSB-a in"),
        "{err}"
    );
    // A damaged `wafer sim` result is named as what it looks like.
    let sim = dir.path().join("sim.json");
    std::fs::write(&sim, r#"{"ssd": {}, "workload": {}, "rows": []}"#).unwrap();
    let o = wafer(&[sim.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("looks like the result of `wafer sim` but does not read as one"),
        "{err}"
    );
    // Wall-clock results and the torture summary are named, not rendered.
    for (text, what) in [
        (
            r#"[{"config": {}, "ops": 1, "aborts": 0, "seconds": 1.0, "ops_per_s": 1.0}]"#,
            "wall-clock results (`wafer bench wall --json`)",
        ),
        (
            r#"{"seed": 1, "trials": {}, "failures_by_class": {}}"#,
            "the summary of `wafer torture`",
        ),
    ] {
        let f = dir.path().join("other.json");
        std::fs::write(&f, text).unwrap();
        let o = wafer(&[f.as_os_str(), "-o".as_ref(), out.as_os_str()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(what), "{err}");
    }
}

/// A TPC-C report file with its figures, and a YCSB one: the TPC-C page has its own tables.
fn tpcc_runs(with_figures: bool) -> BenchReport {
    let mut r = two_runs();
    r.title = "TPC-C, 1 warehouse(s)".into();
    for (i, run) in r.runs.iter_mut().enumerate() {
        run.config.workload_label = Some("TPC-C, W=1 at scale 0.01, growing size".into());
        if !with_figures {
            continue;
        }
        let k = i as u64 + 1;
        let recovery = (i == 0).then(|| RecoveryOutcome {
            report: RecoveryReport {
                analysis_records: 4_808,
                analysis_us: 7_160,
                redo_records: 4_676,
                redo_applied: 1_568,
                redo_us: 37_690,
                ..RecoveryReport::default()
            },
            virtual_ms: 53.31,
            pages_written: 1_568,
            lazy_redos: 0,
            lazy_records_applied: 0,
            pages_written_after: 0,
        });
        run.tpcc = Some(TpccFigures {
            warehouses: 1,
            scale: 0.01,
            tpmc: 105_229.0 * k as f64,
            tpmc_last_quarter: 81_323.0,
            new_orders: 778 * k,
            user_bytes_per_new_order: 22_281.0,
            host_bytes_per_new_order: 44_572.0 / k as f64,
            media_bytes_per_new_order: 50_000.0 / k as f64,
            wal_bytes_per_new_order: 27_503.0,
            txns: TxnCounts {
                completed: [778 * k, 739, 69, 67, 75],
                rolled_back: 11,
                conflicts: [2, 0, 0, 1, 0],
                skipped_deliveries: 3,
                user_aborts: 0,
            },
            mix_percent: [45.0, 42.8, 4.0, 3.9, 4.3],
            check: "pass".into(),
            recovery,
            series: (0..=4)
                .map(|j| TpccSeriesPoint {
                    virtual_s: j as f64 * 0.1,
                    new_orders: j * 200 * k,
                    media_mb_cumulative: j as f64 * 8.0,
                    ..TpccSeriesPoint::default()
                })
                .collect(),
            ..TpccFigures::default()
        });
    }
    r
}

#[test]
fn tpcc_runs_get_their_own_tables() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "tpcc.json", &tpcc_runs(true));
    let html = render(&[input], &dir.path().join("tpcc.html"));
    // Six charts and the recovery bars.
    check_page(&html, 7);
    for heading in [
        "TPC-C results",
        "Transaction mix run",
        "Recovery after a crash at the end of the run",
        "Engine metrics (steady state)",
        "Flash writes against New-Orders",
    ] {
        assert!(html.contains(&format!("<h2>{heading}</h2>")), "{heading}");
    }
    assert!(!html.contains("<h2>Comparison (steady state)</h2>"));
    let row = |name: &str, after: &str| -> String {
        let from = html.find(after).unwrap();
        let start = from
            + html[from..]
                .find(&format!("</span>{name}</td>"))
                .unwrap_or_else(|| panic!("row of {name} after {after}"));
        html[start..start + html[start..].find("</tr>").unwrap()].to_string()
    };
    // tpmC, New-Orders and bytes per New-Order (host and flash), best in bold.
    let a = row("in-place-nodw", "<h2>TPC-C results</h2>");
    assert!(a.contains("<td class=\"best\">210,458</td>"), "{a}");
    assert!(a.contains("<td>1,556</td>"), "New-Orders: {a}");
    assert!(
        a.contains("<td class=\"best\">22,286</td>"),
        "host B/NO: {a}"
    );
    assert!(
        a.contains("<td class=\"best\">25,000</td>"),
        "flash B/NO: {a}"
    );
    assert!(a.contains("pass"), "{a}");
    // The mix run, with counts.
    let m = row("in-place", "<h2>Transaction mix run</h2>");
    assert!(m.contains("45.0% <span class=\"src\">(778)</span>"), "{m}");
    assert!(m.contains("<td>11</td><td>3</td><td>3</td>"), "{m}");
    // Recovery by phase; the run without a crash says so.
    let r = row("in-place", "<h2>Recovery after");
    assert!(
        r.contains("<td>4,808</td><td>7.16 ms</td><td>4,676</td><td>1,568</td><td>37.69 ms</td>"),
        "{r}"
    );
    assert!(r.contains("53.31 ms"), "{r}");
    assert!(row("in-place-nodw", "<h2>Recovery after").contains("no crash"));
    let bars = &html[html.find("id=\"fig-recovery\"").unwrap()..];
    assert!(bars[..bars.find("</svg>").unwrap()].contains("53.31"));
    // tpmC and New-Orders on the axes.
    assert!(html.contains("throughput per interval (thousand tpmC)"));
    assert!(html.contains("New-Orders (thousands)"));

    // A file written before the figures were recorded: the rows say so.
    let old = write_json(dir.path(), "old.json", &{
        let mut r = tpcc_runs(true);
        r.runs[1].tpcc = None;
        r
    });
    let html = render(&[old], &dir.path().join("old.html"));
    assert!(html.contains("no TPC-C figures in this file"));
    // None of them has figures: the general layout.
    let none = write_json(dir.path(), "none.json", &tpcc_runs(false));
    let html = render(&[none], &dir.path().join("none.html"));
    check_page(&html, 6);
    assert!(html.contains("Comparison (steady state)") && !html.contains("TPC-C results"));
}

/// Runs `wafer` with `args` and returns its stdout.
fn run_wafer(args: &[&str]) -> Vec<u8> {
    let o = Command::new(env!("CARGO_BIN_EXE_wafer"))
        .args(args)
        .output()
        .expect("run wafer");
    assert!(
        o.status.success(),
        "wafer {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// `wafer sim` results and `wafer bench device`'s files render on a device page; mixing them
/// with engine benchmarks is refused.
#[test]
fn sim_and_device_results_render() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let sim = |name: &str, extra: &[&str]| -> PathBuf {
        let out = p(name);
        let mut args = vec![
            "sim",
            "--capacity",
            "16MiB",
            "--geometry",
            "small",
            "--capacity-multiple",
            "1",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        run_wafer(&args);
        out
    };
    let uniform = sim("uniform.json", &[]);
    let hot = sim(
        "hot.json",
        &["--pattern", "hotcold:0.9:0.1", "--read-share", "0.2"],
    );
    let html = render(&[uniform.clone(), hot], &p("sim.html"));
    // WAF over time (two panels in one chart) and the write rate.
    check_page(&html, 2);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&uniform).unwrap()).unwrap();
    for text in [
        "<h2>Simulated devices</h2>",
        "<h2>Results (measured run)</h2>",
        "id=\"fig-sim-waf\"",
        "id=\"fig-sim-rate\"",
        "SSD WAF per interval",
        "virtual time since the measured run started (s)",
        "</span>uniform</td>",
        "</span>hot</td>",
        // Effective spare factor (OP) and GC reserve of the small 16 MiB device: 20 MiB of
        // flash in 1 MiB erase units, 4 of them kept for GC.
        "0.200 (25.0%)",
        "4 EUs (4 MiB, 20.0% of flash)",
        "uniform 4 KiB requests, QD 32, seed 42, timing on",
    ] {
        assert!(html.contains(text), "{text}");
    }
    let waf = format!("<td>{:.3}</td>", v["waf_steady"].as_f64().unwrap());
    assert!(html.contains(&waf), "steady WAF {waf}");
    let host = v["run"]["host_write_bytes"].as_u64().unwrap();
    assert_eq!(host, 16 << 20);
    assert!(
        html.contains("<td>16.8 MB</td>"),
        "host writes in decimal units"
    );
    assert!(html.contains("<title>wafer device simulations compared</title>"));
    // Read latencies because one simulation read.
    assert!(html.contains("<th>read p99</th>"));
    assert_eq!(
        count(&html, "<td>n/a</td>"),
        2,
        "the uniform run's read p50 and p99"
    );

    // Without the timing model: against capacities written, no rate chart, timing n/a.
    let untimed = sim("untimed.json", &["--no-timing"]);
    let html = render(&[untimed], &p("untimed.html"));
    check_page(&html, 1);
    assert!(html.contains("host writes since the measured run started (x logical capacity)"));
    assert!(html.contains("no timing model"));
    assert!(!html.contains("read p99"), "no reads, no read column");
    assert!(
        html.contains("<title>wafer sim: 16 MiB conventional SSD, uniform 4 KiB requests</title>")
    );

    // `wafer bench device`: its comparison table and its per-configuration files.
    let dev = p("dev");
    run_wafer(&[
        "bench",
        "device",
        "--gib",
        "1",
        "--capacity-multiple",
        "0.2",
        "--out",
        dev.to_str().unwrap(),
    ]);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dev)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 6, "{files:?}");
    let html = render(&files, &p("dev.html"));
    check_page(&html, 2);
    assert!(html.contains("<h2>Device comparison (<code>wafer bench device</code>)</h2>"));
    assert!(html.contains("<td>hotcold/fdp</td>"));
    assert!(html.contains("</span>zns-append</td>"));
    assert!(html.contains("none (host GC)"));
    // The table alone (`comparison.json`, the rows of --json).
    let html = render(&[dev.join("comparison.json")], &p("table.html"));
    check_page(&html, 0);
    assert!(html.contains("<td>uniform/greedy</td>") && !html.contains("Simulated devices"));
    let stdout = run_wafer(&[
        "bench",
        "device",
        "--gib",
        "1",
        "--capacity-multiple",
        "0.2",
        "--json",
        "--out",
        dev.to_str().unwrap(),
    ]);
    let rows = p("rows.json");
    std::fs::write(&rows, stdout).unwrap();
    let html = render(&[rows], &p("rows.html"));
    assert!(html.contains("<td>zns/append</td>"));

    // Engine benchmarks and device results do not share a page.
    let bench = write_json(dir.path(), "bench.json", &two_runs());
    let out = p("mixed.html");
    let o = wafer(&[
        bench.as_os_str(),
        uniform.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("different kinds of result")
            && err.contains("engine benchmark runs")
            && err.contains("device results (`wafer sim`, `wafer bench device`) in"),
        "{err}"
    );
    assert!(!out.exists());
}

/// A real `wafer bench query` result, small: every experiment on both devices.
fn query_result() -> wafer_workloads::query::bench::QueryBenchResult {
    use wafer_workloads::query::bench::{run, Experiment, QueryBenchConfig, TempDevice};
    let cfg = QueryBenchConfig {
        rows: 2000,
        row_bytes: 100,
        memory_bytes: 128 << 10,
        clusters: vec![2048, 8192],
        memory_fractions: vec![0.1, 0.5],
        disk_cluster: 4096,
        flash_cluster: 2048,
        devices: vec![TempDevice::Disk, TempDevice::Flash],
        flash_drive: flashsim::Drive::Mcaqe32g,
        timing: wafer_workloads::query::TempTiming {
            cpu_ns_per_row: 3000,
            read_ahead: 1,
            write_behind: 4,
            queue_depth: 32,
        },
        temp_bytes: 64 << 20,
        trace_points: 2000,
        seed: 42,
        threads: 1,
    };
    run(&cfg, &Experiment::ALL, &|_, _, _| {}).expect("bench query runs")
}

/// `wafer bench query --out` renders as its own page; it shares a page with nothing else, not
/// even another query result.
#[test]
fn query_results_render() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let res = query_result();
    let traced = res.runs.iter().filter(|r| r.trace.is_some()).count();
    assert_eq!(traced, 6, "4 joins and 2 sorts record their I/O");
    let q = p("q.json");
    std::fs::write(&q, serde_json::to_string(&res).unwrap()).unwrap();
    let html = render(std::slice::from_ref(&q), &p("q.html"));
    // Two line charts, two phase bar charts and a scatter per traced run.
    check_page(&html, 4 + traced);
    for text in [
        "<h2>Setup</h2>",
        "<h2>Figure 7(a): sort time by cluster size</h2>",
        "<h2>Figure 7(b): sort time by memory size</h2>",
        "<h2>Figure 8: joins</h2>",
        "<h2>Figure 6: sort phases</h2>",
        "id=\"fig-query-cluster\"",
        "id=\"fig-query-memory\"",
        "id=\"fig-query-joins\"",
        "id=\"fig-query-phases\"",
        "cluster size (bytes, log2 scale)",
        "address (MB)",
        "joins: sort-merge-join on flash, cluster 2 KiB",
        "phases: sort on disk, cluster 4 KiB",
        "mcaqe32g",
        "<title>wafer bench query: sort and joins with temp space on disk and flash (2,000 rows \
         per table)</title>",
    ] {
        assert!(html.contains(text), "{text}");
    }
    assert_eq!(count(&html, "id=\"fig-query-io-"), traced);
    assert!(!html.contains("no data"));

    // Only the joins: the other sections are left out.
    let mut joins = res.clone();
    joins.experiments = vec![wafer_workloads::query::bench::Experiment::Joins];
    joins.runs.retain(|r| r.experiment == joins.experiments[0]);
    let j = p("joins.json");
    std::fs::write(&j, serde_json::to_string(&joins).unwrap()).unwrap();
    let html = render(std::slice::from_ref(&j), &p("joins.html"));
    check_page(&html, 1 + 4);
    assert!(
        html.contains("Figure 8: joins")
            && !html.contains("Figure 7")
            && !html.contains("Figure 6")
    );

    let refused = |inputs: &[&Path], expect: &[&str]| {
        let out = p("refused.html");
        let mut args: Vec<&std::ffi::OsStr> = inputs.iter().map(|i| i.as_os_str()).collect();
        args.extend(["-o".as_ref(), out.as_os_str()]);
        let o = wafer(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        for e in expect {
            assert!(err.contains(e), "{e:?} in {err}");
        }
        assert!(!out.exists());
    };
    // With engine benchmarks: different kinds.
    let bench = write_json(dir.path(), "bench.json", &two_runs());
    refused(
        &[&q, &bench],
        &[
            "different kinds of result",
            "query operator runs (`wafer bench query`) in",
            "engine benchmark runs",
        ],
    );
    // Two query results: one per page.
    refused(
        &[&q, &j],
        &[
            "several results of `wafer bench query`",
            "q.json",
            "joins.json",
        ],
    );
    // A damaged one is named as what it looks like.
    let bad = p("bad.json");
    std::fs::write(&bad, r#"{"kind": "query", "config": {}, "runs": []}"#).unwrap();
    refused(
        &[&bad],
        &["looks like the result of `wafer bench query` but does not read as one"],
    );
}
