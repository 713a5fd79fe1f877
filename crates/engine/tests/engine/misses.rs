//! Misses with the core latch released: a page read (and, in place, a dirty victim written)
//! while other threads go on; failed reads and writes; frames being loaded, waited for with no
//! latch held and never evicted; and a checkpoint a write must run first, its pages written
//! outside the latch. The data device is gated (`support::Gated`) to hold an I/O back.

use crate::support::{Gate, Gated, MemPair};
use crate::write_ahead::{checkpoint_held_at, gets_return_while_held};
use std::ops::Bound;
use wafer_engine::{Db, DbConfig};

/// Data and log devices over `pair`, the data device read through `gate`.
fn gated_reads(pair: &MemPair, gate: &std::sync::Arc<Gate>) -> wafer_engine::Devices {
    gated(pair, gate, true)
}

/// Data and log devices over `pair`, the data device's reads (or writes) through `gate`.
pub(crate) fn gated(
    pair: &MemPair,
    gate: &std::sync::Arc<Gate>,
    reads: bool,
) -> wafer_engine::Devices {
    let mut p = pair
        .shared
        .split(&[crate::support::DATA_BYTES, crate::support::LOG_BYTES])
        .unwrap();
    let log = p.pop().unwrap();
    let data = p.pop().unwrap();
    gated_pair(Box::new(data), Box::new(log), gate, reads)
}

/// Data and log devices, the data device's reads (or writes) through `gate`.
fn gated_pair(
    data: Box<dyn wafer_engine::device::BlockDevice>,
    log: Box<dyn wafer_engine::device::BlockDevice>,
    gate: &std::sync::Arc<Gate>,
    reads: bool,
) -> wafer_engine::Devices {
    wafer_engine::Devices::new(
        Box::new(Gated {
            inner: data,
            gate: gate.clone(),
            reads,
        }),
        log,
    )
}

/// A database over `pair` holding 20,000 records in tree "t", checkpointed and closed: reopened,
/// its pages are read from the device as they are needed.
fn cold_records(pair: &MemPair) {
    cold_records_on(pair.devices());
}

/// [`cold_records`] on `devices`.
fn cold_records_on(devices: wafer_engine::Devices) {
    cold_records_with(devices, DbConfig::default());
}

/// [`cold_records`] on `devices`, the database created with `cfg`.
pub(crate) fn cold_records_with(devices: wafer_engine::Devices, cfg: DbConfig) {
    let db = Db::open(devices, cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    for i in 0..20_000u32 {
        x.put(
            &t,
            format!("k{i:06}").as_bytes(),
            format!("v{i}").as_bytes(),
        )
        .unwrap();
    }
    x.commit().unwrap();
    db.checkpoint().unwrap();
    db.close().unwrap();
}

/// [`cold_records`] reopened with `cfg` over a data device read through a gate (open), with the
/// pages on the way to the first key read; the last key's leaf is not in memory.
fn cold_db(cfg: DbConfig) -> (std::sync::Arc<Gate>, Db, wafer_engine::Tree) {
    cold_db_with(cfg, |d| d)
}

/// [`cold_db`] with its devices given to `devices` first (to add a role).
pub(crate) fn cold_db_with(
    cfg: DbConfig,
    devices: impl FnOnce(wafer_engine::Devices) -> wafer_engine::Devices,
) -> (std::sync::Arc<Gate>, Db, wafer_engine::Tree) {
    let pair = MemPair::new();
    cold_records(&pair);
    let gate = std::sync::Arc::new(Gate::default());
    let db = Db::open(devices(gated_reads(&pair, &gate)), cfg).unwrap();
    let t = db.open_tree("t").unwrap();
    assert_eq!(db.get(&t, b"k000000").unwrap().as_deref(), Some(&b"v0"[..]));
    (gate, db, t)
}

/// A thread that gets `key`, once an I/O of it waits at the (shut) gate.
fn get_held_at_gate(
    gate: &Gate,
    db: &Db,
    t: &wafer_engine::Tree,
    key: &'static [u8],
) -> std::thread::JoinHandle<Option<Vec<u8>>> {
    let h = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || db.get(&t, key).unwrap())
    };
    while !gate.waiting.load(std::sync::atomic::Ordering::SeqCst) {
        assert!(!h.is_finished(), "the get did not reach the device");
        std::thread::yield_now();
    }
    h
}

/// A miss reads its page with the core latch released: while the data device holds one
/// thread's read back, other threads read, change and commit records whose pages are cached.
/// Before, the miss ran with the latch exclusive and they all waited for the device.
#[test]
fn cached_operations_run_while_another_thread_reads_a_page_from_the_device() {
    let (gate, db, t) = cold_db(DbConfig::default());
    let before = db.stats().pool;
    gate.set(true);
    let cold = get_held_at_gate(&gate, &db, &t, b"k019999");
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let warm = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            assert_eq!(db.get(&t, b"k000000").unwrap().as_deref(), Some(&b"v0"[..]));
            let mut w = db.begin().unwrap();
            assert_eq!(w.get(&t, b"k000001").unwrap().as_deref(), Some(&b"v1"[..]));
            w.put(&t, b"k000001", b"changed").unwrap();
            w.commit().unwrap();
            done_tx.send(()).unwrap();
        })
    };
    let ran = done_rx.recv_timeout(std::time::Duration::from_secs(20));
    gate.set(false);
    warm.join().unwrap();
    assert_eq!(cold.join().unwrap().as_deref(), Some(&b"v19999"[..]));
    assert!(
        ran.is_ok(),
        "cached operations waited for another thread's device read"
    );
    let after = db.stats().pool;
    assert!(
        after.unlatched_reads > before.unlatched_reads,
        "the miss was not read with the latch released: {before:?} -> {after:?}"
    );
    assert_eq!(
        db.get(&t, b"k000001").unwrap().as_deref(),
        Some(&b"changed"[..])
    );
    db.verify().unwrap();
}

/// A scan whose leaves are not in memory reads them with the core latch released and then runs
/// shared, for a handful of leaves (a YCSB-E scan's): it counts as a shared operation, and
/// its pages as read without the latch. With two pages allowed (as until the twentieth
/// session) it ran exclusive from the third, and the test fails.
#[test]
fn a_scan_of_a_few_cold_leaves_reads_them_and_runs_shared() {
    let (_gate, db, t) = cold_db(DbConfig::default());
    let before = db.stats();
    let mut x = db.begin().unwrap();
    let (lo, hi) = (b"k010000".as_slice(), b"k011000".as_slice());
    let got = x
        .scan(&t, (Bound::Included(lo), Bound::Excluded(hi)), false, 5_000)
        .unwrap();
    x.commit().unwrap();
    assert_eq!(got.len(), 1_000);
    assert_eq!(got[0].0, b"k010000");
    let after = db.stats();
    let reads = after.pool.unlatched_reads - before.pool.unlatched_reads;
    assert!(
        (4..=8).contains(&reads),
        "the scan read {reads} pages with the latch released (a few leaves expected)"
    );
    assert_eq!(
        after.engine.shared_ops - before.engine.shared_ops,
        1,
        "the scan ran exclusive after its reads"
    );
}

/// Gets the last key with the device's next read corrupted (a page that fails its checksum
/// once): the value comes back right, and the corrupt read happened.
fn read_last_key_corrupted_once(gate: &Gate, db: &Db, t: &wafer_engine::Tree) {
    gate.corrupt_next_read
        .store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        db.get(t, b"k019999").unwrap().as_deref(),
        Some(&b"v19999"[..])
    );
    assert!(!gate
        .corrupt_next_read
        .load(std::sync::atomic::Ordering::SeqCst));
}

/// A read with the latch released that fails (here a page that fails its checksum once) leaves
/// the page uncached: the operation reads it again, exclusive, and every record reads back.
#[test]
fn a_failed_unlatched_read_leaves_the_page_uncached_and_is_read_again() {
    let (gate, db, t) = cold_db(DbConfig::default());
    read_last_key_corrupted_once(&gate, &db, &t);
    for i in (0..20_000u32).step_by(97) {
        let want = format!("v{i}");
        assert_eq!(
            db.get(&t, format!("k{i:06}").as_bytes())
                .unwrap()
                .as_deref(),
            Some(want.as_bytes())
        );
    }
    db.verify().unwrap();
}

/// A pool of 64 frames over 20,000 records (about 180 pages) on `pair`, with every record in
/// a stretch of 2,000 rewritten: reads over the rest bring pages in, and CLOCK picks dirty
/// victims among them.
fn small_pool_with_dirty_pages(
    pair: &MemPair,
    gate: &std::sync::Arc<Gate>,
) -> (Db, wafer_engine::Tree) {
    small_pool_with_dirty_pages_as(pair, gate, DbConfig::default())
}

/// [`small_pool_with_dirty_pages`], the database made and opened with `cfg` (its pool of 64
/// frames).
pub(crate) fn small_pool_with_dirty_pages_as(
    pair: &MemPair,
    gate: &std::sync::Arc<Gate>,
    cfg: DbConfig,
) -> (Db, wafer_engine::Tree) {
    cold_records_with(pair.devices(), cfg.clone());
    let cfg = DbConfig {
        buffer_pages: 64,
        ..cfg
    };
    let db = Db::open(gated(pair, gate, false), cfg).unwrap();
    let t = db.open_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    for i in 9_000..11_000u32 {
        x.put(
            &t,
            format!("k{i:06}").as_bytes(),
            format!("w{i}").as_bytes(),
        )
        .unwrap();
    }
    x.commit().unwrap();
    (db, t)
}

pub(crate) fn want(i: u32) -> Vec<u8> {
    let v = if (9_000..11_000).contains(&i) {
        "w"
    } else {
        "v"
    };
    format!("{v}{i}").into_bytes()
}

/// In place, a miss whose victim is dirty writes it with the core latch released: while the
/// data device holds that write back, another thread begins and commits transactions. Before,
/// the write ran under the exclusive latch and every other thread waited for the device.
#[test]
fn a_dirty_victim_is_written_with_the_core_latch_released() {
    a_dirty_victim_is_written_with_the_core_latch_released_as(DbConfig::default());
}

fn a_dirty_victim_is_written_with_the_core_latch_released_as(cfg: DbConfig) {
    let pair = MemPair::new();
    let gate = std::sync::Arc::new(Gate::default());
    let (db, t) = small_pool_with_dirty_pages_as(&pair, &gate, cfg);
    let before = db.stats().writes.eviction_writes;
    gate.set(true);
    let reader = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            // Passes over every record until CLOCK has taken a dirty victim (the frames set
            // aside for misses move the hand, so which miss meets one first varies).
            for _ in 0..4 {
                for i in (0..20_000u32).rev() {
                    let got = db.get(&t, format!("k{i:06}").as_bytes()).unwrap();
                    assert_eq!(got.as_deref(), Some(&want(i)[..]));
                }
            }
        })
    };
    while !gate.waiting.load(std::sync::atomic::Ordering::SeqCst) {
        assert!(!reader.is_finished(), "no dirty victim was written");
        std::thread::yield_now();
    }
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let other = {
        let db = db.clone();
        std::thread::spawn(move || {
            for _ in 0..10 {
                db.begin().unwrap().commit().unwrap();
            }
            done_tx.send(()).unwrap();
        })
    };
    let ran = done_rx.recv_timeout(std::time::Duration::from_secs(20));
    gate.set(false);
    other.join().unwrap();
    reader.join().unwrap();
    assert!(
        ran.is_ok(),
        "other threads waited for a dirty victim's write"
    );
    assert!(
        db.stats().writes.eviction_writes > before,
        "no dirty victim was written"
    );
    db.verify().unwrap();
}

/// A dirty victim's write that fails after the page left the pool poisons the database (its
/// changes are then only in the log); reopened, the database has every committed change.
#[test]
fn a_failed_victim_write_poisons_and_reopening_recovers_the_page() {
    let pair = MemPair::new();
    let gate = std::sync::Arc::new(Gate::default());
    let (db, t) = small_pool_with_dirty_pages(&pair, &gate);
    gate.fail_writes
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let mut failed = None;
    for i in (0..20_000u32).rev() {
        match db.get(&t, format!("k{i:06}").as_bytes()) {
            Ok(got) => assert_eq!(got.as_deref(), Some(&want(i)[..])),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    let e = failed.expect("no dirty victim was written");
    assert!(
        matches!(
            e,
            wafer_engine::Error::Device(_) | wafer_engine::Error::Poisoned(_)
        ),
        "{e:?}"
    );
    assert!(matches!(db.begin(), Err(wafer_engine::Error::Poisoned(_))));
    drop((db, t));
    gate.fail_writes
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let t = db.open_tree("t").unwrap();
    for i in 0..20_000u32 {
        let got = db.get(&t, format!("k{i:06}").as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(&want(i)[..]), "k{i:06}");
    }
    db.verify().unwrap();
}

/// Frames being loaded cannot be evicted: with the device holding reads back, 24 threads
/// missing different pages of a 16-frame pool leave no frame to take. Later misses wait for
/// those loads instead of failing with `PoolExhausted` (the pool is busy, not too small).
#[test]
fn misses_wait_for_loading_frames_rather_than_exhaust_the_pool() {
    let (gate, db, t) = cold_db(DbConfig {
        buffer_pages: 16,
        ..DbConfig::default()
    });
    gate.set(true);
    let readers: Vec<_> = (0..24u32)
        .map(|n| {
            let (db, t) = (db.clone(), t.clone());
            std::thread::spawn(move || {
                let i = 19_999 - n * 800;
                db.get(&t, format!("k{i:06}").as_bytes())
                    .map(|v| v == Some(format!("v{i}").into_bytes()))
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    gate.set(false);
    for r in readers {
        assert!(r.join().unwrap().unwrap(), "a reader got the wrong value");
    }
    db.verify().unwrap();
}

/// A thread that needs a page another thread is reading waits for it with no latch held:
/// meanwhile other threads read and change cached records and commit. Checked with a second
/// reader of the same page, and with two threads missing one page at once (one of them may
/// reserve while the other loads).
#[test]
fn waiting_for_a_page_being_loaded_holds_no_latch() {
    let (gate, db, t) = cold_db(DbConfig::default());
    for round in 0..5u32 {
        let i = 19_999 - round * 900;
        gate.waiting
            .store(false, std::sync::atomic::Ordering::SeqCst);
        gate.set(true);
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let missers: Vec<_> = (0..2)
            .map(|_| {
                let (db, t, b) = (db.clone(), t.clone(), barrier.clone());
                std::thread::spawn(move || {
                    b.wait();
                    db.get(&t, format!("k{i:06}").as_bytes()).unwrap()
                })
            })
            .collect();
        while !gate.waiting.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (tx, rx) = std::sync::mpsc::channel();
        let warm = {
            let (db, t) = (db.clone(), t.clone());
            std::thread::spawn(move || {
                for _ in 0..4 {
                    assert!(db.get(&t, b"k000000").unwrap().is_some());
                }
                let mut w = db.begin().unwrap();
                w.put(&t, b"k000001", b"changed").unwrap();
                w.commit().unwrap();
                tx.send(()).unwrap();
            })
        };
        let ran = rx.recv_timeout(std::time::Duration::from_secs(20));
        gate.set(false);
        for m in missers {
            assert_eq!(m.join().unwrap(), Some(format!("v{i}").into_bytes()));
        }
        warm.join().unwrap();
        assert!(
            ran.is_ok(),
            "round {round}: cached operations waited for a load"
        );
    }
    db.verify().unwrap();
}

/// A checkpoint that a write must run first (the log grew by a checkpoint interval, no
/// background maintenance) writes its pages with the core latch released: while the device
/// holds one of those writes back, other threads read cached records and commit.
#[test]
fn a_checkpoint_a_write_runs_first_lets_other_threads_go_on() {
    let pair = MemPair::new();
    let gate = std::sync::Arc::new(Gate::default());
    let cfg = DbConfig {
        log_space_bytes: Some(2 << 20),
        checkpoint_log_fill: 0.1,
        ..DbConfig::default()
    };
    let db = Db::open(gated(&pair, &gate, false), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    x.put(&t, b"hot", b"1").unwrap();
    x.commit().unwrap();
    gate.set(true);
    let writer = {
        let (db, t, gate) = (db.clone(), t.clone(), gate.clone());
        std::thread::spawn(move || {
            let mut i = 0u32;
            while !gate.waiting.load(std::sync::atomic::Ordering::SeqCst) {
                let mut x = db.begin().unwrap();
                for _ in 0..20 {
                    x.put(&t, format!("w{i:08}").as_bytes(), &[5u8; 200])
                        .unwrap();
                    i += 1;
                }
                x.commit().unwrap();
            }
            i
        })
    };
    while !gate.waiting.load(std::sync::atomic::Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let other = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            for _ in 0..10 {
                assert_eq!(db.get(&t, b"hot").unwrap().as_deref(), Some(&b"1"[..]));
                db.begin().unwrap().commit().unwrap();
            }
            tx.send(()).unwrap();
        })
    };
    let ran = rx.recv_timeout(std::time::Duration::from_secs(20));
    gate.set(false);
    other.join().unwrap();
    let written = writer.join().unwrap();
    assert!(
        ran.is_ok(),
        "other threads waited for a checkpoint's page writes"
    );
    assert!(db.stats().writes.checkpoint_writes > 0);
    for i in (0..written).step_by(97) {
        assert!(db.get(&t, format!("w{i:08}").as_bytes()).unwrap().is_some());
    }
    db.verify().unwrap();
}

/// Data and log files in `dir` (made on first use), the data device's reads (or writes)
/// through `gate`. Files offer reads from any thread (`BlockDevice::shared_reader`), so a
/// miss in place is read without the write path's mutex.
fn gated_files(
    dir: &std::path::Path,
    gate: &std::sync::Arc<Gate>,
    reads: bool,
) -> wafer_engine::Devices {
    use wafer_engine::device::FileDevice;
    let data = FileDevice::open(dir.join("data"), Some(crate::support::DATA_BYTES), true).unwrap();
    let log = FileDevice::open(dir.join("log"), Some(crate::support::LOG_BYTES), true).unwrap();
    gated_pair(Box::new(data), Box::new(log), gate, reads)
}

/// [`cold_records`] in files in `dir`, reopened with `cfg` and the data device's reads (or
/// writes) through a gate (open). Nothing but the meta page is in memory.
fn cold_files(
    dir: &std::path::Path,
    cfg: DbConfig,
    reads: bool,
) -> (std::sync::Arc<Gate>, Db, wafer_engine::Tree) {
    cold_files_as(dir, DbConfig::default(), cfg, reads)
}

/// [`cold_files`], the database created with `create` (the same write path as `cfg`).
fn cold_files_as(
    dir: &std::path::Path,
    create: DbConfig,
    cfg: DbConfig,
    reads: bool,
) -> (std::sync::Arc<Gate>, Db, wafer_engine::Tree) {
    let gate = std::sync::Arc::new(Gate::default());
    cold_records_with(gated_files(dir, &gate, reads), create);
    let db = Db::open(gated_files(dir, &gate, reads), cfg).unwrap();
    let t = db.open_tree("t").unwrap();
    (gate, db, t)
}

/// Settings of a database that writes pages out of place.
pub(crate) fn out_of_place() -> DbConfig {
    DbConfig {
        doublewrite: false,
        out_of_place: Some(wafer_engine::OopConfig::default()),
        ..DbConfig::default()
    }
}

/// [`out_of_place`] with batches of 4 pages: a few pages written reach the device, not only
/// the write path's stage.
pub(crate) fn out_of_place_small_batches() -> DbConfig {
    DbConfig {
        out_of_place: Some(wafer_engine::OopConfig {
            batch_pages: 4,
            ..wafer_engine::OopConfig::default()
        }),
        ..out_of_place()
    }
}

/// On files, misses of different threads read the device at the same time: while the device
/// holds one thread's read back, another thread's miss reads its page and returns. Before,
/// each read held the write path's mutex, and the second miss waited for the first.
#[test]
fn misses_of_two_threads_read_the_device_at_once_on_files() {
    let dir = tempfile::tempdir().unwrap();
    misses_read_at_once(cold_files(dir.path(), DbConfig::default(), true));
}

/// [`misses_of_two_threads_read_the_device_at_once_on_files`] out of place: the place of a
/// page is looked up under the write path's mutex, which is let go for the device read.
#[test]
fn misses_of_two_threads_read_the_device_at_once_out_of_place() {
    let dir = tempfile::tempdir().unwrap();
    misses_read_at_once(cold_files_as(
        dir.path(),
        out_of_place(),
        out_of_place(),
        true,
    ));
}

/// [`misses_of_two_threads_read_the_device_at_once_on_files`] journaled (the host moves images
/// home: the gated device offers no remap): homes are read with the mutex let go too.
#[test]
fn misses_of_two_threads_read_the_device_at_once_journaled() {
    let dir = tempfile::tempdir().unwrap();
    misses_read_at_once(cold_files_as(dir.path(), journaled(), journaled(), true));
}

/// Settings of a database that journals its page writes.
pub(crate) fn journaled() -> DbConfig {
    DbConfig {
        doublewrite: false,
        journal: Some(wafer_engine::JournalConfig::new(
            wafer_engine::HomeMethod::Host,
        )),
        ..DbConfig::default()
    }
}

fn misses_read_at_once((gate, db, t): (std::sync::Arc<Gate>, Db, wafer_engine::Tree)) {
    assert_eq!(db.get(&t, b"k000000").unwrap().as_deref(), Some(&b"v0"[..]));
    let before = db.stats();
    gate.hold_one
        .store(true, std::sync::atomic::Ordering::SeqCst);
    gate.set(true);
    let held = get_held_at_gate(&gate, &db, &t, b"k019999");
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let other = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            let got = db.get(&t, b"k010000").unwrap();
            done_tx.send(got).unwrap();
        })
    };
    let got = done_rx.recv_timeout(std::time::Duration::from_secs(20));
    gate.set(false);
    other.join().unwrap();
    assert_eq!(held.join().unwrap().as_deref(), Some(&b"v19999"[..]));
    let got = got.expect("a miss waited for another thread's device read");
    assert_eq!(got.as_deref(), Some(&b"v10000"[..]));
    let after = db.stats();
    assert!(after.pool.unlatched_reads >= before.pool.unlatched_reads + 2);
    // Reads made without the write path's mutex are counted as any other.
    assert_eq!(
        after.writes.page_reads - before.writes.page_reads,
        after.pool.misses - before.pool.misses
    );
    assert!(after.data_device.reads - before.data_device.reads >= 2);
    db.verify().unwrap();
}

/// A page whose dirty copy is being written with the latches released (a dirty victim, in
/// place) is read after that write, not from the device's older image: on files, where other
/// misses read without the write path's mutex, it is read through the mutex. A reader's misses
/// evict a changed leaf; its write is held at the device while another thread reads that
/// leaf's record.
#[test]
fn a_page_whose_write_is_in_flight_is_read_after_the_write_on_files() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = DbConfig {
        buffer_pages: 16,
        ..DbConfig::default()
    };
    let (gate, db, t) = cold_files(dir.path(), cfg, false);
    // A value of the same length: the leaf changes in place, the only page made dirty.
    let mut x = db.begin().unwrap();
    x.put(&t, b"k010000", b"Z#Q@!9").unwrap();
    x.commit().unwrap();
    *gate.writes_holding.lock().unwrap() = Some(b"Z#Q@!9".to_vec());
    gate.set(true);
    let evictor = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || {
            for i in (10_001..20_000u32).chain(0..10_000).step_by(50) {
                let got = db.get(&t, format!("k{i:06}").as_bytes()).unwrap();
                assert_eq!(got, Some(format!("v{i}").into_bytes()));
            }
        })
    };
    while !gate.waiting.load(std::sync::atomic::Ordering::SeqCst) {
        std::thread::yield_now();
    }
    // The evictor's write of the changed leaf is held at the device.
    let reader = {
        let (db, t) = (db.clone(), t.clone());
        std::thread::spawn(move || db.get(&t, b"k010000").unwrap())
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    gate.set(false);
    evictor.join().unwrap();
    assert_eq!(
        reader.join().unwrap().as_deref(),
        Some(&b"Z#Q@!9"[..]),
        "a page was read while its newer image was being written"
    );
    assert!(db.stats().writes.eviction_writes >= 1);
    db.verify().unwrap();
}

/// On files, a read without the write path's mutex that fails (a page that fails its checksum
/// once) is read again through the write path: the record reads back, and the database is
/// not poisoned.
#[test]
fn a_failed_read_without_the_mutex_is_read_again_through_the_write_path() {
    let dir = tempfile::tempdir().unwrap();
    failed_read_again(cold_files(dir.path(), DbConfig::default(), true));
    let dir = tempfile::tempdir().unwrap();
    failed_read_again(cold_files_as(
        dir.path(),
        out_of_place(),
        out_of_place(),
        true,
    ));
    let dir = tempfile::tempdir().unwrap();
    failed_read_again(cold_files_as(dir.path(), journaled(), journaled(), true));
}

fn failed_read_again((gate, db, t): (std::sync::Arc<Gate>, Db, wafer_engine::Tree)) {
    assert_eq!(db.get(&t, b"k000000").unwrap().as_deref(), Some(&b"v0"[..]));
    let before = db.stats().writes.page_reads;
    read_last_key_corrupted_once(&gate, &db, &t);
    assert_eq!(db.stats().writes.page_reads - before, 2, "read twice");
    db.begin().unwrap().commit().unwrap();
    db.verify().unwrap();
}

/// Journaled, a miss looks its page's place up and confirms it without the write path's mutex
/// (the journal map is shared with the page reader: `writepath/journal/places.rs`), so it does
/// not wait for the write path's device I/O: while the device holds a checkpoint's journal
/// append back, under that mutex, another thread reads records whose pages are not cached.
/// Before, its look-up waited for the append (and for the journal's own checkpoint, which
/// moves every journaled page home from inside a write).
#[test]
fn a_journaled_miss_does_not_wait_for_the_write_paths_device_io() {
    miss_beside_a_held_write(journaled());
}

/// Out of place likewise (the area's shared copy of the page map,
/// `writepath/oop/area/shared.rs`): while the device holds a checkpoint's batch back, under
/// the write path's mutex, another thread reads records whose pages are not cached. Before,
/// its look-up waited for the batch (and for garbage collection's copies and the snapshot).
#[test]
fn a_miss_out_of_place_does_not_wait_for_the_write_paths_device_io() {
    // Batches of 4: the checkpoint's pages reach the device from its batches, written with
    // the core latch released (a last part-batch is written at its end, under the latch).
    miss_beside_a_held_write(out_of_place_small_batches());
}

/// While the data device holds a checkpoint's write back, a thread misses three pages and
/// returns (`cfg`: a write path whose pages move).
fn miss_beside_a_held_write(cfg: DbConfig) {
    let pair = MemPair::new();
    cold_records_with(pair.devices(), cfg.clone());
    let gate = std::sync::Arc::new(Gate::default());
    let db = Db::open(gated(&pair, &gate, false), cfg).unwrap();
    let t = db.open_tree("t").unwrap();
    // Two threads miss a few pages each: an exclusive reservation sets frames aside, from
    // which later misses are reserved with the core latch shared (no log latch).
    std::thread::scope(|s| {
        for k in 0..2u32 {
            let (db, t) = (&db, &t);
            s.spawn(move || {
                for i in (k * 50..20_000).step_by(1_000) {
                    let key = format!("k{i:06}");
                    assert!(db.get(t, key.as_bytes()).unwrap().is_some());
                }
            });
        }
    });
    // Nine leaves changed, all cached already: the checkpoint writes more than one batch.
    let mut x = db.begin().unwrap();
    for i in (0..9_000u32).step_by(1_000) {
        x.put(&t, format!("k{i:06}").as_bytes(), b"changed")
            .unwrap();
    }
    x.commit().unwrap();
    let checkpoint = checkpoint_held_at(&gate, &db);
    let ran = gets_return_while_held((&db, &t), vec![10_500, 13_500, 16_500], &gate, checkpoint);
    assert!(ran, "a miss waited for the write path's device I/O");
    db.verify().unwrap();
}
