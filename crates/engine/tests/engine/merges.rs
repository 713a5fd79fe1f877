//! Merges left for later (docs/engine.md, "Merges left for later"): with several threads, a
//! delete that leaves its leaf under-full is a plain change, its merge made at the next
//! exclusive change.

use crate::support::{key, value, MemPair};
use std::collections::BTreeMap;
use wafer_engine::{Db, DbConfig, Tree};

/// Runs one committed read on another thread: the database has then seen two threads, which is
/// when deletes (like splits) leave their structure work beside others.
fn second_thread(db: &Db, t: &Tree) {
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut x = db.begin().unwrap();
            x.get(t, &key(0, 24)).unwrap();
            x.commit().unwrap();
        });
    });
}

/// 3,000 records with even keys.
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
