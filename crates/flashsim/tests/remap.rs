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
