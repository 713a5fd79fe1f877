//! Concurrency trials: 2-8 threads transfer amounts between a few accounts (some of whose values
//! are ~3,000 bytes, to push the log), retrying on conflicts with backoff, each transfer also
//! recording itself in a second tree; now and then a thread audits that the balances add up.
//! After the run, and sometimes after a power cut in its middle, the database is reopened: the
//! balances must add up, agree with the recorded transfers, and every transfer whose commit
//! returned Ok must be there (and none whose commit never ran).

use super::oracle::{error_class, is_fatal};
use super::rig::{DeviceKind, Rig};
use super::{capture_panics_here, payload_text, FailureClass, TrialReport};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wafer_engine::device::{FaultConfig, FaultHandle};
use wafer_engine::{Db, DbConfig, Error, OopConfig, OpenMode, Tree};

const INITIAL: i64 = 1000;

fn account(i: u16) -> Vec<u8> {
    format!("acct{i:03}").into_bytes()
}

/// An account's value: the balance, then padding (large accounts: ~3,000 bytes).
fn balance_value(balance: i64, pad: usize) -> Vec<u8> {
    let mut v = balance.to_le_bytes().to_vec();
    v.resize(8 + pad, b'p');
    v
}

fn balance_of(v: &[u8]) -> Option<i64> {
    Some(i64::from_le_bytes(v.get(..8)?.try_into().ok()?))
}

/// What one worker thread did.
#[derive(Default)]
struct Worker {
    committed: u64,
    /// Commits that failed with a fatal error (present or not after recovery).
    uncertain: u64,
    errors: Vec<String>,
    failures: Vec<(FailureClass, String)>,
}

struct Shared<'a> {
    db: &'a Db,
    acct: Tree,
    xfer: Tree,
    accounts: u16,
    pads: Vec<usize>,
    stop: &'a AtomicBool,
    deadline: Instant,
    power: FaultHandle,
}

/// Runs the threads trial of `seed` for about `secs` seconds.
pub fn trial(seed: u64, secs: f64) -> TrialReport {
    let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x7777);
    let threads = rng.random_range(2..=8u64);
    let accounts = rng.random_range(3..=12u16);
    let pads: Vec<usize> = (0..accounts)
        .map(|_| {
            if rng.random_bool(0.4) {
                rng.random_range(2900..3100)
            } else {
                0
            }
        })
        .collect();
    let cut = rng.random_bool(0.4);
    let oop = rng.random_bool(0.3);
    let buffer_pages = [16, 24, 64, 256][rng.random_range(0..4)];
    let mut cfg = DbConfig {
        open_mode: OpenMode::Create,
        buffer_pages,
        doublewrite: !oop && rng.random_bool(0.7),
        // The default log space (the pool's size) is raised to the minimum for a small pool.
        log_space_bytes: match rng.random_range(0..4) {
            0 => None,
            1 => Some(256 << 10),
            2 => Some(1 << 20),
            _ => Some(4 << 20),
        },
        out_of_place: oop.then(|| OopConfig {
            zone_bytes: 32 << 10,
            max_open_zones: 2,
            batch_pages: 8,
            seed,
            ..OopConfig::default()
        }),
        ..DbConfig::default()
    };
    super::cut::flushless_mode(&mut cfg, seed ^ 0xf1a5_7777);
    super::cut::image_holes(&mut cfg, seed ^ 0x401e_7777);
    super::cut::leaf_splits(&mut cfg, seed ^ 0x5b11_7777);
    super::cut::log_buffer(&mut cfg, seed ^ 0x10b0_7777);
    super::cut::journal_mode(
        &mut cfg,
        DeviceKind::Mem { block: 4096 },
        8 << 20,
        seed ^ 0x10a7_7777,
    );
    // Background maintenance beside the workers, in one trial of two (draws of its own, so the
    // other draws of a seed are as they were): checkpoint batches, the page cleaner's and the
    // write path's own work, written with the core and log latches released.
    let background = {
        let mut bg = Pcg64Mcg::seed_from_u64(seed ^ 0xb6_7777);
        let on = bg.random_bool(0.5);
        // The page cleaner (not in the flushless mode, which leaves dirty pages to its
        // checkpoints and refuses it).
        if on && bg.random_bool(0.5) && cfg.flushless.is_none() {
            cfg.cleaner_clean_fraction = 0.3;
        }
        on
    };
    let fault = FaultConfig {
        seed,
        torn_writes: rng.random_bool(0.5),
        lose_unflushed: rng.random_bool(0.5),
        ..FaultConfig::default()
    };
    let mut report = TrialReport {
        config: format!(
            "threads {threads}, accounts {accounts} ({} large), {}, {}, pool {}, log space \
             {:?}, cut {cut}, background {background} (cleaner {}), {secs} s",
            pads.iter().filter(|&&p| p > 0).count(),
            if oop {
                "oop"
            } else if cfg.journal.is_some() {
                "journal"
            } else if cfg.doublewrite {
                "in-place+dw"
            } else {
                "in-place"
            },
            super::cut::describe_mode(&cfg),
            cfg.buffer_pages,
            cfg.log_space_bytes,
            cfg.cleaner_clean_fraction
        ),
        ..TrialReport::default()
    };
    let rig = Rig::new(DeviceKind::Mem { block: 4096 }, 8 << 20, 8 << 20, fault);
    let setup = || -> Result<(Db, Tree, Tree), Error> {
        let db = Db::open(rig.devices(), cfg.clone())?;
        let acct = db.create_tree("acct")?;
        let xfer = db.create_tree("xfer")?;
        // In the flushless mode one account a transaction: a small log table holds one account's
        // change, not all of them (a transfer needs two).
        let per_txn = if cfg.flushless.is_some() { 1 } else { accounts };
        for first in (0..accounts).step_by(per_txn as usize) {
            let mut x = db.begin()?;
            for i in first..(first + per_txn).min(accounts) {
                x.put(
                    &acct,
                    &account(i),
                    &balance_value(INITIAL, pads[i as usize]),
                )?;
            }
            x.commit()?;
        }
        Ok((db, acct, xfer))
    };
    let (db, acct, xfer) = match setup() {
        Ok(s) => s,
        Err(e) => {
            report
                .workload_errors
                .push(format!("setup:{}", error_class(&e)));
            return report;
        }
    };
    let stop = AtomicBool::new(false);
    let budget = Duration::from_secs_f64(secs.max(0.01));
    let shared = Shared {
        db: &db,
        acct,
        xfer,
        accounts,
        pads,
        stop: &stop,
        deadline: Instant::now() + budget,
        power: rig.power.clone(),
    };
    let workers: Vec<Worker> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let sh = &shared;
                s.spawn(move || {
                    capture_panics_here();
                    work(sh, t as u16, seed.wrapping_mul(31).wrapping_add(t))
                })
            })
            .collect();
        let maintainer = background.then(|| {
            let sh = &shared;
            s.spawn(move || {
                // Its errors (a refusal for want of space, a cut device) are the workers' to
                // meet too; a panic is a failure.
                capture_panics_here();
                while !sh.stop.load(Ordering::Relaxed) && Instant::now() < sh.deadline {
                    let _ = sh.db.maintenance();
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        });
        if cut {
            std::thread::sleep(budget.mul_f64(rng.random_range(0.1..0.9)));
            rig.power.cut_power_now();
            stop.store(true, Ordering::SeqCst);
        }
        let mut workers: Vec<Worker> = handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|p| Worker {
                    failures: vec![(
                        FailureClass::Panic,
                        format!("panic in a worker: {}", payload_text(p.as_ref())),
                    )],
                    ..Worker::default()
                })
            })
            .collect();
        if let Some(Err(p)) = maintainer.map(|h| h.join()) {
            workers.push(Worker {
                failures: vec![(
                    FailureClass::Panic,
                    format!(
                        "panic in the maintenance thread: {}",
                        payload_text(p.as_ref())
                    ),
                )],
                ..Worker::default()
            });
        }
        workers
    });
    let mut committed = Vec::new();
    for w in &workers {
        committed.push((w.committed, w.uncertain));
        report.workload_errors.extend(w.errors.iter().cloned());
        report.failures.extend(w.failures.iter().cloned());
    }
    // The end: a power cut (if not yet), or sometimes a clean close first.
    if !cut && rng.random_bool(0.5) {
        if let Err(e) = db.close() {
            report
                .workload_errors
                .push(format!("close:{}", error_class(&e)));
        }
    }
    rig.power.cut_power_now();
    drop(shared);
    drop(db);
    rig.crash();
    report.cut_points += 1;
    let reopen = DbConfig {
        open_mode: OpenMode::Open,
        ..cfg
    };
    let db = match Db::open(rig.devices(), reopen) {
        Ok(db) => db,
        Err(e) => {
            report.fail(
                FailureClass::Unopenable,
                format!("reopen after the run: {} ({e})", error_class(&e)),
            );
            return report;
        }
    };
    check_after(&db, accounts, &committed, &mut report);
    report
}

/// One transfer; Ok(false) when the deadline or the stop flag ended the retries.
fn transfer(sh: &Shared, me: u16, n: u64, rng: &mut Pcg64Mcg, w: &mut Worker) -> Result<(), ()> {
    let from = rng.random_range(0..sh.accounts);
    let to = (from + rng.random_range(1..sh.accounts)) % sh.accounts;
    let amount: i64 = rng.random_range(1..50);
    // Retries keep the first try's age (wait-die's order: the transfer is not starved).
    let mut first_try = None;
    for attempt in 0..200u32 {
        if sh.stop.load(Ordering::Relaxed) || Instant::now() > sh.deadline {
            return Err(());
        }
        let r = (|| -> Result<Result<(), Error>, Error> {
            let mut x = match first_try {
                Some(age) => sh.db.begin_retry(age)?,
                None => sh.db.begin()?,
            };
            first_try.get_or_insert(x.age());
            let a = x
                .get(&sh.acct, &account(from))?
                .and_then(|v| balance_of(&v));
            let b = x.get(&sh.acct, &account(to))?.and_then(|v| balance_of(&v));
            let (Some(a), Some(b)) = (a, b) else {
                return Ok(Err(Error::InvalidArgument("an account is missing".into())));
            };
            x.put(
                &sh.acct,
                &account(from),
                &balance_value(a - amount, sh.pads[from as usize]),
            )?;
            x.put(
                &sh.acct,
                &account(to),
                &balance_value(b + amount, sh.pads[to as usize]),
            )?;
            let mut rec = Vec::with_capacity(12);
            rec.extend_from_slice(&from.to_le_bytes());
            rec.extend_from_slice(&to.to_le_bytes());
            rec.extend_from_slice(&amount.to_le_bytes());
            x.put(&sh.xfer, format!("t{me:02}-{n:08}").as_bytes(), &rec)?;
            Ok(x.commit())
        })();
        match r {
            Ok(Ok(())) => {
                w.committed += 1;
                return Ok(());
            }
            Ok(Err(Error::InvalidArgument(m))) => {
                w.failures.push((FailureClass::InvariantBroken, m));
                return Err(());
            }
            Ok(Err(e)) if is_fatal(&e) || sh.power.is_powered_off() => {
                // The commit itself failed: it may be durable or not.
                w.uncertain += 1;
                return Err(());
            }
            Ok(Err(e)) | Err(e) => {
                if is_fatal(&e) || sh.power.is_powered_off() {
                    return Err(());
                }
                if !matches!(e, Error::Conflict { .. }) {
                    w.errors.push(error_class(&e));
                }
                let us = rng.random_range(0..50u64 << attempt.min(6));
                std::thread::sleep(Duration::from_micros(us));
            }
        }
    }
    w.errors.push("transfer gave up after 200 attempts".into());
    Ok(())
}

fn work(sh: &Shared, me: u16, seed: u64) -> Worker {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut w = Worker::default();
    let want = INITIAL * sh.accounts as i64;
    for n in 0..2000u64 {
        if transfer(sh, me, n, &mut rng, &mut w).is_err() {
            break;
        }
        if n % 8 == 7 {
            // An audit: the balances of one committed snapshot add up.
            let sum = (|| -> Result<i64, Error> {
                let mut x = sh.db.begin()?;
                let all = x.scan(
                    &sh.acct,
                    (Bound::Unbounded, Bound::Unbounded),
                    false,
                    usize::MAX,
                )?;
                x.commit()?;
                Ok(all.iter().filter_map(|(_, v)| balance_of(v)).sum())
            })();
            if let Ok(sum) = sum {
                if sum != want {
                    w.failures.push((
                        FailureClass::InvariantBroken,
                        format!("audit: balances add up to {sum}, not {want}"),
                    ));
                    break;
                }
            }
        }
    }
    w
}

/// Checks the reopened database: balances add up and agree with the recorded transfers; each
/// thread's recorded transfers number its Ok commits (plus at most its interrupted ones).
fn check_after(db: &Db, accounts: u16, committed: &[(u64, u64)], report: &mut TrialReport) {
    let read = (|| -> Result<_, Error> {
        let mut x = db.begin()?;
        let all = (Bound::Unbounded, Bound::Unbounded);
        let acct = x.scan(&db.open_tree("acct")?, all, false, usize::MAX)?;
        let xfer = x.scan(&db.open_tree("xfer")?, all, false, usize::MAX)?;
        x.commit()?;
        Ok((acct, xfer))
    })();
    let (acct, xfer) = match read {
        Ok(r) => r,
        Err(e) => {
            report.fail(FailureClass::CheckFailed, format!("read after reopen: {e}"));
            return;
        }
    };
    let mut expect: Vec<i64> = vec![INITIAL; accounts as usize];
    let mut per_thread: BTreeMap<u16, u64> = BTreeMap::new();
    for (k, v) in &xfer {
        let (Some(t), true) = (
            std::str::from_utf8(&k[1..3])
                .ok()
                .and_then(|s| s.parse::<u16>().ok()),
            v.len() == 12,
        ) else {
            report.fail(FailureClass::InvariantBroken, "a malformed transfer record");
            return;
        };
        *per_thread.entry(t).or_default() += 1;
        let from = u16::from_le_bytes([v[0], v[1]]) as usize;
        let to = u16::from_le_bytes([v[2], v[3]]) as usize;
        let amount = i64::from_le_bytes(v[4..12].try_into().expect("8 bytes"));
        if from >= expect.len() || to >= expect.len() {
            report.fail(
                FailureClass::InvariantBroken,
                "a transfer record names no account",
            );
            return;
        }
        expect[from] -= amount;
        expect[to] += amount;
    }
    let got: Vec<i64> = acct.iter().filter_map(|(_, v)| balance_of(v)).collect();
    let want_sum = INITIAL * accounts as i64;
    if got.len() != accounts as usize || got.iter().sum::<i64>() != want_sum {
        report.fail(
            FailureClass::InvariantBroken,
            format!(
                "after reopen: {} accounts adding up to {}, want {accounts} adding up to {want_sum}",
                got.len(),
                got.iter().sum::<i64>()
            ),
        );
    } else if got != expect {
        report.fail(
            FailureClass::InvariantBroken,
            "after reopen: balances disagree with the recorded transfers",
        );
    }
    for (t, &(ok, uncertain)) in committed.iter().enumerate() {
        let n = per_thread.get(&(t as u16)).copied().unwrap_or(0);
        if n < ok {
            report.fail(
                FailureClass::LostCommit,
                format!("thread {t}: {ok} transfers committed, {n} recovered"),
            );
        } else if n > ok + uncertain {
            report.fail(
                FailureClass::UncommittedVisible,
                format!("thread {t}: {ok} committed (+{uncertain} interrupted), {n} recovered"),
            );
        }
    }
    report.notes.push(format!(
        "transfers recovered: {}",
        if xfer.is_empty() { "none" } else { "some" }
    ));
    if let Err(e) = db.verify() {
        report.fail(FailureClass::CheckFailed, format!("verify: {e}"));
    }
    match db.check_pages() {
        Ok(v) if v.is_empty() => {}
        Ok(v) => report.fail(
            FailureClass::CheckFailed,
            format!("check_pages: {}", v[..v.len().min(3)].join("; ")),
        ),
        Err(e) => report.fail(FailureClass::CheckFailed, format!("check_pages: {e}")),
    }
}
