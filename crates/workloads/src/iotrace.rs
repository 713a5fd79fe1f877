//! Observing a device's I/O: the time x address scatter (paper 003's Figures 4-8), a
//! [`BlockDevice`] wrapper that records each read and write with its submission time, thinned
//! evenly to a bounded number of points so a long run stays small in its JSON; and the count and
//! time of writes and flushes (a log device's forced writes).

use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use wafer_engine::device::{
    BlockDevice, Capabilities, DeviceError, DeviceStats, RemapOp, ZoneReport,
};
use wafer_engine::Clock;

/// Recorded I/O: parallel arrays, one entry per kept command.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IoTrace {
    /// Submission time of each kept command, in ns (the device's clock).
    pub t_ns: Vec<u64>,
    /// Byte offset of each kept command.
    pub offset: Vec<u64>,
    /// Bytes of each kept command.
    pub len: Vec<u32>,
    /// Whether each kept command is a write (else a read).
    pub write: Vec<bool>,
    /// Every `stride`-th command is kept (doubles whenever the trace reaches its cap).
    pub stride: u64,
    /// Commands seen (reads and writes; trims and flushes are not recorded).
    pub commands: u64,
    /// Most points kept.
    pub cap: usize,
}

impl IoTrace {
    /// An empty trace keeping at most `cap` points (at least 2).
    pub fn new(cap: usize) -> IoTrace {
        IoTrace {
            stride: 1,
            cap: cap.max(2),
            ..IoTrace::default()
        }
    }

    /// Points kept.
    pub fn len(&self) -> usize {
        self.t_ns.len()
    }

    /// Whether no point is kept.
    pub fn is_empty(&self) -> bool {
        self.t_ns.is_empty()
    }

    /// Records one command; keeps it if it falls on the stride.
    pub fn record(&mut self, t_ns: u64, offset: u64, len: u64, write: bool) {
        let keep = self.commands.is_multiple_of(self.stride);
        self.commands += 1;
        if !keep {
            return;
        }
        self.t_ns.push(t_ns);
        self.offset.push(offset);
        self.len.push(len.min(u32::MAX as u64) as u32);
        self.write.push(write);
        if self.t_ns.len() >= self.cap {
            // Keep every other point (those on the doubled stride) and double the stride.
            keep_even(&mut self.t_ns);
            keep_even(&mut self.offset);
            keep_even(&mut self.len);
            keep_even(&mut self.write);
            self.stride *= 2;
        }
    }
}

/// Keeps the elements at even indices.
fn keep_even<T>(v: &mut Vec<T>) {
    let mut i = 0usize;
    v.retain(|_| {
        i += 1;
        (i - 1).is_multiple_of(2)
    });
}

/// Counts and times of a device's commands, in the clock's ns (virtual time for a simulated
/// device: submission to completion).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoTiming {
    /// Write commands.
    pub writes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Sum of the writes' durations.
    pub write_ns: u64,
    /// Flush commands.
    pub flushes: u64,
    /// Sum of the flushes' durations.
    pub flush_ns: u64,
}

impl IoTiming {
    /// `self - earlier`.
    pub fn since(&self, earlier: &IoTiming) -> IoTiming {
        IoTiming {
            writes: self.writes - earlier.writes,
            write_bytes: self.write_bytes - earlier.write_bytes,
            write_ns: self.write_ns - earlier.write_ns,
            flushes: self.flushes - earlier.flushes,
            flush_ns: self.flush_ns - earlier.flush_ns,
        }
    }

    /// Mean bytes per write.
    pub fn mean_write_bytes(&self) -> f64 {
        self.write_bytes as f64 / self.writes.max(1) as f64
    }

    /// Mean time of a forced write: a write and its share of the flushes, in ns.
    pub fn mean_forced_write_ns(&self) -> f64 {
        (self.write_ns + self.flush_ns) as f64 / self.writes.max(1) as f64
    }
}

/// A trace shared between a watched device and whoever reads it afterwards.
pub type SharedTrace = Arc<Mutex<IoTrace>>;
/// Timing shared between a watched device and whoever reads it afterwards.
pub type SharedTiming = Arc<Mutex<IoTiming>>;

/// A device that records its reads and writes into a shared [`IoTrace`] and/or counts and times
/// its writes and flushes into a shared [`IoTiming`], on `clock` (the simulated device's).
pub struct WatchedDevice {
    inner: Box<dyn BlockDevice>,
    clock: Arc<dyn Clock>,
    trace: Option<SharedTrace>,
    timing: Option<SharedTiming>,
}

impl WatchedDevice {
    /// Records `inner`'s reads and writes into `trace` and/or times its writes and flushes
    /// into `timing`.
    pub fn watched(
        inner: Box<dyn BlockDevice>,
        clock: Arc<dyn Clock>,
        trace: Option<SharedTrace>,
        timing: Option<SharedTiming>,
    ) -> WatchedDevice {
        WatchedDevice {
            inner,
            clock,
            trace,
            timing,
        }
    }

    /// Records `inner`'s reads and writes, with their submission times, into `trace`.
    pub fn traced(
        inner: Box<dyn BlockDevice>,
        clock: Arc<dyn Clock>,
        trace: SharedTrace,
    ) -> WatchedDevice {
        WatchedDevice {
            inner,
            clock,
            trace: Some(trace),
            timing: None,
        }
    }

    /// Counts and times `inner`'s writes and flushes into `timing`.
    pub fn timed(
        inner: Box<dyn BlockDevice>,
        clock: Arc<dyn Clock>,
        timing: SharedTiming,
    ) -> WatchedDevice {
        WatchedDevice {
            inner,
            clock,
            trace: None,
            timing: Some(timing),
        }
    }

    fn note(&self, offset: u64, len: usize, write: bool) {
        if let Some(t) = &self.trace {
            let now = self.clock.now_ns();
            t.lock()
                .expect("trace lock")
                .record(now, offset, len as u64, write);
        }
    }

    /// Runs `op`, adding its duration to the timing (`write`: a write of that many bytes; None:
    /// a flush).
    fn timed_op(
        &mut self,
        write: Option<u64>,
        op: impl FnOnce(&mut dyn BlockDevice) -> Result<(), DeviceError>,
    ) -> Result<(), DeviceError> {
        let t0 = self.clock.now_ns();
        op(self.inner.as_mut())?;
        if let Some(timing) = &self.timing {
            let d = self.clock.now_ns().saturating_sub(t0);
            let mut t = timing.lock().expect("timing lock");
            match write {
                Some(bytes) => {
                    t.writes += 1;
                    t.write_bytes += bytes;
                    t.write_ns += d;
                }
                None => {
                    t.flushes += 1;
                    t.flush_ns += d;
                }
            }
        }
        Ok(())
    }
}

impl BlockDevice for WatchedDevice {
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn block_bytes(&self) -> u32 {
        self.inner.block_bytes()
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        self.note(offset, buf.len(), false);
        self.inner.read_at(offset, buf)
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.note(offset, data.len(), true);
        self.timed_op(Some(data.len() as u64), |d| d.write_at(offset, data))
    }
    fn flush(&mut self) -> Result<(), DeviceError> {
        self.timed_op(None, |d| d.flush())
    }
    fn trim(&mut self, offset: u64, len: u64) -> Result<(), DeviceError> {
        self.inner.trim(offset, len)
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }
    fn write_placed(&mut self, offset: u64, data: &[u8], pid: u16) -> Result<(), DeviceError> {
        self.note(offset, data.len(), true);
        self.timed_op(Some(data.len() as u64), |d| {
            d.write_placed(offset, data, pid)
        })
    }
    // Remaps and zone commands pass through unobserved (they move no host data at an address
    // known before the command; a zone append's address is known only after it).
    fn remap(&mut self, ops: &[RemapOp]) -> Result<(), DeviceError> {
        self.inner.remap(ops)
    }
    fn zone_append(&mut self, zone: u32, data: &[u8]) -> Result<u64, DeviceError> {
        self.inner.zone_append(zone, data)
    }
    fn zone_reset(&mut self, zone: u32) -> Result<(), DeviceError> {
        self.inner.zone_reset(zone)
    }
    fn zone_finish(&mut self, zone: u32) -> Result<(), DeviceError> {
        self.inner.zone_finish(zone)
    }
    fn zone_report(&mut self, zone: u32) -> Result<ZoneReport, DeviceError> {
        self.inner.zone_report(zone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_an_even_stride_within_the_cap() {
        let mut t = IoTrace::new(100);
        for i in 0..10_000u64 {
            t.record(i, i * 4096, 4096, i % 3 == 0);
        }
        assert_eq!(t.commands, 10_000);
        assert!(t.len() < 100 && t.len() >= 50, "{}", t.len());
        // Every kept point is on the stride, in order.
        assert!(t.t_ns.iter().all(|x| x % t.stride == 0));
        assert!(t.t_ns.windows(2).all(|w| w[1] - w[0] == t.stride));
        assert_eq!(t.offset[1], t.stride * 4096);
        assert!(t.write[0]);
    }
}
