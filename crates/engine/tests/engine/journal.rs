//! The journal write path (paper 004) on the simulated SSD: every rung of the ladder keeps the
//! committed state across checkpoints and reopens, and the device's counters rank the rungs as
//! the paper does: the baseline programs every checkpointed image a second time (host rewrites),
//! ISC-A and ISC-B a second time too (in-device copies), ISC-C only the images its 4 KiB FTL
//! cannot remap (a conventional journal leaves them a sector off the unit), Check-In none.

use crate::support::{key, value, Held, Oracle};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use wafer_engine::device::{MemDevice, SimDevice, VirtualClock};
use wafer_engine::{Db, DbConfig, Devices, HomeMethod, JournalConfig};

const TREES: [&str; 1] = ["t"];

fn ssd(unit: u32) -> flashsim::SsdConfig {
    let mut c = flashsim::SsdConfig::small(16 << 20, 0.15);
    c.timing.enabled = false;
    c.mapping_unit_bytes = unit;
    c
}

struct Run {
    /// flashsim's redundant programs, and all its programs.
    redundant: u64,
    media: u64,
    journal: wafer_engine::JournalStats,
}

fn run(method: HomeMethod) -> Run {
    let unit = if method == HomeMethod::CheckIn {
        512
    } else {
        4096
    };
    let clock = VirtualClock::shared();
    let data = Held::new(
        SimDevice::new(ssd(unit), clock)
            .unwrap()
            .with_block_bytes(512)
            .unwrap(),
    );
    let log = Held::new(MemDevice::new(8 << 20, 512));
    let cfg = DbConfig {
        buffer_pages: 64,
        doublewrite: false,
        checkpoint_log_fill: 0.5,
        log_space_bytes: Some(4 << 20),
        journal: Some(JournalConfig {
            method,
            journal_bytes: 2 << 20,
            checkpoint_fill: 0.5,
        }),
        ..DbConfig::default()
    };
    let devices = || Devices::new(Box::new(data.clone()), Box::new(log.clone()));
    let db = Db::open(devices(), cfg.clone()).unwrap();
    let t = db.create_tree(TREES[0]).unwrap();
    let mut oracle = Oracle::new(&TREES);
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    for i in 0..3000u64 {
        let mut x = db.begin().unwrap();
        for _ in 0..4 {
            let k = key(rng.random_range(0..2000), 16);
            if rng.random_bool(0.9) {
                let v = value(rng.random(), rng.random_range(50..400));
                x.put(&t, &k, &v).unwrap();
                oracle.put(TREES[0], &k, &v);
            } else {
                x.delete(&t, &k).unwrap();
                oracle.delete(TREES[0], &k);
            }
        }
        x.commit().unwrap();
        if i % 500 == 499 {
            db.checkpoint().unwrap();
        }
    }
    oracle.check(&db, "before reopen");
    let journal = db.stats().journal.expect("journal stats");
    drop(db);
    let db = Db::open(devices(), cfg).unwrap();
    oracle.check(&db, "after reopen");
    db.verify().unwrap();
    let c = data.lock().ssd().counters().clone();
    Run {
        redundant: c.redundant_write_bytes,
        media: c.media_write_bytes,
        journal,
    }
}

#[test]
fn the_ladder_keeps_the_data_and_ranks_redundant_writes() {
    let runs: Vec<(HomeMethod, Run)> = HomeMethod::ALL.into_iter().map(|m| (m, run(m))).collect();
    for (m, r) in &runs {
        eprintln!(
            "{}: redundant {} of {} media bytes; {:?}",
            m.name(),
            r.redundant,
            r.media,
            r.journal
        );
        assert!(r.journal.checkpoints >= 5, "{}: {:?}", m.name(), r.journal);
        assert!(
            r.journal.journal_checkpoints >= 1,
            "{}: {:?}",
            m.name(),
            r.journal
        );
        assert!(r.journal.images_moved > 0);
    }
    let red = |i: usize| runs[i].1.redundant;
    assert!(red(0) > 0 && red(1) > 0 && red(2) > 0);
    assert_eq!(
        runs[1].1.journal.copy_commands,
        runs[1].1.journal.copy_ranges
    );
    assert_eq!(
        runs[2].1.journal.copy_commands,
        runs[2].1.journal.checkpoints
    );
    // ISC-C remaps the aligned eighth of the conventional images; Check-In remaps them all.
    assert!(red(3) < red(2), "isc-c {} vs isc-b {}", red(3), red(2));
    assert!(
        red(4) * 10 < red(3),
        "check-in {} vs isc-c {}",
        red(4),
        red(3)
    );
    assert!(runs[4].1.media < runs[0].1.media);
}

/// With several threads, a maintenance step that has nothing to do takes no exclusive latch
/// (in place, no checkpoint due: only the stats' own takes count), and the journal's own
/// checkpoint is background work: a journal filled past `checkpoint_fill` by page writes is
/// left for `Db::maintenance`, which checkpoints it.
#[test]
fn maintenance_takes_no_exclusive_latch_for_nothing_and_checkpoints_the_journal() {
    let cfg = |journal: Option<JournalConfig>| DbConfig {
        buffer_pages: 64,
        doublewrite: false,
        log_space_bytes: Some(64 << 20),
        checkpoint_log_fill: 0.9,
        journal,
        ..DbConfig::default()
    };
    let several = |db: &Db, t: &wafer_engine::Tree| {
        db.get(t, b"k").unwrap();
        std::thread::scope(|s| {
            s.spawn(|| db.get(t, b"k").unwrap());
        });
    };
    let mem = || {
        Devices::new(
            Box::new(MemDevice::new(64 << 20, 4096)),
            Box::new(MemDevice::new(128 << 20, 4096)),
        )
    };
    // In place: ten steps with nothing due.
    let db = Db::open(mem(), cfg(None)).unwrap();
    let t = db.create_tree("t").unwrap();
    several(&db, &t);
    let before = db.stats().engine.exclusive_latches;
    for _ in 0..10 {
        db.maintenance().unwrap();
    }
    let takes = db.stats().engine.exclusive_latches - before;
    assert_eq!(
        takes,
        1,
        "the stats' own take only; the steps took {}",
        takes - 1
    );
    drop(db);
    // Journaled: writes fill the journal past half; the next step checkpoints it.
    let journal = JournalConfig {
        journal_bytes: 2 << 20,
        checkpoint_fill: 0.5,
        ..JournalConfig::new(HomeMethod::Host)
    };
    let db = Db::open(mem(), cfg(Some(journal))).unwrap();
    let t = db.create_tree("t").unwrap();
    several(&db, &t);
    let mut rng = Pcg64Mcg::seed_from_u64(8);
    let mut i = 0u64;
    let stats = loop {
        let j = db.stats().journal.expect("journal stats");
        if j.peak_journal_bytes > (1 << 20) + (64 << 10) {
            break j;
        }
        assert!(i < 100_000, "the journal never passed half full: {j:?}");
        let mut x = db.begin().unwrap();
        for _ in 0..50 {
            x.put(&t, &key(i, 16), &value(rng.random(), 300)).unwrap();
            i += 1;
        }
        x.commit().unwrap();
    };
    assert_eq!(
        stats.journal_checkpoints, 0,
        "a write checkpointed at half full: {stats:?}"
    );
    db.maintenance().unwrap();
    let after = db.stats().journal.unwrap();
    assert_eq!(after.journal_checkpoints, 1, "{after:?}");
    db.verify().unwrap();
}

/// With several threads the journal's own checkpoint moves its images home in slices: each
/// maintenance step moves at most 128 images (a short hold of the write path and a writer's
/// ticket, where the whole move held them 170-310 ms on ext4), and steps go on moving until
/// the journal is back to half its threshold; writes between rounds reuse the space the
/// slices freed. After a kill every committed record is there.
#[test]
fn with_several_threads_the_journal_moves_home_in_slices() {
    let pair = crate::support::MemPair::new();
    let cfg = DbConfig {
        buffer_pages: 64,
        doublewrite: false,
        log_space_bytes: Some(7 << 20),
        checkpoint_log_fill: 0.95,
        // Only the journal's own checkpoints (not the engine's by time).
        checkpoint_interval_ms: 3_600_000,
        journal: Some(JournalConfig {
            // Images of 8 KiB (a page and its 4 KiB-block descriptor): the background's
            // threshold at 512 of them, a write's own at 768.
            journal_bytes: 8 << 20,
            checkpoint_fill: 0.5,
            ..JournalConfig::new(HomeMethod::Host)
        }),
        ..DbConfig::default()
    };
    let db = Db::open(pair.devices(), cfg.clone()).unwrap();
    let t = db.create_tree("t").unwrap();
    std::thread::scope(|s| {
        s.spawn(|| db.get(&t, b"k").unwrap());
    });
    let mut rng = Pcg64Mcg::seed_from_u64(10);
    let mut n = 0u64;
    let mut write = |db: &Db, n: &mut u64, count: u64| {
        for _ in 0..count / 50 {
            let mut x = db.begin().unwrap();
            for _ in 0..50 {
                x.put(&t, &key(*n, 16), &value(rng.random(), 300)).unwrap();
                *n += 1;
            }
            x.commit().unwrap();
        }
    };
    let mut rounds = 0;
    // Past the threshold (not to where a write checkpoints it itself), then slices, which stop
    // with about 220 images left; then past it again.
    for fill in [600, 300] {
        let before = db.stats().journal.unwrap();
        while db.stats().journal.unwrap().images - before.images < fill {
            write(&db, &mut n, 50);
        }
        let mut steps = 0;
        loop {
            let moved = db.stats().journal.unwrap().images_moved;
            db.maintenance().unwrap();
            let j = db.stats().journal.unwrap();
            let step = j.images_moved - moved;
            assert!(step <= 128, "a step moved {step}");
            if step == 0 {
                break;
            }
            steps += 1;
            assert!(steps < 100, "the slices never ended: {j:?}");
        }
        let j = db.stats().journal.unwrap();
        assert!(steps >= 2, "the journal moved in {steps} steps: {j:?}");
        assert_eq!(
            j.journal_checkpoints - before.journal_checkpoints,
            steps,
            "{j:?}"
        );
        assert_eq!(
            j.checkpoints - before.checkpoints,
            steps,
            "another checkpoint ran: {j:?}"
        );
        rounds += 1;
        write(&db, &mut n, 500);
    }
    assert_eq!(rounds, 2);
    db.verify().unwrap();
    let last = n;
    // A kill: nothing is closed.
    std::mem::forget(db);
    let db = Db::open(pair.devices(), cfg).unwrap();
    let t2 = db.open_tree("t").unwrap();
    for i in 0..last {
        assert!(db.get(&t2, &key(i, 16)).unwrap().is_some(), "record {i}");
    }
    db.verify().unwrap();
}
