//! Which operations run with the core latch shared (beside other threads) and which run alone,
//! seen through `engine.shared_ops` / `engine.shared_retries`; and that changes made with the
//! latch shared are logged like any other (a crash after them loses nothing committed).

use crate::support::MemPair;
use std::ops::Bound;
use wafer_engine::{Db, DbConfig};

fn counts(db: &Db) -> (u64, u64) {
    let s = db.stats();
    (s.engine.shared_ops, s.engine.shared_retries)
}

#[test]
fn cached_reads_and_plain_leaf_changes_run_shared_and_survive_a_crash() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    let key = |i: u32| format!("k{i:05}").into_bytes();
    let mut x = db.begin().unwrap();
    for i in 0..2000 {
        x.put(&t, &key(i), b"first").unwrap();
    }
    x.commit().unwrap();

    // A cached read runs shared.
    let before = counts(&db);
    let mut x = db.begin().unwrap();
    assert_eq!(x.get(&t, &key(7)).unwrap().as_deref(), Some(&b"first"[..]));
    x.commit().unwrap();
    let after = counts(&db);
    assert_eq!(after.0, before.0 + 1, "the read ran shared");

    // Plain changes of a leaf (guarded: leaves are) run shared; a change that splits a leaf is
    // given up and run exclusive (here a value too long to stay in the leaf).
    let mut x = db.begin().unwrap();
    x.put(&t, &key(7), b"second").unwrap();
    x.put(&t, &key(8), b"second").unwrap();
    x.delete(&t, &key(9)).unwrap();
    let mid = counts(&db);
    assert_eq!(mid.0, after.0 + 3, "the puts and the delete ran shared");
    assert_eq!(mid.1, after.1, "and nothing was retried");
    x.put(&t, &key(12), &[1u8; 3000]).unwrap();
    x.commit().unwrap();
    let end = counts(&db);
    assert_eq!(end.1, mid.1 + 1, "the overflow value was retried exclusive");
    assert_eq!(end.0, mid.0, "and did not run shared");

    // A scan of cached pages runs shared and sees the changes.
    let mut x = db.begin().unwrap();
    let from = key(6);
    let got = x
        .scan(&t, (Bound::Included(&from[..]), Bound::Unbounded), false, 3)
        .unwrap();
    assert_eq!(
        got,
        vec![
            (key(6), b"first".to_vec()),
            (key(7), b"second".to_vec()),
            (key(8), b"second".to_vec()),
        ]
    );
    x.commit().unwrap();

    // An uncommitted shared change is rolled back; the committed ones survive a crash.
    let mut x = db.begin().unwrap();
    x.put(&t, &key(10), b"never").unwrap();
    drop(x);
    let mut x = db.begin().unwrap();
    x.put(&t, &key(11), b"in flight").unwrap();
    std::mem::forget(x);
    drop(db);
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let t = db.open_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    assert_eq!(x.get(&t, &key(7)).unwrap().as_deref(), Some(&b"second"[..]));
    assert_eq!(x.get(&t, &key(8)).unwrap().as_deref(), Some(&b"second"[..]));
    assert_eq!(x.get(&t, &key(9)).unwrap(), None);
    assert_eq!(x.get(&t, &key(10)).unwrap().as_deref(), Some(&b"first"[..]));
    assert_eq!(x.get(&t, &key(11)).unwrap().as_deref(), Some(&b"first"[..]));
    assert_eq!(
        x.get(&t, &key(12)).unwrap().as_deref(),
        Some(&[1u8; 3000][..])
    );
    x.commit().unwrap();
    assert_eq!(db.verify().unwrap(), vec![("t".to_string(), 1999)]);
}

#[test]
fn two_threads_change_one_leaf_at_once_without_losing_a_change() {
    let db = Db::open(
        wafer_engine::Devices::memory(32 << 20, 8 << 20),
        DbConfig::default(),
    )
    .unwrap();
    let t = db.create_tree("t").unwrap();
    // Few keys: one leaf, guarded after the first round, changed by both threads.
    let mut x = db.begin().unwrap();
    for k in 0..16u8 {
        x.put(&t, &[k], &0u64.to_le_bytes()).unwrap();
    }
    x.commit().unwrap();
    let rounds = 3000u64;
    std::thread::scope(|s| {
        for th in 0..2u8 {
            let (db, t) = (&db, &t);
            s.spawn(move || {
                for r in 0..rounds {
                    // Each thread owns 8 keys, so no record lock is contended: only the leaf.
                    let k = [th * 8 + (r % 8) as u8];
                    let mut x = db.begin().unwrap();
                    let v = x.get(t, &k).unwrap().unwrap();
                    let n = u64::from_le_bytes(v.try_into().unwrap()) + 1;
                    x.put(t, &k, &n.to_le_bytes()).unwrap();
                    x.commit().unwrap();
                }
            });
        }
    });
    let mut x = db.begin().unwrap();
    let total: u64 = (0..16u8)
        .map(|k| u64::from_le_bytes(x.get(&t, &[k]).unwrap().unwrap().try_into().unwrap()))
        .sum();
    x.commit().unwrap();
    assert_eq!(total, 2 * rounds);
    let (shared, _) = counts(&db);
    assert!(shared > rounds, "most operations ran shared ({shared})");
    assert_eq!(db.verify().unwrap(), vec![("t".to_string(), 16)]);
}
