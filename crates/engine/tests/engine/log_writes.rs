//! Log writes with no latch held: while the log device holds a write back, other threads'
//! operations and commits go on. A full log buffer written after the operation that filled it,
//! `Db::flush_log` (the background thread's flush of buffered commits), a tree's creation and
//! a deferred commit's finish all force the log with the core and log latches let go.

use crate::support::Gate;
use wafer_engine::{Db, DbConfig};

/// With several threads, an append that fills the log buffer does not write it with the log
/// latched: the operation ends, then writes it with the log unlocked, and other threads append
/// and commit meanwhile. The log device holds back the write of a full buffer (the first write
/// holding a marked value) while another thread commits 200 transactions; before, the filling
/// append wrote the buffer with the log latched, and they all waited for it.
#[test]
fn a_full_log_buffer_is_written_while_other_threads_append() {
    use std::sync::atomic::Ordering;
    let gate = std::sync::Arc::new(Gate::default());
    let devices = crate::support::gated_log_in_memory(&gate);
    let cfg = DbConfig {
        durable_commits: false,
        log_buffer_bytes: Some(64 << 10),
        ..DbConfig::default()
    };
    let db = Db::open(devices, cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    // Another thread's operation first: with the filler's, two threads have run operations,
    // and from then on a full buffer is written outside the latch.
    let other = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || db.get(&t, b"none").unwrap())
    };
    assert!(other.join().unwrap().is_none());
    *gate.writes_holding.lock().unwrap() = Some(b"MARKED-VALUE".to_vec());
    gate.set(true);
    let filler = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            // Marked values until the buffer fills and its write waits at the gate.
            for i in 0..10_000u32 {
                let mut x = db.begin().unwrap();
                x.put(&t, format!("m{i:05}").as_bytes(), b"MARKED-VALUE")
                    .unwrap();
                x.commit().unwrap();
            }
        })
    };
    while !gate.waiting.load(Ordering::SeqCst) {
        assert!(!filler.is_finished(), "no log write reached the device");
        std::thread::yield_now();
    }
    let ran = commits_beside_a_held_write(&db, &t, &gate);
    filler.join().unwrap();
    assert!(
        ran,
        "commits waited for another thread's write of a full log buffer"
    );
    let s = db.stats();
    assert!(s.wal.buffer_full_unlatched > 0, "{:?}", s.wal);
    // Everything appended reaches the log device.
    db.flush_log().unwrap();
    let s = db.stats();
    assert!(s.wal.bytes_written >= s.wal.appended_bytes, "{:?}", s.wal);
    for i in (0..10_000u32).step_by(997) {
        assert!(db.get(&t, format!("m{i:05}").as_bytes()).unwrap().is_some());
    }
    db.verify().unwrap();
}

/// `Db::flush_log` (the background thread's flush of buffered commits, each step) writes with
/// the log unlocked: while the log device holds its write back, another thread commits 200
/// transactions. Before, it held the log latched across the write and the device's flush,
/// and every commit and update waited for it.
#[test]
fn commits_go_on_while_flush_log_writes() {
    use std::sync::atomic::Ordering;
    let gate = std::sync::Arc::new(Gate::default());
    let devices = crate::support::gated_log_in_memory(&gate);
    let cfg = DbConfig {
        durable_commits: false,
        ..DbConfig::default()
    };
    let db = Db::open(devices, cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    x.put(&t, b"marked", b"MARKED-VALUE").unwrap();
    x.commit().unwrap();
    *gate.writes_holding.lock().unwrap() = Some(b"MARKED-VALUE".to_vec());
    gate.set(true);
    let flusher = {
        let db = db.clone();
        std::thread::spawn(move || db.flush_log().unwrap())
    };
    while !gate.waiting.load(Ordering::SeqCst) {
        assert!(!flusher.is_finished(), "the flush wrote nothing");
        std::thread::yield_now();
    }
    let ran = commits_beside_a_held_write(&db, &t, &gate);
    let durable = flusher.join().unwrap();
    assert!(ran, "commits waited for flush_log's write");
    // The commits made meanwhile are flushed by the next call.
    let end = db.flush_log().unwrap();
    assert!(end > durable);
    assert!(db.get(&t, b"o00199").unwrap().is_some());
}

/// Commits 200 small transactions on another thread while a write waits at the shut `gate`;
/// returns whether they all ran within 20 s. Opens the gate after, either way.
fn commits_beside_a_held_write(db: &Db, t: &wafer_engine::Tree, gate: &Gate) -> bool {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let committer = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            for i in 0..200u32 {
                let mut x = db.begin().unwrap();
                x.put(&t, format!("o{i:05}").as_bytes(), b"other").unwrap();
                x.commit().unwrap();
            }
            done_tx.send(()).unwrap();
        })
    };
    let ran = done_rx.recv_timeout(std::time::Duration::from_secs(20));
    gate.set(false);
    committer.join().unwrap();
    ran.is_ok()
}

/// A tree's creation forces the log with no latch held: while the log device holds back the
/// write of its record (the first write holding the new tree's name), another thread commits
/// 200 transactions (buffered). Before, the creation forced the log holding the core latch
/// exclusive and the log latch, and every other thread waited for the device. A third thread
/// that looks the tree up meanwhile waits for the record: no caller learns of a tree a crash
/// could take back.
#[test]
fn a_tree_is_created_while_other_threads_commit() {
    use std::sync::atomic::Ordering;
    let gate = std::sync::Arc::new(Gate::default());
    let cfg = DbConfig {
        durable_commits: false,
        ..DbConfig::default()
    };
    let db = Db::open(crate::support::gated_log_in_memory(&gate), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    *gate.writes_holding.lock().unwrap() = Some(b"HELD-TREE-NAME".to_vec());
    gate.set(true);
    let creator = {
        let db = db.clone();
        std::thread::spawn(move || db.create_tree("HELD-TREE-NAME"))
    };
    while !gate.waiting.load(Ordering::SeqCst) {
        assert!(!creator.is_finished(), "the creation wrote nothing");
        std::thread::yield_now();
    }
    // The tree is in the catalog, its record not durable: a lookup waits for the record.
    let opener = {
        let db = db.clone();
        std::thread::spawn(move || db.open_tree("HELD-TREE-NAME"))
    };
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(
        !opener.is_finished(),
        "a tree was found before its creation was durable"
    );
    let ran = commits_beside_a_held_write(&db, &t, &gate);
    let created = creator.join().unwrap().unwrap();
    assert!(ran, "commits waited for a tree's creation to force the log");
    assert_eq!(opener.join().unwrap().unwrap().id(), created.id());
    let mut x = db.begin().unwrap();
    x.put(&created, b"k", b"v").unwrap();
    x.commit().unwrap();
    assert_eq!(db.open_tree("HELD-TREE-NAME").unwrap().id(), created.id());
    db.verify().unwrap();
}

/// A deferred commit's finish (`PendingCommit::finish` of a commit whose log was not flushed
/// yet) forces the log before it takes any latch: while the log device holds back the write
/// of its commit (the first write holding a marked value), another thread reads 200 records.
/// Before, it forced the log holding the core latch exclusive, and readers waited.
#[test]
fn a_deferred_commit_finishes_while_other_threads_read() {
    use std::sync::atomic::Ordering;
    let gate = std::sync::Arc::new(Gate::default());
    let db = Db::open(
        crate::support::gated_log_in_memory(&gate),
        DbConfig::default(),
    )
    .unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    for i in 0..200u32 {
        x.put(&t, format!("r{i:05}").as_bytes(), b"read").unwrap();
    }
    x.commit().unwrap();
    let mut x = db.begin().unwrap();
    x.put(&t, b"marked", b"MARKED-VALUE").unwrap();
    let pending = x.commit_deferred().unwrap();
    assert!(pending.lsn > 0);
    *gate.writes_holding.lock().unwrap() = Some(b"MARKED-VALUE".to_vec());
    gate.set(true);
    let finisher = std::thread::spawn(move || pending.finish());
    while !gate.waiting.load(Ordering::SeqCst) {
        assert!(!finisher.is_finished(), "the finish wrote nothing");
        std::thread::yield_now();
    }
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let reader = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            for i in 0..200u32 {
                assert!(db.get(&t, format!("r{i:05}").as_bytes()).unwrap().is_some());
            }
            done_tx.send(()).unwrap();
        })
    };
    let ran = done_rx.recv_timeout(std::time::Duration::from_secs(20));
    gate.set(false);
    reader.join().unwrap();
    finisher.join().unwrap().unwrap();
    assert!(
        ran.is_ok(),
        "readers waited for a deferred commit's log force"
    );
    assert_eq!(
        db.get(&t, b"marked").unwrap().as_deref(),
        Some(&b"MARKED-VALUE"[..])
    );
    assert!(db.stats().wal.bytes_written > 0);
}
