//! Latency during checkpoints (paper 004 Figure 9): which operations overlapped a checkpoint, and
//! how long checkpoints took, in virtual time.
//!
//! The driver reports each step that ran a checkpoint (its virtual start and end: the step that
//! ran it, an operation or a maintenance step) and each operation's start and end. An operation
//! counts as "during a checkpoint" when its span overlaps a checkpoint's. Steps run in the order
//! of their start times, so a checkpoint reported later never starts before the current event
//! time: an operation is settled once the event time passes its end, which keeps the operations
//! held at about the number of clients.

use flashsim::{LatencyHistogram, LatencySummary};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// What the checkpoints of a run cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointCost {
    /// Checkpoints (the engine's and the journal's own).
    pub checkpoints: u64,
    /// Mean checkpoint, virtual ns (the span of the step that ran it).
    pub mean_ns: f64,
    /// Longest checkpoint, virtual ns.
    pub max_ns: u64,
    /// Share of the run's virtual time spent in checkpoints.
    pub time_share: f64,
    /// Latency of the operations that overlapped a checkpoint.
    pub latency_during: LatencySummary,
}

/// Collects checkpoint spans and the latency of the operations that overlap them.
#[derive(Default)]
pub(crate) struct CheckpointWatch {
    windows: VecDeque<(u64, u64)>,
    pending: Vec<(u64, u64)>,
    during: LatencyHistogram,
    count: u64,
    total_ns: u64,
    max_ns: u64,
}

impl CheckpointWatch {
    /// A step from `start` to `end` ran at least one checkpoint.
    pub fn checkpoint(&mut self, start: u64, end: u64, how_many: u64) {
        self.windows.push_back((start, end.max(start)));
        self.count += how_many;
        let d = end.saturating_sub(start);
        self.total_ns += d;
        self.max_ns = self.max_ns.max(d);
    }

    /// An operation ran from `start` to `end`.
    pub fn op(&mut self, start: u64, end: u64) {
        self.pending.push((start, end));
    }

    /// The event time reached `now`: operations that ended by then are settled.
    pub fn advance(&mut self, now: u64) {
        let windows = &self.windows;
        let during = &mut self.during;
        self.pending.retain(|&(s, e)| {
            if e > now {
                return true;
            }
            if windows.iter().any(|&(ws, we)| s < we && e > ws) {
                during.record(e - s);
            }
            false
        });
        // Windows that ended before every held operation began can no longer overlap one.
        let oldest = self.pending.iter().map(|p| p.0).min().unwrap_or(now);
        while self.windows.front().is_some_and(|w| w.1 < oldest) {
            self.windows.pop_front();
        }
    }

    /// Settles every operation and summarises; `run_ns` is the run's virtual length.
    pub fn finish(mut self, run_ns: u64) -> CheckpointCost {
        self.advance(u64::MAX);
        let spans = self.count.max(1);
        CheckpointCost {
            checkpoints: self.count,
            mean_ns: if self.count == 0 {
                0.0
            } else {
                self.total_ns as f64 / spans as f64
            },
            max_ns: self.max_ns,
            time_share: self.total_ns as f64 / run_ns.max(1) as f64,
            latency_during: self.during.summary(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_overlapping_a_checkpoint_count_as_during() {
        let mut w = CheckpointWatch::default();
        w.op(0, 10);
        w.op(5, 50);
        w.advance(12);
        w.checkpoint(20, 40, 1);
        w.op(30, 35);
        w.op(41, 45);
        let c = w.finish(100);
        assert_eq!(c.checkpoints, 1);
        assert_eq!(c.max_ns, 20);
        // (5, 50) and (30, 35) overlap [20, 40]; (0, 10) and (41, 45) do not.
        assert_eq!(c.latency_during.count, 2);
        assert!((c.time_share - 0.2).abs() < 1e-9);
    }
}
