//! Snapshot isolation with the version store on the undo device: the anomalies it must prevent
//! do not happen (dirty read, non-repeatable read, lost update, phantoms in scans), write skew
//! is allowed, a model test of interleaved snapshot readers, writers of both isolation levels
//! and aborts against an oracle of committed versions, bounded space with a clear error, purge,
//! and a power cut with the version store in use.

use crate::support::{key, value, MemPair};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::BTreeMap;
use std::ops::Bound;
use wafer_engine::device::MemDevice;
use wafer_engine::{Db, DbConfig, Error, Tree, Txn};

const ALL: (Bound<&[u8]>, Bound<&[u8]>) = (Bound::Unbounded, Bound::Unbounded);

fn open(pair: &MemPair, undo_bytes: u64) -> Db {
    let devs = pair
        .devices()
        .with_undo(Box::new(MemDevice::new(undo_bytes, 4096)));
    Db::open(devs, DbConfig::default()).unwrap()
}

fn put(db: &Db, t: &Tree, k: &[u8], v: &[u8]) {
    let mut w = db.begin().unwrap();
    w.put(t, k, v).unwrap();
    w.commit().unwrap();
}

/// Every pair `txn` sees in `t`; a scan into a buffer (`Txn::scan_into`) sees the same.
fn all(txn: &mut Txn, t: &Tree) -> Vec<(Vec<u8>, Vec<u8>)> {
    let pairs = txn.scan(t, ALL, false, usize::MAX).unwrap();
    let mut buf = wafer_engine::ScanBuf::new();
    txn.scan_into(t, ALL, false, usize::MAX, &mut buf).unwrap();
    assert!(buf.to_vec() == pairs, "scan_into differs from scan");
    pairs
}

#[test]
fn snapshot_needs_an_undo_device() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    assert!(matches!(
        db.begin_snapshot(),
        Err(Error::InvalidArgument(_))
    ));
    assert!(db.stats().versions.is_none());
}

#[test]
fn no_dirty_read_no_nonrepeatable_read_no_phantom() {
    let pair = MemPair::new();
    let db = open(&pair, 8 << 20);
    let t = db.create_tree("t").unwrap();
    // A large version of `big`: its before-image fills undo blocks, which go to the device.
    let big = value(9, 9000);
    put(&db, &t, b"big", &big);
    put(&db, &t, b"a", b"1");
    put(&db, &t, b"b", b"1");
    let mut r = db.begin_snapshot().unwrap();
    assert_eq!(r.get(&t, b"a").unwrap().as_deref(), Some(&b"1"[..]));
    // A writer changes a, deletes b and inserts c; uncommitted first: no dirty read, and the
    // reader does not wait for (or conflict with) the writer.
    let mut w = db.begin().unwrap();
    w.put(&t, b"a", b"2").unwrap();
    w.delete(&t, b"b").unwrap();
    w.put(&t, b"c", b"2").unwrap();
    w.delete(&t, b"big").unwrap();
    assert_eq!(r.get(&t, b"a").unwrap().as_deref(), Some(&b"1"[..]));
    w.commit().unwrap();
    assert_eq!(r.get(&t, b"big").unwrap(), Some(big.clone()));
    // Committed since the snapshot: still invisible (repeatable read, no phantom).
    assert_eq!(r.get(&t, b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(r.get(&t, b"b").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(r.get(&t, b"c").unwrap(), None);
    let want = vec![
        (b"a".to_vec(), b"1".to_vec()),
        (b"b".to_vec(), b"1".to_vec()),
        (b"big".to_vec(), big.clone()),
    ];
    assert_eq!(all(&mut r, &t), want);
    let rev: Vec<_> = r.scan(&t, ALL, true, 10).unwrap();
    assert_eq!(rev, want.iter().rev().cloned().collect::<Vec<_>>());
    let via_cursor: Vec<_> = r
        .cursor(&t, ALL, false)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(via_cursor, want);
    r.commit().unwrap();
    // A new snapshot sees the commit.
    let mut r2 = db.begin_snapshot().unwrap();
    assert_eq!(
        all(&mut r2, &t),
        vec![
            (b"a".to_vec(), b"2".to_vec()),
            (b"c".to_vec(), b"2".to_vec())
        ]
    );
    r2.commit().unwrap();
    let s = db.stats();
    let v = s.versions.unwrap();
    assert!(v.old_versions_read >= 3 && v.chain_reads >= 3, "{v:?}");
    // The old versions were read back from the undo device.
    assert!(s.undo_device.unwrap().read_bytes > 0);
    // Nothing is left once no snapshot is active but the extent each segment appends to.
    assert_eq!(v.heads, 0, "{v:?}");
    assert!(v.extents_in_use <= v.segments, "{v:?}");
}

#[test]
fn lost_update_is_refused_first_updater_wins() {
    let pair = MemPair::new();
    let db = open(&pair, 8 << 20);
    let t = db.create_tree("t").unwrap();
    put(&db, &t, b"x", b"0");
    // Concurrent: the second updater fails at once.
    let mut a = db.begin_snapshot().unwrap();
    let mut b = db.begin_snapshot().unwrap();
    a.put(&t, b"x", b"a").unwrap();
    assert!(matches!(b.put(&t, b"x", b"b"), Err(Error::Conflict { .. })));
    b.abort().unwrap();
    a.commit().unwrap();
    // Committed after the snapshot: refused too.
    let mut c = db.begin_snapshot().unwrap();
    put(&db, &t, b"x", b"d");
    assert_eq!(c.get(&t, b"x").unwrap().as_deref(), Some(&b"a"[..]));
    assert!(matches!(c.put(&t, b"x", b"c"), Err(Error::Conflict { .. })));
    c.abort().unwrap();
    // A retry with a new snapshot succeeds.
    let mut c = db.begin_snapshot().unwrap();
    c.put(&t, b"x", b"c").unwrap();
    c.commit().unwrap();
    assert!(db.stats().versions.unwrap().write_conflicts >= 1);
}

/// Write skew is allowed under snapshot isolation (documented): two transactions each read
/// both records and write a different one; both commit, and the constraint x + y >= 1 that each
/// checked is broken.
#[test]
fn write_skew_is_allowed() {
    let pair = MemPair::new();
    let db = open(&pair, 8 << 20);
    let t = db.create_tree("t").unwrap();
    put(&db, &t, b"x", b"1");
    put(&db, &t, b"y", b"1");
    let mut a = db.begin_snapshot().unwrap();
    let mut b = db.begin_snapshot().unwrap();
    let on = |txn: &mut Txn, k: &[u8]| txn.get(&t, k).unwrap() == Some(b"1".to_vec());
    assert!(on(&mut a, b"x") && on(&mut a, b"y"));
    assert!(on(&mut b, b"x") && on(&mut b, b"y"));
    a.put(&t, b"x", b"0").unwrap();
    b.put(&t, b"y", b"0").unwrap();
    a.commit().unwrap();
    b.commit().unwrap();
    let mut r = db.begin().unwrap();
    assert_eq!(r.get(&t, b"x").unwrap().as_deref(), Some(&b"0"[..]));
    assert_eq!(r.get(&t, b"y").unwrap().as_deref(), Some(&b"0"[..]));
    r.commit().unwrap();
}

#[test]
fn full_version_store_is_a_clear_error_until_snapshots_end() {
    let pair = MemPair::new();
    // 4 extents of 64 KiB.
    let db = open(&pair, 256 << 10);
    let t = db.create_tree("t").unwrap();
    for i in 0..100u64 {
        put(&db, &t, &key(i, 8), &value(i, 100));
    }
    let mut old = db.begin_snapshot().unwrap();
    assert!(old.get(&t, &key(0, 8)).unwrap().is_some());
    let mut full = None;
    'outer: for round in 0..200u64 {
        for i in 0..100u64 {
            let mut w = db.begin().unwrap();
            match w.put(&t, &key(i, 8), &value(round * 1000 + i, 1000)) {
                Ok(_) => w.commit().unwrap(),
                Err(e) => {
                    full = Some(e);
                    w.abort().unwrap();
                    break 'outer;
                }
            }
        }
    }
    let e = full.expect("the undo device fills while the old snapshot lives");
    assert!(matches!(e, Error::VersionStoreFull(_)), "{e}");
    assert!(e.to_string().contains("snapshot"), "{e}");
    // The old snapshot still reads its versions.
    assert_eq!(old.get(&t, &key(5, 8)).unwrap(), Some(value(5, 100)));
    old.commit().unwrap();
    // Its end frees the space.
    put(&db, &t, &key(1, 8), b"fits again");
    let v = db.stats().versions.unwrap();
    assert!(v.extents_in_use <= v.segments, "{v:?}");
    assert!(
        v.extents_freed > 0,
        "extents behind the segment were reused: {v:?}"
    );
}

/// Interleaved transactions, one thread: snapshot readers and writers, serializable writers,
/// aborts; every read and scan of a snapshot transaction is checked against the committed
/// state at its start plus its own writes (the oracle keeps every committed version).
#[test]
fn model_interleaved_snapshots_match_an_oracle_of_versions() {
    for seed in 0..crate::support::rounds(6) {
        model_once(seed);
    }
}

struct Live {
    txn: Txn,
    snapshot: Option<BTreeMap<Vec<u8>, Vec<u8>>>,
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

fn model_once(seed: u64) {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let pair = MemPair::new();
    // Small (8 extents of 1 MiB): segments span extents, purge reuses them, and a full store
    // is possible (the writer then aborts, as a client would).
    let db = open(&pair, 8 << 20);
    let t = db.create_tree("t").unwrap();
    let mut committed: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut live: Vec<Live> = Vec::new();
    let keys = 40u64;
    for step in 0..3000u64 {
        let roll = rng.random_range(0..100);
        if live.len() < 2 || (roll < 8 && live.len() < 8) {
            let snap = rng.random_bool(0.7);
            let txn = if snap {
                db.begin_snapshot().unwrap()
            } else {
                db.begin().unwrap()
            };
            live.push(Live {
                txn,
                snapshot: snap.then(|| committed.clone()),
                writes: BTreeMap::new(),
            });
            continue;
        }
        let i = rng.random_range(0..live.len());
        let l = &mut live[i];
        let k = key(rng.random_range(0..keys), 6);
        let expected =
            |l: &Live, k: &[u8], committed: &BTreeMap<Vec<u8>, Vec<u8>>| match l.writes.get(k) {
                Some(w) => w.clone(),
                None => l.snapshot.as_ref().unwrap_or(committed).get(k).cloned(),
            };
        let mut ended = None;
        match roll {
            8..=39 => {
                let got = l.txn.get(&t, &k);
                match got {
                    Ok(v) if l.snapshot.is_some() => {
                        assert_eq!(v, expected(l, &k, &committed), "seed {seed} step {step}")
                    }
                    Ok(_) => {}
                    Err(Error::Conflict { .. }) if l.snapshot.is_none() => ended = Some(false),
                    Err(e) => panic!("seed {seed} step {step}: {e}"),
                }
            }
            40..=49 if l.snapshot.is_some() => {
                let got = l
                    .txn
                    .scan(&t, ALL, rng.random_bool(0.3), usize::MAX)
                    .unwrap();
                let mut want: BTreeMap<Vec<u8>, Vec<u8>> = l.snapshot.clone().unwrap();
                for (wk, wv) in &l.writes {
                    match wv {
                        Some(v) => want.insert(wk.clone(), v.clone()),
                        None => want.remove(wk),
                    };
                }
                let mut got_sorted = got.clone();
                got_sorted.sort();
                assert_eq!(
                    got_sorted,
                    want.into_iter().collect::<Vec<_>>(),
                    "seed {seed} step {step}"
                );
            }
            50..=84 => {
                let v = if rng.random_bool(0.15) {
                    None
                } else {
                    Some(value(rng.random(), rng.random_range(1..3000)))
                };
                let r = match &v {
                    Some(v) => l.txn.put(&t, &k, v),
                    None => l.txn.delete(&t, &k),
                };
                match r {
                    Ok(_) => {
                        l.writes.insert(k.clone(), v);
                    }
                    Err(Error::Conflict { .. }) | Err(Error::VersionStoreFull(_)) => {
                        ended = Some(false)
                    }
                    Err(e) => panic!("seed {seed} step {step}: {e}"),
                }
            }
            85..=94 => ended = Some(true),
            _ => ended = Some(false),
        }
        if let Some(commit) = ended {
            let l = live.swap_remove(i);
            if commit {
                l.txn.commit().unwrap();
                for (k, v) in l.writes {
                    match v {
                        Some(v) => committed.insert(k, v),
                        None => committed.remove(&k),
                    };
                }
            } else {
                l.txn.abort().unwrap();
            }
        }
    }
    for l in live {
        l.txn.abort().unwrap();
    }
    let mut r = db.begin_snapshot().unwrap();
    assert_eq!(
        all(&mut r, &t),
        committed.into_iter().collect::<Vec<_>>(),
        "seed {seed}"
    );
    r.commit().unwrap();
    let v = db.stats().versions.unwrap();
    assert_eq!(v.heads, 0, "seed {seed}: {v:?}");
    assert!(v.extents_in_use <= v.segments, "seed {seed}: {v:?}");
    assert!(v.old_versions_read > 0, "{v:?}");
}

/// A power cut while snapshot transactions hold versions: after reopening, the committed state
/// is there, nothing of the uncommitted writer, and the version store starts empty (no snapshot
/// survives a restart, so no old version is needed).
#[test]
fn power_cut_with_versions_in_use() {
    use crate::support::{CrashRig, Oracle};
    use wafer_engine::device::FaultConfig;
    let rig = CrashRig::new(FaultConfig::default());
    let undo = wafer_engine::device::SharedDevice::shared(MemDevice::new(4 << 20, 4096));
    let devices = || rig.devices().with_undo(Box::new(undo.clone()));
    let db = Db::open(devices(), DbConfig::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut oracle = Oracle::new(&["t"]);
    for i in 0..200u64 {
        put(&db, &t, &key(i, 8), &value(i, 64));
        oracle.put("t", &key(i, 8), &value(i, 64));
    }
    let mut old = db.begin_snapshot().unwrap();
    for i in 0..200u64 {
        put(&db, &t, &key(i, 8), &value(i + 1000, 64));
        oracle.put("t", &key(i, 8), &value(i + 1000, 64));
    }
    assert_eq!(old.get(&t, &key(7, 8)).unwrap(), Some(value(7, 64)));
    let mut w = db.begin_snapshot().unwrap();
    w.put(&t, &key(3, 8), b"uncommitted").unwrap();
    assert!(db.stats().versions.unwrap().extents_in_use > 0);
    rig.fault.lock().crash();
    std::mem::forget(old);
    std::mem::forget(w);
    drop(db);
    let db = Db::open(devices(), DbConfig::default()).unwrap();
    assert_eq!(Oracle::read(&db, &["t"]), oracle);
    let v = db.stats().versions.unwrap();
    assert_eq!((v.heads, v.extents_in_use, v.before_images), (0, 0, 0));
    let t = db.open_tree("t").unwrap();
    let mut r = db.begin_snapshot().unwrap();
    assert_eq!(r.get(&t, &key(3, 8)).unwrap(), Some(value(1003, 64)));
    r.commit().unwrap();
}

/// Threads transfer between accounts under snapshot isolation (each transfer reads and writes
/// both of its accounts; first updater wins, so conflicts are retried) while auditor threads
/// scan every balance under their snapshots: every audit sees the same total (a snapshot is a
/// consistent state), auditors never fail, and the final balances add up.
#[test]
fn snapshot_auditors_see_a_constant_total_under_concurrent_transfers() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    const ACCOUNTS: u64 = 50;
    const INITIAL: i64 = 1000;
    let pair = MemPair::new();
    let db = Arc::new(open(&pair, 16 << 20));
    let t = db.create_tree("accounts").unwrap();
    let mut w = db.begin().unwrap();
    for a in 0..ACCOUNTS {
        w.put(&t, &key(a, 8), &INITIAL.to_le_bytes()).unwrap();
    }
    w.commit().unwrap();
    let balance = |v: Option<Vec<u8>>| i64::from_le_bytes(v.unwrap().try_into().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let (audits, transfers) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut handles = Vec::new();
    for th in 0..3u64 {
        let (db, t, stop, transfers) = (db.clone(), t.clone(), stop.clone(), transfers.clone());
        handles.push(std::thread::spawn(move || {
            let mut rng = Pcg64Mcg::seed_from_u64(th);
            while !stop.load(Ordering::Relaxed) {
                let a = rng.random_range(0..ACCOUNTS);
                let b = (a + 1 + rng.random_range(0..ACCOUNTS - 1)) % ACCOUNTS;
                let amount = rng.random_range(1..50i64);
                let mut tx = db.begin_snapshot().unwrap();
                let r = (|| {
                    let x = balance(tx.get(&t, &key(a, 8))?);
                    let y = balance(tx.get(&t, &key(b, 8))?);
                    tx.put(&t, &key(a, 8), &(x - amount).to_le_bytes())?;
                    tx.put(&t, &key(b, 8), &(y + amount).to_le_bytes())?;
                    Ok::<_, Error>(())
                })();
                match r {
                    Ok(()) => {
                        tx.commit().unwrap();
                        transfers.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(Error::Conflict { .. }) => tx.abort().unwrap(),
                    Err(e) => panic!("{e}"),
                }
            }
        }));
    }
    for _ in 0..2 {
        let (db, t, stop, audits) = (db.clone(), t.clone(), stop.clone(), audits.clone());
        handles.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let mut tx = db.begin_snapshot().unwrap();
                let rows = tx.scan(&t, ALL, false, usize::MAX).unwrap();
                assert_eq!(rows.len() as u64, ACCOUNTS);
                let total: i64 = rows.into_iter().map(|(_, v)| balance(Some(v))).sum();
                assert_eq!(total, ACCOUNTS as i64 * INITIAL);
                tx.commit().unwrap();
                audits.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    let (a, n) = (
        audits.load(Ordering::Relaxed),
        transfers.load(Ordering::Relaxed),
    );
    assert!(a > 10 && n > 100, "{a} audits, {n} transfers");
    let mut r = db.begin().unwrap();
    let total: i64 = r
        .scan(&t, ALL, false, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|(_, v)| balance(Some(v)))
        .sum();
    assert_eq!(total, ACCOUNTS as i64 * INITIAL);
    r.commit().unwrap();
    let v = db.stats().versions.unwrap();
    assert_eq!(v.heads, 0, "{v:?}");
}

/// A snapshot reader's begin, reads (get, scan, cursor) and commit, and a plain write and its
/// commit, run with the core latch shared, beside other operations: the engine counts them as
/// shared operations, none is given up for the exclusive path while its pages are in memory,
/// and each read still returns the version of its snapshot, older than the tree's, through the
/// version store. The readers' commits end their snapshots, so the versions they held are
/// purged.
#[test]
fn snapshot_readers_run_beside_each_other() {
    let pair = MemPair::new();
    let db = open(&pair, 4 << 20);
    let t = db.create_tree("t").unwrap();
    for i in 0..300 {
        put(&db, &t, &key(i, 8), b"old");
    }
    let mut r1 = db.begin_snapshot().unwrap();
    let mut r2 = db.begin_snapshot().unwrap();
    for i in (0..300).step_by(3) {
        put(&db, &t, &key(i, 8), b"new");
    }
    let before = db.stats().engine;
    assert_eq!(
        r1.get(&t, &key(3, 8)).unwrap().as_deref(),
        Some(&b"old"[..])
    );
    assert_eq!(
        r2.get(&t, &key(4, 8)).unwrap().as_deref(),
        Some(&b"old"[..])
    );
    let rows = all(&mut r1, &t);
    assert_eq!(rows.len(), 300);
    assert!(rows.iter().all(|(_, v)| v == b"old"));
    let n = r2
        .cursor(&t, ALL, true)
        .unwrap()
        .map(|kv| {
            assert_eq!(kv.unwrap().1, b"old");
        })
        .count();
    assert_eq!(n, 300);
    let mut r3 = db.begin_snapshot().unwrap();
    assert_eq!(
        r3.get(&t, &key(3, 8)).unwrap().as_deref(),
        Some(&b"new"[..])
    );
    let after = db.stats().engine;
    assert_eq!(after.shared_retries, before.shared_retries, "{after:?}");
    // Two gets, a scan, the cursor's batches (at least one) and the third reader's get.
    assert!(after.shared_ops >= before.shared_ops + 5, "{after:?}");
    assert!(db.stats().versions.unwrap().heads > 0);
    // A snapshot writer's put and commit run shared too; the readers still see their snapshot.
    // (The first write into a leaf may run exclusive, to guard the leaf for shared writers.)
    let mut w = db.begin_snapshot().unwrap();
    w.put(&t, &key(3, 8), b"newer").unwrap();
    let first = db.stats().engine;
    w.put(&t, &key(6, 8), b"newer").unwrap();
    w.commit().unwrap();
    assert_eq!(
        r1.get(&t, &key(3, 8)).unwrap().as_deref(),
        Some(&b"old"[..])
    );
    assert_eq!(
        r1.get(&t, &key(6, 8)).unwrap().as_deref(),
        Some(&b"old"[..])
    );
    assert_eq!(
        r3.get(&t, &key(3, 8)).unwrap().as_deref(),
        Some(&b"new"[..])
    );
    let written = db.stats().engine;
    assert_eq!(written.shared_retries, first.shared_retries, "{written:?}");
    assert!(written.shared_ops >= first.shared_ops + 4, "{written:?}");
    assert_eq!(written.commits, first.commits + 1);
    for r in [r1, r2, r3] {
        r.commit().unwrap();
    }
    let v = db.stats().versions.unwrap();
    assert_eq!(v.heads, 0, "{v:?}");
    assert_eq!(db.stats().engine.commits, written.commits + 3);
}

/// Threads move records: each transaction (serializable or snapshot) deletes one present key
/// and inserts one absent key, so every committed state holds exactly `LIVE` keys. Snapshot
/// scanners (scans and cursors, both directions) and snapshot point reads of every slot must
/// always count `LIVE`: a key deleted by a writer that has not committed, or committed after the
/// snapshot, must still be found, and one inserted so must not. Writers and readers all run with
/// the core latch shared here, so a scan that looked at the version store's heads before it read
/// the tree would miss a key deleted in between.
#[test]
fn snapshot_scans_count_exactly_among_moving_deletes_and_inserts() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    const SLOTS: u64 = 400;
    const LIVE: usize = 200;
    let pair = MemPair::new();
    let db = Arc::new(open(&pair, 32 << 20));
    let t = db.create_tree("t").unwrap();
    let mut w = db.begin().unwrap();
    for i in 0..LIVE as u64 {
        w.put(&t, &key(i * 2, 8), b"v").unwrap();
    }
    w.commit().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (moves, audits) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut handles = Vec::new();
    for th in 0..2u64 {
        let (db, t, stop, moves) = (db.clone(), t.clone(), stop.clone(), moves.clone());
        handles.push(std::thread::spawn(move || {
            let mut rng = Pcg64Mcg::seed_from_u64(50 + th);
            while !stop.load(Ordering::Relaxed) {
                let (from, to) = (rng.random_range(0..SLOTS), rng.random_range(0..SLOTS));
                let mut tx = if th == 0 {
                    db.begin_snapshot().unwrap()
                } else {
                    db.begin().unwrap()
                };
                let r = (|| {
                    if tx.get(&t, &key(from, 8))?.is_none() || tx.get(&t, &key(to, 8))?.is_some() {
                        return Ok(false);
                    }
                    tx.delete(&t, &key(from, 8))?;
                    tx.put(&t, &key(to, 8), b"v")?;
                    Ok::<_, Error>(true)
                })();
                match r {
                    Ok(true) => {
                        tx.commit().unwrap();
                        moves.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(false) => tx.commit().unwrap(),
                    Err(Error::Conflict { .. }) => tx.abort().unwrap(),
                    Err(e) => panic!("{e}"),
                }
            }
        }));
    }
    for th in 0..2u64 {
        let (db, t, stop, audits) = (db.clone(), t.clone(), stop.clone(), audits.clone());
        handles.push(std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut tx = db.begin_snapshot().unwrap();
                let count = match n % 4 {
                    0 => tx.scan(&t, ALL, false, usize::MAX).unwrap().len(),
                    1 => tx.scan(&t, ALL, true, usize::MAX).unwrap().len(),
                    2 => tx.cursor(&t, ALL, th == 1).unwrap().count(),
                    _ => (0..SLOTS)
                        .filter(|&i| tx.get(&t, &key(i, 8)).unwrap().is_some())
                        .count(),
                };
                assert_eq!(count, LIVE, "audit {n} of reader {th} (kind {})", n % 4);
                tx.commit().unwrap();
                n += 1;
                audits.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    let (m, a) = (
        moves.load(Ordering::Relaxed),
        audits.load(Ordering::Relaxed),
    );
    assert!(m > 100 && a > 20, "{m} moves, {a} audits");
    let mut r = db.begin_snapshot().unwrap();
    assert_eq!(all(&mut r, &t).len(), LIVE);
    r.commit().unwrap();
    assert_eq!(db.stats().versions.unwrap().heads, 0);
}

/// A snapshot scan that runs shared over cached leaves, then meets a leaf that is not in memory,
/// runs again exclusive: its counters (old versions read, the pool's hits) count the scan once,
/// not its shared windows twice.
#[test]
fn a_snapshot_scan_retried_exclusive_counts_its_reads_once() {
    const KEYS: u64 = 20_000;
    const UPDATED: u64 = 3_000;
    let pair = MemPair::new();
    let devs = pair
        .devices()
        .with_undo(Box::new(MemDevice::new(16 << 20, 4096)));
    let cfg = DbConfig {
        buffer_pages: 64,
        ..DbConfig::default()
    };
    let db = Db::open(devs, cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let write = |ids: std::ops::Range<u64>, v: &[u8]| {
        for chunk in ids.collect::<Vec<_>>().chunks(200) {
            let mut w = db.begin().unwrap();
            for &i in chunk {
                w.put(&t, &key(i, 8), v).unwrap();
            }
            w.commit().unwrap();
        }
    };
    write(0..KEYS, b"old");
    let mut r = db.begin_snapshot().unwrap();
    write(0..UPDATED, b"new");
    let before = (db.stats().engine, db.stats().versions.unwrap());
    // One scan (`all` scans twice).
    let rows = r.scan(&t, ALL, false, usize::MAX).unwrap();
    assert_eq!(rows.len() as u64, KEYS);
    assert!(rows.iter().all(|(_, v)| v == b"old"));
    let after = (db.stats().engine, db.stats().versions.unwrap());
    assert!(
        after.0.shared_retries > before.0.shared_retries,
        "the scan should have met a leaf not in memory: {:?}",
        after.0
    );
    assert_eq!(
        after.1.old_versions_read - before.1.old_versions_read,
        UPDATED,
        "{:?}",
        after.1
    );
    r.commit().unwrap();
}

/// A database on `pair` whose undo device (8 MiB, in memory) writes through a [`Gate`], and
/// its tree `t`.
fn open_with_gated_undo(pair: &MemPair) -> (Db, Tree, std::sync::Arc<crate::support::Gate>) {
    use crate::support::{Gate, Gated};
    let gate = std::sync::Arc::new(Gate::default());
    let devs = pair.devices().with_undo(Box::new(Gated {
        inner: Box::new(MemDevice::new(8 << 20, 4096)),
        gate: gate.clone(),
        reads: false,
    }));
    let db = Db::open(devs, DbConfig::default()).unwrap();
    let t = match db.open_tree("t") {
        Ok(t) => t,
        Err(_) => db.create_tree("t").unwrap(),
    };
    (db, t, gate)
}

/// Snapshot readers do not wait for a writer's write of an undo block: the version store's
/// writers append under a mutex of their own, not held across that write, a reader looks only
/// at its key's head (its shard), and the writer writes the block after its put has let the
/// leaf go (`VersionStore::write_completed`). The undo device holds back the write of the first
/// block of another transaction's before-images (marked values) while another thread runs 200
/// snapshot transactions that read a key with a head, a key without one, a key no one wrote
/// and every key of the leaves the writer changes, and an older snapshot follows a chain to a
/// version still in memory. Before, every snapshot read latched the whole store, which the
/// writer held across the device write; then the writer wrote the block with its leaf latched,
/// and readers of that leaf waited.
#[test]
fn snapshot_readers_run_while_an_undo_block_is_written() {
    use std::sync::atomic::Ordering;
    let (db, t, gate) = open_with_gated_undo(&MemPair::new());
    let marked = b"UNDO-MARK-".repeat(60);
    put(&db, &t, b"a", b"1");
    put(&db, &t, b"b", b"1");
    let mut x = db.begin().unwrap();
    for i in 0..40 {
        x.put(&t, format!("m{i:02}").as_bytes(), &marked).unwrap();
    }
    x.commit().unwrap();
    // An old snapshot keeps the head of `a`'s next version (and its before-image) alive.
    let mut old = db.begin_snapshot().unwrap();
    assert_eq!(old.get(&t, b"a").unwrap().as_deref(), Some(&b"1"[..]));
    put(&db, &t, b"a", b"2");
    assert!(db.stats().versions.unwrap().heads > 0);
    *gate.writes_holding.lock().unwrap() = Some(b"UNDO-MARK-".to_vec());
    gate.set(true);
    let writer = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            // The before-images of the marked values fill an undo block: its write waits at
            // the gate, after the put that completed it (no latch held).
            let mut w = db.begin().unwrap();
            for i in 20..40 {
                w.put(&t, format!("m{i:02}").as_bytes(), b"small").unwrap();
            }
            w.commit().unwrap();
        })
    };
    while !gate.waiting.load(Ordering::SeqCst) {
        assert!(
            !writer.is_finished(),
            "no undo block write reached the device"
        );
        std::thread::yield_now();
    }
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let reader = {
        let (db, t, marked) = (db.clone(), t.clone(), marked.clone());
        std::thread::spawn(move || {
            for _ in 0..200 {
                let mut r = db.begin_snapshot().unwrap();
                assert_eq!(r.get(&t, b"a").unwrap().as_deref(), Some(&b"2"[..]));
                assert_eq!(r.get(&t, b"b").unwrap().as_deref(), Some(&b"1"[..]));
                assert!(r.get(&t, b"none").unwrap().is_none());
                for i in 0..40 {
                    // The writer's keys read "small" only if it committed (the gate let go:
                    // then the main thread reports the wait).
                    let k = format!("m{i:02}");
                    let v = r.get(&t, k.as_bytes()).unwrap();
                    let ok = v.as_deref() == Some(&marked[..])
                        || (i >= 20 && v.as_deref() == Some(&b"small"[..]));
                    assert!(ok, "{k}: {v:?}");
                }
                r.commit().unwrap();
            }
            assert_eq!(old.get(&t, b"a").unwrap().as_deref(), Some(&b"1"[..]));
            done_tx.send(()).unwrap();
            old
        })
    };
    let ran = done_rx.recv_timeout(std::time::Duration::from_secs(20));
    gate.set(false);
    let mut old = reader.join().unwrap();
    writer.join().unwrap();
    assert!(
        ran.is_ok(),
        "snapshot readers waited for another transaction's undo block write"
    );
    // The old snapshot still sees its versions, read back through the undo device.
    assert_eq!(old.get(&t, b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(old.get(&t, b"m30").unwrap(), Some(marked));
    old.commit().unwrap();
    assert_eq!(db.get(&t, b"m30").unwrap().as_deref(), Some(&b"small"[..]));
    db.verify().unwrap();
}

/// An undo block written after the put that completed it (`VersionStore::write_completed`)
/// that fails: the put went through, and the handle is poisoned (as when the write failed
/// inside the put), so the next operation reports the undo device's error; the database
/// reopens (a new version store) with what was committed and without the failed transaction.
#[test]
fn a_failed_undo_block_write_after_a_put_poisons_the_handle() {
    use std::sync::atomic::Ordering;
    let pair = MemPair::new();
    let (db, t, gate) = open_with_gated_undo(&pair);
    let big = vec![7u8; 600];
    for i in 0..20u64 {
        put(&db, &t, &key(i, 8), &big);
    }
    let mut snap = db.begin_snapshot().unwrap();
    assert_eq!(snap.get(&t, &key(0, 8)).unwrap(), Some(big.clone()));
    gate.fail_writes.store(true, Ordering::SeqCst);
    let mut w = db.begin().unwrap();
    let mut puts = 0;
    let err = loop {
        assert!(
            puts < 20,
            "20 before-images of 600 bytes and no undo block written"
        );
        match w.put(&t, &key(puts, 8), b"small") {
            Ok(_) => puts += 1,
            Err(e) => break e,
        }
    };
    // A few images of 600-byte values fill the first 4 KiB block; the put that completed it
    // succeeded (its block written after it), the next one found the handle poisoned.
    assert!((4..=7).contains(&puts), "{puts} puts before the error");
    assert!(
        matches!(&err, Error::Poisoned(m) if m.contains("write refused by the test")),
        "{err}"
    );
    assert!(db.begin().is_err(), "the handle is poisoned");
    drop(snap);
    drop(w);
    drop(db);
    let (db, t, _) = open_with_gated_undo(&pair);
    let mut r = db.begin_snapshot().unwrap();
    let rows = all(&mut r, &t);
    assert_eq!(rows.len(), 20);
    assert!(
        rows.iter().all(|(_, v)| *v == big),
        "the failed puts are gone"
    );
    r.commit().unwrap();
    db.verify().unwrap();
}
