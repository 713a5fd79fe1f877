//! Acceptance tests of device behaviour around the FTL: die timing after GC, determinism of
//! seeded runs, read-modify-write accounting, and the volatile write cache across power cuts.

use flashsim::{DataMode, GcPolicy, GcUnit, Geometry, Report, Ssd, SsdConfig};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

const UNIT: u64 = 4096;
const SEC: u64 = 1_000_000_000;

fn geometry(channels: u32, dies: u32, blocks: u32) -> Geometry {
    Geometry {
        channels,
        dies_per_channel: dies,
        planes_per_die: 1,
        blocks_per_plane: blocks,
        pages_per_block: 64,
        page_size_bytes: UNIT as u32,
    }
}

fn config(g: Geometry, sf: f64) -> SsdConfig {
    let mut cfg = SsdConfig::sized(g.clone(), UNIT, sf);
    cfg.geometry = g;
    cfg.with_spare_factor(sf)
}

fn tagged(tag: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| tag ^ (i as u8).wrapping_mul(31)).collect()
}

// ----------------------------------------------------------------------------------------- timing

#[test]
fn read_behind_gc_on_its_die_waits_for_the_gc() {
    // One die, so GC and the read share it. Default (TLC) timing.
    let mut ssd = Ssd::new(config(geometry(1, 1, 64), 0.25)).unwrap();
    let tc = ssd.config().timing.clone();
    assert!(tc.enabled);
    let n = ssd.capacity().logical_bytes / UNIT;
    // Commands are a virtual second apart: the die is idle whenever one is submitted.
    let mut t = 0;
    for lba in 0..n {
        t += SEC;
        ssd.write(t, lba * UNIT, UNIT, 0, None).unwrap();
    }
    let mut rng = Pcg64Mcg::seed_from_u64(9);
    let idle_read = |ssd: &mut Ssd, at: u64| ssd.read(at, 0, UNIT, None).unwrap() - at;
    let expected_idle =
        tc.command_overhead_ns + tc.read_ns + (UNIT * 1000).div_ceil(tc.channel_mb_s);
    assert_eq!(idle_read(&mut ssd, t + SEC / 2), expected_idle);
    let mut checked = 0;
    for _ in 0..4 * n {
        t += SEC;
        let runs = ssd.counters().gc_runs;
        ssd.write(t, rng.random_range(0..n) * UNIT, UNIT, 0, None)
            .unwrap();
        if ssd.counters().gc_runs == runs {
            continue;
        }
        // This write ran foreground GC (relocations + an erase) on the die: a read submitted
        // right behind it queues after that work ...
        let behind_gc = idle_read(&mut ssd, t);
        assert!(
            behind_gc >= tc.erase_ns,
            "read behind GC took {behind_gc} ns, less than one erase"
        );
        // ... while the same read on the idle die later takes the bare read time.
        let idle = idle_read(&mut ssd, t + SEC / 2);
        assert_eq!(idle, expected_idle);
        eprintln!("read behind GC: {behind_gc} ns, on the idle die: {idle} ns");
        assert!(behind_gc > idle + tc.erase_ns);
        checked += 1;
        if checked == 5 {
            break;
        }
    }
    assert_eq!(checked, 5, "foreground GC did not run");
    assert_eq!(ssd.counters().gc_runs_background, 0);
    assert!(ssd.report().read_latency.max_ns >= tc.erase_ns);
}

// ------------------------------------------------------------------------------------ determinism

/// Fill + 3 capacity-multiples of random writes and some reads on a 4-die device with per-block
/// GC units and timing on. Returns everything the device reports.
fn seeded_run(policy: GcPolicy, device_seed: u64) -> Report {
    let mut cfg = config(geometry(2, 2, 64), 0.15);
    cfg.gc.unit = GcUnit::Block;
    cfg.gc.policy = policy;
    cfg.seed = device_seed;
    let mut ssd = Ssd::new(cfg).unwrap();
    let n = ssd.capacity().logical_bytes / UNIT;
    let mut rng = Pcg64Mcg::seed_from_u64(1234);
    let mut t = 0;
    for lba in 0..n {
        t = ssd.write(t, lba * UNIT, UNIT, 0, None).unwrap();
    }
    for i in 0..3 * n {
        let lba = rng.random_range(0..n);
        let done = ssd.write(t, lba * UNIT, UNIT, 0, None).unwrap();
        if i % 4 == 0 {
            ssd.read(t, rng.random_range(0..n) * UNIT, UNIT, None)
                .unwrap();
        }
        t = t.max(done - done % 1000) + 20_000;
    }
    ssd.check_invariants().unwrap();
    ssd.report()
}

#[test]
fn same_seed_same_numbers_different_seed_different_numbers() {
    for policy in [GcPolicy::Random, GcPolicy::DChoices { d: 3 }] {
        let a = seeded_run(policy, 42);
        let b = seeded_run(policy, 42);
        assert_eq!(a, b, "{policy}: identical runs differ");
        assert!(a.counters.gc_runs > 0, "{policy}: GC did not run");
        let c = seeded_run(policy, 43);
        assert_eq!(a.counters.host_write_bytes, c.counters.host_write_bytes);
        assert_ne!(
            a.counters, c.counters,
            "{policy}: the device seed is not used"
        );
    }
    // Greedy makes no random choice: the device seed does not matter.
    assert_eq!(
        seeded_run(GcPolicy::Greedy, 1).counters,
        seeded_run(GcPolicy::Greedy, 2).counters
    );
}

// ---------------------------------------------------------------------------- read-modify-write

fn memory_device(mapping_unit: u32) -> Ssd {
    let mut cfg = config(geometry(1, 2, 32), 0.25);
    cfg.mapping_unit_bytes = mapping_unit;
    cfg.timing.enabled = false;
    cfg.data = DataMode::Memory;
    Ssd::new(cfg).unwrap()
}

fn read(ssd: &mut Ssd, off: u64, len: u64) -> Vec<u8> {
    let mut buf = vec![0u8; len as usize];
    ssd.read(0, off, len, Some(&mut buf)).unwrap();
    buf
}

#[test]
fn sub_unit_write_is_a_counted_read_modify_write() {
    let mut ssd = memory_device(4096);
    let a = tagged(0xA5, UNIT as usize);
    ssd.write(0, 5 * UNIT, UNIT, 0, Some(&a)).unwrap();
    let c0 = ssd.counters().clone();
    let b = tagged(0x3C, 512);
    ssd.write(0, 5 * UNIT + 512, 512, 0, Some(&b)).unwrap();
    let c1 = ssd.counters().clone();
    assert_eq!(c1.host_write_bytes - c0.host_write_bytes, 512);
    assert_eq!(c1.rmw_units - c0.rmw_units, 1);
    assert_eq!(c1.rmw_read_bytes - c0.rmw_read_bytes, UNIT);
    assert_eq!(c1.media_read_bytes - c0.media_read_bytes, UNIT);
    assert_eq!(c1.media_write_bytes - c0.media_write_bytes, UNIT);
    assert_eq!(c1.waf_since(&c0), 8.0);
    let mut want = a.clone();
    want[512..1024].copy_from_slice(&b);
    assert_eq!(read(&mut ssd, 5 * UNIT, UNIT), want);

    // A write covering parts of two mapped units modifies both.
    ssd.write(
        0,
        20 * UNIT,
        2 * UNIT,
        0,
        Some(&tagged(1, 2 * UNIT as usize)),
    )
    .unwrap();
    let c2 = ssd.counters().clone();
    let d = tagged(2, 6144);
    ssd.write(0, 20 * UNIT + 1024, 6144, 0, Some(&d)).unwrap();
    let c3 = ssd.counters().clone();
    assert_eq!(c3.rmw_units - c2.rmw_units, 2);
    assert_eq!(c3.media_write_bytes - c2.media_write_bytes, 2 * UNIT);
    let mut want = tagged(1, 2 * UNIT as usize);
    want[1024..1024 + 6144].copy_from_slice(&d);
    assert_eq!(read(&mut ssd, 20 * UNIT, 2 * UNIT), want);

    // Into a never-written unit there is nothing to read back, but a whole unit is programmed.
    ssd.write(0, 9 * UNIT + 1024, 512, 0, Some(&b)).unwrap();
    let c4 = ssd.counters().clone();
    assert_eq!(c4.rmw_units, c3.rmw_units);
    assert_eq!(c4.media_write_bytes - c3.media_write_bytes, UNIT);
    let mut want = vec![0u8; UNIT as usize];
    want[1024..1536].copy_from_slice(&b);
    assert_eq!(read(&mut ssd, 9 * UNIT, UNIT), want);
    ssd.check_invariants().unwrap();
}

#[test]
fn sub_unit_write_on_a_512_byte_mapping_unit_needs_no_rmw() {
    let mut ssd = memory_device(512);
    ssd.write(0, 5 * UNIT, UNIT, 0, Some(&tagged(7, UNIT as usize)))
        .unwrap();
    let c0 = ssd.counters().clone();
    let b = tagged(8, 512);
    ssd.write(0, 5 * UNIT + 512, 512, 0, Some(&b)).unwrap();
    let c1 = ssd.counters();
    assert_eq!(c1.rmw_units, 0);
    assert_eq!(c1.media_write_bytes - c0.media_write_bytes, 512);
    let mut want = tagged(7, UNIT as usize);
    want[512..1024].copy_from_slice(&b);
    assert_eq!(read(&mut ssd, 5 * UNIT, UNIT), want);
}

// ------------------------------------------------------------------------- write cache, power cut

fn cached_device(protection: bool) -> Ssd {
    let mut cfg = config(geometry(1, 2, 32), 0.25);
    cfg.timing.enabled = false;
    cfg.data = DataMode::Memory;
    cfg.write_cache_bytes = 16 * UNIT;
    cfg.power_loss_protection = protection;
    Ssd::new(cfg).unwrap()
}

fn write_units(ssd: &mut Ssd, lbas: std::ops::Range<u64>, version: u8) {
    for lba in lbas {
        let data = tagged(version ^ lba as u8, UNIT as usize);
        ssd.write(0, lba * UNIT, UNIT, 0, Some(&data)).unwrap();
    }
}

fn holds(ssd: &mut Ssd, lba: u64, version: Option<u8>) -> bool {
    let want = match version {
        Some(v) => tagged(v ^ lba as u8, UNIT as usize),
        None => vec![0u8; UNIT as usize],
    };
    read(ssd, lba * UNIT, UNIT) == want
}

#[test]
fn power_cut_without_protection_loses_unflushed_writes_only() {
    let mut ssd = cached_device(false);
    write_units(&mut ssd, 0..4, 1);
    ssd.flush(0).unwrap();
    write_units(&mut ssd, 0..2, 2);
    write_units(&mut ssd, 10..12, 2);
    // Cached writes are visible before the cut.
    assert!(holds(&mut ssd, 1, Some(2)) && holds(&mut ssd, 11, Some(2)));
    let media = ssd.counters().media_write_bytes;
    let report = ssd.power_cut().unwrap();
    assert_eq!(report.lost_units, 4);
    assert_eq!(report.destaged_units, 0);
    assert_eq!(ssd.counters().power_cut_lost_bytes, 4 * UNIT);
    assert_eq!(ssd.counters().media_write_bytes, media);
    for lba in 0..4 {
        assert!(holds(&mut ssd, lba, Some(1)), "flushed LBA {lba} kept");
    }
    for lba in 10..12 {
        assert!(holds(&mut ssd, lba, None), "unflushed LBA {lba} lost");
    }
    ssd.check_invariants().unwrap();

    // Writes pushed out of a full cache are on flash even without a flush: of 20 unflushed
    // writes, the 4 oldest were destaged to make room, the 16 cached ones are lost.
    write_units(&mut ssd, 100..120, 3);
    let report = ssd.power_cut().unwrap();
    assert_eq!(report.lost_units, 16);
    for lba in 100..104 {
        assert!(holds(&mut ssd, lba, Some(3)), "destaged LBA {lba} kept");
    }
    for lba in 104..120 {
        assert!(holds(&mut ssd, lba, None), "cached LBA {lba} lost");
    }
}

#[test]
fn power_cut_with_protection_keeps_every_completed_write() {
    let mut ssd = cached_device(true);
    write_units(&mut ssd, 0..4, 1);
    ssd.flush(0).unwrap();
    write_units(&mut ssd, 0..2, 2);
    write_units(&mut ssd, 10..12, 2);
    let media = ssd.counters().media_write_bytes;
    let report = ssd.power_cut().unwrap();
    assert_eq!(report.destaged_units, 4);
    assert_eq!(report.lost_units, 0);
    assert_eq!(ssd.counters().power_cut_lost_bytes, 0);
    assert_eq!(ssd.counters().media_write_bytes - media, 4 * UNIT);
    for lba in [0, 1, 10, 11] {
        assert!(holds(&mut ssd, lba, Some(2)), "LBA {lba} kept");
    }
    for lba in [2, 3] {
        assert!(holds(&mut ssd, lba, Some(1)), "LBA {lba} kept");
    }
    ssd.check_invariants().unwrap();
}
