//! Physical-unit bookkeeping of the FTL, split from `ssd.rs`: the valid bitmap and its ranges,
//! lanes and dies of a unit, range and stream checks, dropping references with the pending
//! invalidations that let single writes overlap their mapping-table misses, opening erase units,
//! and programming one unit (the general write path under the direct and batched ones).

use crate::config::Mode;
use crate::error::SimError;
use crate::ssd::{bit_range_words, prefetch, EuState, Ssd, NIL, PENDING_BATCH, PENDING_UNREFS};

impl Ssd {
    /// Whether physical unit `pu` holds live data (pending invalidations count as applied).
    pub(crate) fn is_valid(&self, pu: u32) -> bool {
        self.valid[(pu >> 6) as usize] & (1u64 << (pu & 63)) != 0 && !self.pending.contains(&pu)
    }
    #[inline]
    pub(crate) fn set_valid(&mut self, pu: u32) {
        self.valid[(pu >> 6) as usize] |= 1u64 << (pu & 63);
    }
    #[inline]
    pub(crate) fn clear_valid(&mut self, pu: u32) {
        self.valid[(pu >> 6) as usize] &= !(1u64 << (pu & 63));
    }

    /// Clears the valid bits of physical units `lo..hi`.
    pub(crate) fn clear_valid_range(&mut self, lo: u32, hi: u32) {
        self.apply_unrefs();
        for (w, mask) in bit_range_words(lo, hi) {
            self.valid[w] &= !mask;
        }
    }

    /// Sets the valid bits of physical units `lo..hi`.
    pub(crate) fn set_valid_range(&mut self, lo: u32, hi: u32) {
        for (w, mask) in bit_range_words(lo, hi) {
            self.valid[w] |= mask;
        }
    }

    #[inline]
    pub(crate) fn lane_of(&self, eu: u32) -> u32 {
        if self.lanes == 1 {
            0
        } else {
            eu % self.lanes
        }
    }

    /// The die a physical unit lives on.
    #[inline]
    pub(crate) fn die_of(&self, pu: u32) -> u32 {
        self.die_map.die_of(pu)
    }

    pub(crate) fn dies_of_eu(&self, eu: u32) -> std::ops::Range<u32> {
        if self.lanes == 1 {
            0..self.dies
        } else {
            let d = (eu % self.die_planes) / self.planes;
            d..d + 1
        }
    }

    pub(crate) fn check_range(&self, offset: u64, len: u64) -> Result<(), SimError> {
        let capacity = self.cap.logical_bytes;
        if offset.checked_add(len).is_none_or(|end| end > capacity) {
            return Err(SimError::OutOfRange {
                offset,
                len,
                capacity,
            });
        }
        Ok(())
    }

    pub(crate) fn host_stream(&self, pid: u16) -> Result<usize, SimError> {
        match &self.cfg.mode {
            Mode::Fdp(f) => {
                if pid as u32 >= f.handles {
                    Err(SimError::BadPlacementId {
                        pid,
                        handles: f.handles,
                    })
                } else {
                    Ok(pid as usize)
                }
            }
            // Devices without FDP ignore placement hints, as NVMe devices do.
            _ => Ok(0),
        }
    }

    pub(crate) fn gc_stream(&self, handle: u16) -> usize {
        if self.cfg.gc.separate_gc_frontier {
            self.handles as usize + handle as usize
        } else {
            handle as usize
        }
    }

    pub(crate) fn touch(&mut self, at: u64) {
        if at > self.last_ns {
            self.last_ns = at;
        }
    }

    // ------------------------------------------------------------ mapping core

    /// Drops `lu`'s reference to physical unit `pu` (NIL: none); invalidates `pu` when nobody
    /// refers to it.
    ///
    /// Without shared units the invalidation is left pending for 16 to 32 more unrefs (see
    /// [`Ssd::defer_unref`]): `pu` usually comes from a mapping-table load that misses the cache, and work that depends
    /// on it (and the branches on that work) keeps the CPU from starting the next command's load
    /// meanwhile. Pending invalidations are applied in the order they were made, before the valid
    /// bitmap, the valid counts or the victim buckets are used for anything else, so the device
    /// evolves exactly as if each had been applied at once.
    #[inline]
    pub(crate) fn unref(&mut self, pu: u32, lu: u32) {
        if self.shared.is_empty() {
            debug_assert!(pu == NIL || self.is_valid(pu), "unref of invalid pu {pu}");
            prefetch(self.valid.as_ptr().wrapping_add((pu >> 6) as usize));
            self.defer_unref(pu);
            return;
        }
        if pu == NIL {
            return;
        }
        self.apply_unrefs();
        {
            if let Some(extra) = self.shared.get_mut(&pu) {
                if self.rev[pu as usize] == lu {
                    self.rev[pu as usize] = extra.pop().expect("shared entry has owners");
                } else if let Some(i) = extra.iter().position(|&x| x == lu) {
                    extra.swap_remove(i);
                }
                if extra.is_empty() {
                    self.shared.remove(&pu);
                }
                return;
            }
        }
        debug_assert!(self.is_valid(pu), "unref of invalid pu {pu}");
        self.invalidate(pu);
    }

    /// Leaves the invalidation of `pu` (NIL: none) pending. When a half of the ring fills, the
    /// other half (the 16 before) is applied in one go: their units are long known by then.
    #[inline(always)]
    pub(crate) fn defer_unref(&mut self, pu: u32) {
        let slot = self.pending_next % PENDING_UNREFS;
        debug_assert_eq!(self.pending[slot], NIL);
        self.pending[slot] = pu;
        self.pending_next = (slot + 1) % PENDING_UNREFS;
        if (slot + 1).is_multiple_of(PENDING_BATCH) {
            self.apply_half((slot + 1) % PENDING_UNREFS);
        }
    }

    /// Applies the pending invalidations in slots `from..from + PENDING_BATCH`, in order.
    #[inline(never)]
    fn apply_half(&mut self, from: usize) {
        for slot in from..from + PENDING_BATCH {
            let pu = std::mem::replace(&mut self.pending[slot % PENDING_UNREFS], NIL);
            if pu != NIL {
                self.invalidate(pu);
            }
        }
    }

    /// Applies every pending invalidation, oldest first.
    pub(crate) fn apply_unrefs(&mut self) {
        for i in 0..PENDING_UNREFS {
            let slot = (self.pending_next + i) % PENDING_UNREFS;
            let pu = std::mem::replace(&mut self.pending[slot], NIL);
            if pu != NIL {
                self.invalidate(pu);
            }
        }
    }

    /// Invalidates physical unit `pu`: clears its valid bit, lowers its erase unit's valid count
    /// and moves that unit's victim bucket.
    #[inline(always)]
    pub(crate) fn invalidate(&mut self, pu: u32) {
        let eu = self.eu_div.div(pu);
        debug_assert!((pu as usize) < self.rev.len() && self.is_valid(pu));
        // SAFETY: `pu` holds valid data, so it is a physical unit: below 64 times the length of
        // `valid`, and its erase unit `eu` indexes `eu_valid` and `eu_state`.
        let sealed = unsafe {
            *self.valid.get_unchecked_mut((pu >> 6) as usize) &= !(1u64 << (pu & 63));
            let v = self.eu_valid.get_unchecked_mut(eu as usize);
            *v -= 1;
            *self.eu_state.get_unchecked(eu as usize) == EuState::Sealed
        };
        if sealed {
            let v = self.eu_valid[eu as usize];
            self.victims.decrement(self.lane_of(eu), eu, v);
        }
    }

    /// Takes a free erase unit of `lane` for `stream`'s frontier.
    pub(crate) fn open_eu(&mut self, stream: usize, lane: u32) -> Result<(), SimError> {
        let eu = self.free[lane as usize]
            .pop_front()
            .ok_or(SimError::NoSpace { lane })?;
        self.eu_state[eu as usize] = EuState::Open;
        self.eu_handle[eu as usize] = self.frontiers[stream].handle;
        self.frontiers[stream].eu[lane as usize] = eu;
        self.frontiers[stream].off[lane as usize] = 0;
        Ok(())
    }

    /// Programs logical unit `lu` at `stream`'s frontier (host streams pick the lane round-robin and
    /// may trigger foreground GC; GC streams write to `gc_lane`). Updates map, reverse map, valid
    /// counts, media counters and page-program timing. The caller has already dropped `lu`'s old
    /// mapping. Returns the new physical unit.
    pub(crate) fn program(
        &mut self,
        stream: usize,
        gc_lane: Option<u32>,
        lu: u32,
        at: u64,
        data: Option<&[u8]>,
    ) -> Result<u32, SimError> {
        let lane = gc_lane.unwrap_or(self.frontiers[stream].rr);
        if self.frontiers[stream].eu[lane as usize] == NIL {
            if !self.frontiers[stream].gc && gc_lane.is_none() {
                self.ensure_free(stream, lane, at)?;
            }
            if self.frontiers[stream].eu[lane as usize] == NIL {
                self.open_eu(stream, lane)?;
            }
        }
        let f = &mut self.frontiers[stream];
        let eu = f.eu[lane as usize];
        let off = f.off[lane as usize];
        f.off[lane as usize] = off + 1;
        let handle = f.handle as usize;
        let pu = eu * self.eu_units + off;
        self.map[lu as usize] = pu;
        self.rev[pu as usize] = lu;
        self.set_valid(pu);
        self.eu_valid[eu as usize] += 1;
        self.counters.media_write_bytes += self.unit as u64;
        self.handle_stats[handle].media_write_bytes += self.unit as u64;
        if let Some(d) = data {
            self.store.write(pu, d)?;
        }
        if (off + 1) & (self.upp - 1) == 0 {
            if self.timing.enabled() {
                let die = self.die_of(pu);
                self.timing.program(at, die);
            }
            if self.lanes > 1 && gc_lane.is_none() {
                let f = &mut self.frontiers[stream];
                f.rr = (f.rr + 1) % self.lanes;
            }
        }
        if off + 1 == self.eu_units {
            self.seal(stream, lane, eu);
        }
        Ok(pu)
    }

    // ------------------------------------------------------------- host paths

    /// Writes one whole logical unit straight to flash (no cache). Returns the ack time.
    pub(crate) fn write_unit_direct(
        &mut self,
        lu: u32,
        pid_stream: usize,
        at: u64,
        data: Option<&[u8]>,
    ) -> Result<u64, SimError> {
        let old = self.map[lu as usize];
        self.mapped_units += (old == NIL) as u64;
        self.unref(old, lu);
        let pu = self.program(pid_stream, None, lu, at, data)?;
        Ok(if self.timing.enabled() {
            self.timing.write_ack(at, self.die_of(pu))
        } else {
            at
        })
    }
}
