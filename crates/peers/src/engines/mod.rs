//! The engines under test behind one small interface: every method is one transaction.

use std::path::Path;

mod fjall_kv;
mod lmdb;
mod redb_kv;
#[cfg(feature = "rocksdb")]
mod rocks;
mod wafer;

/// Errors of the engines, boxed: the benchmark only reports them.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// A result with a [`BoxError`].
pub type Res<T> = Result<T, BoxError>;

/// Whether commits must be durable when they return.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// No fsync: wafer on in-memory devices, the others on files without syncing commits.
    Memory,
    /// Every commit durable (fsync or equivalent) before it returns.
    Durable,
}

/// The engines this binary can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// wafer (this repository), through its public API; a read is `Db::get` (outside any
    /// transaction, no lock), as an application reading one record would call it.
    Wafer,
    /// wafer with each read a one-read transaction (begin, get, commit: a shared record lock).
    #[value(name = "wafer-txn")]
    #[serde(rename = "wafer-txn")]
    WaferTxn,
    /// wafer with a version store (an undo device in memory) and every operation a
    /// snapshot-isolation transaction: reads take no lock and see the snapshot of their begin.
    #[value(name = "wafer-si")]
    #[serde(rename = "wafer-si")]
    WaferSi,
    /// redb 2.x.
    Redb,
    /// LMDB through heed.
    Lmdb,
    /// fjall 2.x (transactional keyspace).
    Fjall,
    /// RocksDB through the `rocksdb` crate (needs the `rocksdb` cargo feature).
    Rocksdb,
}

impl EngineKind {
    /// The name used on the command line and in the output.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Wafer => "wafer",
            EngineKind::WaferTxn => "wafer-txn",
            EngineKind::WaferSi => "wafer-si",
            EngineKind::Redb => "redb",
            EngineKind::Lmdb => "lmdb",
            EngineKind::Fjall => "fjall",
            EngineKind::Rocksdb => "rocksdb",
        }
    }

    /// Whether this build can run the engine.
    pub fn available(self) -> bool {
        self != EngineKind::Rocksdb || cfg!(feature = "rocksdb")
    }
}

/// Sizes an engine needs to keep the whole data set cached.
#[derive(Clone, Copy, Debug)]
pub struct Sizing {
    /// Records to be loaded.
    pub records: u64,
    /// Key length in bytes.
    pub key_bytes: usize,
    /// Value length in bytes.
    pub value_bytes: usize,
}

impl Sizing {
    /// Raw bytes of the loaded data set (keys and values).
    pub fn raw_bytes(&self) -> u64 {
        self.records * (self.key_bytes + self.value_bytes) as u64
    }

    /// A cache size that holds the data set several times over (room for inserts, versions and
    /// per-record overhead), at least 64 MiB.
    pub fn cache_bytes(&self) -> u64 {
        (self.raw_bytes() * 3).max(64 << 20)
    }
}

/// One key-value store. Every method runs one transaction of its own and commits it.
pub trait Kv: Send + Sync {
    /// Writes `pairs` in one transaction (the bulk load).
    fn load_batch(&self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Res<()>;
    /// Reads `key`: true if it exists, its value then copied into `out` (contents replaced).
    /// Every engine hands the client the value's bytes, as an application reading a record
    /// uses them: a zero-copy engine's borrowed value is copied out before its read
    /// transaction ends, and wafer's `Db::get_into` copies into the same buffer.
    fn read(&self, key: &[u8], out: &mut Vec<u8>) -> Res<bool>;
    /// Inserts or overwrites `key`. Returns the number of retries after conflicts (engines that
    /// abort a transaction on a conflict are retried until the write commits).
    fn write(&self, key: &[u8], value: &[u8]) -> Res<u64>;
    /// Reads up to `len` records from `start` on, in key order; returns how many it read and
    /// the retries after conflicts.
    fn scan(&self, start: &[u8], len: usize) -> Res<(usize, u64)>;
    /// The engine's own statistics as JSON, for engines that keep them (wafer).
    fn stats_json(&self) -> Option<String> {
        None
    }
}

/// Copies a found value into the client's buffer: whether there was one.
fn copy_out(v: Option<&[u8]>, out: &mut Vec<u8>) -> bool {
    let Some(v) = v else { return false };
    out.clear();
    out.extend_from_slice(v);
    true
}

/// Opens a fresh, empty store of `kind` under `dir` (a directory of its own).
pub fn open(kind: EngineKind, mode: Mode, dir: &Path, sizing: Sizing) -> Res<Box<dyn Kv>> {
    Ok(match kind {
        EngineKind::Wafer => Box::new(wafer::WaferKv::open(mode, dir, sizing, wafer::Reads::Get)?),
        EngineKind::WaferTxn => {
            Box::new(wafer::WaferKv::open(mode, dir, sizing, wafer::Reads::Txn)?)
        }
        EngineKind::WaferSi => Box::new(wafer::WaferKv::open(
            mode,
            dir,
            sizing,
            wafer::Reads::Snapshot,
        )?),
        EngineKind::Redb => Box::new(redb_kv::RedbKv::open(mode, dir, sizing)?),
        EngineKind::Lmdb => Box::new(lmdb::LmdbKv::open(mode, dir, sizing)?),
        EngineKind::Fjall => Box::new(fjall_kv::FjallKv::open(mode, dir, sizing)?),
        #[cfg(feature = "rocksdb")]
        EngineKind::Rocksdb => Box::new(rocks::RocksKv::open(mode, dir, sizing)?),
        #[cfg(not(feature = "rocksdb"))]
        EngineKind::Rocksdb => {
            return Err("this binary was built without the `rocksdb` cargo feature".into())
        }
    })
}
