//! `wafer-peers`: YCSB-shaped workloads on wafer, redb, LMDB (heed), fjall and (with the
//! `rocksdb` feature) RocksDB, side by side. Each measurement (engine, workload, thread count,
//! round) runs in a child process of its own (this binary re-run with `--one`): every engine
//! starts on a fresh heap and its peak RSS is its own.

mod engines;
mod workload;

use clap::Parser;
use engines::{EngineKind, Mode, Res, Sizing};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use workload::{ValuePool, Workload};

/// Side-by-side YCSB benchmark of wafer, redb, LMDB (heed), fjall and RocksDB.
///
/// Every engine gets the same keys (`user` + 20-digit zero-padded id, 24 bytes), the same
/// values (incompressible, --value-size bytes), the same Zipfian (theta 0.99) request stream for
/// a given --seed and thread index, and a cache large enough to hold the whole data set. Every
/// operation is one transaction. Each (round, workload, threads, engine) measurement runs in a
/// child process that loads --records records and then runs the workload for --seconds; rounds
/// alternate the engines, and the table shows the median of --repeats rounds with the range.
#[derive(Parser, Debug, Clone)]
#[command(name = "wafer-peers", version, about, long_about)]
struct Cli {
    /// Engines to run, comma-separated: wafer, wafer-txn, wafer-si, redb, lmdb, fjall, rocksdb
    /// (rocksdb only in a build with `--features rocksdb`).
    #[arg(long, value_delimiter = ',', default_value = "wafer,redb,lmdb,fjall")]
    engines: Vec<EngineKind>,

    /// Workloads, comma-separated: load (bulk load of all records, --batch a transaction,
    /// single-threaded, reported as records/s), c (100% reads), a (50% reads, 50% updates),
    /// e (95% scans of 1..=100 records from a Zipfian start key, 5% inserts).
    #[arg(long, value_delimiter = ',', default_value = "load,c,a,e")]
    workloads: Vec<Workload>,

    /// Client thread counts, comma-separated; each is a separate measurement. Each thread runs
    /// its own transactions, with its own random stream (seeded from --seed and its index).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Vec<u32>,

    /// Records loaded before each run (ids 0..records).
    #[arg(long, default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(1..=100_000_000_000))]
    records: u64,

    /// Bytes of every value.
    #[arg(long, default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    value_size: u32,

    /// Seconds each measured run lasts (after the load).
    #[arg(long, default_value_t = 5.0, value_parser = parse_seconds)]
    seconds: f64,

    /// Rounds; each round runs every selected engine once per workload and thread count, and
    /// the table reports the median and the range over the rounds.
    #[arg(long, default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeats: u32,

    /// memory: commits need not reach the disk (wafer on in-memory devices with
    /// durable_commits = false; redb Durability::None; LMDB NO_SYNC|NO_META_SYNC|WRITE_MAP;
    /// fjall without a journal sync; RocksDB WAL on, sync=false). durable: every commit is durable when it returns (wafer on
    /// files; redb Durability::Immediate; LMDB default syncing; fjall PersistMode::SyncAll;
    /// RocksDB sync=true).
    #[arg(long, value_enum, default_value_t = Mode::Memory)]
    mode: Mode,

    /// Directory for the engines' files (each run gets a fresh subdirectory, removed after
    /// it). Default: a new temporary directory, removed at the end.
    #[arg(long)]
    dir: Option<PathBuf>,

    /// Records per transaction of the bulk load.
    #[arg(long, default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    batch: u64,

    /// Seed of the request streams and values (the same for every engine).
    #[arg(long, default_value_t = 42)]
    seed: u64,

    /// Print the results as JSON (every run and the summary) on stdout instead of the table.
    #[arg(long)]
    json: bool,

    /// Print each run's engine statistics (for engines that keep them: wafer) as one JSON
    /// line on stderr after the run, prefixed with `stats:`.
    #[arg(long)]
    engine_stats: bool,

    /// Internal: run exactly one measurement (one engine, one workload, one thread count) in
    /// this process, in --dir, and print its result as one JSON line. The parent runs itself
    /// with this flag once per measurement.
    #[arg(long)]
    one: bool,
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if v.is_finite() && v > 0.0 && v <= 86_400.0 {
        Ok(v)
    } else {
        Err(format!("must be more than 0 and at most 86400, not {v}"))
    }
}

/// The result of one measurement, as a child prints it.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
struct RunResult {
    engine: String,
    workload: String,
    threads: u32,
    round: u32,
    /// Operations (records for the load) a second.
    ops_per_s: f64,
    ops: u64,
    seconds: f64,
    retries: u64,
    read_misses: u64,
    scanned: u64,
    /// Records a second of the load that preceded the run.
    load_records_per_s: f64,
    /// VmHWM of the child process, KiB (0 if unknown).
    peak_rss_kib: u64,
}

/// One line of the summary.
#[derive(Clone, Debug, Serialize)]
struct Summary {
    engine: String,
    workload: String,
    threads: u32,
    runs: usize,
    median_ops_per_s: f64,
    min_ops_per_s: f64,
    max_ops_per_s: f64,
    median_peak_rss_mib: f64,
    retries: u64,
    read_misses: u64,
}

fn main() {
    let cli = Cli::parse();
    let r = if cli.one { one(&cli) } else { parent(&cli) };
    if let Err(e) = r {
        eprintln!("wafer-peers: error: {e}");
        std::process::exit(1);
    }
}

/// Checks the selections; clap has checked each value.
fn check(cli: &Cli) -> Res<()> {
    for (what, empty) in [
        ("--engines", cli.engines.is_empty()),
        ("--workloads", cli.workloads.is_empty()),
        ("--threads", cli.threads.is_empty()),
    ] {
        if empty {
            return Err(format!("{what} needs at least one value").into());
        }
    }
    for e in &cli.engines {
        if !e.available() {
            return Err(format!(
                "engine `{}` is not in this build: rebuild with `--features {}`",
                e.name(),
                e.name()
            )
            .into());
        }
    }
    let cap = 10u64.pow((workload::KEY_BYTES - 4) as u32);
    if cli.records >= cap / 2 {
        return Err(format!("--records must be below {}", cap / 2).into());
    }
    Ok(())
}

/// The child: one measurement.
fn one(cli: &Cli) -> Res<()> {
    check(cli)?;
    let ([engine], [workload], [threads]) =
        (&cli.engines[..], &cli.workloads[..], &cli.threads[..])
    else {
        return Err("--one takes exactly one engine, one workload and one thread count".into());
    };
    let dir = cli.dir.as_deref().ok_or("--one needs --dir")?;
    let round = std::env::var("WAFER_PEERS_ROUND")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    let sizing = Sizing {
        records: cli.records,
        key_bytes: workload::KEY_BYTES,
        value_bytes: cli.value_size as usize,
    };
    let values = Arc::new(ValuePool::new(cli.seed, cli.value_size as usize));
    let kv: Arc<dyn engines::Kv> = engines::open(*engine, cli.mode, dir, sizing)?.into();
    let load_seconds = workload::load(&*kv, cli.records, cli.batch, &values)?;
    let load_rps = cli.records as f64 / load_seconds;
    let mut m = if *workload == Workload::Load {
        workload::Measured {
            ops: cli.records,
            seconds: load_seconds,
            ..Default::default()
        }
    } else {
        workload::run(
            kv.clone(),
            *workload,
            cli.records,
            *threads,
            Duration::from_secs_f64(cli.seconds),
            cli.seed,
            values,
        )?
    };
    m.load_seconds = load_seconds;
    if cli.engine_stats {
        if let Some(s) = kv.stats_json() {
            eprintln!("stats: {s}");
        }
    }
    let result = RunResult {
        engine: engine.name().into(),
        workload: workload.name().into(),
        threads: if *workload == Workload::Load {
            1
        } else {
            *threads
        },
        round,
        ops_per_s: m.ops as f64 / m.seconds,
        ops: m.ops,
        seconds: m.seconds,
        retries: m.retries,
        read_misses: m.read_misses,
        scanned: m.scanned,
        load_records_per_s: load_rps,
        peak_rss_kib: peak_rss_kib(),
    };
    println!("{}", serde_json::to_string(&result)?);
    Ok(())
}

/// VmHWM of this process in KiB (0 where /proc is missing).
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The parent: every measurement in a child, then the summary.
fn parent(cli: &Cli) -> Res<()> {
    check(cli)?;
    let exe = std::env::current_exe()?;
    let _tmp;
    let base: PathBuf = match &cli.dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .map_err(|e| format!("cannot create --dir {}: {e}", d.display()))?;
            d.clone()
        }
        None => {
            let t = tempfile::Builder::new().prefix("wafer-peers-").tempdir()?;
            let p = t.path().to_path_buf();
            _tmp = t;
            p
        }
    };
    let mut results: Vec<RunResult> = Vec::new();
    for round in 1..=cli.repeats {
        for &w in &cli.workloads {
            // The load is single-threaded: one measurement whatever --threads says.
            let thread_counts: &[u32] = if w == Workload::Load {
                &[1]
            } else {
                &cli.threads
            };
            for &threads in thread_counts {
                for &e in &cli.engines {
                    let dir = base.join(format!("{}-{}-t{threads}-r{round}", e.name(), w.name()));
                    let r = child(&exe, cli, e, w, threads, round, &dir);
                    let _ = std::fs::remove_dir_all(&dir);
                    let r = r?;
                    eprintln!(
                        "round {round}/{} {:<8} {:<5} threads {:<3} {:>10.1} kops/s  peak RSS {:>6} MiB{}",
                        cli.repeats,
                        r.engine,
                        r.workload,
                        r.threads,
                        r.ops_per_s / 1e3,
                        r.peak_rss_kib / 1024,
                        if r.retries > 0 {
                            format!("  retries {}", r.retries)
                        } else {
                            String::new()
                        }
                    );
                    results.push(r);
                }
            }
        }
    }
    let summary = summarise(cli, &results);
    if cli.json {
        let doc = serde_json::json!({
            "config": {
                "engines": cli.engines, "workloads": cli.workloads, "threads": cli.threads,
                "records": cli.records, "value_size": cli.value_size, "key_size": workload::KEY_BYTES,
                "seconds": cli.seconds, "repeats": cli.repeats, "mode": cli.mode,
                "batch": cli.batch, "seed": cli.seed, "theta": workload::THETA,
            },
            "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            "summary": summary,
            "runs": results,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_table(cli, &summary);
    }
    Ok(())
}

/// Runs one measurement in a child process and reads its result.
fn child(
    exe: &Path,
    cli: &Cli,
    e: EngineKind,
    w: Workload,
    threads: u32,
    round: u32,
    dir: &Path,
) -> Res<RunResult> {
    let mode = mode_name(cli.mode);
    let mut cmd = Command::new(exe);
    if cli.engine_stats {
        cmd.arg("--engine-stats");
    }
    let out = cmd
        .arg("--one")
        .args(["--engines", e.name(), "--workloads", w.name()])
        .args(["--threads", &threads.to_string()])
        .args(["--records", &cli.records.to_string()])
        .args(["--value-size", &cli.value_size.to_string()])
        .args(["--seconds", &cli.seconds.to_string()])
        .args(["--mode", mode, "--batch", &cli.batch.to_string()])
        .args(["--seed", &cli.seed.to_string()])
        .arg("--dir")
        .arg(dir)
        .env("WAFER_PEERS_ROUND", round.to_string())
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "the run of {} on workload {} with {threads} threads failed ({})",
            e.name(),
            w.name(),
            out.status
        )
        .into());
    }
    let line = String::from_utf8_lossy(&out.stdout);
    Ok(serde_json::from_str(line.trim())
        .map_err(|err| format!("unreadable result from the child ({err}): {line}"))?)
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Memory => "memory",
        Mode::Durable => "durable",
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn summarise(cli: &Cli, results: &[RunResult]) -> Vec<Summary> {
    let mut out = Vec::new();
    for &w in &cli.workloads {
        let thread_counts: &[u32] = if w == Workload::Load {
            &[1]
        } else {
            &cli.threads
        };
        for &threads in thread_counts {
            for &e in &cli.engines {
                let runs: Vec<&RunResult> = results
                    .iter()
                    .filter(|r| {
                        r.engine == e.name() && r.workload == w.name() && r.threads == threads
                    })
                    .collect();
                if runs.is_empty() {
                    continue;
                }
                let mut ops: Vec<f64> = runs.iter().map(|r| r.ops_per_s).collect();
                let mut rss: Vec<f64> = runs
                    .iter()
                    .map(|r| r.peak_rss_kib as f64 / 1024.0)
                    .collect();
                out.push(Summary {
                    engine: e.name().into(),
                    workload: w.name().into(),
                    threads,
                    runs: runs.len(),
                    median_ops_per_s: median(&mut ops),
                    min_ops_per_s: ops[0],
                    max_ops_per_s: ops[ops.len() - 1],
                    median_peak_rss_mib: median(&mut rss),
                    retries: runs.iter().map(|r| r.retries).sum(),
                    read_misses: runs.iter().map(|r| r.read_misses).sum(),
                });
            }
        }
    }
    out
}

fn print_table(cli: &Cli, summary: &[Summary]) {
    println!(
        "mode {}, {} records, {}-byte keys, {}-byte values, {} s runs, median of {} rounds \
         (kops/s; load: thousand records/s)",
        mode_name(cli.mode),
        cli.records,
        workload::KEY_BYTES,
        cli.value_size,
        cli.seconds,
        cli.repeats
    );
    println!(
        "{:<8} {:>7} {:<8} {:>10} {:>21} {:>13} {:>8}",
        "workload", "threads", "engine", "kops/s", "min-max", "peak RSS MiB", "retries"
    );
    for s in summary {
        println!(
            "{:<8} {:>7} {:<8} {:>10.1} {:>21} {:>13.0} {:>8}",
            s.workload,
            s.threads,
            s.engine,
            s.median_ops_per_s / 1e3,
            format!("{:.1}-{:.1}", s.min_ops_per_s / 1e3, s.max_ops_per_s / 1e3),
            s.median_peak_rss_mib,
            s.retries
        );
    }
    if summary.iter().any(|s| s.read_misses > 0) {
        println!("warning: some reads found no record (see --json: read_misses)");
    }
}
