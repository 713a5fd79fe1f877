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

/// A reader without the write path's mutex gets a staged page from `locate` itself, a stored
/// one's place (read there, it is the page), and that place is confirmed until the page moves.
#[test]
fn a_page_is_located_served_from_the_stage_and_confirmed_until_it_moves() {
    let dev = Held::new(MemDevice::new(8 << 20, 4096));
    let mut wp = OutOfPlace::create(Box::new(dev.clone()), 4096, small_cfg(Codec::Lz4)).unwrap();
    wp.set_stamp(&crate::identity::Stamp::default()).unwrap();
    let mut log = durable_log();
    let a = page(1, 10, 3, true);
    write_page(&mut wp, &mut log, 1, &a).unwrap();
    let mut buf = vec![0u8; 4096];
    assert_eq!(
        wp.locate(1, &mut buf).unwrap(),
        crate::writepath::Located::Served
    );
    assert_eq!(buf, a, "a staged page is served by locate");
    assert_eq!(
        wp.locate(7, &mut buf).unwrap(),
        crate::writepath::Located::Served
    );
    assert!(page::is_zeroed(&buf), "never written: zeros");
    wp.sync(&mut log).unwrap();
    let crate::writepath::Located::At(place) = wp.locate(1, &mut buf).unwrap() else {
        panic!("a stored page has a place");
    };
    let read = |at: u64, io: &mut [u8]| Ok(dev.lock().read_at(at, io)?);
    let (r, _) =
        crate::writepath::oop::area::read_stored(read, place.offset, place.len, 1, &mut buf);
    r.unwrap();
    assert_eq!(buf, a);
    assert!(wp.confirm(1, &place));
    assert!(!wp.confirm(2, &place), "another page's place");
    // A newer version, staged then stored elsewhere: the old place is no longer the page's.
    let b = page(1, 20, 4, true);
    write_page(&mut wp, &mut log, 1, &b).unwrap();
    assert!(
        wp.confirm(1, &place),
        "staged: the map still names the old copy"
    );
    wp.sync(&mut log).unwrap();
    assert!(!wp.confirm(1, &place), "moved");
}

/// The page reader looks places up in the area's shared map, without the write path's mutex:
/// a staged page (or one never written) it leaves to the write path; a stored page's place is
/// the one the write path gives, reads as the page and is confirmed until the page is staged
/// again (its newest copy is then in memory) or moves.
#[test]
fn the_page_reader_locates_stored_pages_and_leaves_staged_ones_to_the_write_path() {
    let dev = Held::new(MemDevice::new(8 << 20, 4096));
    let mut wp = OutOfPlace::create(Box::new(dev.clone()), 4096, small_cfg(Codec::Lz4)).unwrap();
    wp.set_stamp(&crate::identity::Stamp::default()).unwrap();
    let reader = wp
        .page_reader()
        .expect("a memory device reads from any thread");
    assert!(reader.moves() && reader.locates());
    let mut log = durable_log();
    let a = page(1, 10, 3, true);
    write_page(&mut wp, &mut log, 1, &a).unwrap();
    assert_eq!(reader.locate(1).unwrap(), None, "staged");
    assert_eq!(reader.locate(7).unwrap(), None, "never written");
    assert!(matches!(
        reader.locate(wp.area.page_capacity()),
        Err(Error::CorruptPage { .. })
    ));
    wp.sync(&mut log).unwrap();
    let mut buf = vec![0u8; 4096];
    let crate::writepath::Located::At(place) = wp.locate(1, &mut buf).unwrap() else {
        panic!("a stored page has a place");
    };
    assert_eq!(reader.locate(1).unwrap(), Some(place));
    reader.read_placed(1, &place, &mut buf).unwrap();
    assert_eq!(buf, a);
    assert!(reader.confirm(1, &place));
    assert!(!reader.confirm(2, &place), "another page's place");
    // A newer version staged: the old place is not confirmed, though the map still names it.
    let b = page(1, 20, 4, true);
    write_page(&mut wp, &mut log, 1, &b).unwrap();
    assert!(wp.confirm(1, &place) && !reader.confirm(1, &place));
    assert_eq!(reader.locate(1).unwrap(), None);
    wp.sync(&mut log).unwrap();
    let now = reader.locate(1).unwrap().expect("stored again");
    assert_ne!(now, place);
    assert!(!reader.confirm(1, &place) && reader.confirm(1, &now));
    reader.read_placed(1, &now, &mut buf).unwrap();
    assert_eq!(buf, b);
    assert_eq!(wp.check_invariants(), Ok(()));
}
