//! The randomized torture suite: many small trials, each deterministic by its seed, that try to
//! make the engine lose a commit, show uncommitted data, serve wrong data from a damaged
//! database, refuse to reopen after a power cut, or panic. It uses only the engine's public API
//! (and its `device` module) and flashsim.
//!
//! Every kind runs one trial in three in the flushless buffer mode (`DbConfig::flushless`, drawn
//! by [`cut::flushless_mode`] from a stream of its own, so a seed's other choices are those it
//! had before that mode existed); an engine error the workloads get there, `TableFull` like
//! `LogFull`, `Full` or `Conflict`, is a refused operation: the transaction is given up.
//!
//! Trial kinds:
//! - [`cut`]: a random configuration (write path, device kind, block size, pool and log size), a
//!   random interleaved transaction workload, a power cut at a random device command (torn and
//!   lost unflushed writes), a reopen that may itself be cut, and sometimes a second cut soon
//!   after the reopen; the recovered state must be the committed one.
//! - [`mutate`]: a small database closed cleanly, then exactly one thing damaged (a flipped bit,
//!   a random or zeroed block, a truncated file, a stale copy of the data or log image); the
//!   open must give the right contents or a typed error, never wrong data.
//! - [`threads`]: concurrent transfers between accounts with retry on conflict; the sum of the
//!   balances never changes, before and after a reopen (and after a power cut in the middle).
//!
//! Trial `i` of a run with seed `S` has seed `S + i`; [`run_trial`] with that seed and kind
//! repeats it (`wafer torture --kinds <kind> --seed <trial seed> --trials 1 -v`).

pub mod cut;
pub mod mutate;
pub mod oracle;
pub mod rig;
pub mod threads;
pub mod workload;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// A kind of trial.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Power cuts during a workload, during recovery and after it.
    Cut,
    /// One damage to a cleanly closed database.
    Mutate,
    /// Concurrent transfers with a balance invariant.
    Threads,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 3] = [Kind::Cut, Kind::Mutate, Kind::Threads];

    /// The kind's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Cut => "cut",
            Kind::Mutate => "mutate",
            Kind::Threads => "threads",
        }
    }
}

impl std::str::FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Kind, String> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown trial kind '{s}' (cut, mutate, threads)"))
    }
}

/// What counts as a failure of the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// A panic inside the engine (or the trial).
    Panic,
    /// A transaction whose commit returned Ok is missing or changed after recovery.
    LostCommit,
    /// Data of a transaction that did not commit (or part of an interrupted one) is visible.
    UncommittedVisible,
    /// A read inside a transaction returned something else than the oracle says.
    WrongRead,
    /// A damaged database opened and served wrong contents without an error.
    SilentlyWrong,
    /// The database did not reopen after a power cut or a poisoned handle.
    Unopenable,
    /// The balance invariant (or the transfer count) of a threads trial broke.
    InvariantBroken,
    /// `verify` or `check_pages` failed on a database that should be sound.
    CheckFailed,
}

/// One failure, with the command that repeats its trial.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Failure {
    /// The trial's kind.
    pub kind: Kind,
    /// The trial's seed.
    pub seed: u64,
    /// What went wrong.
    pub class: FailureClass,
    /// The detail (error text, differing keys, panic message) and the trial's configuration.
    pub message: String,
    /// The command line that runs this trial alone.
    pub repro: String,
}

/// What one trial found.
#[derive(Clone, Debug, Default)]
pub struct TrialReport {
    /// Power cuts injected (during the workload, recovery and after it).
    pub cut_points: u64,
    /// Of those, cuts that fired during a recovery.
    pub recovery_cuts: u64,
    /// Typed errors a damaged database was refused with (or a read of it failed with), by class.
    pub typed_rejections: Vec<String>,
    /// Errors the engine returned to the workload (power on), by class.
    pub workload_errors: Vec<String>,
    /// Outcomes that are neither failures nor errors, by name (e.g. "unaffected").
    pub notes: Vec<String>,
    /// Failures: class and detail.
    pub failures: Vec<(FailureClass, String)>,
    /// The configuration the trial ran, for -v output and failure messages.
    pub config: String,
}

impl TrialReport {
    /// Records a failure.
    pub fn fail(&mut self, class: FailureClass, msg: impl Into<String>) {
        self.failures.push((class, msg.into()));
    }
}

/// Settings of a run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Trials in all.
    pub trials: u64,
    /// Seed of trial 0 (trial i has seed `seed + i`).
    pub seed: u64,
    /// Kinds to run; trials are split among them.
    pub kinds: Vec<Kind>,
    /// Wall-time budget of each threads trial in seconds.
    pub threads_secs: f64,
    /// Worker threads running trials side by side (0: the machine's parallelism).
    pub workers: usize,
    /// Print one line per trial.
    pub verbose: bool,
}

/// The figures of a run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Seed of trial 0.
    pub seed: u64,
    /// Trials run, by kind.
    pub trials: BTreeMap<String, u64>,
    /// Power cuts injected in all (during workloads, recoveries and after reopens).
    pub cut_points: u64,
    /// Power cuts that fired during a recovery.
    pub recovery_cuts: u64,
    /// Failures by class.
    pub failures_by_class: BTreeMap<String, u64>,
    /// Typed rejections by error class.
    pub typed_rejections: BTreeMap<String, u64>,
    /// Engine errors seen by the workloads, by class.
    pub workload_errors: BTreeMap<String, u64>,
    /// Other outcomes by name.
    pub notes: BTreeMap<String, u64>,
    /// Every failure (the first 1000).
    pub failures: Vec<Failure>,
    /// Wall time of the run in seconds.
    pub wall_secs: f64,
}

impl Summary {
    /// Failures of one class.
    pub fn count(&self, c: FailureClass) -> u64 {
        self.failures_by_class
            .get(&class_name(c))
            .copied()
            .unwrap_or(0)
    }

    /// Failures in all.
    pub fn failure_count(&self) -> u64 {
        self.failures_by_class.values().sum()
    }

    fn add(&mut self, kind: Kind, seed: u64, r: TrialReport) {
        *self.trials.entry(kind.name().into()).or_default() += 1;
        self.cut_points += r.cut_points;
        self.recovery_cuts += r.recovery_cuts;
        for c in r.typed_rejections {
            *self.typed_rejections.entry(c).or_default() += 1;
        }
        for c in r.workload_errors {
            *self.workload_errors.entry(c).or_default() += 1;
        }
        for c in r.notes {
            *self.notes.entry(c).or_default() += 1;
        }
        for (class, msg) in r.failures {
            let name = class_name(class);
            *self.failures_by_class.entry(name).or_default() += 1;
            if self.failures.len() < 1000 {
                self.failures.push(Failure {
                    kind,
                    seed,
                    class,
                    message: format!("{msg} [{}]", r.config),
                    repro: repro(kind, seed),
                });
            }
        }
    }
}

/// The snake_case name of a failure class (as in the JSON).
pub fn class_name(c: FailureClass) -> String {
    match c {
        FailureClass::Panic => "panic",
        FailureClass::LostCommit => "lost_commit",
        FailureClass::UncommittedVisible => "uncommitted_visible",
        FailureClass::WrongRead => "wrong_read",
        FailureClass::SilentlyWrong => "silently_wrong",
        FailureClass::Unopenable => "unopenable",
        FailureClass::InvariantBroken => "invariant_broken",
        FailureClass::CheckFailed => "check_failed",
    }
    .to_string()
}

/// The command line that runs one trial alone.
pub fn repro(kind: Kind, seed: u64) -> String {
    format!(
        "wafer torture --kinds {} --seed {seed} --trials 1 -v",
        kind.name()
    )
}

/// The kind of trial `i`: cut trials get six of every ten, mutate three, threads one (threads
/// trials take wall time), restricted to `kinds`.
pub fn kind_of(i: u64, kinds: &[Kind]) -> Kind {
    const PATTERN: [Kind; 10] = [
        Kind::Cut,
        Kind::Mutate,
        Kind::Cut,
        Kind::Threads,
        Kind::Cut,
        Kind::Mutate,
        Kind::Cut,
        Kind::Mutate,
        Kind::Cut,
        Kind::Cut,
    ];
    let allowed: Vec<Kind> = PATTERN
        .iter()
        .copied()
        .filter(|k| kinds.contains(k))
        .collect();
    if allowed.is_empty() {
        return Kind::Cut;
    }
    allowed[(i % allowed.len() as u64) as usize]
}

thread_local! {
    /// Set while a trial runs on this thread: the panic hook then keeps the message here instead
    /// of printing it.
    static PANIC_MSG: std::cell::RefCell<Option<Option<String>>> =
        const { std::cell::RefCell::new(None) };
}

/// Marks this thread as running trial code (panics are caught and reported, not printed).
pub fn capture_panics_here() {
    PANIC_MSG.with(|p| *p.borrow_mut() = Some(None));
}

fn take_panic_message() -> Option<String> {
    PANIC_MSG.with(|p| p.borrow_mut().take().flatten())
}

fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let captured = PANIC_MSG.with(|p| {
                let mut p = p.borrow_mut();
                match p.as_mut() {
                    Some(slot) => {
                        let loc = info
                            .location()
                            .map(|l| format!(" at {}:{}", l.file(), l.line()))
                            .unwrap_or_default();
                        slot.get_or_insert(format!("{}{loc}", payload_text(info.payload())));
                        true
                    }
                    None => false,
                }
            });
            if !captured {
                previous(info);
            }
        }));
    });
}

/// The text of a panic payload.
pub fn payload_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".into()
    }
}

/// Runs one trial of `kind` with `seed`, catching a panic as a failure.
pub fn run_trial(kind: Kind, seed: u64, threads_secs: f64) -> TrialReport {
    install_panic_hook();
    capture_panics_here();
    let r = std::panic::catch_unwind(|| match kind {
        Kind::Cut => cut::trial(seed),
        Kind::Mutate => mutate::trial(seed),
        Kind::Threads => threads::trial(seed, threads_secs),
    });
    let msg = take_panic_message();
    match r {
        Ok(r) => r,
        Err(p) => {
            let mut r = TrialReport::default();
            let text = msg.unwrap_or_else(|| payload_text(p.as_ref()));
            r.fail(FailureClass::Panic, format!("panic: {text}"));
            r
        }
    }
}

/// Runs `cfg.trials` trials on worker threads; `progress(done, failures)` is called after each.
/// `line` receives one line per trial when verbose, and one per failure always.
pub fn run(
    cfg: &RunConfig,
    progress: &(dyn Fn(u64, u64) + Sync),
    line: &(dyn Fn(&str) + Sync),
) -> Summary {
    let started = std::time::Instant::now();
    let kinds = if cfg.kinds.is_empty() {
        Kind::ALL.to_vec()
    } else {
        cfg.kinds.clone()
    };
    let workers = if cfg.workers == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        cfg.workers
    }
    .clamp(1, cfg.trials.max(1) as usize);
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let failed = AtomicUsize::new(0);
    let results: Mutex<Vec<(u64, Kind, u64, TrialReport)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= cfg.trials {
                    break;
                }
                let kind = kind_of(i, &kinds);
                let seed = cfg.seed.wrapping_add(i);
                let t = std::time::Instant::now();
                let r = run_trial(kind, seed, cfg.threads_secs);
                if cfg.verbose {
                    line(&format!(
                        "trial {i} {} seed {seed}: {} cuts, {} failures, {:.2} s, errors {:?}, \
                         rejections {:?}, notes {:?} [{}]",
                        kind.name(),
                        r.cut_points,
                        r.failures.len(),
                        t.elapsed().as_secs_f64(),
                        r.workload_errors,
                        r.typed_rejections,
                        r.notes,
                        r.config
                    ));
                }
                for (class, msg) in &r.failures {
                    line(&format!(
                        "FAIL {} seed {seed}: {}: {msg}\n  config: {}\n  repro: {}",
                        kind.name(),
                        class_name(*class),
                        r.config,
                        repro(kind, seed)
                    ));
                }
                failed.fetch_add(r.failures.len(), Ordering::SeqCst);
                results
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((i, kind, seed, r));
                let d = done.fetch_add(1, Ordering::SeqCst) + 1;
                progress(d, failed.load(Ordering::SeqCst) as u64);
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|r| r.0);
    let mut summary = Summary {
        seed: cfg.seed,
        ..Summary::default()
    };
    for (_, kind, seed, r) in results {
        summary.add(kind, seed, r);
    }
    summary.wall_secs = started.elapsed().as_secs_f64();
    summary
}
