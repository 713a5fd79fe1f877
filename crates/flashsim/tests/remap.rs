//! Acceptance tests of remap: aligned remaps share physical pages without programming flash, the
//! two ranges stay independent under later overwrites, trims and GC relocation, and unaligned
//! remaps fall back to a counted copy. Contents are checked against a model of what every LBA holds.

use flashsim::{DataMode, Geometry, RemapKind, RemapOp, SimError, Ssd, SsdConfig};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

const UNIT: u64 = 4096;

/// A device keeping data in memory plus a model of its contents: `tag[lba]` names the 4 KiB
/// pattern the LBA holds (0 = never written or unmapped: zeros).
struct Fixture {
    ssd: Ssd,
    tag: Vec<u64>,
    next_tag: u64,
    t: u64,
}

fn pattern(tag: u64) -> Vec<u8> {
    if tag == 0 {
        return vec![0; UNIT as usize];
    }
    let mut x = tag.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..UNIT / 8)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()
        })
        .collect()
}

impl Fixture {
    /// One die, 64 x 4 KiB pages per erase unit, 128 erase units, spare factor 0.25; greedy GC.
    fn new() -> Fixture {
        let geometry = Geometry {
            channels: 1,
            dies_per_channel: 1,
            planes_per_die: 1,
            blocks_per_plane: 128,
            pages_per_block: 64,
            page_size_bytes: UNIT as u32,
        };
        let mut cfg = SsdConfig::sized(geometry.clone(), UNIT, 0.25);
        cfg.geometry = geometry;
        cfg.timing.enabled = false;
        cfg.data = DataMode::Memory;
        let ssd = Ssd::new(cfg.with_spare_factor(0.25)).unwrap();
        let n = (ssd.capacity().logical_bytes / UNIT) as usize;
        let mut f = Fixture {
            ssd,
            tag: vec![0; n],
            next_tag: 1,
            t: 0,
        };
        for lba in 0..n as u64 {
            f.write(lba);
        }
        f
    }

    fn lbas(&self) -> u64 {
        self.tag.len() as u64
    }

    /// Writes fresh data to an LBA.
    fn write(&mut self, lba: u64) {
        let tag = self.next_tag;
        self.next_tag += 1;
        self.t += 1000;
        self.ssd
            .write(self.t, lba * UNIT, UNIT, 0, Some(&pattern(tag)))
            .unwrap();
        self.tag[lba as usize] = tag;
    }

    fn remap(&mut self, src: u64, dst: u64, units: u64, kind: RemapKind) {
        let op = RemapOp {
            src: src * UNIT,
            dst: dst * UNIT,
            len: units * UNIT,
            kind,
        };
        self.ssd.remap(self.t, &[op]).unwrap();
        for i in 0..units as usize {
            self.tag[dst as usize + i] = self.tag[src as usize + i];
            if kind == RemapKind::Move {
                self.tag[src as usize + i] = 0;
            }
        }
    }

    /// `count` random writes to LBAs outside `keep` (so shared units stay shared while GC runs).
    fn random_writes(&mut self, rng: &mut Pcg64Mcg, count: u64, keep: &[std::ops::Range<u64>]) {
        let mut done = 0;
        while done < count {
            let lba = rng.random_range(0..self.lbas());
            if keep.iter().any(|r| r.contains(&lba)) {
                continue;
            }
            self.write(lba);
            done += 1;
        }
    }

    fn check_lba(&mut self, lba: u64) {
        let mut buf = vec![0u8; UNIT as usize];
        self.ssd
            .read(self.t, lba * UNIT, UNIT, Some(&mut buf))
            .unwrap();
        let want = self.tag[lba as usize];
        assert!(
            buf == pattern(want),
            "LBA {lba} does not hold pattern {want}"
        );
    }

    /// Reads back every LBA and checks the FTL's invariants.
    fn check_all(&mut self) {
        for lba in 0..self.lbas() {
            self.check_lba(lba);
        }
        self.ssd.check_invariants().unwrap();
        let mapped = self.tag.iter().filter(|&&t| t != 0).count() as f64;
        assert!((self.ssd.fill() - mapped / self.lbas() as f64).abs() < 1e-12);
    }
}

#[test]
fn aligned_share_programs_nothing_and_ranges_stay_independent() {
    let mut f = Fixture::new();
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    let n = f.lbas();
    f.random_writes(&mut rng, n, &[]);
    let (src, dst, len) = (100, 1000, 64);
    let before = f.ssd.counters().clone();
    f.remap(src, dst, len, RemapKind::Share);
    let c = f.ssd.counters();
    assert_eq!(
        c.media_write_bytes, before.media_write_bytes,
        "no flash programmed"
    );
    assert_eq!(c.host_write_bytes, before.host_write_bytes);
    assert_eq!(c.remap_units - before.remap_units, len);
    assert_eq!(c.remap_copy_bytes, 0);
    f.check_all();

    // Overwrite part of each side: the other side keeps the shared data.
    for lba in src..src + 16 {
        f.write(lba);
    }
    for lba in dst + 48..dst + 64 {
        f.write(lba);
    }
    // Trim part of each side too.
    f.ssd.trim(f.t, (src + 16) * UNIT, 4 * UNIT).unwrap();
    f.ssd.trim(f.t, (dst + 44) * UNIT, 4 * UNIT).unwrap();
    for i in 0..4 {
        f.tag[(src + 16 + i) as usize] = 0;
        f.tag[(dst + 44 + i) as usize] = 0;
    }
    f.check_all();

    // Enough writes elsewhere that every erase unit is collected at least once: the pages still
    // shared by both ranges are relocated by GC.
    let erases = f.ssd.counters().eu_erases;
    let shared = [src..src + len, dst..dst + len];
    f.random_writes(&mut rng, 6 * n, &shared);
    assert!(f.ssd.counters().gc_units_moved > 0);
    assert!(f.ssd.counters().eu_erases > erases);
    assert!(
        f.ssd.wear().erase_count_min >= 1,
        "every erase unit, including those holding the shared pages, was collected"
    );
    f.check_all();

    // Later overwrites of either range still leave the other intact.
    for lba in src + 20..src + 32 {
        f.write(lba);
    }
    for lba in dst + 32..dst + 44 {
        f.write(lba);
    }
    f.check_all();
    // And everything survives a further round of unrestricted random writes.
    f.random_writes(&mut rng, 3 * n, &[]);
    f.check_all();
}

#[test]
fn aligned_move_programs_nothing_and_unmaps_the_source() {
    let mut f = Fixture::new();
    let mut rng = Pcg64Mcg::seed_from_u64(4);
    let n = f.lbas();
    // Scatter the source over many erase units first (after the sequential fill it fills whole
    // EUs that GC would never pick while the range is kept).
    f.random_writes(&mut rng, n, &[]);
    let (src, dst, len) = (200, 2000, 64);
    let before = f.ssd.counters().clone();
    let fill = f.ssd.fill();
    f.remap(src, dst, len, RemapKind::Move);
    let c = f.ssd.counters();
    assert_eq!(
        c.media_write_bytes, before.media_write_bytes,
        "no flash programmed"
    );
    assert_eq!(c.remap_units - before.remap_units, len);
    // The destination's old data is gone and the source is unmapped: 64 fewer mapped units.
    assert!((fill - f.ssd.fill() - len as f64 / n as f64).abs() < 1e-12);
    f.check_all();

    // GC relocates the moved pages; the destination keeps its data, the source stays empty.
    f.random_writes(&mut rng, 6 * n, &[src..src + len, dst..dst + len]);
    assert!(f.ssd.wear().erase_count_min >= 1);
    f.check_all();
    // Writing the old source range does not disturb the destination.
    for lba in src..src + len {
        f.write(lba);
    }
    f.check_all();
}

#[test]
fn remap_chains_of_share_and_move_keep_owners_straight() {
    let mut f = Fixture::new();
    let mut rng = Pcg64Mcg::seed_from_u64(5);
    let n = f.lbas();
    f.random_writes(&mut rng, n, &[]);
    // A -> B shared; then A (the first owner) moved to C and B (an extra owner) moved to D.
    let (a, b, c, d, len) = (300, 1300, 2300, 3300, 32);
    f.remap(a, b, len, RemapKind::Share);
    f.remap(a, c, len, RemapKind::Move);
    f.remap(b, d, len, RemapKind::Move);
    // Share onto a range that already shares the same pages, and a batch of several ops.
    f.remap(c, d, 8, RemapKind::Share);
    let ops = [
        RemapOp {
            src: c * UNIT,
            dst: (c + 100) * UNIT,
            len: 8 * UNIT,
            kind: RemapKind::Share,
        },
        RemapOp {
            src: (c + 100) * UNIT,
            dst: (c + 200) * UNIT,
            len: 8 * UNIT,
            kind: RemapKind::Move,
        },
    ];
    f.ssd.remap(f.t, &ops).unwrap();
    for i in 0..8 {
        f.tag[(c + 200 + i) as usize] = f.tag[(c + i) as usize];
        f.tag[(c + 100 + i) as usize] = 0;
    }
    f.check_all();
    let keep = [c..c + len, d..d + len, c + 200..c + 208];
    f.random_writes(&mut rng, 6 * n, &keep);
    assert!(
        f.ssd.wear().erase_count_min >= 1,
        "shared pages were relocated"
    );
    f.check_all();
    for lba in c..c + len / 2 {
        f.write(lba);
    }
    for lba in d + len / 2..d + len {
        f.write(lba);
    }
    f.random_writes(&mut rng, 2 * n, &keep);
    f.check_all();
    // Overlapping ranges are refused.
    let overlap = RemapOp {
        src: 0,
        dst: UNIT,
        len: 2 * UNIT,
        kind: RemapKind::Share,
    };
    assert_eq!(f.ssd.remap(f.t, &[overlap]), Err(SimError::Overlap));
}

#[test]
fn unaligned_remap_falls_back_to_a_counted_copy() {
    let mut f = Fixture::new();
    // Reads `len` bytes at a byte address.
    let read = |f: &mut Fixture, off: u64, len: u64| {
        let mut buf = vec![0u8; len as usize];
        f.ssd.read(f.t, off, len, Some(&mut buf)).unwrap();
        buf
    };
    for (src, dst, len, shared_units) in [
        // Same phase: a 3584 B head and a 512 B tail are copied, 9 units in between are shared.
        (400 * UNIT + 512, 3400 * UNIT + 512, 10 * UNIT, 9),
        // Different phases: everything is copied.
        (500 * UNIT + 512, 3500 * UNIT + 1024, 4 * UNIT, 0),
        // Smaller than a unit.
        (600 * UNIT + 100, 3600 * UNIT + 700, 1000, 0),
    ] {
        // Whole units around the destination, to check that bytes outside it are kept.
        let lo = dst / UNIT * UNIT;
        let hi = (dst + len).div_ceil(UNIT) * UNIT;
        let mut want = read(&mut f, lo, hi - lo);
        let src_bytes = read(&mut f, src, len);
        want[(dst - lo) as usize..(dst - lo + len) as usize].copy_from_slice(&src_bytes);
        let before = f.ssd.counters().clone();
        let op = RemapOp {
            src,
            dst,
            len,
            kind: RemapKind::Share,
        };
        f.ssd.remap(f.t, &[op]).unwrap();
        let c = f.ssd.counters();
        let copied = len - shared_units * UNIT;
        assert_eq!(c.remap_copy_bytes - before.remap_copy_bytes, copied);
        assert_eq!(c.remap_units - before.remap_units, shared_units);
        // Each partially covered destination unit is read-modify-written: one unit programmed.
        let touched = (hi - lo) / UNIT - shared_units;
        assert_eq!(
            c.media_write_bytes - before.media_write_bytes,
            touched * UNIT
        );
        // The copy is device-internal, not host traffic.
        assert_eq!(c.host_write_bytes, before.host_write_bytes);
        assert_eq!(c.host_read_bytes, before.host_read_bytes);
        assert_eq!(read(&mut f, lo, hi - lo), want);
        assert_eq!(read(&mut f, src, len), src_bytes, "the source is unchanged");
        f.ssd.check_invariants().unwrap();
    }
}

/// Sub-page mapping units (512 B .. 4 KiB on 4 KiB flash pages), checked end to end at 512-byte
/// granularity against a byte-level model of the device's contents.
mod sub_page {
    use flashsim::{CopyOp, DataMode, RemapKind, RemapOp, Ssd, SsdConfig, MAP_ENTRY_BYTES};
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    const SECTOR: u64 = 512;
    const UNITS: [u32; 4] = [512, 1024, 2048, 4096];

    fn device(unit: u32, logical: u64) -> Ssd {
        let mut cfg = SsdConfig::small(logical, 0.3);
        cfg.mapping_unit_bytes = unit;
        cfg.data = DataMode::Memory;
        cfg.fit_reserve();
        Ssd::new(cfg).unwrap()
    }

    /// A random range of 1..=16 sectors inside `cap`, and a second one not overlapping it.
    fn two_ranges(rng: &mut Pcg64Mcg, cap: u64) -> (u64, u64, u64) {
        let len = rng.random_range(1..=16u64) * SECTOR;
        loop {
            let a = rng.random_range(0..(cap - len) / SECTOR) * SECTOR;
            let b = rng.random_range(0..(cap - len) / SECTOR) * SECTOR;
            if a + len <= b || b + len <= a {
                return (a, b, len);
            }
        }
    }

    fn check(ssd: &mut Ssd, model: &[u8], t: u64) {
        let mut buf = vec![0u8; model.len()];
        ssd.read(t, 0, model.len() as u64, Some(&mut buf)).unwrap();
        if let Some(i) = buf.iter().zip(model).position(|(a, b)| a != b) {
            panic!(
                "unit {}: byte {i} (sector {}) reads {} expected {}",
                ssd.unit_bytes(),
                i as u64 / SECTOR,
                buf[i],
                model[i]
            );
        }
        ssd.check_invariants().unwrap();
    }

    #[test]
    fn random_sector_ops_match_a_model_for_every_unit_size() {
        for unit in UNITS {
            let mut ssd = device(unit, 2 << 20);
            let cap = ssd.capacity().logical_bytes;
            let u = unit as u64;
            let mut model = vec![0u8; cap as usize];
            let mut rng = Pcg64Mcg::seed_from_u64(unit as u64);
            let mut t = 0u64;
            for step in 0..4000 {
                t += 10_000;
                match rng.random_range(0..100) {
                    0..50 => {
                        let (off, _, len) = two_ranges(&mut rng, cap);
                        let data: Vec<u8> = (0..len).map(|_| rng.random()).collect();
                        if rng.random_bool(0.2) {
                            t = ssd.write_rewrite(t, off, len, 0, Some(&data)).unwrap();
                        } else {
                            t = ssd.write(t, off, len, 0, Some(&data)).unwrap();
                        }
                        model[off as usize..(off + len) as usize].copy_from_slice(&data);
                    }
                    50..70 => {
                        let (src, dst, len) = two_ranges(&mut rng, cap);
                        let kind = if rng.random_bool(0.5) {
                            RemapKind::Share
                        } else {
                            RemapKind::Move
                        };
                        t = ssd
                            .remap(
                                t,
                                &[RemapOp {
                                    src,
                                    dst,
                                    len,
                                    kind,
                                }],
                            )
                            .unwrap();
                        let moved = model[src as usize..(src + len) as usize].to_vec();
                        model[dst as usize..(dst + len) as usize].copy_from_slice(&moved);
                        // A move unmaps the source's whole units that were remapped (only when
                        // both ranges have the same phase in the unit); the rest was copied.
                        if kind == RemapKind::Move && src % u == dst % u {
                            let lo = dst.div_ceil(u) * u;
                            let hi = (dst + len) / u * u;
                            if lo < hi {
                                let s = (src + lo - dst) as usize;
                                model[s..s + (hi - lo) as usize].fill(0);
                            }
                        }
                    }
                    70..90 => {
                        let ops: Vec<CopyOp> = (0..rng.random_range(1..=3))
                            .map(|_| {
                                let (src, dst, len) = two_ranges(&mut rng, cap);
                                CopyOp { src, dst, len }
                            })
                            .collect();
                        t = ssd.copy(t, &ops).unwrap();
                        for op in &ops {
                            let d = model[op.src as usize..(op.src + op.len) as usize].to_vec();
                            model[op.dst as usize..(op.dst + op.len) as usize].copy_from_slice(&d);
                        }
                    }
                    _ => {
                        let (off, _, len) = two_ranges(&mut rng, cap);
                        t = ssd.trim(t, off, len).unwrap();
                        let lo = off.div_ceil(u) * u;
                        let hi = (off + len) / u * u;
                        if lo < hi {
                            model[lo as usize..hi as usize].fill(0);
                        }
                    }
                }
                if step % 500 == 499 {
                    check(&mut ssd, &model, t);
                }
            }
            check(&mut ssd, &model, t);
            let c = ssd.counters().clone();
            assert!(c.gc_runs > 0, "unit {unit}: the run should reach GC");
            assert!(c.copy_cmds > 0 && c.copy_bytes > 0);
            assert!(c.redundant_write_bytes >= c.copy_bytes + c.remap_copy_bytes);
            if unit == 512 {
                assert_eq!(
                    c.rmw_units, 0,
                    "512-byte units never need read-modify-write"
                );
                assert_eq!(c.remap_copy_bytes, 0, "every remap is unit-aligned");
            } else {
                assert!(
                    c.rmw_units > 0,
                    "unit {unit}: sector writes read-modify-write"
                );
                assert!(c.remap_copy_bytes > 0);
            }
        }
    }

    #[test]
    fn sector_aligned_remap_programs_nothing_only_on_sector_units() {
        for unit in [512u32, 4096] {
            let mut ssd = device(unit, 2 << 20);
            let data: Vec<u8> = (0..8192u32).map(|i| (i % 249) as u8).collect();
            ssd.write(0, 0, 8192, 0, Some(&data)).unwrap();
            ssd.flush(0).unwrap();
            let before = ssd.counters().clone();
            // 1.5 KiB from sector 1 to sector 2049: sector-aligned, not 4 KiB-aligned.
            let op = RemapOp {
                src: 512,
                dst: (1 << 20) + 512,
                len: 1536,
                kind: RemapKind::Share,
            };
            ssd.remap(0, &[op]).unwrap();
            let c = ssd.counters();
            let programmed = c.media_write_bytes - before.media_write_bytes;
            if unit == 512 {
                assert_eq!(programmed, 0, "a remap of whole units is a mapping change");
                assert_eq!(c.remap_units - before.remap_units, 3);
                assert_eq!(c.remap_copy_bytes, 0);
                assert_eq!(c.redundant_write_bytes, 0);
            } else {
                assert_eq!(c.remap_units, before.remap_units);
                assert_eq!(c.remap_copy_bytes, 1536, "falls back to a counted copy");
                assert_eq!(programmed, 4096, "one read-modify-written unit");
                assert_eq!(c.redundant_write_bytes, 4096);
            }
            let mut back = vec![0u8; 1536];
            ssd.read(0, op.dst, 1536, Some(&mut back)).unwrap();
            assert_eq!(back, data[512..2048]);
        }
    }

    #[test]
    fn mapping_memory_scales_with_the_unit() {
        let mut table = Vec::new();
        for unit in UNITS {
            let mut ssd = device(unit, 2 << 20);
            let logical = ssd.capacity().logical_bytes;
            assert_eq!(ssd.mapped_units(), 0);
            ssd.write(0, 0, 64 << 10, 0, None).unwrap();
            assert_eq!(ssd.mapped_units(), (64 << 10) / unit as u64);
            assert_eq!(
                ssd.mapping_table_bytes(),
                logical / unit as u64 * MAP_ENTRY_BYTES
            );
            assert_eq!(ssd.mapping_bytes_in_use(), ssd.mapped_units() * 4);
            // Sharing one unit costs a sharing-table key and one extra owner.
            let op = RemapOp {
                src: 0,
                dst: 1 << 20,
                len: unit as u64,
                kind: RemapKind::Share,
            };
            ssd.remap(0, &[op]).unwrap();
            assert_eq!(ssd.sharing_table_bytes(), 8);
            let r = ssd.report();
            assert_eq!(r.mapped_units, ssd.mapped_units());
            assert_eq!(r.mapping_table_bytes, ssd.mapping_table_bytes());
            assert_eq!(r.mapping_bytes_in_use, ssd.mapping_bytes_in_use());
            table.push(ssd.mapping_table_bytes() - 8);
        }
        for w in table.windows(2) {
            assert_eq!(w[0], 2 * w[1], "halving the unit doubles the table");
        }
    }
}
