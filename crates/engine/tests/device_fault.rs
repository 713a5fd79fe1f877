//! Fault-injection model checks: over many seeds, flushed data survives every crash, and unflushed
//! data after a crash is always something that was actually written.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use wafer_engine::device::{
    BlockDevice, DeviceError, FaultConfig, FaultDevice, MemDevice, SharedDevice, SimDevice,
    VirtualClock,
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
