//! Review: transactions near the log-space limit. A transaction that gets `LogFull` is told to
//! abort (docs/engine.md), so its rollback must be possible; and a crash while such a
//! transaction is active must leave a database that recovery can roll back (recovery's undo
//! writes compensation records into the same log).

mod common;

use common::{key, value, MemPair};
use std::ops::Bound;
use wafer_engine::{Db, DbConfig, Error, Tree};

fn config() -> DbConfig {
    DbConfig {
        buffer_pages: 1024,
        log_space_bytes: Some(1 << 20),
        ..DbConfig::default()
    }
}

type Rows = Vec<(Vec<u8>, Vec<u8>)>;

fn rows(db: &Db, t: &Tree) -> Rows {
    let mut x = db.begin().unwrap();
    let r = x
        .scan(t, (Bound::Unbounded, Bound::Unbounded), false, usize::MAX)
        .unwrap();
    x.commit().unwrap();
    r
}

/// Committed base rows, then one transaction of `len`-byte values until it has appended
/// `budget` log bytes or gets `LogFull`. Returns the db, tree, the base rows, the live txn and
/// whether it hit LogFull.
fn big_txn(pair: &MemPair, len: usize, budget: u64) -> (Db, Tree, Rows, wafer_engine::Txn, bool) {
    let db = Db::open(pair.devices(), config()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    for i in 0..50u64 {
        x.put(&t, &key(i, 16), &value(i, 60)).unwrap();
    }
    x.commit().unwrap();
    let base = rows(&db, &t);
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
    (db, t, base, x, hit)
}

/// The transaction runs into LogFull; the caller aborts as told.
#[test]
fn review_abort_after_logfull_succeeds() {
    for len in [100usize, 3000] {
        let pair = MemPair::new();
        let (db, t, base, x, hit) = big_txn(&pair, len, u64::MAX);
        assert!(hit, "the transaction should have run into LogFull");
        let r = x.abort();
        assert!(
            r.is_ok(),
            "len {len}: abort of a transaction that got LogFull failed: {}",
            r.unwrap_err()
        );
        assert_eq!(rows(&db, &t), base);
        db.verify().unwrap();
    }
}

/// A transaction that used ~40% of the log space (no LogFull yet) and aborts. (A transaction
/// reserves as much again for its rollback, so it can use at most about half of the log.)
#[test]
fn review_abort_of_a_transaction_using_most_of_the_log() {
    for len in [100usize, 3000] {
        let pair = MemPair::new();
        let (db, t, base, x, hit) = big_txn(&pair, len, 400 << 10);
        assert!(!hit);
        let r = x.abort();
        assert!(
            r.is_ok(),
            "len {len}: abort of a transaction that used 40% of the log failed: {}",
            r.unwrap_err()
        );
        assert_eq!(rows(&db, &t), base);
        db.verify().unwrap();
    }
}

/// Crash (drop without commit or abort reaching the log) while a transaction that got LogFull
/// is active: reopen must roll it back.
#[test]
fn review_recovery_of_a_transaction_that_filled_the_log() {
    for len in [100usize, 3000] {
        let pair = MemPair::new();
        let (db, _t, base, x, hit) = big_txn(&pair, len, u64::MAX);
        assert!(hit);
        // Make its records durable, then "crash": forget the handle without rolling back.
        db.checkpoint().unwrap();
        std::mem::forget(x);
        drop(db);
        let db = match Db::open(pair.devices(), config()) {
            Ok(db) => db,
            Err(e) => panic!("len {len}: reopen after a crash failed: {e}"),
        };
        let t = db.open_tree("t").unwrap();
        assert_eq!(rows(&db, &t), base);
        db.verify().unwrap();
    }
}
