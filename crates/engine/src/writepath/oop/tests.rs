use super::*;
use crate::device::MemDevice;
use crate::page::PageType;
use crate::writepath::MemLog;

fn page(pid: PageId, lsn: Lsn, fill: u8, compressible: bool) -> Vec<u8> {
    let mut p = vec![0u8; 4096];
    page::init(&mut p, pid, PageType::Leaf);
    page::set_page_lsn(&mut p, lsn);
    let mut rng = rand_pcg::Pcg64::seed_from_u64(pid * 1000 + fill as u64);
    for b in p[page::PAGE_HEADER_BYTES..].iter_mut() {
        *b = if compressible {
            fill
        } else {
            rng.next_u64() as u8
        };
    }
    page::note_write(&mut p);
    page::seal(&mut p);
    p
}

fn small_cfg(codec: Codec) -> OopConfig {
    OopConfig {
        codec,
        zone_bytes: 64 * 1024,
        max_open_zones: 2,
        batch_pages: 8,
        ..OopConfig::default()
    }
}

fn new_wp(cfg: OopConfig, bytes: u64) -> OutOfPlace {
    let mut wp = OutOfPlace::create(Box::new(MemDevice::new(bytes, 4096)), 4096, cfg).unwrap();
    wp.finish_format().unwrap();
    wp
}

#[test]
fn writes_read_back_from_stage_and_device() {
    let mut wp = new_wp(small_cfg(Codec::Lz4), 8 << 20);
    let mut log = MemLog::default();
    let a = page(1, 10, 3, true);
    wp.write_pages(&[(1, &a)], WriteReason::Eviction, &mut log)
        .unwrap();
    let mut buf = vec![0u8; 4096];
    wp.read_page(1, &mut buf).unwrap();
    assert_eq!(buf, a, "staged page reads back");
    assert!(
        log.records.is_empty(),
        "nothing logged before the batch is written"
    );
    wp.sync(&mut log).unwrap();
    assert_eq!(log.records.len(), 1);
    assert_eq!(log.records[0].1[0].pid, 1);
    assert!(log.records[0].1[0].len < 4096, "compressed");
    wp.read_page(1, &mut buf).unwrap();
    assert_eq!(buf, a);
    wp.read_page(2, &mut buf).unwrap();
    assert!(page::is_zeroed(&buf), "never written reads as zeros");
    let c = wp.counters();
    assert_eq!(c.user_write_bytes, 4096);
    assert_eq!(c.db_write_bytes - c.metadata_bytes, 4096, "one slot");
    assert!(c.padding_bytes > 0);
}

#[test]
fn incompressible_pages_are_stored_raw() {
    let mut wp = new_wp(small_cfg(Codec::Lz4), 8 << 20);
    let mut log = MemLog::default();
    let a = page(5, 10, 9, false);
    wp.write_pages(&[(5, &a)], WriteReason::Checkpoint, &mut log)
        .unwrap();
    wp.sync(&mut log).unwrap();
    assert_eq!(log.records[0].1[0].len, 4096);
    let mut buf = vec![0u8; 4096];
    wp.read_page(5, &mut buf).unwrap();
    assert_eq!(buf, a);
}

/// Overwriting pages fills zones with garbage; GC reclaims it, the data stays readable, and
/// the bytes copied by GC show up in DB WAF.
#[test]
fn gc_reclaims_zones_and_keeps_every_page() {
    let mut wp = new_wp(small_cfg(Codec::None), 4 << 20);
    let mut log = MemLog::default();
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
    // GC forced the log past the location records of its copies before trimming victims.
    assert!(log.durable > 0);
}

/// A snapshot plus the location records after it give back the same map.
#[test]
fn snapshot_and_replay_restore_the_map() {
    let cfg = small_cfg(Codec::Lz4);
    let mut wp = new_wp(cfg.clone(), 4 << 20);
    let mut log = MemLog::default();
    let mut latest = HashMap::new();
    for i in 0..300u64 {
        let pid = i % 120;
        let p = page(pid, 10 + i, (i % 50) as u8, i % 3 == 0);
        wp.write_pages(&[(pid, &p)], WriteReason::Eviction, &mut log)
            .unwrap();
        latest.insert(pid, p);
        if i == 150 {
            wp.sync(&mut log).unwrap();
            let tag = log.next;
            wp.checkpoint(tag).unwrap();
            log.next += 1; // the checkpoint record
        }
    }
    wp.sync(&mut log).unwrap();
    let records = log.records.clone();
    let dev = std::mem::replace(&mut wp.dev, Box::new(MemDevice::new(4096 * 8, 4096)));
    let mut wp2 = OutOfPlace::open(dev, cfg).unwrap();
    wp2.recover_begin(u64::MAX).unwrap();
    for (lsn, ch) in &records {
        wp2.redo_map(*lsn, ch).unwrap();
    }
    wp2.recover_end().unwrap();
    let mut buf = vec![0u8; 4096];
    for (pid, p) in &latest {
        wp2.read_page(*pid, &mut buf).unwrap();
        assert_eq!(&buf, p, "page {pid}");
    }
    let places =
        |w: &OutOfPlace| -> Vec<(u64, u32)> { w.map.iter().map(|l| (l.off, l.len)).collect() };
    assert_eq!(places(&wp2), places(&wp));
    let valid = |w: &OutOfPlace| -> Vec<u32> { w.zones.iter().map(|z| z.valid_pages).collect() };
    assert_eq!(
        valid(&wp2),
        valid(&wp),
        "zone metadata rebuilt from the map"
    );
}

#[test]
fn bad_settings_get_config_errors() {
    let dev = || Box::new(MemDevice::new(8 << 20, 4096));
    let tiny = OopConfig {
        zone_bytes: 8192,
        ..OopConfig::default()
    };
    assert!(matches!(
        OutOfPlace::create(dev(), 16384, tiny),
        Err(Error::Config(_))
    ));
    let odd = OopConfig {
        zone_bytes: 65536 + 512,
        ..OopConfig::default()
    };
    assert!(matches!(
        OutOfPlace::create(dev(), 4096, odd),
        Err(Error::Config(_))
    ));
    // Too small a device for the open zones and the GC reserve.
    assert!(matches!(
        OutOfPlace::create(
            Box::new(MemDevice::new(256 << 10, 4096)),
            4096,
            OopConfig::default()
        ),
        Err(Error::Config(_))
    ));
}

#[test]
fn a_foreign_header_is_refused() {
    let mut dev = MemDevice::new(1 << 20, 4096);
    dev.write_at(0, &[7u8; 4096]).unwrap();
    assert!(matches!(
        OutOfPlace::open(Box::new(dev), OopConfig::default()),
        Err(Error::NotADatabase(_))
    ));
}
