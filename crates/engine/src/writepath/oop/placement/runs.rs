//! Cutting a batch into runs: each run goes to one zone and is packed into 4 KiB slots and
//! appended with one write. With GDT, user pages are assigned to zones by EDT first (each
//! zone's share of the batch is then one run); pages that do not fit their zone, and batches
//! without GDT, go through the general loop that picks a zone for the first page and takes the
//! following ones while that zone stays their closest choice.

use super::{Kind, Placement, Tentative};
use crate::error::Result;
use crate::page::Lsn;
use crate::writepath::oop::area::space::{StoredPage, ZoneState, MAX_EDT};
use crate::writepath::oop::area::LogArea;
use crate::writepath::pack::{self, SLOT_BYTES};
use std::collections::VecDeque;

/// Best-fit packing of exactly these pages.
fn plan_of(items: &[StoredPage]) -> pack::Plan {
    let lens: Vec<usize> = items.iter().map(|i| i.bytes.len()).collect();
    pack::plan_best_fit(&lens, SLOT_BYTES)
}

impl Placement {
    /// Places `rest` into open zones (by EDT with GDT, else one random zone per batch), writes
    /// each zone's share as one sequential write and updates the map. Not yet durable or logged.
    /// Pages leave `rest` as they are written: on an error the unwritten ones stay there. With
    /// `carry` (user batches that need not be written whole), pages that would only partly fill
    /// a zone's last slot go there instead, to wait for the next batch.
    pub(in crate::writepath::oop) fn place(
        &mut self,
        area: &mut LogArea,
        rest: &mut VecDeque<StoredPage>,
        kind: Kind,
        now: Lsn,
        mut carry: Option<&mut Vec<StoredPage>>,
    ) -> Result<()> {
        if rest.is_empty() {
            return Ok(());
        }
        if self.gdt {
            // Coldest first for GC (the coldest pages go to the coldest zones), hottest first
            // for user writes; either way neighbours in the order have similar deathtimes.
            rest.make_contiguous().sort_by_key(|i| i.edt);
            if kind != Kind::User {
                rest.make_contiguous().reverse();
            }
        }
        if self.gdt && kind == Kind::User {
            // Each zone's share of the batch is written at once (one packing, one write), so
            // grouping by deathtime does not cost a partly empty slot per group.
            let mut groups = self.assign_by_edt(area, rest, now)?.into_iter();
            while let Some((z, group)) = groups.next() {
                if area.zone(z).state != ZoneState::Open {
                    rest.extend(group);
                    continue;
                }
                match self.write_run(area, z, group, kind, carry.as_deref_mut()) {
                    Ok(left) => rest.extend(left),
                    Err(e) => {
                        for (_, g) in groups {
                            rest.extend(g);
                        }
                        return Err(e);
                    }
                }
            }
        }
        while let Some(first) = rest.front() {
            let need = first.bytes.len().div_ceil(SLOT_BYTES) as u64 * SLOT_BYTES as u64;
            let z = if kind == Kind::User {
                let edt = self.gdt.then_some(first.edt);
                self.pick_zone(area, edt, now, need, true)?
            } else {
                self.pick_gc_zone(area, need)?
            };
            // The run of items going to zone z: with GDT, those for which z is still the closest
            // choice (consecutive in EDT order); else the whole batch.
            let mut run = vec![rest.pop_front().expect("front")];
            let target = area.zone(z).avg_edt();
            while let Some(next) = rest.front() {
                if self.gdt && kind == Kind::User {
                    let e = next.edt;
                    let horizon = e.saturating_sub(now).max(1);
                    let near = match target {
                        Some(a) => a.abs_diff(e) <= horizon / 2,
                        None => run[0].edt.abs_diff(e) <= horizon / 2,
                    };
                    if !near {
                        break;
                    }
                }
                run.push(rest.pop_front().expect("front"));
            }
            let leftover = self.write_run(area, z, run, kind, carry.as_deref_mut())?;
            for it in leftover.into_iter().rev() {
                rest.push_front(it);
            }
        }
        Ok(())
    }

    /// GDT: the open zone for each page of a batch (sorted by EDT): the one whose average EDT,
    /// counting the pages assigned so far, is closest; a fresh zone for pages no open zone is
    /// close to (within half their remaining lifetime).
    fn assign_by_edt(
        &mut self,
        area: &mut LogArea,
        items: &mut VecDeque<StoredPage>,
        now: Lsn,
    ) -> Result<Vec<(u32, Vec<StoredPage>)>> {
        let mut groups: Vec<(u32, Vec<StoredPage>)> = Vec::new();
        let r = self.assign_into(area, items, now, &mut groups);
        if r.is_err() {
            // Nothing is written yet: every item goes back.
            for (_, g) in groups.into_iter().rev() {
                for it in g.into_iter().rev() {
                    items.push_front(it);
                }
            }
            return r.map(|_| Vec::new());
        }
        Ok(groups)
    }

    fn assign_into(
        &mut self,
        area: &mut LogArea,
        items: &mut VecDeque<StoredPage>,
        now: Lsn,
        groups: &mut Vec<(u32, Vec<StoredPage>)>,
    ) -> Result<()> {
        self.prepare_open(area, SLOT_BYTES as u64)?;
        let mut tent = Tentative::new();
        while let Some(it) = items.pop_front() {
            let z = match self.closest_by_edt(area, it.edt, now, &tent, true) {
                Ok(z) => z,
                Err(e) => {
                    items.push_front(it);
                    return Err(e);
                }
            };
            let t = tent.entry(z).or_default();
            t.0 += it.edt.min(MAX_EDT) as u128;
            t.1 += 1;
            match groups.iter_mut().find(|(g, _)| *g == z) {
                Some((_, v)) => v.push(it),
                None => groups.push((z, vec![it])),
            }
        }
        Ok(())
    }

    /// Packs and appends as many of `run` as fit zone `z`; returns the rest.
    fn write_run(
        &mut self,
        area: &mut LogArea,
        z: u32,
        run: Vec<StoredPage>,
        kind: Kind,
        carry: Option<&mut Vec<StoredPage>>,
    ) -> Result<Vec<StoredPage>> {
        let room = area.zone_room(z) as usize;
        let mut run = run;
        let mut rest = Vec::new();
        let mut plan = plan_of(&run);
        if plan.slots * SLOT_BYTES > room {
            // The zone takes the pages of the first slots of the whole run's packing (dense
            // slots, as if the run were written at once), the rest goes on.
            let avail = room / SLOT_BYTES;
            let mut take = Vec::new();
            for (it, &(slot, off)) in run.into_iter().zip(&plan.places) {
                let end = (slot * SLOT_BYTES + off + it.bytes.len()).div_ceil(SLOT_BYTES);
                if end <= avail {
                    take.push(it);
                } else {
                    rest.push(it);
                }
            }
            run = take;
            plan = plan_of(&run);
            // Repacking a subset can differ: drop the largest pages until it fits.
            while !run.is_empty() && plan.slots * SLOT_BYTES > room {
                let big = (0..run.len())
                    .max_by_key(|&i| run[i].bytes.len())
                    .expect("not empty");
                rest.push(run.swap_remove(big));
                plan = plan_of(&run);
            }
        }
        if run.is_empty() {
            self.close_zone(area, z)?;
            return Ok(rest);
        }
        if let (Some(carried), Kind::User, true) = (carry, kind, rest.is_empty()) {
            // Pages that would only partly fill the last slot wait for the zone's next batch
            // (they stay staged; `sync` writes everything): no padding per batch and group.
            let last = plan.slots.saturating_sub(1);
            let in_last = |i: usize| plan.places[i].0 == last && run[i].bytes.len() < SLOT_BYTES;
            let used: usize = (0..run.len())
                .filter(|&i| plan.places[i].0 == last)
                .map(|i| run[i].bytes.len())
                .sum();
            if used < SLOT_BYTES * 9 / 10 {
                let carry: Vec<bool> = (0..run.len()).map(in_last).collect();
                let mut keep = Vec::with_capacity(run.len());
                for (it, c) in run.into_iter().zip(carry) {
                    if c {
                        carried.push(it);
                    } else {
                        keep.push(it);
                    }
                }
                run = keep;
                if run.is_empty() {
                    return Ok(rest);
                }
                plan = plan_of(&run);
            }
        }
        let stored = area.append(z, &run, &plan, kind == Kind::User)?;
        let c = area.counters_mut();
        match kind {
            Kind::User => c.stored_user_bytes += stored,
            Kind::Gc => c.gc_write_bytes += stored,
            Kind::Compensation => c.compensation_bytes += stored,
        }
        if area.zone_room(z) < SLOT_BYTES as u64 {
            self.close_zone(area, z)?;
        }
        Ok(rest)
    }
}
