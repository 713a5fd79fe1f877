//! Temp space: a device cut into clusters (the I/O unit), runs written sequentially a cluster at
//! a time, read back a cluster at a time, and trimmed when released.
//!
//! On a simulated device (a [`VirtualClock`]) the temp space also models how a database server
//! overlaps temp I/O with its own work ([`TempTiming`]): reads ahead of each run reader, writes
//! behind the writer, a device queue depth, and a CPU cost per row. A command is submitted at the
//! operator's time and runs on the device model (which queues it behind busy dies or a busy
//! actuator); the operator waits for a command only when it needs the data or the buffer back.
//! On any other clock every command is synchronous and the CPU cost is not charged.

use super::run::Run;
use super::QueryError;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};
use std::sync::Arc;
use wafer_engine::device::{BlockDevice, VirtualClock};
use wafer_engine::Clock;

/// Smallest cluster size accepted (the paper's sweep starts at 2 KiB).
pub const MIN_CLUSTER_BYTES: usize = 2 << 10;
/// Largest cluster size accepted (the paper's sweep ends at 256 KiB).
pub const MAX_CLUSTER_BYTES: usize = 256 << 10;

/// Running totals of a temp space's I/O. Operators take differences per phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IoCounters {
    /// Bytes written to the device (whole clusters).
    pub bytes_written: u64,
    /// Bytes read from the device (whole clusters).
    pub bytes_read: u64,
    /// Write commands (one per cluster).
    pub writes: u64,
    /// Read commands (one per cluster).
    pub reads: u64,
    /// Trim commands (one per contiguous range released).
    pub trims: u64,
    /// Bytes trimmed.
    pub bytes_trimmed: u64,
}

impl IoCounters {
    /// `self - earlier`, field by field.
    pub fn since(&self, earlier: &IoCounters) -> IoCounters {
        IoCounters {
            bytes_written: self.bytes_written - earlier.bytes_written,
            bytes_read: self.bytes_read - earlier.bytes_read,
            writes: self.writes - earlier.writes,
            reads: self.reads - earlier.reads,
            trims: self.trims - earlier.trims,
            bytes_trimmed: self.bytes_trimmed - earlier.bytes_trimmed,
        }
    }
}

/// How temp I/O overlaps with the operator (applied in virtual time; on a wall clock only the
/// buffer counts, which fix fan-in and fan-out, apply).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TempTiming {
    /// CPU time per row an operator step handles, in ns: a row put into a sort run, merged,
    /// partitioned, built into a hash table or probed.
    pub cpu_ns_per_row: u64,
    /// Clusters each run reader reads ahead of the one it consumes (0 = read on demand,
    /// 1 = double buffering). Each costs a cluster of the memory budget per open reader.
    pub read_ahead: usize,
    /// Cluster buffers of writes in flight behind the writers (0 = each write waits). Each costs
    /// a cluster of the memory budget.
    pub write_behind: usize,
    /// Most commands in flight at once (the device's queue depth, at least 1).
    pub queue_depth: usize,
}

impl TempTiming {
    /// Every command waited for, no CPU cost: the I/O alone.
    pub const SYNCHRONOUS: TempTiming = TempTiming {
        cpu_ns_per_row: 0,
        read_ahead: 0,
        write_behind: 0,
        queue_depth: 1,
    };
}

impl Default for TempTiming {
    fn default() -> Self {
        TempTiming::SYNCHRONOUS
    }
}

/// The clock operators measure with; only a virtual clock lets commands overlap.
#[derive(Clone)]
pub enum TempClock {
    /// The virtual clock the simulated temp device runs on.
    Virtual(Arc<VirtualClock>),
    /// Any other clock (wall time, or a memory device): synchronous commands.
    Other(Arc<dyn Clock>),
}

impl TempClock {
    fn now(&self) -> u64 {
        match self {
            TempClock::Virtual(c) => c.now(),
            TempClock::Other(c) => c.now_ns(),
        }
    }
}

/// Temp space over a block device. Not shared: one operator (or one query) at a time.
pub struct TempSpace {
    dev: Box<dyn BlockDevice>,
    cluster: usize,
    clock: TempClock,
    timing: TempTiming,
    free: BTreeSet<u32>,
    total_clusters: u32,
    io: IoCounters,
    /// Most clusters in use at once since the space was made.
    peak_in_use: u32,
    /// Completion times of the commands in flight (virtual time).
    in_flight: BinaryHeap<Reverse<u64>>,
    /// Completion times of the writes in flight, oldest first (their buffers are busy).
    writes_in_flight: VecDeque<u64>,
}

impl TempSpace {
    /// Temp space of `cluster_bytes` clusters (a power of two, 2 KiB..=256 KiB, a multiple of the
    /// device block) over all of `dev`, with synchronous commands; `clock` is the time operators
    /// measure phases with (give the device's virtual clock for a simulated device).
    pub fn new(
        dev: Box<dyn BlockDevice>,
        cluster_bytes: usize,
        clock: Arc<dyn Clock>,
    ) -> Result<TempSpace, QueryError> {
        TempSpace::with_timing(
            dev,
            cluster_bytes,
            None,
            TempClock::Other(clock),
            TempTiming::SYNCHRONOUS,
        )
    }

    /// Temp space over the first `space_bytes` of `dev` (all of it when `None`) with a timing
    /// model. Overlap needs [`TempClock::Virtual`], the clock of the simulated device.
    pub fn with_timing(
        dev: Box<dyn BlockDevice>,
        cluster_bytes: usize,
        space_bytes: Option<u64>,
        clock: TempClock,
        timing: TempTiming,
    ) -> Result<TempSpace, QueryError> {
        let block = dev.block_bytes() as usize;
        if !cluster_bytes.is_power_of_two()
            || !(MIN_CLUSTER_BYTES..=MAX_CLUSTER_BYTES).contains(&cluster_bytes)
            || block == 0
            || !cluster_bytes.is_multiple_of(block)
        {
            return Err(QueryError::Config(format!(
                "cluster size {cluster_bytes} must be a power of two in \
                 {MIN_CLUSTER_BYTES}..={MAX_CLUSTER_BYTES} and a multiple of the device block \
                 ({block})"
            )));
        }
        if timing.queue_depth == 0 {
            return Err(QueryError::Config("queue depth must be at least 1".into()));
        }
        let bytes = space_bytes.unwrap_or(u64::MAX).min(dev.capacity_bytes());
        let total = (bytes / cluster_bytes as u64).min(u32::MAX as u64) as u32;
        Ok(TempSpace {
            dev,
            cluster: cluster_bytes,
            clock,
            timing,
            free: (0..total).collect(),
            total_clusters: total,
            io: IoCounters::default(),
            peak_in_use: 0,
            in_flight: BinaryHeap::new(),
            writes_in_flight: VecDeque::new(),
        })
    }

    /// The cluster size in bytes (the I/O unit).
    pub fn cluster_bytes(&self) -> usize {
        self.cluster
    }
    /// The timing model.
    pub fn timing(&self) -> TempTiming {
        self.timing
    }
    /// Clusters the space holds.
    pub fn total_clusters(&self) -> u32 {
        self.total_clusters
    }
    /// Clusters allocated now.
    pub fn clusters_in_use(&self) -> u32 {
        self.total_clusters - self.free.len() as u32
    }
    /// Most clusters in use at once so far.
    pub fn peak_clusters_in_use(&self) -> u32 {
        self.peak_in_use
    }
    /// The I/O totals so far.
    pub fn io(&self) -> IoCounters {
        self.io
    }
    /// The operators' clock, in ns.
    pub fn now_ns(&self) -> u64 {
        self.clock.now()
    }
    /// The device (e.g. for its statistics).
    pub fn device(&self) -> &dyn BlockDevice {
        self.dev.as_ref()
    }
    /// Takes the device back.
    pub fn into_device(self) -> Box<dyn BlockDevice> {
        self.dev
    }

    /// Clusters of memory an open run reader holds (the one it consumes and its read-ahead).
    pub fn reader_clusters(&self) -> usize {
        1 + self.timing.read_ahead
    }

    /// Clusters of memory the writers' side holds besides one filling buffer per output run
    /// (the buffers of writes in flight).
    pub fn write_behind_clusters(&self) -> usize {
        self.timing.write_behind
    }

    /// Charges the CPU time of `rows` rows (virtual time only).
    pub fn cpu_rows(&mut self, rows: u64) {
        if let TempClock::Virtual(c) = &self.clock {
            c.advance_by(rows.saturating_mul(self.timing.cpu_ns_per_row));
        }
    }

    /// Waits for every command in flight (the end of a phase).
    pub fn sync(&mut self) {
        if let Some(last) = self.in_flight.iter().map(|r| r.0).max() {
            self.wait_until(last);
        }
        self.in_flight.clear();
        self.writes_in_flight.clear();
    }

    /// Moves the operator's time to `t` (when it needs a command's result).
    pub(crate) fn wait_until(&mut self, t: u64) {
        if let TempClock::Virtual(c) = &self.clock {
            c.advance_to(t);
        }
    }

    /// Runs `op` on the device as a command submitted now and returns its completion time,
    /// without waiting for it when the clock is virtual (at most `queue_depth` in flight).
    fn submit(
        &mut self,
        op: impl FnOnce(&mut dyn BlockDevice) -> Result<(), wafer_engine::device::DeviceError>,
    ) -> Result<u64, QueryError> {
        let TempClock::Virtual(clock) = &self.clock else {
            op(self.dev.as_mut())?;
            return Ok(self.clock.now());
        };
        let clock = clock.clone();
        let now = clock.now();
        while self.in_flight.peek().is_some_and(|r| r.0 <= now) {
            self.in_flight.pop();
        }
        if self.in_flight.len() >= self.timing.queue_depth {
            let Reverse(first) = self.in_flight.pop().expect("queue not empty");
            clock.advance_to(first);
        }
        let at = clock.now();
        op(self.dev.as_mut())?;
        let done = clock.now();
        clock.set(at);
        self.in_flight.push(Reverse(done));
        Ok(done)
    }

    pub(crate) fn alloc(&mut self, after: Option<u32>) -> Result<u32, QueryError> {
        let from = after.map_or(0, |c| c + 1);
        let c = self
            .free
            .range(from..)
            .next()
            .or_else(|| self.free.iter().next())
            .copied()
            .ok_or(QueryError::TempFull {
                clusters: self.total_clusters,
                cluster_bytes: self.cluster,
            })?;
        self.free.remove(&c);
        self.peak_in_use = self.peak_in_use.max(self.clusters_in_use());
        Ok(c)
    }

    /// Writes cluster `c` behind the writer: returns once the write is submitted and a buffer
    /// is free again (at most `write_behind` writes left in flight).
    pub(crate) fn write_cluster(&mut self, c: u32, data: &[u8]) -> Result<(), QueryError> {
        debug_assert_eq!(data.len(), self.cluster);
        let off = c as u64 * self.cluster as u64;
        let done = self.submit(|d| d.write_at(off, data))?;
        self.io.writes += 1;
        self.io.bytes_written += data.len() as u64;
        self.writes_in_flight.push_back(done);
        while self.writes_in_flight.len() > self.timing.write_behind {
            let oldest = self
                .writes_in_flight
                .pop_front()
                .expect("a write in flight");
            self.wait_until(oldest);
        }
        Ok(())
    }

    /// Reads cluster `c` into `buf` and returns when the data is there (virtual time: the
    /// caller waits for it with [`TempSpace::wait_until`]).
    pub(crate) fn read_cluster(&mut self, c: u32, buf: &mut [u8]) -> Result<u64, QueryError> {
        let off = c as u64 * self.cluster as u64;
        let done = self.submit(|d| d.read_at(off, buf))?;
        self.io.reads += 1;
        self.io.bytes_read += buf.len() as u64;
        Ok(done)
    }

    /// Frees the clusters of `run` and trims them (one trim per contiguous range, queued).
    pub fn release(&mut self, run: Run) -> Result<(), QueryError> {
        let mut cs = run.into_clusters();
        cs.sort_unstable();
        let mut result = Ok(());
        let mut i = 0;
        while i < cs.len() {
            let mut j = i + 1;
            while j < cs.len() && cs[j] == cs[j - 1] + 1 {
                j += 1;
            }
            let len = (j - i) as u64 * self.cluster as u64;
            let off = cs[i] as u64 * self.cluster as u64;
            // Trims are queued like writes; nothing waits for them.
            match self.submit(|d| d.trim(off, len)) {
                Ok(_) => {
                    self.io.trims += 1;
                    self.io.bytes_trimmed += len;
                }
                Err(e) if result.is_ok() => result = Err(e),
                Err(_) => {}
            }
            i = j;
        }
        self.free.extend(cs);
        result
    }

    /// Frees and trims every cluster in use (after an operator failed, e.g. with
    /// [`QueryError::TempFull`], and left runs behind).
    pub fn release_all(&mut self) -> Result<(), QueryError> {
        let used: Vec<u32> = (0..self.total_clusters)
            .filter(|c| !self.free.contains(c))
            .collect();
        self.release(Run::from_clusters(used))
    }
}
