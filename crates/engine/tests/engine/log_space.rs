//! Transactions near the log-space limit. A transaction that gets `LogFull` is told to
//! abort (docs/engine.md), so its rollback must be possible; and a crash while such a
//! transaction is active must leave a database that recovery can roll back (recovery's undo
//! writes compensation records into the same log).

use crate::support::{key, value, MemPair, Oracle};
use wafer_engine::{Db, DbConfig, Error, Txn};

fn config() -> DbConfig {
    DbConfig {
        buffer_pages: 1024,
        log_space_bytes: Some(1 << 20),
        ..DbConfig::default()
    }
}

/// Commits 50 base rows into `t` and returns them.
fn base_rows(db: &Db, t: &wafer_engine::Tree) -> Oracle {
    let mut base = Oracle::new(&["t"]);
    let mut x = db.begin().unwrap();
    for i in 0..50u64 {
        x.put(t, &key(i, 16), &value(i, 60)).unwrap();
        base.put("t", &key(i, 16), &value(i, 60));
    }
    x.commit().unwrap();
    base
}

/// Committed base rows, then one transaction of `len`-byte values until it has appended
/// `budget` log bytes or gets `LogFull`. Returns the db, the committed state, the live txn and
/// whether it hit LogFull.
fn big_txn(pair: &MemPair, len: usize, budget: u64) -> (Db, Oracle, Txn, bool) {
    big_txn_with(pair, len, budget, config())
}

fn big_txn_with(pair: &MemPair, len: usize, budget: u64, cfg: DbConfig) -> (Db, Oracle, Txn, bool) {
    let db = Db::open(pair.devices(), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let base = base_rows(&db, &t);
    let start = db.stats().wal.appended_bytes;
    let mut x = db.begin().unwrap();
    let mut hit = false;
    for i in 0..100_000u64 {
        if db.stats().wal.appended_bytes - start >= budget {
            break;
        }
        match x.put(&t, &key(1000 + i, 16), &value(i, len)) {
            Ok(_) => {}
            Err(Error::LogFull(_)) => {
                hit = true;
                break;
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    (db, base, x, hit)
}

/// The transaction runs into LogFull; the caller aborts as told.
#[test]
fn a_transaction_that_got_log_full_can_abort() {
    for (len, compact) in [(100usize, false), (3000, false), (100, true), (3000, true)] {
        let pair = MemPair::new();
        let cfg = DbConfig {
            log_image_holes: compact,
            log_page_ops: compact,
            ..config()
        };
        let (db, base, x, hit) = big_txn_with(&pair, len, u64::MAX, cfg);
        assert!(hit, "the transaction should have run into LogFull");
        let r = x.abort();
        assert!(
            r.is_ok(),
            "len {len}: abort of a transaction that got LogFull failed: {}",
            r.unwrap_err()
        );
        base.check(&db, &format!("len {len}"));
    }
}

/// A transaction that appended ~20% of the log space (no LogFull yet) and aborts. (A
/// transaction reserves as much again for its rollback as its records would take with whole page
/// images, so it can append at most about half of the log: less where its images had holes.)
#[test]
fn rollback_of_a_large_transaction_fits_the_log() {
    for len in [100usize, 3000] {
        let pair = MemPair::new();
        let (db, base, x, hit) = big_txn(&pair, len, 200 << 10);
        assert!(!hit);
        let r = x.abort();
        assert!(
            r.is_ok(),
            "len {len}: abort of a transaction that used 20% of the log failed: {}",
            r.unwrap_err()
        );
        base.check(&db, &format!("len {len}"));
    }
}

/// Crash (drop without commit or abort reaching the log) while a transaction that got LogFull
/// is active: reopen must roll it back.
#[test]
fn recovery_rolls_back_a_transaction_that_filled_the_log() {
    for len in [100usize, 3000] {
        let pair = MemPair::new();
        let (db, base, x, hit) = big_txn(&pair, len, u64::MAX);
        assert!(hit);
        // Make its records durable, then "crash": forget the handle without rolling back.
        db.checkpoint().unwrap();
        std::mem::forget(x);
        drop(db);
        let db = match Db::open(pair.devices(), config()) {
            Ok(db) => db,
            Err(e) => panic!("len {len}: reopen after a crash failed: {e}"),
        };
        base.check(&db, &format!("len {len}"));
    }
}

/// A put refused because the pool is too small for its value must leave nothing behind: later
/// operations (one reusing the free list) and the next checkpoint see a consistent free list.
/// (Until the thirty-second session the refusal came midway, `PoolExhausted` once every frame
/// was pinned, its changes put back; a value too long for the pool is now refused before any
/// change, `ValueTooLong`. A refusal midway, for log space, is tested below.)
#[test]
fn a_put_refused_for_want_of_frames_leaves_the_pages_consistent() {
    let cfg = wafer_engine::DbConfig {
        buffer_pages: 16,
        log_space_bytes: Some(8 << 20),
        ..wafer_engine::DbConfig::default()
    };
    let db =
        wafer_engine::Db::open(wafer_engine::Devices::memory(64 << 20, 16 << 20), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    // Free pages on the free list: a large value written and deleted.
    let mut x = db.begin().unwrap();
    x.put(&t, b"z", &vec![9u8; 16_000]).unwrap();
    x.commit().unwrap();
    let mut x = db.begin().unwrap();
    x.delete(&t, b"z").unwrap();
    x.commit().unwrap();
    let mut x = db.begin().unwrap();
    let a = x.put(&t, b"a", &vec![1u8; 58_006]);
    let b = x.put(&t, b"b", &vec![2u8; 16_100]);
    assert!(
        matches!(a, Err(wafer_engine::Error::ValueTooLong { .. })),
        "{a:?}"
    );
    // The transaction goes on and commits what did succeed.
    assert!(b.is_ok(), "{b:?}");
    x.commit().unwrap();
    for i in 0..50u32 {
        let mut x = db.begin().unwrap();
        x.put(&t, &i.to_be_bytes(), &vec![3u8; 3000]).unwrap();
        x.commit().unwrap();
    }
    db.checkpoint().unwrap();
    assert_eq!(db.check_pages().unwrap(), Vec::<String>::new());
    db.verify().unwrap();
    let mut x = db.begin().unwrap();
    assert_eq!(x.get(&t, b"a").unwrap(), None);
    assert_eq!(x.get(&t, b"b").unwrap().map(|v| v.len()), Some(16_100));
    x.commit().unwrap();
}

/// Two threads moving 3,000-byte values between 8 keys, default configuration: a transaction of
/// one thread that waits between its operations (descheduled, or behind the core latch) while
/// the other commits megabytes of log holds the log's start. The other thread's writes wait for
/// it to end instead of failing with `LogFull`, and the holder may use the last slack of the log
/// to finish.
#[test]
fn two_threads_of_transfers_never_fill_the_log() {
    use std::sync::Arc;
    let db = Arc::new(
        wafer_engine::Db::open(
            wafer_engine::Devices::memory(256 << 20, 64 << 20),
            wafer_engine::DbConfig::default(),
        )
        .unwrap(),
    );
    let t = db.create_tree("acct").unwrap();
    let mut x = db.begin().unwrap();
    for k in 0..8u32 {
        x.put(&t, &k.to_le_bytes(), &[0u8; 3000]).unwrap();
    }
    x.commit().unwrap();
    // Two busy threads besides the two workers on this 2-core machine: the workers get
    // descheduled in the middle of transactions, as under any real load.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spinners: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            })
        })
        .collect();
    let threads: Vec<_> = (0..2u32)
        .map(|th| {
            let (db, t) = (db.clone(), t.clone());
            std::thread::spawn(move || {
                let mut commits = 0u32;
                let mut i = th.wrapping_mul(7919).wrapping_add(1);
                while commits < 20_000 {
                    i = i.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    let (a, b) = ((i >> 8) % 8, (i >> 16) % 8);
                    if a == b {
                        continue;
                    }
                    let mut x = db.begin().unwrap();
                    let r = (|| -> wafer_engine::Result<()> {
                        let va = x.get(&t, &a.to_le_bytes())?.unwrap();
                        let vb = x.get(&t, &b.to_le_bytes())?.unwrap();
                        x.put(&t, &a.to_le_bytes(), &va)?;
                        x.put(&t, &b.to_le_bytes(), &vb)?;
                        Ok(())
                    })();
                    match r {
                        Ok(()) => {
                            x.commit().unwrap();
                            commits += 1;
                        }
                        Err(wafer_engine::Error::Conflict { .. }) => x.abort().unwrap(),
                        Err(e) => panic!("thread {th} after {commits} commits: {e}"),
                    }
                }
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|h| h.join()).collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for s in spinners {
        s.join().unwrap();
    }
    for r in results {
        r.unwrap();
    }
    db.verify().unwrap();
}

/// A rollback logs no more than its transaction reserved (its records mirrored, plus one
/// structure change): here undoing T's inserts leaves their leaves under a quarter full, because
/// another transaction emptied the leaves meanwhile. A rollback that merged those leaves logged
/// page images for every merge (several KiB each, far more than T reserved), so a transaction
/// near the log limit could not abort, and recovery could not roll it back either.
#[test]
fn a_rollback_logs_no_more_than_it_reserved() {
    let pair = MemPair::new();
    let cfg = DbConfig {
        log_space_bytes: Some(8 << 20),
        ..config()
    };
    let db = Db::open(pair.devices(), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let k = |n: u64| format!("k{n:06}").into_bytes();
    let mut x = db.begin().unwrap();
    for n in (0..16000u64).step_by(2) {
        x.put(&t, &k(n), &[7u8; 40]).unwrap();
    }
    x.commit().unwrap();
    // Leaves about half full: keys every 8.
    let mut x = db.begin().unwrap();
    for n in (0..16000u64).step_by(2).filter(|n| n % 8 != 0) {
        x.delete(&t, &k(n)).unwrap();
    }
    x.commit().unwrap();
    // T inserts a 200-byte value after every eighth key: no leaf splits.
    let before = db.stats().wal.appended_bytes;
    let mut tx = db.begin().unwrap();
    let mine: Vec<u64> = (0..16000u64).step_by(64).map(|n| n + 1).collect();
    for &n in &mine {
        tx.put(&t, &k(n), &[1u8; 200]).unwrap();
    }
    let forward = db.stats().wal.appended_bytes - before;
    // Another transaction deletes five keys of every six: T's values keep the leaves above a
    // quarter full, so nothing merges yet.
    let mut state = Oracle::new(&["t"]);
    let mut y = db.begin().unwrap();
    for (i, n) in (0..16000u64).step_by(8).enumerate() {
        if i % 6 != 0 {
            y.delete(&t, &k(n)).unwrap();
        } else {
            state.put("t", &k(n), &[7u8; 40]);
        }
    }
    y.commit().unwrap();
    let before = db.stats().wal.appended_bytes;
    tx.abort().unwrap();
    let rollback = db.stats().wal.appended_bytes - before;
    // What T reserved: each record again plus 128 bytes, and its one-off reserve (Abort, End and
    // one structure change of four pages).
    let reserved = forward + 128 * mine.len() as u64 + 256 + 4 * 4096;
    assert!(
        rollback <= reserved,
        "the rollback logged {rollback} bytes, more than the {reserved} it reserved"
    );
    state.check(&db, "after the rollback");
    assert_eq!(db.check_pages().unwrap(), Vec::<String>::new());
    // The leaves left under-full merge at later deletes.
    let mut z = db.begin().unwrap();
    let all = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
    for (n, _) in state.scan("t", all, false, usize::MAX) {
        z.delete(&t, &n).unwrap();
    }
    z.commit().unwrap();
    Oracle::new(&["t"]).check(&db, "after deleting the rest");
    assert_eq!(db.check_pages().unwrap(), Vec::<String>::new());
}

/// An update's record can be far larger than the engine's estimate before the operation, which
/// cannot know the value it replaces: replacing a 40 KB value with a few bytes logs the freed
/// chain and the old value (about 80 KB). Such a record must not eat into the space live
/// transactions reserved for their rollback: it fails with `LogFull` instead, and every
/// rollback still fits. (Before, the record was appended, the next rollback hit `LogFull`,
/// the handle was poisoned, and recovery failed with `LogFull` at every reopen.)
#[test]
fn an_update_larger_than_estimated_leaves_the_rollback_reserve() {
    let pair = MemPair::new();
    let cfg = DbConfig {
        buffer_pages: 64,
        log_space_bytes: Some(320 << 10),
        ..DbConfig::default()
    };
    let db = Db::open(pair.devices(), cfg.clone()).unwrap();
    let t = db.create_tree("t").unwrap();
    // (The longest value this configuration accepts is 32,288 bytes.)
    let big = vec![9u8; 30_000];
    let mut state = Oracle::new(&["t"]);
    // T pins the log's start for the whole run.
    let mut tx = db.begin().unwrap();
    tx.put(&t, b"a", &[1u8; 2000]).unwrap();
    let mut refused = 0;
    for i in 0..200u32 {
        let mut x = db.begin().unwrap();
        match x.put(&t, b"b", &big) {
            Ok(_) => {
                x.commit().unwrap();
                state.put("t", b"b", &big);
            }
            Err(Error::LogFull(_)) => {
                x.abort().unwrap();
                refused += 1;
                continue;
            }
            Err(e) => panic!("round {i}: {e}"),
        }
        let mut y = db.begin().unwrap();
        match y.put(&t, b"b", b"small") {
            Ok(_) => {
                y.commit().unwrap();
                state.put("t", b"b", b"small");
            }
            Err(Error::LogFull(_)) => {
                refused += 1;
                y.abort()
                    .unwrap_or_else(|e| panic!("round {i}: the rollback failed: {e}"));
            }
            Err(e) => panic!("round {i}: {e}"),
        }
    }
    assert!(refused > 0, "the log never filled");
    // Refusals midway (the overwrite's record, after it freed the chain) left nothing behind.
    assert_eq!(db.check_pages().unwrap(), Vec::<String>::new());
    tx.abort()
        .unwrap_or_else(|e| panic!("the pinning transaction's rollback failed: {e}"));
    state.check(&db, "after the run");
    drop(db);
    let db = Db::open(pair.devices(), cfg).unwrap();
    state.check(&db, "after a reopen");
}

/// A bulk load that fills the log (`Txn::load` with small keys: each step reserves a
/// compensation record per key for its rollback) gets `LogFull`; the abort it is told to make
/// succeeds, and so does recovery of the same situation after a crash.
#[test]
fn a_load_that_fills_the_log_aborts_and_recovers() {
    for crash in [false, true] {
        let pair = MemPair::new();
        let db = Db::open(pair.devices(), config()).unwrap();
        let t = db.create_tree("t").unwrap();
        let base = base_rows(&db, &t);
        let mut x = db.begin().unwrap();
        let mut hit = false;
        for batch in 0..1_000u64 {
            let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..500)
                .map(|i| (key(1_000 + batch * 500 + i, 16), value(i, 8)))
                .collect();
            match x.load(&t, &pairs) {
                Ok(()) => {}
                Err(Error::LogFull(_)) => {
                    hit = true;
                    break;
                }
                Err(e) => panic!("unexpected error {e}"),
            }
        }
        assert!(hit, "the load should have run into LogFull");
        if crash {
            db.checkpoint().unwrap();
            std::mem::forget(x);
            drop(db);
            let db = Db::open(pair.devices(), config())
                .unwrap_or_else(|e| panic!("reopen after a crash mid-load failed: {e}"));
            base.check(&db, "recovered");
            db.verify().unwrap();
        } else {
            x.abort().unwrap();
            base.check(&db, "aborted");
            db.verify().unwrap();
        }
    }
}

/// With several threads, a checkpoint that the log's growth makes due (not one it is short of
/// space for) runs once the transaction whose change found it due has ended, not inside that
/// change: the change holds its record's lock from before, and writers of that key would wait
/// for the whole checkpoint (or, refused by a running holder, retry all along). Before, the
/// put that crossed the log's checkpoint interval ran the checkpoint itself.
#[test]
fn a_due_checkpoint_runs_after_the_transaction_that_found_it() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), config()).unwrap();
    let t = db.create_tree("t").unwrap();
    // A second thread's operation: from then on the database runs beside other threads.
    std::thread::scope(|s| {
        s.spawn(|| db.get(&t, b"none").unwrap());
    });
    let mut ran = 0;
    for i in 0..20_000u64 {
        let before = db.stats().engine.checkpoints;
        let mut x = db.begin().unwrap();
        x.put(&t, &key(i % 500, 16), &value(i, 100)).unwrap();
        assert_eq!(
            db.stats().engine.checkpoints,
            before,
            "a checkpoint ran inside put {i}"
        );
        x.commit().unwrap();
        ran += db.stats().engine.checkpoints - before;
        if ran >= 3 {
            break;
        }
    }
    assert!(ran >= 3, "{ran} checkpoints in 20,000 transactions");
}

/// A tree created while another thread's transaction holds the log full waits for that
/// transaction's end, as a write does (up to 2 s), rather than fail at once with `LogFull`
/// (whose advice, to commit or abort, the creator cannot follow for another thread). Found by
/// a hunt with a bulk loader creating trees beside transfer threads.
#[test]
fn a_tree_created_beside_a_transaction_that_fills_the_log_waits_for_its_end() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), config()).unwrap();
    let t = db.create_tree("t").unwrap();
    let (full, told) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut x = db.begin().unwrap();
            for i in 0..100_000u64 {
                match x.put(&t, &key(i, 16), &value(i, 2000)) {
                    Ok(_) => {}
                    Err(Error::LogFull(_)) => break,
                    Err(e) => panic!("unexpected error {e}"),
                }
            }
            full.send(()).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(300));
            x.commit().unwrap();
        });
        told.recv().unwrap();
        let started = std::time::Instant::now();
        let r = db.create_tree("u");
        let took = started.elapsed();
        assert!(r.is_ok(), "{:?}", r.err());
        assert!(
            took >= std::time::Duration::from_millis(100),
            "created in {took:?}: the log was not full"
        );
    });
    assert!(db.open_tree("u").is_ok());
}
