//! wafer-engine: the embeddable transactional key-value store.
//!
//! Layers, bottom up: the device layer ([`device`], everything storage goes through the
//! `BlockDevice` trait), the page format ([`page`]), the B+tree ([`btree`]), the write-ahead log
//! ([`wal`]), and above them the buffer pool, transactions, checkpoints, recovery and the `Db` API.

pub mod btree;
pub mod device;
pub mod error;
pub mod page;
pub mod wal;

pub use error::{Error, Result};
