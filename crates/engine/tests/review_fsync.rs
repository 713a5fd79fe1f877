//! Review: "an I/O error poisons the handle instead of being ignored" (DESIGN.md). A failed
//! device flush is the dangerous case: on Linux the kernel drops the unflushed pages, reports the
//! error once, and a later flush succeeds ("fsyncgate"). If the engine keeps going after a failed
//! flush of the data device, pages it has already marked clean never reach the device, and the
//! next successful checkpoint releases the log records that could have redone them.
//!
//! The device below models that: a failed flush loses every write since the previous flush.

mod common;

use common::Held;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use wafer_engine::device::{BlockDevice, DeviceError, DeviceStats, MemDevice};
use wafer_engine::{Db, DbConfig, Devices, Error};

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
fn review_failed_data_flush_in_a_forced_checkpoint_is_not_ignored() {
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
