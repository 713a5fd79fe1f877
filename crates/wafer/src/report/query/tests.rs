//! Tests of the query page on a made-up result (exact numbers) and of reading one back.

use super::*;
use crate::report::{load, render, Content};
use wafer_workloads::iotrace::IoTrace;
use wafer_workloads::query::bench::{disk_config, flash_config, NamedPhase, QueryBenchConfig};
use wafer_workloads::query::{IoCounters, PhaseStats, TempTiming};

fn config() -> QueryBenchConfig {
    QueryBenchConfig {
        rows: 2000,
        row_bytes: 100,
        memory_bytes: 128 << 10,
        clusters: vec![2048, 8192],
        memory_fractions: vec![0.1, 0.5],
        disk_cluster: 4096,
        flash_cluster: 2048,
        devices: vec![TempDevice::Disk, TempDevice::Flash],
        flash_drive: flashsim::Drive::Mcaqe32g,
        timing: TempTiming {
            cpu_ns_per_row: 3000,
            read_ahead: 1,
            write_behind: 4,
            queue_depth: 32,
        },
        temp_bytes: 64 << 20,
        trace_points: 1000,
        seed: 42,
        threads: 1,
    }
}

fn phase(name: &str, ms: u64, written: u64) -> NamedPhase {
    NamedPhase {
        name: name.into(),
        stats: PhaseStats {
            io: IoCounters {
                bytes_written: written,
                bytes_read: written,
                writes: written / 2048,
                reads: written / 2048,
                ..IoCounters::default()
            },
            time_ns: ms * 1_000_000,
        },
    }
}

/// A run with made-up numbers: `ms` of run generation (or first phase), twice that after.
fn run(e: Experiment, d: TempDevice, op: Operator, cluster: usize, f: f64, ms: u64) -> QueryRun {
    let names: &[&str] = match op {
        Operator::Sort => &["run-generation", "merge"],
        Operator::HashJoin => &["partition", "build-probe"],
        Operator::SortMergeJoin => &["left-sort", "right-sort", "merge-join"],
    };
    let phases: Vec<NamedPhase> = names
        .iter()
        .enumerate()
        .map(|(i, n)| phase(n, ms * (i as u64 + 1), 200_000))
        .collect();
    let time_ns = phases.iter().map(|p| p.stats.time_ns).sum();
    let traced = matches!(e, Experiment::Joins | Experiment::Phases);
    let trace = traced.then(|| {
        let mut t = IoTrace::new(500);
        for i in 0..3000u64 {
            let write = i < 1500;
            let offset = if write { i * 2048 } else { (i - 1500) * 2048 };
            t.record(i * 1000, offset, 2048, write);
        }
        t
    });
    QueryRun {
        experiment: e,
        device: d,
        operator: op,
        cluster_bytes: cluster,
        memory_bytes: (200_000.0 * f) as u64,
        memory_fraction: f,
        time_ns,
        phases,
        io: IoCounters {
            bytes_written: 400_000,
            bytes_read: 400_000,
            writes: 200,
            reads: 200,
            ..IoCounters::default()
        },
        output_rows: 2000,
        fan: 15,
        extra_passes: 0,
        stats: serde_json::json!({"initial_run_bytes": [1, 2]}),
        trace,
        wall_ms: 1,
    }
}

/// Every experiment on both devices, the flash twice as fast as the disk; the disk fastest
/// at 8 KiB clusters.
fn result() -> QueryBenchResult {
    let cfg = config();
    let mut runs = Vec::new();
    for d in DEVICES {
        let base = if d == TempDevice::Disk { 200 } else { 100 };
        for &c in &cfg.clusters {
            let ms = if d == TempDevice::Disk && c == 8192 {
                150
            } else {
                base
            };
            runs.push(run(Experiment::Cluster, d, Operator::Sort, c, 0.64, ms));
        }
        for &f in &cfg.memory_fractions {
            runs.push(run(Experiment::Memory, d, Operator::Sort, 2048, f, base));
        }
        for op in [Operator::HashJoin, Operator::SortMergeJoin] {
            runs.push(run(Experiment::Joins, d, op, 2048, 0.64, base));
        }
        runs.push(run(Experiment::Phases, d, Operator::Sort, 2048, 0.64, base));
    }
    QueryBenchResult {
        kind: "query".into(),
        experiments: Experiment::ALL.to_vec(),
        disk: disk_config(),
        flash: flash_config(&cfg),
        config: cfg,
        runs,
        load_wall_ms: 5,
    }
}

fn page_of(res: QueryBenchResult) -> String {
    let inputs = [Input {
        source: "q.json".into(),
        content: Content::Query(Box::new(res)),
    }];
    render(&inputs, None).unwrap()
}

#[test]
fn ticks_and_seconds() {
    assert_eq!(size_tick(2048), "2K");
    assert_eq!(size_tick(128 << 10), "128K");
    assert_eq!(size_tick(1 << 20), "1M");
    assert_eq!(size_tick(1000), "1000");
    assert_eq!(secs(0.1234), "0.123");
    assert_eq!(secs(12.345), "12.35");
    assert_eq!(secs(123.45), "123.5");
    assert_eq!(secs(f64::NAN), "n/a");
}

#[test]
fn unknown_phases_are_other() {
    let mut r = run(
        Experiment::Joins,
        TempDevice::Disk,
        Operator::HashJoin,
        2048,
        0.5,
        10,
    );
    r.phases.push(phase("cleanup", 5, 0));
    let (segments, bars) = phase_bars(&[(&r, "x".into())]);
    let labels: Vec<&str> = segments.iter().map(|s| s.label).collect();
    assert_eq!(labels, ["partition", "build-probe", "other"]);
    assert_eq!(bars[0].values, vec![0.01, 0.02, 0.005]);
}

#[test]
fn renders_every_section() {
    let html = page_of(result());
    for title in [
        "<h2>Setup</h2>",
        "<h2>Figure 7(a): sort time by cluster size</h2>",
        "<h2>Figure 7(b): sort time by memory size</h2>",
        "<h2>Figure 8: joins</h2>",
        "<h2>Figure 6: sort phases</h2>",
    ] {
        assert!(html.contains(title), "{title}");
    }
    // Two line charts, two bar charts, a scatter per traced run (4 joins, 2 phases).
    assert_eq!(html.matches("<svg ").count(), 10);
    assert_eq!(html.matches("</svg>").count(), 10);
    assert_eq!(html.matches("id=\"fig-query-io-").count(), 6);
    assert!(!html.contains("no data"));
    // Log2 cluster ticks, memory ticks in percent.
    let cluster = &html[html.find("id=\"fig-query-cluster\"").unwrap()..];
    let cluster = &cluster[..cluster.find("</svg>").unwrap()];
    assert!(cluster.contains(">\n2K\n</text>") && cluster.contains(">\n8K\n</text>"));
    let memory = &html[html.find("id=\"fig-query-memory\"").unwrap()..];
    let memory = &memory[..memory.find("</svg>").unwrap()];
    assert!(memory.contains(">\n10%\n</text>") && memory.contains(">\n50%\n</text>"));
    // The disk's fastest cluster in bold: 0.150 + 0.300 s at 8 KiB.
    assert!(
        html.contains("<td class=\"best\">0.450</td>"),
        "best cluster"
    );
    // disk / flash at each memory size.
    assert_eq!(html.matches("<td>2.00</td></tr>").count(), 2);
    // The joins table and the scatter's caption.
    assert!(html.contains("partition 0.200, build-probe 0.400"));
    assert!(html.contains("joins: hash-join on disk, cluster 2 KiB"));
    assert!(html.contains("of 3,000 commands shown (one in 8)"));
    // The setup.
    assert!(html.contains("mcaqe32g: Samsung MCAQE32G8APP"));
    assert!(html.contains("7200 rpm, 110 MB/s, write-back cache 8 MiB"));
    assert!(html.contains("<td class=\"text\">2 KiB, 8 KiB</td>"));
    assert!(html.contains("<title>wafer bench query: sort and joins with temp space on disk and flash (2,000 rows per table)</title>"));
}

#[test]
fn sections_follow_the_experiments() {
    let mut res = result();
    res.experiments = vec![Experiment::Phases];
    res.runs.retain(|r| r.experiment == Experiment::Phases);
    let html = page_of(res);
    assert!(html.contains("Figure 6: sort phases"));
    assert!(!html.contains("Figure 7") && !html.contains("Figure 8"));
    // The bar chart and a scatter per device.
    assert_eq!(html.matches("<svg ").count(), 3);
}

#[test]
fn load_reads_a_query_result_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.json");
    let res = result();
    std::fs::write(&path, serde_json::to_string(&res).unwrap()).unwrap();
    let input = load(&path).unwrap();
    let Content::Query(back) = &input.content else {
        panic!("not read as a query result");
    };
    assert_eq!(back.runs, res.runs);
    assert_eq!(back.config, res.config);
    assert_eq!(input.content.count(), res.runs.len());
    // A damaged one is named as what it looks like.
    std::fs::write(&path, r#"{"kind": "query", "runs": 3}"#).unwrap();
    let err = load(&path).err().unwrap().to_string();
    assert!(
        err.contains("looks like the result of `wafer bench query` but does not read as one"),
        "{err}"
    );
}
