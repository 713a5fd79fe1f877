//! Power cuts on a device with a volatile cache: after every crash the log recovers exactly a
//! prefix of what was appended, containing at least everything that was flushed, and continuing
//! after recovery never lets stale records of the lost tail resurface.

use super::support::{body, rng, Volatile};
use crate::wal::{Body, LogRecord, Master, Redo, Wal, WalConfig};
use crate::Error;
use rand::Rng;

#[test]
fn crash_recover_continue() {
    for seed in 0..40u64 {
        run(seed);
    }
}

fn run(seed: u64) {
    let mut g = rng(seed);
    // 16 KiB of log space: the log wraps many times, the buffer is 1 KiB.
    let dev = Volatile::new(2 * 512 + 32 * 512, 512);
    let cfg = WalConfig::default();
    let mut wal = Wal::create(dev.boxed(), cfg.clone()).unwrap();
    // What the log holds, oldest first; `durable` of it must survive a crash.
    let mut log: Vec<LogRecord> = Vec::new();
    for round in 0..40 {
        let ops = g.random_range(1..60);
        for _ in 0..ops {
            let b = body(&mut g, 200);
            let lsn = match wal.append(round + 1, 0, &b) {
                Ok(l) => l,
                Err(Error::LogFull(_)) => {
                    let keep = log[log.len() - 1].lsn;
                    wal.set_master(Master {
                        checkpoint_lsn: keep,
                        start_lsn: keep,
                        ..Master::default()
                    })
                    .unwrap();
                    let i = log.iter().position(|r| r.lsn == keep).unwrap();
                    log.drain(..i);
                    wal.append(round + 1, 0, &b).unwrap()
                }
                Err(e) => panic!("{e}"),
            };
            log.push(LogRecord {
                lsn,
                txn: round + 1,
                prev_lsn: 0,
                body: b,
            });
            if g.random_ratio(1, 8) {
                wal.flush_to(lsn).unwrap();
            }
        }
        let durable = wal.durable_lsn();
        drop(wal);
        dev.crash(&mut g);

        let (w, m) = Wal::open(dev.boxed(), cfg.clone()).unwrap();
        wal = w;
        let mut r = wal.scan_from(m.start_lsn).unwrap();
        let got: Vec<LogRecord> = r.by_ref().map(|x| x.unwrap()).collect();
        let end = r.end_lsn();
        let skip = log.iter().position(|x| x.lsn == m.start_lsn).unwrap();
        // A prefix of what was appended ...
        assert!(got.len() <= log.len() - skip, "seed {seed} round {round}");
        assert_eq!(
            got[..],
            log[skip..skip + got.len()],
            "seed {seed} round {round}"
        );
        // ... holding everything flushed.
        assert!(
            end >= durable,
            "seed {seed} round {round}: end {end} < durable {durable}"
        );
        log.truncate(skip + got.len());
        log.drain(..skip);
        wal.set_end(end).unwrap();
        assert_eq!(wal.next_lsn(), end);
    }
}

/// A 128-byte record: four per 512-byte block, so every block starts with a record.
fn rec128(tag: u8) -> Body {
    Body::System {
        redo: Redo::LeafDel {
            pid: tag as u64,
            key: vec![tag; 82],
        },
    }
}

fn recover(dev: &Volatile) -> (Wal, Vec<LogRecord>) {
    let (mut wal, m) = Wal::open(dev.boxed(), WalConfig::default()).unwrap();
    let mut r = wal.scan_from(m.start_lsn).unwrap();
    let got: Vec<LogRecord> = r.by_ref().map(|x| x.unwrap()).collect();
    let end = r.end_lsn();
    wal.set_end(end).unwrap();
    (wal, got)
}

#[test]
fn stale_records_behind_a_lost_block_never_resurface() {
    let dev = Volatile::new(2 * 512 + 64 * 512, 512);
    let mut wal = Wal::create(dev.boxed(), WalConfig::default()).unwrap();
    assert!(
        wal.buffer_bytes() > 1024,
        "eight records must stay buffered"
    );
    let first = wal.next_lsn();
    for _ in 0..8 {
        let l = wal.append(0, 0, rec128(1)).unwrap();
        assert_eq!((l - first) % 128, 0);
    }
    wal.flush_to(wal.next_lsn()).unwrap();
    // Eight more records: two blocks in one device write. The device flush fails, and the power
    // cut loses the first of the two blocks while the second reaches the media.
    let second = wal.next_lsn();
    for _ in 0..8 {
        wal.append(0, 0, rec128(2)).unwrap();
    }
    let lost_block = 2 * 512 + second % wal.capacity_bytes();
    {
        let mut s = dev.0.lock().unwrap();
        s.flushes_until_failure = Some(0);
    }
    assert!(wal.flush_to(wal.next_lsn()).is_err());
    drop(wal);
    dev.crash_with(|off| off != lost_block);

    let (mut wal, got) = recover(&dev);
    assert_eq!(got.len(), 8, "the lost block ends the log");
    assert_eq!(wal.next_lsn(), second);
    // Four new records fill exactly the lost block; behind them lie four stale records with
    // matching LSNs, unless recovery zeroed them.
    for _ in 0..4 {
        wal.append(0, 0, rec128(3)).unwrap();
    }
    wal.flush_to(wal.next_lsn()).unwrap();
    drop(wal);
    dev.crash_with(|_| false);
    let (_, got) = recover(&dev);
    assert_eq!(got.len(), 12, "stale records resurfaced");
    assert!(got[8..].iter().all(|r| r.body == rec128(3)));
}
