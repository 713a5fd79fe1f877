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
    let (gate, db) = buffered_commits_on_a_gated_log(Some(64 << 10));
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
    wait_until_held(&gate, &filler, "no log write reached the device");
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
    let (gate, db) = buffered_commits_on_a_gated_log(None);
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
    wait_until_held(&gate, &flusher, "the flush wrote nothing");
    let ran = commits_beside_a_held_write(&db, &t, &gate);
    let durable = flusher.join().unwrap();
    assert!(ran, "commits waited for flush_log's write");
    // The commits made meanwhile are flushed by the next call.
    let end = db.flush_log().unwrap();
    assert!(end > durable);
    assert!(db.get(&t, b"o00199").unwrap().is_some());
}

/// A database in memory with buffered commits (and `log_buffer_bytes`), its log device's
/// I/O through the returned gate.
fn buffered_commits_on_a_gated_log(log_buffer_bytes: Option<u64>) -> (std::sync::Arc<Gate>, Db) {
    let gate = std::sync::Arc::new(Gate::default());
    let devices = crate::support::gated_log_in_memory(&gate);
    let cfg = DbConfig {
        durable_commits: false,
        log_buffer_bytes,
        ..DbConfig::default()
    };
    (gate, Db::open(devices, cfg).unwrap())
}

/// Commits 200 small transactions on another thread while a write waits at the shut `gate`;
/// returns whether they all ran within 20 s. Opens the gate after, either way.
fn commits_beside_a_held_write(db: &Db, t: &wafer_engine::Tree, gate: &Gate) -> bool {
    let (db, t) = (db.clone(), t.clone());
    beside_a_held_write(gate, move || {
        for i in 0..200u32 {
            let mut x = db.begin().unwrap();
            x.put(&t, format!("o{i:05}").as_bytes(), b"other").unwrap();
            x.commit().unwrap();
        }
    })
}

/// Runs `work` on another thread while a write waits at the shut `gate`; returns whether it
/// finished within 20 s. Opens the gate after, either way.
fn beside_a_held_write(gate: &Gate, work: impl FnOnce() + Send + 'static) -> bool {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        work();
        done_tx.send(()).unwrap();
    });
    let ran = done_rx.recv_timeout(std::time::Duration::from_secs(20));
    gate.set(false);
    worker.join().unwrap();
    ran.is_ok()
}

/// Waits until a write of `writer` waits at the shut `gate` (`what`: the failure if the
/// writer ends first, having written nothing the gate holds).
fn wait_until_held<T>(gate: &Gate, writer: &std::thread::JoinHandle<T>, what: &str) {
    while !gate.waiting.load(std::sync::atomic::Ordering::SeqCst) {
        assert!(!writer.is_finished(), "{what}");
        std::thread::yield_now();
    }
}

/// A tree's creation forces the log with no latch held: while the log device holds back the
/// write of its record (the first write holding the new tree's name), another thread commits
/// 200 transactions (buffered). Before, the creation forced the log holding the core latch
/// exclusive and the log latch, and every other thread waited for the device. A third thread
/// that looks the tree up meanwhile waits for the record: no caller learns of a tree a crash
/// could take back.
#[test]
fn a_tree_is_created_while_other_threads_commit() {
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
    wait_until_held(&gate, &creator, "the creation wrote nothing");
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
    wait_until_held(&gate, &finisher, "the finish wrote nothing");
    let ran = {
        let (db, t) = (db.clone(), t.clone());
        beside_a_held_write(&gate, move || {
            for i in 0..200u32 {
                assert!(db.get(&t, format!("r{i:05}").as_bytes()).unwrap().is_some());
            }
        })
    };
    finisher.join().unwrap().unwrap();
    assert!(ran, "readers waited for a deferred commit's log force");
    assert_eq!(
        db.get(&t, b"marked").unwrap().as_deref(),
        Some(&b"MARKED-VALUE"[..])
    );
    assert!(db.stats().wal.bytes_written > 0);
}
