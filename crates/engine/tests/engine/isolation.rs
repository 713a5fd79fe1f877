//! Isolation under strict two-phase locking: conflicting transactions fail fast; under threads,
//! transfers stay serializable and random transactions keep exactly what they committed, through
//! background maintenance and a power cut on separate data and log devices.

use crate::support::{key, MemPair};
use std::ops::Bound;
use wafer_engine::{Db, DbConfig, Error};

#[test]
fn conflicting_transactions_fail_fast_and_retry() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut a = db.begin().unwrap();
    let mut b = db.begin().unwrap();
    a.put(&t, b"x", b"1").unwrap();
    assert!(matches!(b.put(&t, b"x", b"2"), Err(Error::Conflict { .. })));
    assert!(matches!(b.get(&t, b"x"), Err(Error::Conflict { .. })));
    // A scan meets a's uncommitted insert.
    assert!(matches!(
        b.scan(&t, (Bound::Unbounded, Bound::Unbounded), false, 10),
        Err(Error::Conflict { .. })
    ));
    b.abort().unwrap();
    a.commit().unwrap();
    let mut c = db.begin().unwrap();
    assert_eq!(c.get(&t, b"x").unwrap().as_deref(), Some(&b"1"[..]));
    c.commit().unwrap();
}

/// Serializability under threads. Transfers between accounts (read two balances, write both)
/// from several threads, auditors scanning the whole table (the total must never change), a
/// background maintenance thread, then a power cut on separate data and log devices. After
/// recovery every balance must equal the initial one plus the committed transfers (plus any
/// subset of the transfers whose commit was interrupted), and the total must be unchanged.
mod transfers {
    use crate::support::{rounds, LinkedRig};
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;
    use std::ops::Bound;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use wafer_engine::{Db, DbConfig, Error, GroupCommitConfig, Tree};

    const ACCOUNTS: u64 = 40;
    const INITIAL: i64 = 1000;

    fn config() -> DbConfig {
        DbConfig {
            buffer_pages: 24,
            log_space_bytes: Some(256 << 10),
            checkpoint_log_fill: 0.3,
            checkpoint_batch_pages: 4,
            cleaner_clean_fraction: 0.3,
            doublewrite_pages: 4,
            group_commit: GroupCommitConfig {
                max_delay_us: 100,
                min_batch: 2,
                min_share_pct: 100,
            },
            ..DbConfig::default()
        }
    }

    fn acct(i: u64) -> Vec<u8> {
        // Padded so the table spans several leaves.
        let mut k = format!("acct{i:03}").into_bytes();
        k.resize(300, b'.');
        k
    }

    fn bal(v: Option<Vec<u8>>) -> i64 {
        i64::from_le_bytes(v.expect("account exists").try_into().unwrap())
    }

    type Transfer = (u64, u64, i64);

    #[derive(Default)]
    struct Outcome {
        committed: Vec<Transfer>,
        maybe: Option<Transfer>,
        audits: u64,
    }

    fn transfer(db: &Db, t: &Tree, (a, b, amt): Transfer) -> Result<(), (Error, bool)> {
        let mut x = db.begin().map_err(|e| (e, false))?;
        let r = (|| {
            let va = bal(x.get(t, &acct(a))?);
            let vb = bal(x.get(t, &acct(b))?);
            x.put(t, &acct(a), &(va - amt).to_le_bytes())?;
            x.put(t, &acct(b), &(vb + amt).to_le_bytes())?;
            Ok::<(), Error>(())
        })();
        if let Err(e) = r {
            let _ = x.abort();
            return Err((e, false));
        }
        x.commit().map_err(|e| (e, true))
    }

    fn audit(db: &Db, t: &Tree) -> Result<i64, Error> {
        let mut x = db.begin()?;
        let rows = x.scan(t, (Bound::Unbounded, Bound::Unbounded), false, usize::MAX)?;
        x.commit()?;
        assert_eq!(rows.len() as u64, ACCOUNTS, "an account went missing");
        Ok(rows
            .into_iter()
            .map(|(_, v)| i64::from_le_bytes(v.try_into().unwrap()))
            .sum())
    }

    fn worker(db: Db, t: Tree, id: u64, seed: u64, stop: Arc<AtomicBool>) -> Outcome {
        let mut rng = Pcg64Mcg::seed_from_u64(seed * 100 + id);
        let mut out = Outcome::default();
        for _ in 0..4000 {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            if id == 0 {
                // The auditor.
                match audit(&db, &t) {
                    Ok(sum) => {
                        assert_eq!(
                            sum,
                            ACCOUNTS as i64 * INITIAL,
                            "an audit saw a partial transfer"
                        );
                        out.audits += 1;
                    }
                    Err(Error::Conflict { .. }) => {}
                    Err(_) => break,
                }
                continue;
            }
            let a = rng.random_range(0..ACCOUNTS);
            let b = (a + rng.random_range(1..ACCOUNTS)) % ACCOUNTS;
            let tr = (a, b, rng.random_range(1..50));
            match transfer(&db, &t, tr) {
                Ok(()) => out.committed.push(tr),
                Err((Error::Conflict { .. }, false)) => {}
                Err((_, true)) => {
                    out.maybe = Some(tr);
                    break;
                }
                Err(_) => break,
            }
        }
        out
    }

    fn round(seed: u64, cut: u64) {
        let rig = LinkedRig::new(seed, 4 << 20, 1 << 20, 512);
        let db = Db::open(rig.devices(), config()).unwrap();
        let t = db.create_tree("bank").unwrap();
        let mut x = db.begin().unwrap();
        for i in 0..ACCOUNTS {
            x.put(&t, &acct(i), &INITIAL.to_le_bytes()).unwrap();
        }
        x.commit().unwrap();
        rig.cut_after(cut);
        let stop = Arc::new(AtomicBool::new(false));
        let bg = db.start_background(std::time::Duration::from_micros(200));
        let hs: Vec<_> = (0..5u64)
            .map(|id| {
                let (db, t, stop) = (db.clone(), t.clone(), stop.clone());
                std::thread::spawn(move || worker(db, t, id, seed, stop))
            })
            .collect();
        let outs: Vec<Outcome> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        stop.store(true, Ordering::Relaxed);
        let _ = bg.stop();
        drop(db);
        rig.crash();
        let what = format!("seed {seed} cut {cut}");
        let db =
            Db::open(rig.devices(), config()).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
        db.verify().unwrap();
        let t = db.open_tree("bank").unwrap();
        let mut x = db.begin().unwrap();
        let got: Vec<i64> = (0..ACCOUNTS)
            .map(|i| bal(x.get(&t, &acct(i)).unwrap()))
            .collect();
        x.commit().unwrap();
        assert_eq!(
            got.iter().sum::<i64>(),
            ACCOUNTS as i64 * INITIAL,
            "{what}: total changed"
        );
        let mut base = vec![INITIAL; ACCOUNTS as usize];
        for o in &outs {
            for &(a, b, amt) in &o.committed {
                base[a as usize] -= amt;
                base[b as usize] += amt;
            }
        }
        let maybes: Vec<Transfer> = outs.iter().filter_map(|o| o.maybe).collect();
        let ok = (0..1u32 << maybes.len()).any(|mask| {
            let mut m = base.clone();
            for (i, &(a, b, amt)) in maybes.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    m[a as usize] -= amt;
                    m[b as usize] += amt;
                }
            }
            m == got
        });
        assert!(ok, "{what}: balances differ from the committed transfers");
        eprintln!(
            "{what}: transfers committed {}, audits {}",
            outs.iter().map(|o| o.committed.len()).sum::<usize>(),
            outs[0].audits
        );
    }

    #[test]
    fn transfers_and_audits_are_serializable_and_survive_a_power_cut() {
        for seed in 0..rounds(6) {
            round(seed, 500 + seed * 1711 % 5000);
        }
    }
}

/// Several threads run random transactions (puts, deletes, overflow values, aborts, scans that
/// conflict, a shared counter updated read-modify-write) while a background thread runs
/// `maintenance` (stepped checkpoints and the page cleaner) and group commit batches commits;
/// the power is cut at a random device command on separate data and log devices; reopen must
/// give exactly what each thread committed (plus, at most, the one transaction whose commit was
/// interrupted), well-formed trees, and a database that keeps working. Then a second crash during
/// the first recovery's aftermath, and a third clean reopen.
mod threads {
    use crate::support::{rounds, LinkedRig, Oracle};
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;
    use std::ops::Bound;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use wafer_engine::{Db, DbConfig, Error, GroupCommitConfig, Tree};

    const THREADS: u64 = 4;
    const TREES: [&str; 2] = ["a", "b"];
    const COUNTER_KEY: &[u8] = b"~counter";

    fn config() -> DbConfig {
        DbConfig {
            buffer_pages: 40,
            log_space_bytes: Some(512 << 10),
            checkpoint_log_fill: 0.3,
            checkpoint_batch_pages: 6,
            cleaner_clean_fraction: 0.25,
            doublewrite_pages: 8,
            group_commit: GroupCommitConfig {
                max_delay_us: 200,
                min_batch: 3,
                min_share_pct: 100,
            },
            ..DbConfig::default()
        }
    }

    fn tkey(thread: u64, n: u64) -> Vec<u8> {
        format!("t{thread}-{n:05}").into_bytes()
    }

    fn val(rng: &mut Pcg64Mcg) -> Vec<u8> {
        let len = if rng.random_bool(0.04) {
            rng.random_range(1100..9000)
        } else {
            rng.random_range(1..200)
        };
        let b: u8 = rng.random();
        (0..len).map(|i| b.wrapping_add(i as u8)).collect()
    }

    /// What one thread knows at the end.
    struct Outcome {
        /// Its keys, in both trees, as committed.
        committed: Oracle,
        /// The state had its interrupted commit succeeded.
        maybe: Option<Oracle>,
        /// Committed counter increments, and how many more may have committed.
        increments: u64,
        maybe_increments: u64,
    }

    fn is_fatal(e: &Error) -> bool {
        !matches!(e, Error::Conflict { .. } | Error::LogFull(_))
    }

    fn worker(db: Db, trees: Vec<Tree>, thread: u64, seed: u64, stop: Arc<AtomicBool>) -> Outcome {
        let mut rng = Pcg64Mcg::seed_from_u64(seed * 1000 + thread);
        let mut out = Outcome {
            committed: Oracle::new(&TREES),
            maybe: None,
            increments: 0,
            maybe_increments: 0,
        };
        for _ in 0..3000 {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let Ok(mut x) = db.begin() else { break };
            let mut staged = out.committed.clone();
            let mut inc = 0u64;
            let n = rng.random_range(1..6);
            let mut failed: Option<Error> = None;
            for _ in 0..n {
                let ti = rng.random_range(0..2usize);
                let t = &trees[ti];
                let r = match rng.random_range(0..20) {
                    0 => {
                        // Read-modify-write of the shared counter (conflicts with other threads).
                        let r = x.get(&trees[0], COUNTER_KEY).and_then(|v| {
                            let c = v.map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()));
                            x.put(&trees[0], COUNTER_KEY, &(c + 1).to_le_bytes())
                        });
                        if r.is_ok() {
                            inc += 1;
                        }
                        r.map(|_| ())
                    }
                    1 => x
                        .scan(t, (Bound::Unbounded, Bound::Unbounded), false, 20)
                        .map(|_| ()),
                    2..=5 => {
                        let k = tkey(thread, rng.random_range(0..120));
                        staged.delete(TREES[ti], &k);
                        x.delete(t, &k).map(|_| ())
                    }
                    _ => {
                        let k = tkey(thread, rng.random_range(0..120));
                        let v = val(&mut rng);
                        staged.put(TREES[ti], &k, &v);
                        x.put(t, &k, &v).map(|_| ())
                    }
                };
                if let Err(e) = r {
                    failed = Some(e);
                    break;
                }
            }
            if let Some(e) = failed {
                let _ = x.abort();
                if is_fatal(&e) {
                    break;
                }
                continue;
            }
            if rng.random_bool(0.1) {
                if x.abort().is_err() {
                    break;
                }
                continue;
            }
            match x.commit() {
                Ok(()) => {
                    out.committed = staged;
                    out.increments += inc;
                }
                Err(_) => {
                    out.maybe = Some(staged);
                    out.maybe_increments = inc;
                    break;
                }
            }
        }
        out
    }

    /// The rows of `thread` in both trees.
    fn thread_state(db: &Db, thread: u64) -> Oracle {
        let prefix = format!("t{thread}-").into_bytes();
        let mut end = prefix.clone();
        *end.last_mut().unwrap() += 1;
        let range = (Bound::Included(&prefix[..]), Bound::Excluded(&end[..]));
        Oracle::read_range(db, &TREES, range)
    }

    fn counter(db: &Db) -> u64 {
        let t = db.open_tree(TREES[0]).unwrap();
        let mut x = db.begin().unwrap();
        let v = x.get(&t, COUNTER_KEY).unwrap();
        x.commit().unwrap();
        v.map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()))
    }

    fn check(db: &Db, outs: &[Outcome], what: &str) {
        db.verify()
            .unwrap_or_else(|e| panic!("{what}: verify failed: {e}"));
        for (i, o) in outs.iter().enumerate() {
            let got = thread_state(db, i as u64);
            if o.maybe.as_ref() != Some(&got) {
                o.committed
                    .assert_same(&got, &format!("{what}: thread {i}: recovered rows"));
            }
        }
        let lo: u64 = outs.iter().map(|o| o.increments).sum();
        let hi = lo + outs.iter().map(|o| o.maybe_increments).sum::<u64>();
        let c = counter(db);
        assert!(
            (lo..=hi).contains(&c),
            "{what}: counter {c}, committed increments {lo}..={hi}"
        );
    }

    fn round(seed: u64, cut: u64) {
        let rig = LinkedRig::new(seed, 8 << 20, 2 << 20, 512);
        let db = Db::open(rig.devices(), config()).unwrap();
        let trees: Vec<Tree> = TREES.iter().map(|n| db.create_tree(n).unwrap()).collect();
        rig.cut_after(cut);
        let stop = Arc::new(AtomicBool::new(false));
        let bg = db.start_background(std::time::Duration::from_micros(300));
        let handles: Vec<_> = (0..THREADS)
            .map(|i| {
                let (db, trees, stop) = (db.clone(), trees.clone(), stop.clone());
                std::thread::spawn(move || worker(db, trees, i, seed, stop))
            })
            .collect();
        let outs: Vec<Outcome> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        stop.store(true, Ordering::Relaxed);
        let _ = bg.stop();
        let cut_happened = rig.is_powered_off();
        drop(db);
        rig.crash();
        let what = format!("seed {seed} cut {cut} (cut happened: {cut_happened})");
        let db = Db::open(rig.devices(), config())
            .unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
        check(&db, &outs, &what);
        let rec = db.stats().recovery.unwrap();
        eprintln!(
            "{what}: committed rows {}, increments {}, redo {} applied {}, undo txns {}",
            outs.iter().map(|o| o.committed.row_count()).sum::<usize>(),
            outs.iter().map(|o| o.increments).sum::<u64>(),
            rec.redo_records,
            rec.redo_applied,
            rec.undo_txns
        );
        // Work a little after recovery, then crash again part-way through (recovery of recovery
        // and of post-recovery work), and reopen twice.
        let t = db.open_tree(TREES[1]).unwrap();
        rig.cut_after(1 + seed * 7 % 40);
        for i in 0..50u64 {
            let Ok(mut x) = db.begin() else { break };
            if x.put(&t, format!("z{i}").as_bytes(), b"post").is_err() {
                break;
            }
            if x.commit().is_err() {
                break;
            }
        }
        drop(db);
        rig.crash();
        let db = Db::open(rig.devices(), config())
            .unwrap_or_else(|e| panic!("{what}: second reopen failed: {e}"));
        check(&db, &outs, &format!("{what}, second crash"));
        drop(db);
        let db = Db::open(rig.devices(), config())
            .unwrap_or_else(|e| panic!("{what}: third reopen failed: {e}"));
        check(&db, &outs, &format!("{what}, clean reopen"));
    }

    #[test]
    fn random_transactions_with_maintenance_recover_exactly_what_committed() {
        for seed in 0..rounds(8) {
            let cut = 300 + seed * 997 % 6000;
            round(seed, cut);
        }
    }
}

/// Full scans of a tree that writers keep changing. Under no-wait locking a scan needs the whole
/// tree in S mode, which every in-flight writer's IX lock refuses: with a stream of short
/// writers the reader never got it (0 scans in 20 s with 8 threads). A read-only scan now waits
/// for the writers in the tree while new ones are turned away, so readers finish.
#[test]
fn full_scans_finish_among_a_stream_of_writers() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    for i in 0..2000u64 {
        x.put(&t, &key(i, 12), &[0u8; 50]).unwrap();
    }
    x.commit().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let scans = Arc::new(AtomicU64::new(0));
    let writes = Arc::new(AtomicU64::new(0));
    std::thread::scope(|s| {
        for w in 0..4u64 {
            let (db, t, stop, writes) = (&db, &t, stop.clone(), writes.clone());
            s.spawn(move || {
                let mut n = w;
                'txn: while !stop.load(Ordering::Relaxed) {
                    // Transactions of four updates: the tree always has a writer in it.
                    let mut x = db.begin().unwrap();
                    for _ in 0..4 {
                        n = (n * 7919 + 13) % 2000;
                        match x.put(t, &key(n, 12), &n.to_le_bytes()) {
                            Ok(_) => std::thread::yield_now(),
                            Err(Error::Conflict { .. }) => {
                                drop(x);
                                std::thread::yield_now();
                                continue 'txn;
                            }
                            Err(e) => panic!("writer: {e}"),
                        }
                    }
                    x.commit().unwrap();
                    writes.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let (db, t, scans) = (&db, &t, scans.clone());
        s.spawn(move || {
            let start = std::time::Instant::now();
            while start.elapsed() < std::time::Duration::from_millis(1500) {
                let mut x = db.begin().unwrap();
                let all = (Bound::Unbounded, Bound::Unbounded);
                let rows: Result<Vec<_>, _> = match x.cursor(t, all, false) {
                    Ok(c) => c.collect(),
                    Err(e) => Err(e),
                };
                match rows {
                    Ok(rows) => {
                        assert_eq!(rows.len(), 2000);
                        x.commit().unwrap();
                        scans.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(Error::Conflict { .. }) => drop(x),
                    Err(e) => panic!("reader: {e}"),
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
    });
    let (scans, writes) = (
        scans.load(Ordering::Relaxed),
        writes.load(Ordering::Relaxed),
    );
    assert!(
        scans >= 3,
        "{scans} full scans finished among {writes} writes"
    );
    assert!(
        writes >= 100,
        "the writers were starved instead: {writes} writes"
    );
}

/// A transaction refused a record by one that is committing on another thread (its commit
/// record logged, waiting for the log device) waits for that commit to end and then gets the
/// record, rather than fail: the holder waits for no lock, so the wait cannot close a cycle.
/// The log device holds the holder's flush back; the second writer must still be waiting when
/// it is let go (with no-wait alone it failed at once), and then commits. A holder that is
/// still running refuses at once, as before.
#[test]
fn a_record_held_by_a_committing_transaction_is_waited_for() {
    use crate::support::Gate;
    use std::sync::atomic::Ordering;
    let gate = std::sync::Arc::new(Gate::default());
    gate.flushes_only.store(true, Ordering::SeqCst);
    let db = Db::open(
        crate::support::gated_log_in_memory(&gate),
        DbConfig::default(),
    )
    .unwrap();
    let t = db.create_tree("t").unwrap();
    // A second thread's operation first: from then on commits run beside other threads.
    std::thread::scope(|s| {
        s.spawn(|| assert_eq!(db.get(&t, b"k").unwrap(), None));
    });
    let mut a = db.begin().unwrap();
    a.put(&t, b"k", b"a").unwrap();
    // Running: a writer of its record is refused at once.
    let mut b = db.begin().unwrap();
    assert!(matches!(b.put(&t, b"k", b"b"), Err(Error::Conflict { .. })));
    drop(b);
    gate.set(true);
    let committer = std::thread::spawn(move || a.commit());
    while !gate.waiting.load(Ordering::SeqCst) {
        assert!(!committer.is_finished(), "the commit did not flush the log");
        std::thread::yield_now();
    }
    let writer = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            let mut b = db.begin().unwrap();
            b.put(&t, b"k", b"b")?;
            b.commit()
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(
        !writer.is_finished(),
        "the writer did not wait for the committing holder: {:?}",
        writer.join()
    );
    gate.set(false);
    committer.join().unwrap().unwrap();
    writer.join().unwrap().unwrap();
    assert_eq!(db.get(&t, b"k").unwrap().as_deref(), Some(&b"b"[..]));
}

/// Runs `txn`'s put of `key` on another thread and gives the transaction back, still open: a
/// running holder whose latest operation was on another thread.
fn put_elsewhere(
    txn: wafer_engine::Txn,
    t: &wafer_engine::Tree,
    key: &'static [u8],
) -> wafer_engine::Txn {
    let mut txn = txn;
    std::thread::scope(|s| {
        s.spawn(move || {
            txn.put(t, key, b"holder").unwrap();
            txn
        })
        .join()
        .unwrap()
    })
}

/// Runs `waiter`'s put of `key` (to `value`) and its commit on another thread, checks that it
/// waits for `holder` (still running after 20 ms), commits `holder`, and checks that the
/// waiter's put then went through.
fn waits_for_the_holder(
    db: &Db,
    t: &wafer_engine::Tree,
    mut waiter: wafer_engine::Txn,
    holder: wafer_engine::Txn,
    key: &'static [u8],
    value: &'static [u8],
) {
    let waiting = {
        let t = t.clone();
        std::thread::spawn(move || {
            waiter.put(&t, key, value)?;
            waiter.commit()
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(
        !waiting.is_finished(),
        "the transaction did not wait: {:?}",
        waiting.join()
    );
    holder.commit().unwrap();
    waiting.join().unwrap().unwrap();
    assert_eq!(db.get(t, key).unwrap().as_deref(), Some(value));
}

/// A record held by a transaction still running, whose latest operation ran on another thread,
/// is waited for by an older transaction (until the holder ends) and refused at once to a
/// younger one (wait-die by age: no cycle of waits can form); with `wait_for_running_holders`
/// off, refused at once to both.
#[test]
fn a_running_holder_of_another_thread_is_waited_for_by_older_transactions_only() {
    let db = Db::open(
        wafer_engine::Devices::memory(16 << 20, 4 << 20),
        DbConfig::default(),
    )
    .unwrap();
    let t = db.create_tree("t").unwrap();
    let put_elsewhere = |txn, key| put_elsewhere(txn, &t, key);
    // Dies: younger than the running holder, refused at once.
    let holder = db.begin().unwrap();
    let mut younger = db.begin().unwrap();
    assert!(younger.age() > holder.age());
    let holder = put_elsewhere(holder, b"a");
    let started = std::time::Instant::now();
    assert!(matches!(
        younger.put(&t, b"a", b"younger"),
        Err(Error::Conflict { .. })
    ));
    assert!(started.elapsed() < std::time::Duration::from_millis(80));
    drop(younger);
    holder.commit().unwrap();
    // Waits: older, it waits for the running holder's end, then gets the record.
    let older = db.begin().unwrap();
    let holder = db.begin().unwrap();
    assert!(older.age() < holder.age());
    let holder = put_elsewhere(holder, b"b");
    waits_for_the_holder(&db, &t, older, holder, b"b", b"older");
    assert_eq!(db.get(&t, b"a").unwrap().as_deref(), Some(&b"holder"[..]));
    drop(db);
    // `wait_for_running_holders: false`: no-wait for running holders, older or not.
    let cfg = DbConfig {
        wait_for_running_holders: false,
        ..DbConfig::default()
    };
    let db = Db::open(wafer_engine::Devices::memory(16 << 20, 4 << 20), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut older = db.begin().unwrap();
    let mut holder = db.begin().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| holder.put(&t, b"c", b"holder").unwrap());
    });
    let started = std::time::Instant::now();
    assert!(matches!(
        older.put(&t, b"c", b"older"),
        Err(Error::Conflict { .. })
    ));
    assert!(started.elapsed() < std::time::Duration::from_millis(80));
    drop(older);
    holder.commit().unwrap();
}

/// A transaction begun with `Db::begin_retry` keeps its first try's age (wait-die's order, as
/// a restarted transaction must keep its timestamp or it may starve): a running holder that
/// began after the first try refuses a new transaction at once, but the retry, older than it,
/// waits for its end and gets the record.
#[test]
fn a_retry_keeps_its_age_and_waits_where_a_new_transaction_is_refused() {
    let db = Db::open(
        wafer_engine::Devices::memory(16 << 20, 4 << 20),
        DbConfig::default(),
    )
    .unwrap();
    let t = db.create_tree("t").unwrap();
    // The first try, refused somewhere and rolled back.
    let first = db.begin().unwrap();
    let age = first.age();
    first.abort().unwrap();
    let holder = put_elsewhere(db.begin().unwrap(), &t, b"k");
    assert!(holder.age() > age);
    // Retried as a new transaction: the youngest, refused at once.
    let mut fresh = db.begin().unwrap();
    assert!(fresh.age() > holder.age());
    let started = std::time::Instant::now();
    assert!(matches!(
        fresh.put(&t, b"k", b"fresh"),
        Err(Error::Conflict { .. })
    ));
    assert!(started.elapsed() < std::time::Duration::from_millis(80));
    drop(fresh);
    // Retried with its first try's age: older than the holder, it waits.
    let retry = db.begin_retry(age).unwrap();
    assert_eq!(retry.age(), age);
    assert!(retry.id() > holder.id(), "a new id all the same");
    waits_for_the_holder(&db, &t, retry, holder, b"k", b"retry");
    drop(db);
    // A snapshot transaction's retry keeps its age too.
    let devs = wafer_engine::Devices::memory(16 << 20, 4 << 20).with_undo(Box::new(
        wafer_engine::device::MemDevice::new(4 << 20, 4096),
    ));
    let db = Db::open(devs, DbConfig::default()).unwrap();
    let first = db.begin_snapshot().unwrap();
    let age = first.age();
    first.abort().unwrap();
    let later = db.begin_snapshot().unwrap();
    let retry = db.begin_snapshot_retry(age).unwrap();
    assert_eq!(retry.age(), age);
    assert!(retry.age() < later.age());
}
