//! Power cuts during a sequential load, whose splits log page operations (redo tag 5); and
//! which write paths may log them.

use crate::crash::{config, oop_config, TREES};
use crate::support::{key, value, CrashRig, MemPair, Oracle};
use wafer_engine::device::FaultConfig;
use wafer_engine::OopConfig;
use wafer_engine::{Db, DbConfig, Error};

/// Sequential inserts split at the right edge: the left leaf is logged as its new link, the
/// parent as the separator it gains, internal splits as the left half kept. Power cuts at many
/// points of such a load, with doublewrite and out of place, recover the committed rows; the
/// same load logs far fewer bytes than with page images.
#[test]
fn power_cut_during_a_sequential_load_recovers_committed_state() {
    // (log bytes, rows loaded) with and without page operations.
    let mut logged = [(0u64, 0u64); 2];
    for (i, ops) in [true, false].into_iter().enumerate() {
        for (seed, cut) in [(1u64, 100u64), (2, 400), (3, 900)] {
            for cfg in [config(true), oop_config(OopConfig::default())] {
                let cfg = DbConfig {
                    log_page_ops: ops,
                    log_space_bytes: Some(4 << 20),
                    ..cfg
                };
                let (bytes, rows, _) = sequential_crash(seed, cut, cfg);
                logged[i].0 += bytes;
                logged[i].1 += rows;
            }
        }
    }
    let per_row = logged.map(|(bytes, rows)| bytes as f64 / rows.max(1) as f64);
    eprintln!("log bytes a row, with and without page operations: {per_row:.0?} {logged:?}");
    assert!(
        per_row[0] < per_row[1] * 0.7,
        "page operations should save at least 30% of a sequential load's log: {logged:?}"
    );
}

/// The same load with every split it can made beside other threads (`LeafSplits::Beside`):
/// ascending keys chain the pending splits at the right edge, so power cuts fall while
/// several are pending; recovery posts them (in place with doublewrite, without, with whole
/// images, and out of place) and the committed rows come back.
#[test]
fn power_cut_with_splits_pending_during_a_sequential_load_recovers_committed_state() {
    // A pool large enough for a full stock of frames (a sixteenth of it): the splits of a
    // chain wait for no exclusive change.
    let beside = |c: DbConfig| DbConfig {
        leaf_splits: wafer_engine::LeafSplits::Beside,
        log_space_bytes: Some(4 << 20),
        buffer_pages: 1024,
        ..c
    };
    let whole = DbConfig {
        log_page_ops: false,
        log_image_holes: false,
        ..config(false)
    };
    let mut posted = 0;
    for (seed, cut) in [(11u64, 100u64), (12, 300), (13, 600), (14, 900)] {
        for cfg in [
            config(true),
            whole.clone(),
            oop_config(OopConfig::default()),
        ] {
            let p = sequential_crash(seed, cut, beside(cfg)).2;
            eprintln!("seed {seed} cut {cut}: {p} splits posted by recovery");
            posted += p;
        }
    }
    assert!(
        posted > 10,
        "recovery posted {posted} pending splits in all"
    );
}

/// A data device formatted without a doublewrite area writes pages straight home: reopening it
/// with `doublewrite: true` is refused (a `Config` error that names the setting), and opened as
/// formatted the log uses no page operations (redo could not replay them onto a torn page), so
/// a sequential load logs as much as with them off.
#[test]
fn page_operations_follow_the_write_path_as_opened() {
    let per_row = |create: DbConfig, reopen: DbConfig| -> f64 {
        let pair = MemPair::new();
        drop(Db::open(pair.devices(), create).unwrap());
        let db = Db::open(pair.devices(), reopen).unwrap();
        let t = db.create_tree("t").unwrap();
        let before = db.stats().wal.appended_bytes;
        for b in 0..50u64 {
            let mut x = db.begin().unwrap();
            for i in 0..40 {
                x.put(&t, &key(b * 40 + i, 16), &value(b, 100)).unwrap();
            }
            x.commit().unwrap();
        }
        (db.stats().wal.appended_bytes - before) as f64 / 2000.0
    };
    let base = DbConfig {
        log_space_bytes: Some(4 << 20),
        ..DbConfig::default()
    };
    let without_area = DbConfig {
        doublewrite: false,
        doublewrite_pages: 0,
        ..base.clone()
    };
    let ops_off = DbConfig {
        log_page_ops: false,
        ..base.clone()
    };
    let with_ops = per_row(base.clone(), base.clone());
    let no_ops = per_row(base.clone(), ops_off);
    // Asking for doublewrite on a device formatted without its area is refused, saying what to
    // set; opened as formatted, the write path writes pages straight home, and structure
    // changes log images.
    let pair = MemPair::new();
    drop(Db::open(pair.devices(), without_area.clone()).unwrap());
    match Db::open(pair.devices(), base.clone()) {
        Err(Error::Config(m)) => assert!(m.contains("doublewrite = false"), "{m}"),
        other => panic!(
            "doublewrite asked on a device without its area: {:?}",
            other.err()
        ),
    }
    let as_formatted = DbConfig {
        doublewrite: false,
        ..base.clone()
    };
    let formatted_without = per_row(without_area, as_formatted);
    eprintln!("log bytes a row: {with_ops:.0} with operations, {no_ops:.0} without, {formatted_without:.0} on a device without a doublewrite area");
    assert!(with_ops < 0.7 * no_ops, "{with_ops} vs {no_ops}");
    assert!(
        (formatted_without - no_ops).abs() < 0.02 * no_ops,
        "a device without a doublewrite area logged {formatted_without:.0} bytes a row, as if \
         it used page operations ({with_ops:.0}; without them {no_ops:.0})"
    );
}

/// Loads increasing keys, 40 a transaction, until the power cut after `cut` device commands;
/// reopens and checks the rows. Returns the log bytes appended before the cut, the rows
/// inserted and the splits recovery found pending and posted.
fn sequential_crash(seed: u64, cut: u64, cfg: DbConfig) -> (u64, u64, u64) {
    let data_bytes = if cfg.out_of_place.is_some() {
        16 << 20
    } else {
        crate::support::DATA_BYTES
    };
    let rig = CrashRig::sized(
        FaultConfig {
            seed,
            torn_writes: true,
            lose_unflushed: true,
            ..FaultConfig::default()
        },
        data_bytes,
    );
    let db = Db::open(rig.devices(), cfg.clone()).unwrap();
    let tree = db.create_tree(TREES[0]).unwrap();
    let mut oracle = Oracle::new(&TREES[..1]);
    {
        let f = rig.fault.lock();
        f.handle().cut_power_at(Some(f.commands() + cut));
    }
    let (mut maybe, mut rows) = (None, 0);
    'load: for batch in 0..500u64 {
        let mut staged = oracle.clone();
        let Ok(mut t) = db.begin() else { break };
        for i in 0..40 {
            let k = key(batch * 40 + i, 16);
            let v = value(seed ^ batch, 100);
            staged.put(TREES[0], &k, &v);
            match t.put(&tree, &k, &v) {
                Ok(_) => {}
                Err(Error::Device(_) | Error::Poisoned(_)) => break 'load,
                Err(e) => panic!("seed {seed}: the load failed without a power cut: {e}"),
            }
            rows += 1;
        }
        match t.commit() {
            Ok(()) => oracle = staged,
            Err(_) => {
                maybe = Some(staged);
                break;
            }
        }
    }
    let logged = db.stats().wal.appended_bytes;
    drop(db);
    assert!(
        rig.fault.lock().crash().was_powered_off,
        "seed {seed}: no cut"
    );
    let db = Db::open(rig.devices(), cfg).unwrap();
    db.verify().unwrap();
    let posted = db.stats().recovery.map_or(0, |r| r.splits_posted);
    let got = Oracle::read(&db, &TREES[..1]);
    assert!(
        got == oracle || maybe.is_some_and(|m| m == got),
        "seed {seed} cut {cut}: {} rows recovered, {} committed",
        got.row_count(),
        oracle.row_count()
    );
    (logged, rows, posted)
}
