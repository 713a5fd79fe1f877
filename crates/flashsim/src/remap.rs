//! Remap: point a destination LBA range at a source range's flash without programming
//! (reference-counted sharing), falling back to a counted copy where the ranges are not aligned.

use crate::error::SimError;
use crate::ssd::{RemapKind, RemapOp, Ssd, WriteKind, NIL};

impl Ssd {
    /// Remaps ranges, in order (the batched form of the command; one op is the single form).
    /// Parts aligned to the mapping unit are shared without programming flash; unaligned parts are
    /// copied (read + programmed, counted in `remap_copy_bytes`).
    pub fn remap(&mut self, at: u64, ops: &[RemapOp]) -> Result<u64, SimError> {
        if self.zones.is_some() {
            return Err(SimError::Unsupported("remap on a zoned device"));
        }
        for op in ops {
            self.check_range(op.src, op.len)?;
            self.check_range(op.dst, op.len)?;
            if op.src < op.dst + op.len && op.dst < op.src + op.len && op.len > 0 {
                return Err(SimError::Overlap);
            }
        }
        self.touch(at);
        // Cached writes are destaged first so the physical pages exist.
        while self.cache.len() > 0 {
            self.destage_one(at)?;
        }
        let mut done = at + self.timing_overhead();
        let unit = self.unit as u64;
        for op in ops {
            if op.len == 0 {
                continue;
            }
            let same_phase = op.src % unit == op.dst % unit;
            let (mid_lo, mid_hi) = if same_phase {
                let lo = op.dst.div_ceil(unit) * unit;
                let hi = ((op.dst + op.len) / unit) * unit;
                if lo < hi {
                    (lo, hi)
                } else {
                    (op.dst, op.dst)
                }
            } else {
                (op.dst, op.dst)
            };
            // Unaligned head and tail (or everything when the phases differ): copy.
            for (lo, hi) in [(op.dst, mid_lo), (mid_hi, op.dst + op.len)] {
                if hi > lo {
                    let n = hi - lo;
                    let src = op.src + (lo - op.dst);
                    let mut tmp = vec![0u8; n as usize];
                    let keeps = self.store.keeps_data();
                    // Device-internal copy: not host traffic.
                    let t = self.read_cmd(
                        at,
                        src,
                        n,
                        if keeps { Some(&mut tmp) } else { None },
                        false,
                    )?;
                    let t2 = self.write_cmd(
                        t,
                        lo,
                        n,
                        0,
                        if keeps { Some(&tmp) } else { None },
                        WriteKind::Internal,
                    )?;
                    self.counters.remap_copy_bytes += n;
                    done = done.max(t2);
                }
            }
            let shift = self.unit_shift;
            let d0 = (mid_lo >> shift) as u32;
            let d1 = (mid_hi >> shift) as u32;
            let s0 = ((op.src + (mid_lo - op.dst)) >> shift) as u32;
            for i in 0..(d1 - d0) {
                let (s, d) = (s0 + i, d0 + i);
                self.unmap(d);
                let pu = self.map[s as usize];
                if pu == NIL {
                    continue;
                }
                match op.kind {
                    RemapKind::Move => {
                        // Hand the reference over from s to d.
                        if self.rev[pu as usize] == s {
                            self.rev[pu as usize] = d;
                        } else if let Some(extra) = self.shared.get_mut(&pu) {
                            if let Some(x) = extra.iter_mut().find(|x| **x == s) {
                                *x = d;
                            }
                        }
                        self.map[s as usize] = NIL;
                        self.map[d as usize] = pu;
                    }
                    RemapKind::Share => {
                        self.shared.entry(pu).or_default().push(d);
                        self.map[d as usize] = pu;
                        self.mapped_units += 1;
                    }
                }
                self.counters.remap_units += 1;
            }
        }
        Ok(done)
    }
}
