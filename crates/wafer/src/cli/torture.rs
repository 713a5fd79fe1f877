//! `wafer torture`: the engine's randomized torture suite (power cuts, damaged databases,
//! concurrent transfers), deterministic by seed; prints a table of figures and one repro line
//! per failure, exits 1 if anything failed.

use super::CliError;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use wafer_workloads::torture::{self, class_name, FailureClass, Kind, RunConfig, Summary};

/// Options of `wafer torture`.
#[derive(clap::Args, Debug)]
#[command(after_long_help = KINDS_HELP)]
pub struct TortureArgs {
    /// Trials to run, split among the kinds (six cut, three mutate, one threads of every ten).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub trials: u64,
    /// Seed of trial 0; trial i has seed S+i, so `--seed <trial seed> --trials 1` repeats it.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Trial kinds: cut, mutate, threads (comma-separated; see below).
    #[arg(long, value_delimiter = ',', default_value = "cut,mutate,threads")]
    pub kinds: Vec<Kind>,
    /// Wall-clock seconds of each threads trial.
    #[arg(long, default_value_t = 0.3)]
    pub threads_secs: f64,
    /// Trials run side by side (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub workers: usize,
    /// Also write the figures as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// One line per trial (its configuration and outcome).
    #[arg(short, long)]
    pub verbose: bool,
}

const KINDS_HELP: &str = "\
Every kind runs one trial in three in the flushless buffer mode (DbConfig::flushless, random
log table share and compaction settings); the trial's configuration line names the mode.

Trial kinds:
  cut      A random configuration (in-place with or without doublewrite, out-of-place, or one
           trial in four of the in-place ones on the journal path with a random rung of paper
           004's ladder; memory devices with 512 or 4096-byte blocks, files, simulated
           conventional, ZNS and FDP SSDs;
           pools down to 16 frames, small logs), a random interleaved transaction workload, then
           a power cut at a random device command with torn and lost unflushed writes. The reopen
           may be cut again during recovery, and sometimes a few operations after it. Every
           commit that returned Ok must survive, nothing uncommitted may show, an interrupted
           commit is all or nothing, and verify/check_pages must pass.
  mutate   A small database closed cleanly, then one damage: a flipped bit, a random or zeroed
           block of the data or log image, a truncated file, or an older copy of one image put
           back. The open must give the committed contents or a typed error; an open serving
           other data without an error is 'silently wrong'.
  threads  2-8 threads transfer between accounts with retry on conflict; the balances must add up
           in every snapshot and after a reopen (also after a power cut in the middle), and the
           recorded transfers must match the commits that returned Ok.

Failures: panics, lost commits, uncommitted data visible, wrong reads, silently wrong opens,
unopenable databases after a power cut, broken invariants, failed structural checks. Each
failure prints its repro command. Exit code 1 if any.";

pub fn main(args: &TortureArgs) -> Result<(), CliError> {
    if args.kinds.is_empty() {
        return Err(CliError::Usage("--kinds needs at least one kind".into()));
    }
    if !(args.threads_secs > 0.0 && args.threads_secs <= 600.0) {
        return Err(CliError::Usage("--threads-secs must be in (0, 600]".into()));
    }
    let cfg = RunConfig {
        trials: args.trials,
        seed: args.seed,
        kinds: args.kinds.clone(),
        threads_secs: args.threads_secs,
        workers: args.workers,
        verbose: args.verbose,
    };
    let bar = if std::io::stderr().is_terminal() && args.trials > 20 {
        let b = ProgressBar::with_draw_target(Some(args.trials), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("torture [{bar:30}] {pos}/{len} trials, {msg} ETA {eta}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let progress = |done: u64, failures: u64| {
        bar.set_position(done);
        bar.set_message(format!("{failures} failures"));
    };
    let line = |s: &str| bar.suspend(|| eprintln!("{s}"));
    let summary = torture::run(&cfg, &progress, &line);
    bar.finish_and_clear();
    print_table(&summary);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&summary)
            .map_err(|e| CliError::Run(format!("cannot encode the summary: {e}")))?;
        std::fs::write(path, text)
            .map_err(|e| CliError::Run(format!("cannot write {}: {e}", path.display())))?;
    }
    match summary.failure_count() {
        0 => Ok(()),
        n => Err(CliError::Run(format!(
            "{n} failures (repro commands above and in the table)"
        ))),
    }
}

fn print_table(s: &Summary) {
    let total: u64 = s.trials.values().sum();
    println!("wafer torture: {total} trials from seed {}", s.seed);
    for k in Kind::ALL {
        println!(
            "  {:<34} {}",
            format!("trials {}", k.name()),
            s.trials.get(k.name()).copied().unwrap_or(0)
        );
    }
    println!(
        "  {:<34} {}",
        "cut points (power cuts injected)", s.cut_points
    );
    println!("  {:<34} {}", "  of which during recovery", s.recovery_cuts);
    let rows = [
        ("lost commits", FailureClass::LostCommit),
        ("uncommitted data visible", FailureClass::UncommittedVisible),
        ("wrong reads", FailureClass::WrongRead),
        ("silently wrong opens", FailureClass::SilentlyWrong),
        ("unopenable databases", FailureClass::Unopenable),
        ("broken invariants", FailureClass::InvariantBroken),
        ("failed structural checks", FailureClass::CheckFailed),
        ("panics", FailureClass::Panic),
    ];
    for (label, c) in rows {
        println!("  {label:<34} {}", s.count(c));
    }
    println!("  {:<34} {}", "failures in all", s.failure_count());
    let section = |title: &str, m: &std::collections::BTreeMap<String, u64>| {
        println!("{title}:");
        if m.is_empty() {
            println!("  (none)");
        }
        for (k, v) in m {
            println!("  {k:<50} {v}");
        }
    };
    section("typed rejections by class", &s.typed_rejections);
    section(
        "engine errors seen by the workloads, by class",
        &s.workload_errors,
    );
    section("other outcomes", &s.notes);
    if !s.failures.is_empty() {
        println!("failures (first 50; repro commands):");
        for f in s.failures.iter().take(50) {
            println!(
                "  {} seed {}: {}: {}",
                f.kind.name(),
                f.seed,
                class_name(f.class),
                first_line(&f.message)
            );
            println!("    {}", f.repro);
        }
    }
    println!("wall time {:.1} s", s.wall_secs);
}

fn first_line(s: &str) -> &str {
    let s = s.lines().next().unwrap_or("");
    match s.char_indices().nth(300) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
