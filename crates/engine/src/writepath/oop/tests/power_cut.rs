//! Power cuts during DB GC and NoWA compensation lose no page whose location the durable log
//! names.

use super::*;
use crate::device::{FaultConfig, FaultDevice};
use crate::writepath::LogSink;
use rand::Rng;
use rand_pcg::Pcg64Mcg;
use std::collections::BTreeMap;

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
    fn force(&mut self, lsn: u64) -> Result<()> {
        self.durable = self.durable.max(lsn + 1);
        Ok(())
    }
    fn next_lsn(&self) -> u64 {
        self.next
    }
    fn durable_lsn(&self) -> u64 {
        self.durable
    }
    fn log_map(&mut self, changes: &[MapChange]) -> Result<u64> {
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

/// Power cuts at many points of a write-heavy run on a tiny device (DB GC, whole or in slices,
/// and NoWA compensation all the time): after recovery from the last complete checkpoint's snapshot and the durable
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
        wp.set_stamp(&crate::identity::Stamp::default()).unwrap();
        // Every other run collects in slices of 8 KiB, as beside other threads.
        let sliced = i % 2 == 1;
        wp.slice_bytes = 8 << 10;
        let mut log = CheckedLog {
            dev: dev.clone(),
            next: 1,
            durable: 1,
            entries: Vec::new(),
            records: Vec::new(),
        };
        wp.checkpoint(log.next, 0, 0).unwrap();
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
        let run = (|| -> Result<()> {
            for step in 0..100_000u64 {
                let pid = if rng.random_bool(0.7) {
                    rng.random_range(0..n / 4)
                } else {
                    rng.random_range(0..n)
                };
                version += 1;
                // The page's last record is logged, and forced before the page is written.
                log.next = log.next.max(version + 1);
                log.force(version)?;
                let p = page_image(pid, version, 4096, &mut rng);
                wp.write_pages(&[(pid, &p)], WriteReason::Eviction, &mut log)?;
                if step % 16 == 0 && sliced {
                    wp.maintain_beside(&mut log)?;
                } else if step % 16 == 0 {
                    wp.maintain(&mut log)?;
                }
                if step % 200 == 199 {
                    // A checkpoint: pages durable, snapshot, then its record forced.
                    wp.sync(&mut log)?;
                    let tag = log.next;
                    wp.checkpoint(tag, 0, 0)?;
                    log.next += 1;
                    log.force(tag)?;
                    wp.checkpoint_done();
                    ckpt = tag;
                }
            }
            Ok(())
        })();
        // Stopped by the cut, not by an error of its own (which would end the run the same way).
        match run {
            Err(Error::Device(crate::device::DeviceError::PowerCut)) => {}
            other => panic!("cut {cut}: the run ended with {other:?}, not the power cut"),
        }
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
