//! Recovery of the area (paper 002 section 6.2): load the snapshot of the last complete
//! checkpoint, replay the location records logged after it, then rebuild the zones (valid
//! bytes, reverse maps, write pointers, free and full zones) from the final page map.
//!
//! Nothing of a zone's state after the snapshot is logged but the locations, so every zone with
//! a live page comes back full (no more appends) and every other zone free: whatever it held is
//! garbage. The NoWA model is approximate for bytes written after the snapshot (their order is
//! not logged; they count as written at the end of the stream).

use super::nowa::Owner;
use super::snapshot::{Found, SlotRead};
use super::space::Loc;
use super::{LogArea, ZoneState};
use crate::error::{Error, Result};
use crate::identity::{DataStamp, Stamp};
use crate::page::{Lsn, PageId};
use crate::wal::record::MapChange;
use crate::writepath::pack::SLOT_BYTES;

impl LogArea {
    /// The slots as read at open (read now if they were taken already).
    fn slots(&mut self) -> Result<[SlotRead; 2]> {
        match self.opened.take() {
            Some(s) => Ok(s),
            None => Ok([self.read_snapshot(0)?, self.read_snapshot(1)?]),
        }
    }

    /// What the device says about its checkpoint (`identity.rs`): the database id of the header
    /// and the generation, tag and durable LSN of the newest intact snapshot; a slot that does
    /// not read back is reported as possibly newer.
    pub(crate) fn stamp(&self) -> DataStamp {
        let mut out = DataStamp {
            stamp: Stamp {
                id: self.layout.id,
                ..Stamp::default()
            },
            ..DataStamp::default()
        };
        let Some(slots) = &self.opened else {
            return out;
        };
        let mut newest: Option<&Found> = None;
        for (s, slot) in slots.iter().enumerate() {
            match slot {
                SlotRead::Valid(f) if newest.is_none_or(|n| f.tag > n.tag) => newest = Some(f),
                SlotRead::Damaged => {
                    out.damaged = Some(format!(
                        "map snapshot slot {s} does not read back (checksum mismatch)"
                    ))
                }
                _ => {}
            }
        }
        if let Some(f) = newest {
            out.stamp.generation = f.generation;
            out.stamp.checkpoint_lsn = f.tag;
            out.log_durable = Some(f.durable);
        }
        out
    }

    /// Loads the snapshot of the last complete checkpoint, the one tagged `checkpoint_lsn`
    /// (0: no checkpoint yet, the map starts empty and every location record is replayed). An
    /// older snapshot is never used instead: the location records between it and the checkpoint
    /// are not replayed (recovery scans from the checkpoint), so its map would be stale.
    pub(crate) fn recover_begin(&mut self, checkpoint_lsn: Lsn) -> Result<()> {
        let slots = self.slots()?;
        let mut seq = 0;
        let mut pick = None;
        for (s, slot) in slots.into_iter().enumerate() {
            if let SlotRead::Valid(f) = slot {
                seq = seq.max(f.seq + 1);
                if checkpoint_lsn != 0 && f.tag == checkpoint_lsn {
                    pick = Some((s, f));
                }
            }
        }
        self.snap.seq = seq;
        self.snap.unconfirmed = None;
        if checkpoint_lsn == 0 {
            self.snap.confirmed = None;
            self.snap.tag = 0;
            return Ok(());
        }
        let Some((slot, f)) = pick else {
            return Err(Error::CorruptMetadata(format!(
                "the map snapshot of the checkpoint at LSN {checkpoint_lsn} is missing or does \
                 not read back; an older snapshot would give stale pages"
            )));
        };
        let info = self.load_snapshot(&f.img)?;
        self.snap.confirmed = Some(slot);
        self.snap.tag = f.tag;
        for (z, (wp, edt)) in info.into_iter().enumerate() {
            let zone = &mut self.zones[z];
            zone.wp = wp;
            if edt != 0 {
                zone.note_edt(edt);
            }
        }
        Ok(())
    }

    /// Recovery, before anything is logged: the snapshot newer than the one loaded belongs to a
    /// checkpoint that never logged its record; erase it.
    pub(crate) fn discard_unfinished_snapshot(&mut self) -> Result<()> {
        let other: Vec<usize> = match self.snap.confirmed {
            Some(c) => vec![1 - c],
            None => vec![0, 1],
        };
        for s in other {
            if let SlotRead::Valid(f) = self.read_snapshot(s)? {
                if f.tag > self.snap.tag {
                    self.erase_snapshot(s)?;
                }
            }
        }
        Ok(())
    }

    /// Replays a location record (those older than the snapshot are in it already).
    pub(crate) fn redo_map(&mut self, lsn: Lsn, changes: &[MapChange]) -> Result<()> {
        if lsn < self.snap.tag {
            return Ok(());
        }
        for m in changes {
            let ok = (m.pid as usize) < self.map.len()
                && m.offset >= self.layout.data_start
                && m.offset + m.len as u64 <= self.layout.data_end();
            if !ok {
                return Err(Error::CorruptLog {
                    lsn,
                    reason: format!("location of page {} outside the data zones", m.pid),
                });
            }
            self.map[m.pid as usize] = Loc {
                off: m.offset,
                len: m.len,
                edt: 0,
            };
            self.touch_page(m.pid);
        }
        Ok(())
    }

    /// Rebuilds the zones from the final map: zones with a live page are full (a zoned device
    /// finishes them), the others free (reset or trimmed, runs of free zones at once).
    pub(crate) fn recover_end(&mut self) -> Result<()> {
        let snap_wp: Vec<u64> = self.zones.iter().map(|z| z.wp).collect();
        let snap_edt: Vec<Option<u64>> = self.zones.iter().map(|z| z.avg_edt()).collect();
        for z in self.zones.iter_mut() {
            z.clear();
        }
        for (pid, l) in self.map.iter_mut().enumerate() {
            if !l.is_some() {
                continue;
            }
            let z = self.layout.zone_of(l.off);
            let zs = self.layout.zone_start(z);
            let zone = &mut self.zones[z as usize];
            zone.valid_bytes += l.len as u64;
            zone.valid_pages += 1;
            zone.rev.push(((l.off - zs) as u32, pid as PageId));
            let end = (l.off - zs + l.len as u64).div_ceil(SLOT_BYTES as u64) * SLOT_BYTES as u64;
            zone.wp = zone.wp.max(end);
            l.edt = snap_edt[z as usize].unwrap_or(0);
        }
        self.free.clear();
        self.dead.clear();
        for z in 0..self.layout.zone_count {
            let zi = z as usize;
            let start = self.layout.zone_start(z);
            let live = self.zones[zi].valid_pages > 0;
            if !live {
                // Whatever the zone held is garbage now.
                self.backend.recovered_zone(start, false)?;
                self.stream.kill(Owner::Zone(z));
                self.free.push_back(z);
            } else {
                self.zones[zi].rev.sort_unstable();
                self.zones[zi].state = ZoneState::Full;
                if let Some(e) = snap_edt[zi] {
                    self.zones[zi].note_edt(e);
                }
                self.backend.recovered_zone(start, true)?;
                // Bytes appended after the snapshot went to the end of the stream (approximate:
                // the exact order of those writes is not logged).
                let after = self.zones[zi].wp.saturating_sub(snap_wp[zi]);
                if snap_wp[zi] > self.zones[zi].wp {
                    self.stream.kill(Owner::Zone(z));
                    let wp = self.zones[zi].wp;
                    self.stream.write(Owner::Zone(z), wp);
                } else {
                    self.stream.write(Owner::Zone(z), after);
                }
            }
        }
        let mut free: Vec<u32> = self.free.iter().copied().collect();
        free.sort_unstable();
        let mut runs = Vec::new();
        let mut i = 0;
        while i < free.len() {
            let mut j = i + 1;
            while j < free.len() && free[j] == free[j - 1] + 1 {
                j += 1;
            }
            runs.push((
                self.layout.zone_start(free[i]),
                (j - i) as u64 * self.layout.zone_bytes,
            ));
            i = j;
        }
        self.backend.release_free(&runs)?;
        self.flush()?;
        // The map is final: readers may look it up from now on.
        for (pid, l) in self.map.iter().enumerate() {
            self.shared
                .set(pid as PageId, l.is_some().then_some((l.off, l.len)));
        }
        Ok(())
    }
}
