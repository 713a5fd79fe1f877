//! Copy: an in-device copy command (NVMe Copy / the ISC-A and ISC-B rungs of paper 004's
//! ladder). The device reads the source's mapping units from its own flash and programs them at
//! the destination, the way GC relocates data: dies and channels are kept busy by the reads and
//! programs, nothing crosses the host interface, and the command pays one command overhead
//! however many ranges it carries.

use crate::error::SimError;
use crate::ssd::{CopyOp, Ssd, NIL};

impl Ssd {
    /// Copies ranges inside the device, in order (an operation sees the effect of the ones before
    /// it), as one command: one operation per call is the single-range form, several the batched
    /// form. Returns the completion time.
    ///
    /// Every destination mapping unit the range touches is programmed once (counted in
    /// `copy_bytes`, `redundant_write_bytes` and `media_write_bytes`); a unit the range covers
    /// only in part is read back first and merged (a read-modify-write, counted in `rmw_units`
    /// like a host write's). Source units are read from flash, one array read per flash page.
    /// Cached writes are destaged first, as for remap. Ranges must lie inside the device and an
    /// operation's source and destination must not overlap. Zoned devices reject the command.
    pub fn copy(&mut self, at: u64, ops: &[CopyOp]) -> Result<u64, SimError> {
        if self.zones.is_some() {
            return Err(SimError::Unsupported("copy on a zoned device"));
        }
        for op in ops {
            self.check_range(op.src, op.len)?;
            self.check_range(op.dst, op.len)?;
            if op.src < op.dst + op.len && op.dst < op.src + op.len && op.len > 0 {
                return Err(SimError::Overlap);
            }
        }
        self.touch(at);
        while self.cache.len() > 0 {
            self.destage_one(at)?;
        }
        self.counters.copy_cmds += 1;
        let start = at + self.timing_overhead();
        let mut done = start;
        for op in ops {
            if op.len == 0 {
                continue;
            }
            self.counters.copy_ops += 1;
            done = done.max(self.copy_range(start, op)?);
        }
        Ok(done)
    }

    /// One operation of a copy command, started at `start`. Returns when its last unit is taken
    /// into the write buffer.
    fn copy_range(&mut self, start: u64, op: &CopyOp) -> Result<u64, SimError> {
        let unit = self.unit as u64;
        let shift = self.unit_shift;
        let keeps = self.store.keeps_data();
        let n = if keeps { unit as usize } else { 0 };
        let mut buf = vec![0u8; n];
        let mut sbuf = vec![0u8; n];
        let mut page = PageRead {
            page: NIL,
            ready: start,
        };
        let mut done = start;
        let first = op.dst >> shift;
        let last = (op.dst + op.len - 1) >> shift;
        for lu in first..=last {
            let ustart = lu << shift;
            let lo = op.dst.max(ustart);
            let hi = (op.dst + op.len).min(ustart + unit);
            let mut ready = start;
            if hi - lo != unit {
                // The destination unit is covered in part: read the rest of it back.
                if self.map[lu as usize] != NIL {
                    self.counters.rmw_units += 1;
                    self.counters.rmw_read_bytes += unit;
                }
                let t =
                    self.copy_read(lu as u32, start, &mut page, keeps.then_some(&mut buf[..]))?;
                ready = ready.max(t);
            }
            // The source bytes of [lo, hi), in one or (out of phase) two source units.
            let s_lo = op.src + (lo - op.dst);
            let s_hi = s_lo + (hi - lo);
            for slu in (s_lo >> shift)..=((s_hi - 1) >> shift) {
                let sstart = slu << shift;
                let a = s_lo.max(sstart);
                let b = s_hi.min(sstart + unit);
                let t =
                    self.copy_read(slu as u32, start, &mut page, keeps.then_some(&mut sbuf[..]))?;
                ready = ready.max(t);
                if keeps {
                    let d = (a - s_lo + lo - ustart) as usize;
                    buf[d..d + (b - a) as usize]
                        .copy_from_slice(&sbuf[(a - sstart) as usize..(b - sstart) as usize]);
                }
            }
            let t = self.program_copy(lu as u32, ready, keeps.then_some(&buf[..]))?;
            self.counters.copy_bytes += unit;
            self.counters.redundant_write_bytes += unit;
            done = done.max(t);
        }
        Ok(done)
    }

    /// Reads logical unit `lu` for a copy (the cache is empty): zeros when unmapped; one array
    /// read per flash page (consecutive units of one page share it), as GC reads.
    fn copy_read(
        &mut self,
        lu: u32,
        at: u64,
        page: &mut PageRead,
        out: Option<&mut [u8]>,
    ) -> Result<u64, SimError> {
        let pu = self.map[lu as usize];
        if pu == NIL {
            if let Some(out) = out {
                out.fill(0);
            }
            return Ok(at);
        }
        self.counters.media_read_bytes += self.unit as u64;
        let t = if self.timing.enabled() {
            let p = pu >> self.upp_shift;
            if p != page.page {
                page.page = p;
                page.ready = self.timing.read(at, self.die_of(pu), 1);
            }
            page.ready
        } else {
            at
        };
        if let Some(out) = out {
            self.store.read(pu, out)?;
        }
        Ok(t)
    }

    /// Programs one copied unit at `lu` on the host frontier (placement id 0), straight to flash.
    /// Returns when the unit is in the write buffer (no host transfer).
    fn program_copy(&mut self, lu: u32, at: u64, data: Option<&[u8]>) -> Result<u64, SimError> {
        let stream = self.host_stream(0)?;
        let old = self.map[lu as usize];
        self.mapped_units += (old == NIL) as u64;
        self.unref(old, lu);
        let pu = self.program(stream, None, lu, at, data)?;
        Ok(if self.timing.enabled() {
            self.timing.internal_ack(at, self.die_of(pu))
        } else {
            at
        })
    }
}

/// The flash page a copy read last and when its data is out.
struct PageRead {
    page: u32,
    ready: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DataMode, SsdConfig};

    fn ssd(unit: u32, timing: bool) -> Ssd {
        let mut cfg = SsdConfig::small(8 << 20, 0.25);
        cfg.mapping_unit_bytes = unit;
        cfg.data = DataMode::Memory;
        cfg.timing.enabled = timing;
        Ssd::new(cfg).unwrap()
    }

    fn fill(ssd: &mut Ssd, off: u64, len: usize, seed: u8) -> Vec<u8> {
        let d: Vec<u8> = (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect();
        ssd.write(0, off, len as u64, 0, Some(&d)).unwrap();
        d
    }

    fn read(ssd: &mut Ssd, off: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        ssd.read(0, off, len as u64, Some(&mut b)).unwrap();
        b
    }

    #[test]
    fn aligned_copy_programs_the_destination_and_counts() {
        let mut s = ssd(4096, false);
        let d = fill(&mut s, 0, 16384, 1);
        let before = s.counters().clone();
        s.copy(
            0,
            &[CopyOp {
                src: 0,
                dst: 1 << 20,
                len: 16384,
            }],
        )
        .unwrap();
        let c = s.counters().clone();
        assert_eq!(read(&mut s, 1 << 20, 16384), d);
        assert_eq!(read(&mut s, 0, 16384), d, "the source is untouched");
        assert_eq!(c.copy_cmds, 1);
        assert_eq!(c.copy_ops, 1);
        assert_eq!(c.copy_bytes, 16384);
        assert_eq!(c.redundant_write_bytes, 16384);
        assert_eq!(c.media_write_bytes - before.media_write_bytes, 16384);
        assert_eq!(
            c.host_write_bytes, before.host_write_bytes,
            "not host traffic"
        );
        assert_eq!(c.rmw_units, 0);
        s.check_invariants().unwrap();
    }

    #[test]
    fn unaligned_copy_is_read_modify_write() {
        let mut s = ssd(4096, false);
        let a = fill(&mut s, 0, 8192, 2);
        let b = fill(&mut s, 65536, 8192, 3);
        // 1 KiB from offset 512 into the middle of the second range's first unit: out of phase.
        s.copy(
            0,
            &[CopyOp {
                src: 512,
                dst: 65536 + 3072,
                len: 2048,
            }],
        )
        .unwrap();
        let mut want = b.clone();
        want[3072..5120].copy_from_slice(&a[512..2560]);
        assert_eq!(read(&mut s, 65536, 8192), want);
        let c = s.counters();
        assert_eq!(c.copy_bytes, 8192, "two destination units programmed");
        assert_eq!(c.rmw_units, 2);
        s.check_invariants().unwrap();
    }

    #[test]
    fn a_batch_pays_one_command_overhead() {
        let mut one = ssd(4096, true);
        let mut batch = ssd(4096, true);
        for s in [&mut one, &mut batch] {
            fill(s, 0, 8 * 4096, 4);
            s.flush(0).unwrap();
        }
        let t0 = one.flush(0).unwrap().max(batch.flush(0).unwrap()) + 1_000_000_000;
        let ops: Vec<CopyOp> = (0..8)
            .map(|i| CopyOp {
                src: i * 4096,
                dst: (1 << 20) + i * 4096,
                len: 4096,
            })
            .collect();
        let mut t = t0;
        for op in &ops {
            t = one.copy(t, std::slice::from_ref(op)).unwrap();
        }
        let single = t - t0;
        let batched = batch.copy(t0, &ops).unwrap() - t0;
        assert!(batched > 0);
        let overhead = one.config().timing.command_overhead_ns;
        assert!(
            single >= batched + 7 * overhead,
            "8 single copies {single} ns vs one batch {batched} ns"
        );
        assert_eq!(one.counters().copy_cmds, 8);
        assert_eq!(batch.counters().copy_cmds, 1);
        assert_eq!(one.counters().copy_ops, batch.counters().copy_ops);
        assert_eq!(one.counters().copy_bytes, batch.counters().copy_bytes);
    }

    #[test]
    fn rejects_bad_ranges_and_zoned_devices() {
        let mut s = ssd(4096, false);
        let cap = s.capacity().logical_bytes;
        assert!(matches!(
            s.copy(
                0,
                &[CopyOp {
                    src: 0,
                    dst: cap,
                    len: 4096
                }]
            ),
            Err(SimError::OutOfRange { .. })
        ));
        assert!(matches!(
            s.copy(
                0,
                &[CopyOp {
                    src: 0,
                    dst: 2048,
                    len: 4096
                }]
            ),
            Err(SimError::Overlap)
        ));
        assert_eq!(s.counters().copy_cmds, 0);
        let mut cfg = SsdConfig::small(8 << 20, 0.2);
        cfg.mode = crate::config::Mode::Zns(crate::config::ZnsConfig {
            zone_eus: 1,
            max_open_zones: 4,
            max_active_zones: 4,
        });
        cfg.fit_reserve();
        let mut z = Ssd::new(cfg).unwrap();
        assert!(matches!(
            z.copy(
                0,
                &[CopyOp {
                    src: 0,
                    dst: 4096,
                    len: 4096
                }]
            ),
            Err(SimError::Unsupported(_))
        ));
    }

    #[test]
    fn rewrites_count_as_redundant_host_writes() {
        let mut s = ssd(4096, false);
        fill(&mut s, 0, 4096, 5);
        s.write_rewrite(0, 8192, 4096, 0, Some(&[9u8; 4096]))
            .unwrap();
        // A 512-byte rewrite programs a whole (read-modify-written) unit.
        s.write_rewrite(0, 8192, 512, 0, Some(&[8u8; 512])).unwrap();
        let c = s.counters();
        assert_eq!(c.host_write_bytes, 4096 + 4096 + 512);
        assert_eq!(c.redundant_write_bytes, 8192);
        assert_eq!(c.rmw_units, 1);
        let mut want = vec![9u8; 4096];
        want[..512].fill(8);
        assert_eq!(read(&mut s, 8192, 4096), want);
    }

    #[test]
    fn cached_rewrites_count_when_programmed() {
        let mut cfg = SsdConfig::small(8 << 20, 0.25);
        cfg.data = DataMode::Memory;
        cfg.write_cache_bytes = 16 * 4096;
        let mut s = Ssd::new(cfg).unwrap();
        s.write_rewrite(0, 0, 4096, 0, Some(&[1u8; 4096])).unwrap();
        s.write_rewrite(0, 4096, 4096, 0, Some(&[1u8; 4096]))
            .unwrap();
        // Overwritten in the cache by a plain host write before it is programmed.
        s.write(0, 4096, 4096, 0, Some(&[2u8; 4096])).unwrap();
        assert_eq!(
            s.counters().redundant_write_bytes,
            0,
            "nothing programmed yet"
        );
        s.flush(0).unwrap();
        assert_eq!(s.counters().redundant_write_bytes, 4096);
    }
}
