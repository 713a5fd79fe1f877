use super::*;
use crate::device::MemDevice;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

const B: usize = 512;

fn dev(cfg: FaultConfig) -> FaultDevice<MemDevice> {
    FaultDevice::new(MemDevice::new(64 * B as u64, B as u32), cfg)
}

fn read(d: &mut FaultDevice<MemDevice>, block: usize) -> Vec<u8> {
    d.inner().bytes()[block * B..(block + 1) * B].to_vec()
}

#[test]
fn power_cut_fails_later_commands_until_crash() {
    let mut d = dev(FaultConfig {
        power_cut_after: Some(3),
        ..FaultConfig::default()
    });
    let h = d.handle();
    d.write_at(0, &[1; B]).unwrap();
    d.flush().unwrap();
    assert_eq!(d.write_at(0, &[2; B]), Err(DeviceError::PowerCut));
    assert_eq!(read(&mut d, 0), vec![1; B], "the cut write is not applied");
    assert_eq!(d.read_at(0, &mut [0; B]), Err(DeviceError::PowerCut));
    assert_eq!(d.flush(), Err(DeviceError::PowerCut));
    assert!(h.is_powered_off());
    assert_eq!(h.commands(), 5);
    let r = d.crash();
    assert!(r.was_powered_off);
    assert!(!h.is_powered_off());
    // Re-armed: no further cut.
    for _ in 0..10 {
        d.write_at(0, &[3; B]).unwrap();
    }
    d.flush().unwrap();
    assert_eq!(h.power_cuts(), 1);
    // Cut from outside.
    h.cut_power_now();
    assert_eq!(d.flush(), Err(DeviceError::PowerCut));
    d.crash();
    h.cut_power_at(Some(h.commands() + 2));
    d.flush().unwrap();
    assert_eq!(d.flush(), Err(DeviceError::PowerCut));
}

#[test]
fn io_error_returned_once() {
    let mut d = dev(FaultConfig {
        io_error_after: Some(2),
        ..FaultConfig::default()
    });
    d.write_at(0, &[1; B]).unwrap();
    assert!(matches!(d.write_at(0, &[2; B]), Err(DeviceError::Io(_))));
    assert_eq!(read(&mut d, 0), vec![1; B]);
    d.write_at(0, &[3; B]).unwrap();
    assert_eq!(read(&mut d, 0), vec![3; B]);
    assert_eq!(d.handle().io_errors(), 1);
    assert_eq!(d.stats().writes, 2);
}

#[test]
fn misdirected_write_lands_elsewhere() {
    let mut d = dev(FaultConfig {
        seed: 9,
        misdirect_after: Some(2),
        ..FaultConfig::default()
    });
    d.write_at(4 * B as u64, &[1; B]).unwrap();
    d.write_at(8 * B as u64, &[2; 2 * B]).unwrap();
    assert_eq!(read(&mut d, 8), vec![0; B]);
    let m = d.handle().misdirects();
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].intended, 8 * B as u64);
    let at = m[0].actual.unwrap();
    assert_ne!(at, 8 * B as u64);
    assert_eq!(at % B as u64, 0);
    assert_eq!(
        &d.inner().bytes()[at as usize..at as usize + 2 * B],
        &[2; 2 * B]
    );
    // Only once.
    d.write_at(8 * B as u64, &[3; B]).unwrap();
    assert_eq!(read(&mut d, 8), vec![3; B]);
}

#[test]
fn without_loss_faults_crash_keeps_everything() {
    let mut d = dev(FaultConfig::default());
    d.write_at(0, &[1; B]).unwrap();
    d.cut_power_now();
    let r = d.crash();
    assert_eq!(r.unflushed, 0);
    assert_eq!(read(&mut d, 0), vec![1; B]);
}

#[test]
fn torn_only_tears_the_last_write() {
    let mut torn = 0;
    for seed in 0..64 {
        let mut d = dev(FaultConfig {
            seed,
            torn_writes: true,
            ..FaultConfig::default()
        });
        d.write_at(0, &[1; 8 * B]).unwrap();
        d.flush().unwrap();
        d.write_at(0, &[2; 4 * B]).unwrap();
        d.write_at(0, &[3; 8 * B]).unwrap();
        d.cut_power_now();
        let r = d.crash();
        let t = r.torn.unwrap();
        assert_eq!((t.offset, t.len), (0, 8 * B as u64));
        for (b, &durable) in t.durable_blocks.iter().enumerate() {
            let want = if durable {
                3
            } else if b < 4 {
                2
            } else {
                1
            };
            assert_eq!(read(&mut d, b), vec![want; B], "seed {seed} block {b}");
        }
        if t.durable_blocks.iter().any(|&x| !x) {
            torn += 1;
        }
    }
    assert!(torn > 10);
}

#[test]
fn interrupted_write_can_tear() {
    let mut partial = 0;
    for seed in 0..32 {
        let mut d = dev(FaultConfig {
            seed,
            power_cut_after: Some(2),
            torn_writes: true,
            ..FaultConfig::default()
        });
        d.write_at(0, &[1; 4 * B]).unwrap();
        assert_eq!(d.write_at(0, &[2; 4 * B]), Err(DeviceError::PowerCut));
        let r = d.crash();
        let t = r.torn.unwrap();
        for (b, &durable) in t.durable_blocks.iter().enumerate() {
            assert_eq!(read(&mut d, b), vec![if durable { 2 } else { 1 }; B]);
        }
        if t.durable_blocks.iter().any(|&x| x) {
            partial += 1;
        }
    }
    assert!(partial > 0);
}

#[test]
fn deterministic_given_seed() {
    let run = |seed| {
        let mut d = dev(FaultConfig {
            seed,
            torn_writes: true,
            lose_unflushed: true,
            ..FaultConfig::default()
        });
        for i in 0..20u8 {
            d.write_at((i as u64 % 8) * B as u64, &[i; 2 * B]).unwrap();
        }
        let r = d.crash();
        (r, d.into_inner().bytes().to_vec())
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5).1, run(6).1);
}

#[test]
fn trim_is_journaled() {
    let mut d = dev(FaultConfig {
        seed: 1,
        lose_unflushed: true,
        ..FaultConfig::default()
    });
    d.write_at(0, &[7; B]).unwrap();
    d.flush().unwrap();
    d.trim(0, B as u64).unwrap();
    assert_eq!(d.unflushed(), 1);
    let bad = RemapOp {
        src: 0,
        dst: 0,
        len: B as u64,
        mode: RemapMode::Share,
    };
    assert_eq!(d.remap(&[bad]), Err(DeviceError::RemapOverlap { index: 0 }));
    assert_eq!(d.unflushed(), 1, "a failed remap leaves no journal entry");
    let r = d.crash();
    // The trim either survived (MemDevice reads trimmed blocks as zeros) or was undone.
    let got = read(&mut d, 0);
    if r.lost == 1 {
        assert_eq!(got, vec![7; B]);
    } else {
        assert_eq!(got, vec![0; B]);
    }
}

fn remap_op(src: usize, dst: usize, mode: RemapMode) -> RemapOp {
    RemapOp {
        src: (src * B) as u64,
        dst: (dst * B) as u64,
        len: B as u64,
        mode,
    }
}

/// Blocks 0..4 hold tags 1..=4; the batch shares 0 to 8, moves 1 to 9, then shares 9 on to 10.
fn remap_batch() -> [RemapOp; 3] {
    [
        remap_op(0, 8, RemapMode::Share),
        remap_op(1, 9, RemapMode::Move),
        remap_op(9, 10, RemapMode::Share),
    ]
}

const BEFORE: [(usize, u8); 5] = [(0, 1), (1, 2), (8, 0), (9, 0), (10, 0)];
const AFTER: [(usize, u8); 5] = [(0, 1), (1, 0), (8, 1), (9, 2), (10, 2)];

/// Whether the blocks hold exactly `want`.
fn holds(d: &mut FaultDevice<MemDevice>, want: &[(usize, u8)]) -> bool {
    want.iter().all(|&(b, t)| read(d, b) == vec![t; B])
}

#[test]
fn remap_batch_survives_or_is_undone_whole() {
    let (mut kept, mut undone) = (0, 0);
    for seed in 0..64 {
        let mut d = dev(FaultConfig {
            seed,
            lose_unflushed: true,
            ..FaultConfig::default()
        });
        for b in 0..4 {
            d.write_at((b * B) as u64, &[b as u8 + 1; B]).unwrap();
        }
        d.flush().unwrap();
        d.remap(&remap_batch()).unwrap();
        assert!(holds(&mut d, &AFTER));
        assert_eq!(d.unflushed(), 1, "one journal entry per batch");
        let r = d.crash();
        if r.lost == 1 {
            assert!(holds(&mut d, &BEFORE), "seed {seed}: undone whole");
            undone += 1;
        } else {
            assert!(holds(&mut d, &AFTER), "seed {seed}: kept whole");
            kept += 1;
        }
    }
    assert!(kept > 10 && undone > 10, "kept {kept}, undone {undone}");
}

#[test]
fn interrupted_remap_batch_happened_or_not() {
    let (mut kept, mut undone) = (0, 0);
    for seed in 0..64 {
        let mut d = dev(FaultConfig {
            seed,
            power_cut_after: Some(6),
            torn_writes: true,
            ..FaultConfig::default()
        });
        for b in 0..4 {
            d.write_at((b * B) as u64, &[b as u8 + 1; B]).unwrap();
        }
        d.flush().unwrap();
        assert_eq!(d.remap(&remap_batch()), Err(DeviceError::PowerCut));
        d.crash();
        if holds(&mut d, &AFTER) {
            kept += 1;
        } else {
            assert!(holds(&mut d, &BEFORE), "seed {seed}: all or nothing");
            undone += 1;
        }
    }
    assert!(kept > 10 && undone > 10, "kept {kept}, undone {undone}");
}

/// Blocks 0..4 hold tags 1..=4; the command copies 0 to 8, 1 to 9, then 9 on to 10.
fn copy_cmd() -> [CopyOp; 3] {
    let op = |src: usize, dst: usize| CopyOp {
        src: (src * B) as u64,
        dst: (dst * B) as u64,
        len: B as u64,
    };
    [op(0, 8), op(1, 9), op(9, 10)]
}

const COPIED: [(usize, u8); 5] = [(0, 1), (1, 2), (8, 1), (9, 2), (10, 2)];

#[test]
fn copy_command_survives_or_is_undone_whole() {
    let (mut kept, mut undone) = (0, 0);
    for seed in 0..64 {
        let mut d = dev(FaultConfig {
            seed,
            lose_unflushed: true,
            ..FaultConfig::default()
        });
        for b in 0..4 {
            d.write_at((b * B) as u64, &[b as u8 + 1; B]).unwrap();
        }
        d.flush().unwrap();
        d.copy(&copy_cmd()).unwrap();
        assert!(holds(&mut d, &COPIED));
        assert_eq!(d.unflushed(), 1, "one journal entry per command");
        assert_eq!(d.handle().commands_of(CommandKind::Copy), 1);
        let r = d.crash();
        if r.lost == 1 {
            assert!(holds(&mut d, &BEFORE), "seed {seed}: undone whole");
            undone += 1;
        } else {
            assert!(holds(&mut d, &COPIED), "seed {seed}: kept whole");
            kept += 1;
        }
    }
    assert!(kept > 10 && undone > 10, "kept {kept}, undone {undone}");
}

#[test]
fn interrupted_copy_happened_or_not_and_flushed_copy_survives() {
    let (mut kept, mut undone) = (0, 0);
    for seed in 0..64 {
        let mut d = dev(FaultConfig {
            seed,
            power_cut_after: Some(6),
            torn_writes: true,
            ..FaultConfig::default()
        });
        for b in 0..4 {
            d.write_at((b * B) as u64, &[b as u8 + 1; B]).unwrap();
        }
        d.flush().unwrap();
        assert_eq!(d.copy(&copy_cmd()), Err(DeviceError::PowerCut));
        assert_eq!(d.handle().cut_on(), Some(CommandKind::Copy));
        d.crash();
        if holds(&mut d, &COPIED) {
            kept += 1;
        } else {
            assert!(holds(&mut d, &BEFORE), "seed {seed}: all or nothing");
            undone += 1;
        }
    }
    assert!(kept > 10 && undone > 10, "kept {kept}, undone {undone}");
    // Flushed, it survives any crash.
    let mut d = dev(FaultConfig {
        lose_unflushed: true,
        ..FaultConfig::default()
    });
    for b in 0..4 {
        d.write_at((b * B) as u64, &[b as u8 + 1; B]).unwrap();
    }
    d.copy(&copy_cmd()).unwrap();
    d.flush().unwrap();
    d.crash();
    assert!(holds(&mut d, &COPIED));
}

#[test]
fn rewrites_are_writes_that_reach_the_inner_rewrite() {
    use crate::device::{SimDevice, VirtualClock};
    let mut cfg = flashsim::SsdConfig::small(8 << 20, 0.2);
    cfg.timing.enabled = false;
    let sim = SimDevice::new(cfg, VirtualClock::shared()).unwrap();
    let mut d = FaultDevice::new(
        sim,
        FaultConfig {
            seed: 1,
            lose_unflushed: true,
            ..FaultConfig::default()
        },
    );
    d.write_at(0, &[1u8; 4096]).unwrap();
    d.flush().unwrap();
    d.write_rewrite(0, &[2u8; 4096]).unwrap();
    assert_eq!(d.handle().commands_of(CommandKind::Write), 2);
    assert_eq!(d.stats().write_bytes, 8192);
    assert_eq!(d.inner().ssd().counters().redundant_write_bytes, 4096);
    assert_eq!(
        d.unflushed(),
        1,
        "an unflushed rewrite is journaled like a write"
    );
    let mut lost = false;
    for seed in 0..16 {
        let mut d = FaultDevice::new(
            MemDevice::new(64 * B as u64, B as u32),
            FaultConfig {
                seed,
                lose_unflushed: true,
                ..FaultConfig::default()
            },
        );
        d.write_at(0, &[1u8; B]).unwrap();
        d.flush().unwrap();
        d.write_rewrite(0, &[2u8; B]).unwrap();
        if d.crash().lost == 1 {
            assert_eq!(read(&mut d, 0), vec![1u8; B]);
            lost = true;
        }
    }
    assert!(lost, "an unflushed rewrite may be lost");
}

/// A zoned in-memory device for the zone part of the model: zones of `ZONE_BLOCKS` blocks,
/// written only at their write pointer, reset, finished.
struct ZonedMem {
    mem: MemDevice,
    /// Per zone: write pointer in blocks, and whether it is full.
    zones: Vec<(u64, bool)>,
}

const ZONE_BLOCKS: u64 = 8;
const ZONES: u64 = 4;

impl ZonedMem {
    fn new() -> ZonedMem {
        ZonedMem {
            mem: MemDevice::new(ZONES * ZONE_BLOCKS * B as u64, B as u32),
            zones: vec![(0, false); ZONES as usize],
        }
    }
    fn zone_start(zone: u32) -> u64 {
        zone as u64 * ZONE_BLOCKS * B as u64
    }
}

impl BlockDevice for ZonedMem {
    fn capacity_bytes(&self) -> u64 {
        self.mem.capacity_bytes()
    }
    fn block_bytes(&self) -> u32 {
        B as u32
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        self.mem.read_at(offset, buf)
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        let zone = (offset / (ZONE_BLOCKS * B as u64)) as u32;
        let (wp, full) = self.zones[zone as usize];
        let blocks = data.len() as u64 / B as u64;
        if full || offset != ZonedMem::zone_start(zone) + wp * B as u64 || wp + blocks > ZONE_BLOCKS
        {
            return Err(DeviceError::Io(format!("bad zone write at {offset}")));
        }
        self.mem.write_at(offset, data)?;
        self.zones[zone as usize] = (wp + blocks, wp + blocks == ZONE_BLOCKS);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), DeviceError> {
        Ok(())
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            zone_bytes: Some(ZONE_BLOCKS * B as u64),
            max_open_zones: Some(ZONES as u32),
            max_active_zones: Some(ZONES as u32),
            mapping_unit_bytes: B as u32,
            ..Capabilities::default()
        }
    }
    fn stats(&self) -> DeviceStats {
        self.mem.stats()
    }
    fn zone_append(&mut self, zone: u32, data: &[u8]) -> Result<u64, DeviceError> {
        let at = ZonedMem::zone_start(zone) + self.zones[zone as usize].0 * B as u64;
        self.write_at(at, data)?;
        Ok(at)
    }
    fn zone_reset(&mut self, zone: u32) -> Result<(), DeviceError> {
        let start = ZonedMem::zone_start(zone);
        self.mem.trim(start, ZONE_BLOCKS * B as u64)?;
        self.zones[zone as usize] = (0, false);
        Ok(())
    }
    fn zone_finish(&mut self, zone: u32) -> Result<(), DeviceError> {
        self.zones[zone as usize].1 = true;
        Ok(())
    }
    fn zone_report(&mut self, zone: u32) -> Result<ZoneReport, DeviceError> {
        let (wp, full) = self.zones[zone as usize];
        let start = ZonedMem::zone_start(zone);
        Ok(ZoneReport {
            start_bytes: start,
            capacity_bytes: ZONE_BLOCKS * B as u64,
            write_pointer_bytes: start + wp * B as u64,
            condition: if full {
                crate::device::ZoneCondition::Full
            } else if wp == 0 {
                crate::device::ZoneCondition::Empty
            } else {
                crate::device::ZoneCondition::Open
            },
        })
    }
}

/// A zone as the host sees it: its blocks' tags up to the write pointer, and whether it is full.
type ZoneImage = (Vec<u8>, bool);

fn zone_image(d: &mut FaultDevice<ZonedMem>, zone: u32) -> ZoneImage {
    let (wp, full) = d.inner().zones[zone as usize];
    let start = ZonedMem::zone_start(zone) as usize;
    let bytes = &d.inner().mem.bytes()[start..start + (wp as usize) * B];
    (bytes.chunks(B).map(|c| c[0]).collect(), full)
}

#[test]
fn zones_keep_a_prefix_of_their_unflushed_history() {
    let (mut rebuilt, mut lost, mut torn, mut kept_all) = (0u64, 0u64, 0u64, 0u64);
    for seed in 0..400u64 {
        let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x5eed);
        let mut d = FaultDevice::new(
            ZonedMem::new(),
            FaultConfig {
                seed,
                torn_writes: seed % 3 != 0,
                lose_unflushed: seed % 3 != 1,
                ..FaultConfig::default()
            },
        );
        // Per zone: the images it went through since the last flush (the first is the flushed
        // one).
        let mut history: Vec<Vec<ZoneImage>> = (0..ZONES as u32)
            .map(|z| vec![zone_image(&mut d, z)])
            .collect();
        let mut tag = 0u8;
        // The newest command, if an append: (zone, image before it).
        let mut last_append: Option<(u32, ZoneImage)> = None;
        for _ in 0..rng.random_range(3..40) {
            let z = rng.random_range(0..ZONES as u32);
            let before = zone_image(&mut d, z);
            let x = rng.random_range(0..100);
            if x < 25 {
                last_append = None;
            }
            if x < 10 {
                d.flush().unwrap();
                for (z, h) in history.iter_mut().enumerate() {
                    *h = vec![zone_image(&mut d, z as u32)];
                }
                continue;
            } else if x < 20 {
                d.zone_reset(z).unwrap();
            } else if x < 25 {
                d.zone_finish(z).unwrap();
            } else {
                let room = ZONE_BLOCKS - before.0.len() as u64;
                if before.1 || room == 0 {
                    continue;
                }
                let n = rng.random_range(1..=room.min(3));
                tag = tag.wrapping_add(1).max(1);
                let data = vec![tag; n as usize * B];
                if rng.random_bool(0.5) {
                    d.zone_append(z, &data).unwrap();
                } else {
                    let at = ZonedMem::zone_start(z) + before.0.len() as u64 * B as u64;
                    d.write_at(at, &data).unwrap();
                }
                last_append = Some((z, before));
            }
            history[z as usize].push(zone_image(&mut d, z));
        }
        d.cut_power_now();
        let r = d.crash();
        assert!(
            r.restore_error.is_none(),
            "seed {seed}: {:?}",
            r.restore_error
        );
        rebuilt += r.zones_rebuilt;
        lost += r.lost;
        kept_all += (r.lost == 0) as u64;
        for z in 0..ZONES as u32 {
            let got = zone_image(&mut d, z);
            let h = &history[z as usize];
            let mut ok = h.contains(&got);
            if let Some((lz, before)) = &last_append {
                // The newest append may have kept any prefix of its blocks.
                let after = h.last().expect("history");
                if *lz == z && !ok && got.0.starts_with(&before.0) && after.0.starts_with(&got.0) {
                    ok = got.1 == (got.0.len() as u64 == ZONE_BLOCKS);
                    torn += 1;
                }
            }
            assert!(
                ok,
                "seed {seed} zone {z}: {got:?} is not in its history {h:?}"
            );
        }
        // The rebuilt device takes appends at the surviving write pointer again.
        for z in 0..ZONES as u32 {
            let (img, full) = zone_image(&mut d, z);
            if !full {
                let at = d.zone_append(z, &[0xee; B]).unwrap();
                assert_eq!(at, ZonedMem::zone_start(z) + (img.len() * B) as u64);
            }
        }
    }
    eprintln!("rebuilt {rebuilt}, lost {lost}, torn {torn}, kept all {kept_all}");
    assert!(rebuilt > 100 && lost > 100 && torn > 10 && kept_all > 50);
}

#[test]
fn cut_zone_commands_are_applied_then_torn_or_undone() {
    let (mut append_prefixes, mut resets) = (HashSet::new(), [0u32; 2]);
    for seed in 0..64u64 {
        // An interrupted append keeps a prefix of its blocks.
        let mut d = FaultDevice::new(
            ZonedMem::new(),
            FaultConfig {
                seed,
                power_cut_after: Some(3),
                torn_writes: true,
                ..FaultConfig::default()
            },
        );
        d.zone_append(1, &[1; 2 * B]).unwrap();
        d.flush().unwrap();
        assert_eq!(d.zone_append(1, &[2; 4 * B]), Err(DeviceError::PowerCut));
        assert_eq!(d.zone_reset(1), Err(DeviceError::PowerCut));
        let r = d.crash();
        let (img, _) = zone_image(&mut d, 1);
        assert_eq!(&img[..2], &[1, 1], "seed {seed}: flushed data stays");
        assert!(img[2..].iter().all(|&t| t == 2));
        let t = r.torn.expect("the cut append is the newest change");
        assert_eq!(
            t.durable_blocks.iter().filter(|&&x| x).count(),
            img.len() - 2
        );
        append_prefixes.insert(img.len());
        // An interrupted reset happened or not.
        let mut d = FaultDevice::new(
            ZonedMem::new(),
            FaultConfig {
                seed,
                power_cut_after: Some(3),
                torn_writes: true,
                ..FaultConfig::default()
            },
        );
        d.zone_append(2, &[3; 3 * B]).unwrap();
        d.flush().unwrap();
        assert_eq!(d.zone_reset(2), Err(DeviceError::PowerCut));
        assert_eq!(d.inner().zones[2], (0, false), "applied before the cut");
        d.crash();
        let (img, _) = zone_image(&mut d, 2);
        match img.len() {
            0 => resets[0] += 1,
            3 => {
                assert_eq!(img, vec![3, 3, 3]);
                resets[1] += 1
            }
            n => panic!("seed {seed}: a reset is atomic, {n} blocks left"),
        }
    }
    assert!(append_prefixes.len() >= 4, "{append_prefixes:?}");
    assert!(resets[0] > 10 && resets[1] > 10, "{resets:?}");
}

#[test]
fn zone_commands_are_counted_and_passed_through() {
    let mut d = FaultDevice::new(ZonedMem::new(), FaultConfig::default());
    assert_eq!(d.capabilities(), d.inner().capabilities());
    assert_eq!(d.zone_append(0, &[1; B]).unwrap(), 0);
    d.zone_finish(0).unwrap();
    d.zone_reset(0).unwrap();
    d.zone_report(0).unwrap();
    assert_eq!(d.commands(), 4);
    assert_eq!(d.handle().writes(), 1);
    assert_eq!(d.stats().writes, 1);
    assert_eq!(d.stats().write_bytes, B as u64);
    d.cut_power_now();
    assert_eq!(d.zone_append(0, &[1; B]), Err(DeviceError::PowerCut));
    assert_eq!(d.zone_report(0), Err(DeviceError::PowerCut));
    assert_eq!(d.inner().zones[0], (0, false));
}

#[test]
fn cut_at_the_nth_command_of_a_kind_in_a_shared_power_domain() {
    let mut data = FaultDevice::new(ZonedMem::new(), FaultConfig::default());
    let h = data.handle();
    let mut log = FaultDevice::in_power_domain(
        MemDevice::new(16 * B as u64, B as u32),
        FaultConfig {
            seed: 1,
            lose_unflushed: true,
            ..FaultConfig::default()
        },
        &h,
    );
    h.cut_power_at_nth(
        CommandKind::ZoneReset,
        Some(h.commands_of(CommandKind::ZoneReset) + 2),
    );
    data.zone_append(0, &[1; B]).unwrap();
    data.zone_reset(0).unwrap();
    log.write_at(0, &[2; B]).unwrap();
    data.zone_append(1, &[1; B]).unwrap();
    assert_eq!(h.cut_on(), None);
    assert_eq!(data.zone_reset(1), Err(DeviceError::PowerCut));
    assert_eq!(h.cut_on(), Some(CommandKind::ZoneReset));
    assert_eq!(
        data.inner().zones[1],
        (1, false),
        "not applied without torn writes"
    );
    // The log device lost power with the data device.
    assert_eq!(log.flush(), Err(DeviceError::PowerCut));
    assert_eq!(h.commands(), 6, "one count for the domain");
    assert_eq!(log.handle().commands(), 6);
    assert_eq!(
        h.commands_of(CommandKind::Write),
        0,
        "counts by kind are per device"
    );
    assert_eq!(log.handle().commands_of(CommandKind::Write), 1);
    assert_eq!(h.commands_of(CommandKind::ZoneAppend), 2);
    assert!(data.crash().was_powered_off);
    log.crash();
    assert!(!h.is_powered_off());
    log.write_at(0, &[3; B]).unwrap();
    data.zone_reset(1).unwrap();
}
