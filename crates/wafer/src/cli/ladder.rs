//! The table of paper 004's ladder (baseline, ISC-A, ISC-B, ISC-C, Check-In), printed after the
//! main table of `wafer bench ycsb` when a run has a journal configuration: what checkpoints
//! cost in flash programs, garbage collection and latency.

use wafer_workloads::bench::{BenchReport, BenchSummary};

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// `v` against the baseline's `b` as a signed percentage ("-" when there is no baseline).
fn versus(v: f64, b: Option<f64>) -> String {
    match b {
        Some(b) if b > 0.0 => format!("{:+.1}%", 100.0 * (v - b) / b),
        _ => "-".into(),
    }
}

/// Prints the ladder table if the report has journal runs.
pub fn print_ladder(r: &BenchReport) {
    let journaled: Vec<&BenchSummary> = r
        .runs
        .iter()
        .filter(|s| s.config.engine.journal.is_some())
        .collect();
    if journaled.is_empty() {
        return;
    }
    let base = journaled.iter().find(|s| s.name == "baseline");
    let of = |f: &dyn Fn(&BenchSummary) -> f64| base.map(|b| f(b));
    // Per operation: runs that stop by DB-issued bytes run different numbers of operations.
    let per_op = |s: &BenchSummary, v: u64| v as f64 / s.run.ops.max(1) as f64;
    let redundant = |s: &BenchSummary| per_op(s, s.ssd_redundant_write_bytes);
    let gc = |s: &BenchSummary| 1e6 * per_op(s, s.ssd_gc_runs);
    let p999_during = |s: &BenchSummary| s.checkpoints.latency_during.p999_ns as f64;
    let ops = |s: &BenchSummary| s.steady.ops_per_s;
    println!(
        "\nPaper 004's ladder (whole run; redundant flash bytes per operation, GC runs per million \
         operations; latency in virtual ms; \"dur\": operations that overlapped a checkpoint; \
         the vs after dur p99.99 compares dur p99.9; vs: against the baseline):\n"
    );
    println!(
        "{:<10} {:>11} {:>8} {:>7} {:>8} {:>6} {:>9} {:>8} {:>7} {:>7} {:>8} {:>8} {:>9} {:>8} {:>8} {:>6} {:>8} {:>8}",
        "config",
        "redund B/op",
        "vs",
        "GC/Mop",
        "vs",
        "total WAF",
        "OPS",
        "vs",
        "p99",
        "p99.9",
        "p99.99",
        "dur p99",
        "dur p99.9",
        "dur p99.99",
        "vs",
        "ckpts",
        "ckpt mean",
        "ckpt max"
    );
    for s in &journaled {
        let c = &s.checkpoints;
        println!(
            "{:<10} {:>11.0} {:>8} {:>7.0} {:>8} {:>6.2} {:>9.0} {:>8} {:>7.2} {:>7.2} {:>8.2} {:>8.2} {:>8.2} {:>9.2} {:>8} {:>6} {:>8.2} {:>8.2}",
            s.name,
            redundant(s),
            versus(redundant(s), of(&redundant)),
            gc(s),
            versus(gc(s), of(&gc)),
            s.steady.total_waf,
            ops(s),
            versus(ops(s), of(&ops)),
            ms(s.latency.p99_ns),
            ms(s.latency.p999_ns),
            ms(s.latency.p9999_ns),
            ms(c.latency_during.p99_ns),
            ms(c.latency_during.p999_ns),
            ms(c.latency_during.p9999_ns),
            versus(p999_during(s), of(&p999_during)),
            c.checkpoints,
            c.mean_ns / 1e6,
            ms(c.max_ns),
        );
    }
}
