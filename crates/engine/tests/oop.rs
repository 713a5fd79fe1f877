//! The out-of-place write path on simulated SSDs: NoWA with aligned zones keeps the SSD from
//! copying anything (and the same workload without them does not), ZNS has SSD WAF exactly 1,
//! FDP placement ids separate zones, and a database on each reopens with its data.

mod common;

use common::{key, page_image, value, Held};
use flashsim::{FdpConfig, Geometry, Mode, SsdConfig, ZnsConfig};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::BTreeMap;
use wafer_engine::device::{
    BlockDevice, FaultConfig, FaultDevice, MemDevice, SimDevice, VirtualClock,
};
use wafer_engine::page;
use wafer_engine::wal::record::MapChange;
use wafer_engine::writepath::pack;
use wafer_engine::writepath::pack::Codec;
use wafer_engine::writepath::{LogSink, MemLog, OopConfig, OutOfPlace, WritePath, WriteReason};
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
    let mut c = SsdConfig::sized(g, logical, 0.12);
    c.data = flashsim::DataMode::Memory;
    c.timing.enabled = false;
    c.mode = mode;
    c.fit_reserve();
    c
}

fn sim(cfg: SsdConfig) -> Held<SimDevice> {
    Held::new(SimDevice::new(cfg, VirtualClock::shared()).unwrap())
}

/// Skewed overwrites of 70% of the page ids through the write path; returns SSD WAF over the
/// part after the first full pass.
fn overwrite_run(cfg: OopConfig, passes: u64) -> (f64, OutOfPlace) {
    let dev = sim(ssd(48 << 20, Mode::Conventional));
    let mut wp = OutOfPlace::create(Box::new(dev.clone()), 4096, cfg).unwrap();
    wp.finish_format().unwrap();
    let mut log = MemLog::default();
    let n = wp.page_capacity() * 7 / 10;
    let mut rng = Pcg64Mcg::seed_from_u64(9);
    let mut lsn = 1u64;
    let mut base = (0, 0);
    for pass in 0..passes {
        for i in 0..n {
            let pid = if pass == 0 {
                i
            } else {
                // 80% of the writes to 20% of the pages.
                if rng.random_bool(0.8) {
                    rng.random_range(0..n / 5)
                } else {
                    rng.random_range(0..n)
                }
            };
            lsn += 100;
            log.next = lsn;
            let p = page_image(pid, lsn, 4096, &mut rng);
            wp.write_pages(&[(pid, &p)], WriteReason::Eviction, &mut log)
                .unwrap();
            if i % 64 == 0 {
                log.force(log.next).unwrap();
                wp.maintain(&mut log).unwrap();
            }
            if i % 4096 == 0 {
                wp.sync(&mut log).unwrap();
                wp.checkpoint(log.next).unwrap();
            }
        }
        if pass == 0 {
            let s = dev.lock().ssd().counters().clone();
            base = (s.host_write_bytes, s.media_write_bytes);
        }
    }
    wp.sync(&mut log).unwrap();
    let s = dev.lock().ssd().counters().clone();
    let waf = (s.media_write_bytes - base.1) as f64 / (s.host_write_bytes - base.0) as f64;
    (waf, wp)
}

#[test]
fn nowa_with_aligned_zones_keeps_ssd_waf_at_one() {
    let all = OopConfig {
        codec: Codec::Lz4,
        gdt: true,
        nowa: true,
        aligned: true,
        max_open_zones: 4,
        ..OopConfig::default()
    };
    let (waf, wp) = overwrite_run(all.clone(), 6);
    let c = wp.counters();
    eprintln!(
        "NoWA + aligned: SSD WAF {waf:.3}, DB WAF {:.3}, GC rounds {}, compensation rounds {}",
        c.db_waf(),
        c.gc_rounds,
        c.compensation_rounds
    );
    assert!(waf <= 1.02, "SSD WAF {waf}");
    // The same workload without NoWA and with unaligned zones makes the SSD copy.
    let (waf_plain, _) = overwrite_run(
        OopConfig {
            nowa: false,
            aligned: false,
            trim_slots: false,
            ..all
        },
        6,
    );
    eprintln!("without NoWA, unaligned: SSD WAF {waf_plain:.3}");
    assert!(waf_plain > 1.1, "SSD WAF {waf_plain}");
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
    let mut oracle = BTreeMap::new();
    let mut rng = Pcg64Mcg::seed_from_u64(4);
    for i in 0..6000u64 {
        let mut x = db.begin().unwrap();
        for _ in 0..4 {
            let k = key(rng.random_range(0..3000), 16);
            let v = value(i, rng.random_range(100..600));
            x.put(&t, &k, &v).unwrap();
            oracle.insert(k, v);
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
    let t = db.open_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    for (k, v) in &oracle {
        assert_eq!(x.get(&t, k).unwrap().as_deref(), Some(v.as_slice()));
    }
    x.commit().unwrap();
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

/// A log for the crash test: records whose page versions are read back from the device when
/// they are logged (a GC record logs the version it copied, even if a newer one is staged),
/// and a durable horizon that a crash keeps.
struct CheckedLog {
    dev: Held<FaultDevice<MemDevice>>,
    next: u64,
    durable: u64,
    /// (lsn, page, page LSN of the stored copy)
    entries: Vec<(u64, u64, u64)>,
    records: Vec<(u64, Vec<MapChange>)>,
}

impl LogSink for CheckedLog {
    fn force(&mut self, lsn: u64) -> wafer_engine::Result<()> {
        self.durable = self.durable.max(lsn + 1);
        Ok(())
    }
    fn next_lsn(&self) -> u64 {
        self.next
    }
    fn durable_lsn(&self) -> u64 {
        self.durable
    }
    fn log_map(&mut self, changes: &[MapChange]) -> wafer_engine::Result<u64> {
        let lsn = self.next;
        self.next += 1;
        for m in changes {
            let start = m.offset / 4096 * 4096;
            let end = (m.offset + m.len as u64).div_ceil(4096) * 4096;
            let mut buf = vec![0u8; (end - start) as usize];
            self.dev
                .lock()
                .inner_mut()
                .read_at(start, &mut buf)
                .unwrap();
            let mut p = vec![0u8; 4096];
            pack::unpack_into(
                &buf,
                (m.offset - start) as usize,
                m.len as usize,
                m.pid,
                &mut p,
            )
            .unwrap();
            self.entries.push((lsn, m.pid, page::page_lsn(&p)));
        }
        self.records.push((lsn, changes.to_vec()));
        Ok(lsn)
    }
}

/// Power cuts at many points of a write-heavy run on a tiny device (DB GC and NoWA compensation
/// all the time): after recovery from the last complete checkpoint's snapshot and the durable
/// location records, every page reads back as the newest version the durable log names.
#[test]
fn power_cuts_during_gc_and_compensation_lose_no_logged_page() {
    let cfg = OopConfig {
        codec: Codec::Lz4,
        gdt: true,
        nowa: true,
        zone_bytes: 32 * 1024,
        max_open_zones: 2,
        batch_pages: 8,
        ..OopConfig::default()
    };
    let (mut gc, mut comp) = (0u64, 0u64);
    for (i, cut) in [300u64, 700, 1100, 1500, 1900, 2300, 2900, 3700, 4500, 5300]
        .iter()
        .enumerate()
    {
        let dev = Held::new(FaultDevice::new(
            MemDevice::new(1 << 20, 4096),
            FaultConfig {
                seed: i as u64,
                torn_writes: true,
                lose_unflushed: true,
                ..FaultConfig::default()
            },
        ));
        let mut wp = OutOfPlace::create(Box::new(dev.clone()), 4096, cfg.clone()).unwrap();
        wp.finish_format().unwrap();
        let mut log = CheckedLog {
            dev: dev.clone(),
            next: 1,
            durable: 1,
            entries: Vec::new(),
            records: Vec::new(),
        };
        wp.checkpoint(log.next).unwrap();
        let mut ckpt = log.next;
        log.next += 1;
        log.force(ckpt).unwrap();
        wp.checkpoint_done();
        {
            let d = dev.lock();
            d.handle().cut_power_at(Some(d.commands() + cut));
        }
        let mut rng = Pcg64Mcg::seed_from_u64(i as u64);
        let n = wp.page_capacity() / 3;
        let mut version = 10u64;
        let run = (|| -> wafer_engine::Result<()> {
            for step in 0..100_000u64 {
                let pid = if rng.random_bool(0.7) {
                    rng.random_range(0..n / 4)
                } else {
                    rng.random_range(0..n)
                };
                version += 1;
                log.next = log.next.max(version);
                let p = page_image(pid, version, 4096, &mut rng);
                wp.write_pages(&[(pid, &p)], WriteReason::Eviction, &mut log)?;
                if step % 16 == 0 {
                    wp.maintain(&mut log)?;
                }
                if step % 200 == 199 {
                    // A checkpoint: pages durable, snapshot, then its record forced.
                    wp.sync(&mut log)?;
                    let tag = log.next;
                    wp.checkpoint(tag)?;
                    log.next += 1;
                    log.force(tag)?;
                    wp.checkpoint_done();
                    ckpt = tag;
                }
            }
            Ok(())
        })();
        assert!(run.is_err(), "the power was never cut");
        gc += wp.counters().gc_rounds;
        comp += wp.counters().compensation_rounds;
        drop(wp);
        dev.lock().crash();
        let durable = log.durable;
        let mut wp = OutOfPlace::open(Box::new(dev.clone()), cfg.clone()).unwrap();
        wp.recover_begin(ckpt).unwrap();
        // The newest version each durable record names (a snapshot holds no more than them).
        let mut expect: BTreeMap<u64, u64> = BTreeMap::new();
        for &(_, pid, v) in log.entries.iter().filter(|e| e.0 < durable) {
            expect.insert(pid, v);
        }
        // Recovery: the durable records from the checkpoint on.
        for (lsn, changes) in log.records.iter().filter(|r| r.0 < durable && r.0 >= ckpt) {
            wp.redo_map(*lsn, changes).unwrap();
        }
        wp.recover_end().unwrap();
        let mut buf = vec![0u8; 4096];
        for (pid, v) in &expect {
            wp.read_page(*pid, &mut buf)
                .unwrap_or_else(|e| panic!("cut {cut}: page {pid}: {e}"));
            assert_eq!(page::page_lsn(&buf), *v, "cut {cut}: page {pid}");
        }
    }
    eprintln!("GC rounds {gc}, compensation rounds {comp} before the cuts");
    assert!(gc > 0 && comp > 0, "GC {gc}, compensation {comp}");
}
