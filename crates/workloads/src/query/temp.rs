//! Temp space: a device cut into clusters (the I/O unit), runs written sequentially a cluster at
//! a time, read back a cluster at a time, and trimmed when released.
//!
//! A run is a byte stream of records `key_len: u32 LE, value_len: u32 LE, key, value`; records
//! may span cluster boundaries and the last cluster is padded with zeros. The allocator hands out
//! the lowest free cluster at or after the previous cluster of the same run, so a run written
//! alone is one contiguous extent.

use super::{QueryError, Row};
use std::collections::BTreeSet;
use std::sync::Arc;
use wafer_engine::device::BlockDevice;
use wafer_engine::Clock;

/// Smallest cluster size accepted (the paper's sweep starts at 2 KiB).
pub const MIN_CLUSTER_BYTES: usize = 2 << 10;
/// Largest cluster size accepted (the paper's sweep ends at 256 KiB).
pub const MAX_CLUSTER_BYTES: usize = 256 << 10;

/// Bytes of a record's header (two u32 lengths).
pub const RECORD_HEADER_BYTES: usize = 8;

/// Bytes a row takes in a run (and in an operator's memory budget).
pub fn row_bytes(key: &[u8], value: &[u8]) -> usize {
    RECORD_HEADER_BYTES + key.len() + value.len()
}

/// Running totals of a temp space's I/O. Operators take differences per phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

/// A finished run on temp space: its clusters in order and the bytes and rows it holds.
#[derive(Debug, Default)]
pub struct Run {
    clusters: Vec<u32>,
    bytes: u64,
    rows: u64,
}

impl Run {
    /// Bytes of records in the run (without the padding of the last cluster).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// Rows in the run.
    pub fn rows(&self) -> u64 {
        self.rows
    }
    /// Clusters the run occupies.
    pub fn clusters(&self) -> usize {
        self.clusters.len()
    }
}

/// Temp space over a block device. Not shared: one operator (or one query) at a time.
pub struct TempSpace {
    dev: Box<dyn BlockDevice>,
    cluster: usize,
    clock: Arc<dyn Clock>,
    free: BTreeSet<u32>,
    total_clusters: u32,
    io: IoCounters,
    /// Most clusters in use at once since the space was made.
    peak_in_use: u32,
}

impl TempSpace {
    /// Temp space of `cluster_bytes` clusters (a power of two, 2 KiB..=256 KiB, a multiple of the
    /// device block) over all of `dev`; `clock` is the time operators measure phases with (give
    /// the device's virtual clock for a simulated device).
    pub fn new(
        dev: Box<dyn BlockDevice>,
        cluster_bytes: usize,
        clock: Arc<dyn Clock>,
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
        let total = (dev.capacity_bytes() / cluster_bytes as u64).min(u32::MAX as u64) as u32;
        Ok(TempSpace {
            dev,
            cluster: cluster_bytes,
            clock,
            free: (0..total).collect(),
            total_clusters: total,
            io: IoCounters::default(),
            peak_in_use: 0,
        })
    }

    /// The cluster size in bytes (the I/O unit).
    pub fn cluster_bytes(&self) -> usize {
        self.cluster
    }
    /// Clusters the device holds.
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
        self.clock.now_ns()
    }
    /// The device (e.g. for its statistics).
    pub fn device(&self) -> &dyn BlockDevice {
        self.dev.as_ref()
    }
    /// Takes the device back.
    pub fn into_device(self) -> Box<dyn BlockDevice> {
        self.dev
    }

    fn alloc(&mut self, after: Option<u32>) -> Result<u32, QueryError> {
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

    fn write_cluster(&mut self, c: u32, data: &[u8]) -> Result<(), QueryError> {
        debug_assert_eq!(data.len(), self.cluster);
        self.dev.write_at(c as u64 * self.cluster as u64, data)?;
        self.io.writes += 1;
        self.io.bytes_written += data.len() as u64;
        Ok(())
    }

    fn read_cluster(&mut self, c: u32, buf: &mut [u8]) -> Result<(), QueryError> {
        self.dev.read_at(c as u64 * self.cluster as u64, buf)?;
        self.io.reads += 1;
        self.io.bytes_read += buf.len() as u64;
        Ok(())
    }

    /// Frees the clusters of `run` and trims them (one trim per contiguous range).
    pub fn release(&mut self, run: Run) -> Result<(), QueryError> {
        let mut cs = run.clusters;
        cs.sort_unstable();
        let mut result = Ok(());
        let mut i = 0;
        while i < cs.len() {
            let mut j = i + 1;
            while j < cs.len() && cs[j] == cs[j - 1] + 1 {
                j += 1;
            }
            let len = (j - i) as u64 * self.cluster as u64;
            match self.dev.trim(cs[i] as u64 * self.cluster as u64, len) {
                Ok(()) => {
                    self.io.trims += 1;
                    self.io.bytes_trimmed += len;
                }
                Err(e) if result.is_ok() => result = Err(e.into()),
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
        self.release(Run {
            clusters: used,
            bytes: 0,
            rows: 0,
        })
    }
}

/// Writes one run sequentially, a cluster at a time (the buffer is one cluster of memory).
pub struct RunWriter {
    run: Run,
    buf: Vec<u8>,
}

impl RunWriter {
    /// A new, empty run on `temp`'s cluster size.
    pub fn new(temp: &TempSpace) -> RunWriter {
        RunWriter {
            run: Run::default(),
            buf: Vec::with_capacity(temp.cluster),
        }
    }

    /// Bytes of records pushed so far.
    pub fn bytes(&self) -> u64 {
        self.run.bytes
    }

    /// Appends one row.
    pub fn push(
        &mut self,
        temp: &mut TempSpace,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), QueryError> {
        self.put(temp, &(key.len() as u32).to_le_bytes())?;
        self.put(temp, &(value.len() as u32).to_le_bytes())?;
        self.put(temp, key)?;
        self.put(temp, value)?;
        self.run.bytes += row_bytes(key, value) as u64;
        self.run.rows += 1;
        Ok(())
    }

    fn put(&mut self, temp: &mut TempSpace, mut data: &[u8]) -> Result<(), QueryError> {
        while !data.is_empty() {
            let n = (temp.cluster - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
            if self.buf.len() == temp.cluster {
                self.spill(temp)?;
            }
        }
        Ok(())
    }

    fn spill(&mut self, temp: &mut TempSpace) -> Result<(), QueryError> {
        let c = temp.alloc(self.run.clusters.last().copied())?;
        self.run.clusters.push(c);
        self.buf.resize(temp.cluster, 0);
        temp.write_cluster(c, &self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// Writes the last, padded cluster and returns the run. On an error the run is freed.
    pub fn finish(mut self, temp: &mut TempSpace) -> Result<Run, QueryError> {
        if !self.buf.is_empty() {
            if let Err(e) = self.spill(temp) {
                let _ = temp.release(self.run);
                return Err(e);
            }
        }
        Ok(self.run)
    }

    /// Gives up the run: frees and trims what it wrote.
    pub fn abandon(self, temp: &mut TempSpace) -> Result<(), QueryError> {
        temp.release(self.run)
    }
}

/// Reads a run back in order, one cluster at a time (the buffer is one cluster of memory).
pub struct RunReader {
    run: Run,
    next_cluster: usize,
    buf: Vec<u8>,
    pos: usize,
    left: u64,
}

impl RunReader {
    /// A reader at the start of `run`.
    pub fn new(run: Run) -> RunReader {
        let left = run.bytes;
        RunReader {
            run,
            next_cluster: 0,
            buf: Vec::new(),
            pos: 0,
            left,
        }
    }

    /// The next row, or None at the end of the run.
    pub fn next_row(&mut self, temp: &mut TempSpace) -> Result<Option<Row>, QueryError> {
        if self.left == 0 {
            return Ok(None);
        }
        let mut head = [0u8; RECORD_HEADER_BYTES];
        self.take(temp, &mut head)?;
        let klen = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize;
        let vlen = u32::from_le_bytes(head[4..].try_into().expect("4 bytes")) as usize;
        if (klen + vlen) as u64 > self.left {
            return Err(QueryError::Corrupt(format!(
                "record of {klen}+{vlen} bytes with {} left in the run",
                self.left
            )));
        }
        let mut key = vec![0; klen];
        let mut value = vec![0; vlen];
        self.take(temp, &mut key)?;
        self.take(temp, &mut value)?;
        Ok(Some((key, value)))
    }

    fn take(&mut self, temp: &mut TempSpace, out: &mut [u8]) -> Result<(), QueryError> {
        let mut done = 0;
        while done < out.len() {
            if self.pos == self.buf.len() {
                let c = *self.run.clusters.get(self.next_cluster).ok_or_else(|| {
                    QueryError::Corrupt("run ends before its byte count".to_string())
                })?;
                self.buf.resize(temp.cluster, 0);
                temp.read_cluster(c, &mut self.buf)?;
                self.next_cluster += 1;
                self.pos = 0;
            }
            let n = (self.buf.len() - self.pos).min(out.len() - done);
            out[done..done + n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
            self.pos += n;
            done += n;
        }
        self.left -= out.len() as u64;
        Ok(())
    }

    /// Goes back to the start of the run (to read it again).
    pub fn rewind(&mut self) {
        self.next_cluster = 0;
        self.buf.clear();
        self.pos = 0;
        self.left = self.run.bytes;
    }

    /// The run being read.
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// Frees and trims the run (read or not).
    pub fn release(self, temp: &mut TempSpace) -> Result<(), QueryError> {
        temp.release(self.run)
    }
}
