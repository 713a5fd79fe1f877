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
    let mut table_full = 0;
    let mut flushless = [0u64; 6];
    for i in 0..txns {
        let mut t = db.begin().unwrap();
        let mut staged = oracle.clone();
        let mut aborted = false;
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
                    match t.put(tree, &k, &v) {
                        Ok(old) => assert_eq!(old, staged.put(name, &k, &v), "put's old value"),
                        // The flushless mode's log table holds a transaction's changes until it
                        // ends: a large one may not fit (nothing was changed; it aborts).
                        Err(wafer_engine::Error::TableFull(_)) if cfg.flushless.is_some() => {
                            table_full += 1;
                            aborted = true;
                            break;
                        }
                        Err(e) => panic!("put: {e}"),
                    }
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
        if rng.random_bool(0.2) || aborted {
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
            let s = db.stats();
            if let Some(f) = &s.flushless {
                let add = [
                    f.flushless_evictions,
                    f.table.otf_redos,
                    f.compacted_frames + f.compacted_rebuilt,
                    f.frames_discarded,
                    s.recovery.as_ref().map_or(0, |r| r.reload_records),
                    s.writes.eviction_writes,
                ];
                for (t, a) in flushless.iter_mut().zip(add) {
                    *t += a;
                }
            }
            // Reopen: drop the handle without closing; recovery must restore everything.
            drop(db);
            db = Db::open(pair.devices(), cfg.clone()).unwrap();
            trees = TREES.iter().map(|n| db.open_tree(n).unwrap()).collect();
        }
    }
    oracle.check(&db, &format!("seed {seed}, at the end"));
    assert!(
        table_full * 10 < txns,
        "{table_full} transactions found the table full"
    );
    if cfg.flushless.is_some() {
        // The mode did its work: dirty pages dropped and rebuilt, checkpoints compacted, aborts
        // discarded, restarts reloaded the table; nothing was written on eviction.
        let [evicted, redone, compacted, discarded, reloaded, eviction_writes] = flushless;
        assert!(evicted > 0 && redone > 0 && compacted > 0, "{flushless:?}");
        assert!(discarded > 0 && reloaded > 0, "{flushless:?}");
        assert_eq!(eviction_writes, 0, "no page is written on eviction");
    }
    db.close().unwrap();
    drop(db);
    let db = Db::open(pair.devices(), cfg).unwrap();
    oracle.check(&db, &format!("seed {seed}, after a clean close"));
}

/// Every DB-side option of the out-of-place path (LZ4 + packing, GDT, NoWA) with small zones and
/// batches, so staging, GC and snapshots all run.
fn small_oop_all() -> OopConfig {
    OopConfig {
        codec: Codec::Lz4,
        gdt: true,
        nowa: true,
        zone_bytes: 64 * 1024,
        max_open_zones: 4,
        batch_pages: 16,
        ..OopConfig::default()
    }
}

/// The same model test on the out-of-place write path with every DB-side option (LZ4 +
/// packing, GDT, NoWA) and small zones and batches, so staging, GC and snapshots all run.
#[test]
fn random_transactions_match_the_oracle_out_of_place() {
    let cfg = DbConfig {
        doublewrite: false,
        out_of_place: Some(small_oop_all()),
        ..config(24, false)
    };
    run_with(3, 600, cfg);
}

/// The same model test on the journal write path, every rung of paper 004's ladder, with a
/// journal small enough that it checkpoints itself many times.
#[test]
fn random_transactions_match_the_oracle_on_the_journal_path() {
    for (i, method) in wafer_engine::HomeMethod::ALL.into_iter().enumerate() {
        let cfg = DbConfig {
            doublewrite: false,
            journal: Some(wafer_engine::JournalConfig {
                method,
                journal_bytes: 512 << 10,
                checkpoint_fill: 0.5,
            }),
            ..config(24, false)
        };
        run_with(11 + i as u64, 400, cfg);
    }
}

/// With the log format of earlier builds: whole page images, no page operations (the other
/// runs use the defaults, both on).
#[test]
fn random_transactions_match_the_oracle_small_pool() {
    let cfg = DbConfig {
        log_image_holes: false,
        log_page_ops: false,
        ..config(24, true)
    };
    run_with(1, 600, cfg);
}

/// Leaf splits beside other threads (`LeafSplits::Beside`, every split a plain put meets),
/// their separators posted by the next exclusive change or checkpoint, or by recovery after a
/// reopen without a close; in place and out of place.
#[test]
fn random_transactions_match_the_oracle_with_leaf_splits_beside() {
    for (seed, cfg) in [(11, config(24, true)), (12, config(2048, false))] {
        let cfg = DbConfig {
            leaf_splits: wafer_engine::LeafSplits::Beside,
            ..cfg
        };
        run_with(seed, 600, cfg);
    }
    let cfg = DbConfig {
        leaf_splits: wafer_engine::LeafSplits::Beside,
        out_of_place: Some(small_oop_all()),
        doublewrite: false,
        ..config(64, false)
    };
    run_with(13, 600, cfg);
    let method = *wafer_engine::HomeMethod::ALL.last().expect("a method");
    let cfg = DbConfig {
        leaf_splits: wafer_engine::LeafSplits::Beside,
        doublewrite: false,
        journal: Some(wafer_engine::JournalConfig {
            method,
            journal_bytes: 512 << 10,
            checkpoint_fill: 0.5,
        }),
        ..config(64, false)
    };
    run_with(14, 400, cfg);
}

#[test]
fn random_transactions_match_the_oracle_large_pool_no_doublewrite() {
    run(2, 600, 2048, false);
}

/// The flushless mode (paper 001): dirty pages evicted without a write, on-the-fly redo,
/// abort by discarding, compaction checkpoints and restart by reloading the log table; a pool
/// small enough that pages are dropped dirty and read back all the time.
#[test]
fn random_transactions_match_the_oracle_flushless() {
    let cfg = DbConfig {
        flushless: Some(wafer_engine::FlushlessConfig::default()),
        ..config(64, true)
    };
    run_with(4, 600, cfg);
}

/// The flushless mode on the out-of-place write path with every option of paper 002.
#[test]
fn random_transactions_match_the_oracle_flushless_out_of_place() {
    let cfg = DbConfig {
        doublewrite: false,
        flushless: Some(wafer_engine::FlushlessConfig {
            min_del: 4,
            ..wafer_engine::FlushlessConfig::default()
        }),
        out_of_place: Some(small_oop_all()),
        ..config(64, false)
    };
    run_with(5, 600, cfg);
}
