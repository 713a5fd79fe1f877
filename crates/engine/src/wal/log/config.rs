//! The log's configuration and its counters.

use crate::wal::group::GroupCommit;

/// Configuration of the log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WalConfig {
    /// Bytes of log space (the circular data area) wanted at create: rounded down to the block
    /// size and bounded by the device (its capacity less the two master blocks); 0 = as much as
    /// the device holds. Ignored at open: the formatted size stays.
    pub space_bytes: u64,
    /// Group commit policy (used by [`crate::wal::SharedWal`]).
    pub group_commit: GroupCommit,
    /// The log buffer (None: 1/16 of the log space, at most 1 MiB); rounded down to a block, at
    /// least one, at most a quarter of the log space.
    pub buffer_bytes: Option<u64>,
    /// Page images are logged without their longest run of zero bytes (redo tag 4; see
    /// [`crate::wal::codec`]). Either form is read whatever this says.
    pub image_holes: bool,
    /// Structure changes log the pages they change only by page operations as those operations
    /// (redo tag 5) instead of images. Only for write paths that never leave a torn page for
    /// redo to find: operations need the page as it was. Either form is read whatever this says.
    pub page_ops: bool,
}

/// Cumulative counters of a log.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WalStats {
    /// Records appended.
    pub records: u64,
    /// Encoded bytes of the appended records.
    pub appended_bytes: u64,
    /// Flushes that made new records durable.
    pub flushes: u64,
    /// Device flush commands issued (a large flush issues one per `buffer_bytes`).
    pub device_flushes: u64,
    /// Bytes written to the log device: records, tail-block rewrites and padding, master copies,
    /// zeroing after recovery.
    pub bytes_written: u64,
    /// Master copies written.
    pub master_writes: u64,
    /// `commit_wait` calls (group commit).
    pub commits: u64,
    /// Flushes done by a group-commit leader.
    pub commit_flushes: u64,
    /// Flushes forced by a full log buffer.
    pub buffer_full_flushes: u64,
    /// Of those, the flushes made after the operation that filled the buffer, with the log
    /// unlocked (several threads: `Wal::set_defer_full`).
    #[serde(default)]
    pub buffer_full_unlatched: u64,
}

impl WalStats {
    /// Commits per group-commit flush (the batch size).
    pub fn avg_batch_commits(&self) -> f64 {
        self.commits as f64 / self.commit_flushes.max(1) as f64
    }
    /// Records made durable per flush.
    pub fn avg_batch_records(&self) -> f64 {
        self.records as f64 / self.flushes.max(1) as f64
    }
}

impl super::Wal {
    pub fn config(&self) -> &WalConfig {
        &self.cfg
    }

    pub fn stats(&self) -> WalStats {
        self.stats.clone()
    }

    pub(crate) fn stats_mut(&mut self) -> &mut WalStats {
        &mut self.stats
    }

    /// Statistics of the log device.
    pub fn device_stats(&self) -> crate::device::DeviceStats {
        self.io().dev.stats()
    }
}
