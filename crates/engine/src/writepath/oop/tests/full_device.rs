//! A data device that fills up: a batch flush failing with `Full` part-way keeps what it
//! accepted and logs what it wrote.

use super::*;
use crate::writepath::LogSink;
use rand::Rng;
use rand_pcg::Pcg64Mcg;

/// Writes every page id the map holds once (more than `page_capacity` lets the engine
/// allocate without compression, so the device fills as one whose data compresses less than
/// hoped), then random ones, until a write fails (the device is full). `accepted` sees each
/// page a write took; returns the page of the failing write.
fn write_until_full(
    wp: &mut OutOfPlace,
    log: &mut MemLog,
    rng: &mut Pcg64Mcg,
    mut accepted: impl FnMut(u64, Vec<u8>),
) -> Option<(u64, Vec<u8>)> {
    let cap = wp.layout().pages;
    for step in 0..4 * cap {
        let pid = if step < cap {
            step
        } else {
            rng.random_range(0..cap)
        };
        log.next += 10;
        let p = page_image(pid, log.next, 4096, rng);
        match write_page(wp, log, pid, &p) {
            Ok(()) => accepted(pid, p),
            Err(_) => return Some((pid, p)),
        }
    }
    None
}

/// A batch flush that fails with `Full` part-way must not drop pages that earlier
/// `write_pages` calls accepted (they were only staged): after the error they must still read
/// back as written (the page of the failing call may read as either version).
fn full_error_case(cfg: OopConfig, seed: u64) -> Vec<u64> {
    let dev = Held::new(MemDevice::new(1 << 20, 4096));
    let mut wp = OutOfPlace::create(Box::new(dev.clone()), 4096, cfg).unwrap();
    wp.set_stamp(&crate::identity::Stamp::default()).unwrap();
    let mut log = MemLog {
        next: 1,
        ..MemLog::default()
    };
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut accepted: std::collections::BTreeMap<u64, Vec<u8>> = Default::default();
    let (fpid, fp) = write_until_full(&mut wp, &mut log, &mut rng, |pid, p| {
        accepted.insert(pid, p);
    })
    .expect("the device never filled up");
    let mut buf = vec![0u8; 4096];
    let mut bad = Vec::new();
    for (pid, p) in &accepted {
        let r = wp.read_page(*pid, &mut buf);
        let ok = r.is_ok() && (&buf == p || (*pid == fpid && buf == fp));
        if !ok {
            bad.push(*pid);
        }
    }
    bad
}

#[test]
fn full_error_keeps_accepted_staged_pages() {
    for seed in 0..20u64 {
        for (open, batch) in [(2u32, 8u32), (4, 16), (2, 32), (3, 64)] {
            let cfg = OopConfig {
                max_open_zones: open,
                batch_pages: batch,
                ..tiny_cfg()
            };
            let bad = full_error_case(cfg, seed);
            assert!(
                bad.is_empty(),
                "seed {seed} open {open} batch {batch}: {} accepted pages read back wrong \
                 after a Full error: {:?}",
                bad.len(),
                &bad[..bad.len().min(20)]
            );
        }
    }
}

/// After a write that failed with `Full` part-way through a batch, the locations of the pages
/// that batch did write must be logged (at the latest by the next `sync`, even with an empty
/// stage), so a recovery from the log reads the versions the live write path served.
#[test]
fn full_error_still_logs_written_locations_at_sync() {
    let cfg = OopConfig {
        max_open_zones: 2,
        batch_pages: 32,
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
    let ckpt = 1;
    log.next = 2;
    log.force(1).unwrap();
    let mut rng = Pcg64Mcg::seed_from_u64(0);
    let cap = wp.layout().pages;
    let failed = write_until_full(&mut wp, &mut log, &mut rng, |_, _| {}).is_some();
    assert!(failed, "the device never filled up");
    // Everything written so far is durable and logged once sync returns Ok.
    let synced = wp.sync(&mut log);
    if synced.is_err() {
        // A sync that fails is allowed to leave things unlogged.
        return;
    }
    let durable = log.next;
    log.force(durable).unwrap();
    let mut live = Vec::new();
    let mut buf = vec![0u8; 4096];
    for pid in 0..cap {
        wp.read_page(pid, &mut buf).unwrap();
        live.push(page::page_lsn(&buf));
    }
    drop(wp);
    let mut wp = OutOfPlace::open(Box::new(dev.clone()), cfg).unwrap();
    wp.recover_begin(ckpt).unwrap();
    for (lsn, changes) in log.records.iter().filter(|r| r.0 >= ckpt) {
        wp.redo_map(*lsn, changes).unwrap();
    }
    wp.recover_end().unwrap();
    let mut diff = Vec::new();
    for pid in 0..cap {
        wp.read_page(pid, &mut buf).unwrap();
        if page::page_lsn(&buf) != live[pid as usize] {
            diff.push(pid);
        }
    }
    assert!(
        diff.is_empty(),
        "{} pages recover to another version than the live write path served after sync: {:?}",
        diff.len(),
        &diff[..diff.len().min(20)]
    );
}
