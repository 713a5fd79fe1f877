//! The zone part of the fault model (see the parent module's documentation): the per-zone
//! journal of appends, resets and finishes, and the crash that keeps a prefix of each zone's
//! history and rebuilds the zones whose surviving state differs from the inner device's.

use std::collections::BTreeMap;

use rand::Rng;

use super::{BlockDevice, Change, CrashReport, DeviceError, FaultDevice, TornWrite};
use crate::device::ZoneCondition;

/// A journaled zone command.
pub(super) enum ZoneOp {
    /// `len` bytes landed at byte `offset` (an append, or a write at the write pointer).
    Append { offset: u64, len: u64 },
    /// A reset; `prev` holds what the zone held up to its write pointer just before.
    Reset { prev: Vec<u8> },
    /// A finish.
    Finish,
}

/// A zone's state before its first journaled command since the last flush.
pub(super) struct ZoneBefore {
    start: u64,
    capacity: u64,
    /// Write pointer relative to the zone start.
    wp: u64,
    /// Whether the zone was full (written to its capacity or finished).
    full: bool,
}

/// What one zone looks like after the crash.
struct Rebuild {
    zone: u32,
    start: u64,
    capacity: u64,
    wp: u64,
    full: bool,
    /// The surviving contents up to `wp`, when a lost reset wiped them from the device (else
    /// they are read from the device).
    saved: Option<Vec<u8>>,
}

impl<D: BlockDevice> FaultDevice<D> {
    /// Records the state of `zone` before its first journaled command since the last flush.
    pub(super) fn note_zone(&mut self, zone: u32) -> Result<(), DeviceError> {
        if !self.journaling() || self.zones_before.contains_key(&zone) {
            return Ok(());
        }
        let r = self.inner.zone_report(zone)?;
        self.zones_before.insert(
            zone,
            ZoneBefore {
                start: r.start_bytes,
                capacity: r.capacity_bytes,
                wp: r.write_pointer_bytes - r.start_bytes,
                full: r.condition == ZoneCondition::Full,
            },
        );
        Ok(())
    }

    /// Journals a zone command about to be sent (a reset saves the zone's contents first).
    pub(super) fn journal_zone(&mut self, zone: u32, op: ZoneOp) -> Result<(), DeviceError> {
        if !self.journaling() {
            return Ok(());
        }
        self.note_zone(zone)?;
        let op = match op {
            ZoneOp::Reset { .. } => {
                let r = self.inner.zone_report(zone)?;
                let mut prev = vec![0u8; (r.write_pointer_bytes - r.start_bytes) as usize];
                if !prev.is_empty() {
                    self.inner.read_at(r.start_bytes, &mut prev)?;
                }
                ZoneOp::Reset { prev }
            }
            op => op,
        };
        self.journal.push(Change::Zone { zone, op });
        Ok(())
    }

    /// The crash for zone commands: each zone keeps a prefix of its journaled history (the
    /// newest command of all may tear or be undone) and is rebuilt where that differs from the
    /// inner device.
    pub(super) fn undo_zones(&mut self, journal: &[Change], report: &mut CrashReport) {
        let mut by_zone: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, e) in journal.iter().enumerate() {
            if let Change::Zone { zone, .. } = e {
                by_zone.entry(*zone).or_default().push(i);
            }
        }
        if by_zone.is_empty() {
            return;
        }
        let block = self.inner.block_bytes() as u64;
        let newest = journal.len() - 1;
        let op_of = |i: usize| match &journal[i] {
            Change::Zone { op, .. } => op,
            Change::Ranges { .. } => unreachable!("indexed zone commands only"),
        };
        let mut rebuilds = Vec::new();
        for (&zone, idx) in &by_zone {
            let k = idx.len();
            let mut keep = if self.cfg.lose_unflushed {
                self.rng.random_range(0..=k)
            } else {
                k
            };
            // Bytes kept of the last kept command, if it is an append that tore.
            let mut torn_len: Option<u64> = None;
            if self.cfg.torn_writes && keep == k && idx[k - 1] == newest {
                match op_of(newest) {
                    ZoneOp::Append { offset, len } => {
                        let blocks = len / block;
                        let cut = self.rng.random_range(0..=blocks);
                        report.torn = Some(TornWrite {
                            offset: *offset,
                            len: *len,
                            durable_blocks: (0..blocks).map(|b| b < cut).collect(),
                        });
                        if cut < blocks {
                            torn_len = Some(cut * block);
                        }
                    }
                    ZoneOp::Reset { .. } | ZoneOp::Finish => {
                        if self.rng.random_bool(0.5) {
                            keep -= 1;
                        }
                    }
                }
            }
            report.lost += (k - keep) as u64;
            if keep == k && torn_len.is_none() {
                continue;
            }
            let Some(before) = self.zones_before.get(&zone) else {
                report
                    .restore_error
                    .get_or_insert(DeviceError::Io(format!("zone {zone}: no state journaled")));
                continue;
            };
            // Replay the kept commands on the state before them.
            let (mut wp, mut full) = (before.wp, before.full);
            for (j, &i) in idx[..keep].iter().enumerate() {
                match op_of(i) {
                    ZoneOp::Append { offset, len } => {
                        let kept = if j + 1 == keep {
                            torn_len.unwrap_or(*len)
                        } else {
                            *len
                        };
                        wp = offset - before.start + kept;
                        full = wp >= before.capacity;
                    }
                    ZoneOp::Reset { .. } => (wp, full) = (0, false),
                    ZoneOp::Finish => full = true,
                }
            }
            // The contents up to the surviving write pointer are still on the device unless a
            // lost reset wiped them; the first lost reset saved them.
            let saved = idx[keep..].iter().find_map(|&i| match op_of(i) {
                ZoneOp::Reset { prev } => {
                    // Appends only add past the write pointer: what the zone held at the cut is
                    // a prefix of what it held at the later reset.
                    debug_assert!(wp as usize <= prev.len());
                    Some(prev[..(wp as usize).min(prev.len())].to_vec())
                }
                _ => None,
            });
            rebuilds.push(Rebuild {
                zone,
                start: before.start,
                capacity: before.capacity,
                wp,
                full,
                saved,
            });
        }
        // Zones going back to empty first: they release the device's zone resources.
        rebuilds.sort_by_key(|r| (r.wp > 0 || r.full, r.zone));
        for r in rebuilds {
            match self.rebuild_zone(&r) {
                Ok(()) => {
                    report.zones_rebuilt += 1;
                    report.restored_bytes += r.wp;
                }
                Err(err) => {
                    report.restore_error.get_or_insert(err);
                }
            }
        }
    }

    /// Puts one zone of the inner device in its surviving state.
    fn rebuild_zone(&mut self, r: &Rebuild) -> Result<(), DeviceError> {
        let data = match &r.saved {
            Some(d) if d.len() as u64 == r.wp => d.clone(),
            Some(d) => {
                return Err(DeviceError::Io(format!(
                    "zone {}: {} bytes saved, {} survive",
                    r.zone,
                    d.len(),
                    r.wp
                )))
            }
            None => {
                let mut d = vec![0u8; r.wp as usize];
                if r.wp > 0 {
                    self.inner.read_at(r.start, &mut d)?;
                }
                d
            }
        };
        self.inner.zone_reset(r.zone)?;
        if r.wp > 0 {
            let at = self.inner.zone_append(r.zone, &data)?;
            if at != r.start {
                return Err(DeviceError::Io(format!(
                    "zone {} rebuilt at {at}, not at its start {}",
                    r.zone, r.start
                )));
            }
        }
        if r.full && r.wp < r.capacity {
            self.inner.zone_finish(r.zone)?;
        }
        Ok(())
    }
}
