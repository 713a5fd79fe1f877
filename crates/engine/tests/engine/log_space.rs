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

/// Committed base rows, then one transaction of `len`-byte values until it has appended
/// `budget` log bytes or gets `LogFull`. Returns the db, the committed state, the live txn and
/// whether it hit LogFull.
fn big_txn(pair: &MemPair, len: usize, budget: u64) -> (Db, Oracle, Txn, bool) {
    let db = Db::open(pair.devices(), config()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut base = Oracle::new(&["t"]);
    let mut x = db.begin().unwrap();
    for i in 0..50u64 {
        x.put(&t, &key(i, 16), &value(i, 60)).unwrap();
        base.put("t", &key(i, 16), &value(i, 60));
    }
    x.commit().unwrap();
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
    for len in [100usize, 3000] {
        let pair = MemPair::new();
        let (db, base, x, hit) = big_txn(&pair, len, u64::MAX);
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

/// A transaction that used ~40% of the log space (no LogFull yet) and aborts. (A transaction
/// reserves as much again for its rollback, so it can use at most about half of the log.)
#[test]
fn rollback_of_a_large_transaction_fits_the_log() {
    for len in [100usize, 3000] {
        let pair = MemPair::new();
        let (db, base, x, hit) = big_txn(&pair, len, 400 << 10);
        assert!(!hit);
        let r = x.abort();
        assert!(
            r.is_ok(),
            "len {len}: abort of a transaction that used 40% of the log failed: {}",
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
