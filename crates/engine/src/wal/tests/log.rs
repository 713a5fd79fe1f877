//! The circular log on a memory device: append/flush/reopen/scan, wrap-around with truncation,
//! a full log, torn tails, torn masters, foreign devices, reformatting, I/O errors.

use super::support::{body, rng, Held, Volatile};
use crate::wal::{Body, LogRecord, Master, ScanStop, Wal, WalConfig};
use crate::Error;
use rand::Rng;

const BLOCK: u32 = 512;

fn cfg(space_bytes: u64) -> WalConfig {
    WalConfig {
        space_bytes,
        ..WalConfig::default()
    }
}

/// Opens the log on `dev`, scans from the master's start and sets the end; returns the records.
fn reopen(dev: &Held) -> (Wal, Master, Vec<LogRecord>, ScanStop) {
    let (mut wal, master) = Wal::open(dev.boxed(), cfg(0)).unwrap();
    let (recs, end, stop) = scan(&mut wal, master.start_lsn);
    wal.set_end(end).unwrap();
    (wal, master, recs, stop)
}

fn scan(wal: &mut Wal, from: u64) -> (Vec<LogRecord>, u64, ScanStop) {
    let mut r = wal.scan_from(from).unwrap();
    let recs: Vec<LogRecord> = r.by_ref().map(|x| x.unwrap()).collect();
    (recs, r.end_lsn(), r.stop().cloned().unwrap())
}

/// Byte offset on the device of log byte `lsn`.
fn phys(wal: &Wal, lsn: u64) -> usize {
    (2 * wal.block_bytes() + lsn % wal.capacity_bytes()) as usize
}

#[test]
fn append_flush_reopen_scan() {
    let dev = Held::new(256 * 1024, BLOCK);
    let mut wal = Wal::create(dev.boxed(), cfg(0)).unwrap();
    let first = wal.next_lsn();
    assert!(first > 0);
    assert_eq!(wal.master().start_lsn, first);
    let mut g = rng(1);
    let mut recs = Vec::new();
    let mut prev = 0;
    for i in 0..300u64 {
        let b = body(&mut g, if i % 50 == 0 { 3000 } else { 100 });
        let lsn = wal.append(7, prev, &b).unwrap();
        recs.push(LogRecord {
            lsn,
            txn: 7,
            prev_lsn: prev,
            body: b,
        });
        prev = lsn;
        if i % 7 == 0 {
            wal.flush_to(lsn).unwrap();
            assert!(wal.durable_lsn() > lsn);
        }
        // Records can be read back whether buffered or written.
        if i % 13 == 0 {
            let k = (i as usize) / 2;
            assert_eq!(wal.read_record(recs[k].lsn).unwrap(), recs[k]);
            assert_eq!(wal.read_record(lsn).unwrap(), recs[i as usize]);
        }
    }
    wal.flush_to(wal.next_lsn()).unwrap();
    let end = wal.next_lsn();
    assert_eq!(wal.durable_lsn(), end);
    // The live log scans the same records too.
    let (live, live_end, stop) = scan(&mut wal, first);
    assert_eq!(live, recs);
    assert_eq!((live_end, stop), (end, ScanStop::Limit));
    drop(wal);

    let (mut wal, master, got, stop) = reopen(&dev);
    assert_eq!(
        master,
        Master {
            checkpoint_lsn: 0,
            start_lsn: first,
            ..Master::default()
        }
    );
    assert_eq!(got, recs);
    assert_eq!(stop, ScanStop::Zeroed);
    assert_eq!(wal.next_lsn(), end);
    for r in recs.iter().step_by(17) {
        assert_eq!(&wal.read_record(r.lsn).unwrap(), r);
    }
    // Appending after reopen continues the stream.
    let l = wal.append(8, 0, Body::Commit).unwrap();
    assert_eq!(l, end);
    wal.flush_to(l).unwrap();
    let (_, _, got, _) = reopen(&dev);
    assert_eq!(got.len(), recs.len() + 1);
    assert_eq!(got.last().unwrap().lsn, end);
}

#[test]
fn unflushed_records_are_not_on_the_device() {
    let dev = Held::new(64 * 1024, BLOCK);
    let mut wal = Wal::create(dev.boxed(), cfg(0)).unwrap();
    let a = wal.append(1, 0, Body::Commit).unwrap();
    wal.flush_to(a).unwrap();
    wal.append(2, 0, Body::Commit).unwrap();
    drop(wal);
    let (_, _, got, _) = reopen(&dev);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].lsn, a);
}

#[test]
fn wrap_around_with_truncation() {
    let dev = Held::new(2 * 512 + 16 * 512, BLOCK); // 8 KiB of log space
    let mut wal = Wal::create(dev.boxed(), cfg(0)).unwrap();
    let cap = wal.capacity_bytes();
    assert_eq!(cap, 8192);
    let first = wal.next_lsn();
    let mut g = rng(2);
    let mut all: Vec<LogRecord> = Vec::new();
    let mut masters = 0;
    while wal.next_lsn() < first + 6 * cap {
        let b = body(&mut g, 300);
        let lsn = match wal.append(1, 0, &b) {
            Ok(l) => l,
            Err(Error::LogFull(_)) => {
                // Checkpoint: keep the last few records, free the rest.
                let keep = all[all.len().saturating_sub(3)].lsn;
                wal.set_master(Master {
                    checkpoint_lsn: keep,
                    start_lsn: keep,
                    ..Master::default()
                })
                .unwrap();
                masters += 1;
                assert!(wal.used_bytes() <= cap);
                wal.append(1, 0, &b).unwrap()
            }
            Err(e) => panic!("{e}"),
        };
        assert!(wal.used_bytes() <= cap);
        all.push(LogRecord {
            lsn,
            txn: 1,
            prev_lsn: 0,
            body: b,
        });
        if g.random_ratio(1, 3) {
            wal.flush_to(lsn).unwrap();
        }
    }
    assert!(masters >= 5, "{masters} truncations");
    wal.flush_to(wal.next_lsn()).unwrap();
    let end = wal.next_lsn();
    drop(wal);
    let (mut wal, master, got, _) = reopen(&dev);
    let from = all.iter().position(|r| r.lsn == master.start_lsn).unwrap();
    assert_eq!(got, all[from..].to_vec());
    assert_eq!(wal.next_lsn(), end);
    // Records still live can be read by LSN; truncated ones cannot.
    assert_eq!(wal.read_record(all[from].lsn).unwrap(), all[from]);
    assert!(wal.read_record(all[0].lsn).is_err());
    assert!(wal.scan_from(all[0].lsn).is_err());
}

#[test]
fn log_full_until_start_advances() {
    let dev = Held::new(2 * 512 + 8 * 512, BLOCK);
    let mut wal = Wal::create(dev.boxed(), cfg(0)).unwrap();
    let first = wal.next_lsn();
    let big = Body::System {
        redo: crate::wal::Redo::LeafPut {
            pid: 1,
            key: vec![1; 10],
            value: vec![2; 400],
        },
    };
    let mut lsns = Vec::new();
    let err = loop {
        match wal.append(0, 0, &big) {
            Ok(l) => lsns.push(l),
            Err(e) => break e,
        }
        assert!(lsns.len() < 100);
    };
    assert!(matches!(err, Error::LogFull(_)), "{err}");
    assert!(wal.free_bytes() < 450);
    assert_eq!(wal.used_bytes(), wal.next_lsn() - first);
    // Still full after a flush: only moving the start frees space.
    wal.flush_to(wal.next_lsn()).unwrap();
    assert!(matches!(wal.append(0, 0, &big), Err(Error::LogFull(_))));
    // The start may not move backwards nor past the end.
    assert!(wal
        .set_master(Master {
            checkpoint_lsn: 0,
            start_lsn: first - 1,
            ..Master::default()
        })
        .is_err());
    assert!(wal
        .set_master(Master {
            checkpoint_lsn: 0,
            start_lsn: wal.next_lsn() + 1,
            ..Master::default()
        })
        .is_err());
    wal.set_master(Master {
        checkpoint_lsn: lsns[3],
        start_lsn: lsns[3],
        ..Master::default()
    })
    .unwrap();
    assert!(wal.free_bytes() >= 3 * 400);
    wal.append(0, 0, &big).unwrap();
    // A record larger than the whole log never fits.
    let huge = Body::System {
        redo: crate::wal::Redo::Images(vec![(1, vec![7; 8192])]),
    };
    assert!(matches!(
        wal.append(0, 0, &huge),
        Err(Error::InvalidArgument(_))
    ));
    // Nothing was corrupted by the refused appends.
    wal.flush_to(wal.next_lsn()).unwrap();
    drop(wal);
    let (_, master, got, _) = reopen(&dev);
    assert_eq!(master.start_lsn, lsns[3]);
    assert_eq!(got.len(), lsns.len() - 3 + 1);
}

#[test]
fn torn_tail_ends_the_scan_at_the_previous_record() {
    let dev = Held::new(64 * 1024, BLOCK);
    let mut wal = Wal::create(dev.boxed(), cfg(0)).unwrap();
    let mut g = rng(3);
    let mut recs = Vec::new();
    for _ in 0..40 {
        let b = body(&mut g, 200);
        let lsn = wal.append(1, 0, &b).unwrap();
        recs.push((lsn, b));
    }
    wal.flush_to(wal.next_lsn()).unwrap();
    let (last, _) = recs.last().unwrap().clone();
    let at = phys(&wal, last) + 20;
    drop(wal);
    // Tear the last record: flip a byte in its middle.
    dev.with_bytes(|b| b[at] ^= 0x40);
    let (mut wal, _, got, stop) = reopen(&dev);
    assert_eq!(got.len(), recs.len() - 1);
    assert_eq!(stop, ScanStop::BadChecksum);
    assert_eq!(wal.next_lsn(), last);
    // The log goes on from there, and the new records replace the torn one.
    let l = wal.append(9, 0, Body::Abort).unwrap();
    assert_eq!(l, last);
    wal.flush_to(l).unwrap();
    drop(wal);
    let (_, _, got, stop) = reopen(&dev);
    assert_eq!(got.len(), recs.len());
    assert_eq!(got.last().unwrap().body, Body::Abort);
    assert_eq!(stop, ScanStop::Zeroed);
}

#[test]
fn torn_master_falls_back_to_the_other_copy() {
    let dev = Held::new(64 * 1024, BLOCK);
    let mut wal = Wal::create(dev.boxed(), cfg(0)).unwrap();
    let mut lsns = Vec::new();
    for _ in 0..10 {
        lsns.push(wal.append(0, 0, Body::Commit).unwrap());
    }
    let m1 = Master {
        checkpoint_lsn: lsns[2],
        start_lsn: lsns[1],
        ..Master::default()
    };
    wal.set_master(m1).unwrap();
    let m2 = Master {
        checkpoint_lsn: lsns[5],
        start_lsn: lsns[4],
        ..Master::default()
    };
    wal.set_master(m2).unwrap();
    let seq = wal.master_sequence();
    drop(wal);
    assert_eq!(Wal::open(dev.boxed(), cfg(0)).unwrap().1, m2);
    // Tear the newest copy: the older one is used.
    let newest = (seq % 2) as usize * 512;
    dev.with_bytes(|b| b[newest + 45] ^= 1);
    let (wal, m) = Wal::open(dev.boxed(), cfg(0)).unwrap();
    assert_eq!(m, m1);
    assert_eq!(wal.master_sequence(), seq - 1);
    drop(wal);
    // Both torn: a clear error.
    let other = 512 - newest;
    dev.with_bytes(|b| b[other + 50] ^= 1);
    match Wal::open(dev.boxed(), cfg(0)) {
        Err(Error::CorruptLog { reason, .. }) => assert!(reason.contains("master")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn next_master_write_goes_to_the_older_copy() {
    let dev = Held::new(64 * 1024, BLOCK);
    let mut wal = Wal::create(dev.boxed(), cfg(0)).unwrap();
    let a = wal.append(0, 0, Body::Commit).unwrap();
    let before = dev.with_bytes(|b| b[..1024].to_vec());
    wal.set_master(Master {
        checkpoint_lsn: a,
        start_lsn: a,
        ..Master::default()
    })
    .unwrap();
    let after = dev.with_bytes(|b| b[..1024].to_vec());
    // Exactly one copy changed; the other still holds the previous master.
    let changed: Vec<bool> = (0..2)
        .map(|i| before[i * 512..(i + 1) * 512] != after[i * 512..(i + 1) * 512])
        .collect();
    assert_eq!(changed.iter().filter(|c| **c).count(), 1);
}

#[test]
fn foreign_device_and_mismatches_are_clear_errors() {
    let dev = Held::new(64 * 1024, BLOCK);
    match Wal::open(dev.boxed(), cfg(0)) {
        Err(Error::NotADatabase(_)) => {}
        other => panic!("{other:?}"),
    }
    dev.with_bytes(|b| b[..4096].fill(0xA5));
    assert!(matches!(
        Wal::open(dev.boxed(), cfg(0)),
        Err(Error::NotADatabase(_))
    ));

    let dev = Held::new(64 * 1024, BLOCK);
    drop(Wal::create(dev.boxed(), cfg(0)).unwrap());
    // Same bytes on a device with bigger blocks.
    let big = Held::new(64 * 1024, 4096);
    let img = dev.with_bytes(|b| b.to_vec());
    big.with_bytes(|b| b.copy_from_slice(&img));
    match Wal::open(big.boxed(), cfg(0)) {
        Err(Error::Config(m)) => assert!(m.contains("512"), "{m}"),
        other => panic!("{other:?}"),
    }
    // A device too small for the formatted log.
    let small = Held::new(32 * 1024, BLOCK);
    small.with_bytes(|b| b.copy_from_slice(&img[..32 * 1024]));
    assert!(matches!(
        Wal::open(small.boxed(), cfg(0)),
        Err(Error::Config(_))
    ));
    // A newer format version (checksum recomputed, so only the version is wrong).
    let newer = Held::new(64 * 1024, BLOCK);
    newer.with_bytes(|b| {
        b.copy_from_slice(&img);
        for copy in [0usize, 512] {
            b[copy + 8..copy + 12].copy_from_slice(&4u32.to_le_bytes());
            let crc = crc32c::crc32c(&b[copy..copy + 56]);
            b[copy + 56..copy + 60].copy_from_slice(&crc.to_le_bytes());
        }
    });
    match Wal::open(newer.boxed(), cfg(0)) {
        Err(Error::NotADatabase(m)) => assert!(m.contains("version 4"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Too small to format.
    let tiny = Held::new(4 * 512, BLOCK);
    assert!(matches!(
        Wal::create(tiny.boxed(), cfg(0)),
        Err(Error::Config(_))
    ));
}

#[test]
fn space_bytes_bounds_the_log() {
    let dev = Held::new(1 << 20, BLOCK);
    let wal = Wal::create(dev.boxed(), cfg(100_000)).unwrap();
    assert_eq!(wal.capacity_bytes(), 100_000 / 512 * 512);
    drop(wal);
    // Open keeps the formatted size whatever the config says.
    let (wal, _) = Wal::open(dev.boxed(), cfg(5_000_000)).unwrap();
    assert_eq!(wal.capacity_bytes(), 100_000 / 512 * 512);
}

#[test]
fn reformat_never_resurrects_old_records() {
    let dev = Held::new(64 * 1024, BLOCK);
    let mut wal = Wal::create(dev.boxed(), cfg(0)).unwrap();
    for _ in 0..50 {
        wal.append(1, 0, Body::Commit).unwrap();
    }
    wal.flush_to(wal.next_lsn()).unwrap();
    let old_first = wal.master().start_lsn;
    drop(wal);
    let wal = Wal::create(dev.boxed(), cfg(0)).unwrap();
    assert!(wal.next_lsn() > old_first);
    drop(wal);
    let (_, _, got, _) = reopen(&dev);
    assert!(got.is_empty(), "{} stale records", got.len());
}

#[test]
fn append_before_set_end_is_refused() {
    let dev = Held::new(64 * 1024, BLOCK);
    drop(Wal::create(dev.boxed(), cfg(0)).unwrap());
    let (mut wal, m) = Wal::open(dev.boxed(), cfg(0)).unwrap();
    assert!(matches!(
        wal.append(1, 0, Body::Commit),
        Err(Error::InvalidArgument(_))
    ));
    assert!(wal.set_end(m.start_lsn - 1).is_err());
    wal.set_end(m.start_lsn).unwrap();
    wal.append(1, 0, Body::Commit).unwrap();
}

#[test]
fn write_error_poisons_the_log() {
    let dev = Volatile::new(64 * 1024, BLOCK);
    let mut wal = Wal::create(dev.boxed(), cfg(0)).unwrap();
    let a = wal.append(1, 0, Body::Commit).unwrap();
    dev.0.lock().unwrap().fail_writes = true;
    assert!(matches!(wal.flush_to(a), Err(Error::Device(_))));
    dev.0.lock().unwrap().fail_writes = false;
    assert!(matches!(
        wal.append(1, 0, Body::Commit),
        Err(Error::Poisoned(_))
    ));
    assert!(matches!(wal.flush_to(a), Err(Error::Poisoned(_))));
}

#[test]
fn a_full_buffer_is_written_out() {
    let dev = Held::new(1 << 20, BLOCK);
    let mut wal = Wal::create(dev.boxed(), cfg(0)).unwrap();
    let buf = wal.buffer_bytes();
    let b = Body::System {
        redo: crate::wal::Redo::LeafDel {
            pid: 1,
            key: vec![0; 200],
        },
    };
    while wal.durable_lsn() == wal.master().start_lsn {
        wal.append(0, 0, &b).unwrap();
        assert!(wal.next_lsn() - wal.durable_lsn() <= buf + 300);
    }
    assert_eq!(wal.stats().buffer_full_flushes, 1);
}

/// The master records the largest write between two device flushes before a run makes one
/// that large, and a reopen with a smaller buffer still zeroes the larger window past the end:
/// an unflushed write of the earlier run may have reached that far, and its records (of this
/// lap, so valid-looking) must not resurface behind new ones.
#[test]
fn the_largest_write_is_recorded_and_a_smaller_buffer_zeroes_as_far() {
    let with_buffer = |bytes: u64| WalConfig {
        buffer_bytes: Some(bytes),
        ..cfg(0)
    };
    let dev = Held::new(1 << 20, BLOCK);
    let mut wal = Wal::create(dev.boxed(), with_buffer(64 * 1024)).unwrap();
    assert_eq!(wal.torn_span(), 64 * 1024);
    let mut g = rng(3);
    let mut prev = 0;
    for _ in 0..100 {
        prev = wal.append(1, prev, body(&mut g, 200)).unwrap();
    }
    wal.flush().unwrap();
    let end = wal.next_lsn();
    drop(wal);
    // What an unflushed write of that run could have left: bytes in the 64 KiB past the end.
    let at = (2 * BLOCK as u64 + end % (1 << 20)) as usize;
    let tail_block = at / BLOCK as usize * BLOCK as usize + BLOCK as usize;
    dev.with_bytes(|b| b[tail_block..tail_block + 60 * 1024].fill(0xA5));
    let (mut wal, master) = Wal::open(dev.boxed(), with_buffer(8 * 1024)).unwrap();
    assert_eq!(
        wal.torn_span(),
        64 * 1024,
        "the master keeps the larger write"
    );
    let (_, found_end, _) = scan(&mut wal, master.start_lsn);
    assert_eq!(found_end, end);
    wal.set_end(end).unwrap();
    dev.with_bytes(|b| {
        assert!(
            b[tail_block..tail_block + 60 * 1024]
                .iter()
                .all(|&x| x == 0),
            "the window of the earlier run's largest write is zeroed"
        )
    });
    drop(wal);
    // A larger buffer is recorded at open, before anything is written with it.
    let (mut wal, master) = Wal::open(dev.boxed(), with_buffer(128 * 1024)).unwrap();
    let (_, e, _) = scan(&mut wal, master.start_lsn);
    wal.set_end(e).unwrap();
    drop(wal);
    let (wal, _) = Wal::open(dev.boxed(), cfg(0)).unwrap();
    assert_eq!(wal.torn_span(), 128 * 1024);
}

/// A log whose master predates the largest-write field (version 2) keeps the widest window
/// once upgraded: an older build's run may have left unflushed bytes up to a quarter of the
/// log space past the end, which a narrower recorded window would later take for damage.
#[test]
fn a_version_2_log_keeps_the_widest_window_after_its_upgrade() {
    let dev = Held::new(256 * 1024, BLOCK);
    let mut wal = Wal::create(dev.boxed(), cfg(0)).unwrap();
    let mut g = rng(5);
    let mut prev = 0;
    for _ in 0..20 {
        prev = wal.append(1, prev, body(&mut g, 100)).unwrap();
    }
    wal.flush().unwrap();
    // A quarter of the log space, in whole blocks.
    let widest = (wal.capacity_bytes() / 4).next_multiple_of(BLOCK as u64);
    drop(wal);
    // Both master copies rewritten as version 2: no largest write, the CRC32C at 80.
    dev.with_bytes(|b| {
        for copy in [0usize, BLOCK as usize] {
            b[copy + 8..copy + 12].copy_from_slice(&2u32.to_le_bytes());
            b[copy + 80..copy + 92].fill(0);
            let crc = crc32c::crc32c(&b[copy..copy + 80]);
            b[copy + 80..copy + 84].copy_from_slice(&crc.to_le_bytes());
        }
    });
    let (wal, _, recs, _) = reopen(&dev);
    assert_eq!(recs.len(), 20);
    assert_eq!(wal.torn_span(), widest);
    drop(wal);
    let (wal, _, recs, _) = reopen(&dev);
    assert_eq!(recs.len(), 20);
    assert_eq!(
        wal.torn_span(),
        widest,
        "the upgraded master keeps the widest window"
    );
}

#[test]
fn a_master_job_writes_with_the_log_going_on_and_takes_effect_when_finished() {
    let dev = Held::new(64 * 1024, BLOCK);
    let mut wal = Wal::create(dev.boxed(), cfg(0)).unwrap();
    let a = wal.append(0, 0, Body::Commit).unwrap();
    let ckpt = wal.append(0, 0, Body::Abort).unwrap();
    let m = Master {
        checkpoint_lsn: ckpt,
        start_lsn: a,
        ..Master::default()
    };
    // The record it names is not durable yet: refused, and nothing is out.
    assert!(matches!(
        wal.begin_master(m),
        Err(Error::InvalidArgument(_))
    ));
    wal.flush().unwrap();
    let old = wal.master();
    let job = wal.begin_master(m).unwrap();
    // Out: no other master write starts, and the log keeps its old master; appends and
    // flushes go on.
    assert!(matches!(wal.set_master(m), Err(Error::InvalidArgument(_))));
    let later = wal.append(0, 0, Body::Commit).unwrap();
    wal.flush().unwrap();
    assert_eq!(wal.master(), old);
    let done = job.run();
    assert_eq!(wal.master(), old, "in effect only once finished");
    wal.finish_master(done).unwrap();
    assert_eq!(wal.master(), m);
    // And master writes work again.
    wal.set_master(m).unwrap();
    drop(wal);
    let (_, got, recs, _) = reopen(&dev);
    assert_eq!(got, m);
    assert_eq!(recs.last().unwrap().lsn, later);
}

/// A flush of more than the log buffer writes it in buffer-sized chunks, each flushed before
/// the next, and a chunk may start inside a long record. A power cut in the next chunk's write
/// can lose a block of that record's tail and keep valid records after it, up to a buffer past
/// the chunk's start: past the record's end, so further from the record's start than one
/// buffer. That is a torn write, not damage: the scan ends at the record. (It took them for
/// damage, measuring the window from the record's start, and the database would not open.)
/// Records beyond that window are still damage.
#[test]
fn a_chunk_torn_inside_a_long_record_ends_the_scan_there() {
    use crate::wal::record::{Redo, Undo};
    let buffer = 8 * 1024u64;
    let wal_cfg = WalConfig {
        buffer_bytes: Some(buffer),
        ..cfg(0)
    };
    let update = |value: usize| Body::Update {
        redo: Redo::LeafPut {
            pid: 9,
            key: b"k".to_vec(),
            value: vec![7u8; value],
        },
        undo: Undo {
            tree: 1,
            key: b"k".to_vec(),
            old: None,
        },
    };
    for damaged in [false, true] {
        let dev = Held::new(256 * 1024, BLOCK);
        let mut wal = Wal::create(dev.boxed(), wal_cfg.clone()).unwrap();
        for _ in 0..3 {
            wal.append(1, 0, update(100)).unwrap();
        }
        wal.flush_to(wal.next_lsn()).unwrap();
        // A record of 7,000 bytes and 60 small ones after it, written by one flush in chunks.
        let long = wal.append(1, 0, update(7000)).unwrap();
        let after: Vec<u64> = (0..60)
            .map(|_| wal.append(1, 0, update(200)).unwrap())
            .collect();
        wal.flush_to(wal.next_lsn()).unwrap();
        let (long_end, end) = (after[0], wal.next_lsn());
        // A chunk that starts at a block in the long record's last quarter: its first block
        // lost, the rest of it kept, nothing after it written (the cut came during it).
        let block = BLOCK as u64;
        let chunk_start = (long + (long_end - long) * 3 / 4) / block * block;
        assert!(chunk_start > long && chunk_start + block < long_end);
        let kept_to = chunk_start + buffer;
        // Kept records past a buffer from the record's start: what the scan took for damage.
        assert!(after
            .iter()
            .any(|&l| l > long + buffer + block && l + 300 < kept_to));
        let (lost, rest) = (phys(&wal, chunk_start), phys(&wal, kept_to));
        let rest_end = phys(&wal, end.next_multiple_of(block));
        assert!(rest < rest_end, "the log does not wrap here");
        drop(wal);
        dev.with_bytes(|b| {
            b[lost..lost + BLOCK as usize].fill(0);
            // Damaged: the records past the chunk were written, durably, before the block
            // was lost (no torn write reaches that far).
            if !damaged {
                b[rest..rest_end].fill(0);
            }
        });
        let (mut wal, master) = Wal::open(dev.boxed(), wal_cfg.clone()).unwrap();
        let mut r = wal.scan_from(master.start_lsn).unwrap().detecting_damage();
        let mut n = 0;
        let mut failed = None;
        for x in r.by_ref() {
            match x {
                Ok(_) => n += 1,
                Err(e) => failed = Some(e),
            }
        }
        if damaged {
            assert!(
                matches!(failed, Some(Error::CorruptLog { lsn, .. }) if lsn == long),
                "{failed:?}"
            );
        } else {
            assert!(
                failed.is_none(),
                "a torn chunk taken for damage: {failed:?}"
            );
            assert_eq!((n, r.stop().cloned()), (3, Some(ScanStop::BadChecksum)));
        }
    }
}
