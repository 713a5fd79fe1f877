//! Busy-time model of dies and channels, and latency histograms.
//!
//! Every die and every channel has a `busy_until` time (ns). An operation starts when both what it
//! waits for and the resource are free, and occupies the resource for its duration, so work queued on
//! a die (GC reads, programs, erases) delays the host commands behind it. Die `d` hangs off channel
//! `d % channels`. A die with several planes programs them together (multi-plane), so one page
//! program occupies the die for `program_ns / planes`.

use crate::config::{Geometry, TimingConfig};
use crate::divide::Divisor;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

pub(crate) struct Timing {
    pub cfg: TimingConfig,
    die_busy: Vec<u64>,
    chan_busy: Vec<u64>,
    /// Divides a die number by the channel count (its remainder is the die's channel).
    channels: Divisor,
    page_xfer_ns: u64,
    unit_xfer_ns: u64,
    program_die_ns: u64,
    write_window_ns: u64,
}

fn xfer_ns(bytes: u64, mb_s: u64) -> u64 {
    // MB/s = bytes/us, so ns = bytes * 1000 / MB/s.
    (bytes * 1000).div_ceil(mb_s.max(1))
}

impl Timing {
    pub fn new(cfg: &TimingConfig, g: &Geometry, unit_bytes: u32) -> Self {
        let program_die_ns = cfg.program_ns / g.planes_per_die as u64;
        Timing {
            cfg: cfg.clone(),
            die_busy: vec![0; g.dies() as usize],
            chan_busy: vec![0; g.channels as usize],
            channels: Divisor::new(g.channels),
            page_xfer_ns: xfer_ns(g.page_size_bytes as u64, cfg.channel_mb_s),
            unit_xfer_ns: xfer_ns(unit_bytes as u64, cfg.channel_mb_s),
            program_die_ns,
            write_window_ns: cfg.write_buffer_pages_per_die as u64 * program_die_ns,
        }
    }

    #[inline]
    pub fn enabled(&self) -> bool {
        self.cfg.enabled
    }

    #[inline]
    fn chan(&self, die: u32) -> usize {
        self.channels.div_rem(die).1 as usize
    }

    /// Reads `units` mapping units from one page of `die`: array read, then channel transfer.
    #[inline]
    pub fn read(&mut self, at: u64, die: u32, units: u32) -> u64 {
        let d = die as usize;
        let start = at.max(self.die_busy[d]);
        let sensed = start + self.cfg.read_ns;
        self.die_busy[d] = sensed;
        let c = self.chan(die);
        let xs = sensed.max(self.chan_busy[c]);
        let done = xs + self.unit_xfer_ns * units as u64;
        self.chan_busy[c] = done;
        done
    }

    /// Transfers one page to `die` and programs it. Returns the program's end.
    #[inline]
    pub fn program(&mut self, at: u64, die: u32) -> u64 {
        let c = self.chan(die);
        let xs = at.max(self.chan_busy[c]);
        let xe = xs + self.page_xfer_ns;
        self.chan_busy[c] = xe;
        let d = die as usize;
        let ps = xe.max(self.die_busy[d]);
        self.die_busy[d] = ps + self.program_die_ns;
        self.die_busy[d]
    }

    /// Erases one block on `die`.
    #[inline]
    pub fn erase(&mut self, at: u64, die: u32) -> u64 {
        let d = die as usize;
        let s = at.max(self.die_busy[d]);
        self.die_busy[d] = s + self.cfg.erase_ns;
        self.die_busy[d]
    }

    /// When a host write of one unit bound for `die` is acknowledged: once it is in the
    /// controller's buffer, which holds `write_buffer_pages_per_die` pages of queued program work
    /// per die; beyond that the write waits for the die's queue to drain.
    #[inline]
    pub fn write_ack(&self, at: u64, die: u32) -> u64 {
        let backlog = self.die_busy[die as usize].saturating_sub(at);
        let wait = backlog.saturating_sub(self.write_window_ns);
        at + wait + self.unit_xfer_ns
    }

    /// When a unit the device copies internally (read from its own flash, so nothing crosses the
    /// host interface) is taken into the write buffer bound for `die`: like [`Timing::write_ack`]
    /// without the host transfer.
    #[inline]
    pub fn internal_ack(&self, at: u64, die: u32) -> u64 {
        let backlog = self.die_busy[die as usize].saturating_sub(at);
        at + backlog.saturating_sub(self.write_window_ns)
    }

    /// Time at which every die and channel is idle.
    pub fn all_idle_at(&self) -> u64 {
        let d = self.die_busy.iter().copied().max().unwrap_or(0);
        let c = self.chan_busy.iter().copied().max().unwrap_or(0);
        d.max(c)
    }
}

/// Latency percentiles of one command type, in nanoseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub p9999_ns: u64,
    pub max_ns: u64,
}

/// A latency histogram (3 significant digits, 1 ns .. 1 hour).
pub struct LatencyHistogram {
    h: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        LatencyHistogram {
            h: Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds"),
        }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.h.saturating_record(ns.max(1));
    }

    pub fn reset(&mut self) {
        self.h.reset();
    }

    /// Adds another histogram's samples.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.h.add(&other.h);
    }

    /// The underlying HdrHistogram (1 ns .. 1 hour, 3 significant digits), e.g. to export it.
    pub fn hdr(&self) -> &Histogram<u64> {
        &self.h
    }

    /// The samples in compact form: one `(value, count)` per non-empty bucket, where `value` is
    /// the highest value the bucket holds. [`LatencyHistogram::from_counts`] rebuilds the same
    /// histogram from it (every count in the same bucket).
    pub fn counts(&self) -> Vec<(u64, u64)> {
        self.h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    }

    /// The histogram of [`LatencyHistogram::counts`].
    pub fn from_counts(counts: &[(u64, u64)]) -> Self {
        let mut h = LatencyHistogram::new();
        for &(value, n) in counts {
            h.h.saturating_record_n(value.max(1), n);
        }
        h
    }

    pub fn summary(&self) -> LatencySummary {
        if self.h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: self.h.len(),
            mean_ns: self.h.mean(),
            p50_ns: self.h.value_at_quantile(0.50),
            p99_ns: self.h.value_at_quantile(0.99),
            p999_ns: self.h.value_at_quantile(0.999),
            p9999_ns: self.h.value_at_quantile(0.9999),
            max_ns: self.h.max(),
        }
    }
}

#[cfg(test)]
mod histogram_tests {
    use super::*;

    #[test]
    fn compact_counts_rebuild_the_same_histogram() {
        let mut h = LatencyHistogram::new();
        for v in [1u64, 7, 999, 1_000, 1_001, 123_456, 123_457, 9_000_000_000] {
            h.record(v);
            h.record(v * 3);
        }
        let back = LatencyHistogram::from_counts(&h.counts());
        assert_eq!(back.hdr(), h.hdr());
        assert_eq!(back.summary(), h.summary());
        assert!(LatencyHistogram::from_counts(&[]).hdr().is_empty());
    }
}
