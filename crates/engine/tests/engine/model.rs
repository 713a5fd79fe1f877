//! Model-based test: random transactions (puts, deletes, gets, scans, aborts) over several trees,
//! checked against the committed-state oracle, across checkpoints, small buffer pools (so pages
//! are evicted and re-read) and reopens, on the in-place and the out-of-place write path.

use crate::support::{key, value, MemPair, Oracle};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::ops::Bound;
use wafer_engine::Codec;
use wafer_engine::OopConfig;
use wafer_engine::{Db, DbConfig, Tree};

const TREES: [&str; 3] = ["alpha", "beta", "gamma"];

fn config(buffer_pages: usize, doublewrite: bool) -> DbConfig {
    DbConfig {
        buffer_pages,
        doublewrite,
        // At least 1 MiB of log: a 24-page pool would otherwise bound transactions to ~96 KiB.
        log_space_bytes: Some((buffer_pages as u64 * 4096).max(1 << 20)),
        ..DbConfig::default()
    }
}

fn run(seed: u64, txns: usize, buffer_pages: usize, doublewrite: bool) {
    run_with(seed, txns, config(buffer_pages, doublewrite));
}

fn run_with(seed: u64, txns: usize, cfg: DbConfig) {
    let pair = MemPair::new();
    let mut db = Db::open(pair.devices(), cfg.clone()).unwrap();
    let mut trees: Vec<Tree> = TREES.iter().map(|n| db.create_tree(n).unwrap()).collect();
    let mut oracle = Oracle::new(&TREES);
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    for i in 0..txns {
        let mut t = db.begin().unwrap();
        let mut staged = oracle.clone();
        let ops = rng.random_range(1..12);
        for _ in 0..ops {
            let tree = &trees[rng.random_range(0..trees.len())];
            let name = tree.name();
            let k = key(rng.random_range(0..400), rng.random_range(9..60));
            match rng.random_range(0..100) {
                0..=54 => {
                    // Mostly small values, some large enough to overflow.
                    let len = if rng.random_bool(0.05) {
                        rng.random_range(2000..9000)
                    } else {
                        rng.random_range(0..200)
                    };
                    let v = value(rng.random(), len);
                    let old = t.put(tree, &k, &v).unwrap();
                    assert_eq!(old, staged.put(name, &k, &v), "put's old value");
                }
                55..=74 => {
                    let old = t.delete(tree, &k).unwrap();
                    assert_eq!(old, staged.delete(name, &k), "delete's old value");
                }
                75..=89 => {
                    assert_eq!(
                        t.get(tree, &k).unwrap().as_ref(),
                        staged.get(name, &k),
                        "get"
                    );
                }
                _ => {
                    let lo = key(rng.random_range(0..400), 9);
                    let reverse = rng.random_bool(0.5);
                    let range = (Bound::Included(&lo[..]), Bound::Unbounded);
                    let got = t.scan(tree, range, reverse, 20).unwrap();
                    let want = staged.scan(name, range, reverse, 20);
                    assert!(got == want, "scan from {:?}", String::from_utf8_lossy(&lo));
                }
            }
        }
        if rng.random_bool(0.2) {
            t.abort().unwrap();
        } else {
            t.commit().unwrap();
            oracle = staged;
        }
        if i % 97 == 0 {
            db.checkpoint().unwrap();
        }
        if i % 150 == 149 {
            oracle.check(&db, &format!("seed {seed}, after txn {i}"));
            // Reopen: drop the handle without closing; recovery must restore everything.
            drop(db);
            db = Db::open(pair.devices(), cfg.clone()).unwrap();
            trees = TREES.iter().map(|n| db.open_tree(n).unwrap()).collect();
        }
    }
    oracle.check(&db, &format!("seed {seed}, at the end"));
    db.close().unwrap();
    drop(db);
    let db = Db::open(pair.devices(), cfg).unwrap();
    oracle.check(&db, &format!("seed {seed}, after a clean close"));
}

/// The same model test on the out-of-place write path with every DB-side option (LZ4 +
/// packing, GDT, NoWA) and small zones and batches, so staging, GC and snapshots all run.
#[test]
fn random_transactions_match_the_oracle_out_of_place() {
    let cfg = DbConfig {
        doublewrite: false,
        out_of_place: Some(OopConfig {
            codec: Codec::Lz4,
            gdt: true,
            nowa: true,
            zone_bytes: 64 * 1024,
            max_open_zones: 4,
            batch_pages: 16,
            ..OopConfig::default()
        }),
        ..config(24, false)
    };
    run_with(3, 600, cfg);
}

#[test]
fn random_transactions_match_the_oracle_small_pool() {
    run(1, 600, 24, true);
}

#[test]
fn random_transactions_match_the_oracle_large_pool_no_doublewrite() {
    run(2, 600, 2048, false);
}
