//! Group commit (paper 001 sections 3.2 and 5.1): commits are delayed, up to a maximum delay, so
//! that one log flush makes several of them durable at once.
//!
//! [`SharedWal`] shares a [`Wal`] between threads and runs a leader/follower protocol in
//! [`SharedWal::commit_wait`]: the first committer whose record is not yet durable becomes the
//! leader; once the device is free (no flush in flight) it waits until `min_batch_records`
//! committers are waiting, or `min_share_pct` of the recent committers are, or `max_delay_us`
//! passed (and never longer than a flush takes); then it flushes once for all and wakes the
//! followers.
//!
//! "Recent" committers are the threads that called `commit_wait` within the last eight flush
//! times (at most [`GroupCommit::recent_window_us`]): the workload's concurrent committers,
//! likely to be back soon. A single thread is the only recent committer, so its commits flush
//! at once; the same holds for a virtual-time scheduler running many client tasks on one thread
//! (its tasks can not commit while the thread waits).
//!
//! Why wait for a share of them once the device is free: with closed-loop clients (each commits,
//! waits, works, commits again) a flush that starts the moment the previous one ends finds only
//! the commits appended during that flight; the followers it woke append theirs a moment later
//! and wait for the whole next flush, so each client commits every second flush. Waiting until
//! most recent committers are back puts nearly all of them in every flush; waiting for all of
//! them waits for the slowest (a client between two reads, a thread without a processor). The
//! wait ends on the count, not a timer: a timed sleep of tens of microseconds oversleeps by the
//! kernel's timer slack and the wake-up (50 us and more on this two-core machine), measured in
//! docs/results.md.
//!
//! The decision itself is [`GroupCommit::should_flush`], a pure function, so a virtual-time
//! scheduler can drive the same policy as a steppable task without threads.
//!
//! The flush runs without the log locked, so appends go on during it:
//!
//! 1. Under the lock, the leader takes the buffered bytes (from the tail block of the durable
//!    LSN up to the next LSN: [`Wal::begin_flush`]), marks a flush in flight up to that end
//!    (`State::flushing`) and stops being the leader, then unlocks.
//! 2. It writes and flushes them holding only the log's I/O lock (`FlushJob::run`). Meanwhile
//!    transactions append, the tail block's records included (the buffer keeps that block), and
//!    a committer whose record lies past the flush in flight becomes the next leader: it waits
//!    for the flush in flight to end (one at a time), while its batch gathers behind it. The
//!    thread that ends a flush wakes it first, then the followers (`Inner::turn`).
//! 3. It locks again, publishes the new durable LSN (`Wal::finish_flush`), clears the flag and
//!    wakes the followers.
//!
//! The next flush rewrites the partial tail block with the records appended since. A full log
//! buffer is flushed the same way once a second thread runs operations
//! ([`SharedWal::flush_full`], after the operation whose append filled it). Other paths still
//! flush with the log locked ([`Wal::flush`] / [`Wal::flush_to`]: checkpoints and master
//! writes, eviction's write-ahead rule, a full log buffer with one thread, `Db::flush_log` of
//! the virtual-time scheduler); they wait for a flush in flight through the I/O lock and never
//! write an older tail image over a newer one (`log.rs`). A single thread (or a virtual-time scheduler on one
//! thread) issues the same device writes either way: nothing can append during its flush.

#[cfg(test)]
use std::borrow::Borrow;
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::page::Lsn;
use crate::wal::log::Wal;
#[cfg(test)]
use crate::wal::log::WalStats;
use crate::wal::master::Master;
#[cfg(test)]
use crate::wal::record::{Body, TxnId};

/// Group commit policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GroupCommit {
    /// Longest time a leader waits for more commits, in microseconds.
    pub max_delay_us: u64,
    /// Flush as soon as this many commits are waiting (the leader included).
    pub min_batch_records: u32,
    /// ... or as soon as this share (percent, 1..=100) of the recent committers are.
    pub min_share_pct: u32,
}

impl Default for GroupCommit {
    fn default() -> Self {
        GroupCommit {
            max_delay_us: 1000,
            min_batch_records: 8,
            min_share_pct: 100,
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
            min_share_pct: 100,
        }
    }

    /// Whether a leader that has waited `waited_us`, with `waiting_commits` commits waiting (its
    /// own included) out of `recent` recent committers, should flush now.
    pub fn should_flush(&self, waiting_commits: u32, recent: u32, waited_us: u64) -> bool {
        self.batch_ready(waiting_commits, recent) || waited_us >= self.max_delay_us
    }

    /// Whether enough commits wait, whatever the time: `min_batch_records`, or `min_share_pct`
    /// of the `recent` committers (all of them at 100).
    pub fn batch_ready(&self, waiting_commits: u32, recent: u32) -> bool {
        let share = u64::from(self.min_share_pct.clamp(1, 100));
        waiting_commits >= self.min_batch_records
            || u64::from(waiting_commits) * 100 >= u64::from(recent) * share
    }

    /// The longest a thread counts as a recent committer after its last commit: 50 times the
    /// maximum delay, at least 10 ms (once flushes are timed, eight flush times if shorter:
    /// `RECENT_FLUSHES`).
    pub fn recent_window_us(&self) -> u64 {
        self.max_delay_us.saturating_mul(50).max(10_000)
    }
}

struct State {
    wal: Wal,
    policy: GroupCommit,
    /// A leader is collecting a batch (or waiting for the flush in flight to end).
    leader: bool,
    /// A flush is in flight, without the lock: it makes the records below this LSN durable.
    /// At most one at a time.
    flushing: Option<Lsn>,
    /// Committers that entered `commit_wait` since the last group flush, with a record that was
    /// not durable then: the batch the next flush serves.
    batch: u32,
    /// Last `commit_wait` of each thread.
    recent: HashMap<ThreadId, Instant>,
    /// Threads waiting on `joined` and on each of `flushed`: a commit signals only when someone
    /// waits (a signal is a system call even with no waiter).
    joined_waiters: u32,
    flushed_waiters: [u32; 2],
    /// Flushes started without the lock so far: the one in flight, if any, is number
    /// `started`. Its followers sleep on `flushed[started % 2]`, those of the next flush on the
    /// other: a flush's end wakes only the threads it made durable (and the next leader).
    started: u64,
    /// The leader sleeps on `turn` until the flush in flight ends.
    turn_waiter: bool,
    /// How long a group flush takes, a moving average in nanoseconds: a leader waits for more
    /// committers at most this long (see [`State::batch_wait_us`]).
    flush_ns: u64,
    /// A forced flush ([`SharedWal::force`]) waits for the leader gathering its batch: the
    /// leader flushes at once rather than wait for more committers.
    urgent: bool,
}

impl State {
    /// Whether the record at `lsn` is durable (durability first: a record made durable stays
    /// so, whatever failed since). Else an error if the log failed or no record at `lsn` was
    /// appended (`what` names the caller in the message).
    fn durable_past(&self, lsn: Lsn, what: &str) -> Result<bool> {
        if self.wal.durable_lsn() > lsn {
            return Ok(true);
        }
        self.wal.check_ok()?;
        if lsn >= self.wal.next_lsn() {
            return Err(Error::InvalidArgument(format!(
                "{what}({lsn}): no record at that LSN was appended (next LSN {})",
                self.wal.next_lsn()
            )));
        }
        Ok(false)
    }

    /// The number of the flush to wait for, for the record at `lsn` (not durable yet), with a
    /// flush in flight or a leader: the leader's next flush if the flight does not cover the
    /// record, else the flight (after which the caller looks again).
    fn flush_for(&self, lsn: Lsn) -> u64 {
        debug_assert!(self.flushing.is_some() || self.leader);
        if self.leader && !self.covered(lsn) {
            self.started + 1
        } else {
            self.started
        }
    }

    /// Whether the record at `lsn` is durable or the flush in flight will make it so.
    fn covered(&self, lsn: Lsn) -> bool {
        self.wal.durable_lsn() > lsn || self.flushing.is_some_and(|end| end > lsn)
    }

    /// How long a leader may wait for more committers: the policy's maximum delay, but no longer
    /// than a flush takes. Waiting longer than a flush costs the waiting committers more than a
    /// second flush would (a log in memory or on a fast device flushes in microseconds; a disk
    /// that syncs in milliseconds keeps the whole delay).
    fn batch_wait_us(&self) -> u64 {
        if self.spin_pays() {
            // A flush shorter than a sleep and a wake-up: flushing again costs less than
            // waiting for the next committer would (a log in memory).
            return 0;
        }
        self.policy.max_delay_us.min(self.flush_ns / 1000)
    }

    /// Whether a wait for the flush in flight should spin before it sleeps: only where flushes
    /// end within the spin (a log in memory, a device that syncs in microseconds). A flush that
    /// takes a device round trip outlasts it, and the spin only takes the processor from the
    /// committers that could join the next flush (durable YCSB-A on files, 8 threads on two
    /// cores, docs/results.md twenty-fourth session).
    fn spin_pays(&self) -> bool {
        self.flush_ns <= FOLLOWER_SPIN.as_nanos() as u64
    }

    /// The recent committers at `now` (the threads that committed within the last
    /// [`RECENT_FLUSHES`] flush times, at most [`GroupCommit::recent_window_us`]); older ones
    /// are forgotten.
    fn recent_count(&mut self, now: Instant) -> u32 {
        let mut window = Duration::from_micros(self.policy.recent_window_us());
        if self.flush_ns > 0 {
            // (Before the first flush is timed, the whole window.)
            window = window.min(Duration::from_nanos(
                self.flush_ns.saturating_mul(RECENT_FLUSHES),
            ));
        }
        self.recent.retain(|_, t| now.duration_since(*t) < window);
        u32::try_from(self.recent.len()).unwrap_or(u32::MAX)
    }
}

struct Inner {
    state: Mutex<State>,
    /// The leader waits here for more committers.
    joined: Condvar,
    /// Followers wait here for a flush: on `[n % 2]` for flush number `n` (see
    /// `State::started`).
    flushed: [Condvar; 2],
    /// The next leader waits here for the flush in flight to end: woken first, before the
    /// followers (waking them all takes the ending thread ~20 us on two cores, and the device
    /// idles until the next leader's flush).
    turn: Condvar,
    /// The durable LSN as the last group flush left it: followers spin on it for a moment
    /// before they sleep on `flushed` (a flush to memory or a fast device ends sooner than a
    /// sleep and a wake-up take).
    durable: AtomicU64,
    /// Group flushes ended so far: the next leader spins on it for a moment too.
    flushes: AtomicU64,
    /// An append left a full buffer to be flushed outside the lock ([`SharedWal::flush_full`]).
    full_due: Arc<std::sync::atomic::AtomicBool>,
    /// What [`SharedWal::set_defer_full`] last set, so that a thread's first operation does not
    /// take the log's lock (and wait for whoever holds it) to set it again.
    defer_full: std::sync::atomic::AtomicBool,
    /// Threads waiting for another transaction's end ([`SharedWal::stall_begin`]): they commit
    /// nothing before it, so a gathering leader does not count them among the recent committers
    /// it waits for.
    stalled: AtomicU32,
    /// A leader is waiting on `joined` for more committers.
    gathering: std::sync::atomic::AtomicBool,
}

/// A thread counts as a recent committer for this many flush times after its last commit (and
/// no longer than [`GroupCommit::recent_window_us`]): the clients that commit every flush or two
/// count; a thread that commits now and then does not hold a leader back.
const RECENT_FLUSHES: u64 = 8;

/// How long a follower spins for the flush in flight before it sleeps.
const FOLLOWER_SPIN: Duration = Duration::from_micros(20);

/// A [`Wal`] shared between threads, with group commit. Cloning shares the same log.
#[derive(Clone)]
pub struct SharedWal {
    inner: Arc<Inner>,
}

impl SharedWal {
    /// Shares `wal`, with the group commit policy of its configuration.
    pub fn new(wal: Wal) -> SharedWal {
        let policy = wal.config().group_commit;
        let full_due = wal.full_due_flag();
        SharedWal {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    wal,
                    policy,
                    leader: false,
                    flushing: None,
                    batch: 0,
                    recent: HashMap::new(),
                    joined_waiters: 0,
                    flushed_waiters: [0; 2],
                    started: 0,
                    turn_waiter: false,
                    flush_ns: 0,
                    urgent: false,
                }),
                joined: Condvar::new(),
                flushed: [Condvar::new(), Condvar::new()],
                turn: Condvar::new(),
                durable: AtomicU64::new(0),
                flushes: AtomicU64::new(0),
                full_due,
                defer_full: std::sync::atomic::AtomicBool::new(false),
                stalled: AtomicU32::new(0),
                gathering: std::sync::atomic::AtomicBool::new(false),
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
        self.commit_wait_then(lsn, |_| ())
    }

    /// [`SharedWal::commit_wait`], then `then` with the log still latched (a committer's End
    /// record, appended without taking the latch once more).
    pub fn commit_wait_then(&self, lsn: Lsn, then: impl FnOnce(&mut Wal)) -> Result<()> {
        let mut spun = false;
        let mut g = self.state();
        g.wal.stats_mut().commits += 1;
        if !g.covered(lsn) {
            g.batch += 1;
        }
        let now = Instant::now();
        g.recent.insert(crate::sync::thread_id(), now);
        // Wake a gathering leader only when its batch is ready: each wake-up is a context
        // switch, and the leader would only go back to sleep.
        if g.joined_waiters > 0 && self.ready(&mut g, now) {
            self.inner.joined.notify_all();
        }
        loop {
            // Durability first: a commit whose record is durable has committed, whatever failed
            // since (the handle may be poisoned by another thread's data write).
            if g.durable_past(lsn, "commit_wait")? {
                then(&mut g.wal);
                return Ok(());
            }
            if g.leader || g.covered(lsn) {
                if !spun && g.spin_pays() {
                    // Once per commit: a moment's spin without the latch, then look again.
                    spun = true;
                    drop(g);
                    let until = Instant::now() + FOLLOWER_SPIN;
                    while self.inner.durable.load(Ordering::Acquire) <= lsn
                        && Instant::now() < until
                    {
                        for _ in 0..32 {
                            std::hint::spin_loop();
                        }
                    }
                    g = self.state();
                    continue;
                }
                let n = g.flush_for(lsn);
                g = self.wait_flushed(g, n);
                continue;
            }
            // Lead the next flush.
            g.leader = true;
            let mut free_since = Instant::now();
            // One flush in flight at a time; the batch gathers meanwhile. A moment's spin
            // first, without the latch: the flush in flight often ends sooner than a sleep and
            // a wake-up take.
            if g.flushing.is_some() && g.spin_pays() {
                let seen = self.inner.flushes.load(Ordering::Acquire);
                drop(g);
                let until = Instant::now() + FOLLOWER_SPIN;
                while self.inner.flushes.load(Ordering::Acquire) == seen && Instant::now() < until {
                    for _ in 0..32 {
                        std::hint::spin_loop();
                    }
                }
                // Still the leader: followers that came meanwhile wait for this thread.
                g = self.state();
            }
            // The delay counts from when the device is free: time spent waiting for the flight
            // is not time the device idles for the batch.
            while g.flushing.is_some() {
                g.turn_waiter = true;
                g = self.inner.turn.wait(g).unwrap_or_else(|e| e.into_inner());
                g.turn_waiter = false;
                free_since = Instant::now();
            }
            loop {
                // Raised before the look at the stalled count: a thread that stalls after the
                // look sees it raised and wakes this leader (`stall_begin`).
                self.inner.gathering.store(true, Ordering::SeqCst);
                let now = Instant::now();
                let waited_us = now.duration_since(free_since).as_micros() as u64;
                let recent = self.expected(&mut g, now);
                let policy = GroupCommit {
                    max_delay_us: g.batch_wait_us(),
                    ..g.policy
                };
                if g.urgent || policy.should_flush(g.batch, recent, waited_us) {
                    break;
                }
                let left = Duration::from_micros(policy.max_delay_us - waited_us);
                g.joined_waiters += 1;
                g = match self.inner.joined.wait_timeout(g, left) {
                    Ok((guard, _)) => guard,
                    Err(e) => e.into_inner().0,
                };
                g.joined_waiters -= 1;
            }
            self.inner.gathering.store(false, Ordering::SeqCst);
            // The flush of the batch (and of whatever else is buffered).
            debug_assert!(g.flushing.is_none());
            g.leader = false;
            g.urgent = false;
            let job = match g.wal.begin_flush() {
                Ok(Some(job)) => job,
                // Made durable meanwhile by a flush with the log locked (a checkpoint, an
                // eviction), or the log failed: the loop tells. Followers re-check too.
                other => {
                    self.wake_all(&g);
                    other?;
                    continue;
                }
            };
            debug_assert!(
                job.end() > lsn,
                "a flush from the next LSN covers this commit"
            );
            g.batch = 0;
            // Every committer waiting now appended its record before, so this flush covers it:
            // none is left to lead, and a committer that comes during the flush leads the next.
            let r;
            (g, r) = self.run_flush(g, job, true);
            g.wal.stats_mut().commit_flushes += 1;
            r?;
        }
    }

    /// The committers a gathering leader may still expect at `now`: the recent ones, less the
    /// threads stalled on another transaction's end.
    fn expected(&self, g: &mut State, now: Instant) -> u32 {
        let stalled = self.inner.stalled.load(Ordering::SeqCst);
        g.recent_count(now).saturating_sub(stalled)
    }

    /// Whether a gathering leader's batch is ready at `now` (see [`GroupCommit::batch_ready`]).
    fn ready(&self, g: &mut State, now: Instant) -> bool {
        let expected = self.expected(g, now);
        g.policy.batch_ready(g.batch, expected)
    }

    /// The calling thread is about to wait for another transaction's end (a record lock it
    /// holds; it ends once its commit is durable, at the earliest): until
    /// [`SharedWal::stall_end`] it commits nothing, so a gathering leader stops waiting for it
    /// (and is woken if that makes its batch ready). Without it, a leader whose transaction
    /// held the lock the recent committers waited for waited for them until its delay ran out
    /// (durable YCSB-A over 10 records at 8 threads: 15-20% fewer operations).
    pub fn stall_begin(&self) {
        self.inner.stalled.fetch_add(1, Ordering::SeqCst);
        if self.inner.gathering.load(Ordering::SeqCst) {
            let mut g = self.state();
            if g.joined_waiters > 0 && self.ready(&mut g, Instant::now()) {
                self.inner.joined.notify_all();
            }
        }
    }

    /// The end of a wait [`SharedWal::stall_begin`] announced.
    pub fn stall_end(&self) {
        self.inner.stalled.fetch_sub(1, Ordering::SeqCst);
    }

    /// Runs `job` (taken from the log under `g`) with the log unlocked, marked as the flush in
    /// flight, then publishes its outcome and wakes whoever waits for a flush. A `commit`
    /// flush's time goes into the average a leader's wait is bounded by (a full buffer's
    /// flush, larger, does not).
    fn run_flush<'a>(
        &'a self,
        mut g: MutexGuard<'a, State>,
        job: crate::wal::log::FlushJob,
        commit: bool,
    ) -> (MutexGuard<'a, State>, Result<()>) {
        debug_assert!(g.flushing.is_none(), "one flush in flight at a time");
        g.flushing = Some(job.end());
        g.started += 1;
        g.urgent = false;
        drop(g);
        let unwind = ClearFlushing(self);
        let started = Instant::now();
        let done = job.run();
        let took = started.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
        let mut g = self.state();
        std::mem::forget(unwind);
        // A quarter of the newest flush: a device that slows down is followed within a few.
        if commit {
            g.flush_ns = if g.flush_ns == 0 {
                took
            } else {
                (g.flush_ns * 3 + took) / 4
            };
        }
        let r = g.wal.finish_flush(done);
        g.flushing = None;
        if g.wal.full() {
            // Appends during the flight filled the buffer again: the next operation to end
            // writes it.
            self.inner.full_due.store(true, Ordering::Relaxed);
        }
        self.inner
            .durable
            .store(g.wal.durable_lsn(), Ordering::Release);
        self.inner.flushes.fetch_add(1, Ordering::Release);
        if g.turn_waiter {
            self.inner.turn.notify_one();
        }
        let n = g.started as usize % 2;
        if g.flushed_waiters[n] > 0 {
            self.inner.flushed[n].notify_all();
        }
        (g, r)
    }

    /// Makes the log durable past `lsn` (every record starting at or below it) with the log
    /// unlocked while it writes, as a group-commit leader does: appends go on meanwhile. For a
    /// page write that runs with no latch held (the write-ahead rule; out of place and
    /// journaled, the location records a write logs). A flush in flight, or a leader gathering
    /// its batch, is waited for (its flush takes every record appended before it; a gathering
    /// leader is told to flush at once); otherwise this thread flushes everything buffered. One
    /// thread issues the same device writes as [`Wal::flush_to`] with the log locked. Unlike
    /// `flush_to`, an LSN at or past the next one is refused (`InvalidArgument`): a page write
    /// only forces records already appended.
    pub fn force(&self, lsn: Lsn) -> Result<()> {
        let mut g = self.state();
        loop {
            if g.durable_past(lsn, "force")? {
                return Ok(());
            }
            if g.flushing.is_some() || g.leader {
                if g.leader && g.flushing.is_none() {
                    // Gathering committers: this page write's force should not wait for them.
                    g.urgent = true;
                    if g.joined_waiters > 0 {
                        self.inner.joined.notify_all();
                    }
                }
                let n = g.flush_for(lsn);
                g = self.wait_flushed(g, n);
                continue;
            }
            let Some(job) = g.wal.begin_flush()? else {
                // Nothing buffered, yet not durable past `lsn`: cannot happen for an LSN
                // below the next one; the loop's checks above would have returned.
                return Err(Error::Poisoned(format!(
                    "internal: the log has nothing to flush yet is not durable past {lsn}"
                )));
            };
            let r;
            (g, r) = self.run_flush(g, job, false);
            r?;
        }
    }

    /// Whether the record at `lsn` is durable, by the group flushes' published watermark with
    /// no lock (a flush made with the log locked may have gone further: `false` then only
    /// means "ask [`SharedWal::force`]").
    pub fn surely_durable(&self, lsn: Lsn) -> bool {
        self.inner.durable.load(Ordering::Acquire) > lsn
    }

    /// Makes every record appended so far durable, as [`SharedWal::force`] does (the write with
    /// the log unlocked: appends and commits go on meanwhile), and returns the durable LSN.
    /// `Db::flush_log` (the background thread's flush of buffered commits, every step) held
    /// the log locked across the write and the device's flush, and every commit and update
    /// waited for it.
    pub fn flush_all(&self) -> Result<Lsn> {
        let next = self.state().wal.next_lsn();
        if next > 0 {
            self.force(next - 1)?;
        }
        Ok(self.state().wal.durable_lsn())
    }

    /// Points the master at checkpoint record `m.checkpoint_lsn` (durable already: see
    /// [`SharedWal::force`]) and moves the log's start, writing the master copy with the log
    /// unlocked: appends go on meanwhile, and group flushes wait only for the device (the I/O
    /// lock). The new start takes effect once the copy is durable. One at a time (a checkpoint
    /// holds its writer's ticket); a failure has poisoned the log.
    pub fn set_master(&self, m: Master) -> Result<()> {
        let job = self.state().wal.begin_master(m)?;
        let done = job.run();
        self.state().wal.finish_master(done)
    }

    /// Lets appends that fill the log buffer leave its flush to [`SharedWal::flush_full`]
    /// (see [`Wal::set_defer_full`]): set once a second thread runs operations.
    pub fn set_defer_full(&self, on: bool) {
        if self.inner.defer_full.load(Ordering::Acquire) == on {
            return;
        }
        let mut g = self.state();
        g.wal.set_defer_full(on);
        self.inner.defer_full.store(on, Ordering::Release);
    }

    /// Flushes a full log buffer an append left behind, with the log unlocked (appends go on
    /// meanwhile), unless another flush is in flight (it or the next takes these bytes). Call
    /// it holding no latch: one atomic load when there is nothing to do. An error has
    /// poisoned the log; it is returned too.
    #[inline]
    pub fn flush_full(&self) -> Result<()> {
        if !self.inner.full_due.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.flush_full_now()
    }

    #[cold]
    #[inline(never)]
    fn flush_full_now(&self) -> Result<()> {
        // One thread takes each raised flag; the others go on at once.
        if !self.inner.full_due.swap(false, Ordering::Relaxed) {
            return Ok(());
        }
        let mut g = self.state();
        if g.flushing.is_some() || g.leader || !g.wal.full() {
            // The flush in flight raises the flag again at its end if the buffer is still
            // full; a leader's flush takes everything.
            return Ok(());
        }
        let Some(job) = g.wal.begin_flush()? else {
            return Ok(());
        };
        g.wal.stats_mut().buffer_full_flushes += 1;
        g.wal.stats_mut().buffer_full_unlatched += 1;
        let (g, r) = self.run_flush(g, job, false);
        drop(g);
        r
    }

    /// Waits for the end of flush number `n` (the one in flight or the next; or for any
    /// thread that finds nothing to flush or a failed log: they wake every waiter).
    fn wait_flushed<'a>(&'a self, mut g: MutexGuard<'a, State>, n: u64) -> MutexGuard<'a, State> {
        debug_assert!(n == g.started || n == g.started + 1);
        let n = n as usize % 2;
        g.flushed_waiters[n] += 1;
        let mut g = self.inner.flushed[n]
            .wait(g)
            .unwrap_or_else(|e| e.into_inner());
        g.flushed_waiters[n] -= 1;
        g
    }

    /// Wakes every thread waiting for a flush, whichever.
    fn wake_all(&self, g: &State) {
        for n in 0..2 {
            if g.flushed_waiters[n] > 0 {
                self.inner.flushed[n].notify_all();
            }
        }
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

/// Clears the flush-in-flight flag if the flushing thread unwinds (a panic in the device), so
/// that the others do not wait for it forever (they find the log as the panic left it).
struct ClearFlushing<'a>(&'a SharedWal);

impl Drop for ClearFlushing<'_> {
    fn drop(&mut self) {
        let mut g = self.0.state();
        g.flushing = None;
        self.0.inner.turn.notify_all();
        for cv in &self.0.inner.flushed {
            cv.notify_all();
        }
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
