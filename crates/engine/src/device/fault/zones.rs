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

/// What one zone looks like after the crash, when that differs from the inner device.
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

impl Rebuild {
    /// Whether the zone ends active (written in part: it holds an active-zone resource).
    fn active(&self) -> bool {
        self.wp > 0 && !self.full
    }
}

/// What the crash does to one zone with journaled commands.
struct Plan {
    /// Commands lost.
    lost: u64,
    /// The newest append, if it tore in this zone.
    torn: Option<TornWrite>,
    /// None: the zone stays as the inner device has it.
    rebuild: Option<Rebuild>,
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
    /// newest command of all may tear or be undone), the zones together within the inner
    /// device's active-zone limit, and is rebuilt where that differs from the inner device.
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
        let mut plans: BTreeMap<u32, Plan> = BTreeMap::new();
        for (&zone, idx) in &by_zone {
            let plan = self.plan_zone(journal, zone, idx);
            plans.insert(zone, plan);
        }
        if let Err(err) = self.fit_active_limit(&mut plans) {
            report.restore_error.get_or_insert(err);
        }
        let mut rebuilds = Vec::new();
        for plan in plans.into_values() {
            report.lost += plan.lost;
            if plan.torn.is_some() {
                report.torn = plan.torn;
            }
            rebuilds.extend(plan.rebuild);
        }
        self.rebuild_zones(&rebuilds, report);
    }

    /// Decides how much of one zone's journaled history (`idx`, oldest first) survives.
    fn plan_zone(&mut self, journal: &[Change], zone: u32, idx: &[usize]) -> Plan {
        let block = self.inner.block_bytes() as u64;
        let newest = journal.len() - 1;
        let op_of = |i: usize| match &journal[i] {
            Change::Zone { op, .. } => op,
            Change::Ranges { .. } => unreachable!("indexed zone commands only"),
        };
        let k = idx.len();
        let mut keep = if self.cfg.lose_unflushed {
            self.rng.random_range(0..=k)
        } else {
            k
        };
        let mut torn = None;
        // Bytes kept of the last kept command, if it is an append that tore.
        let mut torn_len: Option<u64> = None;
        if self.cfg.torn_writes && keep == k && idx[k - 1] == newest {
            match op_of(newest) {
                ZoneOp::Append { offset, len } => {
                    let blocks = len / block;
                    let cut = self.rng.random_range(0..=blocks);
                    torn = Some(TornWrite {
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
        let mut plan = Plan {
            lost: (k - keep) as u64,
            torn,
            rebuild: None,
        };
        if keep == k && torn_len.is_none() {
            return plan;
        }
        let Some(before) = self.zones_before.get(&zone) else {
            // Not reached: the state is noted before any command is journaled.
            return plan;
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
        // The contents up to the surviving write pointer are still on the device unless a lost
        // reset wiped them; the first lost reset saved them.
        let saved = idx[keep..].iter().find_map(|&i| match op_of(i) {
            ZoneOp::Reset { prev } => {
                // Appends only add past the write pointer: what the zone held at the cut is a
                // prefix of what it held at the later reset.
                debug_assert!(wp as usize <= prev.len());
                Some(prev[..(wp as usize).min(prev.len())].to_vec())
            }
            _ => None,
        });
        plan.rebuild = Some(Rebuild {
            zone,
            start: before.start,
            capacity: before.capacity,
            wp,
            full,
            saved,
        });
        plan
    }

    /// Keeps the surviving zone states within the inner device's active-zone limit (a device
    /// keeps its zone resources consistent across a power loss): while more zones would end
    /// active than it allows, or a zone to rebuild full could not be active for a moment (the
    /// rebuild appends to it, then finishes it, after resetting every zone it rebuilds), zones
    /// are kept as the inner device has them, their whole history surviving.
    fn fit_active_limit(&mut self, plans: &mut BTreeMap<u32, Plan>) -> Result<(), DeviceError> {
        let caps = self.inner.capabilities();
        let (Some(limit), Some(zone_bytes)) = (caps.max_active_zones, caps.zone_bytes) else {
            return Ok(());
        };
        let zones = (self.inner.capacity_bytes() / zone_bytes.max(1)) as u32;
        let mut active_now = Vec::with_capacity(zones as usize);
        for z in 0..zones {
            let r = self.inner.zone_report(z)?;
            active_now.push(matches!(
                r.condition,
                ZoneCondition::Open | ZoneCondition::Closed
            ));
        }
        loop {
            let rebuilt = |z: u32| plans.get(&z).and_then(|p| p.rebuild.as_ref());
            let unchanged_active = (0..zones)
                .filter(|&z| rebuilt(z).is_none() && active_now[z as usize])
                .count() as u32;
            let rebuilt_active = plans
                .values()
                .filter(|p| p.rebuild.as_ref().is_some_and(Rebuild::active))
                .count() as u32;
            let needs_moment = plans
                .values()
                .any(|p| p.rebuild.as_ref().is_some_and(|r| r.full));
            let victim = if unchanged_active + rebuilt_active > limit {
                // Some zone ends active that is not now (the zones now are within the limit).
                plans.iter().find_map(|(&z, p)| {
                    let r = p.rebuild.as_ref()?;
                    (r.active() && !active_now[z as usize]).then_some(z)
                })
            } else if needs_moment && unchanged_active >= limit {
                plans
                    .iter()
                    .find_map(|(&z, p)| p.rebuild.as_ref()?.full.then_some(z))
            } else {
                return Ok(());
            };
            let Some(z) = victim else {
                return Ok(());
            };
            let p = plans.get_mut(&z).expect("planned zone");
            *p = Plan {
                lost: 0,
                torn: None,
                rebuild: None,
            };
        }
    }

    /// Rebuilds zones on the inner device: reads what survives of each, resets them all, then
    /// rebuilds the ones that end full (each active only while it is written) and last the ones
    /// that end active. A zone the inner device refuses to rebuild is left as far as it got; the
    /// first error goes to the report.
    fn rebuild_zones(&mut self, rebuilds: &[Rebuild], report: &mut CrashReport) {
        let mut ok = vec![true; rebuilds.len()];
        let mut data = Vec::with_capacity(rebuilds.len());
        let mut note = |r: Result<(), DeviceError>, ok: &mut bool| {
            if let Err(err) = r {
                *ok = false;
                report.restore_error.get_or_insert(err);
            }
        };
        for (i, r) in rebuilds.iter().enumerate() {
            let d = self.surviving_data(r);
            data.push(d.as_ref().map_or(Vec::new(), Vec::clone));
            note(d.map(|_| ()), &mut ok[i]);
        }
        for (i, r) in rebuilds.iter().enumerate() {
            if ok[i] {
                note(self.inner.zone_reset(r.zone), &mut ok[i]);
            }
        }
        for ending_active in [false, true] {
            for (i, r) in rebuilds.iter().enumerate() {
                if ok[i] && r.active() == ending_active && (r.wp > 0 || r.full) {
                    note(self.rebuild_zone(r, &data[i]), &mut ok[i]);
                }
            }
        }
        for (r, ok) in rebuilds.iter().zip(ok) {
            if ok {
                report.zones_rebuilt += 1;
                report.restored_bytes += r.wp;
            }
        }
    }

    /// What survives of a zone: saved by a lost reset, else on the device.
    fn surviving_data(&mut self, r: &Rebuild) -> Result<Vec<u8>, DeviceError> {
        match &r.saved {
            Some(d) if d.len() as u64 == r.wp => Ok(d.clone()),
            Some(d) => Err(DeviceError::Io(format!(
                "zone {}: {} bytes saved, {} survive",
                r.zone,
                d.len(),
                r.wp
            ))),
            None => {
                let mut d = vec![0u8; r.wp as usize];
                if r.wp > 0 {
                    self.inner.read_at(r.start, &mut d)?;
                }
                Ok(d)
            }
        }
    }

    /// Appends a reset zone's surviving data again and finishes it if it ended finished.
    fn rebuild_zone(&mut self, r: &Rebuild, data: &[u8]) -> Result<(), DeviceError> {
        if r.wp > 0 {
            let at = self.inner.zone_append(r.zone, data)?;
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
