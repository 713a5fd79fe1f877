//! Databases on the out-of-place write path on simulated SSDs: on ZNS SSD WAF is exactly 1, on
//! FDP placement ids separate zones, and a database on each reopens with its data. The tests of
//! the write path itself (NoWA, power cuts during GC) are unit tests in
//! `src/writepath/oop/tests/`.

use crate::support::{key, value, Held, Oracle};
use flashsim::{FdpConfig, Geometry, Mode, SsdConfig, ZnsConfig};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use wafer_engine::device::{MemDevice, SimDevice, VirtualClock};
use wafer_engine::Codec;
use wafer_engine::OopConfig;
use wafer_engine::{Db, DbConfig, Devices};

/// 4 channels x 2 dies, 16 KiB pages, 8 pages per block: a 1 MiB superblock (the SSD GC unit).
fn ssd(logical: u64, mode: Mode) -> SsdConfig {
    let g = Geometry {
        channels: 4,
        dies_per_channel: 2,
        planes_per_die: 1,
        blocks_per_plane: 1,
        pages_per_block: 8,
        page_size_bytes: 16 * 1024,
    };
    SsdConfig::sized_untimed(g, logical, 0.12, mode)
}

fn sim(cfg: SsdConfig) -> Held<SimDevice> {
    Held::new(SimDevice::new(cfg, VirtualClock::shared()).unwrap())
}

/// Runs transactions with overwrites on `data`, closes, reopens and checks every row; returns
/// the data SSD's (host, media) bytes.
fn db_round_trip(data: Held<SimDevice>, oop: OopConfig) -> (u64, u64) {
    let log = Held::new(MemDevice::new(8 << 20, 4096));
    let cfg = DbConfig {
        buffer_pages: 64,
        doublewrite: false,
        log_space_bytes: Some(2 << 20),
        out_of_place: Some(oop),
        ..DbConfig::default()
    };
    let devices = || Devices::new(Box::new(data.clone()), Box::new(log.clone()));
    let db = Db::open(devices(), cfg.clone()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut oracle = Oracle::new(&["t"]);
    let mut rng = Pcg64Mcg::seed_from_u64(4);
    for i in 0..6000u64 {
        let mut x = db.begin().unwrap();
        for _ in 0..4 {
            let k = key(rng.random_range(0..3000), 16);
            let v = value(i, rng.random_range(100..600));
            x.put(&t, &k, &v).unwrap();
            oracle.put("t", &k, &v);
        }
        x.commit().unwrap();
        if i % 20 == 0 {
            db.maintenance().unwrap();
        }
    }
    let stats = db.stats();
    assert!(stats.writes.zones_reclaimed > 0, "{:?}", stats.writes);
    db.close().unwrap();
    drop(db);
    let db = Db::open(devices(), cfg).unwrap();
    assert_eq!(Oracle::read(&db, &["t"]), oracle, "the reopened database");
    let s = data.lock().ssd().counters().clone();
    (s.host_write_bytes, s.media_write_bytes)
}

#[test]
fn zns_database_has_ssd_waf_exactly_one_and_reopens() {
    let mode = Mode::Zns(ZnsConfig {
        zone_eus: 1,
        max_open_zones: 6,
        max_active_zones: 6,
    });
    let data = sim(ssd(24 << 20, mode));
    let (host, media) = db_round_trip(
        data,
        OopConfig {
            codec: Codec::Lz4,
            gdt: true,
            ..OopConfig::default()
        },
    );
    assert!(host > 0);
    assert_eq!(host, media, "a ZNS device never copies");
}

#[test]
fn fdp_database_separates_zones_by_placement_id_and_reopens() {
    let data = sim(ssd(24 << 20, Mode::Fdp(FdpConfig { handles: 4 })));
    let (host, media) = db_round_trip(
        data.clone(),
        OopConfig {
            codec: Codec::Lz4,
            gdt: true,
            ..OopConfig::default()
        },
    );
    let waf = media as f64 / host as f64;
    eprintln!("FDP: SSD WAF {waf:.3}");
    let h = data.lock().ssd().handle_stats().to_vec();
    assert!(
        h.iter().filter(|s| s.host_write_bytes > 0).count() >= 3,
        "zones spread over placement ids: {h:?}"
    );
    assert!(waf <= 1.02, "SSD WAF {waf}");
}

/// Background maintenance (checkpoint batches and DB GC, their device I/O without the core
/// latch) beside writer and reader threads on a ZNS SSD filling up: GC must reclaim zones, no
/// reader may see a value that was never written, and the reopened database must hold exactly
/// what the writers committed.
#[test]
fn background_gc_beside_writers_and_readers_keeps_every_commit() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let mode = Mode::Zns(ZnsConfig {
        zone_eus: 1,
        max_open_zones: 6,
        max_active_zones: 6,
    });
    let data = sim(ssd(24 << 20, mode));
    let log = Held::new(MemDevice::new(8 << 20, 4096));
    let cfg = DbConfig {
        buffer_pages: 64,
        doublewrite: false,
        log_space_bytes: Some(2 << 20),
        out_of_place: Some(OopConfig {
            codec: Codec::None,
            ..OopConfig::default()
        }),
        ..DbConfig::default()
    };
    let devices = || Devices::new(Box::new(data.clone()), Box::new(log.clone()));
    let db = Db::open(devices(), cfg.clone()).unwrap();
    let t = db.create_tree("t").unwrap();
    let stop = AtomicBool::new(false);
    let oracles: Vec<Oracle> = std::thread::scope(|s| {
        let bg = s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                db.maintenance().unwrap();
                std::thread::yield_now();
            }
        });
        let reader = s.spawn(|| {
            let mut rng = Pcg64Mcg::seed_from_u64(99);
            while !stop.load(Ordering::Relaxed) {
                let n = rng.random_range(0..2000u64);
                if let Ok(Some(v)) = db.get(&t, &key(n, 16)) {
                    // Every value written is `value(i, len)` for the key's own writer: its
                    // length says it is one of them.
                    assert!((100..600).contains(&v.len()), "a value never written");
                }
            }
        });
        let writers: Vec<_> = (0..2u64)
            .map(|w| {
                let (db, t) = (&db, &t);
                s.spawn(move || {
                    let mut oracle = Oracle::new(&["t"]);
                    let mut rng = Pcg64Mcg::seed_from_u64(w);
                    let mut done = 0;
                    while done < 5000u64 {
                        let mut x = db.begin().unwrap();
                        let mut staged = oracle.clone();
                        let mut ok = true;
                        for _ in 0..4 {
                            // Each writer has its own keys: w, w + 2, w + 4, ...
                            let k = key(rng.random_range(0..1000) * 2 + w, 16);
                            let v = value(done, rng.random_range(100..600));
                            staged.put("t", &k, &v);
                            if x.put(t, &k, &v).is_err() {
                                ok = false;
                                break;
                            }
                        }
                        if ok && x.commit().is_ok() {
                            oracle = staged;
                            done += 1;
                        }
                    }
                    oracle
                })
            })
            .collect();
        let oracles: Vec<Oracle> = writers.into_iter().map(|h| h.join().unwrap()).collect();
        stop.store(true, Ordering::Relaxed);
        bg.join().unwrap();
        reader.join().unwrap();
        oracles
    });
    let stats = db.stats();
    assert!(stats.writes.zones_reclaimed > 0, "{:?}", stats.writes);
    db.verify().unwrap();
    db.close().unwrap();
    drop(db);
    let db = Db::open(devices(), cfg).unwrap();
    let got = Oracle::read(&db, &["t"]);
    let mut want = Oracle::new(&["t"]);
    for o in &oracles {
        for (k, v) in o.scan(
            "t",
            (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded),
            false,
            usize::MAX,
        ) {
            want.put("t", &k, &v);
        }
    }
    want.assert_same(&got, "the reopened database");
}
