//! wafer-engine: the embeddable transactional key-value store.
//!
//! Layers, bottom up: the device layer ([`device`]: all storage goes through the `BlockDevice`
//! trait), the page format ([`page`]), the write path ([`writepath`]: in-place with a doublewrite
//! buffer today), the buffer pool, the B+tree ([`btree`]), the write-ahead log ([`wal`]),
//! transactions with record locks, checkpoints and ARIES-style recovery, and the [`Db`] API.
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
pub mod checkpoint;
pub mod clock;
pub mod config;
mod db;
pub mod device;
pub mod error;
pub mod locks;
pub mod meta;
mod mtr;
pub mod page;
pub mod recovery;
mod txn;
pub mod wal;
pub mod writepath;

pub use clock::{Clock, WallClock};
pub use checkpoint::{Candidate, CheckpointPolicy, HotPageAware, WriteAll};
pub use config::{DbConfig, GroupCommitConfig, OpenMode};
pub use db::{Background, Db, DbStats, Devices, EngineStats, Tree};
pub use error::{Error, Result};
pub use txn::{PendingCommit, Txn};
