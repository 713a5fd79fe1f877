//! Pages written through the stage and the device read back as written.

use super::*;

#[test]
fn writes_read_back_from_stage_and_device() {
    let mut wp = new_wp(small_cfg(Codec::Lz4), 8 << 20);
    let mut log = durable_log();
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
    let mut log = durable_log();
    let a = page(5, 10, 9, false);
    wp.write_pages(&[(5, &a)], WriteReason::Checkpoint, &mut log)
        .unwrap();
    wp.sync(&mut log).unwrap();
    assert_eq!(log.records[0].1[0].len, 4096);
    let mut buf = vec![0u8; 4096];
    wp.read_page(5, &mut buf).unwrap();
    assert_eq!(buf, a);
}
