//! Group commit (paper 001 sections 3.2 and 5.1): commits are delayed, up to a maximum delay, so
//! that one log flush makes several of them durable at once.
//!
//! [`SharedWal`] shares a [`Wal`] between threads and runs a leader/follower protocol in
//! [`SharedWal::commit_wait`]: the first committer whose record is not yet durable becomes the
//! leader; it waits until `min_batch_records` committers are waiting, or no other committer is
//! expected, or `max_delay_us` passed; then it flushes once for all and wakes the followers.
//!
//! "Expected" committers are the threads that called `commit_wait` recently (within
//! [`GroupCommit::recent_window_us`]) and are not waiting now: they are the workload's concurrent
//! committers, likely to be back soon. A single thread never expects anyone but itself, so its
//! commits flush at once; the same holds for a virtual-time scheduler running many client tasks
//! on one thread (its tasks can not commit while the thread waits).
//!
//! The decision itself is [`GroupCommit::should_flush`], a pure function, so a virtual-time
//! scheduler can drive the same policy as a steppable task without threads.
//!
//! The flush runs with the log locked, so appends wait for it; the next batch forms behind it.

#[cfg(test)]
use std::borrow::Borrow;
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::page::Lsn;
use crate::wal::log::Wal;
#[cfg(test)]
use crate::wal::log::WalStats;
#[cfg(test)]
use crate::wal::record::{Body, TxnId};

/// Group commit policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GroupCommit {
    /// Longest time a leader waits for more commits, in microseconds.
    pub max_delay_us: u64,
    /// Flush as soon as this many commits are waiting (the leader included).
    pub min_batch_records: u32,
}

impl Default for GroupCommit {
    fn default() -> Self {
        GroupCommit {
            max_delay_us: 1000,
            min_batch_records: 8,
        }
    }
}

impl GroupCommit {
    #[cfg(test)]
    /// Every commit flushes at once.
    pub fn immediate() -> GroupCommit {
        GroupCommit {
            max_delay_us: 0,
            min_batch_records: 1,
        }
    }

    /// Whether a leader that has waited `waited_us`, with `waiting_commits` commits waiting (its
    /// own included), should flush now; `others_expected` says whether any other committer is
    /// expected to join.
    pub fn should_flush(
        &self,
        waiting_commits: u32,
        others_expected: bool,
        waited_us: u64,
    ) -> bool {
        waiting_commits >= self.min_batch_records
            || !others_expected
            || waited_us >= self.max_delay_us
    }

    /// How long a thread counts as a concurrent committer after its last commit: 50 times the
    /// maximum delay, at least 10 ms.
    pub fn recent_window_us(&self) -> u64 {
        self.max_delay_us.saturating_mul(50).max(10_000)
    }
}

struct State {
    wal: Wal,
    policy: GroupCommit,
    /// A leader is collecting a batch or flushing.
    leader: bool,
    /// Committers that entered `commit_wait` since the last group flush, with a record that was
    /// not durable then: the batch the next flush serves.
    batch: u32,
    /// Last `commit_wait` of each thread.
    recent: HashMap<ThreadId, Instant>,
}

impl State {
    /// Whether a recent committer is not waiting now (and so may still join the batch).
    fn others_expected(&mut self, now: Instant) -> bool {
        let window = Duration::from_micros(self.policy.recent_window_us());
        self.recent.retain(|_, t| now.duration_since(*t) < window);
        self.recent.len() > self.batch as usize
    }
}

struct Inner {
    state: Mutex<State>,
    /// The leader waits here for more committers.
    joined: Condvar,
    /// Followers wait here for the leader's flush.
    flushed: Condvar,
}

/// A [`Wal`] shared between threads, with group commit. Cloning shares the same log.
#[derive(Clone)]
pub struct SharedWal {
    inner: Arc<Inner>,
}

impl SharedWal {
    /// Shares `wal`, with the group commit policy of its configuration.
    pub fn new(wal: Wal) -> SharedWal {
        let policy = wal.config().group_commit;
        SharedWal {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    wal,
                    policy,
                    leader: false,
                    batch: 0,
                    recent: HashMap::new(),
                }),
                joined: Condvar::new(),
                flushed: Condvar::new(),
            }),
        }
    }

    /// The state, even if a thread panicked while holding it (the log keeps its own poison flag
    /// for I/O errors, and the group state is consistent at every unlock).
    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Exclusive access to the log. Do not hold it across [`SharedWal::commit_wait`].
    pub fn lock(&self) -> WalGuard<'_> {
        WalGuard(self.state())
    }

    #[cfg(test)]
    /// Appends a record (see [`Wal::append`]).
    pub fn append(&self, txn: TxnId, prev_lsn: Lsn, body: impl Borrow<Body>) -> Result<Lsn> {
        self.state().wal.append(txn, prev_lsn, body)
    }

    /// Returns once the record at `lsn` (a commit record) is durable, flushing as the leader of a
    /// group or waiting for the current leader's flush.
    pub fn commit_wait(&self, lsn: Lsn) -> Result<()> {
        let mut g = self.state();
        g.wal.stats_mut().commits += 1;
        if g.wal.durable_lsn() <= lsn {
            g.batch += 1;
        }
        g.recent.insert(std::thread::current().id(), Instant::now());
        self.inner.joined.notify_all();
        let res = loop {
            // Durability first: a commit whose record is durable has committed, whatever failed
            // since (the handle may be poisoned by another thread's data write).
            if g.wal.durable_lsn() > lsn {
                break Ok(());
            }
            if let Err(e) = g.wal.check_ok() {
                break Err(e);
            }
            if lsn >= g.wal.next_lsn() {
                break Err(Error::InvalidArgument(format!(
                    "commit_wait({lsn}): no record at that LSN was appended (next LSN {})",
                    g.wal.next_lsn()
                )));
            }
            if g.leader {
                g = self
                    .inner
                    .flushed
                    .wait(g)
                    .unwrap_or_else(|e| e.into_inner());
                continue;
            }
            g.leader = true;
            let t0 = Instant::now();
            loop {
                let now = Instant::now();
                let waited_us = now.duration_since(t0).as_micros() as u64;
                let others = g.others_expected(now);
                if g.policy.should_flush(g.batch, others, waited_us) {
                    break;
                }
                let left = Duration::from_micros(g.policy.max_delay_us - waited_us);
                g = match self.inner.joined.wait_timeout(g, left) {
                    Ok((guard, _)) => guard,
                    Err(e) => e.into_inner().0,
                };
            }
            let r = g.wal.flush();
            g.wal.stats_mut().commit_flushes += 1;
            g.batch = 0;
            g.leader = false;
            self.inner.flushed.notify_all();
            if let Err(e) = r {
                break Err(e);
            }
        };
        res
    }

    #[cfg(test)]
    pub fn stats(&self) -> WalStats {
        self.state().wal.stats()
    }

    #[cfg(test)]
    pub fn durable_lsn(&self) -> Lsn {
        self.state().wal.durable_lsn()
    }
}

/// Exclusive access to a [`SharedWal`]'s log; dereferences to [`Wal`].
pub struct WalGuard<'a>(MutexGuard<'a, State>);

impl Deref for WalGuard<'_> {
    type Target = Wal;
    fn deref(&self) -> &Wal {
        &self.0.wal
    }
}

impl DerefMut for WalGuard<'_> {
    fn deref_mut(&mut self) -> &mut Wal {
        &mut self.0.wal
    }
}
