//! Query operators that use temp space (paper 003, sections 6-7): external merge sort, Grace
//! hash join and sort-merge join, over a [`TempSpace`] on any [`BlockDevice`].
//!
//! Operators take rows `(key, value)` as byte vectors from an iterator of results (a tree scan
//! through the engine's public `Txn::cursor` fits as it is), a memory budget in bytes, and a temp
//! space whose cluster size is the I/O unit. Each operator counts temp bytes written and read, I/O
//! commands and time per phase on the temp space's clock. See `docs/query.md`.
//!
//! [`BlockDevice`]: wafer_engine::device::BlockDevice

pub mod bench;
pub mod hash_join;
pub mod merge_join;
pub mod run;
pub mod sort;
pub mod temp;

pub use crate::hdd::HddDevice;
pub use hash_join::{grace_hash_join, grace_hash_join_into, HashJoinStats, JoinSink};
pub use merge_join::{sort_merge_join, sort_merge_join_into, MergeJoinStats};
pub use run::{row_bytes, Run, RunReader, RunWriter, RECORD_HEADER_BYTES};
pub use sort::{external_sort, sort_to_vec, SortStats, SortedStream};
pub use temp::{IoCounters, TempClock, TempSpace, TempTiming};

use wafer_engine::device::DeviceError;

/// A row: key and value bytes.
pub type Row = (Vec<u8>, Vec<u8>);

/// A joined row: the key, the left value and the right value.
pub type JoinRow = (Vec<u8>, Vec<u8>, Vec<u8>);

/// Errors of the query operators.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The temp space has no free cluster left.
    #[error("temp space full: all {clusters} clusters of {cluster_bytes} bytes are in use")]
    TempFull {
        /// Clusters of the temp space.
        clusters: u32,
        /// Cluster size in bytes.
        cluster_bytes: usize,
    },
    /// A bad parameter (cluster size, memory budget).
    #[error("query configuration: {0}")]
    Config(String),
    /// The temp device failed.
    #[error("temp device: {0}")]
    Device(#[from] DeviceError),
    /// An input failed (e.g. a cursor's engine error).
    #[error("input: {0}")]
    Input(#[from] wafer_engine::Error),
    /// A run read back does not decode (a bug, or a device that lost data).
    #[error("temp run corrupt: {0}")]
    Corrupt(String),
}

/// What one phase of an operator did on temp space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PhaseStats {
    /// Temp I/O of the phase.
    pub io: IoCounters,
    /// Time of the phase on the temp space's clock, in ns.
    pub time_ns: u64,
}

impl PhaseStats {
    /// Adds another phase's numbers to this one.
    pub fn add(&mut self, other: &PhaseStats) {
        let (a, b) = (&mut self.io, &other.io);
        a.bytes_written += b.bytes_written;
        a.bytes_read += b.bytes_read;
        a.writes += b.writes;
        a.reads += b.reads;
        a.trims += b.trims;
        a.bytes_trimmed += b.bytes_trimmed;
        self.time_ns += other.time_ns;
    }
}

/// Measures a phase: the temp counters and the clock at its start.
#[derive(Clone, Copy)]
pub(crate) struct PhaseMark {
    io: IoCounters,
    t0: u64,
}

impl PhaseMark {
    pub(crate) fn start(temp: &TempSpace) -> PhaseMark {
        PhaseMark {
            io: temp.io(),
            t0: temp.now_ns(),
        }
    }

    /// Waits for the phase's commands in flight and adds what happened since the mark to `into`.
    pub(crate) fn stop(self, temp: &mut TempSpace, into: &mut PhaseStats) {
        temp.sync();
        self.stop_in_flight(temp, into);
    }

    /// Adds what happened since the mark to `into`, leaving reads ahead in flight (a row pulled
    /// from a stream whose phase goes on).
    pub(crate) fn stop_in_flight(self, temp: &TempSpace, into: &mut PhaseStats) {
        into.add(&PhaseStats {
            io: temp.io().since(&self.io),
            time_ns: temp.now_ns().saturating_sub(self.t0),
        });
    }
}

/// Runs a join that hands its rows to a sink, collecting them.
pub(crate) fn collect_join<S>(
    run: impl FnOnce(JoinSink<'_>) -> Result<S, QueryError>,
) -> Result<(Vec<JoinRow>, S), QueryError> {
    let mut out = Vec::new();
    let stats = run(&mut |k, l, r| out.push((k.to_vec(), l.to_vec(), r.to_vec())))?;
    Ok((out, stats))
}

/// Wraps plain rows as an operator input (which takes results, as a cursor yields them).
pub fn ok_rows<I: IntoIterator<Item = Row>>(
    rows: I,
) -> impl Iterator<Item = Result<Row, QueryError>> {
    rows.into_iter().map(Ok)
}

/// Runs a merge reads at once with `budget_bytes` of memory: each open reader holds
/// `temp.reader_clusters()` clusters, the output one cluster plus the write-behind buffers.
pub fn merge_fan_in(budget_bytes: usize, temp: &TempSpace) -> usize {
    let clusters = budget_bytes / temp.cluster_bytes();
    clusters.saturating_sub(1 + temp.write_behind_clusters()) / temp.reader_clusters()
}

/// Partitions a hash partitioning writes at once with `budget_bytes` of memory: one filling
/// cluster each, besides the input reader's clusters and the write-behind buffers.
pub fn partition_fan_out(budget_bytes: usize, temp: &TempSpace) -> usize {
    let clusters = budget_bytes / temp.cluster_bytes();
    clusters.saturating_sub(temp.reader_clusters() + temp.write_behind_clusters())
}

/// Bytes of rows a sort run holds with `budget_bytes` of memory: the budget less the output
/// cluster and the write-behind buffers.
pub fn sort_area_bytes(budget_bytes: usize, temp: &TempSpace) -> usize {
    budget_bytes.saturating_sub((1 + temp.write_behind_clusters()) * temp.cluster_bytes())
}

/// Clusters a memory budget must hold at least: a merge of two runs (and a partitioning into
/// two) with the temp space's read-ahead and write-behind. Three with synchronous I/O.
pub fn min_budget_clusters(temp: &TempSpace) -> usize {
    2 * temp.reader_clusters() + 1 + temp.write_behind_clusters()
}

/// Checks a memory budget against [`min_budget_clusters`].
pub(crate) fn check_budget(budget_bytes: usize, temp: &TempSpace) -> Result<(), QueryError> {
    let c = temp.cluster_bytes();
    let min = min_budget_clusters(temp);
    if budget_bytes < min * c {
        return Err(QueryError::Config(format!(
            "memory budget {budget_bytes} bytes is below {min} clusters of {c} bytes (two runs \
             of a merge with their read-ahead, an output cluster and the write-behind buffers)"
        )));
    }
    Ok(())
}

/// A seeded 64-bit hash of a key (FNV-1a, then a splitmix64 finalizer with the seed), so that
/// recursive partitioning with another seed splits a partition differently.
pub fn key_hash(key: &[u8], seed: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for &b in key {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}
