//! NoWA on a simulated conventional SSD: with aligned zones the SSD copies nothing; the same
//! workload without NoWA and alignment makes it copy.

use super::*;
use crate::writepath::LogSink;
use flashsim::Mode;
use rand::Rng;
use rand_pcg::Pcg64Mcg;

/// Skewed overwrites of 70% of the page ids through the write path; returns SSD WAF over the
/// part after the first full pass.
fn overwrite_run(cfg: OopConfig, passes: u64) -> (f64, OutOfPlace) {
    let dev = sim(ssd(48 << 20, Mode::Conventional));
    let mut wp = OutOfPlace::create(Box::new(dev.clone()), 4096, cfg).unwrap();
    wp.set_stamp(&crate::identity::Stamp::default()).unwrap();
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
            let p = page_image(pid, lsn, 4096, &mut rng);
            write_page(&mut wp, &mut log, pid, &p).unwrap();
            if i % 64 == 0 {
                log.force(log.next).unwrap();
                wp.maintain(&mut log).unwrap();
            }
            if i % 4096 == 0 {
                wp.sync(&mut log).unwrap();
                wp.checkpoint(log.next, 0, 0).unwrap();
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
