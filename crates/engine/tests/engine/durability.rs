//! Durability at the edges: a power cut while a database is being created; a failed device
//! flush, which must poison the handle ("an I/O error poisons the handle instead of being
//! ignored", DESIGN.md); stale doublewrite copies after switching doublewrite off; and a database
//! created over an old one.

use crate::support::{Held, LinkedRig, MemPair, LOG_BYTES};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use wafer_engine::device::{BlockDevice, DeviceError, DeviceStats, MemDevice, SharedDevice};
use wafer_engine::{Db, DbConfig, Devices, Error, OpenMode};

// A power cut while a database is being created (the first `Db::open` on blank devices, and the
// first trees). Reopening with `OpenOrCreate` must give a working database: either the creation
// completed, or the devices still count as blank and are formatted again.

const DATA: u64 = 4 << 20;
const LOG: u64 = 2 << 20;

fn creation_config() -> DbConfig {
    DbConfig {
        buffer_pages: 64,
        log_space_bytes: Some(1 << 20),
        ..DbConfig::default()
    }
}

fn create(rig: &LinkedRig) -> wafer_engine::Result<()> {
    let db = Db::open(rig.devices(), creation_config())?;
    let t = db.create_tree("t")?;
    let mut x = db.begin()?;
    x.put(&t, b"k", b"v")?;
    x.commit()?;
    Ok(())
}

#[test]
fn power_cut_during_creation_leaves_an_openable_database() {
    let total = {
        let rig = LinkedRig::new(1, DATA, LOG, 512);
        create(&rig).unwrap();
        rig.commands()
    };
    let mut failures = Vec::new();
    for cut in 1..=total {
        let rig = LinkedRig::new(cut, DATA, LOG, 512);
        rig.cut_after(cut);
        let created = create(&rig).is_ok();
        rig.crash();
        match Db::open(rig.devices(), creation_config()) {
            Ok(db) => {
                db.verify().unwrap();
                let t = db.tree("t").unwrap();
                let mut x = db.begin().unwrap();
                let got = x.get(&t, b"k").unwrap();
                if created {
                    assert_eq!(got.as_deref(), Some(&b"v"[..]), "cut {cut}: lost commit");
                }
                x.put(&t, b"k2", b"v2").unwrap();
                x.commit().unwrap();
            }
            Err(e) => failures.push(format!("cut at command {cut} of {total}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} power-cut points leave a database that cannot be opened:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Many trees created (each with a few committed rows) until a power cut: after reopen every
/// tree whose creation returned is there with its committed rows, at most the one interrupted
/// creation may also be there (empty), and nothing else.
#[test]
fn trees_created_before_a_power_cut_survive_it() {
    for seed in 0..12u64 {
        let rig = LinkedRig::new(seed, DATA, LOG, 512);
        let db = Db::open(rig.devices(), creation_config()).unwrap();
        rig.cut_after(5 + seed * 13);
        let mut made: Vec<String> = Vec::new();
        let mut interrupted = None;
        let mut rows: Vec<(String, u64)> = Vec::new();
        for i in 0..45u64 {
            let name = format!("tree-{i:02}");
            let t = match db.create_tree(&name) {
                Ok(t) => t,
                Err(_) => {
                    interrupted = Some(name);
                    break;
                }
            };
            made.push(name.clone());
            let Ok(mut x) = db.begin() else { break };
            let ok = (0..i % 5).all(|j| x.put(&t, &j.to_be_bytes(), &[i as u8; 50]).is_ok());
            if ok && x.commit().is_ok() {
                rows.push((name, i % 5));
            } else {
                break;
            }
        }
        drop(db);
        rig.crash();
        eprintln!(
            "seed {seed}: {} trees created before the power cut",
            made.len()
        );
        let db = Db::open(rig.devices(), creation_config())
            .unwrap_or_else(|e| panic!("seed {seed}: reopen failed: {e}"));
        db.verify().unwrap();
        let mut names = db.tree_names();
        if let Some(n) = &interrupted {
            names.retain(|x| x != n);
        }
        let mut want = made.clone();
        want.sort();
        // A tree created but whose rows' commit failed is still there (creation is durable).
        assert_eq!(names, want, "seed {seed}: trees after reopen");
        let mut x = db.begin().unwrap();
        for (name, n) in &rows {
            let t = db.open_tree(name).unwrap();
            for j in 0..*n {
                assert_eq!(
                    x.get(&t, &j.to_be_bytes()).unwrap().as_deref(),
                    Some(&[(name[5..].parse::<u8>().unwrap()); 50][..]),
                    "seed {seed}: {name} lost a committed row"
                );
            }
        }
        x.commit().unwrap();
        // New trees can still be created after recovery.
        db.create_tree("after").unwrap();
    }
}

// A failed device flush is the dangerous case: on Linux the kernel drops the unflushed pages,
// reports the error once, and a later flush succeeds ("fsyncgate"). If the engine keeps going
// after a failed flush of the data device, pages it has already marked clean never reach the
// device, and the next successful checkpoint releases the log records that could have redone
// them. The device below models that: a failed flush loses every write since the previous flush.

/// A device whose armed flush fails and drops the unflushed writes (Linux fsync semantics).
struct FsyncGate {
    inner: MemDevice,
    unflushed: Vec<(u64, Vec<u8>)>,
    fail_next_flush: Arc<AtomicBool>,
}

impl BlockDevice for FsyncGate {
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn block_bytes(&self) -> u32 {
        self.inner.block_bytes()
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        self.inner.read_at(offset, buf)
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        let mut prev = vec![0u8; data.len()];
        self.inner.read_at(offset, &mut prev)?;
        self.unflushed.push((offset, prev));
        self.inner.write_at(offset, data)
    }
    fn flush(&mut self) -> Result<(), DeviceError> {
        if self.fail_next_flush.swap(false, Ordering::SeqCst) {
            for (off, prev) in self.unflushed.drain(..).rev() {
                self.inner.write_at(off, &prev)?;
            }
            return Err(DeviceError::Io(
                "injected flush failure (writes dropped)".into(),
            ));
        }
        self.unflushed.clear();
        Ok(())
    }
    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }
}

#[test]
fn failed_data_flush_in_a_forced_checkpoint_poisons_the_handle() {
    let fail = Arc::new(AtomicBool::new(false));
    let data = Held::new(FsyncGate {
        inner: MemDevice::new(16 << 20, 4096),
        unflushed: Vec::new(),
        fail_next_flush: fail.clone(),
    });
    let log = Held::new(MemDevice::new(4 << 20, 4096));
    let devices = || Devices::new(Box::new(data.clone()), Box::new(log.clone()));
    let cfg = DbConfig {
        // Without the doublewrite buffer the only data flush of a checkpoint is its final sync.
        doublewrite: false,
        buffer_pages: 256,
        log_space_bytes: Some(512 << 10),
        checkpoint_log_fill: 0.5,
        ..DbConfig::default()
    };
    let db = Db::open(devices(), cfg.clone()).unwrap();
    let t = db.create_tree("t").unwrap();
    // Arm the failure, then commit rows one at a time: no data flush happens until the log
    // passes 50% and a write has to run a checkpoint first; its final sync fails.
    fail.store(true, Ordering::SeqCst);
    let mut n = 0u64;
    let e = loop {
        let mut x = db.begin().unwrap();
        let r = x.put(&t, format!("row{n:06}").as_bytes(), &[b'v'; 150]);
        match r {
            Ok(_) => {
                x.commit().unwrap();
                n += 1;
            }
            Err(e) => break e,
        }
        assert!(n < 100_000, "no checkpoint was ever forced");
    };
    assert!(
        !fail.load(Ordering::SeqCst),
        "the put failed ({e}) before the armed flush failure"
    );
    // The handle must now be poisoned. If it is not, carry on as a user would: more work and a
    // successful checkpoint, then reopen — every committed row must still be there.
    let after = db.begin();
    let poisoned = matches!(after, Err(Error::Poisoned(_)));
    drop(after);
    if !poisoned {
        let mut x = db.begin().unwrap();
        x.put(&t, b"trigger", b"x").unwrap();
        x.commit().unwrap();
        db.checkpoint().unwrap();
    }
    drop(db);
    let db = Db::open(devices(), cfg).unwrap();
    let lost = match db.open_tree("t") {
        // The catalog page itself was among the dropped writes.
        Err(_) => n as usize,
        Ok(t) => {
            let mut x = db.begin().unwrap();
            let lost = (0..n)
                .filter(|i| {
                    x.get(&t, format!("row{i:06}").as_bytes())
                        .unwrap()
                        .is_none()
                })
                .count();
            x.commit().unwrap();
            lost
        }
    };
    assert!(
        lost == 0,
        "after a failed flush ({e}) the handle was {}poisoned; {lost} of {n} committed rows are lost",
        if poisoned { "" } else { "not " }
    );
    assert!(
        poisoned,
        "a failed data flush ({e}) did not poison the handle"
    );
}

// The doublewrite area is "reserved even when doublewrite is off, so the setting may change
// between runs" (docs/format.md). Copies left in it by a run with doublewrite on must never be
// "repaired" over a newer page by a later run with doublewrite off: a torn page must then be
// reported (CorruptPage), not silently replaced by a stale copy.

fn dw_config(doublewrite: bool) -> DbConfig {
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
fn stale_doublewrite_copy_is_not_restored_after_switching_doublewrite_off() {
    let pair = MemPair::new();
    // Run 1, doublewrite on: the leaf (the tree's root) goes through the doublewrite area.
    let root = {
        let db = Db::open(pair.devices(), dw_config(true)).unwrap();
        let t = db.create_tree("t").unwrap();
        put(&db, b"a", b"1");
        db.checkpoint().unwrap();
        t.root_page()
    };
    // Run 2, doublewrite off: the leaf is written home twice more, and changed once more in the
    // log only; then the power fails while its home is being written (torn).
    {
        let db = Db::open(pair.devices(), dw_config(false)).unwrap();
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
    match Db::open(pair.devices(), dw_config(false)) {
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
fn create_over_an_old_database_with_a_new_log_does_not_resurrect_old_pages() {
    let data = SharedDevice::shared(MemDevice::new(16 << 20, 4096));
    let part = |d: &SharedDevice| d.partition(0, 16 << 20).unwrap();
    // The old database: many rows, so its pages carry large LSNs.
    {
        let log = MemDevice::new(8 << 20, 4096);
        let db = Db::open(
            Devices::new(Box::new(part(&data)), Box::new(log)),
            dw_config(true),
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
            open_mode: OpenMode::Create,
            ..dw_config(true)
        };
        let db = Db::open(devices(&log), create).unwrap();
        let t = db.create_tree("new").unwrap();
        let mut x = db.begin().unwrap();
        x.put(&t, b"fresh", b"row").unwrap();
        x.commit().unwrap();
        // Power fails before any checkpoint writes the new pages home.
    }
    let db = Db::open(devices(&log), dw_config(true)).unwrap();
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

/// The log master names a checkpoint whose record was lost (log blocks zeroed behind an intact
/// master): recovery must refuse with a typed error, not take the hole for a torn tail and
/// answer from an older state.
#[test]
fn a_checkpoint_record_missing_behind_the_master_is_corruption() {
    let pair = MemPair::new();
    {
        let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
        let t = db.create_tree("t").unwrap();
        let mut x = db.begin().unwrap();
        x.put(&t, b"k", b"committed").unwrap();
        x.commit().unwrap();
        db.close().unwrap();
    }
    // Zero the log's data area (everything after the two master blocks).
    let mut log = pair.devices().log;
    let zeros = vec![0u8; (LOG_BYTES - 8192) as usize];
    log.write_at(8192, &zeros).unwrap();
    log.flush().unwrap();
    drop(log);
    let r = Db::open(pair.devices(), DbConfig::default());
    assert!(
        matches!(r, Err(Error::CorruptLog { .. })),
        "got {:?}",
        r.err()
    );
}

/// One flipped bit in the middle of the log: the damaged record is followed by megabytes of
/// valid, durable records (more than a quarter of the log space, the largest write any
/// configuration of the log makes), so this is corruption, not a torn tail; reopening must
/// fail with a typed error instead of silently dropping every commit after the damage.
#[test]
fn a_bit_flip_in_the_middle_of_the_log_is_corruption_not_a_torn_tail() {
    let r = open_damaged(|start, _| start + 100 * 1024, &|b, _| b[1234] ^= 0x10);
    assert!(
        matches!(r, Err(Error::CorruptLog { .. })),
        "got {:?}",
        r.map(|db| db.stats().recovery)
    );
}

/// A flipped bit, or a zeroed block, in the last megabyte of the log, past any torn write of the
/// crash (the log's master records the largest write between two device flushes, half a
/// megabyte here) but inside the last quarter of the log space, which was all a scan could rule
/// out before the master recorded it (and zeros it took for the end): reopening is a typed
/// error, not a log cut short at the damage.
#[test]
fn damage_near_the_end_of_the_log_is_corruption_too() {
    let flip = |b: &mut [u8], _: usize| b[1234] ^= 0x10;
    // Lost writes, or a trim of live log, from a record's start on: zeros there look like the
    // end of a log that has not wrapped yet.
    let zero = |b: &mut [u8], record: usize| b[record..].fill(0);
    type Damage<'a> = &'a dyn Fn(&mut [u8], usize);
    for (what, damage) in [("a flipped bit", &flip as Damage), ("zeros", &zero)] {
        let r = open_damaged(
            |_, end| {
                let at = end - (1 << 20);
                assert!(
                    end - at < (LOG_BYTES - 8192) / 4,
                    "in the last quarter of the log"
                );
                at
            },
            damage,
        );
        assert!(
            matches!(r, Err(Error::CorruptLog { .. })),
            "{what}: got {:?}",
            r.map(|db| db.stats().recovery)
        );
    }
}

/// Runs 8,000 transactions (more than 3 MiB of log), crashes, applies `damage` to 8 KiB of the
/// log from the block of `at(start, end)` (the LSNs of the run's first record and of its end;
/// `damage` is given the offset in the 8 KiB of the first record that starts there) and reopens.
fn open_damaged(
    at: impl Fn(u64, u64) -> u64,
    damage: &dyn Fn(&mut [u8], usize),
) -> wafer_engine::Result<Db> {
    // A log with room for the whole run: no checkpoint after the one at open, so recovery scans
    // every record written.
    let cfg = DbConfig {
        log_space_bytes: Some(LOG_BYTES),
        checkpoint_log_fill: 0.9,
        ..DbConfig::default()
    };
    let pair = MemPair::new();
    let at_lsn = {
        let db = Db::open(pair.devices(), cfg.clone()).unwrap();
        let t = db.create_tree("t").unwrap();
        let start = db.stats().checkpoint_lsn;
        for i in 0..8000u32 {
            let mut x = db.begin().unwrap();
            x.put(&t, &i.to_be_bytes(), &[i as u8; 300]).unwrap();
            x.commit().unwrap();
        }
        let s = db.stats();
        assert_eq!(s.checkpoint_lsn, start, "no checkpoint during the run");
        assert!(s.wal.appended_bytes > 3 << 20);
        // A crash: no close.
        at(start, start + s.wal.appended_bytes)
    };
    // The log's data area starts after its two 4 KiB master blocks and wraps at its capacity.
    let cap = LOG_BYTES - 8192;
    let at = 8192 + (at_lsn % cap) / 4096 * 4096;
    let lsn_at = at_lsn / 4096 * 4096;
    let mut log = pair.devices().log;
    let mut block = vec![0u8; 8192];
    log.read_at(at, &mut block).unwrap();
    // A record starts where its header's LSN field (bytes 8..16) holds its position.
    let record = (0..4096)
        .find(|&i| block[i + 8..i + 16] == (lsn_at + i as u64).to_le_bytes())
        .expect("a record starts in the block");
    damage(&mut block, record);
    log.write_at(at, &block).unwrap();
    log.flush().unwrap();
    drop(log);
    Db::open(pair.devices(), cfg)
}

/// Commits that do not wait for the log (`durable_commits: false`): a power cut loses at most
/// the commits since the last log write, never one before another that survived, never part of
/// a transaction; `flush_log` and the close make them durable.
#[test]
fn commits_that_do_not_wait_for_the_log_survive_as_a_prefix() {
    let cfg = DbConfig {
        durable_commits: false,
        // A buffer the whole run fits in: only `flush_log` and the close write the log.
        log_buffer_bytes: Some(256 << 10),
        ..creation_config()
    };
    // Each transaction writes its number under two keys; transaction i is kept iff both are.
    let survivors = |db: &Db| -> Vec<u64> {
        let t = db.tree("t").unwrap();
        let mut x = db.begin().unwrap();
        let rows = x
            .scan(&t, (Bound::Unbounded, Bound::Unbounded), false, usize::MAX)
            .unwrap();
        x.commit().unwrap();
        let mut n: Vec<u64> = rows
            .iter()
            .filter(|(k, _)| k[0] == b'a')
            .map(|(_, v)| u64::from_le_bytes(v[..8].try_into().unwrap()))
            .collect();
        let b = rows.iter().filter(|(k, _)| k[0] == b'b').count();
        assert_eq!(n.len(), b, "a transaction survived in part");
        n.sort();
        n
    };
    for (seed, flush_at) in [(1u64, 40u64), (2, 0), (3, 150)] {
        let rig = LinkedRig::new(seed, DATA, LOG, 512);
        let db = Db::open(rig.devices(), cfg.clone()).unwrap();
        let t = db.create_tree("t").unwrap();
        db.flush_log().unwrap();
        let writes_before = db.stats().wal.bytes_written;
        for i in 0..150u64 {
            let mut x = db.begin().unwrap();
            x.put(&t, format!("a{i:04}").as_bytes(), &i.to_le_bytes())
                .unwrap();
            x.put(&t, format!("b{i:04}").as_bytes(), &i.to_le_bytes())
                .unwrap();
            x.commit().unwrap();
            if i + 1 == flush_at {
                db.flush_log().unwrap();
            }
        }
        if flush_at == 0 {
            assert_eq!(
                db.stats().wal.bytes_written,
                writes_before,
                "the commits did not write the log"
            );
        }
        rig.cut_now();
        drop(db);
        rig.crash();
        let db = Db::open(rig.devices(), cfg.clone()).unwrap();
        db.verify().unwrap();
        let got = survivors(&db);
        let want: Vec<u64> = (0..got.len() as u64).collect();
        assert_eq!(got, want, "seed {seed}: not a prefix of the commits");
        assert!(
            got.len() as u64 >= flush_at,
            "seed {seed}: lost flushed commits"
        );
        // The close makes the rest durable.
        let mut x = db.begin().unwrap();
        x.put(&t_of(&db), b"a9999", &9999u64.to_le_bytes()).unwrap();
        x.put(&t_of(&db), b"b9999", &9999u64.to_le_bytes()).unwrap();
        x.commit().unwrap();
        drop(db);
        rig.crash();
        let db = Db::open(rig.devices(), cfg.clone()).unwrap();
        assert_eq!(
            survivors(&db).last(),
            Some(&9999),
            "seed {seed}: the drop flushed"
        );
    }
    let bad = DbConfig {
        durable_commits: false,
        flushless: Some(Default::default()),
        ..DbConfig::default()
    };
    assert!(matches!(bad.validate(), Err(Error::Config(_))));
}

fn t_of(db: &Db) -> wafer_engine::Tree {
    db.tree("t").unwrap()
}
