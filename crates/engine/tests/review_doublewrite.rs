//! Review: the doublewrite area is "reserved even when doublewrite is off, so the setting may
//! change between runs" (docs/format.md). Copies left in it by a run with doublewrite on must
//! never be "repaired" over a newer page by a later run with doublewrite off: a torn page must
//! then be reported (CorruptPage), not silently replaced by a stale copy.

mod common;

use common::MemPair;
use std::ops::Bound;
use wafer_engine::device::BlockDevice;
use wafer_engine::{Db, DbConfig, Error};

fn cfg(doublewrite: bool) -> DbConfig {
    DbConfig {
        doublewrite,
        buffer_pages: 64,
        log_space_bytes: Some(2 << 20),
        ..DbConfig::default()
    }
}

fn put(db: &Db, k: &[u8], v: &[u8]) {
    let t = db.open_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    x.put(&t, k, v).unwrap();
    x.commit().unwrap();
}

#[test]
fn review_stale_doublewrite_copy_is_not_restored_after_switching_doublewrite_off() {
    let pair = MemPair::new();
    // Run 1, doublewrite on: the leaf (the tree's root) goes through the doublewrite area.
    let root = {
        let db = Db::open(pair.devices(), cfg(true)).unwrap();
        let t = db.create_tree("t").unwrap();
        put(&db, b"a", b"1");
        db.checkpoint().unwrap();
        t.root_page()
    };
    // Run 2, doublewrite off: the leaf is written home twice more, and changed once more in the
    // log only; then the power fails while its home is being written (torn).
    {
        let db = Db::open(pair.devices(), cfg(false)).unwrap();
        put(&db, b"b", b"2");
        db.checkpoint().unwrap();
        put(&db, b"c", b"3");
    }
    {
        let mut dev = pair.shared.lock();
        let home = (1 + 64 + root) * 4096;
        let mut buf = vec![0u8; 4096];
        dev.read_at(home, &mut buf).unwrap();
        buf[2048..].fill(0);
        dev.write_at(home, &buf).unwrap();
    }
    match Db::open(pair.devices(), cfg(false)) {
        Err(Error::CorruptPage { .. }) => {} // detected: fine without doublewrite
        Err(e) => panic!("unexpected error {e}"),
        Ok(db) => {
            let t = db.open_tree("t").unwrap();
            let mut x = db.begin().unwrap();
            let rows = x
                .scan(&t, (Bound::Unbounded, Bound::Unbounded), false, 100)
                .unwrap();
            let keys: Vec<&[u8]> = rows.iter().map(|(k, _)| &k[..]).collect();
            assert_eq!(
                keys,
                vec![&b"a"[..], b"b", b"c"],
                "a stale doublewrite copy replaced the torn page: committed rows lost"
            );
        }
    }
}

/// `OpenMode::Create` formats the devices "destroying what they hold". If the data device held
/// an older database and the log device is new (a recreated log file), the old pages keep page
/// LSNs higher than the new log's: redo must still not skip the new database's records because
/// of them, and no old row may reappear.
#[test]
fn review_create_over_an_old_database_with_a_new_log_does_not_resurrect_old_pages() {
    use wafer_engine::device::{MemDevice, SharedDevice};
    use wafer_engine::Devices;
    let data = SharedDevice::shared(MemDevice::new(16 << 20, 4096));
    let part = |d: &SharedDevice| d.partition(0, 16 << 20).unwrap();
    // The old database: many rows, so its pages carry large LSNs.
    {
        let log = MemDevice::new(8 << 20, 4096);
        let db = Db::open(
            Devices::new(Box::new(part(&data)), Box::new(log)),
            cfg(true),
        )
        .unwrap();
        let t = db.create_tree("old").unwrap();
        for c in 0..40u64 {
            let mut x = db.begin().unwrap();
            for i in 0..50u64 {
                x.put(&t, format!("old{c:03}{i:03}").as_bytes(), &[b'o'; 200])
                    .unwrap();
            }
            x.commit().unwrap();
        }
        db.close().unwrap();
    }
    // A new database on the same data device, with a new (blank) log device.
    let log = SharedDevice::shared(MemDevice::new(8 << 20, 4096));
    let devices = |log: &SharedDevice| {
        Devices::new(
            Box::new(part(&data)),
            Box::new(log.partition(0, 8 << 20).unwrap()),
        )
    };
    {
        let create = DbConfig {
            open_mode: wafer_engine::OpenMode::Create,
            ..cfg(true)
        };
        let db = Db::open(devices(&log), create).unwrap();
        let t = db.create_tree("new").unwrap();
        let mut x = db.begin().unwrap();
        x.put(&t, b"fresh", b"row").unwrap();
        x.commit().unwrap();
        // Power fails before any checkpoint writes the new pages home.
    }
    let db = Db::open(devices(&log), cfg(true)).unwrap();
    assert_eq!(db.tree_names(), vec!["new".to_string()]);
    let t = db.open_tree("new").unwrap();
    let mut x = db.begin().unwrap();
    let rows = x
        .scan(&t, (Bound::Unbounded, Bound::Unbounded), false, 4)
        .unwrap();
    let keys: Vec<String> = rows
        .iter()
        .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
        .collect();
    assert_eq!(
        keys,
        vec!["fresh".to_string()],
        "pages of the old database shadow the new database's logged changes"
    );
}
