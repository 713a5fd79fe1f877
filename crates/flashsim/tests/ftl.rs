//! FTL features not covered elsewhere: the per-block GC unit, trim, background GC while idle, the
//! file-backed data mode, and GC policies keeping the FTL consistent with real data.

use flashsim::{DataMode, GcPolicy, GcUnit, Geometry, Ssd, SsdConfig};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

const UNIT: u64 = 4096;

fn geometry(blocks: u32) -> Geometry {
    Geometry {
        channels: 2,
        dies_per_channel: 2,
        planes_per_die: 1,
        blocks_per_plane: blocks,
        pages_per_block: 32,
        page_size_bytes: UNIT as u32,
    }
}

fn device(blocks: u32, sf: f64, f: impl FnOnce(&mut SsdConfig)) -> Ssd {
    let g = geometry(blocks);
    let mut cfg = SsdConfig::sized(g.clone(), UNIT, sf);
    cfg.geometry = g;
    cfg.timing.enabled = false;
    f(&mut cfg);
    Ssd::new(cfg.with_spare_factor(sf)).expect("valid config")
}

fn fill_and_churn(ssd: &mut Ssd, multiple: u64, seed: u64) {
    let n = ssd.capacity().logical_bytes / UNIT;
    for u in 0..n {
        ssd.write(0, u * UNIT, UNIT, 0, None).unwrap();
    }
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    for _ in 0..multiple * n {
        let u = rng.random_range(0..n);
        ssd.write(0, u * UNIT, UNIT, 0, None).unwrap();
    }
}

fn tag(lu: u64, version: u32) -> Vec<u8> {
    let mut v = vec![0u8; UNIT as usize];
    v[..8].copy_from_slice(&lu.to_le_bytes());
    v[8..12].copy_from_slice(&version.to_le_bytes());
    v
}

#[test]
fn block_gc_unit_collects_single_blocks_and_stays_consistent() {
    let mut ssd = device(256, 0.15, |c| c.gc.unit = GcUnit::Block);
    // 4 lanes (dies), each erase unit is one 32-page block.
    assert_eq!(ssd.capacity().eu_bytes, 32 * UNIT);
    assert_eq!(ssd.capacity().erase_units, 4 * 256);
    fill_and_churn(&mut ssd, 4, 1);
    let c = ssd.counters();
    assert!(c.gc_runs > 0);
    // Every erase is of one block.
    assert_eq!(c.block_erases, c.eu_erases);
    assert!(
        c.waf() > 1.5,
        "random writes at sf 0.15 amplify: {}",
        c.waf()
    );
    ssd.check_invariants().unwrap();
}

#[test]
fn trimmed_data_is_not_relocated() {
    // Same writes; in one device half of the space is trimmed after the fill, so GC finds more
    // invalid space and moves less.
    let run = |trim: bool| {
        let mut ssd = device(256, 0.10, |_| {});
        let n = ssd.capacity().logical_bytes / UNIT;
        for u in 0..n {
            ssd.write(0, u * UNIT, UNIT, 0, None).unwrap();
        }
        if trim {
            ssd.trim(0, 0, n / 2 * UNIT).unwrap();
            assert!((ssd.fill() - 0.5).abs() < 0.01);
            assert_eq!(ssd.counters().trim_bytes, n / 2 * UNIT);
        }
        let before = ssd.counters().clone();
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        for _ in 0..3 * n {
            let u = n / 2 + rng.random_range(0..n / 2);
            ssd.write(0, u * UNIT, UNIT, 0, None).unwrap();
        }
        ssd.check_invariants().unwrap();
        ssd.counters().waf_since(&before)
    };
    let (kept, trimmed) = (run(false), run(true));
    assert!(
        trimmed < 0.6 * kept,
        "trim should cut WAF: {trimmed:.3} vs {kept:.3}"
    );
}

#[test]
fn trim_of_partial_units_keeps_them_and_reads_zeros_after_full_trim() {
    let mut ssd = device(64, 0.2, |c| c.data = DataMode::Memory);
    ssd.write(0, 0, 3 * UNIT, 0, Some(&vec![7u8; 3 * UNIT as usize]))
        .unwrap();
    // Covers unit 1 fully, units 0 and 2 partly: only unit 1 is unmapped.
    ssd.trim(0, 100, 2 * UNIT).unwrap();
    let mut buf = vec![0u8; 3 * UNIT as usize];
    ssd.read(0, 0, 3 * UNIT, Some(&mut buf)).unwrap();
    assert!(buf[..UNIT as usize].iter().all(|&b| b == 7));
    assert!(buf[UNIT as usize..2 * UNIT as usize]
        .iter()
        .all(|&b| b == 0));
    assert!(buf[2 * UNIT as usize..].iter().all(|&b| b == 7));
    assert!(ssd.trim(0, ssd.capacity().logical_bytes, UNIT).is_err());
}

#[test]
fn background_gc_runs_only_while_idle_and_spares_later_writes() {
    let mut ssd = device(128, 0.15, |c| {
        c.timing.enabled = true;
        c.gc.free_eus_min = 1;
        c.gc.free_eus_background = 6;
    });
    fill_and_churn(&mut ssd, 2, 5);
    let free_before = ssd.free_eus();
    assert!(free_before < 6);
    // Everything above was submitted at time 0, so the dies are busy far into virtual time:
    // idle time that ends before they are free does no GC.
    ssd.idle_until(1_000_000).unwrap();
    assert_eq!(ssd.counters().gc_runs_background, 0);
    // A long idle period lets background GC refill the free pool.
    ssd.idle_until(1_000_000_000_000_000).unwrap();
    let c = ssd.counters();
    assert!(c.gc_runs_background > 0);
    assert!(ssd.free_eus() >= 6, "free {}", ssd.free_eus());
    ssd.check_invariants().unwrap();
    // The next host writes find free erase units and trigger no foreground GC.
    let fg = c.gc_runs - c.gc_runs_background;
    let t = ssd.report().wear.elapsed_ns;
    for u in 0..32 {
        ssd.write(t, u * UNIT, UNIT, 0, None).unwrap();
    }
    let c = ssd.counters();
    assert_eq!(c.gc_runs - c.gc_runs_background, fg);
}

#[test]
fn file_backed_device_keeps_data_through_gc() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flash.img");
    let mut ssd = device(64, 0.2, |c| c.data = DataMode::File { path: path.clone() });
    let n = ssd.capacity().logical_bytes / UNIT;
    let mut version = vec![0u32; n as usize];
    let mut rng = Pcg64Mcg::seed_from_u64(9);
    for i in 0..4 * n {
        let u = if i < n { i } else { rng.random_range(0..n) };
        version[u as usize] += 1;
        ssd.write(0, u * UNIT, UNIT, 0, Some(&tag(u, version[u as usize])))
            .unwrap();
    }
    assert!(ssd.counters().gc_runs > 0);
    let mut buf = vec![0u8; UNIT as usize];
    for u in 0..n {
        ssd.read(0, u * UNIT, UNIT, Some(&mut buf)).unwrap();
        assert_eq!(buf, tag(u, version[u as usize]), "unit {u}");
    }
    assert!(std::fs::metadata(&path).unwrap().len() >= ssd.capacity().physical_bytes);
}

#[test]
fn every_gc_policy_keeps_data_intact() {
    for policy in [
        GcPolicy::Greedy,
        GcPolicy::CostBenefit,
        GcPolicy::Fifo,
        GcPolicy::Random,
        GcPolicy::DChoices { d: 4 },
    ] {
        let mut ssd = device(64, 0.15, |c| {
            c.data = DataMode::Memory;
            c.gc.policy = policy;
            c.gc.separate_gc_frontier = matches!(policy, GcPolicy::CostBenefit);
        });
        let n = ssd.capacity().logical_bytes / UNIT;
        let mut version = vec![0u32; n as usize];
        let mut rng = Pcg64Mcg::seed_from_u64(11);
        for i in 0..5 * n {
            // Skewed: 80% of writes to the first 20% of units.
            let u = if i < n {
                i
            } else if rng.random_bool(0.8) {
                rng.random_range(0..n / 5)
            } else {
                rng.random_range(n / 5..n)
            };
            version[u as usize] += 1;
            ssd.write(0, u * UNIT, UNIT, 0, Some(&tag(u, version[u as usize])))
                .unwrap();
        }
        assert!(ssd.counters().gc_runs > 0, "{policy}");
        ssd.check_invariants()
            .unwrap_or_else(|e| panic!("{policy}: {e}"));
        let mut buf = vec![0u8; UNIT as usize];
        for u in 0..n {
            ssd.read(0, u * UNIT, UNIT, Some(&mut buf)).unwrap();
            assert_eq!(buf, tag(u, version[u as usize]), "{policy}: unit {u}");
        }
    }
}
