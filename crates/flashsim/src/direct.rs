//! The direct path of single host writes: one whole mapping unit, no data, no write cache (the
//! commands of WAF and timing sweeps). It does what the general path (`write_unit_direct`:
//! unref, then `program`) does for such a write, in one inlined function with the rare cases
//! (opening an erase unit and the garbage collection it may need, shared units, sealing) left to
//! out-of-line code, so that a command is short enough for the CPU to start the next command's
//! mapping-table access while this one's is still in flight.

use crate::error::SimError;
use crate::ssd::{Ssd, NIL};

impl Ssd {
    /// Writes logical unit `lu` for host stream `stream` at time `at` (the host write counters
    /// included). Returns when the write is acknowledged.
    #[inline(always)]
    pub(crate) fn write_direct(
        &mut self,
        lu: u32,
        stream: usize,
        at: u64,
    ) -> Result<u64, SimError> {
        let unit = self.unit as u64;
        let f = &self.frontiers[stream];
        let handle = f.handle as usize;
        let lane = f.rr as usize;
        debug_assert!(lane < f.eu.len() && lane < f.off.len() && handle < self.handle_stats.len());
        // SAFETY: a frontier's round-robin lane is below the lane count, the length of its `eu`
        // and `off`; its handle indexes `handle_stats` (one per handle).
        let (eu, off) = unsafe { (*f.eu.get_unchecked(lane), *f.off.get_unchecked(lane)) };
        self.counters.host_write_bytes += unit;
        self.counters.host_write_cmds += 1;
        unsafe { self.handle_stats.get_unchecked_mut(handle) }.host_write_bytes += unit;
        if eu == NIL || !self.shared.is_empty() {
            return self.write_unit_direct(lu, stream, at, None);
        }
        debug_assert!(lu < self.logical_units);
        // SAFETY (this and the accesses below): `lu` is below the logical unit count (the
        // caller checked the command's range), the length of `map`; `pu` lies in the open erase
        // unit `eu`, so below the physical unit count, the length of `rev` and 64 times that of
        // `valid`; `eu` is an erase unit, an index of `eu_valid`.
        let old = unsafe { *self.map.get_unchecked(lu as usize) };
        self.mapped_units += (old == NIL) as u64;
        // The old unit's invalidation is left pending (see `unref`): nothing below depends on
        // this load, which usually misses the cache.
        crate::ssd::prefetch(self.valid.as_ptr().wrapping_add((old >> 6) as usize));
        self.defer_unref(old);
        let pu = eu * self.eu_units + off;
        debug_assert!((pu as usize) < self.rev.len() && (eu as usize) < self.eu_valid.len());
        unsafe {
            *self.map.get_unchecked_mut(lu as usize) = pu;
            *self.rev.get_unchecked_mut(pu as usize) = lu;
            *self.valid.get_unchecked_mut((pu >> 6) as usize) |= 1u64 << (pu & 63);
            *self.eu_valid.get_unchecked_mut(eu as usize) += 1;
        }
        self.counters.media_write_bytes += unit;
        let next = off + 1;
        // SAFETY: as above.
        unsafe {
            self.handle_stats
                .get_unchecked_mut(handle)
                .media_write_bytes += unit;
            *self.frontiers[stream].off.get_unchecked_mut(lane) = next;
        }
        if next & (self.upp - 1) == 0 && (self.timing.enabled() || self.lanes > 1) {
            self.page_done(stream, pu, at);
        }
        if next == self.eu_units {
            self.seal(stream, lane as u32, eu);
        }
        Ok(if self.timing.enabled() {
            self.timing.write_ack(at, self.die_of(pu))
        } else {
            at
        })
    }

    /// A host frontier filled a page with physical unit `pu`: the page is programmed, and the
    /// frontier moves to the next lane.
    #[inline(never)]
    fn page_done(&mut self, stream: usize, pu: u32, at: u64) {
        if self.timing.enabled() {
            let die = self.die_of(pu);
            self.timing.program(at, die);
        }
        if self.lanes > 1 {
            let f = &mut self.frontiers[stream];
            f.rr = (f.rr + 1) % self.lanes;
        }
    }
}
