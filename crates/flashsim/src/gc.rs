//! Garbage collection: foreground (paced with host writes), background (while idle), victim
//! relocation (a bulk path for WAF-only sweeps, a general one with timing and data) and erase.

use crate::error::SimError;
use crate::ssd::{prefetch, EuState, Ssd, NIL, PREFETCH_AHEAD};

/// How far ahead (in relocated units) the bulk relocation loop prefetches mapping entries.
const RELOCATE_AHEAD: usize = 128;

impl Ssd {
    /// Foreground GC before host stream `stream` opens a new erase unit in `lane`: while the lane
    /// has no more than `free_eus_min` free units, collect one victim at a time. GC is paced with
    /// the host: normally one victim per erase unit the host opens, so host and relocated data mix
    /// as in a real drive whose GC shares the host frontier (when GC relocates into this very
    /// frontier, the unit it opened serves the host too and collection stops).
    pub(crate) fn ensure_free(
        &mut self,
        stream: usize,
        lane: u32,
        at: u64,
    ) -> Result<(), SimError> {
        let min = self.cfg.gc.free_eus_min as usize;
        let mut fruitless = 0usize;
        while self.free[lane as usize].len() <= min
            && self.frontiers[stream].eu[lane as usize] == NIL
        {
            let before = self.free[lane as usize].len();
            self.gc_one(lane, at, false)?;
            if self.free[lane as usize].len() <= before {
                fruitless += 1;
                if fruitless > self.victims.sealed(lane) + 2 {
                    return Err(SimError::NoSpace { lane });
                }
            } else {
                fruitless = 0;
            }
        }
        Ok(())
    }

    /// Collects one victim erase unit of `lane`: relocates its valid units, erases it.
    pub(crate) fn gc_one(&mut self, lane: u32, at: u64, background: bool) -> Result<(), SimError> {
        // Victim choice and relocation read the valid counts and bitmap.
        self.apply_unrefs();
        let eu_valid = &self.eu_valid;
        let victim = self
            .victims
            .pick(lane, self.cfg.gc.policy, &mut self.rng, |e| {
                eu_valid[e as usize]
            })
            .ok_or(SimError::NoSpace { lane })?;
        let nvalid = self.eu_valid[victim as usize];
        self.victims.remove(lane, victim, nvalid);
        self.eu_state[victim as usize] = EuState::Open; // being collected
        let stream = self.gc_stream(self.eu_handle[victim as usize]);
        let base = victim * self.eu_units;
        let end = base + self.eu_units;
        let keeps = self.store.keeps_data();
        let mut buf = if keeps {
            vec![0u8; self.unit as usize]
        } else {
            Vec::new()
        };
        let timing = self.timing.enabled();
        // Gather the victim's valid units and their logical units first (a sequential scan of the
        // valid bitmap and the reverse map), then relocate them with the mapping entries
        // prefetched ahead: the random writes to `map` are what bounds simulation speed.
        let mut valid_pus = std::mem::take(&mut self.gc_pus);
        let mut valid_lus = std::mem::take(&mut self.gc_lus);
        valid_pus.resize(self.eu_units as usize, 0);
        valid_lus.resize(self.eu_units as usize, 0);
        let mut n = 0;
        let mut w = base >> 6;
        let rev = &self.rev[base as usize..end as usize];
        while (w << 6) < end {
            let mut bits = self.valid[w as usize];
            let wbase = w << 6;
            if wbase < base {
                bits &= !0u64 << (base - wbase);
            }
            if end - wbase < 64 {
                bits &= (1u64 << (end - wbase)) - 1;
            }
            while bits != 0 {
                let pu = wbase + bits.trailing_zeros();
                debug_assert!((base..end).contains(&pu) && n < self.eu_units as usize);
                // SAFETY: the bits were masked to the victim's units `base..end`, so `pu - base`
                // indexes `rev` (which is that range), and each unit is gathered at most once, so
                // `n` stays below `eu_units`, the length of both buffers.
                unsafe {
                    *valid_pus.get_unchecked_mut(n) = pu;
                    *valid_lus.get_unchecked_mut(n) = *rev.get_unchecked((pu - base) as usize);
                }
                n += 1;
                bits &= bits - 1;
            }
            w += 1;
        }
        valid_pus.truncate(n);
        valid_lus.truncate(n);
        let mut last_page = NIL;
        let mut ready = at;
        let bulk = !keeps && self.shared.is_empty();
        if bulk {
            ready = self.relocate_bulk(stream, lane, &valid_pus, &valid_lus, at)?;
        }
        for i in 0..if bulk { 0 } else { valid_pus.len() } {
            if let Some(&ahead) = valid_pus.get(i + PREFETCH_AHEAD) {
                prefetch(
                    self.map
                        .as_ptr()
                        .wrapping_add(self.rev[ahead as usize] as usize),
                );
            }
            let pu = valid_pus[i];
            let lu = self.rev[pu as usize];
            if timing {
                let page = pu >> self.upp_shift;
                if page != last_page {
                    last_page = page;
                    ready = self.timing.read(at, self.die_of(pu), self.upp);
                }
            }
            if keeps {
                self.store.read(pu, &mut buf)?;
            }
            self.clear_valid(pu);
            let new = self.program(
                stream,
                Some(lane),
                lu,
                ready,
                if keeps { Some(&buf) } else { None },
            )?;
            if !self.shared.is_empty() {
                if let Some(extra) = self.shared.remove(&pu) {
                    for &x in &extra {
                        self.map[x as usize] = new;
                    }
                    self.shared.insert(new, extra);
                }
            }
        }
        let moved = valid_pus.len() as u64;
        self.gc_pus = valid_pus;
        self.gc_lus = valid_lus;
        let unit = self.unit as u64;
        self.counters.gc_runs += 1;
        if background {
            self.counters.gc_runs_background += 1;
        }
        self.counters.gc_units_moved += moved;
        self.counters.gc_write_bytes += moved * unit;
        self.counters.media_read_bytes += moved * unit;
        self.erase_eu(victim, ready);
        self.free[lane as usize].push_back(victim);
        Ok(())
    }

    /// GC relocation without data or shared units: fills the GC frontier in runs, one tight loop
    /// per erase unit that points the mapping entries of logical units `lus` (stored in physical
    /// units `pus`) at their new places, prefetched ahead; the reverse map and valid bits of each
    /// run are then written in bulk. With timing, each victim page is read when its first valid
    /// unit is reached and each destination page programmed when its last unit is placed, in the
    /// same order as unit-by-unit relocation. Returns when the last read completes (`at` if
    /// nothing was read).
    fn relocate_bulk(
        &mut self,
        stream: usize,
        lane: u32,
        pus: &[u32],
        lus: &[u32],
        at: u64,
    ) -> Result<u64, SimError> {
        let timed = self.timing.enabled();
        let dies = self.die_map;
        let (upp, upp_shift) = (self.upp, self.upp_shift);
        let mut last_page = NIL;
        let mut ready = at;
        let mut i = 0;
        while i < lus.len() {
            if self.frontiers[stream].eu[lane as usize] == NIL {
                self.open_eu(stream, lane)?;
            }
            let f = &self.frontiers[stream];
            let eu = f.eu[lane as usize];
            let off = f.off[lane as usize];
            let handle = f.handle as usize;
            let k = ((self.eu_units - off) as usize).min(lus.len() - i);
            let first = eu * self.eu_units + off;
            let map = &mut self.map[..];
            let run = &lus[i..i + k];
            if timed {
                let timing = &mut self.timing;
                for (j, (&lu, &from)) in run.iter().zip(&pus[i..i + k]).enumerate() {
                    if let Some(&ahead) = lus.get(i + j + RELOCATE_AHEAD) {
                        prefetch(map.as_ptr().wrapping_add(ahead as usize));
                    }
                    let page = from >> upp_shift;
                    if page != last_page {
                        last_page = page;
                        ready = timing.read(at, dies.die_of(from), upp);
                    }
                    let pu = first + j as u32;
                    map[lu as usize] = pu;
                    if (pu + 1) & (upp - 1) == 0 {
                        timing.program(ready, dies.die_of(pu));
                    }
                }
            } else {
                for (j, &lu) in run.iter().enumerate() {
                    if let Some(&ahead) = lus.get(i + j + RELOCATE_AHEAD) {
                        prefetch(map.as_ptr().wrapping_add(ahead as usize));
                    }
                    debug_assert!((lu as usize) < map.len());
                    // SAFETY: `lu` is the owner of a valid unit, a mapped logical unit, so it is
                    // below the logical unit count, the length of `map` (an FTL invariant that
                    // `check_invariants` verifies).
                    unsafe { *map.get_unchecked_mut(lu as usize) = first + j as u32 };
                }
            }
            self.rev[first as usize..first as usize + k].copy_from_slice(run);
            self.set_valid_range(first, first + k as u32);
            i += k;
            let bytes = k as u64 * self.unit as u64;
            self.counters.media_write_bytes += bytes;
            self.handle_stats[handle].media_write_bytes += bytes;
            self.eu_valid[eu as usize] += k as u32;
            let off = off + k as u32;
            self.frontiers[stream].off[lane as usize] = off;
            if off == self.eu_units {
                self.seal(stream, lane, eu);
            }
        }
        Ok(ready)
    }

    pub(crate) fn seal(&mut self, stream: usize, lane: u32, eu: u32) {
        // The unit joins the victim buckets with its valid count: invalidations made before it
        // filled come first.
        self.apply_unrefs();
        self.eu_state[eu as usize] = EuState::Sealed;
        self.victims.insert(lane, eu, self.eu_valid[eu as usize]);
        self.frontiers[stream].eu[lane as usize] = NIL;
        let handle = self.frontiers[stream].handle as usize;
        self.handle_stats[handle].reclaim_units_filled += 1;
    }

    /// Erases an erase unit (all its blocks) and returns it to the free state.
    pub(crate) fn erase_eu(&mut self, eu: u32, at: u64) {
        let base = eu * self.eu_units;
        self.clear_valid_range(base, base + self.eu_units);
        self.eu_valid[eu as usize] = 0;
        self.eu_state[eu as usize] = EuState::Free;
        self.erase_count[eu as usize] += 1;
        self.store.erase(eu);
        let blocks = if self.lanes == 1 {
            self.die_planes as u64
        } else {
            1
        };
        self.counters.block_erases += blocks;
        self.counters.eu_erases += 1;
        if self.timing.enabled() {
            for die in self.dies_of_eu(eu) {
                for _ in 0..(if self.lanes == 1 { self.planes } else { 1 }) {
                    self.timing.erase(at, die);
                }
            }
        }
    }

    /// Lets the device work in the background until virtual time `until`: GC runs on lanes that
    /// are below the background threshold while all dies would otherwise be idle.
    pub fn idle_until(&mut self, until: u64) -> Result<(), SimError> {
        if self.zones.is_some() {
            return Ok(());
        }
        let bg = self.cfg.gc.free_eus_background as usize;
        for lane in 0..self.lanes {
            // A victim relocated into a frontier that had to open a new unit gains nothing at
            // once; the gain comes over the next victims. Give up only after many in a row.
            let mut fruitless = 0usize;
            loop {
                if self.free[lane as usize].len() >= bg || self.victims.sealed(lane) == 0 {
                    break;
                }
                let t = if self.timing.enabled() {
                    let t = self.timing.all_idle_at().max(self.last_ns);
                    if t >= until {
                        break;
                    }
                    t
                } else {
                    until
                };
                let before = self.free[lane as usize].len();
                self.gc_one(lane, t, true)?;
                if self.free[lane as usize].len() <= before {
                    fruitless += 1;
                    if fruitless > self.victims.sealed(lane) + 2 {
                        break;
                    }
                } else {
                    fruitless = 0;
                }
            }
        }
        self.touch(until);
        Ok(())
    }
}
