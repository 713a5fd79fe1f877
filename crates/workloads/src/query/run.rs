//! Runs on temp space: a byte stream of records `key_len: u32 LE, value_len: u32 LE, key, value`
//! written sequentially a cluster at a time and read back a cluster at a time (with the temp
//! space's read-ahead). Records may span cluster boundaries; the last cluster is padded with
//! zeros. The allocator hands out the lowest free cluster at or after the previous cluster of the
//! same run, so a run written alone is one contiguous extent.

use super::temp::TempSpace;
use super::{QueryError, Row};
use std::collections::VecDeque;

/// Bytes of a record's header (two u32 lengths).
pub const RECORD_HEADER_BYTES: usize = 8;

/// Bytes a row takes in a run (and in an operator's memory budget).
pub fn row_bytes(key: &[u8], value: &[u8]) -> usize {
    RECORD_HEADER_BYTES + key.len() + value.len()
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
    pub(crate) fn from_clusters(clusters: Vec<u32>) -> Run {
        Run {
            clusters,
            bytes: 0,
            rows: 0,
        }
    }
    pub(crate) fn into_clusters(self) -> Vec<u32> {
        self.clusters
    }
}

/// Writes one run sequentially, a cluster at a time (one buffer being filled; full ones go to
/// the temp space's write-behind).
pub struct RunWriter {
    run: Run,
    buf: Vec<u8>,
}

impl RunWriter {
    /// A new, empty run on `temp`'s cluster size.
    pub fn new(temp: &TempSpace) -> RunWriter {
        RunWriter {
            run: Run::default(),
            buf: Vec::with_capacity(temp.cluster_bytes()),
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
        let cluster = temp.cluster_bytes();
        while !data.is_empty() {
            let n = (cluster - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
            if self.buf.len() == cluster {
                self.spill(temp)?;
            }
        }
        Ok(())
    }

    fn spill(&mut self, temp: &mut TempSpace) -> Result<(), QueryError> {
        let c = temp.alloc(self.run.clusters.last().copied())?;
        self.run.clusters.push(c);
        self.buf.resize(temp.cluster_bytes(), 0);
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

/// A cluster read (or being read) ahead: its data and when the read completes.
struct Ahead {
    buf: Vec<u8>,
    done_ns: u64,
}

/// Reads a run back in order, one cluster at a time, keeping the temp space's read-ahead
/// clusters in flight (the buffers are `temp.reader_clusters()` clusters of memory).
pub struct RunReader {
    run: Run,
    /// Clusters held (the one consumed and those read ahead); None: the temp space's default.
    depth: Option<usize>,
    /// Clusters whose read was submitted.
    issued: usize,
    ahead: VecDeque<Ahead>,
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
            depth: None,
            issued: 0,
            ahead: VecDeque::new(),
            buf: Vec::new(),
            pos: 0,
            left,
        }
    }

    /// A reader holding `clusters` clusters (at least the temp space's default): an operator
    /// with memory to spare reads further ahead.
    pub fn with_depth(run: Run, clusters: usize) -> RunReader {
        RunReader {
            depth: Some(clusters),
            ..RunReader::new(run)
        }
    }

    /// Submits the reads of the next clusters, up to the read-ahead (without waiting for them).
    pub fn prefetch(&mut self, temp: &mut TempSpace) -> Result<(), QueryError> {
        let want = self
            .depth
            .map_or(temp.reader_clusters(), |d| d.max(temp.reader_clusters()));
        while self.ahead.len() < want && self.issued < self.run.clusters.len() {
            let c = self.run.clusters[self.issued];
            let mut buf = vec![0; temp.cluster_bytes()];
            let done_ns = temp.read_cluster(c, &mut buf)?;
            self.ahead.push_back(Ahead { buf, done_ns });
            self.issued += 1;
        }
        Ok(())
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
                self.next_cluster(temp)?;
            }
            let n = (self.buf.len() - self.pos).min(out.len() - done);
            out[done..done + n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
            self.pos += n;
            done += n;
        }
        self.left -= out.len() as u64;
        Ok(())
    }

    /// Moves to the next cluster: tops up the read-ahead (so the read of the cluster after this
    /// one starts now, double buffering) and waits for this one's read.
    fn next_cluster(&mut self, temp: &mut TempSpace) -> Result<(), QueryError> {
        if self.ahead.is_empty() && self.issued >= self.run.clusters.len() {
            return Err(QueryError::Corrupt(
                "run ends before its byte count".to_string(),
            ));
        }
        // The cluster consumed next, plus `read_ahead` more in flight.
        self.prefetch(temp)?;
        let a = self.ahead.pop_front().expect("a cluster read ahead");
        temp.wait_until(a.done_ns);
        self.buf = a.buf;
        self.pos = 0;
        Ok(())
    }

    /// Sets the clusters held from the next read on (at least the temp space's default).
    pub fn set_depth(&mut self, clusters: usize) {
        self.depth = Some(clusters);
    }

    /// Goes back to the start of the run (to read it again); reads ahead are dropped.
    pub fn rewind(&mut self) {
        self.issued = 0;
        self.ahead.clear();
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
