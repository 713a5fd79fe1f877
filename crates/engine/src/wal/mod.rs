//! The write-ahead log: record types ([`record`]), their encoding ([`codec`]), the circular log on
//! a dedicated device with a double master block ([`Wal`], `log.rs`, `master.rs`), forward scans
//! for recovery ([`LogReader`]) and group commit across threads ([`SharedWal`]).
//!
//! Recovery protocol: [`Wal::open`] returns the log and its [`Master`]; the engine scans from the
//! master's checkpoint (or start) LSN with [`Wal::scan_from`] up to the end of the valid log
//! ([`LogReader::end_lsn`]), then calls [`Wal::set_end`] with that end before appending. Once a
//! checkpoint is durable, [`Wal::set_master`] records it and moves the start LSN forward, which
//! frees the log space before it.
//!
//! On-device formats are documented in `codec.rs` (records), `master.rs` (master copies) and
//! `log.rs` (device layout), and collected in docs/format.md.

pub mod codec;
mod group;
mod log;
mod master;
mod reader;
pub mod record;
#[cfg(test)]
mod tests;

pub use group::{GroupCommit, SharedWal, WalGuard};
pub(crate) use log::UpdateKeep;
pub use log::{Wal, WalConfig, WalStats};
pub use master::Master;
pub use master::{probe as probe_log, LogProbe};
#[cfg(test)]
pub use reader::ScanStop;
#[cfg(test)]
pub use record::{Body, CheckpointData, LogRecord, Redo, Undo};
