//! The public API in its other configurations: threads committing concurrently through group
//! commit with background maintenance, 8 and 16 KiB pages, one device for data and log, file
//! devices, and a truncated log device; deferred commits; handles of another database; aborted
//! and dropped transactions.

use crate::support::{key, value, MemPair, DATA_BYTES, LOG_BYTES};
use std::time::Duration;
use wafer_engine::device::{BlockDevice, Capabilities, DeviceError, DeviceStats, MemDevice};
use wafer_engine::{Db, DbConfig, Devices, Error, GroupCommitConfig};

/// A device whose flush takes `FLUSH` of wall time, as a disk's or an SSD's sync does.
struct SlowFlush(Box<dyn BlockDevice>);

const FLUSH: Duration = Duration::from_micros(300);

impl BlockDevice for SlowFlush {
    fn capacity_bytes(&self) -> u64 {
        self.0.capacity_bytes()
    }
    fn block_bytes(&self) -> u32 {
        self.0.block_bytes()
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        self.0.read_at(offset, buf)
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.0.write_at(offset, data)
    }
    fn flush(&mut self) -> Result<(), DeviceError> {
        std::thread::sleep(FLUSH);
        self.0.flush()
    }
    fn trim(&mut self, offset: u64, len: u64) -> Result<(), DeviceError> {
        self.0.trim(offset, len)
    }
    fn capabilities(&self) -> Capabilities {
        self.0.capabilities()
    }
    fn stats(&self) -> DeviceStats {
        self.0.stats()
    }
}

/// Four threads commit with group commit while the background thread checkpoints. The log
/// flushes as a real device does, in hundreds of microseconds: a leader waits at most as long
/// as a flush takes for others to join (a log in memory flushes in microseconds, and on a busy
/// machine no other committer may run in that window, so sharing would not be certain).
#[test]
fn concurrent_threads_commit_with_group_commit_and_background_work() {
    let pair = MemPair::new();
    let devices = || {
        let d = pair.devices();
        Devices::new(d.data, Box::new(SlowFlush(d.log)))
    };
    let cfg = DbConfig {
        buffer_pages: 128,
        group_commit: GroupCommitConfig {
            max_delay_us: 2000,
            min_batch: 4,
            min_share_pct: 100,
        },
        ..DbConfig::default()
    };
    let db = Db::open(devices(), cfg.clone()).unwrap();
    let t = db.create_tree("t").unwrap();
    let bg = db.start_background(Duration::from_millis(2));
    let threads: Vec<_> = (0..4u64)
        .map(|th| {
            let db = db.clone();
            let t = t.clone();
            std::thread::spawn(move || {
                for i in 0..150u64 {
                    let k = key(th * 1000 + i, 16);
                    // Keys are disjoint per thread, so record locks never conflict.
                    let mut x = db.begin().unwrap();
                    x.put(&t, &k, &value(i, 64)).unwrap();
                    x.commit().unwrap();
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    bg.stop().unwrap();
    let s = db.stats();
    assert_eq!(s.engine.commits, 600);
    assert!(
        s.wal.commit_flushes < s.engine.commits,
        "group commit should share flushes: {} flushes for {} commits",
        s.wal.commit_flushes,
        s.engine.commits
    );
    drop(db);
    let db = Db::open(pair.devices(), cfg).unwrap();
    assert_eq!(db.verify().unwrap(), vec![("t".to_string(), 600)]);
}

#[test]
fn larger_pages_work() {
    for page_size in [8192u32, 16384] {
        let pair = MemPair::new();
        let cfg = DbConfig {
            page_size,
            buffer_pages: 64,
            ..DbConfig::default()
        };
        let db = Db::open(pair.devices(), cfg.clone()).unwrap();
        let t = db.create_tree("t").unwrap();
        // Transactions of 100 rows: the log space (the buffer pool size) bounds a transaction.
        for c in 0..20u64 {
            let mut x = db.begin().unwrap();
            for i in c * 100..(c + 1) * 100 {
                x.put(&t, &key(i, 30), &value(i, 200)).unwrap();
            }
            x.commit().unwrap();
        }
        drop(db);
        let db = Db::open(pair.devices(), cfg).unwrap();
        assert_eq!(db.verify().unwrap(), vec![("t".to_string(), 2000)]);
        // Opening with another page size is a clear error.
        drop(db);
        let other = DbConfig {
            page_size: 4096,
            ..DbConfig::default()
        };
        assert!(matches!(
            Db::open(pair.devices(), other),
            Err(Error::Config(_))
        ));
    }
}

#[test]
fn one_device_for_data_and_log_and_file_devices() {
    let dev = Box::new(MemDevice::new(48 << 20, 4096));
    let db = Db::open(
        Devices::one_device(dev, 8 << 20).unwrap(),
        DbConfig::default(),
    )
    .unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    x.put(&t, b"a", b"1").unwrap();
    x.commit().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let cfg = DbConfig {
        buffer_pages: 64,
        ..DbConfig::default()
    };
    {
        let db = Db::open(
            Devices::files(dir.path(), 16 << 20, 4 << 20).unwrap(),
            cfg.clone(),
        )
        .unwrap();
        let t = db.create_tree("t").unwrap();
        for c in 0..5u64 {
            let mut x = db.begin().unwrap();
            for i in c * 100..(c + 1) * 100 {
                x.put(&t, &key(i, 16), &value(i, 50)).unwrap();
            }
            x.commit().unwrap();
        }
    }
    let db = Db::open(Devices::files(dir.path(), 16 << 20, 4 << 20).unwrap(), cfg).unwrap();
    assert_eq!(db.verify().unwrap(), vec![("t".to_string(), 500)]);
    // While it is open, the files are locked: a second open is refused, not run beside it.
    let locked = Devices::files(dir.path(), 16 << 20, 4 << 20);
    assert!(
        matches!(
            locked,
            Err(Error::Device(
                wafer_engine::device::DeviceError::Locked { .. }
            ))
        ),
        "second open: {:?}",
        locked.err()
    );
    drop(db);
    // Other sizes on reopen, or a truncated file, are refused instead of zero-extended.
    let wrong_size = |r: Result<Devices, Error>| {
        matches!(
            r,
            Err(Error::Device(
                wafer_engine::device::DeviceError::WrongSize { .. }
            ))
        )
    };
    assert!(wrong_size(Devices::files(dir.path(), 32 << 20, 4 << 20)));
    assert!(wrong_size(Devices::files(dir.path(), 16 << 20, 2 << 20)));
    let log = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("log.wafer"))
        .unwrap();
    log.set_len(1 << 20).unwrap();
    assert!(wrong_size(Devices::files(dir.path(), 16 << 20, 4 << 20)));
}

#[test]
fn truncated_log_device_is_a_typed_error() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    db.create_tree("t").unwrap();
    drop(db);
    // Reopen with the log partition cut to a quarter of its size.
    let mut parts = pair.shared.split(&[DATA_BYTES, LOG_BYTES / 4]).unwrap();
    let log = parts.pop().unwrap();
    let data = parts.pop().unwrap();
    let r = Db::open(
        Devices::new(Box::new(data), Box::new(log)),
        DbConfig::default(),
    );
    assert!(
        matches!(
            r,
            Err(Error::Config(_)) | Err(Error::NotADatabase(_)) | Err(Error::CorruptLog { .. })
        ),
        "got {:?}",
        r.err()
    );
}

#[test]
fn checkpoints_follow_the_interval_on_the_virtual_clock() {
    let pair = MemPair::new();
    let cfg = DbConfig {
        checkpoint_interval_ms: 10,
        ..DbConfig::default()
    };
    let clock = wafer_engine::device::VirtualClock::shared();
    let db = Db::open(pair.devices().with_clock(clock.clone()), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let base = db.stats().engine.checkpoints;
    let mut x = db.begin().unwrap();
    x.put(&t, b"k", b"v").unwrap();
    x.commit().unwrap();
    clock.advance_by(5_000_000);
    db.maintenance().unwrap();
    assert_eq!(db.stats().engine.checkpoints, base, "not due after 5 ms");
    clock.advance_by(6_000_000);
    for _ in 0..4 {
        db.maintenance().unwrap();
    }
    assert_eq!(db.stats().engine.checkpoints, base + 1, "due after 11 ms");
}

#[test]
fn deferred_commit_is_durable_only_after_the_log_flush() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut a = db.begin().unwrap();
    a.put(&t, b"a", b"1").unwrap();
    let pa = a.commit_deferred().unwrap();
    let mut b = db.begin().unwrap();
    b.put(&t, b"b", b"2").unwrap();
    let pb = b.commit_deferred().unwrap();
    assert!(pb.lsn > pa.lsn);
    db.flush_log().unwrap();
    pa.finish().unwrap();
    pb.finish().unwrap();
    // A deferred commit whose record never reached the device is not committed after a crash.
    let mut c = db.begin().unwrap();
    c.put(&t, b"c", b"3").unwrap();
    let pc = c.commit_deferred().unwrap();
    assert!(matches!(
        db.begin().unwrap().get(&t, b"c"),
        Err(Error::Conflict { .. })
    ));
    drop(pc);
    drop(db);
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let t = db.open_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    assert_eq!(x.get(&t, b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(x.get(&t, b"b").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(x.get(&t, b"c").unwrap(), None);
    x.commit().unwrap();
}

#[test]
fn finishing_a_commit_before_the_flush_flushes_it() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut a = db.begin().unwrap();
    a.put(&t, b"a", b"1").unwrap();
    let pa = a.commit_deferred().unwrap();
    pa.finish().unwrap();
    drop(db);
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    // The handle from before the reopen is refused; a fresh one works.
    let mut x = db.begin().unwrap();
    assert!(matches!(x.get(&t, b"a"), Err(Error::InvalidArgument(_))));
    let t = db.open_tree("t").unwrap();
    assert_eq!(x.get(&t, b"a").unwrap().as_deref(), Some(&b"1"[..]));
    x.commit().unwrap();
    // So is a handle from another database.
    let other = Db::open(MemPair::new().devices(), DbConfig::default()).unwrap();
    let u = other.create_tree("t").unwrap();
    let mut y = db.begin().unwrap();
    assert!(matches!(
        y.put(&u, b"k", b"v"),
        Err(Error::InvalidArgument(_))
    ));
    y.commit().unwrap();
}

#[test]
fn aborted_and_dropped_transactions_leave_no_trace() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut a = db.begin().unwrap();
    for i in 0..500u64 {
        a.put(&t, &key(i, 20), &value(i, 300)).unwrap();
    }
    a.commit().unwrap();
    let mut b = db.begin().unwrap();
    for i in 0..500u64 {
        if i % 2 == 0 {
            b.delete(&t, &key(i, 20)).unwrap();
        } else {
            b.put(&t, &key(i, 20), &value(i + 1, 700)).unwrap();
        }
    }
    drop(b);
    let mut c = db.begin().unwrap();
    for i in 0..500u64 {
        assert_eq!(c.get(&t, &key(i, 20)).unwrap(), Some(value(i, 300)));
    }
    c.commit().unwrap();
    assert_eq!(db.verify().unwrap(), vec![("t".to_string(), 500)]);
}

/// Each device role's I/O is reported on its own: data and log always, undo and temp when the
/// database has them.
#[test]
fn stats_report_every_device_role() {
    let db = Db::open(Devices::memory(16 << 20, 4 << 20), DbConfig::default()).unwrap();
    let s = db.stats();
    assert!(s.undo_device.is_none() && s.temp_device.is_none());
    assert!(s.data_device.write_bytes > 0 && s.log_device.write_bytes > 0);
    drop(db);
    let devices = Devices::memory(16 << 20, 4 << 20)
        .with_undo(Box::new(MemDevice::new(1 << 20, 4096)))
        .with_temp(Box::new(MemDevice::new(2 << 20, 4096)));
    let db = Db::open(devices, DbConfig::default()).unwrap();
    let s = db.stats();
    assert_eq!(s.undo_device.map(|d| d.write_bytes), Some(0));
    assert_eq!(s.temp_device.map(|d| d.write_bytes), Some(0));
}

/// Looking trees up takes the core latch shared: `open_tree` and `tree_names` (which
/// applications may call per request) stop no other thread, and a missing tree is still a
/// typed error.
#[test]
fn tree_lookups_take_no_exclusive_latch() {
    let db = Db::open(MemPair::new().devices(), DbConfig::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    let before = db.stats().engine.exclusive_latches;
    for _ in 0..100 {
        assert_eq!(db.open_tree("t").unwrap().id(), t.id());
        assert_eq!(db.tree_names(), ["t"]);
        assert!(matches!(db.open_tree("u"), Err(Error::NoSuchTree(_))));
    }
    // `stats` itself takes the latch exclusive once.
    assert_eq!(db.stats().engine.exclusive_latches, before + 1);
}
