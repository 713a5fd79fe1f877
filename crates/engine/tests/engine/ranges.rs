//! Key-range locks of serializable scans: a scan keeps other transactions out of the part of
//! its range it read (inserts, updates and deletes there are refused until it ends), and only
//! that part; a scan that meets another transaction's uncommitted insert, update or delete is
//! refused. Then under threads: scans that count a bucket's keys always agree with the
//! bucket's counter, written in the same transactions as the keys (a phantom, or a read of an
//! uncommitted insert or delete, would make them differ).

use crate::support::MemPair;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use wafer_engine::{Db, DbConfig, Error, Tree, Txn};

/// Long keys: about twenty to a leaf, so ranges span leaves and their gaps.
fn k(n: u64) -> Vec<u8> {
    let mut v = format!("{n:06}").into_bytes();
    v.resize(180, b'.');
    v
}

fn conflict<T: std::fmt::Debug>(r: Result<T, Error>) -> bool {
    matches!(r, Err(Error::Conflict { .. }))
}

fn range(lo: u64, hi: u64) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    (Bound::Included(k(lo)), Bound::Excluded(k(hi)))
}

fn scan(
    t: &mut Txn,
    tree: &Tree,
    r: &(Bound<Vec<u8>>, Bound<Vec<u8>>),
    reverse: bool,
    limit: usize,
) -> Result<Vec<Vec<u8>>, Error> {
    let b = (
        r.0.as_ref().map(|v| v.as_slice()),
        r.1.as_ref().map(|v| v.as_slice()),
    );
    Ok(t.scan(tree, b, reverse, limit)?
        .into_iter()
        .map(|p| p.0)
        .collect())
}

fn setup() -> (MemPair, Db, Tree) {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    for n in (0..1000).step_by(2) {
        x.put(&t, &k(n), b"v").unwrap();
    }
    x.commit().unwrap();
    (pair, db, t)
}

#[test]
fn a_scan_locks_the_range_it_read_and_no_more() {
    let (_pair, db, t) = setup();
    let mut a = db.begin().unwrap();
    let mut b = db.begin().unwrap();
    // A bounded range, read to its end.
    let got = scan(&mut a, &t, &range(100, 140), false, usize::MAX).unwrap();
    assert_eq!(got.len(), 20);
    assert!(conflict(b.put(&t, &k(101), b"w")), "an insert in the range");
    assert!(
        conflict(b.put(&t, &k(139), b"w")),
        "an insert before its end"
    );
    assert!(conflict(b.put(&t, &k(120), b"w")), "an update in the range");
    assert!(conflict(b.delete(&t, &k(122))), "a delete in the range");
    b.put(&t, &k(99), b"w").expect("an insert before the range");
    b.put(&t, &k(140), b"w").expect("its end bound, excluded");
    b.put(&t, &k(141), b"w").expect("past the range");
    b.put(&t, &k(500), b"w").expect("elsewhere");
    // A limit: the range ends at the last key read.
    let got = scan(
        &mut a,
        &t,
        &(Bound::Included(k(200)), Bound::Unbounded),
        false,
        5,
    )
    .unwrap();
    assert_eq!(got.last(), Some(&k(208)));
    assert!(conflict(b.put(&t, &k(205), b"w")));
    b.put(&t, &k(209), b"w").expect("past the last key read");
    // Descending, with a limit.
    let got = scan(&mut a, &t, &range(400, 440), true, 3).unwrap();
    assert_eq!(got, vec![k(438), k(436), k(434)]);
    assert!(conflict(b.put(&t, &k(439), b"w")));
    assert!(conflict(b.put(&t, &k(435), b"w")));
    b.put(&t, &k(433), b"w").expect("below the last key read");
    b.put(&t, &k(441), b"w").expect("above the range");
    // A cursor locks what its batches read.
    let first: Vec<Vec<u8>> = a
        .cursor(&t, (Bound::Included(&k(600)[..]), Bound::Unbounded), false)
        .unwrap()
        .take(3)
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(first, vec![k(600), k(602), k(604)]);
    assert!(conflict(b.put(&t, &k(603), b"w")));
    // b's refused writes left it active; its others commit once a is done.
    a.commit().unwrap();
    b.put(&t, &k(101), b"w").expect("a ended");
    b.commit().unwrap();
}

/// A write a scan's claim refuses gives back the record lock it took, so the scan's own
/// transaction can still read and write that record; a lock the writer held before is kept.
#[test]
fn a_refused_write_gives_back_the_lock_it_took() {
    let (_pair, db, t) = setup();
    let mut a = db.begin().unwrap();
    let mut b = db.begin().unwrap();
    scan(&mut a, &t, &range(100, 140), false, usize::MAX).unwrap();
    assert!(conflict(b.put(&t, &k(120), b"w")), "an update in the range");
    assert!(conflict(b.delete(&t, &k(122))), "a delete in the range");
    assert!(conflict(b.put(&t, &k(121), b"w")), "an insert in the range");
    // Before, b kept X on each, and a met it.
    assert_eq!(a.get(&t, &k(120)).unwrap().as_deref(), Some(&b"v"[..]));
    a.put(&t, &k(122), b"a").unwrap();
    a.put(&t, &k(121), b"a").unwrap();
    // A lock held before the refused write stays (here c's S, which the write raised to X).
    let mut c = db.begin().unwrap();
    c.get(&t, &k(150)).unwrap();
    scan(&mut a, &t, &range(140, 160), false, usize::MAX).unwrap();
    assert!(conflict(c.put(&t, &k(150), b"w")), "refused");
    assert!(conflict(a.put(&t, &k(150), b"a")), "c still holds its lock");
    a.commit().unwrap();
    b.commit().unwrap();
    c.commit().unwrap();
    let mut x = db.begin().unwrap();
    assert_eq!(x.get(&t, &k(122)).unwrap().as_deref(), Some(&b"a"[..]));
    assert_eq!(x.get(&t, &k(121)).unwrap().as_deref(), Some(&b"a"[..]));
    x.commit().unwrap();
}

#[test]
fn a_scan_meets_uncommitted_changes_in_its_range() {
    let (_pair, db, t) = setup();
    let r = range(290, 320);
    for change in 0..3 {
        let mut w = db.begin().unwrap();
        match change {
            0 => drop(w.delete(&t, &k(300)).unwrap()),
            1 => drop(w.put(&t, &k(301), b"new").unwrap()),
            _ => drop(w.put(&t, &k(302), b"changed").unwrap()),
        }
        let mut s = db.begin().unwrap();
        assert!(
            conflict(scan(&mut s, &t, &r, false, usize::MAX)),
            "change {change}"
        );
        assert!(
            conflict(scan(&mut s, &t, &r, true, usize::MAX)),
            "change {change}"
        );
        // Outside the range: no conflict.
        scan(&mut s, &t, &range(330, 360), false, usize::MAX).unwrap();
        s.abort().unwrap();
        w.abort().unwrap();
        let mut s = db.begin().unwrap();
        let got = scan(&mut s, &t, &r, false, usize::MAX).unwrap();
        assert_eq!(got.len(), 15, "rolled back: change {change}");
        s.commit().unwrap();
    }
}

#[test]
fn a_load_waits_for_the_scans_of_its_tree() {
    let (_pair, db, _t) = setup();
    let t2 = db.create_tree("t2").unwrap();
    let mut a = db.begin().unwrap();
    assert!(scan(&mut a, &t2, &range(0, 10), false, 10)
        .unwrap()
        .is_empty());
    let mut b = db.begin().unwrap();
    assert!(conflict(b.load(&t2, &[(k(1), b"v")])));
    a.commit().unwrap();
    b.load(&t2, &[(k(1), b"v")]).unwrap();
    let mut c = db.begin().unwrap();
    assert!(
        conflict(scan(&mut c, &t2, &range(0, 10), false, 10)),
        "being loaded"
    );
    c.abort().unwrap();
    b.commit().unwrap();
}

/// Buckets of keys, each with a counter record: writers insert or delete a key of a bucket
/// and change its counter in one transaction (in either order, some rolled back); auditors
/// count a bucket's keys with a scan (ascending, descending, or a cursor), then read its counter:
/// the two must agree.
#[test]
fn scans_see_no_phantoms_under_threads() {
    audit_buckets(25, DbConfig::default(), false);
}

/// [`scans_see_no_phantoms_under_threads`] with the buckets about ten times larger than the
/// pool can hold at once: the auditors' scans miss in the middle of their range and go on in
/// parts (resumed after the last key read, their claims kept), while the writers change keys
/// before and after that point.
#[test]
fn scans_resumed_after_misses_see_no_phantoms_under_threads() {
    let cfg = DbConfig {
        buffer_pages: 64,
        log_space_bytes: Some(4 << 20),
        ..DbConfig::default()
    };
    let db = audit_buckets(2, cfg, false);
    let s = db.stats().engine;
    assert!(s.scans_resumed > 100, "{s:?}");
}

/// [`scans_resumed_after_misses_see_no_phantoms_under_threads`] with snapshot auditors: their
/// scans go on in parts too (a window a miss cuts short keeps the leaves it read whole), and
/// each sees its bucket's keys as its counter says at the snapshot.
#[test]
fn snapshot_scans_resumed_after_misses_see_their_snapshot_under_threads() {
    let cfg = DbConfig {
        buffer_pages: 64,
        log_space_bytes: Some(4 << 20),
        ..DbConfig::default()
    };
    let db = audit_buckets(2, cfg, true);
    let s = db.stats().engine;
    assert!(s.scans_resumed > 100, "{s:?}");
}

/// Runs the bucket audit of [`scans_see_no_phantoms_under_threads`] with a key every `step` of
/// a bucket's span at the start, on a database opened with `cfg` (returned, for its counters);
/// `snapshot`: the auditors read a snapshot (the database has a version store).
fn audit_buckets(step: u64, cfg: DbConfig, snapshot: bool) -> Db {
    const BUCKETS: u64 = 8;
    const SPAN: u64 = 1000;
    let pair = MemPair::new();
    let mut devices = pair.devices();
    if snapshot {
        let undo = wafer_engine::device::MemDevice::new(64 << 20, 4096);
        devices = devices.with_undo(Box::new(undo));
    }
    let db = Db::open(devices, cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let counter = |b: u64| format!("count{b}").into_bytes();
    let bucket_key = |b: u64, i: u64| k(b * SPAN + i);
    for b in 0..BUCKETS {
        let mut x = db.begin().unwrap();
        for i in (0..SPAN).step_by(step as usize) {
            x.put(&t, &bucket_key(b, i), b"v").unwrap();
        }
        x.put(&t, &counter(b), &SPAN.div_ceil(step).to_le_bytes())
            .unwrap();
        x.commit().unwrap();
    }
    let stop = AtomicBool::new(false);
    let (audits, writes) = (AtomicU64::new(0), AtomicU64::new(0));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    std::thread::scope(|s| {
        for th in 0..2u64 {
            let (db, t, stop, writes) = (&db, &t, &stop, &writes);
            s.spawn(move || {
                let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ th;
                let mut next = move || {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed
                };
                while !stop.load(Ordering::Relaxed) {
                    let (b, i, r) = (next() % BUCKETS, next() % SPAN, next());
                    let mut w = db.begin().unwrap();
                    let key = bucket_key(b, i);
                    let res = (|| -> Result<(), Error> {
                        let present = w.get(t, &key)?.is_some();
                        let c = w.get(t, &counter(b))?.unwrap();
                        let n = u64::from_le_bytes(c.try_into().unwrap());
                        let n = if present { n - 1 } else { n + 1 };
                        let change_key = |w: &mut Txn| -> Result<(), Error> {
                            if present {
                                w.delete(t, &key)?;
                            } else {
                                w.put(t, &key, b"v")?;
                            }
                            Ok(())
                        };
                        if r % 2 == 0 {
                            change_key(&mut w)?;
                            w.put(t, &counter(b), &n.to_le_bytes())?;
                        } else {
                            w.put(t, &counter(b), &n.to_le_bytes())?;
                            change_key(&mut w)?;
                        }
                        Ok(())
                    })();
                    match res {
                        Ok(()) if r % 5 == 0 => w.abort().unwrap(),
                        Ok(()) => {
                            w.commit().unwrap();
                            writes.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(Error::Conflict { .. }) => w.abort().unwrap(),
                        Err(e) => panic!("writer: {e}"),
                    }
                }
            });
        }
        for th in 0..2u64 {
            let (db, t, stop, audits) = (&db, &t, &stop, &audits);
            s.spawn(move || {
                let mut round = th;
                while !stop.load(Ordering::Relaxed) {
                    round += 1;
                    let b = round % BUCKETS;
                    let r = (
                        Bound::Included(bucket_key(b, 0)),
                        Bound::Excluded(bucket_key(b + 1, 0)),
                    );
                    let mut a = if snapshot {
                        db.begin_snapshot().unwrap()
                    } else {
                        db.begin().unwrap()
                    };
                    let res = (|| -> Result<(), Error> {
                        let seen = match round % 3 {
                            0 => scan(&mut a, t, &r, false, usize::MAX)?.len(),
                            1 => scan(&mut a, t, &r, true, usize::MAX)?.len(),
                            _ => {
                                let b = (
                                    r.0.as_ref().map(|v| v.as_slice()),
                                    r.1.as_ref().map(|v| v.as_slice()),
                                );
                                let mut n = 0;
                                for kv in a.cursor(t, b, false)? {
                                    kv?;
                                    n += 1;
                                }
                                n
                            }
                        };
                        let c = a.get(t, &counter(b))?.unwrap();
                        let n = u64::from_le_bytes(c.try_into().unwrap());
                        assert_eq!(seen as u64, n, "bucket {b}: keys seen against its counter");
                        Ok(())
                    })();
                    match res {
                        Ok(()) => {
                            a.commit().unwrap();
                            audits.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(Error::Conflict { .. }) => a.abort().unwrap(),
                        Err(e) => panic!("auditor: {e}"),
                    }
                }
            });
        }
        while std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        stop.store(true, Ordering::Relaxed);
    });
    let (audits, writes) = (audits.into_inner(), writes.into_inner());
    assert!(audits > 100, "audits: {audits}");
    assert!(writes > 100, "writes: {writes}");
    // The counters hold at the end too.
    let mut a = db.begin().unwrap();
    for b in 0..BUCKETS {
        let r = (
            Bound::Included(bucket_key(b, 0)),
            Bound::Excluded(bucket_key(b + 1, 0)),
        );
        let seen = scan(&mut a, &t, &r, false, usize::MAX).unwrap().len() as u64;
        let c = a.get(&t, &counter(b)).unwrap().unwrap();
        assert_eq!(seen, u64::from_le_bytes(c.try_into().unwrap()));
    }
    a.commit().unwrap();
    db
}
