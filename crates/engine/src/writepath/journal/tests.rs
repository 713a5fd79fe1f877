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
    assert!(j.tail > j.background_limit());
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
    assert_eq!((own(&j), j.tail), (1, 0));
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
