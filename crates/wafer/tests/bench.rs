//! `wafer bench ycsb` end to end on a small simulated SSD: deterministic output, metrics that
//! are exactly the ratios of the raw counters, DB WAF 2.0 / 1.0 for in-place with and without
//! the doublewrite buffer, config files, and clear errors.

use std::process::Command;

const SMALL: [&str; 6] = [
    "--data-size",
    "32MiB",
    "--capacity-multiple",
    "0.6",
    "--clients",
    "4",
];

fn wafer(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_wafer"))
        .args(args)
        .output()
        .expect("runs")
}

fn bench_json(extra: &[&str]) -> String {
    let mut args = vec!["bench", "ycsb", "--json"];
    args.extend_from_slice(&SMALL);
    args.extend_from_slice(extra);
    let out = wafer(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

#[test]
fn same_seed_gives_byte_identical_summaries_and_metrics_match_raw_counters() {
    let configs = ["--configs", "in-place,in-place-nodw,oop-all"];
    let a = bench_json(&configs);
    let b = bench_json(&configs);
    assert!(a == b, "two runs with the same seed differ");
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    for run in runs {
        for w in [&run["run"], &run["steady"], &run["load"]] {
            let f = |k: &str| w[k].as_f64().unwrap();
            let user = f("user_bytes");
            let issued = f("db_issued_bytes");
            let host = f("ssd_host_bytes");
            let media = f("ssd_media_bytes");
            if user > 0.0 {
                assert!(close(f("db_waf"), issued / user), "db waf");
            }
            if host > 0.0 {
                assert!(close(f("ssd_waf"), media / host), "ssd waf");
            }
            assert!(
                close(f("total_waf"), f("db_waf") * f("ssd_waf")),
                "total waf"
            );
            // The data SSD saw exactly what the engine says it issued.
            assert_eq!(issued, host, "DB-issued bytes = SSD host bytes");
            let ops = f("ops");
            if ops > 0.0 {
                assert!(close(f("logical_bytes_per_op"), issued / ops));
                assert!(close(f("physical_bytes_per_op"), media / ops));
            }
        }
        let name = run["name"].as_str().unwrap();
        let db_waf = run["run"]["db_waf"].as_f64().unwrap();
        match name {
            // Page writes give exactly 2 and 1; each checkpoint adds one 4 KiB header block (the
            // checkpoint stamp of the database identity).
            "in-place" => assert!((2.0..2.01).contains(&db_waf), "in-place DB WAF {db_waf}"),
            "in-place-nodw" => {
                assert!(
                    (1.0..1.01).contains(&db_waf),
                    "in-place-nodw DB WAF {db_waf}"
                )
            }
            // Compressed pages: fewer bytes than the pages written, GC included.
            "oop-all" => assert!(db_waf < 1.0, "oop-all DB WAF {db_waf}"),
            other => panic!("unexpected run {other}"),
        }
        assert!(run["run"]["ssd_waf"].as_f64().unwrap() >= 1.0);
        assert!(!run["series"].as_array().unwrap().is_empty());
    }
    // A different seed gives different numbers.
    assert!(bench_json(&["--seed", "7", "--configs", "in-place,in-place-nodw,oop-all"]) != a);
}

#[test]
fn config_file_round_trips_and_bad_input_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["bench", "ycsb", "--dump-config", "--configs", "in-place"];
    args.extend_from_slice(&SMALL);
    let out = wafer(&args);
    assert!(out.status.success());
    let path = dir.path().join("bench.toml");
    std::fs::write(&path, &out.stdout).unwrap();
    let from_file = bench_json(&["--configs", "in-place", "--config", path.to_str().unwrap()]);
    let from_flags = bench_json(&["--configs", "in-place"]);
    assert!(from_file == from_flags, "config file and flags disagree");

    let bad = wafer(&["bench", "ycsb", "--configs", "bogus"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown configuration"));
    let bad = wafer(&["bench", "ycsb", "--fill", "1.5"]);
    assert_eq!(bad.status.code(), Some(2));
    let missing = wafer(&["bench", "ycsb", "--config", "/nonexistent/x.toml"]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn group_commit_in_virtual_time_shares_log_flushes() {
    let run = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["--configs", "in-place-nodw"];
        args.extend_from_slice(extra);
        let v: serde_json::Value = serde_json::from_str(&bench_json(&args)).unwrap();
        v["runs"][0].clone()
    };
    let alone = run(&[]);
    let grouped = run(&[
        "--group-commit-delay-us",
        "200",
        "--group-commit-min-batch",
        "4",
    ]);
    let per_txn = |r: &serde_json::Value| {
        r["bytes"]["wal_bytes"].as_f64().unwrap() / r["run"]["txns"].as_f64().unwrap()
    };
    assert!(grouped["run"]["txns"].as_u64().unwrap() > 1000);
    assert!(
        per_txn(&grouped) < 0.8 * per_txn(&alone),
        "grouped commits should write fewer log bytes per transaction: {} vs {}",
        per_txn(&grouped),
        per_txn(&alone)
    );
    // Deterministic too.
    let again = run(&[
        "--group-commit-delay-us",
        "200",
        "--group-commit-min-batch",
        "4",
    ]);
    assert_eq!(grouped, again);
}

#[test]
fn steady_state_is_a_full_interval_not_a_truncated_tail() {
    // SMALL runs 0.6 x the device: two full quarter-capacity intervals and a tail of 0.1. A run
    // stopped by --max-ops just after an interval boundary has a tail of a few operations.
    let interval = 0.25 * 32.0 * 1024.0 * 1024.0;
    let runs = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["--configs", "in-place-nodw"];
        args.extend_from_slice(extra);
        let v: serde_json::Value = serde_json::from_str(&bench_json(&args)).unwrap();
        v["runs"][0].clone()
    };
    let full = runs(&[]);
    let boundary = full["series"][0]["ops"].as_u64().unwrap();
    let max_ops = (boundary + 10).to_string();
    let cut = runs(&["--max-ops", &max_ops]);
    for r in [&full, &cut] {
        let steady = &r["steady"];
        let series = r["series"].as_array().unwrap();
        let tail = series.last().unwrap()["write_mb"].as_f64().unwrap() * 1e6;
        assert!(tail < 0.5 * interval, "the run ends with a short interval");
        // The steady window holds at least a full interval's writes, not the tail.
        let issued = steady["db_issued_bytes"].as_f64().unwrap();
        assert!(
            issued >= interval,
            "steady window {issued} bytes, interval {interval}"
        );
        assert!(steady["ops"].as_u64().unwrap() > 1000);
        let st = &r["steady_state"];
        assert_eq!(st["merged_short_tail"], true);
        let label = st["label"].as_str().unwrap();
        assert!(label.starts_with("last full interval"), "{label}");
        assert_eq!(
            st["to_ops"].as_u64().unwrap() - st["from_ops"].as_u64().unwrap(),
            steady["ops"].as_u64().unwrap()
        );
    }
    // The table names the window and says when it may not be a steady state.
    let mut args = vec!["bench", "ycsb", "--configs", "in-place-nodw"];
    args.extend_from_slice(&SMALL);
    let out = wafer(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("steady state: last full interval (the short final one merged in), ops "),
        "{text}"
    );
    assert!(text.contains("too few to tell"), "{text}");
}

#[test]
fn many_clients_keep_virtual_time_monotonic_and_within_the_device() {
    // 30,000 clients on a 32 MiB device (more clients than operations in an interval): the
    // series' time never decreases, the flash writes of no interval outrun what the flash dies
    // allow, and the run's operations stay within what the simulated CPUs allow.
    let out = wafer(&[
        "bench",
        "ycsb",
        "--json",
        "--configs",
        "in-place-nodw",
        "--data-size",
        "32MiB",
        "--clients",
        "30000",
        "--capacity-multiple",
        "2",
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["runs"][0];
    let series = r["series"].as_array().unwrap();
    assert!(series.len() >= 6, "{}", series.len());
    let f = |x: &serde_json::Value, k: &str| x[k].as_f64().unwrap();
    let cfg = &r["config"];
    let cpu_bound = f(cfg, "cores") * 1e9 / f(cfg, "cpu_ns_per_op");
    // Flash program bandwidth of the data SSD: every die programming one page at a time.
    let ssd = &cfg["data_ssd"];
    let g = &ssd["geometry"];
    let dies = f(g, "channels") * f(g, "dies_per_channel") * f(g, "planes_per_die");
    let media_bound = dies * f(g, "page_size_bytes") * 1e9 / f(&ssd["timing"], "program_ns");
    let mut prev = (0.0, 0.0, 0.0);
    for row in series {
        let (t, ops, media) = (
            f(row, "virtual_s"),
            f(row, "ops"),
            f(row, "media_mb_cumulative") * 1e6,
        );
        assert!(
            t >= prev.0,
            "virtual time went backwards: {t} after {}",
            prev.0
        );
        assert!(ops >= prev.1);
        let dt = t - prev.0;
        assert!(
            media - prev.2 <= media_bound * dt * 1.01 + 4.0 * 1024.0 * 1024.0,
            "{} media bytes in {dt} s (at most {media_bound} B/s)",
            media - prev.2
        );
        prev = (t, ops, media);
    }
    let run = &r["run"];
    assert!(f(run, "ops_per_s") <= cpu_bound);
    assert!(f(run, "ssd_media_bytes") <= media_bound * f(run, "virtual_s"));
}
