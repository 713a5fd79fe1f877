//! Batched host writes (`Ssd::write_batch`): on a WAF-only device without timing or cache, runs of
//! whole-unit writes are applied in a tight loop per open erase unit, with the mapping entries and
//! the valid-bitmap words they lead to prefetched ahead. What bounds the speed is random access to
//! the mapping table, so the loop keeps as little else as possible between those accesses.

use crate::error::SimError;
use crate::ssd::{prefetch, EuState, Ssd, NIL};

/// How far ahead (in writes) a batched write's mapping entry is prefetched.
const MAP_AHEAD: usize = 64;
/// How far ahead the valid-bitmap word of a write's old physical unit is prefetched (its mapping
/// entry was prefetched `MAP_AHEAD - VALID_AHEAD` writes earlier, so it is cached by then).
const VALID_AHEAD: usize = 24;

impl Ssd {
    /// Writes `len` bytes at each offset of `offsets`, in order, all submitted at `at` with
    /// placement id `pid` and no data. Same effect and counters as one `write` per offset; on a
    /// WAF-only device without timing or cache it runs a bulk path that prefetches the mapping
    /// entries ahead, for fast sweeps. Returns the last completion time.
    pub fn write_batch(
        &mut self,
        at: u64,
        offsets: &[u64],
        len: u64,
        pid: u16,
    ) -> Result<u64, SimError> {
        let unit = self.unit as u64;
        if !self.fast || self.zones.is_some() || len != unit {
            let mut done = at;
            for &o in offsets {
                done = done.max(self.write(at, o, len, pid, None)?);
            }
            return Ok(done);
        }
        for &o in offsets {
            self.check_range(o, len)?;
            if o % unit != 0 {
                return Err(SimError::Unaligned {
                    what: "batched write",
                    offset: o,
                    len,
                    align: unit,
                });
            }
        }
        let stream = self.host_stream(pid)?;
        self.touch(at);
        let mut i = 0;
        while i < offsets.len() {
            let f = &self.frontiers[stream];
            let lane = f.rr;
            let eu = f.eu[lane as usize];
            if eu == NIL || !self.shared.is_empty() {
                // Opening an erase unit (and the garbage collection it may need) and writes that
                // may touch shared units take the general path, one write at a time.
                self.prefetch_map(offsets, i + MAP_AHEAD);
                self.count_host_write(stream, len);
                self.write_unit_direct((offsets[i] >> self.unit_shift) as u32, stream, at, None)?;
                i += 1;
                continue;
            }
            let off = f.off[lane as usize];
            let handle = f.handle as usize;
            let mut k = ((self.eu_units - off) as usize).min(offsets.len() - i);
            if self.lanes > 1 {
                // The host frontier moves to the next lane after every page.
                k = k.min((self.upp - off % self.upp) as usize);
            }
            self.host_run(offsets, i, k, eu, off);
            let bytes = k as u64 * unit;
            self.counters.host_write_bytes += bytes;
            self.counters.host_write_cmds += k as u64;
            self.counters.media_write_bytes += bytes;
            self.handle_stats[handle].host_write_bytes += bytes;
            self.handle_stats[handle].media_write_bytes += bytes;
            let off = off + k as u32;
            let f = &mut self.frontiers[stream];
            f.off[lane as usize] = off;
            if self.lanes > 1 && off.is_multiple_of(self.upp) {
                f.rr = (f.rr + 1) % self.lanes;
            }
            if off == self.eu_units {
                self.seal(stream, lane, eu);
            }
            i += k;
        }
        Ok(at)
    }

    #[inline(always)]
    fn prefetch_map(&self, offsets: &[u64], i: usize) {
        if let Some(&o) = offsets.get(i) {
            prefetch(
                self.map
                    .as_ptr()
                    .wrapping_add((o >> self.unit_shift) as usize),
            );
        }
    }

    /// Writes the logical units at `offsets[i..i + k]` to the physical units `off..off + k` of the
    /// open erase unit `eu` (which has room for them): drops each unit's old mapping, maps it to
    /// its new place. The caller updates the frontier and the counters. No shared units exist.
    fn host_run(&mut self, offsets: &[u64], i: usize, k: usize, eu: u32, off: u32) {
        // This loop invalidates at once: earlier pending invalidations come first.
        self.apply_unrefs();
        let shift = self.unit_shift;
        let eu_div = self.eu_div;
        let lanes = self.lanes;
        let first = eu * self.eu_units + off;
        let map = &mut self.map[..];
        let rev = &mut self.rev[..];
        let valid = &mut self.valid[..];
        let eu_valid = &mut self.eu_valid[..];
        let eu_state = &self.eu_state[..];
        let victims = &mut self.victims;
        let mut newly_mapped = 0u64;
        for (j, &o) in offsets[i..i + k].iter().enumerate() {
            if let Some(&a) = offsets.get(i + j + MAP_AHEAD) {
                prefetch(map.as_ptr().wrapping_add((a >> shift) as usize));
            }
            if let Some(&a) = offsets.get(i + j + VALID_AHEAD) {
                let old = map[(a >> shift) as usize];
                prefetch(valid.as_ptr().wrapping_add((old >> 6) as usize));
            }
            let lu = (o >> shift) as usize;
            let old = map[lu];
            if old != NIL {
                debug_assert!(valid[(old >> 6) as usize] & (1u64 << (old & 63)) != 0);
                valid[(old >> 6) as usize] &= !(1u64 << (old & 63));
                let e = eu_div.div(old) as usize;
                let v = eu_valid[e] - 1;
                eu_valid[e] = v;
                if eu_state[e] == EuState::Sealed {
                    victims.decrement(e as u32 % lanes, e as u32, v);
                }
            } else {
                newly_mapped += 1;
            }
            let pu = first + j as u32;
            map[lu] = pu;
            rev[pu as usize] = lu as u32;
            valid[(pu >> 6) as usize] |= 1u64 << (pu & 63);
            eu_valid[eu as usize] += 1;
        }
        self.mapped_units += newly_mapped;
    }
}
