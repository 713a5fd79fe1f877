//! End-to-end tests of the `wafer` binary on small simulated devices (well under a second each;
//! the `wafer ssd mount` and `wafer realdb` tests in `mount`, which need root and /dev/fuse, a
//! few seconds).

mod mount;

use serde_json::Value;
use std::process::{Command, Output};

const SMALL: &[&str] = &["sim", "--capacity", "64MiB", "--geometry", "small"];

fn wafer(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wafer"))
        .args(args)
        .output()
        .expect("run wafer")
}

fn small(extra: &[&str]) -> Output {
    let args: Vec<&str> = SMALL.iter().chain(extra).copied().collect();
    wafer(&args)
}

fn json(extra: &[&str]) -> (Value, Vec<u8>) {
    let args: Vec<&str> = extra.iter().copied().chain(["--json"]).collect();
    let out = small(&args);
    assert!(
        out.status.success(),
        "wafer failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    (v, out.stdout)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_works() {
    let top = wafer(&["--help"]);
    assert!(top.status.success());
    assert!(String::from_utf8_lossy(&top.stdout).contains("sim"));
    let sim = wafer(&["sim", "--help"]);
    assert!(sim.status.success());
    let text = String::from_utf8_lossy(&sim.stdout);
    for flag in [
        "--capacity",
        "--sf",
        "--op",
        "--pattern",
        "--mode",
        "--json",
        "--seed",
    ] {
        assert!(text.contains(flag), "help lacks {flag}");
    }
}

#[test]
fn uniform_json_summary_is_sane() {
    let (v, _) = json(&["--capacity-multiple", "2"]);
    let waf = v["waf_cumulative"].as_f64().unwrap();
    let steady = v["waf_steady"].as_f64().unwrap();
    assert!(waf >= 1.0 && steady >= 1.0, "{waf} {steady}");
    assert!(
        waf > 1.5,
        "uniform random writes at ~11% spare must amplify: {waf}"
    );
    assert_eq!(v["rows"].as_array().unwrap().len(), 8);
    assert_eq!(v["mode"], "conventional");
    assert_eq!(v["workload"]["seed"], 42);
    assert_eq!(v["ssd"]["seed"], 42);
    assert_eq!(v["capacity"]["logical_bytes"], 64u64 << 20);
    assert!(v["write_latency"]["p99_ns"].as_u64().unwrap() > 0);
    assert!(v["counters"]["gc_runs"].as_u64().unwrap() > 0);
}

#[test]
fn same_flags_give_byte_identical_json() {
    let flags = [
        "--pattern",
        "zipf:0.9",
        "--read-share",
        "0.2",
        "--capacity-multiple",
        "1",
        "--qd",
        "8",
    ];
    let (_, a) = json(&flags);
    let (_, b) = json(&flags);
    assert!(a == b, "two runs with the same flags differ");
    let seeded: Vec<&str> = flags.iter().copied().chain(["--seed", "7"]).collect();
    let (_, c) = json(&seeded);
    assert!(a != c, "the seed has no effect");
}

#[test]
fn bad_values_fail_with_clear_messages() {
    let o = small(&["--sf", "1.5"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("spare factor 1.5 is outside"),
        "{}",
        stderr(&o)
    );

    let o = small(&["--pattern", "bogus"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unknown pattern"), "{}", stderr(&o));

    let o = small(&["--sf", "0.1", "--op", "0.2"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));

    let o = small(&["--handles", "4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--handles only applies to --mode fdp"));

    // Valid flags, but the device they describe is impossible: a config error, no panic.
    let o = small(&["--mapping-unit", "3000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("mapping_unit_bytes"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"));
}

#[test]
fn zns_has_waf_exactly_one() {
    let (v, _) = json(&[
        "--mode",
        "zns",
        "--pattern",
        "hotcold:0.9:0.1",
        "--read-share",
        "0.25",
        "--capacity-multiple",
        "2",
    ]);
    assert_eq!(v["mode"], "zns");
    assert_eq!(v["waf_cumulative"].as_f64(), Some(1.0));
    assert_eq!(v["waf_steady"].as_f64(), Some(1.0));
    assert!(v["counters"]["zone_resets"].as_u64().unwrap() > 0);
    assert_eq!(v["counters"]["gc_runs"], 0);
}

/// Sizes the help offers in decimal units are rounded to the mapping unit, with a note; a
/// device whose erase units make the flash round far up says which spare factor it really has;
/// the README's FDP example runs.
#[test]
fn sizes_round_and_the_real_spare_factor_is_said() {
    let o = wafer(&[
        "sim",
        "--capacity",
        "1GB",
        "--capacity-multiple",
        "0.05",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("using 999997440 B"), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ssd"]["logical_bytes"], 999_997_440u64);
    // 1 GiB on 384 MiB erase units: 3 GiB of flash, spare factor 0.67, not 0.10.
    let o = wafer(&["sim", "--capacity", "1GiB", "--capacity-multiple", "0.05"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("spare factor 0.667, not the 0.100"),
        "{}",
        stderr(&o)
    );
    // The engine benchmarks' --data-size takes decimal units too.
    let o = wafer(&[
        "bench",
        "ycsb",
        "--configs",
        "in-place-nodw",
        "--data-size",
        "32MB",
        "--max-ops",
        "500",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("using 31997952 B"), "{}", stderr(&o));
    // --sf 0 cannot be met (GC needs its reserve): said, not silently changed.
    let o = small(&["--sf", "0", "--capacity-multiple", "0.05"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("not the 0.000 asked"), "{}", stderr(&o));
    let o = wafer(&[
        "sim",
        "--mode",
        "fdp",
        "--handles",
        "4",
        "--pattern",
        "zipf:0.99",
        "--json",
        "--capacity-multiple",
        "0.05",
    ]);
    assert!(o.status.success(), "README's FDP example: {}", stderr(&o));
}

/// A block trace replays on the simulated device: the small fio iolog in the repository (reads,
/// writes and a trim), and a random-write trace of five capacities against the synthetic uniform
/// pattern on the same device: the same WAF within 2%.
#[test]
fn a_trace_replays_and_matches_the_synthetic_pattern() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/random-4k.iolog");
    let o = small(&["--trace", data, "--capacity-multiple", "0.5", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["trace"]["format"], "fio-v2");
    assert_eq!(v["trace"]["trims"], 1);
    assert!(v["run"]["read_ops"].as_u64().unwrap() > 0, "{}", v["run"]);
    // A uniform random-write trace: 5 x 16384 units of a 64 MiB device (xorshift, fixed seed).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("uniform.iolog");
    let mut text = String::from("fio version 2 iolog\n");
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..5 * 16384 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.push_str(&format!("/dev/t write {} 4096\n", (x % 16384) * 4096));
    }
    std::fs::write(&path, text).unwrap();
    let path = path.to_str().unwrap();
    let waf = |extra: &[&str]| {
        let (v, _) = json(&[&["--capacity-multiple", "4", "--no-timing"], extra].concat());
        v["waf_cumulative"].as_f64().unwrap()
    };
    let (traced, synthetic) = (waf(&["--trace", path]), waf(&["--pattern", "uniform"]));
    assert!(
        (traced / synthetic - 1.0).abs() < 0.02,
        "trace WAF {traced} against the uniform pattern's {synthetic}"
    );
    let o = small(&["--trace", data, "--pattern", "uniform"]);
    assert!(
        !o.status.success(),
        "--trace and --pattern together must be refused"
    );
}

/// `--cell` sets the NAND timing and endurance: the same WAF, slower writes from SLC to TLC.
#[test]
fn cell_presets_set_timing_and_endurance() {
    let run = |cell: &str| {
        let (v, _) = json(&["--cell", cell, "--capacity-multiple", "0.5"]);
        (
            v["ssd"]["wear"]["pe_limit"].as_u64().unwrap(),
            v["run"]["write_mb_s"].as_f64().unwrap(),
            v["waf_cumulative"].as_f64().unwrap(),
        )
    };
    let (slc, mlc, tlc) = (run("slc"), run("mlc"), run("tlc"));
    assert_eq!((slc.0, mlc.0, tlc.0), (100_000, 3_000, 1_000));
    assert!(slc.1 > mlc.1 && mlc.1 > tlc.1, "{slc:?} {mlc:?} {tlc:?}");
    assert_eq!(slc.2, tlc.2, "timing must not change WAF");
}

/// `--csv` writes the interval rows with the JSON's numbers.
#[test]
fn sim_csv_has_the_rows_of_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("s.csv");
    let (v, _) = json(&["--capacity-multiple", "1", "--csv", csv.to_str().unwrap()]);
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(lines.len(), 1 + rows.len(), "{text}");
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = header.iter().position(|h| *h == "waf_interval").unwrap();
    let last: Vec<&str> = lines[rows.len()].split(',').collect();
    let waf: f64 = last[col].parse().unwrap();
    assert_eq!(waf, rows.last().unwrap()["waf_interval"].as_f64().unwrap());
}

#[test]
fn human_output_has_header_rows_and_result() {
    let o = small(&["--capacity-multiple", "1", "--no-timing"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for part in [
        "geometry",
        "spare factor",
        "WAF int",
        "cumulative",
        "erase count",
    ] {
        assert!(text.contains(part), "output lacks '{part}':\n{text}");
    }
}

#[test]
fn out_file_and_config_file_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("sim.toml");
    let out = dir.path().join("summary.json");
    let dump = small(&[
        "--mode",
        "fdp",
        "--handles",
        "2",
        "--sf",
        "0.2",
        "--pattern",
        "streams:2",
        "--capacity-multiple",
        "1",
        "--no-timing",
        "--dump-config",
    ]);
    assert!(dump.status.success(), "{}", stderr(&dump));
    std::fs::write(&cfg, &dump.stdout).unwrap();
    let o = wafer(&[
        "sim",
        "--config",
        cfg.to_str().unwrap(),
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let written = std::fs::read(&out).unwrap();
    assert_eq!(written, o.stdout, "--out differs from stdout");
    let v: Value = serde_json::from_slice(&written).unwrap();
    assert_eq!(v["mode"], "fdp");
    assert_eq!(v["handles"].as_array().unwrap().len(), 2);
    assert_eq!(v["workload"]["pattern"]["kind"], "streams");
    assert_eq!(v["ssd"]["timing"]["enabled"], false);
    // Flags override the file.
    let o = wafer(&[
        "sim",
        "--config",
        cfg.to_str().unwrap(),
        "--pattern",
        "uniform",
        "--capacity-multiple",
        "0.5",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["workload"]["pattern"]["kind"], "uniform");
    assert_eq!(v["params"]["capacity_multiple"].as_f64(), Some(0.5));
    assert_eq!(v["mode"], "fdp");
}

#[test]
fn torture_runs_and_prints_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("torture.json");
    let out = wafer(&[
        "torture",
        "--trials",
        "6",
        "--seed",
        "1",
        "--threads-secs",
        "0.1",
        "--json",
        json.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    // Exit code 0 when nothing failed, 1 when a trial found an engine failure; never a usage
    // error or a crash of the tool.
    let code = out.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "exit {code:?}: {}",
        stderr(&out)
    );
    for row in [
        "wafer torture: 6 trials from seed 1",
        "trials cut",
        "trials mutate",
        "trials threads",
        "cut points",
        "lost commits",
        "silently wrong opens",
        "unopenable databases",
        "panics",
        "typed rejections by class",
        "engine errors seen by the workloads",
        "wall time",
    ] {
        assert!(text.contains(row), "no '{row}' in:\n{text}");
    }
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let trials: u64 = v["trials"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(trials, 6);
    assert!(v["cut_points"].as_u64().unwrap() >= 1);
    let failed = v["failures"].as_array().unwrap().len();
    assert_eq!(
        code == Some(1),
        failed > 0,
        "exit code and failures disagree"
    );
    for f in v["failures"].as_array().unwrap() {
        let repro = f["repro"].as_str().unwrap();
        assert!(repro.starts_with("wafer torture --kinds "), "{repro}");
    }
    let help = wafer(&["torture", "--help"]);
    let h = String::from_utf8_lossy(&help.stdout);
    for word in [
        "--trials", "--seed", "--kinds", "--json", "cut", "mutate", "threads",
    ] {
        assert!(h.contains(word), "torture --help lacks {word}");
    }
    let o = wafer(&["torture", "--trials", "0"]);
    assert_eq!(o.status.code(), Some(2), "--trials 0 runs nothing: refused");
}

/// Issue 17: a misspelt key in the device table of `wafer sim --config` is an error naming it.
#[test]
fn unknown_device_keys_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let dump = small(&["--dump-config"]);
    assert!(dump.status.success(), "{}", stderr(&dump));
    let text = String::from_utf8(dump.stdout).unwrap();
    // Each case adds one misspelt key beside the real ones (so nothing else is wrong).
    let add = |header: &str, line: &str| text.replace(header, &format!("{header}\n{line}"));
    for (key, bad) in [
        ("readns", add("[ssd.timing]", "readns = 1")),
        ("chanels", add("[ssd.geometry]", "chanels = 3")),
        ("pe_limt", add("[ssd.wear]", "pe_limt = 3")),
        ("separate_gc", add("[ssd.gc]", "separate_gc = true")),
    ] {
        assert!(bad != text, "{key}: nothing replaced");
        let path = dir.path().join("sim.toml");
        std::fs::write(&path, bad).unwrap();
        let o = wafer(&["sim", "--config", path.to_str().unwrap(), "--dump-config"]);
        assert_eq!(o.status.code(), Some(2), "{key}: {}", stderr(&o));
        assert!(stderr(&o).contains(key), "{key}: {}", stderr(&o));
        assert!(stderr(&o).contains("sim.toml"), "{}", stderr(&o));
    }
}

/// `--drive NAME` builds the named drive's shape and interface at the size --capacity asks,
/// names the drive in the report, conflicts with --geometry, and dumps to a config that reads
/// back to the same device.
#[test]
fn sim_drive_presets_run_and_are_named() {
    let dir = tempfile::tempdir().unwrap();
    for (drive, mode, pages_per_block) in [
        ("pm9a3", "conventional", 1536),
        ("zn540", "zns", 1077),
        ("p3-plus", "conventional", 2048),
    ] {
        let run = ["sim", "--drive", drive, "--capacity", "2GiB"];
        let quick = ["--capacity-multiple", "0.05", "--no-timing"];
        let args: Vec<&str> = run.iter().chain(&quick).copied().collect();
        let o = wafer(&args);
        assert!(o.status.success(), "{drive}: {}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            text.contains(&format!("drive       {drive}:")),
            "{drive}: {text}"
        );

        let args: Vec<&str> = args.iter().copied().chain(["--json"]).collect();
        let o = wafer(&args);
        assert!(o.status.success(), "{drive}: {}", stderr(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["mode"], mode, "{drive}");
        assert_eq!(v["ssd"]["geometry"]["pages_per_block"], pages_per_block);

        let args: Vec<&str> = run.iter().copied().chain(["--dump-config"]).collect();
        let dump = wafer(&args);
        assert!(dump.status.success(), "{drive}: {}", stderr(&dump));
        let text = String::from_utf8(dump.stdout).unwrap();
        assert!(
            text.starts_with(&format!("# [ssd]: --drive {drive} (")),
            "{text}"
        );
        let path = dir.path().join(format!("{drive}.toml"));
        std::fs::write(&path, &text).unwrap();
        let again = wafer(&["sim", "--config", path.to_str().unwrap(), "--dump-config"]);
        assert!(again.status.success(), "{drive}: {}", stderr(&again));
        let settings = text.split_once('\n').unwrap().1;
        assert_eq!(
            String::from_utf8(again.stdout).unwrap(),
            settings,
            "{drive}"
        );
    }
    let o = wafer(&["sim", "--drive", "zn540", "--geometry", "small"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--drive") && stderr(&o).contains("--geometry"));
    let o = wafer(&["sim", "--drive", "ssd9000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("pm9a3, zn540, p3-plus"),
        "{}",
        stderr(&o)
    );
}

/// `--cell qlc` sets the QLC figures, and a QLC device is slower than a TLC one under the same
/// writes (same WAF).
#[test]
fn sim_cell_qlc_sets_qlc_timing() {
    let (q, _) = json(&["--cell", "qlc", "--capacity-multiple", "0.5"]);
    let t = &q["ssd"]["timing"];
    assert_eq!(t["read_ns"], 120_000);
    assert_eq!(t["program_ns"], 2_000_000);
    assert_eq!(t["erase_ns"], 10_000_000);
    assert_eq!(q["ssd"]["wear"]["pe_limit"], 1000);
    let (tlc, _) = json(&["--cell", "tlc", "--capacity-multiple", "0.5"]);
    assert_eq!(q["waf_cumulative"], tlc["waf_cumulative"]);
    let time = |v: &Value| v["run"]["virtual_elapsed_ns"].as_u64().unwrap();
    assert!(time(&q) > time(&tlc), "{} vs {}", time(&q), time(&tlc));
}

/// `wafer bench mvcc` at a small size: three old versions of every row are read back from the
/// rollback segments, the disk far slower than flash, and the result makes a report page with
/// the reads' scatter.
#[test]
fn bench_mvcc_and_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mvcc.json");
    let o = wafer(&[
        "bench",
        "mvcc",
        "--rows",
        "2000",
        "--txns",
        "300",
        "--tpcc-scale",
        "0.02",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("undo pages read"), "{text}");
    assert!(text.contains("TPC-C (16 warehouses"), "{text}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(r["kind"], "mvcc");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        assert_eq!(run["chain_reads"], 6000, "{}", run["device"]);
    }
    let t = |i: usize| runs[i]["read_ns"].as_f64().unwrap();
    assert!(t(0) > 10.0 * t(1), "disk {} vs flash {}", t(0), t(1));
    let html = dir.path().join("mvcc.html");
    let o = wafer(&[
        "report",
        out.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Figure 5") && page.contains("Figure 4") && page.contains("<svg"));
    // The writes: TPC-C's terminals interleaved, one segment per concurrent transaction, the raw
    // disk slower than flash.
    let w = r["writes"].as_array().unwrap();
    assert_eq!(w.len(), 3);
    assert!(w
        .iter()
        .all(|x| x["workload"] == "tpcc" && x["tpcc"][1] == true));
    assert!(w.iter().all(|x| x["segments"].as_u64().unwrap() >= 16));
    let per_block = |i: usize| w[i]["write_ns_per_block"].as_f64().unwrap();
    assert!(per_block(1) > per_block(2), "write-through disk vs flash");
}
