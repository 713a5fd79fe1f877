//! DB garbage collection.

use super::*;
use rand::RngCore;
use std::collections::HashMap;

/// Overwriting pages fills zones with garbage; GC reclaims it, the data stays readable, and
/// the bytes copied by GC show up in DB WAF.
#[test]
fn gc_reclaims_zones_and_keeps_every_page() {
    let mut wp = new_wp(small_cfg(Codec::None), 4 << 20);
    let mut log = durable_log();
    let n = wp.page_capacity() * 8 / 10;
    let mut latest = HashMap::new();
    let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
    for round in 0..6u64 {
        for i in 0..n {
            // Skewed overwrites: low page ids far more often.
            let pid = if round == 0 {
                i
            } else {
                (rng.next_u64() % n).min(rng.next_u64() % n)
            };
            let p = page(pid, 100 + round * n + i, (pid % 200) as u8, false);
            wp.write_pages(&[(pid, &p)], WriteReason::Eviction, &mut log)
                .unwrap();
            latest.insert(pid, p);
            if i % 50 == 0 {
                wp.maintain(&mut log).unwrap();
            }
        }
    }
    wp.sync(&mut log).unwrap();
    let c = wp.counters().clone();
    assert!(c.gc_rounds > 0 && c.zones_reclaimed > 0, "{c:?}");
    assert!(c.gc_write_bytes > 0);
    assert!(c.db_waf() > 1.0);
    // Every byte written is in exactly one of the parts.
    assert_eq!(
        c.db_write_bytes,
        c.stored_user_bytes
            + c.gc_write_bytes
            + c.compensation_bytes
            + c.padding_bytes
            + c.metadata_bytes
    );
    let mut buf = vec![0u8; 4096];
    for (pid, p) in &latest {
        wp.read_page(*pid, &mut buf).unwrap();
        assert_eq!(&buf, p, "page {pid}");
    }
    // GC forced the log past the location records of its copies before trimming victims (the
    // test itself never forces it).
    assert!(log.durable > LOG_BASE);
    assert_eq!(wp.check_invariants(), Ok(()));
}

/// Dead 4 KiB slots are trimmed one by one where the device takes a trim per block at little
/// cost (the memory device), and not in a regular file, where each trim would punch a hole and
/// stall the file's other I/O: there only reclaimed zones are trimmed. Either way every page
/// reads back as last written.
#[test]
fn slots_are_trimmed_one_by_one_only_where_block_trims_are_cheap() {
    use crate::device::{BlockDevice, FileDevice};
    let dir = tempfile::tempdir().unwrap();
    let bytes = 4 << 20;
    let file = FileDevice::open(dir.path().join("dev"), Some(bytes), true).unwrap();
    assert!(!file.capabilities().block_trims);
    let devices: [(Box<dyn BlockDevice>, bool); 2] = [
        (Box::new(MemDevice::new(bytes, 4096)), true),
        (Box::new(file), false),
    ];
    for (dev, slot_trims) in devices {
        let mut wp = OutOfPlace::create(dev, 4096, small_cfg(Codec::None)).unwrap();
        wp.set_stamp(&crate::identity::Stamp::default()).unwrap();
        let mut log = durable_log();
        let n = wp.page_capacity() * 8 / 10;
        let mut latest = HashMap::new();
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        for round in 0..4u64 {
            for i in 0..n {
                let pid = if round == 0 { i } else { rng.next_u64() % n };
                let p = page(pid, 100 + round * n + i, (pid % 200) as u8, false);
                wp.write_pages(&[(pid, &p)], WriteReason::Eviction, &mut log)
                    .unwrap();
                latest.insert(pid, p);
                if i % 50 == 0 {
                    wp.maintain(&mut log).unwrap();
                }
            }
        }
        wp.sync(&mut log).unwrap();
        let c = wp.counters().clone();
        assert!(c.zones_reclaimed > 0, "{c:?}");
        assert_eq!(c.slots_trimmed > 0, slot_trims, "{c:?}");
        let mut buf = vec![0u8; 4096];
        for (pid, p) in &latest {
            wp.read_page(*pid, &mut buf).unwrap();
            assert_eq!(&buf, p, "page {pid}");
        }
    }
}
