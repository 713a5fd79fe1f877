//! The journal write path alone: its header checks and its own checkpoint.

use super::*;
use crate::device::{Handle, MemDevice};

/// A sealed page `pid` with `lsn`, filled with `fill`.
fn page(pid: PageId, lsn: Lsn, fill: u8) -> Vec<u8> {
    let mut p = vec![0u8; 4096];
    page::init(&mut p, pid, crate::page::PageType::Leaf);
    page::set_page_lsn(&mut p, lsn);
    p[page::PAGE_HEADER_BYTES..].fill(fill);
    page::note_write(&mut p);
    page::seal(&mut p);
    p
}

/// The journal's own checkpoint is background work: a write that fills the journal past
/// `checkpoint_fill` leaves it to `maintain`, which moves the images home and empties the
/// journal; with no background work, a write checkpoints it itself halfway from there to
/// full. Every page reads back as last written either way.
#[test]
fn the_journals_own_checkpoint_runs_in_maintain_and_a_write_runs_it_only_late() {
    let cfg = JournalConfig {
        journal_bytes: 64 * 4096,
        ..JournalConfig::new(HomeMethod::Host)
    };
    let dev = Handle::new(MemDevice::new(8 << 20, 512));
    let mut j = Journal::create(Box::new(dev), 4096, cfg).unwrap();
    j.set_stamp(&Stamp::default()).unwrap();
    let mut log = crate::writepath::MemLog {
        next: 100,
        durable: 100,
        ..Default::default()
    };
    let own = |j: &Journal| j.stats.journal_checkpoints;
    let mut write = |j: &mut Journal, pid: PageId, fill: u8| {
        let p = page(pid, 1, fill);
        j.write_pages(&[(pid, &p)], WriteReason::Eviction, &mut log)
            .unwrap();
    };
    // 64 pages of journal (each image a page and a 512-byte descriptor): past 32 the
    // background checkpoints it, past 48 a write does.
    for pid in 0..40 {
        write(&mut j, pid, 1);
    }
    assert!(j.ring.used() > j.background_limit());
    assert_eq!(
        own(&j),
        0,
        "a write checkpointed before the foreground limit"
    );
    let mut log2 = crate::writepath::MemLog {
        next: 1000,
        durable: 1000,
        ..Default::default()
    };
    assert!(j.maintain(&mut log2).unwrap());
    assert_eq!((own(&j), j.ring.used()), (1, 0));
    assert!(!j.maintain(&mut log2).unwrap(), "nothing left to do");
    for pid in 0..60 {
        write(&mut j, pid, 2);
    }
    assert_eq!(own(&j), 2, "no background work: the write checkpointed");
    let mut buf = vec![0u8; 4096];
    for pid in 0..60 {
        j.read_page(pid, &mut buf).unwrap();
        assert_eq!(buf[page::PAGE_HEADER_BYTES], 2, "page {pid}");
    }
}

/// A header whose journal does not fit the data device (a device shorter than the one the
/// database was made on) is refused as not this database, before any home is computed.
#[test]
fn a_journal_larger_than_the_device_is_refused() {
    let cfg = JournalConfig::new(HomeMethod::Host);
    let dev = Handle::new(MemDevice::new(8 << 20, 4096));
    let mut j = Journal::create(Box::new(dev.clone()), 4096, cfg.clone()).unwrap();
    j.set_stamp(&Stamp::default()).unwrap();
    let journal = j.journal_bytes;
    drop(j);
    let mut first = vec![0u8; 4096];
    dev.lock().read_at(0, &mut first).unwrap();
    let mut small = MemDevice::new(journal, 4096);
    small.write_at(0, &first).unwrap();
    let r = Journal::open(Box::new(small), cfg.clone());
    assert!(matches!(r, Err(Error::NotADatabase(_))), "{:?}", r.err());
    assert!(
        Journal::open(Box::new(dev), cfg).is_ok(),
        "the whole device opens"
    );
}

/// The journal's own checkpoint in slices (as with several threads), writes between them, the
/// ring wrapping around, and crashes at random points, for every method a memory device
/// offers: after each crash every page reads as the version whose location was last logged
/// (no image still needed was overwritten), and a journal that keeps going reads every page as
/// last written.
#[test]
fn slices_free_the_ring_as_they_go_and_a_crash_finds_every_logged_image() {
    use rand::{Rng, SeedableRng};
    for method in [HomeMethod::Host, HomeMethod::IscB] {
        let cfg = JournalConfig {
            journal_bytes: 64 * 4096,
            ..JournalConfig::new(method)
        };
        let dev = Handle::new(MemDevice::new(8 << 20, 4096));
        let mut j = Journal::create(Box::new(dev.clone()), 4096, cfg.clone()).unwrap();
        j.set_stamp(&Stamp::default()).unwrap();
        j.slice_images = 3;
        let mut log = crate::writepath::MemLog {
            next: 100,
            durable: 100,
            ..Default::default()
        };
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(34);
        // Page -> fill of its last write, and of its last logged version.
        let mut written = std::collections::HashMap::new();
        let mut logged = std::collections::HashMap::new();
        let (mut wraps, mut slices, mut crashes) = (0, 0, 0);
        let read = |j: &mut Journal, pid: PageId| {
            let mut buf = vec![0u8; 4096];
            j.read_page(pid, &mut buf).unwrap();
            buf[page::PAGE_HEADER_BYTES]
        };
        for step in 0..3_000u32 {
            match rng.random_range(0..10) {
                0..=6 => {
                    let pid = rng.random_range(0..40u64);
                    let fill = (step % 251) as u8 + 1;
                    let p = page(pid, 1, fill);
                    let before = j.ring.tail;
                    j.write_pages(&[(pid, &p)], WriteReason::Eviction, &mut log)
                        .unwrap();
                    wraps += (j.ring.tail < before && j.ring.head > 0) as u32;
                    if j.stats.journal_checkpoints > slices {
                        // The write checkpointed the journal whole first: everything before
                        // it logged.
                        slices = j.stats.journal_checkpoints;
                        logged.clone_from(&written);
                    }
                    written.insert(pid, fill);
                }
                7 | 8 => {
                    let before = j.stats.journal_checkpoints;
                    j.journal_slice(&mut log).unwrap();
                    if j.stats.journal_checkpoints > before {
                        logged.clone_from(&written);
                    }
                    slices = j.stats.journal_checkpoints;
                }
                _ => {
                    crashes += 1;
                    drop(j);
                    j = Journal::open(Box::new(dev.clone()), cfg.clone()).unwrap();
                    j.recover_begin(0).unwrap();
                    for (lsn, changes) in &log.records {
                        j.redo_map(*lsn, changes).unwrap();
                    }
                    j.recover_end().unwrap();
                    j.slice_images = 3;
                    for (&pid, &fill) in &logged {
                        assert_eq!(
                            read(&mut j, pid),
                            fill,
                            "{method:?} step {step}: page {pid}"
                        );
                    }
                    // What was not logged is lost; the log replays it in the engine.
                    written.clone_from(&logged);
                    slices = j.stats.journal_checkpoints;
                }
            }
            // Every image the map names lies in the ring's live part.
            let start = j.journal_start;
            for (pid, img) in j.dir.read().jmt.iter() {
                let at = j.ring.position(img.offset - start);
                assert!(
                    at + img.span as u64 <= j.ring.used(),
                    "{method:?} step {step}: page {pid} at {at} outside {:?}",
                    j.ring
                );
            }
        }
        for (&pid, &fill) in &written {
            assert_eq!(read(&mut j, pid), fill, "{method:?}: page {pid}");
        }
        assert!(
            wraps > 10 && crashes > 100,
            "{method:?}: {wraps} wraps, {crashes} crashes"
        );
    }
}
