//! wafer-engine: the embeddable transactional key-value store.
//!
//! Layers, bottom up: the device layer ([`device`]: all storage goes through the `BlockDevice`
//! trait), the page format, the write path (in-place with a doublewrite buffer, or out of place),
//! the page cache (buffer pool + write path), the B+tree, the write-ahead log, transactions under
//! a concurrency-control protocol, checkpoints and ARIES-style recovery, and the [`Db`] API.
//!
//! An embedder's program: a database in two files, a transaction, a streaming scan, a crash
//! (the handle dropped without `close`: nothing is checkpointed, the buffer pool is lost) and a
//! reopen that recovers every committed transaction.
//!
//! ```
//! use std::ops::Bound;
//! use wafer_engine::{Db, DbConfig, Devices, Error};
//!
//! # fn main() -> Result<(), Error> {
//! let dir = std::env::temp_dir().join(format!("wafer-doc-{}", std::process::id()));
//! let open = || Db::open(Devices::files(&dir, 64 << 20, 16 << 20)?, DbConfig::default());
//!
//! let db = open()?;
//! let users = db.tree("users")?; // opened, or created if missing
//! let mut txn = db.begin()?;
//! for i in 0..500u32 {
//!     txn.put(&users, format!("user{i:04}").as_bytes(), &i.to_le_bytes())?;
//! }
//! txn.commit()?; // durable when it returns
//!
//! let mut txn = db.begin()?;
//! txn.put(&users, b"user9999", b"never committed")?;
//! drop(txn); // rolled back
//!
//! // A scan that streams: the cursor reads a batch at a time.
//! let mut txn = db.begin()?;
//! let range = (Bound::Included(&b"user0100"[..]), Bound::Excluded(&b"user0110"[..]));
//! let mut n = 0;
//! for kv in txn.cursor(&users, range, false)? {
//!     let (key, value) = kv?;
//!     assert!(key.starts_with(b"user01"));
//!     assert_eq!(value.len(), 4);
//!     n += 1;
//! }
//! assert_eq!(n, 10);
//! txn.commit()?;
//!
//! drop(db); // a crash: no close, no checkpoint
//!
//! let db = open()?; // recovery replays the log
//! let users = db.open_tree("users")?;
//! let mut txn = db.begin()?;
//! assert_eq!(txn.get(&users, b"user0042")?, Some(42u32.to_le_bytes().to_vec()));
//! assert_eq!(txn.get(&users, b"user9999")?, None);
//! let all = txn.cursor(&users, (Bound::Unbounded, Bound::Unbounded), false)?;
//! assert_eq!(all.count(), 500);
//! txn.commit()?;
//! db.close()?;
//! # drop(db);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok(())
//! # }
//! ```

mod btree;
mod buffer;
mod cache;
mod catalog;
mod cc;
mod checkpoint;
mod clock;
mod config;
mod db;
pub mod device;
mod engine;
mod error;
mod flushless;
mod health;
mod identity;
mod locks;
mod memadvise;
mod meta;
mod mtr;
mod mvcc;
mod ops;
mod page;
mod page_op;
mod page_table;
mod ranges;
mod read_shared;
mod recovery;
mod redo;
mod scan_buf;
mod splits;
mod sync;
mod txn;
mod txn_table;
mod undo;
mod wal;
mod writepath;

// The public surface: what an embedder needs, re-exported here. Every module but `device` (the
// storage seam an embedder may implement or wrap) is internal.
pub use buffer::PoolStats;
pub use catalog::Tree;
pub use checkpoint::{Candidate, CheckpointPolicy, HotPageAware, WriteAll};
pub use clock::{Clock, WallClock};
pub use config::{DbConfig, GroupCommitConfig, LeafSplits, OpenMode, MAX_BUFFER_PAGES};
pub use db::{Background, Db, DbStats, Devices, EngineStats, CLEANER_BURST};
pub use error::{Error, Result};
pub use flushless::{FlushlessConfig, FlushlessStats, TableStats};
pub use mvcc::VersionStats;
pub use recovery::RecoveryReport;
pub use scan_buf::ScanBuf;
pub use txn::{Cursor, PendingCommit, Txn};
pub use txn_table::TxnAge;
pub use wal::record::{TreeId, TxnId};
pub use wal::WalStats;
pub use writepath::pack::Codec;
pub use writepath::{HomeMethod, JournalConfig, JournalStats, OopConfig, WriteCounters};
