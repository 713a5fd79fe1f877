//! Page allocation across crashes. After random workloads (overflow values replaced and
//! deleted, splits and merges, aborted transactions) interrupted by power cuts and recovered,
//! every page below the meta page's high-water mark must be exactly one of: meta, a node or
//! overflow page of a tree, or a free page on the free list — no leaks, no page used twice, no
//! live page on the free list. Also checks the committed rows against an oracle each time.

use crate::support::{rounds, LinkedRig, Oracle};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use wafer_engine::{Db, DbConfig, Tree};

const DW: u32 = 8;

fn config() -> DbConfig {
    DbConfig {
        buffer_pages: 32,
        log_space_bytes: Some(512 << 10),
        checkpoint_log_fill: 0.3,
        doublewrite_pages: DW,
        ..DbConfig::default()
    }
}

fn val(rng: &mut Pcg64Mcg) -> Vec<u8> {
    let len = match rng.random_range(0..10) {
        0..=1 => rng.random_range(1100..12000),
        _ => rng.random_range(1..300),
    };
    let b: u8 = rng.random();
    (0..len).map(|i| b.wrapping_add(i as u8)).collect()
}

/// Runs transactions until an error (the power cut) or `limit` transactions. Returns whether the
/// last commit's outcome is unknown, with the state it would give.
fn workload(
    db: &Db,
    t: &Tree,
    rng: &mut Pcg64Mcg,
    state: &mut Oracle,
    limit: usize,
) -> Option<Oracle> {
    for _ in 0..limit {
        let Ok(mut x) = db.begin() else { return None };
        let mut staged = state.clone();
        for _ in 0..rng.random_range(1..10) {
            let k = format!("k{:04}", rng.random_range(0..250)).into_bytes();
            let r = if rng.random_bool(0.35) {
                staged.delete("t", &k);
                x.delete(t, &k)
            } else {
                let v = val(rng);
                staged.put("t", &k, &v);
                x.put(t, &k, &v)
            };
            if r.is_err() {
                return None;
            }
        }
        if rng.random_bool(0.2) {
            if x.abort().is_err() {
                return None;
            }
            continue;
        }
        match x.commit() {
            Ok(()) => *state = staged,
            Err(_) => return Some(staged),
        }
    }
    None
}

#[test]
fn no_page_leaks_or_double_use_across_crashes() {
    for seed in 0..rounds(6) {
        let rig = LinkedRig::new(seed, 8 << 20, 2 << 20, 512);
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut state = Oracle::new(&["t"]);
        {
            let db = Db::open(rig.devices(), config()).unwrap();
            db.create_tree("t").unwrap();
        }
        for cycle in 0..8u64 {
            let what = format!("seed {seed} cycle {cycle}");
            let db =
                Db::open(rig.devices(), config()).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
            let t = db.open_tree("t").unwrap();
            state.assert_same(&Oracle::read(&db, &["t"]), &what);
            rig.cut_after(rng.random_range(50..3000));
            let maybe = workload(&db, &t, &mut rng, &mut state, 400);
            drop(db);
            rig.crash();
            // Settle the unknown commit, then check the pages of a cleanly closed database.
            let db =
                Db::open(rig.devices(), config()).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
            let got = Oracle::read(&db, &["t"]);
            if got != state {
                assert!(
                    maybe.as_ref() == Some(&got),
                    "{what}: rows differ from the committed rows"
                );
                state = got;
            }
            db.verify().unwrap();
            db.close().unwrap();
            drop(db);
            // The pages as the cleanly closed database left them on the device.
            let db = Db::open(rig.devices(), config()).unwrap();
            let bad = db.check_pages().unwrap();
            assert!(
                bad.is_empty(),
                "{what}: page accounting:\n{}",
                bad.join("\n")
            );
        }
    }
}

/// A rollback never needs a page that may not exist. T deletes a 40 KB value (its overflow pages
/// go back to the free list); another transaction then fills the data device until it is full;
/// T aborts: re-inserting its value needs ten pages. The filling transaction must be the one to
/// get `Full` (the pages T's rollback may need stay reserved), T's abort must succeed, and the
/// database must reopen, on both write paths.
#[test]
fn a_rollback_on_a_full_device_gets_its_pages() {
    use wafer_engine::device::{MemDevice, SharedDevice};
    use wafer_engine::{Devices, Error, OopConfig};
    for oop in [false, true] {
        let dev = SharedDevice::shared(MemDevice::new((3 << 20) + (16 << 20), 4096));
        let devices = || {
            let mut p = dev.split(&[3 << 20, 16 << 20]).unwrap();
            let log = p.pop().unwrap();
            Devices::new(Box::new(p.pop().unwrap()), Box::new(log))
        };
        let cfg = DbConfig {
            buffer_pages: 1024,
            log_space_bytes: Some(14 << 20),
            out_of_place: oop.then(|| OopConfig {
                zone_bytes: 64 << 10,
                batch_pages: 8,
                ..OopConfig::default()
            }),
            ..config()
        };
        let what = if oop { "out of place" } else { "in place" };
        let db = Db::open(devices(), cfg.clone()).unwrap();
        let t = db.create_tree("t").unwrap();
        let big: Vec<u8> = (0..40_000u32).map(|i| i as u8).collect();
        let mut x = db.begin().unwrap();
        x.put(&t, b"big", &big).unwrap();
        x.commit().unwrap();
        let mut tx = db.begin().unwrap();
        tx.delete(&t, b"big").unwrap();
        let mut n = 0u64;
        let err = 'fill: loop {
            let mut filler = db.begin().unwrap();
            for _ in 0..16 {
                if let Err(e) = filler.put(&t, format!("fill{n:06}").as_bytes(), &[5u8; 3000]) {
                    // The failed put left nothing behind; the others stay.
                    filler.commit().unwrap();
                    break 'fill e;
                }
                n += 1;
            }
            filler.commit().unwrap();
            assert!(n < 100_000, "{what}: the device never filled");
        };
        assert!(matches!(err, Error::Full(_)), "{what}: filler got {err}");
        tx.abort()
            .unwrap_or_else(|e| panic!("{what}: the rollback on a full device failed: {e}"));
        let mut x = db.begin().unwrap();
        assert_eq!(x.get(&t, b"big").unwrap(), Some(big.clone()), "{what}");
        x.commit().unwrap();
        drop(db);
        let db = Db::open(devices(), cfg)
            .unwrap_or_else(|e| panic!("{what}: reopen after a full device failed: {e}"));
        let t = db.open_tree("t").unwrap();
        let mut x = db.begin().unwrap();
        assert_eq!(x.get(&t, b"big").unwrap(), Some(big), "{what}");
        x.commit().unwrap();
        assert_eq!(db.check_pages().unwrap(), Vec::<String>::new(), "{what}");
    }
}
