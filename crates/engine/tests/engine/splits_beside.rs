//! Leaf splits beside other threads (`DbConfig::leaf_splits`): inserts from several threads
//! split leaves with the core latch shared while readers scan and read, and a database closed or
//! cut off with splits pending opens whole (recovery posts their separators).

use crate::support::{key, value, MemPair};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use wafer_engine::{Db, DbConfig, LeafSplits};

const ALL: (Bound<&[u8]>, Bound<&[u8]>) = (Bound::Unbounded, Bound::Unbounded);

/// Puts `k` in a transaction of its own, again after a conflict with a scan (which locks the
/// tree).
fn put(db: &Db, t: &wafer_engine::Tree, k: &[u8], v: &[u8]) {
    loop {
        let mut x = db.begin().unwrap();
        match x.put(t, k, v) {
            Ok(_) => return x.commit().unwrap(),
            Err(wafer_engine::Error::Conflict { .. }) => x.abort().unwrap(),
            Err(e) => panic!("put: {e}"),
        }
    }
}

/// Every pair of `t`, in order (descending if `reverse`), from a transaction of its own.
fn scan(db: &Db, t: &wafer_engine::Tree, reverse: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut x = db.begin().unwrap();
    let all = x.scan(t, ALL, reverse, usize::MAX).unwrap();
    x.commit().unwrap();
    all
}

/// Three threads insert 6,000 keys each in scattered order while a fourth scans both ways and
/// reads keys already committed: every scan is in order and never shrinks, every committed key
/// is found, and at the end every key is there and the tree verifies. With `Auto`, the splits
/// ran beside the other threads; a lone thread (the same inserts) splits exclusive.
#[test]
fn inserts_from_several_threads_split_leaves_beside_readers_and_writers() {
    let db = Arc::new(Db::open(MemPair::new().devices(), DbConfig::default()).unwrap());
    let t = db.create_tree("t").unwrap();
    let done = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    const THREADS: u64 = 3;
    const EACH: u64 = 6000;
    let reader = {
        let (db, t, done, stop) = (db.clone(), t.clone(), done.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut last, mut scans) = (0, 0);
            while !stop.load(Ordering::Relaxed) {
                for reverse in [false, true] {
                    let got = scan(&db, &t, reverse);
                    let ordered = got.windows(2).all(|w| (w[0].0 < w[1].0) != reverse);
                    assert!(ordered, "a scan out of order (reverse {reverse})");
                    assert!(
                        got.len() >= last,
                        "a scan lost keys: {} < {last}",
                        got.len()
                    );
                    last = got.len();
                    scans += 1;
                }
                let sample: Vec<Vec<u8>> = {
                    let d = done.lock().unwrap();
                    d.iter().rev().take(50).cloned().collect()
                };
                for k in sample {
                    assert!(
                        db.get(&t, &k).unwrap().is_some(),
                        "a committed key is missing"
                    );
                }
            }
            scans
        })
    };
    let writers: Vec<_> = (0..THREADS)
        .map(|th| {
            let (db, t, done) = (db.clone(), t.clone(), done.clone());
            std::thread::spawn(move || {
                for i in 0..EACH {
                    let n = (i * THREADS + th).wrapping_mul(0x9E37_79B9) % 1_000_000_007;
                    let k = key(n, 24);
                    put(&db, &t, &k, &value(n, 40));
                    if i % 16 == 0 {
                        done.lock().unwrap().push(k);
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
    let all = scan(&db, &t, false);
    assert_eq!(all.len() as u64, THREADS * EACH);
    let s = db.stats();
    assert!(s.engine.splits_beside > 50, "{:?}", s.engine);
    db.verify().unwrap();

    // The same inserts from one thread: `Auto` splits with the tree to itself.
    let lone = Db::open(MemPair::new().devices(), DbConfig::default()).unwrap();
    let t = lone.create_tree("t").unwrap();
    for i in 0..THREADS * EACH {
        let n = i.wrapping_mul(0x9E37_79B9) % 1_000_000_007;
        put(&lone, &t, &key(n, 24), &value(n, 40));
    }
    assert_eq!(lone.stats().engine.splits_beside, 0);
    lone.verify().unwrap();
}

/// `Beside` on one thread leaves splits pending until an exclusive change or a checkpoint: the
/// handle dropped without a close at several points (recovery then posts what the log left
/// pending), forward and reverse scans meanwhile match the oracle, and the tree verifies after
/// every reopen.
#[test]
fn a_database_dropped_with_splits_pending_reopens_whole() {
    let pair = MemPair::new();
    let cfg = DbConfig {
        leaf_splits: LeafSplits::Beside,
        ..DbConfig::default()
    };
    let mut db = Db::open(pair.devices(), cfg.clone()).unwrap();
    let mut t = db.create_tree("a").unwrap();
    let mut model = BTreeMap::new();
    let mut splits = 0;
    for i in 0..4000u64 {
        let k = key((i * 7919) % 5000, 20);
        let v = value(i, 60);
        put(&db, &t, &k, &v);
        model.insert(k, v);
        if i % 100 == 0 {
            let (back, fwd) = (scan(&db, &t, true), scan(&db, &t, false));
            assert!(
                back.into_iter().eq(model.clone().into_iter().rev()),
                "at {i}"
            );
            assert!(fwd.into_iter().eq(model.clone()), "at {i}");
        }
        if i % 700 == 699 {
            splits += db.stats().engine.splits_beside;
            drop(db);
            db = Db::open(pair.devices(), cfg.clone()).unwrap();
            t = db.open_tree("a").unwrap();
            db.verify().unwrap();
        }
    }
    assert!(splits > 30, "{splits} splits beside");
    db.close().unwrap();
    let db = Db::open(pair.devices(), cfg).unwrap();
    let t = db.open_tree("a").unwrap();
    assert!(scan(&db, &t, false).into_iter().eq(model));
    db.verify().unwrap();
}

/// Ascending keys make the longest chains: each split of the last leaf leaves the put's key in
/// a new right page that the parent does not know, and the next split extends the chain. With
/// `Beside` on one thread, as many splits as may be pending (64) are chained: every key is
/// read, scans with bounds in the chain's tail go both ways, a bulk load appends after it, and
/// a handle dropped with the chain pending reopens with recovery posting it.
#[test]
fn a_chain_of_pending_splits_reads_scans_loads_and_recovers() {
    let pair = MemPair::new();
    let cfg = DbConfig {
        leaf_splits: LeafSplits::Beside,
        ..DbConfig::default()
    };
    let db = Db::open(pair.devices(), cfg.clone()).unwrap();
    let t = db.create_tree("seq").unwrap();
    let mut model = BTreeMap::new();
    let mut n = 0u64;
    // Up to the most splits that may be pending at once, and no further: the next split would
    // run exclusive and post them all.
    while db.stats().engine.splits_beside < 64 {
        let (k, v) = (key(n, 24), value(n, 80));
        put(&db, &t, &k, &v);
        model.insert(k, v);
        n += 1;
    }
    for (k, v) in &model {
        assert_eq!(db.get(&t, k).unwrap().as_ref(), Some(v));
    }
    let tail = key(n - 3, 24);
    let mut x = db.begin().unwrap();
    let back = x
        .scan(&t, (Bound::Unbounded, Bound::Included(&tail[..])), true, 10)
        .unwrap();
    let want: Vec<_> = model
        .range(..=tail.clone())
        .rev()
        .take(10)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(back, want);
    let from = key(n / 2, 24);
    let fwd = x
        .scan(
            &t,
            (Bound::Excluded(&from[..]), Bound::Unbounded),
            false,
            usize::MAX,
        )
        .unwrap();
    assert!(fwd.into_iter().eq(model
        .range(from.clone()..)
        .skip(1)
        .map(|(k, v)| (k.clone(), v.clone()))));
    let all_back = x.scan(&t, ALL, true, usize::MAX).unwrap();
    assert!(all_back.into_iter().eq(model.clone().into_iter().rev()));
    x.commit().unwrap();
    // Dropped with the chain pending: recovery finds the flagged leaves and posts them.
    drop(db);
    let db = Db::open(pair.devices(), cfg.clone()).unwrap();
    let posted = db.stats().recovery.map_or(0, |r| r.splits_posted);
    assert!(posted > 30, "recovery posted {posted} splits");
    db.verify().unwrap();
    let t = db.open_tree("seq").unwrap();
    assert!(scan(&db, &t, false).into_iter().eq(model.clone()));
    // A chain again, then a bulk load after it (its exclusive steps post the chain first).
    let before = db.stats().engine.splits_beside;
    while db.stats().engine.splits_beside < before + 40 {
        let (k, v) = (key(n, 24), value(n, 80));
        put(&db, &t, &k, &v);
        model.insert(k, v);
        n += 1;
    }
    let more: Vec<_> = (n..n + 3000).map(|i| (key(i, 24), value(i, 80))).collect();
    let mut x = db.begin().unwrap();
    x.load(&t, &more).unwrap();
    x.commit().unwrap();
    model.extend(more);
    db.verify().unwrap();
    assert!(scan(&db, &t, true).into_iter().eq(model.into_iter().rev()));
}

/// The page a split beside others makes is in the page table as soon as the split's leaf is
/// let go: the puts that follow the leaf's link to it (here every put, at the right edge of a
/// sequential load) find it cached, with the core latch shared. Before, each such page joined
/// the table only at the next exclusive latch, so the first put to reach it took the latch
/// exclusive: once per split (in TPC-C, with its right-edge inserts, most exclusive takes).
#[test]
fn a_page_split_off_beside_others_is_found_without_the_exclusive_latch() {
    let cfg = DbConfig {
        leaf_splits: LeafSplits::Beside,
        ..DbConfig::default()
    };
    let db = Db::open(MemPair::new().devices(), cfg).unwrap();
    let t = db.create_tree("seq").unwrap();
    // A first leaf split (the root's, exclusive) and a posting behind us.
    for n in 0..200 {
        put(&db, &t, &key(n, 24), &value(n, 80));
    }
    let before = db.stats().engine;
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for n in 200..900 {
        let (k, v) = (key(n, 24), value(n, 80));
        put(&db, &t, &k, &v);
        model.insert(k, v);
    }
    let after = db.stats().engine;
    let splits = after.splits_beside - before.splits_beside;
    // Fewer than may be pending at once (64): no split waited for an exclusive posting.
    assert!((20..64).contains(&splits), "{splits} splits beside");
    // The one take is the `stats` call's own.
    let took = after.exclusive_latches - before.exclusive_latches;
    assert_eq!(took, 1, "{took} exclusive takes for {splits} splits beside");
    for (k, v) in &model {
        assert_eq!(db.get(&t, k).unwrap().as_ref(), Some(v));
    }
    db.verify().unwrap();
}

/// A split beside others takes the free list's head when its page is cached (before, any page
/// on the free list sent the split to the exclusive latch, which read it there): most of a
/// tree deleted (its merges made at a checkpoint, their pages freed and cached), the keys put
/// back split beside others into those pages, with few exclusive takes. The page accounting
/// holds, and after a power cut that loses every data write since the checkpoint, recovery's
/// redo of the splits (the free list's head moved on, the page's new image) gives the same
/// tree and accounting.
#[test]
fn a_split_beside_others_takes_a_cached_free_page() {
    use crate::support::LinkedRig;
    let rig = LinkedRig::new(2904, 64 << 20, 32 << 20, 4096);
    let cfg = DbConfig {
        leaf_splits: LeafSplits::Beside,
        ..DbConfig::default()
    };
    let db = Db::open(rig.devices(), cfg.clone()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut model = BTreeMap::new();
    for n in 0..4000 {
        let (k, v) = (key(n, 24), value(n, 80));
        put(&db, &t, &k, &v);
        model.insert(k, v);
    }
    for n in (0..4000).filter(|n| n % 10 != 0) {
        let k = key(n, 24);
        let mut x = db.begin().unwrap();
        x.delete(&t, &k).unwrap();
        x.commit().unwrap();
        model.remove(&k);
    }
    db.checkpoint().unwrap();
    let before = db.stats().engine;
    for n in (0..4000).filter(|n| n % 10 != 0) {
        let (k, v) = (key(n, 24), value(n + 1, 80));
        put(&db, &t, &k, &v);
        model.insert(k, v);
    }
    let after = db.stats().engine;
    let splits = after.splits_beside - before.splits_beside;
    let took = after.exclusive_latches - before.exclusive_latches;
    assert!(splits >= 150, "{splits} splits beside");
    // Postings (every 64 splits, and when a flagged leaf is full again) and the `stats`
    // call: 12 for 194 splits; 109 for 97 when a page on the free list sent the split to
    // the exclusive latch.
    assert!(
        took <= 20,
        "{took} exclusive takes for {splits} splits beside"
    );
    assert!(db.check_pages().unwrap().is_empty());
    assert!(scan(&db, &t, false).into_iter().eq(model.clone()));
    rig.cut_now();
    drop(db);
    rig.crash();
    let db = Db::open(rig.devices(), cfg).unwrap();
    assert!(db.check_pages().unwrap().is_empty());
    db.verify().unwrap();
    let t = db.open_tree("t").unwrap();
    assert!(scan(&db, &t, false).into_iter().eq(model));
}
