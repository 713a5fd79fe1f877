//! Model-based test: random transactions (puts, deletes, gets, scans, aborts) over several trees,
//! checked against a BTreeMap oracle of the committed state, across checkpoints, small buffer
//! pools (so pages are evicted and re-read) and reopens.

mod common;

use common::{key, value, MemPair, Oracle};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::BTreeMap;
use std::ops::Bound;
use wafer_engine::writepath::pack::Codec;
use wafer_engine::writepath::OopConfig;
use wafer_engine::{Db, DbConfig, Error, Tree};

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

fn check_all(db: &Db, trees: &[Tree], oracle: &Oracle) {
    let mut t = db.begin().unwrap();
    for tree in trees {
        let got = t
            .scan(
                tree,
                (Bound::Unbounded, Bound::Unbounded),
                false,
                usize::MAX,
            )
            .unwrap();
        let want: Vec<(Vec<u8>, Vec<u8>)> = oracle[tree.name()]
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(got.len(), want.len(), "tree {}", tree.name());
        assert!(got == want, "tree {} differs from the oracle", tree.name());
        let rev = t
            .scan(tree, (Bound::Unbounded, Bound::Unbounded), true, usize::MAX)
            .unwrap();
        assert!(
            rev.iter().rev().eq(got.iter()),
            "reverse scan of {}",
            tree.name()
        );
    }
    t.commit().unwrap();
    let counts = db.verify().unwrap();
    for (name, n) in counts {
        assert_eq!(n as usize, oracle[&name].len(), "verify count of {name}");
    }
}

fn run(seed: u64, txns: usize, buffer_pages: usize, doublewrite: bool) {
    run_with(seed, txns, config(buffer_pages, doublewrite));
}

fn run_with(seed: u64, txns: usize, cfg: DbConfig) {
    let pair = MemPair::new();
    let mut db = Db::open(pair.devices(), cfg.clone()).unwrap();
    let mut trees: Vec<Tree> = TREES.iter().map(|n| db.create_tree(n).unwrap()).collect();
    let mut oracle: Oracle = TREES
        .iter()
        .map(|n| (n.to_string(), BTreeMap::new()))
        .collect();
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    for i in 0..txns {
        let mut t = db.begin().unwrap();
        let mut staged = oracle.clone();
        let ops = rng.random_range(1..12);
        for _ in 0..ops {
            let tree = &trees[rng.random_range(0..trees.len())];
            let m = staged.get_mut(tree.name()).unwrap();
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
                    assert_eq!(old, m.insert(k, v), "put's old value");
                }
                55..=74 => {
                    let old = t.delete(tree, &k).unwrap();
                    assert_eq!(old, m.remove(&k), "delete's old value");
                }
                75..=89 => {
                    assert_eq!(t.get(tree, &k).unwrap().as_ref(), m.get(&k), "get");
                }
                _ => {
                    let lo = key(rng.random_range(0..400), 9);
                    let reverse = rng.random_bool(0.5);
                    let got = t
                        .scan(
                            tree,
                            (Bound::Included(&lo[..]), Bound::Unbounded),
                            reverse,
                            20,
                        )
                        .unwrap();
                    let want: Vec<(Vec<u8>, Vec<u8>)> = if reverse {
                        m.range(lo.clone()..)
                            .rev()
                            .take(20)
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect()
                    } else {
                        m.range(lo.clone()..)
                            .take(20)
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect()
                    };
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
            check_all(&db, &trees, &oracle);
            // Reopen: drop the handle without closing; recovery must restore everything.
            drop(db);
            db = Db::open(pair.devices(), cfg.clone()).unwrap();
            trees = TREES.iter().map(|n| db.open_tree(n).unwrap()).collect();
        }
    }
    check_all(&db, &trees, &oracle);
    db.close().unwrap();
    drop(db);
    let db = Db::open(pair.devices(), cfg).unwrap();
    let trees: Vec<Tree> = TREES.iter().map(|n| db.open_tree(n).unwrap()).collect();
    check_all(&db, &trees, &oracle);
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
    // A scan locks the whole tree: conflicts with a's intention lock.
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

#[test]
fn aborted_and_dropped_transactions_leave_no_trace() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut a = db.begin().unwrap();
    for i in 0..500u64 {
        a.put(&t, &key(i, 20), &value(i, 300)).unwrap();
    }
    a.commit().unwrap();
    let mut b = db.begin().unwrap();
    for i in 0..500u64 {
        if i % 2 == 0 {
            b.delete(&t, &key(i, 20)).unwrap();
        } else {
            b.put(&t, &key(i, 20), &value(i + 1, 700)).unwrap();
        }
    }
    drop(b);
    let mut c = db.begin().unwrap();
    for i in 0..500u64 {
        assert_eq!(c.get(&t, &key(i, 20)).unwrap(), Some(value(i, 300)));
    }
    c.commit().unwrap();
    assert_eq!(db.verify().unwrap(), vec![("t".to_string(), 500)]);
}

#[test]
fn bad_input_gets_typed_errors() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    assert!(matches!(db.create_tree("t"), Err(Error::TreeExists(_))));
    assert!(matches!(db.open_tree("nope"), Err(Error::NoSuchTree(_))));
    assert!(db.create_tree("").is_err());
    let mut x = db.begin().unwrap();
    assert!(matches!(
        x.put(&t, &vec![1u8; 5000], b"v"),
        Err(Error::KeyTooLong { .. })
    ));
    x.commit().unwrap();
    let bad = DbConfig {
        page_size: 1000,
        ..DbConfig::default()
    };
    assert!(matches!(
        Db::open(pair.devices(), bad),
        Err(Error::Config(_))
    ));
}
