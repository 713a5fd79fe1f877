//! Review: page allocation across crashes. After random workloads (overflow values replaced and
//! deleted, splits and merges, aborted transactions) interrupted by power cuts and recovered,
//! every page below the meta page's high-water mark must be exactly one of: meta, a node or
//! overflow page of a tree, or a free page on the free list — no leaks, no page used twice, no
//! live page on the free list. Also checks the committed rows against an oracle each time.

mod review_support;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use review_support::{page_accounting, Map, Rig};
use std::ops::Bound;
use wafer_engine::{Db, DbConfig, Tree};

const DW: u32 = 8;

fn config() -> DbConfig {
    DbConfig {
        buffer_pages: 32,
        log_space_bytes: Some(512 << 10),
        checkpoint_log_fill: 0.3,
        doublewrite_pages: DW,
        ..DbConfig::default()
    }
}

fn val(rng: &mut Pcg64Mcg) -> Vec<u8> {
    let len = match rng.random_range(0..10) {
        0..=1 => rng.random_range(1100..12000),
        _ => rng.random_range(1..300),
    };
    let b: u8 = rng.random();
    (0..len).map(|i| b.wrapping_add(i as u8)).collect()
}

/// Runs transactions until an error (the power cut) or `limit` transactions. Returns whether the
/// last commit's outcome is unknown, with the state it would give.
fn workload(db: &Db, t: &Tree, rng: &mut Pcg64Mcg, state: &mut Map, limit: usize) -> Option<Map> {
    for _ in 0..limit {
        let Ok(mut x) = db.begin() else { return None };
        let mut staged = state.clone();
        for _ in 0..rng.random_range(1..10) {
            let k = format!("k{:04}", rng.random_range(0..250)).into_bytes();
            let r = if rng.random_bool(0.35) {
                staged.remove(&k);
                x.delete(t, &k)
            } else {
                let v = val(rng);
                staged.insert(k.clone(), v.clone());
                x.put(t, &k, &v)
            };
            if r.is_err() {
                return None;
            }
        }
        if rng.random_bool(0.2) {
            if x.abort().is_err() {
                return None;
            }
            continue;
        }
        match x.commit() {
            Ok(()) => *state = staged,
            Err(_) => return Some(staged),
        }
    }
    None
}

fn rows(db: &Db, t: &Tree) -> Map {
    let mut x = db.begin().unwrap();
    let r = x
        .scan(t, (Bound::Unbounded, Bound::Unbounded), false, usize::MAX)
        .unwrap();
    x.commit().unwrap();
    r.into_iter().collect()
}

#[test]
fn review_no_page_leaks_or_double_use_across_crashes() {
    // REVIEW_ROUNDS=n runs more rounds (a longer hunt); the default keeps the test fast.
    let rounds = std::env::var("REVIEW_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6u64);
    for seed in 0..rounds {
        let rig = Rig::new(seed, 8 << 20, 2 << 20, 512);
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut state = Map::new();
        {
            let db = Db::open(rig.devices(), config()).unwrap();
            db.create_tree("t").unwrap();
        }
        for cycle in 0..8u64 {
            let what = format!("seed {seed} cycle {cycle}");
            let db =
                Db::open(rig.devices(), config()).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
            let t = db.open_tree("t").unwrap();
            let got = rows(&db, &t);
            assert!(got == state, "{what}: rows differ from the committed rows");
            rig.cut_after(rng.random_range(50..3000));
            let maybe = workload(&db, &t, &mut rng, &mut state, 400);
            drop(db);
            rig.crash();
            // Settle the unknown commit, then check the pages of a cleanly closed database.
            let db =
                Db::open(rig.devices(), config()).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
            let t = db.open_tree("t").unwrap();
            let got = rows(&db, &t);
            if got != state {
                assert!(
                    maybe.as_ref() == Some(&got),
                    "{what}: rows differ from the committed rows"
                );
                state = got;
            }
            db.verify().unwrap();
            db.close().unwrap();
            drop(db);
            let bad = page_accounting(&rig.data_image(), 4096, DW as u64);
            assert!(
                bad.is_empty(),
                "{what}: page accounting:\n{}",
                bad.join("\n")
            );
        }
    }
}
