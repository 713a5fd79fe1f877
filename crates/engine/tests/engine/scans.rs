//! Range scans against the committed-state oracle with every kind of bound (included, excluded,
//! unbounded, empty and inverted ranges, bounds between keys and beyond both ends), both
//! directions and limits including 0, on a multi-level tree that has been through splits and
//! merges; the streaming cursor and scans into a reused buffer (`Txn::scan_into`) against the
//! same oracle. (Limit 0 has its own test.) Then scans of trees far larger than the pool beside
//! other threads: they go on in parts after their misses, serializable and snapshot ones.

use crate::misses::cold_db_with;
use crate::support::{MemPair, Oracle};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::ops::Bound;
use wafer_engine::{Db, DbConfig, ScanBuf};

fn k(n: u64) -> Vec<u8> {
    // Long keys make a deep tree quickly.
    let mut v = format!("{n:06}").into_bytes();
    v.resize(200, b'x');
    v
}

fn bound(rng: &mut Pcg64Mcg) -> Bound<Vec<u8>> {
    let n = rng.random_range(0..2200u64);
    // Odd numbers are never stored: bounds between keys.
    let key = if rng.random_bool(0.3) {
        format!("{n:06}").into_bytes()
    } else {
        k(n)
    };
    match rng.random_range(0..5) {
        0 => Bound::Unbounded,
        1 | 2 => Bound::Included(key),
        _ => Bound::Excluded(key),
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(&v[..]),
        Bound::Excluded(v) => Bound::Excluded(&v[..]),
        Bound::Unbounded => Bound::Unbounded,
    }
}

#[test]
fn scans_with_any_bounds_directions_and_limits_match_the_oracle() {
    let pair = MemPair::new();
    let cfg = DbConfig {
        buffer_pages: 64,
        log_space_bytes: Some(4 << 20),
        ..DbConfig::default()
    };
    let db = Db::open(pair.devices(), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut m = Oracle::new(&["t"]);
    let mut rng = Pcg64Mcg::seed_from_u64(42);
    let mut x = db.begin().unwrap();
    for n in (0..2000u64).step_by(2) {
        let v = vec![(n % 251) as u8; (n % 40) as usize];
        x.put(&t, &k(n), &v).unwrap();
        m.put("t", &k(n), &v);
    }
    x.commit().unwrap();
    for phase in 0..3 {
        if phase > 0 {
            // Delete runs of keys (merges) and sprinkle some back.
            let mut x = db.begin().unwrap();
            for _ in 0..300 {
                let n = rng.random_range(0..1000u64) * 2;
                x.delete(&t, &k(n)).unwrap();
                m.delete("t", &k(n));
            }
            x.commit().unwrap();
        }
        let mut x = db.begin().unwrap();
        // Reused across scans: each scan empties it first. With 64 frames, scans meet pages
        // not in memory, give up and run again: the buffer keeps nothing of a given-up attempt.
        let mut buf = ScanBuf::new();
        for i in 0..600 {
            let lo = bound(&mut rng);
            let hi = bound(&mut rng);
            let reverse = rng.random_bool(0.5);
            let limit = match i % 4 {
                0 => 1,
                1 => rng.random_range(1..4),
                2 => rng.random_range(2..50),
                _ => usize::MAX,
            };
            let got = x
                .scan(&t, (as_ref(&lo), as_ref(&hi)), reverse, limit)
                .unwrap();
            let w = m.scan("t", (as_ref(&lo), as_ref(&hi)), reverse, limit);
            assert!(
                got == w,
                "phase {phase}: scan {:?}..{:?} reverse {reverse} limit {limit}: got {} rows, want {}",
                lo.as_ref().map(|b| String::from_utf8_lossy(&b[..6.min(b.len())]).into_owned()),
                hi.as_ref().map(|b| String::from_utf8_lossy(&b[..6.min(b.len())]).into_owned()),
                got.len(),
                w.len()
            );
            x.scan_into(&t, (as_ref(&lo), as_ref(&hi)), reverse, limit, &mut buf)
                .unwrap();
            assert!(
                buf.to_vec() == w,
                "phase {phase}: scan_into differs from scan"
            );
            // The streaming cursor yields the same rows, batch after batch.
            if i % 3 == 0 {
                let all = m.scan("t", (as_ref(&lo), as_ref(&hi)), reverse, usize::MAX);
                let cur: Vec<(Vec<u8>, Vec<u8>)> = x
                    .cursor(&t, (as_ref(&lo), as_ref(&hi)), reverse)
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                assert!(
                    cur == all,
                    "phase {phase}: cursor reverse {reverse}: got {} rows, want {}",
                    cur.len(),
                    all.len()
                );
            }
        }
        x.commit().unwrap();
    }
    db.verify().unwrap();
}

/// `limit` is "at most `limit` of them": a limit of 0 must return no row.
#[test]
fn a_scan_with_limit_zero_returns_no_row() {
    let db = Db::open(
        wafer_engine::Devices::memory(16 << 20, 4 << 20),
        DbConfig::default(),
    )
    .unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    x.put(&t, b"a", b"1").unwrap();
    x.put(&t, b"b", b"2").unwrap();
    for reverse in [false, true] {
        let rows = x
            .scan(&t, (Bound::Unbounded, Bound::Unbounded), reverse, 0)
            .unwrap();
        assert!(
            rows.is_empty(),
            "limit 0 (reverse {reverse}) returned {rows:?}"
        );
    }
    x.commit().unwrap();
}

/// 20,000 records (about 110 leaves) not in memory, behind a pool of 64 pages, in a database a
/// second thread has used (so scans go on in parts); its devices given to `devices` first.
fn cold_beside_threads(
    devices: impl FnOnce(wafer_engine::Devices) -> wafer_engine::Devices,
) -> (std::sync::Arc<crate::support::Gate>, Db, wafer_engine::Tree) {
    let cfg = DbConfig {
        buffer_pages: 64,
        ..DbConfig::default()
    };
    let (gate, db, t) = cold_db_with(cfg, devices);
    std::thread::scope(|s| {
        s.spawn(|| db.get(&t, b"k000001").unwrap());
    });
    (gate, db, t)
}

/// Every pair of tree `t`, read by `x` in one scan.
fn scan_all(
    x: &mut wafer_engine::Txn,
    t: &wafer_engine::Tree,
    reverse: bool,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let all = (Bound::Unbounded, Bound::Unbounded);
    x.scan(t, all, reverse, usize::MAX).unwrap()
}

/// With several threads a scan of many leaves not in memory goes on in parts: each miss is read
/// with the core latch released and the scan resumes after the last key it read, shared, its
/// claim kept, however many pages it needs (a pool of 64 pages, a whole tree of about 110
/// leaves, ascending, descending and into a buffer). Before, it started over after each of 8
/// pages and then ran exclusive, reading the rest with the core latch held: the shared count
/// does not grow and the test fails.
#[test]
fn a_long_cold_scan_beside_other_threads_runs_shared_in_parts() {
    let (_gate, db, t) = cold_beside_threads(|d| d);
    let key = |i: usize| format!("k{i:06}").into_bytes();
    for reverse in [false, true] {
        let before = db.stats();
        let mut x = db.begin().unwrap();
        let got = scan_all(&mut x, &t, reverse);
        x.commit().unwrap();
        assert_eq!(got.len(), 20_000);
        for (n, (k, v)) in got.iter().enumerate() {
            let i = if reverse { 19_999 - n } else { n };
            assert_eq!((k, v), (&key(i), &format!("v{i}").into_bytes()));
        }
        let after = db.stats();
        let (e0, e1) = (&before.engine, &after.engine);
        assert_eq!(
            e1.shared_ops - e0.shared_ops,
            1,
            "reverse {reverse}: ran exclusive"
        );
        let resumed = e1.scans_resumed - e0.scans_resumed;
        let reads = after.pool.unlatched_reads - before.pool.unlatched_reads;
        // Each attempt that gave up read its page, the last of a round of attempts too (the
        // next round starts there): when it did not, 120 attempts for 107 reads ascending.
        let retries = e1.shared_retries - e0.shared_retries;
        assert!(
            retries <= reads,
            "reverse {reverse}: {retries} attempts gave up, {reads} reads"
        );
        assert!(
            resumed >= 40 && reads >= resumed,
            "reverse {reverse}: {resumed} parts resumed, {reads} pages read unlatched"
        );
        // Hits counted as by one pass: ascending, the inner nodes once, each leaf a miss (a
        // resumed part's way back to the leaf before is not counted; when it was, 108 hits).
        // Descending goes down for each leaf, resumed or not.
        let hits = after.pool.hits - before.pool.hits;
        assert!(reverse || hits <= 8, "{hits} hits ascending");
    }
    // Into a buffer, from a bound, with a limit that ends in a cold leaf.
    let before = db.stats().engine;
    let mut buf = wafer_engine::ScanBuf::new();
    let mut x = db.begin().unwrap();
    let lo = key(5_000);
    x.scan_into(
        &t,
        (Bound::Excluded(&lo[..]), Bound::Unbounded),
        false,
        9_000,
        &mut buf,
    )
    .unwrap();
    x.commit().unwrap();
    assert_eq!(buf.len(), 9_000);
    for (n, (k, _)) in buf.iter().enumerate() {
        assert_eq!(k, key(5_001 + n));
    }
    let after = db.stats().engine;
    assert_eq!(after.shared_ops - before.shared_ops, 1);
    assert!(after.scans_resumed > before.scans_resumed);
    db.verify().unwrap();
}

/// A transaction that holds its tree whole (a bulk load's X lock) scans it in parts too:
/// every pair it read is covered by the lock. Before, such a part kept nothing, each round of
/// attempts made no progress and the scan ran exclusive.
#[test]
fn a_long_cold_scan_of_a_tree_held_whole_runs_shared_in_parts() {
    let (_gate, db, t) = cold_beside_threads(|d| d);
    let mut x = db.begin().unwrap();
    x.load(&t, &[(b"z", b"loaded")]).unwrap();
    let before = db.stats().engine;
    let got = scan_all(&mut x, &t, false);
    x.commit().unwrap();
    assert_eq!(got.len(), 20_001);
    assert_eq!(got.last().unwrap(), &(b"z".to_vec(), b"loaded".to_vec()));
    let after = db.stats().engine;
    assert_eq!(after.shared_ops - before.shared_ops, 1, "ran exclusive");
    assert!(after.scans_resumed - before.scans_resumed >= 40);
}

/// A snapshot scan beside other threads goes on in parts too (each window a miss cuts short
/// keeps the leaves it read whole): over a tree of about 110 leaves through a pool of 64 pages,
/// a snapshot taken before other transactions changed, deleted and added records scans it
/// whole, both ways, and sees exactly the records as they were, as one shared operation each.
/// Before, it started over after each of 8 pages and then ran exclusive.
#[test]
fn a_long_cold_snapshot_scan_beside_other_threads_runs_shared_in_parts() {
    let undo = || Box::new(wafer_engine::device::MemDevice::new(8 << 20, 4096));
    let (_gate, db, t) = cold_beside_threads(|d| d.with_undo(undo()));
    let key = |i: usize| format!("k{i:06}").into_bytes();
    let mut snap = db.begin_snapshot().unwrap();
    // Changed after the snapshot, by another thread: every 97th record updated, every 89th
    // deleted, and keys added between records.
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut w = db.begin().unwrap();
            for i in (0..20_000).step_by(97) {
                w.put(&t, &key(i), b"changed").unwrap();
            }
            for i in (0..20_000).step_by(89) {
                w.delete(&t, &key(i)).unwrap();
            }
            for i in (0..20_000).step_by(101) {
                w.put(&t, format!("k{i:06}+").as_bytes(), b"new").unwrap();
            }
            w.commit().unwrap();
        });
    });
    for reverse in [false, true] {
        let before = db.stats().engine;
        let got = scan_all(&mut snap, &t, reverse);
        assert_eq!(got.len(), 20_000, "reverse {reverse}");
        for (n, (k, v)) in got.iter().enumerate() {
            let i = if reverse { 19_999 - n } else { n };
            assert_eq!((k, v), (&key(i), &format!("v{i}").into_bytes()));
        }
        let after = db.stats().engine;
        assert_eq!(
            after.shared_ops - before.shared_ops,
            1,
            "reverse {reverse}: ran exclusive"
        );
        let resumed = after.scans_resumed - before.scans_resumed;
        assert!(resumed >= 20, "reverse {reverse}: {resumed} parts resumed");
    }
    snap.commit().unwrap();
    db.verify().unwrap();
}

/// A snapshot scan in parts goes on after the windows it resolved even when none of their
/// keys is visible to it: here 10,000 records added after the snapshot, then pushed out of
/// memory, which it must find empty. Before, a part that kept no pair made no progress and,
/// after a round of misses, the scan ran exclusive.
#[test]
fn a_cold_snapshot_scan_of_records_it_cannot_see_runs_shared_in_parts() {
    let undo = || Box::new(wafer_engine::device::MemDevice::new(16 << 20, 4096));
    let (_gate, db, t) = cold_beside_threads(|d| d.with_undo(undo()));
    let mut snap = db.begin_snapshot().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut w = db.begin().unwrap();
            for i in 0..10_000 {
                w.put(&t, format!("m{i:06}").as_bytes(), b"new").unwrap();
            }
            w.commit().unwrap();
        });
    });
    // The new leaves pushed out by a scan that reads the old ones after them (the pool holds
    // 64 pages).
    let mut x = db.begin().unwrap();
    assert_eq!(scan_all(&mut x, &t, true).len(), 30_000);
    x.commit().unwrap();
    let before = db.stats().engine;
    let (lo, hi) = (b"m".as_slice(), b"n".as_slice());
    let got = snap
        .scan(&t, (Bound::Included(lo), Bound::Excluded(hi)), false, 100)
        .unwrap();
    assert!(
        got.is_empty(),
        "{} records the snapshot cannot see",
        got.len()
    );
    let after = db.stats().engine;
    assert_eq!(after.shared_ops - before.shared_ops, 1, "ran exclusive");
    assert!(after.scans_resumed - before.scans_resumed >= 8);
    snap.commit().unwrap();
}
