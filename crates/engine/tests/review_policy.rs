//! Review: "above 85% log fill every candidate is written regardless of the policy, so deferral
//! can never overrun the log" (docs/engine.md). A policy that defers every page must never make a
//! short transaction fail with LogFull, and recovery after a crash must still be exact.

mod common;

use common::{key, value, MemPair};
use std::collections::BTreeMap;
use std::ops::Bound;
use wafer_engine::{Candidate, CheckpointPolicy, Db, DbConfig};

struct DeferAll;

impl CheckpointPolicy for DeferAll {
    fn select(&mut self, _candidates: &[Candidate], _log_fill: f64) -> Vec<u64> {
        Vec::new()
    }
    fn name(&self) -> &'static str {
        "defer-all"
    }
}

/// A small log (512 KiB: the 32-page operation reserve is a quarter of it).
#[test]
fn review_deferring_policy_never_overruns_a_small_log() {
    deferring_policy(512 << 10);
}

/// A 2 MiB log (the reserve is 6% of it).
#[test]
fn review_deferring_policy_never_overruns_a_larger_log() {
    deferring_policy(2 << 20);
}

fn deferring_policy(log_bytes: u64) {
    let pair = MemPair::new();
    let cfg = DbConfig {
        buffer_pages: 128,
        log_space_bytes: Some(log_bytes),
        checkpoint_log_fill: 0.5,
        ..DbConfig::default()
    };
    let db = Db::open(pair.devices(), cfg.clone()).unwrap();
    db.set_checkpoint_policy(Box::new(DeferAll));
    let t = db.create_tree("t").unwrap();
    let mut oracle = BTreeMap::new();
    for i in 0..3000u64 {
        let mut x = db.begin().unwrap();
        let k = key(i % 700, 16);
        let v = value(i, if i % 50 == 0 { 3000 } else { 80 });
        x.put(&t, &k, &v)
            .unwrap_or_else(|e| panic!("txn {i}: put failed: {e}"));
        x.commit().unwrap();
        oracle.insert(k, v);
        if i % 25 == 0 {
            db.maintenance().unwrap();
        }
    }
    assert!(db.stats().engine.checkpoints > 0);
    drop(db);
    // Crash (nothing flushed at drop) and recover.
    let db = Db::open(pair.devices(), cfg).unwrap();
    db.verify().unwrap();
    let t = db.open_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    let rows: BTreeMap<Vec<u8>, Vec<u8>> = x
        .scan(&t, (Bound::Unbounded, Bound::Unbounded), false, usize::MAX)
        .unwrap()
        .into_iter()
        .collect();
    assert!(
        rows == oracle,
        "recovered rows differ from the committed rows"
    );
}
