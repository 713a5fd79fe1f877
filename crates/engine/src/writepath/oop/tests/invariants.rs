//! The invariants the write path asserts in debug builds: the write-ahead rule at every data
//! write, and zones that agree with the page map (checked after every GC round and recovery).

use super::*;
use crate::writepath::LogSink;
use rand::Rng;
use rand_pcg::Pcg64Mcg;

/// A page whose LSN the log has not made durable must not reach the data device.
#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "write-ahead rule")]
fn writing_a_page_before_its_log_record_is_durable_trips_the_write_ahead_check() {
    let mut wp = new_wp(small_cfg(Codec::Lz4), 8 << 20);
    let mut log = MemLog {
        next: 20,
        ..MemLog::default()
    };
    log.force(9).unwrap();
    let p = page(1, 10, 3, true);
    let _ = wp.write_pages(&[(1, &p)], WriteReason::Eviction, &mut log);
}

/// Skewed overwrites on a tiny device (GC, NoWA compensation, carried pages, slot trims all the
/// time), checkpoints, and a recovery: the zones agree with the map throughout.
#[test]
fn zones_agree_with_the_map_through_gc_compensation_and_recovery() {
    let cfg = OopConfig {
        codec: Codec::Lz4,
        gdt: true,
        nowa: true,
        ..tiny_cfg()
    };
    let dev = Held::new(MemDevice::new(1 << 20, 4096));
    let mut wp = OutOfPlace::create(Box::new(dev.clone()), 4096, cfg.clone()).unwrap();
    wp.set_stamp(&crate::identity::Stamp::default()).unwrap();
    let mut log = MemLog {
        next: 1,
        ..MemLog::default()
    };
    wp.checkpoint(1, 0, 0).unwrap();
    log.next = 2;
    log.force(1).unwrap();
    wp.checkpoint_done();
    let mut ckpt = 1;
    let mut rng = Pcg64Mcg::seed_from_u64(17);
    let n = wp.page_capacity() / 3;
    for step in 0..3000u64 {
        let pid = if rng.random_bool(0.7) {
            rng.random_range(0..n / 4)
        } else {
            rng.random_range(0..n)
        };
        log.next += 3;
        let p = page_image(pid, log.next, 4096, &mut rng);
        write_page(&mut wp, &mut log, pid, &p).unwrap();
        if step % 16 == 0 {
            wp.maintain(&mut log).unwrap();
            assert_eq!(wp.check_invariants(), Ok(()), "step {step}");
        }
        if step % 200 == 199 {
            wp.sync(&mut log).unwrap();
            ckpt = log.next;
            wp.checkpoint(ckpt, 0, 0).unwrap();
            log.next += 1;
            log.force(ckpt).unwrap();
            wp.checkpoint_done();
        }
    }
    let c = wp.counters();
    assert!(c.gc_rounds > 0 && c.compensation_rounds > 0, "{c:?}");
    wp.sync(&mut log).unwrap();
    drop(wp);
    let mut wp = OutOfPlace::open(Box::new(dev.clone()), cfg).unwrap();
    wp.recover_begin(ckpt).unwrap();
    for (lsn, changes) in log.records.iter().filter(|r| r.0 >= ckpt) {
        wp.redo_map(*lsn, changes).unwrap();
    }
    wp.recover_end().unwrap();
    assert_eq!(wp.check_invariants(), Ok(()));
}

/// The check finds a zone whose counts disagree with the map (so the assertions above mean
/// something).
#[test]
fn the_consistency_check_finds_a_zone_that_disagrees_with_the_map() {
    let mut wp = new_wp(small_cfg(Codec::Lz4), 8 << 20);
    let mut log = durable_log();
    for pid in 0..20 {
        let p = page(pid, 1, pid as u8, true);
        write_page(&mut wp, &mut log, pid, &p).unwrap();
    }
    wp.sync(&mut log).unwrap();
    assert_eq!(wp.check_invariants(), Ok(()));
    let z = wp.area.zone_of_page(3).expect("page 3 is stored");
    wp.area.zone_mut(z).valid_bytes += 1;
    let err = wp.check_invariants().unwrap_err();
    assert!(err.contains(&format!("zone {z}")), "{err}");
}
