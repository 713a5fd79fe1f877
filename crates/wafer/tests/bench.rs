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

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `--dump-config` of `wafer bench ycsb` with `extra` flags.
fn dump(extra: &[&str]) -> String {
    let mut args = vec!["bench", "ycsb", "--dump-config"];
    args.extend_from_slice(extra);
    let out = wafer(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// Issue 17: flags given with `--config` override the file, for the run and for its title.
#[test]
fn flags_override_the_config_file_and_the_title_says_what_ran() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.toml");
    std::fs::write(
        &path,
        dump(&[
            "--configs",
            "in-place-nodw",
            "--data-size",
            "64MiB",
            "--fill",
            "0.5",
            "--theta",
            "0",
            "--clients",
            "2",
        ]),
    )
    .unwrap();
    let p = path.to_str().unwrap();
    // The file alone: its values, in the run and in the title.
    let v: serde_json::Value = serde_json::from_str(&bench_json(&[
        "--configs",
        "in-place-nodw",
        "--config",
        p,
        "--max-ops",
        "300",
    ]))
    .unwrap();
    let title = v["title"].as_str().unwrap();
    assert!(title.contains("32 MiB data SSD at 50% fill"), "{title}");
    // SMALL's --data-size 32MiB and --clients 4 were explicit flags: they win over the file.
    let cfg = &v["runs"][0]["config"];
    assert_eq!(cfg["data_ssd"]["logical_bytes"], 32u64 << 20);
    assert_eq!(cfg["clients"], 4);
    // The file's fill and key choice stay.
    assert_eq!(cfg["ycsb"]["dist"], "uniform");
    assert!(title.contains("uniform"), "{title}");

    // Flags over the file: the run and the title follow the flags.
    let out = wafer(&[
        "bench",
        "ycsb",
        "--json",
        "--configs",
        "in-place-nodw",
        "--config",
        p,
        "--data-size",
        "48MiB",
        "--fill",
        "0.8",
        "--theta",
        "0.7",
        "--max-ops",
        "300",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cfg = &v["runs"][0]["config"];
    assert_eq!(cfg["data_ssd"]["logical_bytes"], 48u64 << 20);
    assert_eq!(cfg["fill"], 0.8);
    assert_eq!(cfg["ycsb"]["dist"], "zipf:0.7");
    assert_eq!(cfg["clients"], 2, "the file's clients stay");
    let title = v["title"].as_str().unwrap();
    assert!(
        title.contains("YCSB-a (zipf 0.7), 48 MiB data SSD at 80% fill")
            && title.contains("2 clients"),
        "{title}"
    );
}

/// The `[engine.out_of_place]` table of `text` as TOML.
fn oop_table(text: &str) -> toml::Table {
    let t: toml::Table = text.parse().unwrap();
    t["engine"]["out_of_place"]
        .as_table()
        .cloned()
        .unwrap_or_default()
}

/// Issue 17: an `[engine.out_of_place]` table changes only the keys it names; the preset's
/// other settings stay (`codec = "none"` under oop-all keeps GDT, NoWA and aligned zones).
#[test]
fn out_of_place_table_merges_over_the_preset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.toml");
    let mut text = dump(&["--configs", "in-place", "--data-size", "32MiB"]);
    assert!(!text.contains("out_of_place"), "{text}");
    text.push_str("\n[engine.out_of_place]\ncodec = \"none\"\n");
    std::fs::write(&path, &text).unwrap();
    let p = path.to_str().unwrap();
    let merged = oop_table(&dump(&["--configs", "oop-all", "--config", p]));
    assert_eq!(merged["codec"].as_str(), Some("none"));
    for k in ["gdt", "nowa", "aligned"] {
        assert_eq!(
            merged[k].as_bool(),
            Some(true),
            "{k} of oop-all lost: {merged:?}"
        );
    }
    // The run uses the merged settings too.
    let v: serde_json::Value = serde_json::from_str(&bench_json(&[
        "--configs",
        "oop-all",
        "--config",
        p,
        "--fill",
        "0.5",
        "--max-ops",
        "300",
    ]))
    .unwrap();
    let oop = &v["runs"][0]["config"]["engine"]["out_of_place"];
    assert_eq!(oop["codec"], "none");
    assert_eq!(oop["gdt"], true);
    assert_eq!(oop["nowa"], true);
    assert_eq!(oop["aligned"], true);
    // Under an in-place configuration the table does not apply: said, not silently dropped.
    let out = wafer(&[
        "bench",
        "ycsb",
        "--configs",
        "in-place",
        "--config",
        p,
        "--dump-config",
    ]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("does not apply to this in-place configuration"),
        "{err}"
    );
}

/// Issue 17: a key no table knows is an error naming the key and the file.
#[test]
fn unknown_keys_are_errors_naming_key_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut base = dump(&["--configs", "in-place", "--data-size", "32MiB"]);
    base.push_str("\n[engine.out_of_place]\ncodec = \"none\"\n");
    // Each case adds one misspelt key beside the real ones (so nothing else is wrong).
    let add = |header: &str, line: &str| {
        if header.is_empty() {
            format!("{line}\n{base}")
        } else {
            base.replace(header, &format!("{header}\n{line}"))
        }
    };
    let cases = [
        ("codek", add("[engine.out_of_place]", "codek = \"lz4\"")),
        ("fil", add("", "fil = 0.5")),
        ("readns", add("[data_ssd.timing]", "readns = 1")),
        ("group_commit_delay", add("", "group_commit_delay = 5")),
        ("value_byte", add("[ycsb]", "value_byte = 100")),
        (
            "max_checkpoint_cont",
            add("[engine]", "max_checkpoint_cont = 3"),
        ),
        ("chanels", add("[log_ssd.geometry]", "chanels = 3")),
    ];
    for (key, text) in cases {
        assert!(text != base, "{key}: nothing replaced");
        let path = dir.path().join(format!("{key}.toml"));
        std::fs::write(&path, text).unwrap();
        let out = wafer(&[
            "bench",
            "ycsb",
            "--configs",
            "oop-all",
            "--config",
            path.to_str().unwrap(),
            "--dump-config",
        ]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{key}: {err}");
        assert!(
            err.contains(key) && err.contains(&format!("{key}.toml")),
            "{key}: {err}"
        );
    }
}

/// Issue 17: `--dump-config` prints every table, the preset's out-of-place settings included,
/// and reads back unchanged; the run from the dump equals the run from the flags.
#[test]
fn dump_config_is_complete_and_reads_back_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let flags = [
        "--configs",
        "oop-all",
        "--data-size",
        "32MiB",
        "--fill",
        "0.7",
    ];
    let first = dump(&flags);
    for table in [
        "[data_ssd",
        "[log_ssd",
        "[engine]",
        "[engine.group_commit]",
        "[engine.out_of_place]",
        "[ycsb]",
    ] {
        assert!(first.contains(table), "{table} missing:\n{first}");
    }
    let oop = oop_table(&first);
    assert_eq!(oop["gdt"].as_bool(), Some(true), "{first}");
    let path = dir.path().join("dump.toml");
    std::fs::write(&path, &first).unwrap();
    let p = path.to_str().unwrap();
    let again = dump(&["--configs", "oop-all", "--config", p]);
    assert!(
        first == again,
        "dump changed on read back:\n{first}\n---\n{again}"
    );
    let run = |extra: &[&str]| {
        let args = [&["bench", "ycsb", "--json", "--max-ops", "300"][..], extra].concat();
        let out = wafer(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        out.stdout
    };
    let from_file = run(&["--configs", "oop-all", "--config", p]);
    let from_flags = run(&flags);
    assert!(from_file == from_flags, "config file and flags disagree");
}

/// Issue 17: nonsense is refused with a clear message and exit code 2, before any run.
#[test]
fn nonsense_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let a_file = dir.path().join("file");
    std::fs::write(&a_file, "x").unwrap();
    let unwritable = a_file.join("out.json");
    let u = unwritable.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["bench", "ycsb", "--theta=-1"], "theta"),
        (vec!["bench", "ycsb", "--max-seconds=-1"], "max-seconds"),
        (vec!["bench", "ycsb", "--max-seconds", "0"], "max-seconds"),
        (
            vec!["bench", "ycsb", "--configs", "in-place,oop,in-place"],
            "in-place",
        ),
        (
            vec!["bench", "ycsb", "--data-size", "32MiB", "--out", u],
            "out.json",
        ),
        (
            vec!["bench", "ycsb", "--data-size", "32MiB", "--series", u],
            "out.json",
        ),
        (vec!["bench", "ycsb", "--value-size", "mix9"], "MIN..MAX"),
        (
            vec!["bench", "ycsb", "--value-size", "4096..128"],
            "exceeds",
        ),
        (vec!["bench", "ycsb", "--value-size", "0"], "value sizes"),
        (
            vec!["bench", "ycsb", "--mapping-unit", "3000"],
            "512, 1024, 2048, 4096",
        ),
        (
            vec!["bench", "ycsb", "--mapping-unit", "8192"],
            "mapping-unit",
        ),
        (
            vec!["bench", "ycsb", "--mapping-unit", "256"],
            "mapping-unit",
        ),
        (vec!["bench", "wall", "--threads", "0"], "threads"),
        (vec!["bench", "wall", "--threads", "1,0"], "threads"),
        (vec!["bench", "wall", "--workloads", "load,x"], "load"),
        (vec!["bench", "wall", "--load-batch", "0"], "load-batch"),
        (
            vec!["bench", "wall", "--workloads", "c", "--load-batch", "5"],
            "load-batch",
        ),
        (vec!["bench", "wall", "--max-scan-len", "0"], "max-scan-len"),
        (
            vec![
                "bench",
                "wall",
                "--workloads",
                "a,c",
                "--max-scan-len",
                "50",
            ],
            "max-scan-len",
        ),
        (
            vec!["bench", "wall", "--cleaner-clean-fraction", "0.2"],
            "background-ms",
        ),
        (
            vec!["bench", "wall", "--flushless", "--buffered-commits"],
            "buffered-commits",
        ),
        (
            vec![
                "bench",
                "wall",
                "--background-ms",
                "5",
                "--cleaner-clean-fraction",
                "0.95",
            ],
            "cleaner_clean_fraction",
        ),
        (vec!["bench", "tpcc", "--max-seconds=-2"], "max-seconds"),
        (
            vec!["bench", "tpcc", "--cleaner-clean-fraction", "1.5"],
            "cleaner_clean_fraction",
        ),
        (
            vec!["bench", "wall", "--leaf-splits", "sideways"],
            "leaf-splits",
        ),
        (
            vec!["bench", "tpcc", "--configs", "oop-all,oop-all"],
            "oop-all",
        ),
        (vec!["bench", "tpcc", "--wall", "--threads", "0"], "threads"),
        (
            vec![
                "bench",
                "tpcc",
                "--warehouses",
                "1",
                "--scale",
                "0.01",
                "--out",
                u,
            ],
            "out.json",
        ),
        (
            vec![
                "bench",
                "tpcc",
                "--warehouses",
                "1",
                "--scale",
                "0.01",
                "--tpcc-out",
                u,
            ],
            "out.json",
        ),
    ];
    for (args, needle) in cases {
        let start = std::time::Instant::now();
        let out = wafer(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            start.elapsed().as_secs() < 20,
            "{args:?} ran before failing"
        );
    }
}

/// `bench wall --flushless` runs the flushless buffer mode (paper 001) on the wall clock, and
/// its JSON says so.
#[test]
fn the_wall_clock_bench_runs_the_flushless_mode() {
    let out = wafer(&[
        "bench",
        "wall",
        "--flushless",
        "--workloads",
        "a",
        "--threads",
        "2",
        "--records",
        "2000",
        "--seconds",
        "0.3",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &runs.as_array().unwrap()[0];
    assert_eq!(r["config"]["flushless"], true, "{r}");
    assert!(r["ops"].as_u64().unwrap() > 0, "{r}");
}

/// Issue 17: a run too short for its counters says so.
/// `bench wall --workloads load`: the threads insert every record once, in transactions of
/// `--load-batch`, and the JSON says so; the rate is of records.
#[test]
fn a_measured_load_inserts_every_record_from_every_thread() {
    let out = wafer(&[
        "bench",
        "wall",
        "--workloads",
        "load",
        "--threads",
        "1,3",
        "--records",
        "5000",
        "--load-batch",
        "7",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        assert_eq!(r["ops"], 5000, "{r}");
        assert_eq!(r["config"]["load"]["batch"], 7);
        // A transaction a thread committed holds 7 records, or fewer for the thread's last.
        let threads = r["config"]["threads"].as_u64().unwrap();
        let commits = r["log"]["commits"].as_u64().unwrap();
        assert!(
            (5000 / 7..=5000 / 7 + threads).contains(&commits),
            "{commits} commits of 5000 records in 7s on {threads} threads"
        );
        let rate = r["ops_per_s"].as_f64().unwrap();
        let seconds = r["seconds"].as_f64().unwrap();
        assert!(close(rate * seconds, 5000.0), "{rate} * {seconds}");
        // `leaf_splits = auto`: a lone thread splits with the tree to itself, several split
        // beside each other.
        let beside = r["splits_beside"].as_u64().unwrap();
        assert_eq!(
            beside > 0,
            threads > 1,
            "{beside} splits beside on {threads} threads"
        );
    }
}

#[test]
fn short_runs_are_flagged() {
    let mut args = vec!["bench", "ycsb", "--json", "--configs", "in-place-nodw"];
    args.extend_from_slice(&SMALL);
    args.extend_from_slice(&["--max-ops", "500"]);
    let out = wafer(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("in-place-nodw: short run: WAF over 5")
            && err.contains(" ops is not meaningful"),
        "{err}"
    );
}

/// Issue 17, TPC-C: flags given with `--config` override the file; unknown keys are errors.
#[test]
fn tpcc_flags_override_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tpcc.toml");
    let base = [
        "bench",
        "tpcc",
        "--dump-config",
        "--warehouses",
        "1",
        "--scale",
        "0.01",
    ];
    let out = wafer(&base);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::write(&path, &out.stdout).unwrap();
    let p = path.to_str().unwrap();
    let out = wafer(&[
        "bench",
        "tpcc",
        "--dump-config",
        "--config",
        p,
        "--clients",
        "3",
        "--warehouses",
        "2",
        "--no-check",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let t: toml::Table = String::from_utf8(out.stdout).unwrap().parse().unwrap();
    assert_eq!(t["run"]["clients"].as_integer(), Some(3));
    assert_eq!(t["tpcc"]["warehouses"].as_integer(), Some(2));
    assert_eq!(t["tpcc"]["scale"].as_float(), Some(0.01));
    assert_eq!(t["check"].as_bool(), Some(false));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("[run]", "[run]\ncorez = 3")).unwrap();
    let out = wafer(&["bench", "tpcc", "--dump-config", "--config", p]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("corez"), "{}", stderr(&out));
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

/// Issue 17: with --out, each configuration's result is saved as soon as it finishes, so an
/// interrupted comparison keeps the runs that finished (killed here once the first is saved).
#[test]
fn finished_runs_are_saved_before_the_comparison_ends() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wafer"))
        .args([
            "bench",
            "ycsb",
            "--configs",
            "in-place-nodw,in-place,oop,oop-all",
        ])
        .args([
            "--data-size",
            "32MiB",
            "--clients",
            "4",
            "--capacity-multiple",
            "1.5",
        ])
        .args(["--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let runs = loop {
        if let Ok(text) = std::fs::read_to_string(&out) {
            let v: serde_json::Value = serde_json::from_str(&text).expect("whole JSON");
            break v["runs"].as_array().unwrap().len();
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("wafer exited ({status}) before saving a run: {err}");
        }
        assert!(started.elapsed().as_secs() < 120, "no run was saved");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let still_running = child.try_wait().unwrap().is_none();
    child.kill().ok();
    child.wait().unwrap();
    assert!(runs >= 1);
    if still_running {
        assert!(runs < 4, "the first save came only at the end");
    }
}

/// Issue 17: --csv writes the summaries (a row per configuration and phase) and the series
/// beside the JSON, with the same numbers.
#[test]
fn csv_export_matches_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("r.csv");
    let json = bench_json(&[
        "--configs",
        "in-place-nodw,oop-all",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 2 * 3, "{text}");
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = header.iter().position(|h| *h == "total_waf").unwrap();
    let steady: Vec<&str> = lines[3].split(',').collect();
    assert_eq!(steady[..2], ["\"in-place-nodw\"", "\"steady\""]);
    let waf: f64 = steady[col].parse().unwrap();
    assert_eq!(waf, v["runs"][0]["steady"]["total_waf"].as_f64().unwrap());
    let series = std::fs::read_to_string(dir.path().join("r-series.csv")).unwrap();
    let rows = v["runs"][0]["series"].as_array().unwrap().len()
        + v["runs"][1]["series"].as_array().unwrap().len();
    assert_eq!(series.lines().count(), 1 + rows);
}

/// Reads an HdrHistogram interval log: (start s, length s, histogram) per interval.
fn read_hlog(path: &std::path::Path) -> Vec<(f64, f64, hdrhistogram::Histogram<u64>)> {
    use base64::Engine as _;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut d = hdrhistogram::serialization::Deserializer::new();
    IntervalLogIterator::new(&bytes)
        .filter_map(|e| match e.expect("log entry parses") {
            LogEntry::Interval(i) => {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(i.encoded_histogram())
                    .expect("base64");
                let h = d.deserialize(&mut &raw[..]).expect("V2 histogram");
                Some((
                    i.start_timestamp().as_secs_f64(),
                    i.duration().as_secs_f64(),
                    h,
                ))
            }
            _ => None,
        })
        .collect()
}

/// Checks a run's HdrHistogram log against its JSON: one interval per series row with the
/// row's percentiles, and together the run's whole latency histogram.
fn check_hlog(path: &std::path::Path, run: &serde_json::Value) {
    let log = read_hlog(path);
    let series = run["series"].as_array().unwrap();
    assert_eq!(log.len(), series.len(), "one histogram per interval");
    let mut all = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
    let mut start = 0.0;
    for ((t, len, h), row) in log.iter().zip(series) {
        assert!(
            (t - start).abs() < 2e-3,
            "interval starts where the last ended"
        );
        let end = row["virtual_s"].as_f64().unwrap();
        assert!(
            (t + len - end).abs() < 2e-3,
            "interval ends at its row: {t} + {len} vs {end}"
        );
        start = t + len;
        for (q, k) in [
            (0.5, "latency_ns_p50"),
            (0.99, "latency_ns_p99"),
            (0.999, "latency_ns_p999"),
        ] {
            let want = row[k].as_u64().unwrap();
            let got = if h.is_empty() {
                0
            } else {
                h.value_at_quantile(q)
            };
            assert_eq!(got, want, "{k} of the interval ending at {end}");
        }
        all.add(h).unwrap();
    }
    let l = &run["latency"];
    assert_eq!(
        all.len(),
        l["count"].as_u64().unwrap(),
        "every operation, once"
    );
    assert_eq!(all.value_at_quantile(0.99), l["p99_ns"].as_u64().unwrap());
    assert_eq!(
        all.value_at_quantile(0.9999),
        l["p9999_ns"].as_u64().unwrap()
    );
    assert_eq!(all.max(), l["max_ns"].as_u64().unwrap());
}

/// `--hdr DIR` writes one HdrHistogram interval log per configuration that reads back (with the
/// hdrhistogram crate's deserializer) to the run's latency counts, interval by interval; the
/// series carries each interval's p50/p99/p99.9.
#[test]
fn hdr_logs_read_back_to_the_same_counts() {
    let dir = tempfile::tempdir().unwrap();
    let hdr = dir.path().join("hdr");
    let json = bench_json(&[
        "--configs",
        "in-place-nodw,oop+comp",
        "--hdr",
        hdr.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    for (run, file) in v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(["in-place-nodw", "oop+comp"])
    {
        let series = run["series"].as_array().unwrap();
        assert!(series.len() >= 2);
        assert!(series
            .iter()
            .all(|r| r["latency_ns_p50"].as_u64().unwrap() > 0));
        assert!(series.iter().all(|r| {
            let p = |k: &str| r[k].as_u64().unwrap();
            p("latency_ns_p50") <= p("latency_ns_p99")
                && p("latency_ns_p99") <= p("latency_ns_p999")
        }));
        check_hlog(&hdr.join(format!("{file}.hlog")), run);
    }
    let text = std::fs::read_to_string(hdr.join("oop+comp.hlog")).unwrap();
    assert!(
        text.contains("#[Histogram log format version 1.3]"),
        "{text}"
    );
    // A --hdr that is a file is refused before the run.
    let file = dir.path().join("f");
    std::fs::write(&file, "x").unwrap();
    let mut args = vec!["bench", "ycsb", "--hdr", file.to_str().unwrap()];
    args.extend_from_slice(&SMALL);
    let out = wafer(&args);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a directory"), "{}", stderr(&out));
    let help = String::from_utf8(wafer(&["bench", "ycsb", "--help"]).stdout).unwrap();
    assert!(help.contains("--hdr <DIR>") && help.contains("HdrHistogram interval log"));
}

/// `bench tpcc --csv` writes the summaries, the series and the TPC-C figures with the numbers of
/// the JSON; `--out` carries the TPC-C figures `wafer report` shows; `--hdr` works as for YCSB.
#[test]
fn tpcc_csv_out_and_hdr_match_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let (csv, out, hdr) = (p("t.csv"), p("t.json"), p("hdr"));
    let o = wafer(&[
        "bench",
        "tpcc",
        "--json",
        "--warehouses",
        "1",
        "--scale",
        "0.01",
        "--configs",
        "in-place-nodw,oop-all",
        "--max-txns",
        "3000",
        "--crash-at-end",
        "--csv",
        &csv,
        "--out",
        &out,
        "--hdr",
        &hdr,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 2);

    // Summaries: three phases per configuration, as `bench ycsb --csv`.
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 2 * 3, "{text}");
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = |h: &[&str], k: &str| h.iter().position(|x| *x == k).unwrap();
    let steady: Vec<&str> = lines[6].split(',').collect();
    assert_eq!(steady[..2], ["\"oop-all\"", "\"steady\""]);
    let waf: f64 = steady[col(&header, "total_waf")].parse().unwrap();
    assert_eq!(
        waf,
        runs[1]["bench"]["steady"]["total_waf"].as_f64().unwrap()
    );

    // Series: one row per interval, with the New-Orders so far.
    let series = std::fs::read_to_string(p("t-series.csv")).unwrap();
    let rows: Vec<&str> = series.lines().collect();
    let n0 = runs[0]["bench"]["series"].as_array().unwrap().len();
    let n1 = runs[1]["bench"]["series"].as_array().unwrap().len();
    assert_eq!(rows.len(), 1 + n0 + n1);
    let h: Vec<&str> = rows[0].split(',').collect();
    let last: Vec<&str> = rows[n0].split(',').collect();
    assert_eq!(last[0], "\"in-place-nodw\"");
    let no: u64 = last[col(&h, "new_orders")].parse().unwrap();
    assert_eq!(no, runs[0]["new_orders"].as_u64().unwrap());
    let p99: u64 = last[col(&h, "latency_ns_p99")].parse().unwrap();
    assert_eq!(
        p99,
        runs[0]["bench"]["series"][n0 - 1]["latency_ns_p99"]
            .as_u64()
            .unwrap()
    );

    // TPC-C figures: one row per configuration.
    let figures = std::fs::read_to_string(p("t-tpcc.csv")).unwrap();
    let rows: Vec<&str> = figures.lines().collect();
    assert_eq!(rows.len(), 3, "{figures}");
    let h: Vec<&str> = rows[0].split(',').collect();
    for (row, run) in rows[1..].iter().zip(runs) {
        let c: Vec<&str> = row.split(',').collect();
        let num = |k: &str| -> f64 { c[col(&h, k)].parse().unwrap() };
        assert_eq!(num("tpmc"), run["tpmc"].as_f64().unwrap());
        assert_eq!(num("new_orders"), run["new_orders"].as_f64().unwrap());
        assert_eq!(
            num("media_bytes_per_new_order"),
            run["media_bytes_per_new_order"].as_f64().unwrap()
        );
        assert_eq!(
            num("payment_percent"),
            run["mix_percent"][1].as_f64().unwrap()
        );
        assert_eq!(
            num("recovery_redo_ms"),
            run["recovery"]["report"]["redo_us"].as_f64().unwrap() / 1e3
        );
        assert_eq!(c[col(&h, "check")], "\"pass\"");
    }

    // --out: the report file carries the same TPC-C figures.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    for (r, run) in report["runs"].as_array().unwrap().iter().zip(runs) {
        let t = &r["tpcc"];
        assert_eq!(t["tpmc"], run["tpmc"]);
        assert_eq!(t["new_orders"], run["new_orders"]);
        assert_eq!(t["mix_percent"], run["mix_percent"]);
        assert_eq!(t["recovery"], run["recovery"]);
        let host = run["bench"]["run"]["ssd_host_bytes"].as_f64().unwrap()
            / run["new_orders"].as_f64().unwrap();
        assert!((t["host_bytes_per_new_order"].as_f64().unwrap() - host).abs() < 1e-6);
        check_hlog(
            &dir.path()
                .join("hdr")
                .join(format!("{}.hlog", r["name"].as_str().unwrap())),
            r,
        );
    }

    // `wafer report` renders the --out file and the detail (--tpcc-out, --json) alike, with the
    // TPC-C tables.
    let detail = p("detail.json");
    std::fs::write(&detail, &o.stdout).unwrap();
    let mut tables = Vec::new();
    for input in [&out, &detail] {
        let html = p("r.html");
        let r = wafer(&["report", input, "-o", &html]);
        assert!(r.status.success(), "{}", stderr(&r));
        let html = std::fs::read_to_string(&html).unwrap();
        let from = html.find("<h2>TPC-C results</h2>").expect("TPC-C table");
        let to = html.find("<h2>Engine metrics (steady state)</h2>").unwrap();
        let tpmc = format!("{:.0}", runs[1]["tpmc"].as_f64().unwrap());
        let grouped: String = tpmc
            .chars()
            .enumerate()
            .flat_map(|(i, c)| {
                let sep = i > 0 && (tpmc.len() - i) % 3 == 0;
                sep.then_some(',').into_iter().chain([c])
            })
            .collect();
        assert!(
            html[from..to].contains(&format!(">{grouped}</td>")),
            "tpmC {grouped}"
        );
        assert!(html[from..to].contains("Recovery after a crash"));
        tables.push(html[from..to].to_string());
    }
    assert_eq!(
        tables[0], tables[1],
        "the same tables from --out and --tpcc-out"
    );

    let help = String::from_utf8(wafer(&["bench", "tpcc", "--help"]).stdout).unwrap();
    for flag in [
        "--csv <PATH>",
        "--hdr <DIR>",
        "HdrHistogram interval log",
        "-tpcc",
    ] {
        assert!(help.contains(flag), "{flag} in the help");
    }

    // --wall takes neither, nor any other flag of the virtual-time driver (it used to ignore
    // them silently).
    for (flag, value) in [
        ("--hdr", hdr.as_str()),
        ("--clients", "4"),
        ("--log-space", "1048576"),
        ("--buffer", "0.5"),
        ("--config", "wafer.toml"),
    ] {
        let o = wafer(&["bench", "tpcc", "--wall", flag, value]);
        assert_eq!(o.status.code(), Some(2), "{flag}");
        assert!(
            stderr(&o).contains(&format!("{flag} applies to virtual-time runs")),
            "{}",
            stderr(&o)
        );
    }
    // The configuration's engine settings do apply: its write path and the checkpoint flags.
    let o = wafer(&[
        "bench",
        "tpcc",
        "--wall",
        "--configs",
        "oop-all",
        "--warehouses",
        "1",
        "--scale",
        "0.01",
        "--threads",
        "1",
        "--seconds",
        "0.2",
        "--checkpoint-batch-pages",
        "512",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let runs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let engine = &runs[0]["config"]["engine"];
    assert_eq!(engine["checkpoint_batch_pages"], 512, "{engine}");
    assert!(engine["out_of_place"].is_object(), "{engine}");
    assert!(!engine["doublewrite"].as_bool().unwrap(), "{engine}");
}

/// Paper 001's comparison and restart on a small TPC-C run: the flushless mode writes fewer
/// pages and reads more than the ARIES mode over the same transactions, its restart writes no
/// page and undoes nothing, and bad input is refused before any run.
#[test]
fn bench_flushless_compares_the_modes_on_the_same_transactions() {
    let out = std::env::temp_dir().join(format!("wafer-flushless-{}.json", std::process::id()));
    let o = wafer(&[
        "bench",
        "flushless",
        "--experiment",
        "compare",
        "--memory",
        "0.1",
        "--txns",
        "3000",
        "--warehouses",
        "1",
        "--scale",
        "0.05",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(text.contains("proposed vs original"), "{text}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).ok();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let get = |i: usize, k: &str| runs[i][k].as_f64().unwrap();
    assert_eq!(runs[0]["config"], "in-place");
    assert_eq!(runs[1]["config"], "flushless");
    assert_eq!(
        runs[0]["summary"]["bench"]["run"]["txns"], runs[1]["summary"]["bench"]["run"]["txns"],
        "the same number of transactions"
    );
    assert!(
        get(1, "pages_written") < 0.8 * get(0, "pages_written"),
        "{text}"
    );
    assert!(get(1, "pages_read") > get(0, "pages_read"), "{text}");
    assert!(runs[1]["summary"]["flushless"]["flushless_evictions"].as_u64() > Some(0));

    let o = wafer(&[
        "bench",
        "flushless",
        "--experiment",
        "recovery",
        "--memory",
        "0.1",
        "--txns",
        "2000",
        "--warehouses",
        "1",
        "--scale",
        "0.05",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let row = text
        .lines()
        .find(|l| l.starts_with("flushless "))
        .unwrap_or_else(|| panic!("{text}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    // configuration, restart ms, log recs, redo, undo, pages R, pages W, lazy redos, W after,
    // check
    assert_eq!(cols.len(), 10, "{row}");
    assert!(cols[3].ends_with("_loaded"), "{row}");
    assert_eq!(cols[6], "0", "pages written by the restart: {row}");
    assert!(
        cols[7].parse::<u64>().unwrap() > 0,
        "lazy redo after the restart: {row}"
    );
    assert_eq!(cols[9], "pass", "{row}");

    let o = wafer(&["bench", "flushless", "--memory", "3"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));

    // The flushless presets' settings are a config table like the others: dumped, read back,
    // and named when they cannot apply.
    let o = wafer(&["bench", "tpcc", "--configs", "flushless", "--dump-config"]);
    let dump = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        dump.contains("[engine.flushless]") && dump.contains("min_del = 16"),
        "{dump}"
    );
    let file = std::env::temp_dir().join(format!("wafer-fl-{}.toml", std::process::id()));
    std::fs::write(&file, &dump).unwrap();
    let f = file.to_str().unwrap();
    let again = wafer(&[
        "bench",
        "tpcc",
        "--configs",
        "flushless",
        "--config",
        f,
        "--dump-config",
    ]);
    assert_eq!(String::from_utf8_lossy(&again.stdout), dump);
    let o = wafer(&[
        "bench",
        "tpcc",
        "--configs",
        "in-place",
        "--config",
        f,
        "--dump-config",
    ]);
    std::fs::remove_file(&file).ok();
    assert!(stderr(&o).contains("[engine.flushless] settings apply to the flushless"));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("[engine.flushless]"));
}

/// `wafer bench query` at a small scale: every experiment runs, the tables come out, the JSON
/// says what ran, the same seed gives the same virtual times on 1 and 2 threads, and bad flags
/// are refused before the tables are loaded.
#[test]
fn bench_query_runs_every_experiment_deterministically() {
    let dir = tempfile::tempdir().unwrap();
    let run = |threads: &str, name: &str| {
        let out = dir.path().join(name);
        let o = wafer(&[
            "bench",
            "query",
            "--rows",
            "4000",
            "--clusters",
            "2KiB,8KiB",
            "--memory-fractions",
            "0.05,0.5",
            "--memory",
            "256KiB",
            "--disk-cluster",
            "8KiB",
            "--temp-space",
            "64MiB",
            "--threads",
            threads,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let stdout = String::from_utf8(o.stdout).unwrap();
        for t in ["Figure 7a", "Figure 7b", "Figure 8", "Figure 6"] {
            assert!(stdout.contains(t), "{t} missing:\n{stdout}");
        }
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
        assert_eq!(v["kind"], "query");
        let runs = v["runs"].as_array().unwrap().clone();
        // 2 devices x (2 clusters + 2 memories + 2 joins + 1 phases).
        assert_eq!(runs.len(), 14);
        for r in &runs {
            assert!(r["time_ns"].as_u64().unwrap() > 0);
            let traced = r["experiment"] == "joins" || r["experiment"] == "phases";
            assert_eq!(r["trace"].is_object(), traced, "{}", r["experiment"]);
        }
        runs.iter()
            .map(|r| {
                (
                    r["experiment"].to_string(),
                    r["device"].to_string(),
                    r["time_ns"].as_u64().unwrap(),
                    r["io"].to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    let one = run("1", "one.json");
    let two = run("2", "two.json");
    assert_eq!(one, two);
    for bad in [
        vec!["--clusters", "3KiB"],
        vec!["--flash-drive", "nope"],
        vec!["--memory-fractions", "0"],
        vec!["--row-bytes", "10"],
        vec!["--memory", "16KiB"],
    ] {
        let mut args = vec!["bench", "query", "--rows", "100"];
        args.extend(bad.iter());
        let o = wafer(&args);
        assert!(!o.status.success(), "{bad:?} accepted");
        assert!(!stderr(&o).is_empty());
    }
}

/// Paper 004's ladder in one command: every rung keeps the workload's data (the runs verify
/// their trees), and the table and the JSON show what the checkpoints cost: Check-In programs no
/// redundant flash and runs fewer GC cycles and shorter checkpoints than the baseline.
#[test]
fn the_check_in_ladder_runs_side_by_side() {
    let out = wafer(&[
        "bench",
        "ycsb",
        "--configs",
        "baseline,isc-a,isc-b,isc-c,check-in",
        "--data-size",
        "48MiB",
        "--fill",
        "0.8",
        "--max-ops",
        "20000",
        "--capacity-multiple",
        "100",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 5);
    let get = |i: usize, f: &str| runs[i][f].as_f64().unwrap();
    let ck = |i: usize, f: &str| runs[i]["checkpoints"][f].as_f64().unwrap();
    let journal = |i: usize, f: &str| runs[i]["journal"][f].as_f64().unwrap();
    for run in runs {
        let name = &run["name"];
        assert!(
            run["checkpoints"]["checkpoints"].as_f64().unwrap() > 0.0,
            "{name}"
        );
        assert!(
            run["journal"]["images_moved"].as_f64().unwrap() > 0.0,
            "{name}"
        );
    }
    assert!(get(0, "ssd_redundant_write_bytes") > 0.0);
    assert_eq!(get(4, "ssd_redundant_write_bytes"), 0.0);
    assert!(get(3, "ssd_redundant_write_bytes") < get(2, "ssd_redundant_write_bytes"));
    assert_eq!(journal(1, "copy_commands"), journal(1, "copy_ranges"));
    assert!(ck(4, "mean_ns") < ck(0, "mean_ns"));
    // The human table has the ladder.
    let out = wafer(&[
        "bench",
        "ycsb",
        "--configs",
        "baseline,check-in",
        "--data-size",
        "48MiB",
        "--fill",
        "0.8",
        "--max-ops",
        "5000",
        "--capacity-multiple",
        "100",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Paper 004's ladder") && text.contains("redund B/op"),
        "{text}"
    );
}

/// `wafer bench checkin` runs each sweep at a small size and refuses bad sweep values.
#[test]
fn bench_checkin_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("checkin.json");
    let out = wafer(&[
        "bench",
        "checkin",
        "--client-counts",
        "4,16",
        "--intervals-ms",
        "100",
        "--units",
        "512,2048",
        "--data-size",
        "48MiB",
        "--fill",
        "0.8",
        "--max-ops",
        "3000",
        "--capacity-multiple",
        "100",
        "--out",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for h in ["Figure 10", "Figure 12", "Figure 13"] {
        assert!(text.contains(h), "{text}");
    }
    let points: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // 2 client counts x 5 rungs, 1 interval x 2, 2 units x 2.
    assert_eq!(points.as_array().unwrap().len(), 10 + 2 + 4);
    let o = wafer(&[
        "bench",
        "checkin",
        "--experiment",
        "units",
        "--units",
        "3000",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--units"), "{}", stderr(&o));
}

/// Paper 004's knobs: a value-size mix and the data SSD's mapping unit, from flags or the file
/// (flags win), in the run, its JSON config and its title.
#[test]
fn value_size_mixes_and_the_mapping_unit_reach_the_run() {
    let run = |extra: &[&str]| -> serde_json::Value {
        // 64 MiB: on 32 MiB the loader's 100-record transactions of large values outgrow the
        // log space the small buffer pool comes with (so do fixed 2000-byte values).
        let mut args = vec![
            "bench",
            "ycsb",
            "--json",
            "--configs",
            "in-place",
            "--data-size",
            "64MiB",
            "--fill",
            "0.8",
            "--clients",
            "4",
            "--max-ops",
            "2000",
        ];
        args.extend_from_slice(extra);
        let out = wafer(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let v = run(&["--value-size", "mix1", "--mapping-unit", "2048"]);
    let cfg = &v["runs"][0]["config"];
    assert_eq!(cfg["data_ssd"]["mapping_unit_bytes"], 2048, "{cfg}");
    assert_eq!(cfg["ycsb"]["value_sizes"], "mix1", "{cfg}");
    assert!(v["runs"][0]["run"]["ops"].as_u64().unwrap() >= 2000, "{v}");
    let title = v["title"].as_str().unwrap();
    assert!(
        title.contains("mix1 values (128..4096 B, mean 1344 B)")
            && title.contains("mapping unit 2 KiB"),
        "{title}"
    );
    // The defaults: fixed 1000-byte values on 4 KiB units, and the JSON says so.
    let cfg = &run(&[])["runs"][0]["config"];
    assert_eq!(cfg["data_ssd"]["mapping_unit_bytes"], 4096);
    assert_eq!(cfg["ycsb"]["value_sizes"], "fixed");
    assert_eq!(cfg["ycsb"]["value_bytes"], 1000);

    // In the file, and flags over the file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mix.toml");
    let text = dump(&[
        "--configs",
        "in-place",
        "--data-size",
        "32MiB",
        "--value-size",
        "128..512",
        "--mapping-unit",
        "1024",
    ]);
    assert!(text.contains("value_sizes = \"128..512\""), "{text}");
    assert!(text.contains("mapping_unit_bytes = 1024"), "{text}");
    std::fs::write(&path, &text).unwrap();
    let p = path.to_str().unwrap();
    let dumped = |extra: &[&str]| -> toml::Table {
        let mut args = vec!["--configs", "in-place", "--config", p];
        args.extend_from_slice(extra);
        dump(&args).parse().unwrap()
    };
    let file = dumped(&[]);
    assert_eq!(file["ycsb"]["value_sizes"].as_str(), Some("128..512"));
    assert_eq!(
        file["data_ssd"]["mapping_unit_bytes"].as_integer(),
        Some(1024)
    );
    let flags = dumped(&["--value-size", "700", "--mapping-unit", "4KiB"]);
    assert_eq!(flags["ycsb"]["value_sizes"].as_str(), Some("fixed"));
    assert_eq!(flags["ycsb"]["value_bytes"].as_integer(), Some(700));
    assert_eq!(
        flags["data_ssd"]["mapping_unit_bytes"].as_integer(),
        Some(4096)
    );
    // A bad unit in the file is refused as the flag is.
    std::fs::write(
        &path,
        text.replace("mapping_unit_bytes = 1024", "mapping_unit_bytes = 8192"),
    )
    .unwrap();
    let out = wafer(&[
        "bench",
        "ycsb",
        "--configs",
        "in-place",
        "--config",
        p,
        "--dump-config",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("mapping_unit_bytes"),
        "{}",
        stderr(&out)
    );
}
