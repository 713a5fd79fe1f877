//! wafer through its public API, sized as `wafer-workloads`' wall-clock driver sizes it.

use super::{Mode, Res, Sizing};
use std::ops::Bound;
use std::path::Path;
use wafer_engine::device::MemDevice;
use wafer_engine::{Db, DbConfig, Devices, Error, OpenMode, ScanBuf, Tree, Txn};

/// How the driver's operations use transactions.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// A read is `Db::get`; writes and scans are serializable transactions.
    Get,
    /// A read is a one-read serializable transaction (begin, get, commit).
    Txn,
    /// Every operation is a snapshot-isolation transaction, on a database with a version store.
    Snapshot,
}

pub struct WaferKv {
    db: Db,
    tree: Tree,
    reads: Reads,
}

/// The undo device of [`Reads::Snapshot`] (the version store; rebuilt empty at every open, so
/// memory serves in both modes).
const UNDO_BYTES: u64 = 256 << 20;

impl WaferKv {
    pub fn open(mode: Mode, dir: &Path, s: Sizing, reads: Reads) -> Res<WaferKv> {
        // As bench/wall.rs: the data device three times the records (16 bytes of overhead a
        // record), a buffer pool as large, a log the size of the pool plus 8 MiB, up to 1 GiB.
        let per_record = (s.key_bytes + s.value_bytes) as u64 + 16;
        let data_bytes = (s.records * per_record * 3)
            .max(64 << 20)
            .next_multiple_of(1 << 20);
        let cfg = DbConfig {
            buffer_pages: (data_bytes / 4096) as usize,
            open_mode: OpenMode::Create,
            // Memory mode: commits need not be durable, as for the other engines there.
            durable_commits: mode == Mode::Durable,
            ..DbConfig::default()
        };
        let log_bytes = (cfg.buffer_bytes() + (8 << 20)).min(1 << 30);
        let mut devices = match mode {
            Mode::Memory => Devices::memory(data_bytes, log_bytes),
            Mode::Durable => Devices::files(dir, data_bytes, log_bytes)?,
        };
        if reads == Reads::Snapshot {
            devices = devices.with_undo(Box::new(MemDevice::new(UNDO_BYTES, 4096)));
        }
        let db = Db::open(devices, cfg)?;
        let tree = db.create_tree("usertable")?;
        Ok(WaferKv { db, tree, reads })
    }

    /// Runs `f` in a transaction and commits; a conflict aborts the attempt and retries it.
    fn txn<R>(&self, mut f: impl FnMut(&mut Txn, &Tree) -> Result<R, Error>) -> Res<(R, u64)> {
        let mut retries = 0;
        loop {
            let mut t = if self.reads == Reads::Snapshot {
                self.db.begin_snapshot()?
            } else {
                self.db.begin()?
            };
            match f(&mut t, &self.tree).and_then(|r| t.commit().map(|()| r)) {
                Ok(r) => return Ok((r, retries)),
                Err(Error::Conflict { .. }) => {
                    retries += 1;
                    std::thread::yield_now();
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl super::Kv for WaferKv {
    fn load_batch(&self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Res<()> {
        // The harness loads ascending keys into an empty tree: wafer's bulk load (`Txn::load`,
        // a leaf at a time) where the engine sees the batch as one.
        self.txn(|t, tree| t.load(tree, pairs))?;
        Ok(())
    }

    fn read(&self, key: &[u8], out: &mut Vec<u8>) -> Res<bool> {
        // One record: `Db::get_into`, a read outside any transaction (serializable as a
        // one-read transaction, without its lock) into the client's buffer; or, as `wafer-txn`
        // and `wafer-si`, begin (a snapshot for `wafer-si`), get, commit.
        if self.reads != Reads::Get {
            let v = self.txn(|t, tree| t.get(tree, key))?.0;
            return Ok(super::copy_out(v.as_deref(), out));
        }
        Ok(self.db.get_into(&self.tree, key, out)?)
    }

    fn write(&self, key: &[u8], value: &[u8]) -> Res<u64> {
        Ok(self.txn(|t, tree| t.put(tree, key, value).map(|_| ()))?.1)
    }

    fn stats_json(&self) -> Option<String> {
        serde_json::to_string(&self.db.stats()).ok()
    }

    fn scan(&self, start: &[u8], len: usize) -> Res<(usize, u64)> {
        // Each client thread scans into a buffer of its own, reused from scan to scan (as the
        // other engines hand out borrowed pairs): no allocation per pair.
        thread_local! {
            static BUF: std::cell::RefCell<ScanBuf> = std::cell::RefCell::new(ScanBuf::new());
        }
        BUF.with(|b| {
            let mut buf = b.borrow_mut();
            self.txn(|t, tree| {
                let range = (Bound::Included(start), Bound::Unbounded);
                t.scan_into(tree, range, false, len, &mut buf)?;
                for (k, v) in buf.iter() {
                    std::hint::black_box((k.len(), v.len()));
                }
                Ok(buf.len())
            })
        })
    }
}
