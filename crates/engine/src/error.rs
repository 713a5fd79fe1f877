//! Typed errors of the engine. Bad input and bad files give an error, never a panic.

use crate::device::DeviceError;
use crate::page::PageId;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("device error: {0}")]
    Device(#[from] DeviceError),
    #[error("page {pid} is corrupt: {reason}")]
    CorruptPage { pid: PageId, reason: &'static str },
    #[error("log is corrupt at LSN {lsn}: {reason}")]
    CorruptLog { lsn: u64, reason: String },
    #[error("not a wafer database: {0}")]
    NotADatabase(String),
    /// The data and log devices do not belong together: a log of another database, a stale
    /// copy of one of them beside a newer partner (their checkpoint generations disagree), or
    /// one of them blank while the other holds a database. The message says what was found.
    /// Nothing was written to either device.
    #[error("data and log devices do not match: {0}")]
    Mismatch(String),
    /// Metadata on the data device that recovery needs (out of place: the map snapshot of the
    /// checkpoint the log master names) is damaged; recovering without it would serve stale
    /// pages.
    #[error("data device metadata is corrupt: {0}")]
    CorruptMetadata(String),
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("transaction conflict on {what}: retry the transaction")]
    Conflict { what: String },
    #[error("the transaction is no longer active (committed, aborted or failed)")]
    TxnNotActive,
    #[error("tree '{0}' does not exist")]
    NoSuchTree(String),
    #[error("tree '{0}' already exists")]
    TreeExists(String),
    #[error("key of {len} bytes is too long (at most {max})")]
    KeyTooLong { len: usize, max: usize },
    /// `max` is the format's limit or, below it, what the configuration can change in one
    /// step (see `docs/engine.md`, "Long values"): a larger `buffer_pages` or
    /// `log_space_bytes` raises it.
    #[error(
        "value of {len} bytes is too long: at most {max} with this configuration (a long value \
         must fit the buffer pool and the log space for its overwrite and rollback: raise \
         buffer_pages or log_space_bytes)"
    )]
    ValueTooLong { len: usize, max: usize },
    #[error("database is full: {0}")]
    Full(String),
    #[error("no buffer frame can be freed: {0}")]
    PoolExhausted(String),
    #[error("the log is full and no checkpoint can free space: {0}")]
    LogFull(String),
    /// Flushless mode: the online log table has no room for a change (live transactions hold
    /// it). Nothing was changed; commit or abort transactions and retry.
    #[error("the online log table is full: {0}")]
    TableFull(String),
    #[error("the database handle is poisoned by an earlier I/O error: {0}")]
    Poisoned(String),
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Snapshot isolation: the undo device has no free extent for a before-image. Nothing was
    /// changed; end old snapshot transactions (their versions are then purged) and retry, or
    /// give the undo device more space (reopening starts with an empty version store).
    #[error("the version store is full: {0}")]
    VersionStoreFull(String),
    /// A before-image read back from the undo device does not check out.
    #[error("version store record at undo offset {offset} is corrupt: {reason}")]
    VersionCorrupt { offset: u64, reason: String },
}
