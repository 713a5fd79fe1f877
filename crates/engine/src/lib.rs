//! wafer-engine: the embeddable transactional key-value store.
//!
//! Layers, bottom up: the device layer ([`device`]: all storage goes through the `BlockDevice`
//! trait), the page format, the write path (in-place with a doublewrite buffer, or out of place),
//! the page cache (buffer pool + write path), the B+tree, the write-ahead log, transactions under
//! a concurrency-control protocol, checkpoints and ARIES-style recovery, and the [`Db`] API.
//!
//! ```
//! use wafer_engine::{Db, DbConfig, Devices};
//! let db = Db::open(Devices::memory(16 << 20, 4 << 20), DbConfig::default()).unwrap();
//! let t = db.create_tree("kv").unwrap();
//! let mut txn = db.begin().unwrap();
//! txn.put(&t, b"k", b"v").unwrap();
//! txn.commit().unwrap();
//! ```

pub mod btree;
pub mod buffer;
mod cache;
mod catalog;
mod cc;
pub mod checkpoint;
pub mod clock;
pub mod config;
mod db;
pub mod device;
mod engine;
pub mod error;
mod health;
pub mod locks;
pub mod meta;
mod mtr;
mod ops;
pub mod page;
pub mod recovery;
mod redo;
mod txn;
mod txn_table;
mod undo;
pub mod wal;
pub mod writepath;

pub use cache::{AfterRead, DirtyVictim, EvictionPolicy, WriteBack};
pub use catalog::Tree;
pub use checkpoint::{Candidate, CheckpointPolicy, HotPageAware, WriteAll};
pub use clock::{Clock, WallClock};
pub use config::{DbConfig, GroupCommitConfig, OpenMode};
pub use db::{Background, Db, DbStats, Devices, EngineStats};
pub use error::{Error, Result};
pub use txn::{Cursor, PendingCommit, Txn};
