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
