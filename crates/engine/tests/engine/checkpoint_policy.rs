//! Checkpoint policies. Hot-page-aware checkpointing (paper 000): no page is deferred more than
//! `max_checkpoint_count` consecutive times, deferral saves checkpoint writes of hot pages, and
//! the checkpoint LSN keeps advancing under a hot-spot workload (the log never overruns). Any
//! policy: "above 85% log fill every candidate is written regardless of the policy, so deferral
//! can never overrun the log" (docs/engine.md), so a policy that defers every page never makes a
//! short transaction fail with LogFull, and recovery after a crash is still exact.

use crate::support::{key, value, MemPair, Oracle};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use wafer_engine::{Candidate, CheckpointPolicy, Db, DbConfig, DbStats};

/// A hot-spot workload: 90% of updates to 20 hot keys, 10% to 4000 cold ones, maintenance
/// between transactions. Returns the stats and the checkpoint LSNs seen along the way.
fn hot_spot(max_checkpoint_count: u32, log_space_bytes: u64) -> (DbStats, Vec<u64>) {
    let pair = MemPair::new();
    let cfg = DbConfig {
        buffer_pages: 256,
        max_checkpoint_count,
        log_space_bytes: Some(log_space_bytes),
        checkpoint_log_fill: 0.1,
        ..DbConfig::default()
    };
    let db = Db::open(pair.devices(), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    for c in 0..40u64 {
        let mut x = db.begin().unwrap();
        for i in c * 100..(c + 1) * 100 {
            x.put(&t, &key(i, 16), &value(i, 40)).unwrap();
        }
        x.commit().unwrap();
    }
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    let mut lsns = Vec::new();
    for i in 0..6000u64 {
        let k = if rng.random_bool(0.9) {
            rng.random_range(0..20) * 200
        } else {
            rng.random_range(0..4000)
        };
        let mut x = db.begin().unwrap();
        x.put(&t, &key(k, 16), &value(i, 40)).unwrap();
        x.commit().unwrap();
        db.maintenance().unwrap();
        if i % 500 == 0 {
            lsns.push(db.stats().checkpoint_lsn);
        }
    }
    db.verify().unwrap();
    (db.stats(), lsns)
}

#[test]
fn deferral_is_bounded_and_the_checkpoint_keeps_advancing() {
    for max in [1u32, 3, 8] {
        // A small log: deferral runs into the log-space rule often, and must still hold.
        let (s, lsns) = hot_spot(max, 1 << 20);
        assert!(
            s.engine.checkpoint_deferrals > 0,
            "max {max}: nothing deferred"
        );
        assert!(
            s.engine.max_consecutive_deferrals <= max,
            "max {max}: a page was deferred {} times in a row",
            s.engine.max_consecutive_deferrals
        );
        assert!(
            s.engine.checkpoints >= 5,
            "max {max}: {} checkpoints",
            s.engine.checkpoints
        );
        // The checkpoint LSN advances: strictly increasing across every 1000 transactions.
        for w in lsns.windows(3) {
            assert!(w[2] > w[0], "max {max}: checkpoint LSN stuck: {lsns:?}");
        }
    }
}

#[test]
fn deferral_saves_checkpoint_writes_of_hot_pages() {
    // A log large enough for 8 deferred checkpoint cycles (each starts at 7.5% fill) before the
    // log-space rule forces every page out.
    let (vanilla, _) = hot_spot(0, 6 << 20);
    let (hot, _) = hot_spot(8, 6 << 20);
    assert_eq!(vanilla.engine.checkpoint_deferrals, 0);
    assert!(
        hot.writes.checkpoint_writes * 10 < vanilla.writes.checkpoint_writes * 8,
        "hot-page-aware checkpoints should write clearly less: {} vs {}",
        hot.writes.checkpoint_writes,
        vanilla.writes.checkpoint_writes
    );
}

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
fn a_deferring_policy_never_overruns_a_small_log() {
    deferring_policy(512 << 10);
}

/// A 2 MiB log (the reserve is 6% of it).
#[test]
fn a_deferring_policy_never_overruns_a_larger_log() {
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
    let mut oracle = Oracle::new(&["t"]);
    for i in 0..3000u64 {
        let mut x = db.begin().unwrap();
        let k = key(i % 700, 16);
        let v = value(i, if i % 50 == 0 { 3000 } else { 80 });
        x.put(&t, &k, &v)
            .unwrap_or_else(|e| panic!("txn {i}: put failed: {e}"));
        x.commit().unwrap();
        oracle.put("t", &k, &v);
        if i % 25 == 0 {
            db.maintenance().unwrap();
        }
    }
    assert!(db.stats().engine.checkpoints > 0);
    drop(db);
    // Crash (nothing flushed at drop) and recover.
    let db = Db::open(pair.devices(), cfg).unwrap();
    oracle.check(&db, &format!("log of {log_bytes} bytes, after recovery"));
}

#[test]
#[ignore = "diagnostic"]
fn print_hot_spot_stats() {
    for max in [0u32, 8] {
        let (s, _) = hot_spot(max, 6 << 20);
        eprintln!(
            "max {max}: checkpoints {} deferrals {} ckpt writes {} evict writes {} max consec {}",
            s.engine.checkpoints,
            s.engine.checkpoint_deferrals,
            s.writes.checkpoint_writes,
            s.writes.eviction_writes,
            s.engine.max_consecutive_deferrals
        );
    }
}
