//! Fault-injection model checks: over many seeds, flushed data survives every crash, and unflushed
//! data after a crash is always something that was actually written.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use wafer_engine::device::{
    BlockDevice, CommandKind, DeviceError, FaultConfig, FaultDevice, MemDevice, RemapMode, RemapOp,
    SharedDevice, SimDevice, VirtualClock, ZoneCondition,
};

const B: u64 = 512;
const BLOCKS: u64 = 32;

/// Each block's contents are a tag byte repeated; a tag identifies the write that produced it.
fn tag_of(d: &mut impl BlockDevice, block: u64) -> u8 {
    let mut buf = vec![0u8; B as usize];
    d.read_at(block * B, &mut buf).unwrap();
    assert!(
        buf.iter().all(|&x| x == buf[0]),
        "block {block} mixes writes"
    );
    buf[0]
}

#[test]
fn device_fault_flushed_writes_are_never_lost() {
    let (mut lost_total, mut torn_total, mut kept_total) = (0u64, 0u64, 0u64);
    for seed in 0..300u64 {
        let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0xdead_beef);
        let mut d = FaultDevice::new(
            MemDevice::new(BLOCKS * B, B as u32),
            FaultConfig {
                seed,
                torn_writes: true,
                lose_unflushed: true,
                ..FaultConfig::default()
            },
        );
        // durable[b]: the tag as of the last flush; since[b]: tags written after it.
        let mut durable = vec![0u8; BLOCKS as usize];
        let mut since: HashMap<u64, Vec<u8>> = HashMap::new();
        let mut tag = 0u8;
        let ops = rng.random_range(5..60);
        for _ in 0..ops {
            if rng.random_bool(0.15) {
                d.flush().unwrap();
                for (b, tags) in since.drain() {
                    durable[b as usize] = *tags.last().unwrap();
                }
                continue;
            }
            tag = tag.wrapping_add(1).max(1);
            let n = rng.random_range(1..=4u64);
            let first = rng.random_range(0..=BLOCKS - n);
            d.write_at(first * B, &vec![tag; (n * B) as usize]).unwrap();
            for b in first..first + n {
                since.entry(b).or_default().push(tag);
            }
        }
        d.handle().cut_power_now();
        assert_eq!(
            d.read_at(0, &mut [0u8; B as usize]),
            Err(DeviceError::PowerCut)
        );
        let r = d.crash();
        assert!(r.restore_error.is_none());
        lost_total += r.lost;
        kept_total += r.unflushed - r.lost;
        torn_total += r.torn.as_ref().is_some_and(|t| {
            t.durable_blocks.iter().any(|&x| !x) && t.durable_blocks.iter().any(|&x| x)
        }) as u64;
        for b in 0..BLOCKS {
            let got = tag_of(&mut d, b);
            match since.get(&b) {
                None => assert_eq!(
                    got, durable[b as usize],
                    "seed {seed}: flushed block {b} changed"
                ),
                Some(tags) => assert!(
                    got == durable[b as usize] || tags.contains(&got),
                    "seed {seed}: block {b} holds {got}, never written there"
                ),
            }
        }
        // The device works again after the crash.
        d.write_at(0, &[9u8; B as usize]).unwrap();
        d.flush().unwrap();
        assert_eq!(tag_of(&mut d, 0), 9);
    }
    assert!(
        lost_total > 100,
        "some unflushed writes were lost ({lost_total})"
    );
    assert!(
        kept_total > 100,
        "some unflushed writes survived ({kept_total})"
    );
    assert!(torn_total > 10, "some writes were torn ({torn_total})");
}

#[test]
fn device_fault_power_cut_at_every_command() {
    // Cut power at every command number of a fixed sequence; flushed data always survives.
    let script: Vec<(u64, u8)> = (0..12).map(|i| ((i * 5) % BLOCKS, i as u8 + 1)).collect();
    for cut in 1..=20u64 {
        for seed in 0..8 {
            let mut d = FaultDevice::new(
                MemDevice::new(BLOCKS * B, B as u32),
                FaultConfig {
                    seed,
                    power_cut_after: Some(cut),
                    torn_writes: true,
                    lose_unflushed: true,
                    ..FaultConfig::default()
                },
            );
            let mut durable = vec![0u8; BLOCKS as usize];
            let mut pending: Vec<(u64, u8)> = Vec::new();
            let mut failed = false;
            for (i, &(b, t)) in script.iter().enumerate() {
                let r = if i % 4 == 3 {
                    d.flush().map(|_| {
                        for (b, t) in pending.drain(..) {
                            durable[b as usize] = t;
                        }
                    })
                } else {
                    pending.push((b, t));
                    d.write_at(b * B, &[t; B as usize])
                };
                if let Err(e) = r {
                    assert_eq!(e, DeviceError::PowerCut);
                    failed = true;
                    break;
                }
            }
            assert_eq!(failed, cut <= script.len() as u64);
            d.crash();
            for b in 0..BLOCKS {
                let got = tag_of(&mut d, b);
                let maybe: Vec<u8> = pending.iter().filter(|p| p.0 == b).map(|p| p.1).collect();
                assert!(
                    got == durable[b as usize] || maybe.contains(&got),
                    "cut {cut} seed {seed} block {b}: {got}"
                );
            }
        }
    }
}

#[test]
fn device_fault_over_sim_partition() {
    // The full stack: a simulated SSD shared by two partitions, faults on the data partition.
    let clock = VirtualClock::shared();
    let mut cfg = flashsim::SsdConfig::small(4 << 20, 0.2);
    cfg.timing.enabled = true;
    let sim = SimDevice::new(cfg, clock.clone()).unwrap();
    let shared = SharedDevice::shared(sim);
    let mut parts = shared.split(&[1 << 20, 3 << 20]).unwrap();
    let data = parts.pop().unwrap();
    let mut log = parts.pop().unwrap();
    let mut data = FaultDevice::new(
        data,
        FaultConfig {
            seed: 3,
            lose_unflushed: true,
            ..FaultConfig::default()
        },
    );
    log.write_at(0, &[1u8; 4096]).unwrap();
    log.flush().unwrap();
    data.write_at(0, &[2u8; 4096]).unwrap();
    data.flush().unwrap();
    for i in 1..64u64 {
        data.write_at(i * 4096, &[3u8; 4096]).unwrap();
    }
    let t = clock.now();
    assert!(t > 0);
    data.handle().cut_power_now();
    let r = data.crash();
    assert_eq!(r.unflushed, 63);
    assert!(r.lost > 0 && r.lost < 63);
    let mut buf = vec![0u8; 4096];
    data.read_at(0, &mut buf).unwrap();
    assert_eq!(buf, vec![2u8; 4096]);
    log.read_at(0, &mut buf).unwrap();
    assert_eq!(buf, vec![1u8; 4096]);
    let stats = shared.lock().stats();
    assert!(stats.media_write_bytes.unwrap() >= stats.write_bytes);
    assert!(
        data.stats().media_write_bytes.is_none(),
        "partitions report no media bytes"
    );
}

/// A zone as the host sees it through a zone report: its blocks' tags up to the write pointer,
/// and whether it is full.
fn zns_image(d: &mut FaultDevice<SimDevice>, zone: u32) -> (Vec<u8>, bool) {
    let r = d.inner_mut().zone_report(zone).unwrap();
    let mut buf = vec![0u8; (r.write_pointer_bytes - r.start_bytes) as usize];
    if !buf.is_empty() {
        d.inner_mut().read_at(r.start_bytes, &mut buf).unwrap();
    }
    let tags = buf.chunks(4096).map(|c| c[0]).collect();
    (tags, r.condition == ZoneCondition::Full)
}

#[test]
fn device_fault_zns_sim_zones_keep_a_prefix_and_take_appends_after_the_crash() {
    let zones = 6u32;
    let (mut rebuilt, mut torn) = (0u64, 0u64);
    for seed in 0..60u64 {
        let mut cfg = flashsim::SsdConfig::small(8 << 20, 0.2);
        cfg.timing.enabled = false;
        cfg.mode = flashsim::Mode::Zns(flashsim::ZnsConfig {
            zone_eus: 1,
            max_open_zones: 3,
            max_active_zones: 4,
        });
        let sim = SimDevice::new(cfg, VirtualClock::shared()).unwrap();
        let mut d = FaultDevice::new(
            sim,
            FaultConfig {
                seed,
                torn_writes: true,
                lose_unflushed: true,
                ..FaultConfig::default()
            },
        );
        let zb = d.capabilities().zone_bytes.unwrap();
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut history: Vec<Vec<(Vec<u8>, bool)>> =
            (0..zones).map(|z| vec![zns_image(&mut d, z)]).collect();
        let mut tag = 0u8;
        for _ in 0..rng.random_range(5..50) {
            let z = rng.random_range(0..zones);
            let (img, full) = zns_image(&mut d, z);
            let x = rng.random_range(0..100);
            let r = if x < 8 {
                let r = d.flush();
                for (z, h) in history.iter_mut().enumerate() {
                    *h = vec![zns_image(&mut d, z as u32)];
                }
                r
            } else if x < 20 {
                d.zone_reset(z)
            } else if x < 26 {
                d.zone_finish(z)
            } else {
                let room = zb / 4096 - img.len() as u64;
                if full || room == 0 {
                    continue;
                }
                tag = tag.wrapping_add(1).max(1);
                let n = rng.random_range(1..=room.min(24));
                d.zone_append(z, &vec![tag; n as usize * 4096]).map(|_| ())
            };
            // The device's own limits (open/active zones) may refuse a command: then nothing
            // changed.
            if r.is_ok() {
                history[z as usize].push(zns_image(&mut d, z));
            }
        }
        d.handle().cut_power_now();
        let report = d.crash();
        assert!(report.restore_error.is_none(), "seed {seed}: {report:?}");
        rebuilt += report.zones_rebuilt;
        torn += report.torn.is_some() as u64;
        for z in 0..zones {
            let got = zns_image(&mut d, z);
            let h = &history[z as usize];
            let prefix_of_newest = |got: &(Vec<u8>, bool)| {
                report
                    .torn
                    .as_ref()
                    .is_some_and(|t| t.offset / zb == z as u64)
                    && h.last().unwrap().0.starts_with(&got.0)
            };
            assert!(
                h.contains(&got) || prefix_of_newest(&got),
                "seed {seed} zone {z}: {got:?} not in {h:?}"
            );
            // The write pointer is where the surviving data ends: appends go on from there
            // (in zones already active, so the device's active-zone limit is not in the way).
            if !got.1 && !got.0.is_empty() {
                let at = d.zone_append(z, &[0xee; 4096]).unwrap();
                assert_eq!(at, z as u64 * zb + got.0.len() as u64 * 4096);
            }
        }
    }
    eprintln!("zones rebuilt {rebuilt}, torn appends {torn}");
    assert!(rebuilt > 20 && torn > 5);
}

#[test]
fn device_fault_remap_batch_over_sim_is_atomic() {
    let (mut kept, mut undone) = (0, 0);
    for seed in 0..40u64 {
        let mut cfg = flashsim::SsdConfig::small(4 << 20, 0.2);
        cfg.timing.enabled = false;
        let sim = SimDevice::new(cfg, VirtualClock::shared()).unwrap();
        let mut d = FaultDevice::new(
            sim,
            FaultConfig {
                seed,
                lose_unflushed: true,
                torn_writes: true,
                ..FaultConfig::default()
            },
        );
        assert!(d.capabilities().remap);
        assert_eq!(d.capabilities().mapping_unit_bytes, 4096);
        for b in 0..4u64 {
            d.write_at(b * 4096, &[b as u8 + 1; 4096]).unwrap();
        }
        d.flush().unwrap();
        let op = |s: u64, t: u64, mode| RemapOp {
            src: s * 4096,
            dst: t * 4096,
            len: 4096,
            mode,
        };
        let batch = [
            op(0, 10, RemapMode::Share),
            op(1, 11, RemapMode::Move),
            op(2, 12, RemapMode::Move),
        ];
        // Every other seed: the power cut interrupts the batch itself.
        if seed % 2 == 0 {
            d.remap(&batch).unwrap();
            d.handle().cut_power_now();
        } else {
            let h = d.handle();
            h.cut_power_at_nth(CommandKind::Remap, Some(1));
            assert_eq!(d.remap(&batch), Err(DeviceError::PowerCut));
        }
        d.crash();
        let tags: Vec<u8> = [0u64, 1, 2, 10, 11, 12]
            .iter()
            .map(|&b| tag_of4k(&mut d, b))
            .collect();
        if tags == [1, 0, 0, 1, 2, 3] {
            kept += 1;
        } else {
            assert_eq!(tags, [1, 2, 3, 0, 0, 0], "seed {seed}: all or nothing");
            undone += 1;
        }
    }
    assert!(kept > 5 && undone > 5, "kept {kept}, undone {undone}");
}

fn tag_of4k(d: &mut impl BlockDevice, block: u64) -> u8 {
    let mut buf = vec![0u8; 4096];
    d.read_at(block * 4096, &mut buf).unwrap();
    assert!(buf.iter().all(|&x| x == buf[0]), "block {block} mixes data");
    buf[0]
}
