//! Group commit: several committing threads share log flushes; one thread flushes at once.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use super::support::Held;
use crate::wal::{Body, GroupCommit, Redo, SharedWal, Undo, Wal, WalConfig};

fn update(i: u64) -> Body {
    Body::Update {
        redo: Redo::LeafPut {
            pid: 3,
            key: i.to_le_bytes().to_vec(),
            value: vec![7; 40],
        },
        undo: Undo {
            tree: 1,
            key: i.to_le_bytes().to_vec(),
            old: None,
        },
    }
}

fn shared(dev: &Held, gc: GroupCommit) -> SharedWal {
    let cfg = WalConfig {
        space_bytes: 0,
        group_commit: gc,
        buffer_bytes: None,
    };
    SharedWal::new(Wal::create(dev.boxed(), cfg).unwrap())
}

#[test]
fn concurrent_commits_share_flushes() {
    const THREADS: u64 = 8;
    const TXNS: u64 = 40;
    let dev = Held::new(4 << 20, 512);
    let wal = shared(
        &dev,
        GroupCommit {
            max_delay_us: 2000,
            min_batch_records: 4,
        },
    );
    let start = Barrier::new(THREADS as usize);
    let commits: Vec<Vec<u64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let wal = wal.clone();
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    let mut mine = Vec::new();
                    for i in 0..TXNS {
                        let txn = 1 + t * TXNS + i;
                        let u = wal.append(txn, 0, update(txn)).unwrap();
                        let c = wal.append(txn, u, Body::Commit).unwrap();
                        wal.commit_wait(c).unwrap();
                        // Durable when commit_wait returns.
                        assert!(wal.durable_lsn() > c);
                        mine.push(c);
                    }
                    mine
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let st = wal.stats();
    let n = THREADS * TXNS;
    assert_eq!(st.commits, n);
    assert!(
        st.commit_flushes < n,
        "{} flushes for {n} commits",
        st.commit_flushes
    );
    assert!(st.avg_batch_commits() > 1.0);
    eprintln!(
        "{n} commits, {} commit flushes, {} flushes, avg batch {:.2} commits, {} bytes written",
        st.commit_flushes,
        st.flushes,
        st.avg_batch_commits(),
        st.bytes_written
    );
    // Every commit record is on the device.
    drop(wal);
    let (mut wal, m) = Wal::open(dev.boxed(), WalConfig::default()).unwrap();
    let mut r = wal.scan_from(m.start_lsn).unwrap();
    let found: std::collections::HashSet<u64> = r
        .by_ref()
        .map(|x| x.unwrap())
        .filter(|x| x.body == Body::Commit)
        .map(|x| x.lsn)
        .collect();
    for c in commits.iter().flatten() {
        assert!(found.contains(c), "commit at {c} lost");
    }
    assert_eq!(found.len() as u64, n);
}

#[test]
fn single_thread_commit_flushes_at_once() {
    let dev = Held::new(1 << 20, 512);
    let wal = shared(
        &dev,
        GroupCommit {
            max_delay_us: 2_000_000,
            min_batch_records: 16,
        },
    );
    let t0 = Instant::now();
    for txn in 1..=20u64 {
        let u = wal.append(txn, 0, update(txn)).unwrap();
        let c = wal.append(txn, u, Body::Commit).unwrap();
        wal.commit_wait(c).unwrap();
        assert!(wal.durable_lsn() > c);
        wal.append(txn, c, Body::End).unwrap();
    }
    // No waiting for a batch that cannot come.
    assert!(t0.elapsed() < Duration::from_secs(1));
    let st = wal.stats();
    assert_eq!((st.commits, st.commit_flushes), (20, 20));
}

#[test]
fn leader_waits_at_most_max_delay_for_a_committer_that_does_not_come() {
    let dev = Held::new(1 << 20, 512);
    let wal = shared(
        &dev,
        GroupCommit {
            max_delay_us: 50_000,
            min_batch_records: 4,
        },
    );
    // Another thread committed a moment ago, so it counts as a concurrent committer.
    std::thread::scope(|s| {
        s.spawn(|| {
            let c = wal.append(1, 0, Body::Commit).unwrap();
            wal.commit_wait(c).unwrap();
        });
    });
    let c = wal.append(2, 0, Body::Commit).unwrap();
    let t0 = Instant::now();
    wal.commit_wait(c).unwrap();
    let waited = t0.elapsed();
    assert!(waited >= Duration::from_millis(45), "{waited:?}");
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    // Past the recent window (50 x 50 ms) only this thread counts: no more waiting.
    std::thread::sleep(Duration::from_micros(
        GroupCommit {
            max_delay_us: 50_000,
            min_batch_records: 4,
        }
        .recent_window_us(),
    ));
    let c = wal.append(3, 0, Body::Commit).unwrap();
    let t0 = Instant::now();
    wal.commit_wait(c).unwrap();
    assert!(t0.elapsed() < Duration::from_millis(40));
}

#[test]
fn policy_decisions() {
    let p = GroupCommit {
        max_delay_us: 100,
        min_batch_records: 3,
    };
    assert!(!p.should_flush(1, true, 10));
    assert!(p.should_flush(3, true, 10));
    assert!(p.should_flush(1, false, 10));
    assert!(p.should_flush(1, true, 100));
    assert!(GroupCommit::immediate().should_flush(1, true, 0));
    assert_eq!(p.recent_window_us(), 10_000);
}

#[test]
fn commit_wait_on_an_unknown_lsn_is_an_error() {
    let dev = Held::new(1 << 20, 512);
    let wal = shared(&dev, GroupCommit::immediate());
    let next = wal.lock().next_lsn();
    assert!(wal.commit_wait(next + 100).is_err());
}
