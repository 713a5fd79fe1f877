//! Issue 12, "opened silently with wrong data": a data device and a log device that do not belong
//! together must not open. A stale copy of either put back beside a newer partner, a log of
//! another database, a blanked data header beside a log that holds a database (and the reverse),
//! and a damaged newest map snapshot (out of place) each give a typed error, never a database
//! that serves lost, resurrected or stale rows. Crashes while a database is created still open.

use crate::support::{key, value, Held, LinkedRig, Oracle};
use wafer_engine::device::MemDevice;
use wafer_engine::{Db, DbConfig, Devices, Error, OopConfig, OpenMode};

/// A data and a log device the test keeps (to copy, restore or damage their images).
struct Pair {
    data: Held<MemDevice>,
    log: Held<MemDevice>,
}

impl Pair {
    fn new() -> Pair {
        Pair {
            data: Held::new(MemDevice::new(16 << 20, 4096)),
            log: Held::new(MemDevice::new(4 << 20, 4096)),
        }
    }
    fn devices(&self) -> Devices {
        Devices::new(Box::new(self.data.clone()), Box::new(self.log.clone()))
    }
    fn with_log_of(&self, other: &Pair) -> Devices {
        Devices::new(Box::new(self.data.clone()), Box::new(other.log.clone()))
    }
}

fn image(d: &Held<MemDevice>) -> Vec<u8> {
    d.lock().bytes().to_vec()
}

fn restore(d: &Held<MemDevice>, img: &[u8]) {
    d.lock().bytes_mut().copy_from_slice(img);
}

fn cfg(oop: bool) -> DbConfig {
    DbConfig {
        buffer_pages: 64,
        log_space_bytes: Some(1 << 20),
        out_of_place: oop.then(|| OopConfig {
            zone_bytes: 256 << 10,
            max_open_zones: 2,
            batch_pages: 16,
            ..OopConfig::default()
        }),
        ..DbConfig::default()
    }
}

/// Puts keys `lo..hi` (one transaction per 10 keys) into tree "t", recording them in `oracle`.
fn put_range(db: &Db, oracle: &mut Oracle, lo: u64, hi: u64) {
    let t = db.tree("t").unwrap();
    let mut n = lo;
    while n < hi {
        let mut x = db.begin().unwrap();
        for k in n..(n + 10).min(hi) {
            let (k, v) = (key(k, 12), value(k, 200));
            x.put(&t, &k, &v).unwrap();
            oracle.put("t", &k, &v);
        }
        x.commit().unwrap();
        n += 10;
    }
}

fn delete_keys(db: &Db, oracle: &mut Oracle, keys: &[u64]) {
    let t = db.open_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    for &k in keys {
        let k = key(k, 12);
        x.delete(&t, &k).unwrap();
        oracle.delete("t", &k);
    }
    x.commit().unwrap();
}

/// The open must fail with a mismatch error whose message says `what`.
fn expect_mismatch(r: wafer_engine::Result<Db>, what: &str, case: &str) {
    match r {
        Ok(db) => {
            let trees = db.verify();
            panic!("{case}: opened (trees: {trees:?}); expected an error saying '{what}'")
        }
        Err(Error::Mismatch(m)) => assert!(
            m.contains(what),
            "{case}: the error should say '{what}': {m}"
        ),
        Err(e) => panic!("{case}: expected Error::Mismatch saying '{what}', got {e}"),
    }
}

/// An older copy of the data device put back beside the newer log: committed rows (written
/// and checkpointed after the copy) would be lost silently.
#[test]
fn stale_data_copy_is_refused() {
    for oop in [false, true] {
        let p = Pair::new();
        let mut oracle = Oracle::new(&["t"]);
        let db = Db::open(p.devices(), cfg(oop)).unwrap();
        put_range(&db, &mut oracle, 0, 200);
        db.close().unwrap();
        drop(db);
        let old_data = image(&p.data);
        let db = Db::open(p.devices(), cfg(oop)).unwrap();
        put_range(&db, &mut oracle, 200, 400);
        delete_keys(&db, &mut oracle, &[3, 5, 7]);
        db.close().unwrap();
        drop(db);
        let new_data = image(&p.data);
        restore(&p.data, &old_data);
        expect_mismatch(
            Db::open(p.devices(), cfg(oop)),
            "stale data",
            &format!("stale data (oop {oop})"),
        );
        // The devices are untouched by the refused open: the right pair still opens.
        restore(&p.data, &new_data);
        let db = Db::open(p.devices(), cfg(oop)).unwrap();
        oracle.check(&db, "the matching pair after the refusal");
    }
}

/// An older copy of the log device put back beside the newer data device: deleted rows would
/// come back and committed ones vanish.
#[test]
fn stale_log_copy_is_refused() {
    for oop in [false, true] {
        // Data one checkpoint ahead of the log copy (the copy lacks that checkpoint's record),
        // and data several checkpoints ahead.
        for extra_checkpoints in [0, 3] {
            let p = Pair::new();
            let mut oracle = Oracle::new(&["t"]);
            let db = Db::open(p.devices(), cfg(oop)).unwrap();
            put_range(&db, &mut oracle, 0, 200);
            db.checkpoint().unwrap();
            let old_log = image(&p.log);
            delete_keys(&db, &mut oracle, &[3, 5, 7]);
            put_range(&db, &mut oracle, 200, 300);
            db.checkpoint().unwrap();
            for i in 0..extra_checkpoints {
                put_range(&db, &mut oracle, 300 + 10 * i, 310 + 10 * i);
                db.checkpoint().unwrap();
            }
            drop(db);
            let new_log = image(&p.log);
            restore(&p.log, &old_log);
            let case = format!("stale log (oop {oop}, {extra_checkpoints} more checkpoints)");
            expect_mismatch(Db::open(p.devices(), cfg(oop)), "stale log", &case);
            restore(&p.log, &new_log);
            let db = Db::open(p.devices(), cfg(oop)).unwrap();
            oracle.check(&db, &case);
        }
    }
}

/// The log of another database beside this data device.
#[test]
fn log_of_another_database_is_refused() {
    for oop in [false, true] {
        let a = Pair::new();
        let b = Pair::new();
        for p in [&a, &b] {
            let db = Db::open(p.devices(), cfg(oop)).unwrap();
            put_range(&db, &mut Oracle::new(&["t"]), 0, 50);
            db.close().unwrap();
        }
        expect_mismatch(
            Db::open(a.with_log_of(&b), cfg(oop)),
            "another database",
            &format!("foreign log (oop {oop})"),
        );
    }
}

/// A zeroed data header beside a log that holds a database: `OpenOrCreate` must not format a
/// fresh empty database over it.
#[test]
fn blank_data_header_beside_a_database_log_is_refused() {
    for oop in [false, true] {
        let p = Pair::new();
        let db = Db::open(p.devices(), cfg(oop)).unwrap();
        put_range(&db, &mut Oracle::new(&["t"]), 0, 100);
        db.close().unwrap();
        drop(db);
        p.data.lock().bytes_mut()[..4096].fill(0);
        let log_before = image(&p.log);
        let c = DbConfig {
            open_mode: OpenMode::OpenOrCreate,
            ..cfg(oop)
        };
        expect_mismatch(
            Db::open(p.devices(), c),
            "data header is blank",
            &format!("blank data header (oop {oop})"),
        );
        assert!(
            image(&p.log) == log_before,
            "the refused open changed the log"
        );
    }
}

/// The reverse: a formatted data device beside a blank log (zeroed master, or all zero).
#[test]
fn blank_log_beside_a_database_is_refused() {
    for oop in [false, true] {
        for whole in [false, true] {
            let p = Pair::new();
            let db = Db::open(p.devices(), cfg(oop)).unwrap();
            put_range(&db, &mut Oracle::new(&["t"]), 0, 100);
            db.close().unwrap();
            drop(db);
            let n = if whole { 4 << 20 } else { 2 * 4096 };
            p.log.lock().bytes_mut()[..n].fill(0);
            let data_before = image(&p.data);
            for mode in [OpenMode::OpenOrCreate, OpenMode::Open] {
                let c = DbConfig {
                    open_mode: mode,
                    ..cfg(oop)
                };
                expect_mismatch(
                    Db::open(p.devices(), c),
                    "log device is blank",
                    &format!("blank log (oop {oop}, whole {whole}, {mode:?})"),
                );
            }
            assert!(
                image(&p.data) == data_before,
                "the refused open changed the data"
            );
        }
    }
}

/// Out of place: one flipped bit in the newest map snapshot (the one the master's checkpoint
/// needs) must not make recovery fall back to the older snapshot and serve stale pages (here:
/// a committed, checkpointed delete coming back).
#[test]
fn damaged_newest_snapshot_is_not_replaced_by_an_older_one() {
    let p = Pair::new();
    let mut oracle = Oracle::new(&["t"]);
    let db = Db::open(p.devices(), cfg(true)).unwrap();
    put_range(&db, &mut oracle, 0, 300);
    db.checkpoint().unwrap();
    delete_keys(&db, &mut oracle, &[10, 11, 12]);
    db.checkpoint().unwrap();
    drop(db);
    // The header names the two slots (offsets 44 and 52); block 0 of a slot has the tag at 8.
    let (slot, at) = {
        let dev = p.data.lock();
        let b = dev.bytes();
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap()) as usize;
        let slots = [u64_at(44), u64_at(52)];
        let tags = [u64_at(slots[0] + 8), u64_at(slots[1] + 8)];
        let newest = if tags[0] > tags[1] { 0 } else { 1 };
        (newest, slots[newest])
    };
    // A bit in the first map block (it holds the locations of the low page ids).
    p.data.lock().bytes_mut()[at + 4096 + 12 * 3 + 2] ^= 0x10;
    match Db::open(p.devices(), cfg(true)) {
        Err(Error::CorruptMetadata(m)) => {
            assert!(m.contains("snapshot"), "slot {slot}: {m}")
        }
        Err(e) => panic!("slot {slot}: expected CorruptMetadata, got {e}"),
        Ok(db) => {
            // Acceptable only with exactly the committed rows.
            oracle.check(&db, "after a damaged snapshot");
            panic!("opened with a damaged snapshot (rows happened to be right)");
        }
    }
}

/// A power cut at every device command while a database is created (torn and lost writes,
/// 512-byte blocks): the next `OpenOrCreate` must succeed (formatting again when creation had
/// not completed) and hold the rows it is then given. Guards the order of the creation
/// protocol against the blank-device checks.
#[test]
fn crash_during_creation_still_opens() {
    for oop in [false, true] {
        let mut n = 1u64;
        loop {
            let rig = LinkedRig::new(n, 16 << 20, 4 << 20, 512);
            rig.cut_after(n);
            let created = Db::open(rig.devices(), cfg(oop)).map(drop).is_ok();
            let cut = rig.is_powered_off();
            rig.crash();
            let c = DbConfig {
                open_mode: OpenMode::OpenOrCreate,
                ..cfg(oop)
            };
            let db = Db::open(rig.devices(), c)
                .unwrap_or_else(|e| panic!("oop {oop}: cut after {n} commands: {e}"));
            let mut oracle = Oracle::new(&["t"]);
            put_range(&db, &mut oracle, 0, 20);
            oracle.check(&db, &format!("oop {oop}, cut after {n}"));
            if created && !cut {
                break;
            }
            n += 1;
        }
        assert!(n > 3, "creation took only {n} device commands");
    }
}

/// A power cut at every device command of a checkpoint (torn and lost writes, 512-byte blocks),
/// and then at every command of the recovery that follows: the database must open with exactly
/// the committed rows. Covers each window of the stamp protocol: before the data stamp, a torn
/// stamp, the stamp durable but not the master (in place: header ahead with its record; out of
/// place: a snapshot ahead with or without its record, erased by recovery), and a crash during
/// that recovery.
#[test]
fn crash_at_every_command_of_a_checkpoint_still_opens() {
    for oop in [false, true] {
        let build = |seed: u64| {
            let rig = LinkedRig::new(seed, 16 << 20, 4 << 20, 512);
            let db = Db::open(rig.devices(), cfg(oop)).unwrap();
            let mut oracle = Oracle::new(&["t"]);
            put_range(&db, &mut oracle, 0, 150);
            db.checkpoint().unwrap();
            delete_keys(&db, &mut oracle, &[1, 2, 3]);
            put_range(&db, &mut oracle, 150, 200);
            (rig, db, oracle)
        };
        let mut n = 1u64;
        loop {
            let (rig, db, oracle) = build(n);
            rig.cut_after(n);
            let done = db.checkpoint().is_ok() && !rig.is_powered_off();
            drop(db);
            rig.crash();
            if done {
                break;
            }
            // A second cut during the recovery, at a command that varies with `n`.
            rig.cut_after(1 + n % 7);
            let _ = Db::open(rig.devices(), cfg(oop)).map(drop);
            rig.crash();
            let db = Db::open(rig.devices(), cfg(oop)).unwrap_or_else(|e| {
                panic!("oop {oop}: cut after {n} commands of the checkpoint: {e}")
            });
            oracle.check(&db, &format!("oop {oop}, checkpoint cut after {n}"));
            n += 1;
        }
        assert!(n > 3, "the checkpoint took only {n} device commands");
    }
}
