//! The version store alone: what purge must free however commits and snapshot ends
//! interleave.

use super::{VersionStore, Versions};
use crate::device::MemDevice;
use std::sync::atomic::{AtomicU64, Ordering};

fn versions() -> Versions {
    Versions::new(VersionStore::new(Box::new(MemDevice::new(8 << 20, 4096))).unwrap())
}

/// Commits `txn`, which replaced `key` of tree 1.
fn write_and_commit(v: &Versions, txn: u64, key: &[u8]) {
    v.before_write(txn, 1, key, Some(b"old")).unwrap();
    v.commit(txn).unwrap();
}

/// Two snapshots end at once, the older one's purge having found the newer one still
/// active: the newer one's end must not leave the heads only it held back to a purge that
/// never comes (a stress test once ended with 30 heads and no snapshot). The interleaving,
/// step by step: reader 1's end runs as far as its purge's `oldest`, then reader 2 ends whole,
/// then reader 1's purge goes on.
#[test]
fn a_snapshot_ending_during_anothers_purge_leaves_no_heads() {
    let v = versions();
    let store = v.store();
    let (r1, r2) = (100, 101);
    assert_eq!(v.begin_snapshot(r1), 0);
    write_and_commit(&v, 1, b"a");
    assert_eq!(v.begin_snapshot(r2), 1);
    write_and_commit(&v, 2, b"b");
    assert_eq!(store.snapshot_stats().heads, 2);
    // Reader 1 ends: its snapshot held commit 1 back, so a purge is due.
    assert_eq!(store.snaps.end(r1), Some(0));
    assert!(store.purge_due_after(0));
    let ends = store.snaps.ends();
    let oldest = store.oldest();
    assert_eq!(oldest, 1, "reader 2 still holds commit 2 back");
    // Reader 2 ends before that purge stores what it freed: commit 1 is still listed first,
    // at its snapshot, so it leaves the purge to the one under way.
    v.end_unlogged(r2).unwrap();
    assert_eq!(store.snapshot_stats().heads, 2);
    store.purge_from(oldest, ends);
    assert_eq!(
        store.snapshot_stats().heads,
        0,
        "heads left with no snapshot active"
    );
}

/// Commits beside snapshot readers that begin and end (as a read-only snapshot transaction
/// does, through `end_unlogged`), with threads: once all are done, no snapshot is active and
/// every head must be gone.
#[test]
fn heads_are_purged_once_the_last_snapshot_ends_under_threads() {
    const WRITERS: u64 = 2;
    const READERS: u64 = 3;
    for round in 0..10u64 {
        let v = versions();
        let next = AtomicU64::new(1);
        std::thread::scope(|s| {
            for w in 0..WRITERS {
                let (v, next) = (&v, &next);
                s.spawn(move || {
                    // Each writer its own keys: the lock manager would keep writers of one
                    // key apart.
                    for i in 0..2_000u64 {
                        let txn = next.fetch_add(1, Ordering::Relaxed);
                        write_and_commit(v, txn, &((w << 8) | (i % 16)).to_be_bytes());
                    }
                });
            }
            for _ in 0..READERS {
                let (v, next) = (&v, &next);
                s.spawn(move || {
                    for _ in 0..20_000 {
                        let txn = next.fetch_add(1, Ordering::Relaxed);
                        v.begin_snapshot(txn);
                        v.end_unlogged(txn).unwrap();
                    }
                });
            }
        });
        let heads = v.store().snapshot_stats().heads;
        assert_eq!(
            heads, 0,
            "round {round}: heads left with no snapshot active"
        );
    }
}
