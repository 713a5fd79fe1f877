//! Stress tests of the public API under threads: bank transfers with full-scan auditors and
//! checkpoints (on memory and on files, then a crash and a reopen), lost updates on shared
//! counters (under two-phase locking and with snapshot writers), snapshot auditors among
//! transfers, inserts and deletes of distinct keys among cursor scans, and readers and writers
//! missing pages all the time in a pool far smaller than the data.
//!
//! Every test runs its body on a watched thread: if no result arrives within [`WATCHDOG`] the
//! test fails naming itself (a deadlock or a livelock becomes a failure, not a hang). Workers
//! stop at a commit target or after [`WORK`] of wall time, whichever comes first; they never
//! panic: an error or a broken invariant ends the worker with a message, stops the others and
//! fails the test with that message. Random choices come from one seeded generator per thread
//! (the seed is `WAFER_STRESS_SEED`, or a fixed default, and is named in every failure).

use crate::support::MemPair;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use wafer_engine::device::MemDevice;
use wafer_engine::{Db, DbConfig, Devices, Error, GroupCommitConfig, Tree, Txn};

/// How long a test may take in all before it counts as hung.
const WATCHDOG: Duration = Duration::from_secs(60);

/// Wall time the workers of one test run for at most.
const WORK: Duration = Duration::from_secs(2);

const ALL: (Bound<&[u8]>, Bound<&[u8]>) = (Bound::Unbounded, Bound::Unbounded);

fn seed() -> u64 {
    std::env::var("WAFER_STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed)
}

fn rng_for(seed: u64, thread: u64) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(thread))
}

/// Runs `body` on its own thread and returns its result, or fails the test `name`: with the
/// body's error, with its panic, or when nothing arrives within [`WATCHDOG`].
fn watchdog<T: Send + 'static>(
    name: &str,
    body: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            let _ = tx.send(body());
        })
        .unwrap();
    match rx.recv_timeout(WATCHDOG) {
        Ok(Ok(v)) => {
            handle.join().unwrap();
            v
        }
        Ok(Err(e)) => panic!("{name} (seed {}): {e}", seed()),
        Err(mpsc::RecvTimeoutError::Timeout) => panic!(
            "{name} (seed {}): no result after {WATCHDOG:?}: a deadlock or a livelock",
            seed()
        ),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let payload = handle.join().unwrap_err();
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{name} (seed {}): panicked: {msg}", seed())
        }
    }
}

/// Why a transaction did not commit: a retryable engine error, or a failure of the test.
#[derive(Debug)]
enum Fail {
    Retry(Error),
    Fatal(String),
}

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fail::Retry(e) => write!(f, "retryable: {e}"),
            Fail::Fatal(s) => f.write_str(s),
        }
    }
}

/// Errors a transaction may meet under contention, after which it is retried: a lock conflict
/// (no-wait two-phase locking, or first updater wins under snapshot isolation), a log that
/// live transactions keep full, a version store that live snapshots keep full, a flushless
/// log table that live transactions' records keep full.
fn retryable(e: &Error) -> bool {
    matches!(
        e,
        Error::Conflict { .. }
            | Error::LogFull(_)
            | Error::VersionStoreFull(_)
            | Error::TableFull(_)
    )
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        if retryable(&e) {
            Fail::Retry(e)
        } else {
            Fail::Fatal(format!("engine error: {e}"))
        }
    }
}

/// Runs `body` in `x` and commits; on an error aborts `x` (explicitly) and returns the error.
fn run_txn<T>(mut x: Txn, body: impl FnOnce(&mut Txn) -> Result<T, Fail>) -> Result<T, Fail> {
    match body(&mut x) {
        Ok(v) => {
            x.commit()?;
            Ok(v)
        }
        Err(e) => match x.abort() {
            Ok(()) => Err(e),
            Err(a) => Err(Fail::Fatal(format!("abort after ({e}) failed: {a}"))),
        },
    }
}

/// The shared stop signal of a test's workers: the deadline passed, or a worker failed.
struct Stop {
    flag: AtomicBool,
    deadline: Instant,
}

impl Stop {
    fn new() -> Stop {
        Stop::after(WORK)
    }
    fn after(work: Duration) -> Stop {
        Stop {
            flag: AtomicBool::new(false),
            deadline: Instant::now() + work,
        }
    }
    fn now(&self) -> bool {
        self.flag.load(Ordering::Relaxed) || Instant::now() >= self.deadline
    }
    fn set(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }
    /// Passes `r` through; an error stops every worker.
    fn fail_all<T>(&self, r: Result<T, String>) -> Result<T, String> {
        if r.is_err() {
            self.set();
        }
        r
    }
}

/// Waits a little before a retry: a yield at first, then a random sleep that grows with the
/// failures in a row (no-wait locking can livelock threads that retry in step).
fn backoff(rng: &mut Pcg64Mcg, in_a_row: u32) {
    if in_a_row < 3 {
        std::thread::yield_now();
    } else {
        let most = 20u64 << in_a_row.min(6);
        std::thread::sleep(Duration::from_micros(rng.random_range(0..most)));
    }
}

/// Runs `attempt` until it commits (`Ok(Some)`), fails for good, or `stop` says so (`Ok(None)`);
/// counts retries in `retries`.
fn retry<T>(
    stop: &Stop,
    rng: &mut Pcg64Mcg,
    retries: &mut u64,
    mut attempt: impl FnMut(&mut Pcg64Mcg) -> Result<T, Fail>,
) -> Result<Option<T>, String> {
    let mut in_a_row = 0;
    loop {
        match attempt(rng) {
            Ok(v) => return Ok(Some(v)),
            Err(Fail::Retry(_)) => {
                *retries += 1;
                in_a_row += 1;
                if stop.now() {
                    return Ok(None);
                }
                backoff(rng, in_a_row);
            }
            Err(Fail::Fatal(e)) => return Err(e),
        }
    }
}

/// The workers' results, or all their errors (the first one to fail may not be the first
/// thread: a failure stops the others, which may then fail for want of time).
fn all_ok<T>(results: Vec<Result<T, String>>) -> Result<Vec<T>, String> {
    let errors: Vec<String> = results
        .iter()
        .filter_map(|r| r.as_ref().err().cloned())
        .collect();
    if errors.is_empty() {
        Ok(results.into_iter().map(|r| r.ok().unwrap()).collect())
    } else {
        Err(errors.join("; "))
    }
}

fn u64_of(v: &[u8], what: &str) -> Result<u64, Fail> {
    let b: [u8; 8] = v
        .try_into()
        .map_err(|_| Fail::Fatal(format!("{what}: a value of {} bytes, not 8", v.len())))?;
    Ok(u64::from_le_bytes(b))
}

mod bank;

/// Small pool and log: eviction, checkpoints the log asks for, and group commit are all busy.
fn stress_config() -> DbConfig {
    DbConfig {
        buffer_pages: 48,
        log_space_bytes: Some(512 << 10),
        checkpoint_batch_pages: 8,
        doublewrite_pages: 8,
        group_commit: GroupCommitConfig {
            max_delay_us: 100,
            min_batch: 2,
            min_share_pct: 100,
        },
        ..DbConfig::default()
    }
}

/// Runs a maintenance step (a background checkpoint's batch, written with the core latch
/// released) every 2 ms and a whole checkpoint every 20 ms until `done`; returns how many
/// whole checkpoints.
fn checkpointer(db: &Db, done: &AtomicBool, stop: &Stop) -> Result<u64, String> {
    let mut n = 0;
    let mut step = 0u64;
    while !done.load(Ordering::Relaxed) && !stop.flag.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(2));
        step += 1;
        let r = if step.is_multiple_of(10) {
            db.checkpoint().map(|()| n += 1)
        } else {
            db.maintenance()
        };
        match r {
            Ok(()) => {}
            Err(e) if retryable(&e) => {}
            Err(e) => return Err(format!("checkpoint thread: {e}")),
        }
    }
    Ok(n)
}

/// Where a bank test keeps its database.
enum Place {
    Memory(MemPair),
    Files(tempfile::TempDir),
}

impl Place {
    fn devices(&self) -> Result<Devices, String> {
        match self {
            Place::Memory(pair) => Ok(pair.devices()),
            Place::Files(dir) => {
                Devices::files(dir.path(), 16 << 20, 4 << 20).map_err(|e| e.to_string())
            }
        }
    }
}

const BANK_THREADS: u64 = 8;

/// Bank transfers from [`BANK_THREADS`] threads, one thread auditing with full reads (every sum
/// must be exact: under strict two-phase locking a scan locks the tree), one checkpointing;
/// then the final balances must be the committed transfers', every thread must have committed,
/// and after a crash (the handle dropped without close) the reopened database must hold the
/// same balances. At least `min_during` audits must finish while the transfers run (on files a
/// full scan rarely gets its tree lock among the transfers: see
/// `full_scans_finish_among_read_then_write_transfers_on_files`).
fn bank_run(name: &'static str, place: Place, min_during: u64, cfg: DbConfig) -> String {
    watchdog(name, move || {
        let started = Instant::now();
        let db = Db::open(place.devices()?, cfg.clone()).map_err(|e| e.to_string())?;
        let t = bank::setup(&db)?;
        let stop = Stop::new();
        let writers_done = AtomicBool::new(false);
        let running = AtomicUsize::new(BANK_THREADS as usize);
        let (outs, audits, checkpoints) = std::thread::scope(|s| {
            let workers: Vec<_> = (0..BANK_THREADS)
                .map(|id| {
                    let (db, t, stop, running, writers_done) =
                        (&db, &t, &stop, &running, &writers_done);
                    s.spawn(move || {
                        let r = bank::transfer_thread(db, t, id, 2000, false, stop);
                        if running.fetch_sub(1, Ordering::SeqCst) == 1 {
                            writers_done.store(true, Ordering::SeqCst);
                        }
                        stop.fail_all(r)
                    })
                })
                .collect();
            let auditor = s.spawn(|| -> Result<(u64, u64, u64), String> {
                let mut rng = rng_for(seed(), 100);
                let (mut audits, mut during, mut retries) = (0u64, 0u64, 0u64);
                // Audits while the transfers run, and one after.
                loop {
                    let last = writers_done.load(Ordering::SeqCst);
                    let how = rng.random_range(0..4);
                    let r = retry(&stop, &mut rng, &mut retries, |_| {
                        run_txn(db.begin()?, |x| bank::audit(x, &t, how))
                    });
                    match stop.fail_all(r.map_err(|e| format!("auditor: {e}")))? {
                        Some(_) => {
                            audits += 1;
                            during += u64::from(!last);
                        }
                        None if last => return Err("auditor: the last audit kept failing".into()),
                        None => {}
                    }
                    if last || stop.flag.load(Ordering::Relaxed) {
                        return Ok((audits, during, retries));
                    }
                }
            });
            let ck = s.spawn(|| stop.fail_all(checkpointer(&db, &writers_done, &stop)));
            let outs = all_ok(workers.into_iter().map(|h| h.join().unwrap()).collect());
            let audits = auditor.join().unwrap();
            let checkpoints = ck.join().unwrap();
            (outs, audits, checkpoints)
        });
        let (outs, (audits, during, audit_retries), checkpoints) = (outs?, audits?, checkpoints?);
        // Every checkpoint the engine finished: the whole ones and those of maintenance steps.
        let engine_checkpoints = db.stats().engine.checkpoints;
        let want = bank::expected(&outs);
        bank::check_final(&db, &want, "after the run")?;
        for (id, o) in outs.iter().enumerate() {
            if o.commits == 0 {
                return Err(format!(
                    "transfer thread {id} committed nothing ({} retries)",
                    o.retries
                ));
            }
        }
        if during < min_during {
            return Err(format!(
                "{during} audits finished while the transfers ran ({audit_retries} retries)"
            ));
        }
        // A crash: the handle dropped without close (no checkpoint, the pool lost).
        drop(db);
        let db =
            Db::open(place.devices()?, cfg).map_err(|e| format!("reopen after the crash: {e}"))?;
        bank::check_final(&db, &want, "after the crash and reopen")?;
        db.close().map_err(|e| e.to_string())?;
        Ok(format!(
            "{name}: {} transfers in {} commits, {} retries, {audits} audits ({during} during \
             the transfers, {audit_retries} retries), {checkpoints} checkpoints ({} in all \
             with the maintenance steps'), {:?}",
            outs.iter().map(|o| o.made.len()).sum::<usize>(),
            outs.iter().map(|o| o.commits).sum::<u64>(),
            outs.iter().map(|o| o.retries).sum::<u64>(),
            engine_checkpoints,
            started.elapsed()
        ))
    })
}

#[test]
fn bank_transfers_on_memory_keep_the_total_and_survive_a_crash() {
    let name = "bank_transfers_on_memory";
    let place = Place::Memory(MemPair::new());
    eprintln!("{}", bank_run(name, place, 1, stress_config()));
}

/// The same in the flushless mode (paper 001), whose plain changes and their commits run with
/// the core latch shared: its log table, one live transaction per page and its commits' page
/// LSNs under eight threads, compactions and checkpoints.
#[test]
fn bank_transfers_in_the_flushless_mode_keep_the_total_and_survive_a_crash() {
    let name = "bank_transfers_flushless";
    let cfg = DbConfig {
        buffer_pages: 128,
        flushless: Some(wafer_engine::FlushlessConfig::default()),
        ..stress_config()
    };
    eprintln!("{}", bank_run(name, Place::Memory(MemPair::new()), 1, cfg));
}

#[test]
fn bank_transfers_on_files_keep_the_total_and_survive_a_crash() {
    let name = "bank_transfers_on_files";
    let dir = tempfile::tempdir().unwrap();
    eprintln!("{}", bank_run(name, Place::Files(dir), 0, stress_config()));
}

/// Threads increment a few shared counters (read, add one, write; one or two counters a
/// transaction) and retry conflicts; every counter must end at its committed increments. With
/// `snapshot`, every other thread's transactions are snapshot transactions (first updater wins
/// must refuse a lost update as the locks do).
fn lost_updates(name: &'static str, snapshot: bool) -> String {
    const COUNTERS: u64 = 4;
    const THREADS: u64 = 6;
    const TARGET: u64 = 1500;
    let counter = |c: u64| format!("counter{c}").into_bytes();
    watchdog(name, move || {
        let started = Instant::now();
        let pair = MemPair::new();
        let mut devices = pair.devices();
        if snapshot {
            devices = devices.with_undo(Box::new(MemDevice::new(16 << 20, 4096)));
        }
        let db = Db::open(devices, stress_config()).map_err(|e| e.to_string())?;
        let t = db.create_tree("counters").map_err(|e| e.to_string())?;
        let stop = Stop::new();
        let outs: Result<Vec<(Vec<u64>, u64)>, String> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..THREADS)
                .map(|id| {
                    let (db, t, stop) = (&db, &t, &stop);
                    s.spawn(move || {
                        let mut rng = rng_for(seed(), 200 + id);
                        let mut done = vec![0u64; COUNTERS as usize];
                        let (mut commits, mut retries) = (0u64, 0u64);
                        let snap = snapshot && id % 2 == 1;
                        while commits < TARGET && !stop.now() {
                            let a = rng.random_range(0..COUNTERS);
                            let mut which = vec![a];
                            if rng.random_bool(0.3) {
                                which.push((a + rng.random_range(1..COUNTERS)) % COUNTERS);
                            }
                            let r = retry(stop, &mut rng, &mut retries, |_| {
                                let x = if snap {
                                    db.begin_snapshot()?
                                } else {
                                    db.begin()?
                                };
                                run_txn(x, |x| {
                                    for &c in &which {
                                        let v = match x.get(t, &counter(c))? {
                                            Some(v) => u64_of(&v, &format!("counter {c}"))?,
                                            None => 0,
                                        };
                                        x.put(t, &counter(c), &(v + 1).to_le_bytes())?;
                                    }
                                    Ok(())
                                })
                            });
                            match stop.fail_all(r.map_err(|e| format!("thread {id}: {e}")))? {
                                Some(()) => {
                                    commits += 1;
                                    for &c in &which {
                                        done[c as usize] += 1;
                                    }
                                }
                                None => break,
                            }
                        }
                        if commits == 0 {
                            stop.set();
                            return Err(format!(
                                "thread {id} committed nothing ({retries} retries)"
                            ));
                        }
                        Ok((done, retries))
                    })
                })
                .collect();
            all_ok(hs.into_iter().map(|h| h.join().unwrap()).collect())
        });
        let outs = outs?;
        let mut x = db.begin().map_err(|e| e.to_string())?;
        let mut total = 0;
        for c in 0..COUNTERS {
            let want: u64 = outs.iter().map(|(d, _)| d[c as usize]).sum();
            let got = match x.get(&t, &counter(c)).map_err(|e| e.to_string())? {
                Some(v) => u64_of(&v, "counter").map_err(|e| e.to_string())?,
                None => 0,
            };
            if got != want {
                return Err(format!(
                    "counter {c} is {got} after {want} committed increments (lost updates)"
                ));
            }
            total += want;
        }
        x.commit().map_err(|e| e.to_string())?;
        Ok(format!(
            "{name}: {total} increments, {} retries, {:?}",
            outs.iter().map(|(_, r)| r).sum::<u64>(),
            started.elapsed()
        ))
    })
}

#[test]
fn no_lost_updates_on_shared_counters() {
    eprintln!(
        "{}",
        lost_updates("no_lost_updates_on_shared_counters", false)
    );
}

#[test]
fn no_lost_updates_on_shared_counters_with_snapshot_writers() {
    let name = "no_lost_updates_with_snapshot_writers";
    eprintln!("{}", lost_updates(name, true));
}

/// Transfers (half the threads serializable, half snapshot transactions) while snapshot readers
/// audit every balance (a scan, a cursor either way, or a slow get per account) and a thread
/// checkpoints: every snapshot sum must be exact and no snapshot read may fail; the final
/// balances are the committed transfers', no version is left once no snapshot is active, and a
/// reopen (which starts with an empty version store) finds the same balances.
#[test]
fn snapshot_audits_among_transfers_are_exact() {
    const WRITERS: u64 = 6;
    const READERS: u64 = 2;
    let name = "snapshot_audits_among_transfers";
    let summary = watchdog(name, move || {
        let started = Instant::now();
        let pair = MemPair::new();
        let undo = || Box::new(MemDevice::new(16 << 20, 4096));
        let db = Db::open(pair.devices().with_undo(undo()), stress_config())
            .map_err(|e| e.to_string())?;
        let t = bank::setup(&db)?;
        let stop = Stop::new();
        let writers_done = AtomicBool::new(false);
        let running = AtomicUsize::new(WRITERS as usize);
        let (outs, audits, checkpoints) = std::thread::scope(|s| {
            let workers: Vec<_> = (0..WRITERS)
                .map(|id| {
                    let (db, t, stop, running, writers_done) =
                        (&db, &t, &stop, &running, &writers_done);
                    s.spawn(move || {
                        let r = bank::transfer_thread(db, t, 300 + id, 2000, id % 2 == 1, stop);
                        if running.fetch_sub(1, Ordering::SeqCst) == 1 {
                            writers_done.store(true, Ordering::SeqCst);
                        }
                        stop.fail_all(r)
                    })
                })
                .collect();
            let readers: Vec<_> = (0..READERS)
                .map(|id| {
                    let (db, t, stop, writers_done) = (&db, &t, &stop, &writers_done);
                    s.spawn(move || {
                        let mut rng = rng_for(seed(), 400 + id);
                        let mut audits = 0u64;
                        loop {
                            let last = writers_done.load(Ordering::SeqCst);
                            let how = rng.random_range(0..4);
                            // A snapshot read never waits nor conflicts: any error fails.
                            let r = db
                                .begin_snapshot()
                                .map_err(Fail::from)
                                .and_then(|x| run_txn(x, |x| bank::audit(x, t, how)));
                            if let Err(e) = r {
                                stop.set();
                                return Err(format!("snapshot reader {id}: {e}"));
                            }
                            audits += 1;
                            if last || stop.flag.load(Ordering::Relaxed) {
                                return Ok(audits);
                            }
                        }
                    })
                })
                .collect();
            let ck = s.spawn(|| stop.fail_all(checkpointer(&db, &writers_done, &stop)));
            let outs = all_ok(workers.into_iter().map(|h| h.join().unwrap()).collect());
            let audits = all_ok(readers.into_iter().map(|h| h.join().unwrap()).collect());
            (outs, audits, ck.join().unwrap())
        });
        let (outs, audits, checkpoints) = (outs?, audits?, checkpoints?);
        let want = bank::expected(&outs);
        bank::check_final(&db, &want, "after the run")?;
        for (id, o) in outs.iter().enumerate() {
            if o.commits == 0 {
                return Err(format!(
                    "transfer thread {id} committed nothing ({} retries)",
                    o.retries
                ));
            }
        }
        if audits.iter().any(|&a| a < 2) {
            return Err(format!("snapshot audits per reader: {audits:?}"));
        }
        if let Some(v) = db.stats().versions {
            if v.heads != 0 {
                return Err(format!("versions left with no snapshot active: {v:?}"));
            }
        }
        drop(db);
        let db = Db::open(pair.devices().with_undo(undo()), stress_config())
            .map_err(|e| format!("reopen after the crash: {e}"))?;
        bank::check_final(&db, &want, "after the crash and reopen")?;
        Ok(format!(
            "{name}: {} transfers in {} commits, {} retries, snapshot audits {audits:?}, \
             {checkpoints} checkpoints, {:?}",
            outs.iter().map(|o| o.made.len()).sum::<usize>(),
            outs.iter().map(|o| o.commits).sum::<u64>(),
            outs.iter().map(|o| o.retries).sum::<u64>(),
            started.elapsed()
        ))
    });
    eprintln!("{summary}");
}

mod mixed;

#[test]
fn inserts_and_deletes_among_cursor_scans() {
    use mixed::*;
    let name = "inserts_and_deletes_among_cursor_scans";
    let summary = watchdog(name, move || {
        let started = Instant::now();
        let pair = MemPair::new();
        let db = Db::open(pair.devices(), stress_config()).map_err(|e| e.to_string())?;
        let t = db.create_tree("mixed").map_err(|e| e.to_string())?;
        let stop = Stop::new();
        let writers_done = AtomicBool::new(false);
        let running = AtomicUsize::new(WRITERS as usize);
        let (outs, scans) = std::thread::scope(|s| {
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| {
                    let (db, t, stop, running, writers_done) =
                        (&db, &t, &stop, &running, &writers_done);
                    s.spawn(move || {
                        let r = writer(db, t, w, stop);
                        if running.fetch_sub(1, Ordering::SeqCst) == 1 {
                            writers_done.store(true, Ordering::SeqCst);
                        }
                        stop.fail_all(r)
                    })
                })
                .collect();
            let scanners: Vec<_> = (0..SCANNERS)
                .map(|id| {
                    let (db, t, stop, writers_done) = (&db, &t, &stop, &writers_done);
                    s.spawn(move || {
                        let mut rng = rng_for(seed(), 600 + id);
                        let (mut scans, mut rows, mut retries) = (0u64, 0usize, 0u64);
                        while !writers_done.load(Ordering::SeqCst) && !stop.now() {
                            let r = retry(stop, &mut rng, &mut retries, |rng| {
                                run_txn(db.begin()?, |x| scan_once(x, t, rng))
                            });
                            match stop.fail_all(r.map_err(|e| format!("scanner {id}: {e}")))? {
                                Some(n) => {
                                    scans += 1;
                                    rows += n;
                                    // Room for the writers, whom a cursor's tree lock holds off.
                                    std::thread::sleep(Duration::from_micros(
                                        rng.random_range(100..1000),
                                    ));
                                }
                                None => break,
                            }
                        }
                        Ok((scans, rows))
                    })
                })
                .collect();
            let outs = all_ok(writers.into_iter().map(|h| h.join().unwrap()).collect());
            let scans = all_ok(scanners.into_iter().map(|h| h.join().unwrap()).collect());
            (outs, scans)
        });
        let (outs, scans) = (outs?, scans?);
        if scans.iter().any(|&(n, _)| n == 0) {
            return Err(format!("a scanner finished no scan: {scans:?}"));
        }
        let lives: Vec<BTreeSet<u64>> = outs.iter().map(|(l, _, _)| l.clone()).collect();
        check_final(&db, &lives, "after the run")?;
        // Several writers: their splits ran beside each other (`LeafSplits::Auto`), some
        // possibly still pending at the crash.
        let beside = db.stats().engine.splits_beside;
        if beside == 0 {
            return Err("no leaf split ran beside the other threads".into());
        }
        drop(db);
        let db = Db::open(pair.devices(), stress_config())
            .map_err(|e| format!("reopen after the crash: {e}"))?;
        check_final(&db, &lives, "after the crash and reopen")?;
        Ok(format!(
            "{name}: {} live keys, {} writer commits, {} writer retries, {beside} splits \
             beside others, scans (count, rows) {scans:?}, {:?}",
            lives.iter().map(|l| l.len()).sum::<usize>(),
            outs.iter().map(|(_, c, _)| c).sum::<u64>(),
            outs.iter().map(|(_, _, r)| r).sum::<u64>(),
            started.elapsed()
        ))
    });
    eprintln!("{summary}");
}

/// Full scans among read-then-write transfers on files (a commit waits for the disk, so some
/// transfer is nearly always in the tree). A scan that writers refuse waits for them while new
/// writers are turned away (isolation.rs: `full_scans_finish_among_a_stream_of_writers`), so it
/// should get its tree lock in about the time the writers in the tree take to commit: each of
/// five scans must finish within [`SCAN_BOUND`] (the engine's own wait is 2 s) while eight
/// threads transfer.
#[test]
fn full_scans_finish_among_read_then_write_transfers_on_files() {
    const SCAN_BOUND: Duration = Duration::from_secs(1);
    let name = "full_scans_among_read_then_write_transfers_on_files";
    let summary = watchdog(name, move || {
        let started = Instant::now();
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let devices = Devices::files(dir.path(), 16 << 20, 4 << 20).map_err(|e| e.to_string())?;
        let db = Db::open(devices, stress_config()).map_err(|e| e.to_string())?;
        let t = bank::setup(&db)?;
        let stop = Stop::after(Duration::from_secs(15));
        let (outs, scans) = std::thread::scope(|s| {
            let workers: Vec<_> = (0..BANK_THREADS)
                .map(|id| {
                    let (db, t, stop) = (&db, &t, &stop);
                    s.spawn(move || {
                        let r = bank::transfer_thread(db, t, 700 + id, u64::MAX, false, stop);
                        stop.fail_all(r)
                    })
                })
                .collect();
            // Five scans, each timed, each after the transfers had time to get going (a scan's
            // lock leaves them in backoff).
            let mut scans: Vec<(Duration, bool)> = Vec::new();
            let mut failed = None;
            while scans.len() < 5 && !stop.now() {
                std::thread::sleep(Duration::from_millis(150));
                let t0 = Instant::now();
                let r = db
                    .begin()
                    .map_err(Fail::from)
                    .and_then(|x| run_txn(x, |x| bank::audit(x, &t, 0)));
                match r {
                    Ok(_) => scans.push((t0.elapsed(), true)),
                    Err(Fail::Retry(_)) => scans.push((t0.elapsed(), false)),
                    Err(Fail::Fatal(e)) => {
                        failed = Some(format!("auditor: {e}"));
                        break;
                    }
                }
            }
            stop.set();
            let outs = all_ok(workers.into_iter().map(|h| h.join().unwrap()).collect());
            match failed {
                Some(e) => (Err(e), scans),
                None => (outs, scans),
            }
        });
        let outs = outs?;
        let commits: u64 = outs.iter().map(|o| o.commits).sum();
        bank::check_final(&db, &bank::expected(&outs), "after the run")?;
        if scans.len() < 5 || scans.iter().any(|&(d, ok)| !ok || d > SCAN_BOUND) {
            return Err(format!(
                "full scans (time, finished) among {commits} transfer commits: {scans:?}; each \
                 must finish within {SCAN_BOUND:?}"
            ));
        }
        Ok(format!(
            "{name}: scans {scans:?} among {commits} transfer commits, {:?}",
            started.elapsed()
        ))
    });
    eprintln!("{summary}");
}

mod misses;
