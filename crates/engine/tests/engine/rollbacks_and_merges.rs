//! Rollbacks and merges beside other threads (docs/engine.md, "Rollbacks beside other
//! threads", "Merges left for later"): with several threads, changes whose undo is a plain leaf
//! change are undone with the core latch shared; the rest (here a bulk load's range)
//! exclusive, going on from there; the compensation records logged either way bring a crashed
//! database back to the same state; and deletes that leave a leaf under-full are plain too,
//! their merges made at the next exclusive change.

use crate::support::{key, value, LinkedRig, MemPair};
use std::collections::BTreeMap;
use wafer_engine::{Db, DbConfig, Tree};

/// Runs one committed read on another thread: the database has then seen two threads, which is
/// when rollbacks (like splits) run beside others.
fn second_thread(db: &Db, t: &Tree) {
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut x = db.begin().unwrap();
            x.get(t, &key(0, 24)).unwrap();
            x.commit().unwrap();
        });
    });
}

/// 3,000 records, every tenth of them `k` changed below by the aborted transaction.
fn loaded(db: &Db) -> (Tree, BTreeMap<Vec<u8>, Vec<u8>>) {
    let t = db.create_tree("t").unwrap();
    let mut model = BTreeMap::new();
    let mut x = db.begin().unwrap();
    for n in 0..3000 {
        let (k, v) = (key(n * 2, 24), value(n, 60));
        x.put(&t, &k, &v).unwrap();
        model.insert(k, v);
    }
    x.commit().unwrap();
    (t, model)
}

/// Updates (values shorter and longer), inserts between existing keys and deletes, spread
/// over the tree: each undo is a plain leaf change.
fn change_much(x: &mut wafer_engine::Txn, t: &Tree) {
    for n in (0..3000).step_by(10) {
        x.put(
            t,
            &key(n * 2, 24),
            &value(n + 7, 20 + (n % 3) as usize * 30),
        )
        .unwrap();
        x.put(t, &key(n * 2 + 1, 24), &value(n, 50)).unwrap();
        if n % 50 == 0 {
            x.delete(t, &key(n * 2 + 2, 24)).unwrap();
        }
    }
}

fn assert_holds(db: &Db, t: &Tree, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let mut x = db.begin().unwrap();
    let all = x
        .scan(
            t,
            (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded),
            false,
            usize::MAX,
        )
        .unwrap();
    x.commit().unwrap();
    assert!(all.len() == model.len() && all.into_iter().eq(model.clone()));
    db.verify().unwrap();
}

/// With two threads seen, an aborted transaction's 600 changes are undone with no exclusive
/// latch (before, every rollback of logged changes took it, and every other thread waited for
/// the whole rollback); the tree is as it was, and the rollback counts as an abort.
#[test]
fn a_rollback_of_plain_changes_beside_others_takes_no_exclusive_latch() {
    let db = Db::open(MemPair::new().devices(), DbConfig::default()).unwrap();
    let (t, model) = loaded(&db);
    second_thread(&db, &t);
    let mut x = db.begin().unwrap();
    change_much(&mut x, &t);
    let before = db.stats().engine;
    x.abort().unwrap();
    let after = db.stats().engine;
    // The one take is the second `stats` call's own.
    let took = after.exclusive_latches - before.exclusive_latches;
    assert_eq!(took, 1, "{took} exclusive takes for the rollback");
    assert_eq!(after.aborts, before.aborts + 1);
    // Every change (300 updates, 300 inserts, 60 deletes) undone beside others.
    assert_eq!(after.undone_beside - before.undone_beside, 660);
    assert_holds(&db, &t, &model);
}

/// A transaction that bulk-loaded one tree, then changed another: its plain undos run beside
/// others, newest first, up to the load's range, and the exclusive rollback does the rest from
/// there. Both trees are as they were; the changes are made again and committed after.
#[test]
fn a_rollback_goes_on_exclusive_from_where_the_shared_part_stopped() {
    let db = Db::open(MemPair::new().devices(), DbConfig::default()).unwrap();
    let (t, model) = loaded(&db);
    let l = db.create_tree("loaded").unwrap();
    second_thread(&db, &t);
    let mut x = db.begin().unwrap();
    change_much(&mut x, &t);
    let rows: Vec<_> = (0..2000).map(|n| (key(n, 16), value(n, 40))).collect();
    x.load(&l, &rows).unwrap();
    x.put(&t, &key(1, 24), &value(1, 30)).unwrap();
    change_much(&mut x, &t);
    let before = db.stats().engine;
    x.abort().unwrap();
    let after = db.stats().engine;
    let took = after.exclusive_latches - before.exclusive_latches;
    // The exclusive rollback of the load and what came before it, and `stats`.
    assert_eq!(took, 2, "{took} exclusive takes");
    // The put and the changes after the load, beside others (its deletes found their keys
    // deleted already: nothing logged, nothing to undo).
    assert_eq!(after.undone_beside - before.undone_beside, 601);
    assert_holds(&db, &t, &model);
    assert_holds(&db, &l, &BTreeMap::new());
    let mut x = db.begin().unwrap();
    change_much(&mut x, &t);
    x.commit().unwrap();
}

/// The compensation records of a rollback beside others are what recovery replays: the log
/// made durable after the rollback (by a later commit), the data device's unflushed writes lost,
/// the reopened database holds the committed state.
#[test]
fn a_crash_after_a_rollback_beside_others_recovers_the_committed_state() {
    let rig = LinkedRig::new(29, 64 << 20, 16 << 20, 512);
    let db = Db::open(rig.devices(), DbConfig::default()).unwrap();
    let (t, mut model) = loaded(&db);
    db.checkpoint().unwrap();
    second_thread(&db, &t);
    let mut x = db.begin().unwrap();
    change_much(&mut x, &t);
    x.abort().unwrap();
    // A later commit forces the log past the rollback's records.
    let mut x = db.begin().unwrap();
    x.put(&t, &key(7, 24), b"after").unwrap();
    x.commit().unwrap();
    model.insert(key(7, 24), b"after".to_vec());
    assert_eq!(db.stats().engine.aborts, 1);
    // Power off before the handle goes (its close writes nothing), then back on with the
    // data device's unflushed writes lost.
    rig.cut_now();
    drop(db);
    rig.crash();
    let db = Db::open(rig.devices(), DbConfig::default()).unwrap();
    let r = db.stats().recovery.expect("recovered");
    // The updates, the compensation records and the later commit redone; nothing to undo.
    assert!(r.redo_records > 600 && r.undo_txns == 0, "{r:?}");
    let t = db.open_tree("t").unwrap();
    assert_holds(&db, &t, &model);
}

/// With several threads, a delete that leaves its leaf under a quarter full is a plain change
/// too: the merge an exclusive delete makes at once is left for the next exclusive change
/// (here when 64 leaves wait), made then as its own system operation if the leaf is still
/// under-full. Deleting most of a tree's keys one transaction each takes the core latch
/// exclusive a few times (every such delete took it before); the tree and its page accounting
/// check out, and the deletes survive a reopen.
#[test]
fn deletes_beside_others_leave_their_merges_for_later() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let (t, mut model) = loaded(&db);
    second_thread(&db, &t);
    let before = db.stats().engine;
    for n in 0..3000u64 {
        if n % 8 == 0 {
            continue;
        }
        let k = key(n * 2, 24);
        let mut x = db.begin().unwrap();
        assert!(x.delete(&t, &k).unwrap().is_some());
        x.commit().unwrap();
        model.remove(&k);
    }
    let after = db.stats().engine;
    let took = after.exclusive_latches - before.exclusive_latches;
    assert!(took <= 4, "{took} exclusive takes for 2,625 deletes");
    assert_holds(&db, &t, &model);
    assert!(db.check_pages().unwrap().is_empty());
    drop(db);
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let t = db.open_tree("t").unwrap();
    assert_holds(&db, &t, &model);
}

/// A rollback beside running scans that brings a deleted key back never lets a scan miss it.
/// Writers only delete keys and abort, so the committed set never changes and every scan that
/// is not refused must see all of it. The case this guards: a scan has read a leaf whose last
/// key (first, in reverse) is deleted but not committed, its claim ending at the key before;
/// the rollback puts the key back in the gap past the claim and, ending, drops the delete's
/// record, so the scan, going on in the next leaf, is not refused and never reads the key.
/// Such an undo is left to the exclusive rollback, which waits for running scans. Without
/// that, a run of this test found scans one key short within a second.
#[test]
fn rollbacks_beside_running_scans_bring_back_every_key_they_read_past() {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
    // About six keys per leaf: a deleted key is often the last or first of its leaf.
    const KEYS: u64 = 600;
    let db = Db::open(MemPair::new().devices(), DbConfig::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    for n in 0..KEYS {
        x.put(&t, &key(n, 24), &value(n, 600)).unwrap();
    }
    x.commit().unwrap();
    let stop = AtomicBool::new(false);
    let (scans, undone) = (AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|s| {
        for th in 0..2u64 {
            let (db, t, stop, undone) = (&db, &t, &stop, &undone);
            s.spawn(move || {
                let mut seed = 0x2545_F491_4F6C_DD1Du64 ^ th;
                while !stop.load(Relaxed) {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let mut w = db.begin().unwrap();
                    let r = w.delete(t, &key(seed % KEYS, 24));
                    match r {
                        Ok(_) => undone.fetch_add(1, Relaxed),
                        Err(wafer_engine::Error::Conflict { .. }) => 0,
                        Err(e) => panic!("writer: {e}"),
                    };
                    w.abort().unwrap();
                }
            });
        }
        for th in 0..2u64 {
            let (db, t, stop, scans) = (&db, &t, &stop, &scans);
            s.spawn(move || {
                let mut round = th;
                while !stop.load(Relaxed) {
                    round += 1;
                    // A window of 40 keys (about seven leaves), from a key of its own.
                    let from = round.wrapping_mul(0x9E37_79B9) % (KEYS - 40);
                    let (lo, hi) = (key(from, 24), key(from + 40, 24));
                    let r = (Included(&lo[..]), Excluded(&hi[..]));
                    let mut a = db.begin().unwrap();
                    let seen = match round % 3 {
                        0 => a.scan(t, r, false, usize::MAX).map(|v| v.len()),
                        1 => a.scan(t, r, true, usize::MAX).map(|v| v.len()),
                        _ => a
                            .cursor(t, r, false)
                            .and_then(|c| c.collect::<Result<Vec<_>, _>>())
                            .map(|v| v.len()),
                    };
                    match seen {
                        Ok(n) => {
                            assert_eq!(n, 40, "a scan (kind {}) from key {from} read", round % 3);
                            scans.fetch_add(1, Relaxed);
                            a.commit().unwrap();
                        }
                        Err(wafer_engine::Error::Conflict { .. }) => a.abort().unwrap(),
                        Err(e) => panic!("scanner: {e}"),
                    }
                }
            });
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
        stop.store(true, Relaxed);
    });
    let (scans, undone) = (scans.into_inner(), undone.into_inner());
    eprintln!("{scans} scans, {undone} deletes undone");
    assert!(
        scans > 100 && undone > 1000,
        "{scans} scans, {undone} deletes undone"
    );
    assert!(db.stats().engine.undone_beside > 0);
    let mut x = db.begin().unwrap();
    let all = x
        .scan(&t, (Unbounded, Unbounded), false, usize::MAX)
        .unwrap();
    assert_eq!(all.len() as u64, KEYS);
    x.commit().unwrap();
    db.verify().unwrap();
}
