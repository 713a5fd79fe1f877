//! Map snapshots and recovery from a snapshot plus the location records after it.

use super::*;
use crate::device::{FaultConfig, FaultDevice};
use crate::writepath::LogSink;
use rand::Rng;
use rand_pcg::Pcg64Mcg;
use std::collections::HashMap;

/// A snapshot plus the location records after it give back the same map.
#[test]
fn snapshot_and_replay_restore_the_map() {
    let cfg = small_cfg(Codec::Lz4);
    let dev = Held::new(MemDevice::new(4 << 20, 4096));
    let mut wp = OutOfPlace::create(Box::new(dev.clone()), 4096, cfg.clone()).unwrap();
    wp.set_stamp(&crate::identity::Stamp::default()).unwrap();
    let mut log = durable_log();
    let mut latest = HashMap::new();
    let mut tag = 0;
    for i in 0..300u64 {
        let pid = i % 120;
        let p = page(pid, 10 + i, (i % 50) as u8, i % 3 == 0);
        wp.write_pages(&[(pid, &p)], WriteReason::Eviction, &mut log)
            .unwrap();
        latest.insert(pid, p);
        if i == 150 {
            wp.sync(&mut log).unwrap();
            tag = log.next;
            wp.checkpoint(tag, 0, 0).unwrap();
            log.next += 1; // the checkpoint record
        }
    }
    wp.sync(&mut log).unwrap();
    let records = log.records.clone();
    let mut wp2 = OutOfPlace::open(Box::new(dev.clone()), cfg).unwrap();
    wp2.recover_begin(tag).unwrap();
    for (lsn, ch) in &records {
        wp2.redo_map(*lsn, ch).unwrap();
    }
    wp2.recover_end().unwrap();
    let mut buf = vec![0u8; 4096];
    for (pid, p) in &latest {
        wp2.read_page(*pid, &mut buf).unwrap();
        assert_eq!(&buf, p, "page {pid}");
    }
    assert_eq!(wp2.check_invariants(), Ok(()));
    let places = |w: &OutOfPlace| -> Vec<(u64, u32)> {
        w.area.map().iter().map(|l| (l.off, l.len)).collect()
    };
    assert_eq!(places(&wp2), places(&wp));
    let valid =
        |w: &OutOfPlace| -> Vec<u32> { w.area.zones().iter().map(|z| z.valid_pages).collect() };
    assert_eq!(
        valid(&wp2),
        valid(&wp),
        "zone metadata rebuilt from the map"
    );
}

/// A checkpoint whose snapshot was written but whose record was never logged (its append
/// failed without poisoning, e.g. `LogFull` in a checkpoint run by `ensure_log_space`) is
/// retried: the retry must not overwrite the slot holding the snapshot of the last complete
/// checkpoint, or a crash leaves no snapshot with a tag <= that checkpoint.
#[test]
fn retried_checkpoint_keeps_the_last_valid_snapshot() {
    let cfg = tiny_cfg();
    let dev = Held::new(FaultDevice::new(
        MemDevice::new(1 << 20, 4096),
        FaultConfig {
            lose_unflushed: true,
            ..FaultConfig::default()
        },
    ));
    let mut wp = OutOfPlace::create(Box::new(dev.clone()), 4096, cfg.clone()).unwrap();
    wp.set_stamp(&crate::identity::Stamp::default()).unwrap();
    let mut log = MemLog {
        next: 1,
        ..MemLog::default()
    };
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    for pid in 0..20 {
        log.next += 10;
        let p = page_image(pid, log.next, 4096, &mut rng);
        write_page(&mut wp, &mut log, pid, &p).unwrap();
    }
    // Complete checkpoint at C.
    wp.sync(&mut log).unwrap();
    let c = log.next;
    wp.checkpoint(c, 0, 0).unwrap();
    log.next += 1;
    log.force(c).unwrap();
    wp.checkpoint_done();
    // Two attempts whose checkpoint records are never logged.
    for _ in 0..2 {
        wp.sync(&mut log).unwrap();
        wp.checkpoint(log.next, 0, 0).unwrap();
        log.next += 5; // the failed append reserved nothing; other records follow
    }
    drop(wp);
    dev.lock().crash();
    let mut wp = OutOfPlace::open(Box::new(dev.clone()), cfg).unwrap();
    wp.recover_begin(c)
        .expect("recovery must find the snapshot of the last complete checkpoint");
}

/// Guard (passes): 8 KiB and 16 KiB pages, compressed and raw, with GC, carried pages and
/// slot trims, read back after sync + checkpoint + reopen/recovery.
#[test]
fn large_pages_round_trip_through_gc_and_recovery() {
    for (ps, codec) in [
        (8192usize, Codec::Lz4),
        (16384, Codec::Lz4),
        (16384, Codec::None),
    ] {
        let cfg = OopConfig {
            codec,
            gdt: true,
            zone_bytes: 128 * 1024,
            max_open_zones: 2,
            batch_pages: 8,
            ..OopConfig::default()
        };
        let dev = Held::new(MemDevice::new(4 << 20, 4096));
        let mut wp = OutOfPlace::create(Box::new(dev.clone()), ps as u32, cfg.clone()).unwrap();
        wp.set_stamp(&crate::identity::Stamp::default()).unwrap();
        let mut log = MemLog {
            next: 1,
            ..MemLog::default()
        };
        wp.checkpoint(1, 0, 0).unwrap();
        log.next = 2;
        let mut ckpt = 1;
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let n = wp.page_capacity() / 3;
        let mut want = std::collections::BTreeMap::new();
        for step in 0..6 * n {
            let pid = rng.random_range(0..n);
            log.next += 10;
            let p = page_image(pid, log.next, ps, &mut rng);
            write_page(&mut wp, &mut log, pid, &p).unwrap();
            want.insert(pid, p);
            if step % 7 == 0 {
                wp.maintain(&mut log).unwrap();
            }
            if step % 97 == 96 {
                wp.sync(&mut log).unwrap();
                ckpt = log.next;
                wp.checkpoint(ckpt, 0, 0).unwrap();
                log.next += 1;
                log.force(ckpt).unwrap();
            }
        }
        let mut buf = vec![0u8; ps];
        for (pid, p) in &want {
            wp.read_page(*pid, &mut buf).unwrap();
            assert!(&buf == p, "live {ps} {codec:?} page {pid}");
        }
        wp.sync(&mut log).unwrap();
        log.force(log.next).unwrap();
        eprintln!(
            "{ps} {codec:?}: GC rounds {}, zones reclaimed {}",
            wp.counters().gc_rounds,
            wp.counters().zones_reclaimed
        );
        drop(wp);
        let mut wp = OutOfPlace::open(Box::new(dev.clone()), cfg).unwrap();
        wp.recover_begin(ckpt).unwrap();
        for (lsn, changes) in log.records.iter().filter(|r| r.0 >= ckpt) {
            wp.redo_map(*lsn, changes).unwrap();
        }
        wp.recover_end().unwrap();
        for (pid, p) in &want {
            wp.read_page(*pid, &mut buf).unwrap();
            assert!(&buf == p, "recovered {ps} {codec:?} page {pid}");
        }
    }
}
