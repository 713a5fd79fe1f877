//! A checkpoint's end beside other threads: with several threads it runs with the core latch
//! released (the data device synced and stamped, the write path's own checkpoint, the log
//! forced), and the log's master is written with the log unlocked.

use crate::latching::{beside_a_held_checkpoint, read_scan_and_change, three_thousand_records};
use crate::support::{Gate, Gated, MemPair};
use wafer_engine::{Db, DbConfig};

/// With several threads a checkpoint's end runs with the core latch released: the data device
/// synced, the write path's own checkpoint written (out of place the map snapshot, journaled
/// every journaled page moved home), the log forced, the data device stamped and the master
/// written. While the data device holds the end's first flush back, another thread reads,
/// scans, changes a record and commits; before, the end held the core latch throughout, and
/// it waited. In place (without a doublewrite buffer, whose batches flush) and out of place
/// (the checkpoint's few pages stay staged until the end), that first flush is the end's.
#[test]
fn readers_and_writers_run_while_a_checkpoint_ends() {
    use crate::misses::{journaled, out_of_place};
    let in_place = DbConfig {
        doublewrite: false,
        ..DbConfig::default()
    };
    // Each path's flush first, then a write of the end: the data device's stamp in place and
    // journaled (the header, by its magic bytes), out of place the map snapshot.
    for (cfg, end) in [
        (in_place, b"WAFERDB1"),
        (out_of_place(), b"WAFSNAP2"),
        (journaled(), b"WAFERJN1"),
    ] {
        for hold in [None, Some(&end[..])] {
            readers_run_while_a_checkpoint_ends(
                maintain_until_a_checkpoint_ends,
                cfg.clone(),
                hold,
            );
            readers_run_while_a_checkpoint_ends(Db::checkpoint, cfg.clone(), hold);
        }
    }
}

/// A maintenance step's checkpoint batch leaves the set of pages in flight as it is handed
/// back, not at the end of the step: while the data device holds back the first flush of the
/// checkpoint's end (its write path's mutex held), another thread reads every record through
/// a pool of 48 frames, evicting the pages the batch wrote (clean now) and reading them again
/// through the page reader. Before, the batch stayed in flight through the end, and each miss
/// of its pages was read under the write path's mutex, after the end (journaled YCSB-A on two
/// threads: misses waited 100-275 ms for the journal's move home, docs/results.md,
/// twenty-first run). Out of place with the page cleaner on (otherwise the checkpoint's pages,
/// still staged, are served under the mutex too).
#[test]
fn pages_a_step_wrote_are_read_again_while_its_checkpoint_ends() {
    use crate::misses::{journaled, out_of_place};
    let oop_cleaner = DbConfig {
        cleaner_clean_fraction: 0.2,
        ..out_of_place()
    };
    for cfg in [journaled(), oop_cleaner] {
        let pair = MemPair::new();
        let gate = std::sync::Arc::new(Gate::default());
        gate.flushes_only
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let cfg = DbConfig {
            buffer_pages: 48,
            log_space_bytes: Some(4 << 20),
            // Every step finds a checkpoint due; one batch holds every dirty page, so the step
            // that writes it ends the checkpoint.
            checkpoint_interval_ms: 1,
            checkpoint_batch_pages: 64,
            ..cfg
        };
        let (db, t) = three_thousand_records(crate::misses::gated(&pair, &gate, false), cfg);
        db.checkpoint().unwrap();
        // Half the pool's pages changed: the next checkpoint's batch.
        let mut x = db.begin().unwrap();
        for i in (0..3_000u32).step_by(125) {
            x.put(&t, format!("k{i:06}").as_bytes(), &[8u8; 100])
                .unwrap();
        }
        x.commit().unwrap();
        std::thread::scope(|s| {
            s.spawn(|| assert!(db.get(&t, b"k000001").unwrap().is_some()));
        });
        std::thread::sleep(std::time::Duration::from_millis(5));
        let ran = beside_a_held_checkpoint(&gate, &db, maintain_until_a_checkpoint_ends, {
            let t = t.clone();
            move |db| {
                for round in 0..2 {
                    for i in 0..3_000u32 {
                        let v = db.get(&t, format!("k{i:06}").as_bytes()).unwrap().unwrap();
                        assert_eq!(v[0], if i % 125 == 0 { 8 } else { 7 }, "{round} {i}");
                    }
                }
            }
        });
        assert!(
            ran,
            "misses of the batch's pages waited for the checkpoint's end"
        );
        db.verify().unwrap();
    }
}

/// Maintenance steps until one ends a checkpoint.
fn maintain_until_a_checkpoint_ends(db: &Db) -> wafer_engine::Result<()> {
    let before = db.stats().engine.checkpoints;
    for _ in 0..10_000 {
        db.maintenance()?;
        if db.stats().engine.checkpoints > before {
            return Ok(());
        }
    }
    panic!("no maintenance step ended a checkpoint");
}

/// [`readers_and_writers_run_while_a_checkpoint_ends`] with `checkpoint` and `cfg`, the data
/// device holding back its first flush (`hold` None) or its first write holding these bytes;
/// then the database reopens with the change.
fn readers_run_while_a_checkpoint_ends(
    checkpoint: fn(&Db) -> wafer_engine::Result<()>,
    cfg: DbConfig,
    hold: Option<&[u8]>,
) {
    let pair = MemPair::new();
    let gate = std::sync::Arc::new(Gate::default());
    match hold {
        None => gate
            .flushes_only
            .store(true, std::sync::atomic::Ordering::SeqCst),
        Some(bytes) => *gate.writes_holding.lock().unwrap() = Some(bytes.to_vec()),
    }
    let cfg = DbConfig {
        // Every maintenance step finds a checkpoint due.
        checkpoint_interval_ms: 1,
        ..cfg
    };
    let (db, t) = three_thousand_records(crate::misses::gated(&pair, &gate, false), cfg.clone());
    // A second thread's operation: from then on checkpoints end with the latch released.
    std::thread::scope(|s| {
        s.spawn(|| assert!(db.get(&t, b"k000001").unwrap().is_some()));
    });
    std::thread::sleep(std::time::Duration::from_millis(5));
    let before = db.stats().engine.checkpoints;
    let ran = beside_a_held_checkpoint(&gate, &db, checkpoint, {
        let t = t.clone();
        move |db| read_scan_and_change(&db, &t)
    });
    assert!(
        ran,
        "readers or a writer waited for the checkpoint's end (holding {:?})",
        hold.map(String::from_utf8_lossy)
    );
    assert!(db.stats().engine.checkpoints > before);
    db.verify().unwrap();
    reopens_with_the_change(db, &pair, cfg);
}

/// Closes `db` and opens it again from `pair`: the change of [`read_scan_and_change`] is there.
fn reopens_with_the_change(db: Db, pair: &MemPair, cfg: DbConfig) {
    db.close().unwrap();
    let db = Db::open(pair.devices(), cfg).unwrap();
    let t = db.open_tree("t").unwrap();
    assert_eq!(
        db.get(&t, b"k000042").unwrap().as_deref(),
        Some(&b"changed"[..])
    );
    db.verify().unwrap();
}

/// A checkpoint's end writes the log's master with the log unlocked. While the log device
/// holds that write back (the write of a block holding the master's magic), another thread
/// reads, scans, changes a record and commits, its commit not waiting for the log device
/// (`durable_commits = false`: a durable commit waits for the device behind the master write,
/// as behind any log write). Before, the master was written with the log latched, and the
/// change's first append waited for it.
#[test]
fn writers_append_while_a_checkpoint_writes_the_master() {
    let pair = MemPair::new();
    let gate = std::sync::Arc::new(Gate::default());
    *gate.writes_holding.lock().unwrap() = Some(b"WAFERLOG".to_vec());
    let mut p = pair
        .shared
        .split(&[crate::support::DATA_BYTES, crate::support::LOG_BYTES])
        .unwrap();
    let log = p.pop().unwrap();
    let data = p.pop().unwrap();
    let devices = wafer_engine::Devices::new(
        Box::new(data),
        Box::new(Gated {
            inner: Box::new(log),
            gate: gate.clone(),
            reads: false,
        }),
    );
    let cfg = DbConfig {
        durable_commits: false,
        ..DbConfig::default()
    };
    let (db, t) = three_thousand_records(devices, cfg.clone());
    // A second thread's operation: from then on checkpoints end with the latches released.
    std::thread::scope(|s| {
        s.spawn(|| assert!(db.get(&t, b"k000001").unwrap().is_some()));
    });
    let before = db.stats().engine.checkpoints;
    let ran = beside_a_held_checkpoint(&gate, &db, Db::checkpoint, {
        let t = t.clone();
        move |db| read_scan_and_change(&db, &t)
    });
    assert!(ran, "a writer waited for the master write");
    assert!(db.stats().engine.checkpoints > before);
    reopens_with_the_change(db, &pair, cfg);
}
