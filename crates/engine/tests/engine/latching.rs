//! Which operations run with the core latch shared (beside other threads) and which run alone,
//! seen through `engine.shared_ops` / `engine.shared_retries`; and that changes made with the
//! latch shared are logged like any other (a crash after them loses nothing committed).

use crate::support::{Gate, Gated, MemPair};
use std::ops::Bound;
use wafer_engine::{Db, DbConfig};

fn counts(db: &Db) -> (u64, u64) {
    let s = db.stats();
    (s.engine.shared_ops, s.engine.shared_retries)
}

/// A database on memory devices with tree "t" holding `rows`, committed in one transaction.
fn loaded(rows: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>) -> (Db, wafer_engine::Tree) {
    let db = Db::open(
        wafer_engine::Devices::memory(32 << 20, 8 << 20),
        DbConfig::default(),
    )
    .unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    for (k, v) in rows {
        x.put(&t, &k, &v).unwrap();
    }
    x.commit().unwrap();
    (db, t)
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
    // Few keys: one leaf, guarded after the first round, changed by both threads.
    let (db, t) = loaded((0..16u8).map(|k| (vec![k], 0u64.to_le_bytes().to_vec())));
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

#[test]
fn reads_outside_a_transaction_see_only_committed_values() {
    let key = |i: u32| format!("k{i:05}").into_bytes();
    let (db, t) = loaded((0..500).map(|i| (key(i), b"old".to_vec())));

    // Cached and clear of writers: read without a transaction, with the latch shared.
    let (before, commits) = (counts(&db), db.stats().engine.commits);
    assert_eq!(db.get(&t, &key(3)).unwrap().as_deref(), Some(&b"old"[..]));
    assert_eq!(db.get(&t, b"missing").unwrap(), None);
    assert_eq!(counts(&db).0, before.0 + 2, "both reads ran shared");
    assert_eq!(
        db.stats().engine.commits,
        commits,
        "and began no transaction"
    );

    // A writer's uncommitted change is never seen: the read waits it out (as a one-read
    // transaction) and then sees the outcome, the new value or, after a rollback, the old.
    for commit in [true, false] {
        let k = key(if commit { 10 } else { 11 });
        let mut w = db.begin().unwrap();
        w.put(&t, &k, b"new").unwrap();
        let retries = counts(&db).1;
        std::thread::scope(|s| {
            let reader = s.spawn(|| db.get(&t, &k).unwrap());
            std::thread::sleep(std::time::Duration::from_millis(50));
            if commit {
                w.commit().unwrap();
            } else {
                w.abort().unwrap();
            }
            let seen = reader.join().unwrap();
            let want: &[u8] = if commit { b"new" } else { b"old" };
            assert_eq!(seen.as_deref(), Some(want));
        });
        assert!(
            counts(&db).1 > retries,
            "the read was turned from the shared path"
        );
    }
}

#[test]
fn reads_outside_a_transaction_never_see_a_change_rolled_back() {
    // Writers change keys of one leaf and always roll back, under the latch shared (guarded
    // leaf) and exclusive (values long enough to split, merged back by the rollback); readers
    // outside any transaction must see only the committed values.
    let (db, t) = loaded((0..32u8).map(|k| (vec![k], b"committed".to_vec())));
    let stop = std::sync::atomic::AtomicBool::new(false);
    let reads = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        let (db, t, stop, reads) = (&db, &t, &stop, &reads);
        for th in 0..2u64 {
            s.spawn(move || {
                let mut r = th;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    r = r
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let k = [(r >> 59) as u8];
                    let v = db.get(t, &k).unwrap();
                    assert_eq!(v.as_deref(), Some(&b"committed"[..]), "key {}", k[0]);
                    reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
        let writers: Vec<_> = (0..2u64)
            .map(|th| {
                s.spawn(move || {
                    for round in 0..3000u64 {
                        let mut w = db.begin().unwrap();
                        let k = [((round * 7 + th * 13) % 32) as u8];
                        let long = round % 10 == 0;
                        let v = if long {
                            vec![b'x'; 1500]
                        } else {
                            b"poison".to_vec()
                        };
                        match w.put(t, &k, &v) {
                            Ok(_) => w.abort().unwrap(),
                            Err(wafer_engine::Error::Conflict { .. }) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    assert!(reads.load(std::sync::atomic::Ordering::Relaxed) > 0);
}

/// A transaction's noted leaf range must not outlive a structure change it did not see. Here
/// another transaction splits the leaf the first one noted and writes into it again (so the
/// leaf is changed in place with the latch shared once more); then the first one deletes a key
/// that is not there (with the latch shared) and puts keys that were in the old range but now
/// belong to the new right leaf. Each must land where a descent finds it.
#[test]
fn a_leaf_range_noted_before_a_split_is_not_used_after_it() {
    let key = |i: u64| format!("key{i:012}").into_bytes();
    let (db, t) = loaded((0..3000u64).map(|i| (key(i * 100), vec![1u8; 100])));
    let mut t1 = db.begin().unwrap();
    t1.put(&t, &key(50_001), b"first").unwrap();
    // Another transaction splits that leaf (and its neighbours), then changes it again.
    let mut t2 = db.begin().unwrap();
    for i in 0..400u64 {
        t2.put(&t, &key(50_100 + i * 7), &[2u8; 100]).unwrap();
    }
    t2.commit().unwrap();
    let mut t3 = db.begin().unwrap();
    t3.put(&t, &key(50_002), b"again").unwrap();
    t3.commit().unwrap();
    // Nothing to delete: done with the latch shared.
    assert_eq!(t1.delete(&t, &key(50_003)).unwrap(), None);
    let mine: Vec<Vec<u8>> = (0..400u64).map(|i| key(50_103 + i * 7)).collect();
    for k in &mine {
        t1.put(&t, k, b"mine").unwrap();
    }
    t1.commit().unwrap();
    for k in &mine {
        assert_eq!(
            db.get(&t, k).unwrap().as_deref(),
            Some(&b"mine"[..]),
            "{}",
            String::from_utf8_lossy(k)
        );
    }
    db.verify().unwrap();
}

/// A background checkpoint writes its batch of pages with the core latch released: while the
/// data device holds those writes back, other threads still read cached records, in and
/// outside transactions, and scan; the pages are clean once the writes went through.
#[test]
fn readers_run_while_a_background_checkpoint_writes_its_pages() {
    readers_run_while_checkpoint_pages_are_written(Db::maintenance, DbConfig::default());
}

/// So does a whole checkpoint asked for with `Db::checkpoint`, batch after batch.
#[test]
fn readers_run_while_a_whole_checkpoint_writes_its_pages() {
    readers_run_while_checkpoint_pages_are_written(Db::checkpoint, DbConfig::default());
}

/// Out of place and journaled, where page writes log their locations, a checkpoint's batch is
/// written with neither the core latch nor the log latch held (each location record takes the
/// log latch for its append): while the data device holds the batch back, other threads read,
/// scan, change a record and commit. Before, the batch held the log latch across its writes,
/// and the change waited for the device.
#[test]
fn writers_commit_while_a_checkpoint_writes_its_pages_out_of_place_and_journaled() {
    use crate::misses::{journaled, out_of_place_small_batches};
    for cfg in [out_of_place_small_batches(), journaled()] {
        readers_run_while_checkpoint_pages_are_written(Db::maintenance, cfg.clone());
        readers_run_while_checkpoint_pages_are_written(Db::checkpoint, cfg);
    }
}

/// The page cleaner writes its batch with the core latch released too: while the data device
/// holds the cleaner's writes back, another thread reads cached records and commits a change
/// of one; once the writes went through the cleaner has counted them, no checkpoint wrote a
/// page, and the change is still there.
#[test]
fn readers_and_writers_run_while_the_page_cleaner_writes_its_pages() {
    use std::sync::atomic::Ordering;
    let (gate, devices) = gated_writes();
    let cfg = DbConfig {
        // Smaller than the records, so the CLOCK hand sweeps and leaves pages for the cleaner
        // to pick; the cleaner wants most frames clean.
        buffer_pages: 48,
        cleaner_clean_fraction: 0.8,
        // Log space for the whole load: no checkpoint cleans the pages first.
        log_space_bytes: Some(6 << 20),
        ..DbConfig::default()
    };
    let db = Db::open(devices, cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    for chunk in 0..30u32 {
        let mut x = db.begin().unwrap();
        for i in chunk * 100..(chunk + 1) * 100 {
            x.put(&t, format!("k{i:06}").as_bytes(), &[7u8; 100])
                .unwrap();
        }
        x.commit().unwrap();
    }
    // The last records are in the last leaves, which were just written: cached.
    let last: Vec<String> = (2_950..3_000u32).map(|i| format!("k{i:06}")).collect();
    for k in &last {
        assert!(db.get(&t, k.as_bytes()).unwrap().is_some());
    }
    let before = db.stats();
    gate.set(true);
    let bg = {
        let db = db.clone();
        std::thread::spawn(move || db.maintenance())
    };
    while !gate.waiting.load(Ordering::SeqCst) {
        assert!(
            !bg.is_finished(),
            "the maintenance step wrote nothing: {:?}",
            db.stats().engine
        );
        std::thread::yield_now();
    }
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let other = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            for k in &last {
                assert_eq!(db.get(&t, k.as_bytes()).unwrap().unwrap(), [7u8; 100]);
            }
            let mut w = db.begin().unwrap();
            w.put(&t, b"k002999", b"changed").unwrap();
            w.commit().unwrap();
            done_tx.send(()).unwrap();
        })
    };
    let ran = done_rx.recv_timeout(std::time::Duration::from_secs(20));
    gate.set(false);
    other.join().unwrap();
    bg.join().unwrap().unwrap();
    assert!(ran.is_ok(), "other threads waited for the cleaner's writes");
    let after = db.stats();
    assert_eq!(
        after.writes.checkpoint_writes, before.writes.checkpoint_writes,
        "a checkpoint ran: the held write was not the cleaner's"
    );
    assert!(
        after.engine.cleaner_writes > before.engine.cleaner_writes,
        "the cleaner wrote nothing"
    );
    assert_eq!(
        db.get(&t, b"k002999").unwrap().as_deref(),
        Some(&b"changed"[..])
    );
    db.verify().unwrap();
}

/// In-memory devices whose data device holds writes back while the gate is shut.
fn gated_writes() -> (std::sync::Arc<Gate>, wafer_engine::Devices) {
    use wafer_engine::device::MemDevice;
    let gate = std::sync::Arc::new(Gate::default());
    let devices = wafer_engine::Devices::new(
        Box::new(Gated {
            inner: Box::new(MemDevice::new(32 << 20, 4096)),
            gate: gate.clone(),
            reads: false,
        }),
        Box::new(MemDevice::new(8 << 20, 4096)),
    );
    (gate, devices)
}

/// In place a checkpoint batch's writer gives its ticket back once it holds the write path's
/// mutex (its writes log nothing), so an operation that takes the core latch exclusive and does
/// not need the write path goes on while the batch is at the device: here the rollback of a
/// change. (Out of place and journaled it waits for the batch, as it waited for the log latch
/// before.) With the ticket held to the end of the write, it waits the whole 20 s.
#[test]
fn in_place_an_exclusive_operation_goes_on_while_a_checkpoint_writes_its_pages() {
    let (gate, devices) = gated_writes();
    let (db, t) = three_thousand_records(devices, DbConfig::default());
    let change_and_abort = {
        let t = t.clone();
        move |db: &Db| {
            let mut w = db.begin().unwrap();
            w.put(&t, b"k000042", b"changed").unwrap();
            w.abort().unwrap();
        }
    };
    // Such a rollback takes the core latch exclusive (`Db::stats` counts its own take too).
    let before = db.stats().engine.exclusive_latches;
    change_and_abort(&db);
    let took = db.stats().engine.exclusive_latches - before;
    assert!(
        took > 1,
        "the rollback did not take the core latch exclusive"
    );
    let ran = beside_a_held_checkpoint(&gate, &db, Db::checkpoint, move |db| change_and_abort(&db));
    assert!(
        ran,
        "an exclusive operation waited for the checkpoint's page writes"
    );
    assert_eq!(
        db.get(&t, b"k000042").unwrap().as_deref(),
        Some(&[7u8; 100][..])
    );
    db.verify().unwrap();
}

/// A database on `devices` with tree "t" holding keys k000000..k002999, each a 100-byte value
/// of 7s, committed in one transaction.
pub(crate) fn three_thousand_records(
    devices: wafer_engine::Devices,
    cfg: DbConfig,
) -> (Db, wafer_engine::Tree) {
    let db = Db::open(devices, cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    for i in 0..3_000u32 {
        x.put(&t, format!("k{i:06}").as_bytes(), &[7u8; 100])
            .unwrap();
    }
    x.commit().unwrap();
    (db, t)
}

/// Runs `checkpoint` on a thread until its first page write waits at the shut `gate`, then
/// `work` on another; opens the gate once `work` is done or 20 s have passed, and joins both
/// (the checkpoint must succeed). Whether `work` finished while the write was held.
pub(crate) fn beside_a_held_checkpoint(
    gate: &Gate,
    db: &Db,
    checkpoint: fn(&Db) -> wafer_engine::Result<()>,
    work: impl FnOnce(Db) + Send + 'static,
) -> bool {
    use std::sync::atomic::Ordering;
    gate.set(true);
    let bg = {
        let db = db.clone();
        std::thread::spawn(move || checkpoint(&db))
    };
    while !gate.waiting.load(Ordering::SeqCst) {
        assert!(!bg.is_finished(), "the checkpoint wrote nothing");
        std::thread::yield_now();
    }
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let other = {
        let db = db.clone();
        std::thread::spawn(move || {
            work(db);
            done_tx.send(()).unwrap();
        })
    };
    let ran = done_rx.recv_timeout(std::time::Duration::from_secs(20));
    gate.set(false);
    other.join().unwrap();
    bg.join().unwrap().unwrap();
    ran.is_ok()
}

/// What another thread does beside a held checkpoint, in the three thousand records of
/// [`three_thousand_records`]: reads every seventh, reads one in a transaction and scans them
/// all, then changes `k000042` and commits.
pub(crate) fn read_scan_and_change(db: &Db, t: &wafer_engine::Tree) {
    for i in (0..3_000u32).step_by(7) {
        let k = format!("k{i:06}");
        assert_eq!(db.get(t, k.as_bytes()).unwrap().unwrap(), [7u8; 100]);
    }
    let mut r = db.begin().unwrap();
    assert!(r.get(t, b"k000042").unwrap().is_some());
    let all = r
        .scan(t, (Bound::Unbounded, Bound::Unbounded), false, 10_000)
        .unwrap();
    assert_eq!(all.len(), 3_000);
    r.commit().unwrap();
    let mut w = db.begin().unwrap();
    w.put(t, b"k000042", b"changed").unwrap();
    w.commit().unwrap();
}

/// While a checkpoint's page write is held at the data device, another thread reads and scans
/// cached records, then changes one and commits.
fn readers_run_while_checkpoint_pages_are_written(
    checkpoint: fn(&Db) -> wafer_engine::Result<()>,
    cfg: DbConfig,
) {
    let (gate, devices) = gated_writes();
    let cfg = DbConfig {
        // Every maintenance step finds a checkpoint due.
        checkpoint_interval_ms: 1,
        ..cfg
    };
    let (db, t) = three_thousand_records(devices, cfg);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let before = db.stats().writes.checkpoint_writes;
    // The checkpoint's first page write is held at the device: readers must not wait for it.
    let ran = beside_a_held_checkpoint(&gate, &db, checkpoint, {
        let t = t.clone();
        move |db| read_scan_and_change(&db, &t)
    });
    assert!(
        ran,
        "readers or a writer waited for the checkpoint's page writes"
    );
    let written = db.stats().writes.checkpoint_writes - before;
    assert!(written > 0, "the maintenance step wrote no checkpoint page");
    assert_eq!(
        db.get(&t, b"k000042").unwrap().as_deref(),
        Some(&b"changed"[..])
    );
    db.verify().unwrap();
}

/// A transaction that logged nothing is rolled back with the core latch shared: a reader that a
/// writer's lock refused, a writer refused before its first change (as `Db::get` and YCSB's
/// clients retry them, on hot keys). One with changes to undo still takes the latch exclusive.
#[test]
fn a_rollback_with_nothing_to_undo_runs_shared() {
    let key = |i: u32| format!("k{i:03}").into_bytes();
    let (db, t) = loaded((0..100).map(|i| (key(i), b"v".to_vec())));
    let exclusive = |db: &Db| db.stats().engine.exclusive_latches;
    let mut writer = db.begin().unwrap();
    writer.put(&t, &key(7), b"w").unwrap();
    let s = db.stats().engine;
    let (before, aborted) = (s.exclusive_latches, s.aborts);
    for _ in 0..10 {
        let mut r = db.begin().unwrap();
        assert!(matches!(
            r.get(&t, &key(7)),
            Err(wafer_engine::Error::Conflict { .. })
        ));
        drop(r);
        let mut w = db.begin().unwrap();
        assert_eq!(w.get(&t, &key(8)).unwrap().as_deref(), Some(&b"v"[..]));
        assert!(matches!(
            w.put(&t, &key(7), b"x"),
            Err(wafer_engine::Error::Conflict { .. })
        ));
        w.abort().unwrap();
    }
    // The first `stats` call's own exclusive latch is counted in the second.
    let s = db.stats().engine;
    assert_eq!(
        s.exclusive_latches,
        before + 1,
        "no rollback took the latch exclusive"
    );
    assert_eq!(s.aborts, aborted + 20, "each counts as an abort");
    // Their locks are gone: the writer changes the key they read.
    writer.put(&t, &key(8), b"w").unwrap();
    let before = exclusive(&db);
    writer.abort().unwrap();
    assert!(
        exclusive(&db) >= before + 2,
        "a rollback with changes runs exclusive"
    );
    assert_eq!(db.get(&t, &key(7)).unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(db.get(&t, &key(8)).unwrap().as_deref(), Some(&b"v"[..]));
}

/// The background thread's page cleaner keeps stepping, without its pause, while it finds
/// whole batches to write: with its window full of dirty pages it writes several batches at
/// once where it wrote one per step and pause (so misses out of place wrote pages ahead
/// themselves, docs/results.md). And a stop wakes the thread from its pause (60 s here).
#[test]
fn the_background_cleaner_writes_batch_after_batch_while_its_window_is_dirty() {
    let cfg = DbConfig {
        // A quarter of the leaves: the CLOCK hand sweeps and leaves dirty pages behind it,
        // for the cleaner to pick.
        buffer_pages: 256,
        cleaner_clean_fraction: 0.8,
        // Batches small enough for several in the window.
        checkpoint_batch_pages: 8,
        // Log space for the whole load: no checkpoint cleans the pages first.
        log_space_bytes: Some(16 << 20),
        ..DbConfig::default()
    };
    let batch = cfg.checkpoint_batch_pages as u64;
    let db = Db::open(MemPair::new().devices(), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    // About 700 leaves, dirty and cached.
    for chunk in 0..20u32 {
        let mut x = db.begin().unwrap();
        for i in chunk * 100..(chunk + 1) * 100 {
            x.put(&t, format!("k{i:06}").as_bytes(), &[7u8; 1200])
                .unwrap();
        }
        x.commit().unwrap();
    }
    let before = db.stats().engine.cleaner_writes;
    // A pause far longer than the test: every batch after the first comes from the burst.
    let bg = db.start_background(std::time::Duration::from_secs(60));
    let start = std::time::Instant::now();
    let mut written = 0;
    while start.elapsed() < std::time::Duration::from_secs(20) {
        written = db.stats().engine.cleaner_writes - before;
        if written >= 4 * batch {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(
        written >= 4 * batch,
        "the cleaner wrote {written} pages, batches of {batch}"
    );
    let stop = std::time::Instant::now();
    drop(bg);
    assert!(stop.elapsed() < std::time::Duration::from_secs(30));
    assert!(db.check_pages().unwrap().is_empty());
}

/// A background checkpoint behind the log (under way, the log already past a checkpoint
/// interval) is written batch after batch by `Db::start_background`, not a batch a pause: at
/// one batch a pause, an operation soon finds the log short and writes every dirty page
/// itself, in the foreground (journaled YCSB-A on two threads stalled 200 ms-1 s there:
/// docs/results.md, twenty-first run). With a pause far longer than the test, the checkpoint
/// ends only if its batches follow each other.
#[test]
fn a_background_checkpoint_behind_the_log_writes_batch_after_batch() {
    let log_space = 8u64 << 20;
    let cfg = DbConfig {
        buffer_pages: 4096,
        checkpoint_batch_pages: 32,
        log_space_bytes: Some(log_space),
        durable_commits: false,
        ..DbConfig::default()
    };
    let db = Db::open(MemPair::new().devices(), cfg.clone()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut next = 0u32;
    // Puts until the log has grown by `bytes` (the log's start stays: no checkpoint ends).
    let mut write_until = |bytes: u64| {
        while db.stats().wal.appended_bytes < bytes {
            let mut x = db.begin().unwrap();
            for _ in 0..50 {
                x.put(&t, format!("k{next:06}").as_bytes(), &[7u8; 1200])
                    .unwrap();
                next += 1;
            }
            x.commit().unwrap();
        }
    };
    // Three quarters of a checkpoint interval (half the log): a step begins a checkpoint of
    // several hundred dirty pages, and writes its first batch.
    let interval = (cfg.checkpoint_log_fill * log_space as f64) as u64;
    write_until(interval * 3 / 4 + (64 << 10));
    // (The database's creation checkpointed once.)
    let before = db.stats().engine.checkpoints;
    db.maintenance().unwrap();
    assert_eq!(db.stats().engine.checkpoints, before);
    assert!(db.stats().writes.checkpoint_writes > 0);
    // Past the interval while it is under way (no operation runs one of its own meanwhile).
    write_until(interval + (256 << 10));
    assert_eq!(db.stats().engine.checkpoints, before);
    let bg = db.start_background(std::time::Duration::from_secs(60));
    let start = std::time::Instant::now();
    while db.stats().engine.checkpoints == before
        && start.elapsed() < std::time::Duration::from_secs(20)
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(
        db.stats().engine.checkpoints,
        before + 1,
        "the background checkpoint behind the log did not end"
    );
    drop(bg);
    assert!(db.check_pages().unwrap().is_empty());
}

/// Out of place with the page cleaner on, a miss reads a staged page (written by eviction,
/// not yet stored) from the copy the write path's shared map keeps, without the write path's
/// mutex: while a checkpoint's batch holds that mutex at the device (held back here), another
/// thread's misses of staged pages return. Before, they asked the write path under its mutex
/// and waited for the whole batch (4-16 ms each on a shared disk: docs/results.md, twentieth
/// run).
#[test]
fn a_miss_reads_a_staged_page_while_a_batch_holds_the_write_path() {
    use std::sync::atomic::Ordering;
    let (gate, devices) = gated_writes();
    let cfg = DbConfig {
        buffer_pages: 32,
        log_space_bytes: Some(4 << 20),
        doublewrite: false,
        out_of_place: Some(wafer_engine::OopConfig::default()),
        cleaner_clean_fraction: 0.2,
        ..DbConfig::default()
    };
    let db = Db::open(devices, cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let key = |i: u32| format!("k{i:06}").into_bytes();
    for chunk in 0..30u32 {
        let mut x = db.begin().unwrap();
        for i in chunk * 100..(chunk + 1) * 100 {
            x.put(&t, &key(i), &[7u8; 100]).unwrap();
        }
        x.commit().unwrap();
    }
    // Every page stored, the stage empty.
    db.checkpoint().unwrap();
    // Ten leaves changed, then evicted by reads of the others: staged (fewer than a batch).
    let changed: Vec<u32> = (0..10).map(|n| 150 + n * 250).collect();
    let mut x = db.begin().unwrap();
    for &i in &changed {
        x.put(&t, &key(i), b"changed").unwrap();
    }
    x.commit().unwrap();
    for round in 0..3 {
        for i in (round..3_000).step_by(40) {
            db.get(&t, &key(i)).unwrap();
        }
    }
    // Another thread's operation first: from then on a checkpoint writes with the core latch
    // released, its end included, and misses reserve frames beside other threads.
    let other = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || db.get(&t, b"none").unwrap())
    };
    assert!(other.join().unwrap().is_none());
    // A checkpoint's batch, with the write path's mutex, waits at the device.
    gate.set(true);
    let mut x = db.begin().unwrap();
    x.put(&t, &key(2_999), b"last").unwrap();
    x.commit().unwrap();
    // (Counters take the core latch exclusive, which waits for the checkpoint's batch.)
    let misses = db.stats().pool.misses;
    let checkpoint = {
        let db = db.clone();
        std::thread::spawn(move || db.checkpoint())
    };
    while !gate.waiting.load(Ordering::SeqCst) {
        assert!(!checkpoint.is_finished(), "the checkpoint wrote nothing");
        std::thread::yield_now();
    }
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let reader = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            for &i in &changed {
                assert_eq!(
                    db.get(&t, &key(i)).unwrap().as_deref(),
                    Some(&b"changed"[..])
                );
            }
            done_tx.send(()).unwrap();
        })
    };
    let ran = done_rx.recv_timeout(std::time::Duration::from_secs(10));
    gate.set(false);
    reader.join().unwrap();
    checkpoint.join().unwrap().unwrap();
    assert!(
        ran.is_ok(),
        "misses of staged pages waited for the batch's write"
    );
    assert!(db.stats().pool.misses > misses, "the reads were not misses");
    db.verify().unwrap();
}
