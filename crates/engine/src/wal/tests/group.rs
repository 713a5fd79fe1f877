//! Group commit: several committing threads share log flushes; one thread flushes at once; the
//! flush runs without the log locked, appends go on during it and the next flush makes them
//! durable; an older flush never overwrites a newer tail image; acknowledged commits survive a
//! power cut.

use std::collections::HashSet;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use super::support::{rng, within_5s, Gated, Held, Volatile};
use crate::device::{BlockDevice, DeviceError, DeviceStats};
use crate::wal::{Body, GroupCommit, Redo, SharedWal, Undo, Wal, WalConfig};
use rand::Rng;

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
        image_holes: false,
        page_ops: false,
    };
    SharedWal::new(Wal::create(dev.boxed(), cfg).unwrap())
}

#[test]
fn concurrent_commits_share_flushes() {
    const THREADS: u64 = 8;
    const TXNS: u64 = 40;
    let dev = Held::new(4 << 20, 512);
    // Flushes that take as long as a disk's: commits that arrive during one share the next
    // whatever the scheduler does (an in-memory flush of microseconds left the test to luck on
    // a busy machine: in one run every commit flushed alone).
    let wal = shared_on(
        Box::new(SlowFlush(dev.clone(), Duration::from_micros(300))),
        GroupCommit {
            max_delay_us: 2000,
            min_batch_records: 4,
            min_share_pct: 100,
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
            min_share_pct: 100,
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

/// A device whose flush takes `delay` (a disk that syncs slowly).
struct SlowFlush(Held, Duration);

impl BlockDevice for SlowFlush {
    fn capacity_bytes(&self) -> u64 {
        self.0.capacity_bytes()
    }
    fn block_bytes(&self) -> u32 {
        self.0.block_bytes()
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        self.0.read_at(offset, buf)
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.0.write_at(offset, data)
    }
    fn flush(&mut self) -> Result<(), DeviceError> {
        std::thread::sleep(self.1);
        self.0.flush()
    }
    fn stats(&self) -> DeviceStats {
        self.0.stats()
    }
}

#[test]
fn leader_waits_at_most_max_delay_for_a_committer_that_does_not_come() {
    // Flushes take longer than the maximum delay: a leader waits the whole delay.
    let dev = Held::new(1 << 20, 512);
    let wal = shared_on(
        Box::new(SlowFlush(dev.clone(), Duration::from_millis(60))),
        GroupCommit {
            max_delay_us: 50_000,
            min_batch_records: 4,
            min_share_pct: 100,
        },
    );
    let waited = commit_after_another_thread(&wal);
    // The delay (50 ms) and then the flush (60 ms).
    assert!(waited >= Duration::from_millis(105), "{waited:?}");
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    // Past the recent window (50 x 50 ms) only this thread counts: no more waiting.
    std::thread::sleep(Duration::from_micros(
        GroupCommit {
            max_delay_us: 50_000,
            min_batch_records: 4,
            min_share_pct: 100,
        }
        .recent_window_us(),
    ));
    let t0 = Instant::now();
    let c = wal.append(3, 0, Body::Commit).unwrap();
    wal.commit_wait(c).unwrap();
    // The flush alone.
    assert!(
        t0.elapsed() < Duration::from_millis(100),
        "{:?}",
        t0.elapsed()
    );
}

/// Another thread commits (so it counts as a concurrent committer a moment later), then this
/// one: how long this commit took.
fn commit_after_another_thread(wal: &SharedWal) -> Duration {
    std::thread::scope(|s| {
        s.spawn(|| {
            let c = wal.append(1, 0, Body::Commit).unwrap();
            wal.commit_wait(c).unwrap();
        });
    });
    let c = wal.append(2, 0, Body::Commit).unwrap();
    let t0 = Instant::now();
    wal.commit_wait(c).unwrap();
    t0.elapsed()
}

#[test]
fn a_leader_waits_no_longer_than_a_flush_takes() {
    // A log in memory flushes in microseconds: waiting the maximum delay for another committer
    // would cost more than flushing twice.
    let dev = Held::new(1 << 20, 512);
    let wal = shared(
        &dev,
        GroupCommit {
            max_delay_us: 200_000,
            min_batch_records: 4,
            min_share_pct: 100,
        },
    );
    let took = commit_after_another_thread(&wal);
    // (Were the first flush slow, the cap would be as long: allow a slow machine that much.)
    assert!(took < Duration::from_millis(100), "{took:?}");
}

#[test]
fn policy_decisions() {
    let p = GroupCommit {
        max_delay_us: 100,
        min_batch_records: 3,
        min_share_pct: 100,
    };
    // One of two recent committers waits: wait for the other, up to the delay.
    assert!(!p.should_flush(1, 2, 10));
    assert!(p.should_flush(1, 2, 100));
    assert!(p.should_flush(3, 8, 10));
    // The only recent committer.
    assert!(p.should_flush(1, 1, 10));
    let share = GroupCommit {
        min_batch_records: 64,
        min_share_pct: 60,
        ..p
    };
    assert!(!share.should_flush(4, 8, 10));
    assert!(share.should_flush(5, 8, 10));
    assert!(!share.should_flush(1, 2, 10));
    assert!(share.should_flush(2, 2, 10));
    assert!(GroupCommit::immediate().should_flush(1, 8, 0));
    assert_eq!(p.recent_window_us(), 10_000);
}

/// A log whose flushes take 60 ms, whose leaders wait up to 50 ms for every recent committer.
fn waiting_for_every_committer() -> SharedWal {
    let dev = Held::new(1 << 20, 512);
    shared_on(
        Box::new(SlowFlush(dev, Duration::from_millis(60))),
        GroupCommit {
            max_delay_us: 50_000,
            min_batch_records: 64,
            min_share_pct: 100,
        },
    )
}

#[test]
fn the_delay_counts_from_the_end_of_the_flush_in_flight() {
    // Flushes of 60 ms, a delay of 50 ms. Thread A's commit flushes (F1); this thread commits
    // 10 ms into F1 and leads the next flush. When F1 ends it has waited 50 ms already, yet the
    // device has not idled: it waits for A, a recent committer, which commits again 5 ms after
    // F1 ended, and one flush serves both. (Counting the delay from when it became the leader,
    // it flushed alone at F1's end and A's commit took a third flush.)
    let wal = waiting_for_every_committer();
    let appended = Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            let c = wal.append(1, 0, Body::Commit).unwrap();
            appended.wait();
            wal.commit_wait(c).unwrap();
            std::thread::sleep(Duration::from_millis(5));
            let c = wal.append(3, 0, Body::Commit).unwrap();
            wal.commit_wait(c).unwrap();
        });
        appended.wait();
        std::thread::sleep(Duration::from_millis(10));
        let c = wal.append(2, 0, Body::Commit).unwrap();
        wal.commit_wait(c).unwrap();
    });
    let st = wal.stats();
    assert_eq!((st.commits, st.commit_flushes), (3, 2));

    // A committer counts as recent for eight flush times (here 480 ms), not the whole window
    // (2.5 s): past them a commit flushes at once (60 ms) instead of waiting 50 ms for A.
    std::thread::sleep(Duration::from_millis(600));
    let t0 = Instant::now();
    let c = wal.append(4, 0, Body::Commit).unwrap();
    wal.commit_wait(c).unwrap();
    assert!(
        t0.elapsed() < Duration::from_millis(100),
        "{:?}",
        t0.elapsed()
    );
}

#[test]
fn commit_wait_on_an_unknown_lsn_is_an_error() {
    let dev = Held::new(1 << 20, 512);
    let wal = shared(&dev, GroupCommit::immediate());
    let next = wal.lock().next_lsn();
    assert!(wal.commit_wait(next + 100).is_err());
}

fn shared_on(dev: Box<dyn BlockDevice>, gc: GroupCommit) -> SharedWal {
    let cfg = WalConfig {
        space_bytes: 0,
        group_commit: gc,
        buffer_bytes: None,
        image_holes: false,
        page_ops: false,
    };
    SharedWal::new(Wal::create(dev, cfg).unwrap())
}

/// The commit records on the device (reopened).
fn commits_on(dev: Box<dyn BlockDevice>) -> HashSet<u64> {
    let (mut wal, m) = Wal::open(dev, WalConfig::default()).unwrap();
    let mut r = wal.scan_from(m.start_lsn).unwrap();
    let found = r
        .by_ref()
        .map(|x| x.unwrap())
        .filter(|x| x.body == Body::Commit)
        .map(|x| x.lsn)
        .collect();
    found
}

#[test]
fn appends_go_on_during_a_flush_and_the_next_flush_makes_them_durable() {
    let dev = Gated::new(1 << 20, 512);
    let wal = shared_on(dev.boxed(), GroupCommit::immediate());
    let c1 = wal.append(1, 0, Body::Commit).unwrap();
    dev.arm();
    let leader = {
        let wal = wal.clone();
        std::thread::spawn(move || wal.commit_wait(c1))
    };
    dev.wait_entered();
    // The leader is inside the device flush, and the log is not locked: appends go on.
    let c2 = within_5s({
        let wal = wal.clone();
        move || {
            let u = wal.append(2, 0, update(2)).unwrap();
            wal.append(2, u, Body::Commit).unwrap()
        }
    });
    // In the tail block the flush in flight writes: the next flush rewrites that block.
    assert_eq!(c1 / 512, c2 / 512);
    assert!(wal.durable_lsn() <= c1);
    // This committer leads the next flush, after the one in flight.
    let next = {
        let wal = wal.clone();
        std::thread::spawn(move || wal.commit_wait(c2))
    };
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !next.is_finished(),
        "a second flush ran while one was in flight"
    );
    assert!(!leader.is_finished());
    dev.open();
    leader.join().unwrap().unwrap();
    next.join().unwrap().unwrap();
    assert!(wal.durable_lsn() > c2);
    let st = wal.stats();
    assert_eq!((st.commits, st.commit_flushes, st.flushes), (2, 2, 2));
    drop(wal);
    let found = commits_on(dev.dev.boxed());
    assert!(found.contains(&c1) && found.contains(&c2), "{found:?}");
}

/// `SharedWal::force` (a page write's write-ahead rule, out of place its location records)
/// flushes with the log unlocked: appends go on while the device holds its write; a second
/// force meanwhile waits for that flush and leads the next; an LSN never appended is an error.
#[test]
fn a_force_flushes_with_the_log_unlocked() {
    let dev = Gated::new(1 << 20, 512);
    let wal = shared_on(dev.boxed(), GroupCommit::immediate());
    let a = wal.append(1, 0, update(1)).unwrap();
    dev.arm();
    let first = {
        let wal = wal.clone();
        std::thread::spawn(move || wal.force(a))
    };
    dev.wait_entered();
    let b = within_5s({
        let wal = wal.clone();
        move || wal.append(2, 0, update(2)).unwrap()
    });
    assert!(wal.durable_lsn() <= a, "durable before the device wrote");
    let second = {
        let wal = wal.clone();
        std::thread::spawn(move || wal.force(b))
    };
    std::thread::sleep(Duration::from_millis(50));
    assert!(!second.is_finished(), "a second flush ran beside the first");
    dev.open();
    first.join().unwrap().unwrap();
    second.join().unwrap().unwrap();
    assert!(wal.durable_lsn() > b);
    assert_eq!(wal.stats().flushes, 2);
    let next = wal.lock().next_lsn();
    assert!(wal.force(next + 100).is_err());
    // Forcing what is durable does nothing.
    wal.force(a).unwrap();
    assert_eq!(wal.stats().flushes, 2);
}

#[test]
fn a_flush_with_the_log_locked_waits_for_the_flush_in_flight() {
    let dev = Gated::new(1 << 20, 512);
    let wal = shared_on(dev.boxed(), GroupCommit::immediate());
    let c1 = wal.append(1, 0, Body::Commit).unwrap();
    dev.arm();
    let leader = {
        let wal = wal.clone();
        std::thread::spawn(move || wal.commit_wait(c1))
    };
    dev.wait_entered();
    let c2 = within_5s({
        let wal = wal.clone();
        move || wal.append(2, 0, Body::Commit).unwrap()
    });
    // A checkpoint's or an eviction's flush: it must not write the tail block under the
    // flush in flight, nor let that flush's older image land over its own.
    let locked = {
        let wal = wal.clone();
        std::thread::spawn(move || {
            let mut g = wal.lock();
            g.flush_to(c2).map(|()| g.durable_lsn())
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    assert!(!locked.is_finished());
    dev.open();
    assert!(locked.join().unwrap().unwrap() > c2);
    leader.join().unwrap().unwrap();
    // The leader's publication did not move the durable LSN back.
    assert!(wal.durable_lsn() > c2);
    drop(wal);
    let found = commits_on(dev.dev.boxed());
    assert!(found.contains(&c1) && found.contains(&c2), "{found:?}");
}

#[test]
fn an_older_flush_never_overwrites_a_newer_tail_image() {
    let dev = Held::new(1 << 20, 512);
    let mut wal = Wal::create(dev.boxed(), WalConfig::default()).unwrap();
    let a = wal.append(1, 0, Body::Commit).unwrap();
    let job = wal.begin_flush().unwrap().unwrap();
    assert_eq!(job.end(), wal.next_lsn());
    // A flush with the log locked overtakes the job with a newer image of the same block.
    let b = wal.append(2, 0, Body::Commit).unwrap();
    wal.flush().unwrap();
    let writes = dev.stats().writes;
    let before = wal.stats();
    wal.finish_flush(job.run()).unwrap();
    assert_eq!(dev.stats().writes, writes, "the older image was written");
    assert_eq!(wal.stats(), before);
    assert_eq!(wal.durable_lsn(), wal.next_lsn());
    // The other order: the job first, then a flush from the job's end on.
    let c = wal.append(3, 0, Body::Commit).unwrap();
    let job = wal.begin_flush().unwrap().unwrap();
    let d = wal.append(4, 0, Body::Commit).unwrap();
    let done = job.run();
    wal.flush().unwrap();
    wal.finish_flush(done).unwrap();
    assert_eq!(wal.durable_lsn(), wal.next_lsn());
    assert!(wal.begin_flush().unwrap().is_none());
    drop(wal);
    let found = commits_on(dev.boxed());
    assert_eq!(found, HashSet::from([a, b, c, d]));
}

#[test]
fn commits_during_a_flush_share_the_next_one() {
    // Flush at once, no waiting for a batch: sharing comes only from the commits that arrive
    // while a flush is in flight.
    const THREADS: u64 = 8;
    const TXNS: u64 = 20;
    let mut dev = Gated::new(4 << 20, 512);
    dev.flush_delay = Duration::from_millis(2);
    let wal = shared_on(dev.boxed(), GroupCommit::immediate());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let wal = wal.clone();
            s.spawn(move || {
                for i in 0..TXNS {
                    let txn = 1 + t * TXNS + i;
                    let u = wal.append(txn, 0, update(txn)).unwrap();
                    let c = wal.append(txn, u, Body::Commit).unwrap();
                    wal.commit_wait(c).unwrap();
                    assert!(wal.durable_lsn() > c);
                }
            });
        }
    });
    let st = wal.stats();
    assert_eq!(st.commits, THREADS * TXNS);
    assert!(
        st.commit_flushes * 2 < st.commits,
        "{} flushes for {} commits",
        st.commit_flushes,
        st.commits
    );
}

#[test]
fn acknowledged_concurrent_commits_survive_a_power_cut() {
    const THREADS: u64 = 6;
    let (mut acked_total, mut cut_short) = (0, 0);
    for seed in 0..12u64 {
        let mut g = rng(seed);
        // 256 KiB of log: no wrap, the buffer is 16 KiB.
        let dev = Volatile::new(2 * 512 + 512 * 512, 512);
        {
            let mut s = dev.0.lock().unwrap();
            // The cut: a flush fails, or every write fails from some point on.
            s.flushes_until_failure = Some(g.random_range(1..40));
        }
        let fail_writes_after = Duration::from_micros(g.random_range(0..20_000));
        let wal = SharedWal::new(Wal::create(dev.boxed(), WalConfig::default()).unwrap());
        let acked: Vec<u64> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..THREADS)
                .map(|t| {
                    let wal = wal.clone();
                    s.spawn(move || {
                        let mut mine = Vec::new();
                        for i in 0..200 {
                            let txn = 1 + t * 1000 + i;
                            let Ok(u) = wal.append(txn, 0, update(txn)) else {
                                break;
                            };
                            let Ok(c) = wal.append(txn, u, Body::Commit) else {
                                break;
                            };
                            match wal.commit_wait(c) {
                                Ok(()) => mine.push(c),
                                Err(_) => break,
                            }
                        }
                        mine
                    })
                })
                .collect();
            if seed % 2 == 0 {
                std::thread::sleep(fail_writes_after);
                dev.0.lock().unwrap().fail_writes = true;
            }
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        drop(wal);
        dev.0.lock().unwrap().fail_writes = false;
        dev.crash(&mut g);
        let found = commits_on(dev.boxed());
        for c in &acked {
            assert!(
                found.contains(c),
                "seed {seed}: acknowledged commit at {c} lost"
            );
        }
        acked_total += acked.len();
        cut_short += usize::from(acked.len() < THREADS as usize * 200);
    }
    // The cuts came while commits were going on.
    assert!(
        acked_total > 0 && cut_short > 6,
        "{acked_total} acked, {cut_short} cut short"
    );
    eprintln!("{acked_total} acknowledged commits, {cut_short} of 12 runs cut short");
}

#[test]
fn a_committer_stalled_on_another_transaction_is_not_waited_for() {
    // Flushes of 60 ms, a delay of 50 ms, every recent committer waited for. Thread A commits
    // (a recent committer), then stalls (as a writer does that waits for a lock held by a
    // committing transaction): this thread's commit does not wait 50 ms for A.
    let wal = waiting_for_every_committer();
    let stalled = Barrier::new(2);
    let done = Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            let c = wal.append(1, 0, Body::Commit).unwrap();
            wal.commit_wait(c).unwrap();
            wal.stall_begin();
            stalled.wait();
            done.wait();
            wal.stall_end();
        });
        stalled.wait();
        let t0 = Instant::now();
        let c = wal.append(2, 0, Body::Commit).unwrap();
        wal.commit_wait(c).unwrap();
        let took = t0.elapsed();
        done.wait();
        assert!(took < Duration::from_millis(100), "{took:?}");
    });
    // Once A is back, it is waited for again: the delay and the flush.
    let t0 = Instant::now();
    let c = wal.append(3, 0, Body::Commit).unwrap();
    wal.commit_wait(c).unwrap();
    assert!(
        t0.elapsed() >= Duration::from_millis(105),
        "{:?}",
        t0.elapsed()
    );
}
