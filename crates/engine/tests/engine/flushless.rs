//! The flushless mode (paper 001) through the public API: what it promises beside the model and
//! crash tests (which also run on it): aborts after splits restore the tree without undo, one
//! live transaction per page, evictions write nothing, a restart writes no page and runs no undo
//! but gives back the pages of transactions that never committed, a full table is a typed error
//! that an abort cures, and a database opens only in the mode it was created in.

use crate::support::{key, value, MemPair, Oracle};
use wafer_engine::{Db, DbConfig, Error, FlushlessConfig};

fn config(buffer_pages: usize) -> DbConfig {
    DbConfig {
        buffer_pages,
        log_space_bytes: Some(4 << 20),
        flushless: Some(FlushlessConfig::default()),
        ..DbConfig::default()
    }
}

#[test]
fn an_abort_after_splits_restores_the_tree_without_undo() {
    let pair = MemPair::new();
    // The table holds the aborting transaction's 3,100 changes.
    let db = Db::open(pair.devices(), config(2048)).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut oracle = Oracle::new(&["t"]);
    let mut x = db.begin().unwrap();
    for i in 0..400u64 {
        let (k, v) = (key(i * 10, 24), value(i, 60));
        x.put(&t, &k, &v).unwrap();
        oracle.put("t", &k, &v);
    }
    x.commit().unwrap();
    let (_, pages_before) = db.page_usage().unwrap();
    // A transaction that splits leaves (and the root) many times, then aborts.
    let mut x = db.begin().unwrap();
    for i in 0..3000u64 {
        x.put(&t, &key(i * 10 + 5, 24), &value(i, 80)).unwrap();
    }
    for i in 0..100u64 {
        x.delete(&t, &key(i * 10, 24)).unwrap();
    }
    let log_before = db.stats().wal.appended_bytes;
    x.abort().unwrap();
    let s = db.stats();
    let f = s.flushless.as_ref().unwrap();
    assert!(f.pages_given_back > 10, "{f:?}");
    assert!(f.frames_discarded > 0, "{f:?}");
    // Nothing but the give-back of its pages (with the meta page once a batch) and an abort
    // marker was logged: no CLRs.
    let logged = s.wal.appended_bytes - log_before;
    let batches = f.pages_given_back.div_ceil(8);
    assert!(
        logged < (f.pages_given_back + batches + 4) * 4096 + 4096,
        "the abort logged {logged} bytes"
    );
    db.verify().unwrap();
    assert_eq!(db.check_pages().unwrap(), Vec::<String>::new());
    oracle.check(&db, "after the abort");
    // The pages given back are reused.
    let mut x = db.begin().unwrap();
    for i in 0..1000u64 {
        let (k, v) = (key(i * 10 + 7, 24), value(i, 80));
        x.put(&t, &k, &v).unwrap();
        oracle.put("t", &k, &v);
    }
    x.commit().unwrap();
    let (_, pages_after) = db.page_usage().unwrap();
    assert_eq!(pages_before, pages_after, "page capacity");
    assert_eq!(db.check_pages().unwrap(), Vec::<String>::new());
    oracle.check(&db, "after reuse");
    // And all of it survives a crash.
    drop(db);
    let db = Db::open(pair.devices(), config(2048)).unwrap();
    oracle.check(&db, "after a restart");
    assert_eq!(db.check_pages().unwrap(), Vec::<String>::new());
}

#[test]
fn one_live_transaction_changes_a_page_at_a_time() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), config(64)).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut a = db.begin().unwrap();
    a.put(&t, b"k1", b"a").unwrap();
    let mut b = db.begin().unwrap();
    // Another key, but the same (only) leaf.
    assert!(matches!(
        b.put(&t, b"k2", b"b"),
        Err(Error::Conflict { .. })
    ));
    // Reading it is fine (record locks keep the uncommitted key hidden).
    assert_eq!(b.get(&t, b"k3").unwrap(), None);
    a.commit().unwrap();
    b.put(&t, b"k2", b"b").unwrap();
    b.commit().unwrap();
    let s = db.stats();
    assert_eq!(s.flushless.unwrap().page_conflicts, 1);
    let mut r = db.begin().unwrap();
    assert_eq!(r.get(&t, b"k1").unwrap().as_deref(), Some(&b"a"[..]));
    assert_eq!(r.get(&t, b"k2").unwrap().as_deref(), Some(&b"b"[..]));
}

/// A change refused for a page that another thread's live transaction holds waits for that
/// transaction's end, by the rule a record lock's holder is waited for (wait-die by id: here
/// the waiter is the older), and then goes on; before, it was refused at once (TPC-C on the
/// wall clock, two threads: its New-Orders all insert into the same last leaves).
#[test]
fn a_change_waits_for_an_older_page_holder_on_another_thread() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), config(64)).unwrap();
    let t = db.create_tree("t").unwrap();
    // The older transaction: begun first.
    let mut a = db.begin().unwrap();
    let (held, go) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut b = db.begin().unwrap();
            b.put(&t, b"k1", b"b").unwrap();
            held.wait();
            go.wait();
            std::thread::sleep(std::time::Duration::from_millis(20));
            b.commit().unwrap();
        });
        held.wait();
        go.wait();
        // Another key of the same (only) leaf, held by `b` until its commit.
        a.put(&t, b"k2", b"a").unwrap();
    });
    a.commit().unwrap();
    let s = db.stats();
    assert_eq!(s.flushless.unwrap().page_conflicts, 1);
    let mut r = db.begin().unwrap();
    assert_eq!(r.get(&t, b"k1").unwrap().as_deref(), Some(&b"b"[..]));
    assert_eq!(r.get(&t, b"k2").unwrap().as_deref(), Some(&b"a"[..]));
}

/// A transaction refused for a page an older transaction of another thread holds (wait-die:
/// the younger is refused) waits in its abort for that one's end, so that its retry does not
/// meet it again at once: on the wall clock, two TPC-C terminals refused each other about
/// 15,000 times a second without it.
#[test]
fn an_abort_after_a_page_refusal_waits_for_the_holder() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), config(64)).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut a = db.begin().unwrap();
    a.put(&t, b"k1", b"a").unwrap();
    let committing = AtomicBool::new(false);
    std::thread::scope(|s| {
        let waited = s.spawn(|| {
            // Younger than `a`, which runs on another thread: refused at once.
            let mut b = db.begin().unwrap();
            assert!(matches!(
                b.put(&t, b"k2", b"b"),
                Err(Error::Conflict { .. })
            ));
            let started = std::time::Instant::now();
            b.abort().unwrap();
            (started.elapsed(), committing.load(Ordering::SeqCst))
        });
        std::thread::sleep(std::time::Duration::from_millis(40));
        committing.store(true, Ordering::SeqCst);
        a.commit().unwrap();
        let (took, after_commit) = waited.join().unwrap();
        assert!(
            after_commit,
            "the abort returned before the holder's commit ({took:?})"
        );
    });
    let mut b = db.begin().unwrap();
    b.put(&t, b"k2", b"b").unwrap();
    b.commit().unwrap();
    // A refusal the transaction went on from (a later operation succeeded) is not waited
    // out by its abort: the holder still runs, and the abort returns at once (a wait would
    // last until the 100 ms deadline).
    let mut a = db.begin().unwrap();
    a.put(&t, b"k3", b"a").unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut b = db.begin().unwrap();
            assert!(matches!(
                b.put(&t, b"k4", b"b"),
                Err(Error::Conflict { .. })
            ));
            assert_eq!(b.get(&t, b"k1").unwrap().as_deref(), Some(&b"a"[..]));
            let started = std::time::Instant::now();
            b.abort().unwrap();
            let took = started.elapsed();
            assert!(took < std::time::Duration::from_millis(100), "{took:?}");
        })
        .join()
        .unwrap();
    });
    a.commit().unwrap();
}

/// A merge reads the page it takes out of the tree without changing it: if that page holds
/// another live transaction's change, the merge is refused (the change would otherwise be
/// committed with the merging transaction, and the page the aborted change replaced would leak).
#[test]
fn a_merge_never_absorbs_another_live_transactions_page() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), config(64)).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut oracle = Oracle::new(&["t"]);
    let mut x = db.begin().unwrap();
    // Two leaves: a sorted load fills the first and starts the second with the last keys.
    for i in 0..30u64 {
        let (k, v) = (key(i, 16), value(i, 150));
        x.put(&t, &k, &v).unwrap();
        oracle.put("t", &k, &v);
    }
    // The last key's value overflows: replacing it frees pages at the commit.
    let big = vec![7u8; 9000];
    x.put(&t, &key(29, 16), &big).unwrap();
    oracle.put("t", &key(29, 16), &big);
    x.commit().unwrap();
    // `a` changes the second leaf (and defers the free of the old overflow pages).
    let mut a = db.begin().unwrap();
    a.put(&t, &key(29, 16), b"uncommitted").unwrap();
    // `b` empties the first leaf: it would take the second one's cells and free it.
    let mut b = db.begin().unwrap();
    let mut refused = false;
    let mut deleted = Vec::new();
    for i in 0..29u64 {
        match b.delete(&t, &key(i, 16)) {
            Ok(_) => deleted.push(key(i, 16)),
            Err(Error::Conflict { .. }) => {
                refused = true;
                break;
            }
            Err(e) => panic!("delete {i}: {e}"),
        }
    }
    assert!(
        refused,
        "emptying the leaf next to a live transaction's leaf merged it"
    );
    b.abort().unwrap();
    a.abort().unwrap();
    db.verify().unwrap();
    assert_eq!(db.check_pages().unwrap(), Vec::<String>::new());
    oracle.check(&db, "after the aborts");
    // Once `a` is gone, the same deletes merge the leaves.
    let mut b = db.begin().unwrap();
    for k in &deleted {
        b.delete(&t, k).unwrap();
        oracle.delete("t", k);
    }
    b.commit().unwrap();
    assert_eq!(db.check_pages().unwrap(), Vec::<String>::new());
    oracle.check(&db, "after the merges");
}

/// Many updates through a small pool: dirty victims are dropped, never written; the pages come
/// back by on-the-fly redo; checkpoints write each page once for many changes.
#[test]
fn evictions_write_nothing_and_pages_come_back_by_redo() {
    let pair = MemPair::new();
    // 40 frames for about 60 leaves; the table gets the other half of the memory.
    let cfg = DbConfig {
        flushless: Some(FlushlessConfig {
            table_fraction: 0.5,
            ..FlushlessConfig::default()
        }),
        ..config(80)
    };
    let db = Db::open(pair.devices(), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut oracle = Oracle::new(&["t"]);
    for round in 0..60u64 {
        let mut x = db.begin().unwrap();
        for i in 0..50u64 {
            let (k, v) = (
                key((i * 37 + round * 13) % 3000, 20),
                value(round * 1000 + i, 40),
            );
            if let Err(e) = x.put(&t, &k, &v) {
                panic!("round {round} put {i}: {e}\n{:#?}", db.stats().flushless);
            }
            oracle.put("t", &k, &v);
        }
        x.commit().unwrap();
    }
    oracle.check(&db, "after the updates");
    let s = db.stats();
    let f = s.flushless.as_ref().unwrap();
    assert_eq!(s.writes.eviction_writes, 0);
    assert!(f.flushless_evictions > 50, "{f:?}");
    assert!(f.table.otf_redos > 50 && f.table.otf_records_applied > f.table.otf_redos);
    assert!(f.checkpoints > 0 && f.compacted_records > 0, "{f:?}");
    // Compaction writes a page for several changes.
    let written = s.writes.checkpoint_writes;
    assert!(
        f.compacted_records > 2 * written,
        "{f:?}, {written} pages written"
    );
}

/// A crash with a live transaction that allocated pages: the restart reloads the log table,
/// writes no page, undoes nothing, gives the pages back; the lazy redo then serves the
/// committed state.
#[test]
fn a_restart_writes_no_page_and_gives_back_uncommitted_allocations() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), config(512)).unwrap();
    let t = db.create_tree("t").unwrap();
    let other = db.create_tree("other").unwrap();
    let mut oracle = Oracle::new(&["t", "other"]);
    for round in 0..10u64 {
        let mut x = db.begin().unwrap();
        for i in 0..200u64 {
            let (k, v) = (key(round * 200 + i, 24), value(i, 70));
            x.put(&t, &k, &v).unwrap();
            oracle.put("t", &k, &v);
        }
        x.commit().unwrap();
    }
    let mut live = db.begin().unwrap();
    for i in 0..800u64 {
        live.put(&t, &key(10_000 + i, 24), &value(i, 70)).unwrap();
    }
    // A commit elsewhere makes the log durable, with the records of the live transaction's
    // page allocations (logged at once).
    let mut x = db.begin().unwrap();
    x.put(&other, b"k", b"v").unwrap();
    x.commit().unwrap();
    oracle.put("other", b"k", b"v");
    let before = db.stats();
    assert!(before.flushless.as_ref().unwrap().table.records > 0);
    std::mem::forget(live);
    drop(db); // a crash: the live transaction never ends
    let db = Db::open(pair.devices(), config(512)).unwrap();
    let s = db.stats();
    let rec = s.recovery.as_ref().unwrap();
    assert!(rec.flushless && rec.reload_records > 0, "{rec:?}");
    assert_eq!(rec.undo_records, 0);
    assert!(rec.given_back_pages > 5, "{rec:?}");
    assert_eq!(
        (s.writes.checkpoint_writes, s.writes.eviction_writes),
        (0, 0),
        "the restart wrote pages"
    );
    oracle.check(&db, "after the restart");
    let f = db.stats().flushless.unwrap();
    assert!(f.table.otf_redos > 0, "{f:?}");
    db.verify().unwrap();
    assert_eq!(db.check_pages().unwrap(), Vec::<String>::new());
}

#[test]
fn a_full_table_is_a_typed_error_and_an_abort_cures_it() {
    let pair = MemPair::new();
    let cfg = DbConfig {
        flushless: Some(FlushlessConfig {
            table_fraction: 0.1,
            ..FlushlessConfig::default()
        }),
        ..config(64)
    };
    let db = Db::open(pair.devices(), cfg.clone()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    let mut n = 0;
    let err = loop {
        match x.put(&t, &key(n, 24), &value(n, 500)) {
            Ok(_) => n += 1,
            Err(e) => break e,
        }
        assert!(n < 10_000, "the table never filled");
    };
    assert!(matches!(err, Error::TableFull(_)), "{err}");
    x.abort().unwrap();
    let mut x = db.begin().unwrap();
    x.put(&t, b"small", b"fits").unwrap();
    x.commit().unwrap();
    drop(db);
    let db = Db::open(pair.devices(), cfg).unwrap();
    let t = db.open_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    assert_eq!(x.get(&t, b"small").unwrap().as_deref(), Some(&b"fits"[..]));
    assert_eq!(x.get(&t, &key(0, 24)).unwrap(), None);
}

#[test]
fn a_database_opens_only_in_its_own_mode() {
    let pair = MemPair::new();
    let aries = DbConfig {
        log_space_bytes: Some(4 << 20),
        buffer_pages: 64,
        ..DbConfig::default()
    };
    drop(Db::open(pair.devices(), aries.clone()).unwrap());
    let e = Db::open(pair.devices(), config(64)).err().expect("refused");
    assert!(matches!(&e, Error::Config(m) if m.contains("ARIES")), "{e}");
    let pair = MemPair::new();
    drop(Db::open(pair.devices(), config(64)).unwrap());
    let e = Db::open(pair.devices(), aries).err().expect("refused");
    assert!(
        matches!(&e, Error::Config(m) if m.contains("flushless")),
        "{e}"
    );
    // Contradictory settings are refused at open.
    let e = Db::open(
        MemPair::new().devices(),
        DbConfig {
            max_checkpoint_count: 4,
            ..config(64)
        },
    )
    .err()
    .expect("refused");
    assert!(
        matches!(&e, Error::Config(m) if m.contains("max_checkpoint_count")),
        "{e}"
    );
}

/// An abort gives back more pages than the pool has frames (a transaction of overflowing
/// values in a pool of 17 frames), and so does a restart for a transaction that never ended:
/// the give-back frees the pages a few at a time (one operation pinning every page it frees
/// found every frame pinned: `PoolExhausted`, which poisoned the handle and then made the
/// database unopenable).
#[test]
fn an_abort_and_a_restart_give_back_more_pages_than_the_pool_has_frames() {
    let pair = MemPair::new();
    // 57 pages: 17 frames, the table gets the other 40 (a dozen such values).
    let cfg = DbConfig {
        flushless: Some(FlushlessConfig {
            table_fraction: 0.7,
            ..FlushlessConfig::default()
        }),
        ..config(57)
    };
    let db = Db::open(pair.devices(), cfg.clone()).unwrap();
    let t = db.create_tree("t").unwrap();
    let other = db.create_tree("other").unwrap();
    let mut oracle = Oracle::new(&["t", "other"]);
    let mut x = db.begin().unwrap();
    x.put(&other, b"kept", b"committed").unwrap();
    x.commit().unwrap();
    oracle.put("other", b"kept", b"committed");
    // A transaction whose puts allocate more than 20 pages (three overflow pages a value),
    // then an abort.
    let big = |i: u64| value(i, 9000);
    let fill = |db: &Db| {
        let mut x = db.begin().unwrap();
        let mut allocated = 0;
        for i in 0..40u64 {
            match x.put(&t, &key(i, 24), &big(i)) {
                Ok(_) => allocated += 3,
                Err(Error::TableFull(_)) => break,
                Err(e) => panic!("put {i}: {e}"),
            }
        }
        assert!(allocated > 20, "only {allocated} pages allocated");
        x
    };
    let x = fill(&db);
    x.abort().unwrap();
    let f = db.stats().flushless.unwrap();
    assert!(f.pages_given_back > 20, "{f:?}");
    oracle.check(&db, "after the abort");
    assert_eq!(db.check_pages().unwrap(), Vec::<String>::new());
    // The same transaction left live at a crash: the restart gives its pages back.
    let x = fill(&db);
    // A commit elsewhere makes the allocations durable.
    let mut y = db.begin().unwrap();
    y.put(&other, b"kept", b"again").unwrap();
    y.commit().unwrap();
    oracle.put("other", b"kept", b"again");
    std::mem::forget(x);
    drop(db);
    let db = Db::open(pair.devices(), cfg).unwrap();
    let rec = db.stats().recovery.unwrap();
    assert!(rec.given_back_pages > 20, "{rec:?}");
    oracle.check(&db, "after the restart");
    db.verify().unwrap();
    assert_eq!(db.check_pages().unwrap(), Vec::<String>::new());
}

/// A transaction that replaces long values frees their overflow pages at its commit, and the
/// commit logs those frees: the log space they need is reserved by the change that defers them,
/// and a change whose commit (or abort) would not fit is refused with `LogFull` before it
/// changes anything. (The frees were not reserved: such a commit ran the log out, failed with
/// `LogFull` after appending part of its records, and poisoned the handle; the log was then too
/// full for the restart to give back the pages of the transactions it cut short.)
#[test]
fn a_commit_that_frees_overflow_pages_never_runs_the_log_out() {
    let pair = MemPair::new();
    let cfg = DbConfig {
        log_space_bytes: Some(512 << 10),
        ..config(256)
    };
    let db = Db::open(pair.devices(), cfg.clone()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut oracle = Oracle::new(&["t"]);
    // Twelve values of ten overflow pages each, one transaction each.
    for i in 0..12u64 {
        let mut x = db.begin().unwrap();
        let (k, v) = (key(i, 24), value(i, 40_000));
        x.put(&t, &k, &v).unwrap();
        x.commit().unwrap();
        oracle.put("t", &k, &v);
    }
    // One transaction replaces them with short values: its commit frees 120 pages, logging two
    // page images for each (about 1 MB, twice the log).
    let mut x = db.begin().unwrap();
    let mut replaced = Vec::new();
    for i in 0..12u64 {
        let k = key(i, 24);
        match x.put(&t, &k, b"short") {
            Ok(_) => replaced.push(k),
            Err(Error::LogFull(_)) => break,
            Err(e) => panic!("put {i}: {e}"),
        }
    }
    x.commit().unwrap();
    assert!(
        !replaced.is_empty() && replaced.len() < 12,
        "{} replaced",
        replaced.len()
    );
    for k in &replaced {
        oracle.put("t", k, b"short");
    }
    oracle.check(&db, "after the commit");
    // The handle is sound: more work commits.
    let mut x = db.begin().unwrap();
    x.put(&t, b"after", b"works").unwrap();
    x.commit().unwrap();
    oracle.put("t", b"after", b"works");
    db.verify().unwrap();
    assert_eq!(db.check_pages().unwrap(), Vec::<String>::new());
    drop(db);
    let db = Db::open(pair.devices(), cfg).unwrap();
    oracle.check(&db, "after a restart");
    assert_eq!(db.check_pages().unwrap(), Vec::<String>::new());
}

/// A log table that cannot hold a leaf split (two leaves and their parent) is refused at open:
/// such a database opened, but every write failed with `TableFull` (20 pages with a 0.13 share
/// leave the table 2 pages), so it could hold nothing.
#[test]
fn a_table_too_small_for_a_leaf_split_is_refused_at_open() {
    let small = |buffer_pages, table_fraction| DbConfig {
        flushless: Some(FlushlessConfig {
            table_fraction,
            ..FlushlessConfig::default()
        }),
        ..config(buffer_pages)
    };
    let e = Db::open(MemPair::new().devices(), small(20, 0.13))
        .err()
        .expect("refused");
    assert!(
        matches!(&e, Error::Config(m) if m.contains("log table")),
        "{e}"
    );
    // Four pages are enough: a write, with a split, works.
    let cfg = small(23, 0.3);
    assert!(cfg.table_bytes() >= 4 * 4096 && cfg.frames() >= 16);
    let db = Db::open(MemPair::new().devices(), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..200u64 {
        let mut x = db.begin().unwrap();
        x.put(&t, &key(i, 24), &value(i, 100)).unwrap();
        x.commit().unwrap();
    }
    db.verify().unwrap();
}

/// Readers and plain writers run, commit and end with the core latch shared in this mode too,
/// as in the ARIES mode: a read-only transaction, `Db::get`, a transaction of leaf changes
/// (its records copied to the log at its commit) and a reader that a writer's lock refused
/// take no exclusive latch. A transaction that splits a leaf still commits exclusive. What they
/// wrote survives a checkpoint that writes the pages and a reopen.
#[test]
fn readers_and_plain_writers_run_with_the_core_latch_shared() {
    let pair = MemPair::new();
    let k = |i: u64| key(i, 12);
    let v = |i: u64, round: u64| value(i * 10 + round, 40);
    let db = Db::open(pair.devices(), config(256)).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut w = db.begin().unwrap();
    for i in 0..200u64 {
        w.put(&t, &k(i), &v(i, 1)).unwrap();
    }
    w.commit().unwrap();
    let exclusive = |db: &Db| db.stats().engine.exclusive_latches;
    let before = exclusive(&db);
    for i in 0..50u64 {
        let mut r = db.begin().unwrap();
        assert_eq!(r.get(&t, &k(i)).unwrap(), Some(v(i, 1)));
        r.commit().unwrap();
        assert_eq!(db.get(&t, &k(i + 50)).unwrap(), Some(v(i + 50, 1)));
    }
    // Writers of leaf changes: updates, a delete, a delete of a missing key; several per
    // transaction, one leaf changed twice.
    for i in 0..20u64 {
        let mut w = db.begin().unwrap();
        assert_eq!(w.get(&t, &k(i)).unwrap(), Some(v(i, 1)));
        w.put(&t, &k(i), &v(i, 2)).unwrap();
        w.put(&t, &k(i + 100), &v(i + 100, 2)).unwrap();
        w.put(&t, &k(i), &v(i, 3)).unwrap();
        w.commit().unwrap();
    }
    let mut w = db.begin().unwrap();
    w.delete(&t, &k(30)).unwrap();
    w.delete(&t, &k(5000)).unwrap();
    w.commit().unwrap();
    // The second look at the stats takes the latch once itself.
    assert_eq!(
        exclusive(&db) - before,
        1,
        "a reader or a plain writer took the core latch exclusive"
    );
    let s = db.stats().flushless.unwrap();
    assert!(s.commits_logged >= 21 && s.records_logged >= 61, "{s:?}");
    // A writer whose leaves split (200 records of 52 bytes, past the tree's last leaf) splits
    // and commits exclusive; its changes are kept.
    let before = exclusive(&db);
    let mut w = db.begin().unwrap();
    for i in 0..200u64 {
        w.put(&t, &k(1000 + i), &v(1000 + i, 1)).unwrap();
    }
    w.commit().unwrap();
    assert!(exclusive(&db) - before > 2, "a split ran shared");
    // A reader beside a live writer of another key, and a reader refused by a live writer.
    let mut w = db.begin().unwrap();
    w.put(&t, &k(25), &v(25, 2)).unwrap();
    let mut r = db.begin().unwrap();
    assert_eq!(r.get(&t, &k(26)).unwrap(), Some(v(26, 1)));
    assert!(matches!(r.get(&t, &k(25)), Err(Error::Conflict { .. })));
    r.commit().unwrap();
    w.commit().unwrap();
    // A reader refused by a live writer's lock, rolled back: it ends shared too.
    let mut w = db.begin().unwrap();
    w.put(&t, &k(26), &v(26, 2)).unwrap();
    let aborts = db.stats().flushless.unwrap().aborts;
    let before = exclusive(&db);
    let mut r = db.begin().unwrap();
    assert!(matches!(r.get(&t, &k(26)), Err(Error::Conflict { .. })));
    drop(r);
    assert_eq!(
        exclusive(&db) - before,
        1,
        "a reader's rollback ran exclusive"
    );
    assert_eq!(db.stats().flushless.unwrap().aborts, aborts + 1);
    w.commit().unwrap();
    // The pages written with their committed changes (their page LSNs the log's), then a
    // reopen that redoes nothing of theirs.
    db.checkpoint().unwrap();
    let check = |db: &Db, t: &wafer_engine::Tree| {
        for i in 0..200u64 {
            let want = match i {
                0..20 => Some(v(i, 3)),
                100..120 => Some(v(i, 2)),
                30 => None,
                25 | 26 => Some(v(i, 2)),
                _ => Some(v(i, 1)),
            };
            assert_eq!(db.get(t, &k(i)).unwrap(), want, "key {i}");
        }
        assert_eq!(db.get(t, &k(1199)).unwrap(), Some(v(1199, 1)));
        db.verify().unwrap();
    };
    check(&db, &t);
    drop(db);
    let db = Db::open(pair.devices(), config(256)).unwrap();
    let t = db.open_tree("t").unwrap();
    check(&db, &t);
}

/// A miss of a page that was not evicted dirty (no records in the log table) is read with the
/// core latch released, as in the ARIES mode; a page evicted dirty is still read with it held
/// and brought up to date from its records. Both come back right.
#[test]
fn misses_of_pages_not_evicted_dirty_are_read_with_the_latch_released() {
    let pair = MemPair::new();
    let k = |i: u64| key(i, 16);
    const N: u64 = 6000;
    let db = Db::open(pair.devices(), config(64)).unwrap();
    let t = db.create_tree("t").unwrap();
    for chunk in 0..60u64 {
        let mut w = db.begin().unwrap();
        for i in chunk * 100..(chunk + 1) * 100 {
            w.put(&t, &k(i), &value(i, 60)).unwrap();
        }
        w.commit().unwrap();
    }
    // Every committed change on the device: the pages read back next have no records.
    db.checkpoint().unwrap();
    let before = db.stats();
    for i in 0..N {
        assert_eq!(db.get(&t, &k(i)).unwrap(), Some(value(i, 60)), "key {i}");
    }
    let after = db.stats();
    let (misses, unlatched) = (
        after.pool.misses - before.pool.misses,
        after.pool.unlatched_reads - before.pool.unlatched_reads,
    );
    assert!(misses > 50, "{misses} misses");
    assert_eq!(
        unlatched, misses,
        "a clean page's miss was read with the latch held"
    );
    // Updates of every other key, then reads that evict those pages dirty: they come back by
    // on-the-fly redo (read with the latch held) with the new values.
    for i in (0..N).step_by(2) {
        let mut w = db.begin().unwrap();
        w.put(&t, &k(i), &value(i + 7, 60)).unwrap();
        w.commit().unwrap();
    }
    let redos = |db: &Db| db.stats().flushless.unwrap().table.otf_redos;
    let before = redos(&db);
    for i in 0..N {
        let want = if i % 2 == 0 {
            value(i + 7, 60)
        } else {
            value(i, 60)
        };
        assert_eq!(db.get(&t, &k(i)).unwrap(), Some(want), "key {i}");
    }
    assert!(redos(&db) > before, "no page came back by on-the-fly redo");
    db.verify().unwrap();
}
