//! Paths that must leave a device in exactly the same state: batched and single writes, and
//! invalidations applied at once or left pending.

use crate::config::{DataMode, FdpConfig, GcPolicy, GcUnit, Geometry, Mode, SsdConfig};
use crate::ssd::{RemapKind, RemapOp, Ssd};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

const UNIT: u64 = 4096;

fn device(unit: GcUnit, handles: u32) -> Ssd {
    device_with(unit, handles, GcPolicy::Greedy)
}

fn device_with(unit: GcUnit, handles: u32, policy: GcPolicy) -> Ssd {
    let g = Geometry {
        channels: 2,
        dies_per_channel: 2,
        planes_per_die: 2,
        blocks_per_plane: 1,
        pages_per_block: 16,
        page_size_bytes: 16384,
    };
    let mut cfg = SsdConfig::sized(g, 24 << 20, 0.12);
    cfg.timing.enabled = false;
    cfg.gc.unit = unit;
    cfg.gc.policy = policy;
    if handles > 1 {
        cfg.mode = Mode::Fdp(FdpConfig { handles });
    }
    cfg.fit_reserve();
    Ssd::new(cfg).unwrap()
}

/// Everything the FTL keeps, for comparing two devices (pending invalidations applied).
fn state(s: &mut Ssd) -> String {
    s.apply_unrefs();
    format!(
        "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {} {:?}",
        s.map,
        s.rev,
        s.valid,
        s.eu_valid,
        s.eu_state,
        s.erase_count,
        s.free,
        s.report(),
        s.mapped_units,
        s.frontiers
            .iter()
            .map(|f| (f.eu.clone(), f.off.clone(), f.rr))
            .collect::<Vec<_>>(),
    )
}

/// Runs the same commands through `write_batch` and through one `write` per offset.
fn same_as_single_writes(unit: GcUnit, handles: u32, remap: bool) {
    let mut a = device(unit, handles);
    let mut b = device(unit, handles);
    let units = a.capacity().logical_bytes / UNIT;
    let mut rng = Pcg64Mcg::seed_from_u64(11);
    for round in 0..60u64 {
        let n = rng.random_range(1..3000);
        let hot = rng.random_bool(0.3);
        let offs: Vec<u64> = (0..n)
            .map(|_| {
                let u = if hot {
                    rng.random_range(0..64)
                } else {
                    rng.random_range(0..units)
                };
                u * UNIT
            })
            .collect();
        let pid = (round % handles as u64) as u16;
        a.write_batch(7, &offs, UNIT, pid).unwrap();
        for &o in &offs {
            b.write(7, o, UNIT, pid, None).unwrap();
        }
        if round % 9 == 4 {
            let lo = rng.random_range(0..units - 100) * UNIT;
            a.trim(8, lo, 90 * UNIT).unwrap();
            b.trim(8, lo, 90 * UNIT).unwrap();
        }
        if remap && round % 13 == 6 {
            let op = RemapOp {
                src: rng.random_range(0..units / 2) * UNIT,
                dst: (units / 2 + rng.random_range(0..units / 2 - 50)) * UNIT,
                len: 40 * UNIT,
                kind: RemapKind::Share,
            };
            a.remap(9, &[op]).unwrap();
            b.remap(9, &[op]).unwrap();
        }
        assert!(
            state(&mut a) == state(&mut b),
            "round {round}: states differ"
        );
    }
    a.check_invariants().unwrap();
    assert!(a.counters().gc_runs > 10);
}

#[test]
fn batch_equals_single_writes_superblock() {
    same_as_single_writes(GcUnit::Superblock, 1, false);
}

#[test]
fn batch_equals_single_writes_block_unit() {
    same_as_single_writes(GcUnit::Block, 1, false);
}

#[test]
fn batch_equals_single_writes_fdp() {
    same_as_single_writes(GcUnit::Superblock, 3, false);
}

#[test]
fn batch_equals_single_writes_with_shared_units() {
    same_as_single_writes(GcUnit::Superblock, 1, true);
    same_as_single_writes(GcUnit::Block, 1, true);
}

/// Pending invalidations change nothing: a device that applies them after every command
/// evolves exactly like one that leaves them pending (every GC policy, both GC units, with
/// trims and shared units).
#[test]
fn pending_invalidations_are_invisible() {
    for policy in [
        GcPolicy::Greedy,
        GcPolicy::CostBenefit,
        GcPolicy::Fifo,
        GcPolicy::Random,
        GcPolicy::DChoices { d: 3 },
    ] {
        for unit in [GcUnit::Superblock, GcUnit::Block] {
            let mut a = device_with(unit, 1, policy);
            let mut b = device_with(unit, 1, policy);
            let units = a.capacity().logical_bytes / UNIT;
            let mut rng = Pcg64Mcg::seed_from_u64(5);
            for i in 0..40_000u64 {
                let u = rng.random_range(0..units);
                if i % 997 == 0 {
                    let n = 16.min(units - u);
                    a.trim(0, u * UNIT, n * UNIT).unwrap();
                    b.trim(0, u * UNIT, n * UNIT).unwrap();
                } else if i % 4999 == 0 && u + 8 < units / 2 {
                    let op = RemapOp {
                        src: u * UNIT,
                        dst: (units / 2 + u) * UNIT,
                        len: 8 * UNIT,
                        kind: RemapKind::Share,
                    };
                    a.remap(0, &[op]).unwrap();
                    b.remap(0, &[op]).unwrap();
                } else {
                    a.write(0, u * UNIT, UNIT, 0, None).unwrap();
                    b.write(0, u * UNIT, UNIT, 0, None).unwrap();
                }
                b.apply_unrefs();
                assert!(
                    a.report() == b.report() && a.map == b.map,
                    "{policy} {unit:?}: diverged at command {i}"
                );
                if i % 5000 == 0 {
                    a.check_invariants().unwrap();
                }
            }
            assert!(a.counters().gc_runs > 20, "{policy} {unit:?}");
            assert!(state(&mut a) == state(&mut b), "{policy} {unit:?}");
        }
    }
}

/// With timing on or off, the direct path of whole-unit writes without data and the bulk GC
/// relocation give the same completion times, latencies and device state as the general paths
/// (forced here by keeping data in memory and writing it).
#[test]
fn direct_paths_match_the_general_ones() {
    for (unit, timing) in [
        (GcUnit::Superblock, true),
        (GcUnit::Block, true),
        (GcUnit::Superblock, false),
        (GcUnit::Block, false),
    ] {
        let make = |data: DataMode| {
            let g = Geometry {
                channels: 2,
                dies_per_channel: 2,
                planes_per_die: 2,
                blocks_per_plane: 1,
                pages_per_block: 16,
                page_size_bytes: 16384,
            };
            let mut cfg = SsdConfig::sized(g, 24 << 20, 0.12);
            cfg.gc.unit = unit;
            cfg.timing.enabled = timing;
            cfg.data = data;
            cfg.fit_reserve();
            Ssd::new(cfg).unwrap()
        };
        let mut a = make(DataMode::WafOnly);
        let mut b = make(DataMode::Memory);
        let units = a.capacity().logical_bytes / UNIT;
        let zeros = vec![0u8; UNIT as usize];
        let mut rng = Pcg64Mcg::seed_from_u64(9);
        let mut now = 0u64;
        for i in 0..30_000u64 {
            let u = rng.random_range(0..units);
            let (ta, tb) = if i % 7 == 0 {
                (
                    a.read(now, u * UNIT, UNIT, None).unwrap(),
                    b.read(now, u * UNIT, UNIT, None).unwrap(),
                )
            } else {
                (
                    a.write(now, u * UNIT, UNIT, 0, None).unwrap(),
                    b.write(now, u * UNIT, UNIT, 0, Some(&zeros)).unwrap(),
                )
            };
            assert_eq!(ta, tb, "{unit:?} {timing}: command {i}");
            if i % 5000 == 4999 {
                now += 50_000_000;
                a.idle_until(now).unwrap();
                b.idle_until(now).unwrap();
            }
            now += rng.random_range(0..20_000);
        }
        assert!(a.counters().gc_runs > 20, "{unit:?} {timing}");
        assert_eq!(a.report(), b.report(), "{unit:?} {timing}");
        assert_eq!(
            a.timing.all_idle_at(),
            b.timing.all_idle_at(),
            "{unit:?} {timing}"
        );
        assert!(state(&mut a) == state(&mut b), "{unit:?} {timing}");
    }
}
