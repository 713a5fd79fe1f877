//! The latches over one open database, as the `Db` and `Txn` handles hold them ([`Shared`]):
//! the core latch (exclusive, shared, and shared with misses read outside it), the log latch
//! beside it, and the wait for a transaction's end. The protocol is in the notes of
//! `engine/mod.rs` and docs/engine.md ("Latching").

use super::{Core, CoreGuard, CoreRead};
use crate::cache::Reserved;
use crate::health::Health;
use crate::txn_table::TxnAge;
use crate::wal::record::TxnId;
use crate::wal::SharedWal;
use crate::writepath::SharedLog;
use crossbeam_utils::sync::ShardedLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// Pages an operation on one key reads with the core latch released before it runs exclusive
/// (see [`Shared::shared_op`]): a descent of a cold tree reads a page per level.
pub(crate) const POINT_READS: usize = 8;
/// The same for a scan, which starts over after each page it reads (over pages now cached): a
/// short scan's descent and leaves. With one thread a long scan of pages not in memory then
/// runs exclusive (one pass); with several it goes on in parts, each given this many pages
/// ([`Shared::scan_shared_op`]). It was 2 until the twentieth session: then a third of
/// YCSB-E's scans with misses took the core latch exclusive, and two threads ran no faster
/// than one (docs/results.md).
pub(crate) const SCAN_READS: usize = 8;

/// Threads writing pages with the core latch released, holding the write path's mutex, that may
/// take the log latch meanwhile (a detached batch of a checkpoint, the page cleaner or the
/// misses; a dirty victim in place; the write path's own background work): each holds a
/// [`Ticket`], taken with the core latch held. Every other thread takes the log latch before
/// the write path's mutex (with the core latch exclusive: a victim written out of place, a
/// checkpoint's end), so the core latch is taken exclusive only while no ticket is out
/// ([`Shared::core`]): such a thread never waits for the write path's mutex while a ticket
/// holder waits for its log latch. One exception, [`Shared::core_beside_writers`]: a miss's
/// reservation of a clean frame ([`crate::cache::PageCache::reserve_clean`]), which takes no
/// copy, no ticket, no write path's mutex and no log latch, and waits for nothing; its guard
/// gives nothing else. A ticket holder never takes the core latch exclusive.
/// Since every batch's copies are taken with the core latch exclusive, this also keeps any
/// other write of a batch's pages from coming between its copies and its write, which the
/// log latch, held from the copies to the end of the write, did before.
#[derive(Default)]
pub(crate) struct Writers {
    out: AtomicUsize,
    /// Threads that found tickets out when they came for the core latch exclusive and have
    /// not had it yet ([`Writers::give_way`]).
    waiting: AtomicUsize,
    lock: Mutex<()>,
    done: Condvar,
}

/// The core latch exclusive beside tickets out ([`Shared::core_beside_writers`]).
struct BesideWriters<'a>(CoreGuard<'a>);

impl BesideWriters<'_> {
    /// [`crate::cache::PageCache::reserve_clean`], the latch let go before it returns: the
    /// reservation and the write path to read the page with, or `None` (reserve as usual).
    /// It logs nothing and forces nothing (a clean victim): the log latch is taken only to
    /// look at its ends, so ticket holders' location records and forces go on meanwhile.
    fn reserve_clean(
        mut self,
        wal: &SharedWal,
        pid: crate::page::PageId,
    ) -> Option<(Reserved, crate::cache::SharedWritePath)> {
        let c = &mut *self.0;
        c.check().ok()?;
        let mut log = crate::writepath::DurableLog::of(&*wal.lock());
        let health = c.health.clone();
        let r = c.cache.reserve_clean(pid, &mut log, &health)?;
        Some((r, std::sync::Arc::clone(&c.cache.wp)))
    }
}

/// One writer of [`Writers`], out until dropped.
pub(crate) struct Ticket<'a>(&'a Writers);

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if self.0.out.fetch_sub(1, Ordering::SeqCst) == 1 {
            let _g = crate::sync::lock(&self.0.lock);
            self.0.done.notify_all();
        }
    }
}

impl Writers {
    /// A ticket for a page write about to run with the core latch let go; `_core` is the proof
    /// that the latch is held exclusive while it is taken (the copies are taken there too).
    pub fn enter(&self, _core: &mut Core) -> Ticket<'_> {
        self.out.fetch_add(1, Ordering::SeqCst);
        Ticket(self)
    }

    fn none(&self) -> bool {
        self.out.load(Ordering::SeqCst) == 0
    }

    /// Before a ticket holder that steps again at once takes the core latch for its next
    /// ticket (background work in steps, `WritePath::maintain_beside`): waits, holding
    /// nothing, up to [`GIVE_WAY`], while threads that found tickets out wait for the latch
    /// exclusive, so that they have it between two steps rather than the stepping thread,
    /// awake already, taking it back before them step after step.
    pub fn give_way(&self) {
        let deadline = std::time::Instant::now() + GIVE_WAY;
        while self.waiting.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
    }

    /// Waits until no ticket is out (holding no latch).
    fn wait_none(&self) {
        if self.none() {
            return;
        }
        let mut g = crate::sync::lock(&self.lock);
        while !self.none() {
            g = self.done.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The longest a stepping ticket holder gives way to waiting exclusive takers
/// ([`Writers::give_way`]).
const GIVE_WAY: std::time::Duration = std::time::Duration::from_millis(5);

/// How long a write (or a tree's creation) waits, in all, for other threads' transactions to
/// free the log ([`Shared::exclusive_log_wait`]).
pub(crate) const LOG_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// What `Db` and `Txn` handles share.
pub(crate) struct Shared {
    core: ShardedLock<Core>,
    /// Page writes under way with the core latch released ([`Writers`]).
    pub(super) writers: Writers,
    /// Held by a whole checkpoint run with its page writes outside the core latch
    /// (`Shared::checkpoint`, `Shared::make_log_space`) from before it takes the core latch to
    /// its end, and by each maintenance step (`Shared::maintenance`, whose background
    /// checkpoint advances a batch a step): one at a time. A thread that finds one due while
    /// another runs waits for it, holding no latch, and looks again, rather than run a second
    /// one beside it over the same dirty pages. First in the lock order. (A checkpoint run
    /// inside an exclusive operation, `Checkpointer::ensure_log_space`, does not take it: it
    /// holds the core latch throughout, and may come between two batches of one of these.)
    pub(super) checkpointing: Mutex<()>,
    pub wal: SharedWal,
    pub health: Health,
    /// [`crate::DbConfig::durable_commits`].
    pub durable_commits: bool,
    /// [`crate::DbConfig::wait_for_running_holders`].
    wait_for_running: bool,
    /// Threads waiting for any transaction to end (for log space, or for a scan's tree).
    ended: EndWait,
    /// A shared change found a checkpoint due and left it to the end of its transaction
    /// (`Checkpointer::want`): [`Shared::run_wanted_checkpoint`] runs it.
    checkpoint_wanted: Arc<AtomicBool>,
    /// Threads waiting for a committing holder of a record lock to end, by the holder's id
    /// (`holder % COMMITTER_STRIPES`): an end wakes only the waiters of its stripe.
    committer_ends: Box<[EndWait]>,
    /// The log record of the newest tree creation (0: none since open). A creation forces the
    /// log with no latch held, after the tree is in the catalog: a lookup that finds it
    /// (`Db::open_tree`, `Db::tree_names`, a creation refused as `TreeExists`) forces the log
    /// past this first, so no caller learns of a tree a crash could still take back.
    pub created_lsn: AtomicU64,
    /// The core's version store, for the undo blocks a write leaves to be written with no
    /// latch held ([`Shared::write_undo_blocks`]).
    versions: Option<Arc<crate::mvcc::Versions>>,
}

/// Stripes of [`Shared::committer_ends`].
const COMMITTER_STRIPES: usize = 16;

/// A place to wait for transaction ends: waiters register, and an end signals only while some
/// are registered (a commit with no one waiting makes no system call).
#[derive(Default)]
struct EndWait {
    waiters: AtomicUsize,
    /// Ends seen by waiters (raised under `lock`).
    epoch: AtomicU64,
    lock: Mutex<()>,
    cv: Condvar,
}

impl EndWait {
    fn notify(&self) {
        if self.waiters.load(Ordering::SeqCst) > 0 {
            let _g = crate::sync::lock(&self.lock);
            self.epoch.fetch_add(1, Ordering::SeqCst);
            self.cv.notify_all();
        }
    }

    /// Waits until an end after `seen` (an epoch read after registering) or `timeout`.
    fn wait(&self, g: std::sync::MutexGuard<'_, ()>, seen: u64, timeout: std::time::Duration) {
        let r = self
            .cv
            .wait_timeout_while(g, timeout, |_| self.epoch.load(Ordering::SeqCst) == seen);
        drop(r);
    }
}

impl Drop for Shared {
    /// The last handle is gone: commits that did not wait for the log are made durable
    /// (best effort: a failed log or a cut power loses them, as a crash would).
    fn drop(&mut self) {
        if !self.durable_commits && self.health.check().is_ok() {
            let _ = self.wal.lock().flush();
        }
    }
}

impl Shared {
    pub fn new(core: Core, wal: SharedWal) -> Shared {
        let health = core.health.clone();
        let durable_commits = core.cfg.durable_commits;
        let wait_for_running = core.cfg.wait_for_running_holders;
        let checkpoint_wanted = core.checkpointer.wanted_flag();
        let versions = core.versions.clone();
        Shared {
            versions,
            checkpoint_wanted,
            durable_commits,
            wait_for_running,
            writers: Writers::default(),
            checkpointing: Mutex::new(()),
            core: ShardedLock::new(core),
            wal,
            health,
            ended: EndWait::default(),
            committer_ends: (0..COMMITTER_STRIPES).map(|_| EndWait::default()).collect(),
            created_lsn: AtomicU64::new(0),
        }
    }

    /// Makes the newest tree creation durable (see [`Shared::created_lsn`]), with no latch
    /// held: one atomic load or two when it is already. An error has poisoned the handle.
    pub fn trees_durable(&self) -> crate::error::Result<()> {
        let lsn = self.created_lsn.load(Ordering::Acquire);
        if lsn == 0 || self.wal.surely_durable(lsn) {
            return Ok(());
        }
        self.wal.force(lsn).inspect_err(|e| self.health.poison(e))
    }

    /// Flushes a full log buffer that an append left behind (with several threads, appends do
    /// not write it with the log locked: `Wal::set_defer_full`), with no latch held. Called
    /// after operations, holding nothing. A failed flush has poisoned the handle, which the
    /// next operation reports; an append that finds the buffer four times full writes it
    /// itself.
    #[inline]
    pub fn flush_full_log(&self) {
        let _ = self.wal.flush_full();
    }

    /// Writes the undo blocks `txn`'s last write completed and left in memory
    /// (`VersionStore::write_completed`), holding no latch: readers of the leaf it changed do
    /// not wait for the undo device. Called after each write operation; nothing to do without
    /// a version store, or on a poisoned handle (which writes nothing more). A failed write
    /// poisons the handle (as one in the write itself did): the write went through, the next
    /// operation reports the error.
    #[inline]
    pub fn write_undo_blocks(&self, txn: TxnId) {
        if let Some(v) = &self.versions {
            if self.health.check().is_err() {
                return;
            }
            if let Err(e) = v.write_completed(txn) {
                self.health.poison(&e);
            }
        }
    }

    /// Runs the checkpoint a shared change found due and left to the end of its transaction
    /// (`Core::shared_log_space_ok`), if one is: called once a transaction has ended, holding
    /// no latch and no lock. One atomic load when there is none. An error has poisoned the
    /// handle; the next operation reports it.
    #[inline]
    pub fn run_wanted_checkpoint(&self) {
        // Not from a rollback while the thread unwinds (a `Txn` dropped by a panic): the flag
        // stays up for the next transaction's end.
        if self.checkpoint_wanted.load(Ordering::Relaxed)
            && !std::thread::panicking()
            && self.checkpoint_wanted.swap(false, Ordering::Relaxed)
        {
            self.make_log_space(&[], None);
        }
    }

    /// Wakes the threads waiting for a transaction to end, and those waiting for transaction
    /// `id` in particular, if any.
    pub fn notify_ended(&self, id: TxnId) {
        self.ended.notify();
        self.committer_ends[id as usize % COMMITTER_STRIPES].notify();
    }

    /// After an operation of transaction `me` (of age `my_age`) was refused a record lock that
    /// `holder` held: whether to run it again. With no latch held, waits for `holder`'s end, at
    /// most until `deadline`, if it is committing on another thread (it releases its locks once
    /// its commit is durable, and waits for no lock meanwhile) or running on another thread and
    /// younger than `me` (wait-die by age, then id, a total order: a transaction waits only for
    /// running ones younger than it, so waits for running holders form no cycle, and a chain of
    /// them ends at a holder that waits for nothing or only for a committer). False (the
    /// refusal stands) if `holder` ran its latest operation on this thread (this thread would
    /// have to end it), is older, or the deadline passed.
    pub fn wait_for_holder(
        &self,
        (me, my_age): (TxnId, TxnAge),
        holder: TxnId,
        deadline: std::time::Instant,
    ) -> bool {
        use crate::txn_table::Holder;
        // Registered, and the epoch read, before the look: an end after the look wakes it.
        let ends = &self.committer_ends[holder as usize % COMMITTER_STRIPES];
        ends.waiters.fetch_add(1, Ordering::SeqCst);
        let seen = ends.epoch.load(Ordering::SeqCst);
        let found = self.core_read().txns.holder(holder);
        let now = std::time::Instant::now();
        let again = now < deadline
            && match found {
                Holder::Active => false,
                Holder::Running { age } if (my_age, me) > (age, holder) => false,
                Holder::Running { .. } if !self.wait_for_running => false,
                Holder::Gone => {
                    // Ended; its locks go back in a moment.
                    std::thread::yield_now();
                    true
                }
                Holder::Committing | Holder::Running { .. } => {
                    // No commit of this thread's before that end: not one a gathering
                    // group-commit leader should wait for.
                    self.wal.stall_begin();
                    ends.wait(crate::sync::lock(&ends.lock), seen, deadline - now);
                    self.wal.stall_end();
                    std::time::Instant::now() < deadline
                }
            };
        ends.waiters.fetch_sub(1, Ordering::SeqCst);
        again
    }

    /// With no latch held and no lock (the caller's transaction has ended), waits up to
    /// `timeout` for `holder` to end, if it runs or commits on another thread (one of this
    /// thread's own could not end meanwhile; a running one only where running holders are
    /// waited for at all, [`crate::DbConfig::wait_for_running_holders`]).
    pub fn wait_for_end(&self, holder: TxnId, timeout: std::time::Duration) {
        use crate::txn_table::Holder;
        let deadline = std::time::Instant::now() + timeout;
        let ends = &self.committer_ends[holder as usize % COMMITTER_STRIPES];
        loop {
            ends.waiters.fetch_add(1, Ordering::SeqCst);
            let seen = ends.epoch.load(Ordering::SeqCst);
            let found = self.core_read().txns.holder(holder);
            let now = std::time::Instant::now();
            // A driver that runs its transactions one at a time (no waits for running holders)
            // could not run the holder while this one waits.
            let wait = now < deadline
                && match found {
                    Holder::Running { .. } => self.wait_for_running,
                    Holder::Committing => true,
                    Holder::Active | Holder::Gone => false,
                };
            if wait {
                ends.wait(crate::sync::lock(&ends.lock), seen, deadline - now);
            }
            ends.waiters.fetch_sub(1, Ordering::SeqCst);
            if !wait {
                return;
            }
        }
    }

    /// Runs `f` with the core latch exclusive, for transaction `me` (0: none, a tree's
    /// creation). If the log is full because another thread's transaction holds its start,
    /// waits for transactions to end (the core latch released meanwhile, up to [`LOG_WAIT`] in
    /// all) and runs `f` again, rather than fail: that transaction's end frees the log. Then
    /// flushes a full log buffer left behind, holding nothing.
    pub fn exclusive_log_wait<R>(
        &self,
        me: TxnId,
        mut f: impl FnMut(&mut Core, &mut crate::wal::Wal) -> crate::error::Result<R>,
    ) -> crate::error::Result<R> {
        let mut core = self.core();
        let started = std::time::Instant::now();
        loop {
            let r = {
                let mut wal = self.wal.lock();
                f(&mut core, &mut wal)
            };
            match r {
                Err(crate::error::Error::LogFull(_))
                    if started.elapsed() < LOG_WAIT && core.log_pinned_by_another_thread(me) =>
                {
                    core = self.wait_for_an_end(core, std::time::Duration::from_millis(10));
                }
                r => {
                    drop(core);
                    self.flush_full_log();
                    return r;
                }
            }
        }
    }

    /// Releases the core latch until a transaction ends or `timeout` passes, then takes it back.
    /// The waiter registers before it lets the latch go, so an end that comes in between wakes
    /// it (ends happen under the core latch, shared or exclusive).
    pub fn wait_for_an_end<'a>(
        &'a self,
        guard: CoreGuard<'a>,
        timeout: std::time::Duration,
    ) -> CoreGuard<'a> {
        let ends = &self.ended;
        ends.waiters.fetch_add(1, Ordering::SeqCst);
        let g = crate::sync::lock(&ends.lock);
        let seen = ends.epoch.load(Ordering::SeqCst);
        drop(guard);
        ends.wait(g, seen, timeout);
        ends.waiters.fetch_sub(1, Ordering::SeqCst);
        self.core()
    }

    /// [`Shared::shared_op`] for a scan, in parts with several threads (see
    /// [`super::scan::ScanParts`]): each round of up to [`SCAN_READS`] pages goes on after the
    /// pairs the rounds before it kept, and a round that kept none more runs the scan exclusive
    /// (`None`). With one thread a single round, the scan started over after each page, as
    /// before.
    pub fn scan_shared_op<T>(
        &self,
        mut attempt: impl FnMut(&Core, &mut super::scan::ScanParts) -> Option<T>,
    ) -> Option<T> {
        let mut parts = super::scan::ScanParts::default();
        loop {
            let kept = parts.parts();
            // A round's last miss is read too when the scan goes on in parts: the next round
            // starts there.
            let resumes = std::cell::Cell::new(false);
            let r = self.shared_op_reading(SCAN_READS, &resumes, |c| {
                let r = attempt(c, &mut parts);
                resumes.set(parts.resumes == Some(true));
                r
            });
            if let Some(r) = r {
                return Some(r);
            }
            if parts.parts() == kept {
                return None;
            }
        }
    }

    /// Runs `op` with the core latch shared (one of the `*_shared` operations of
    /// `shared_ops.rs`). When it gives up because a page it needs is not in memory, that page is
    /// read with the core latch released (its frame taken, with several threads, from those set
    /// aside for misses with the latch still shared: [`PageCache::reserve_shared`]; else
    /// [`PageCache::reserve`] takes it exclusive only to pick the victim and reserve the frame,
    /// and a dirty victim, in place, is written with the latch released too) and `op` runs
    /// again, for up to `reads` pages ([`POINT_READS`] for an operation on one key,
    /// [`SCAN_READS`] for a scan, which starts over after each).
    /// `None`: run the operation exclusive (it needs more than a shared attempt can do, or
    /// reading the page failed: the exclusive path meets the error again and reports it).
    pub fn shared_op<T>(&self, reads: usize, op: impl FnMut(&Core) -> Option<T>) -> Option<T> {
        self.shared_op_reading(reads, &std::cell::Cell::new(false), op)
    }

    /// [`Shared::shared_op`]; if `read_last` is set when the last attempt gives up, the page it
    /// missed is read before `None` is returned (for a caller that goes on from there).
    fn shared_op_reading<T>(
        &self,
        reads: usize,
        read_last: &std::cell::Cell<bool>,
        mut op: impl FnMut(&Core) -> Option<T>,
    ) -> Option<T> {
        for attempt in 0..=reads {
            // Every shared reader and writer runs inside this loop, and a note is taken as soon
            // as its attempt gives up: none is left over from an earlier operation.
            let core = self.core_read();
            if attempt == 0 && core.cache.splits.note_thread() {
                // A second thread: a full log buffer is flushed with the log unlocked.
                self.wal.set_defer_full(true);
            }
            let r = op(&core);
            if let Some(r) = r {
                drop(core);
                debug_assert!(
                    crate::read_shared::take_miss().is_none(),
                    "an attempt that noted a miss completed"
                );
                return Some(r);
            }
            let pid = crate::read_shared::take_miss()?;
            if attempt == reads && !read_last.get() {
                // No attempt is left to use the page: the exclusive run reads it.
                return None;
            }
            // From the frames set aside for misses, still with the latch shared, if it can.
            core.check().ok()?;
            match core.cache.reserve_shared(pid, &core.health) {
                Some(Reserved::Cached) => continue,
                Some(Reserved::Wait(w)) => {
                    drop(core);
                    w.wait();
                    continue;
                }
                Some(Reserved::Load(load)) => {
                    let wp = std::sync::Arc::clone(&core.cache.wp);
                    drop(core);
                    load.read(&wp, None).ok()?;
                    continue;
                }
                None => drop(core),
            }
            if !self.writers.none() {
                // Page writes are under way with the latch released (a batch, perhaps a
                // journaled one moving the whole journal home): reserve a clean frame beside
                // them rather than wait for them all.
                if let Some((r, wp)) = self.core_beside_writers().reserve_clean(&self.wal, pid) {
                    match r {
                        Reserved::Cached => {}
                        Reserved::Wait(w) => w.wait(),
                        Reserved::Load(load) => load.read(&wp, None).ok()?,
                    }
                    continue;
                }
            }
            let mut core = self.core();
            let mut wal = self.wal.lock();
            core.check().ok()?;
            let c = &mut *core;
            let mut load = match c.cache.reserve(pid, &mut *wal, &c.health).ok()? {
                Reserved::Cached => continue,
                Reserved::Wait(w) => {
                    // Another thread is reading the page: wait for it with no latch held.
                    drop(wal);
                    drop(core);
                    w.wait();
                    continue;
                }
                Reserved::Load(load) => load,
            };
            let wp = std::sync::Arc::clone(&core.cache.wp);
            drop(wal);
            let mut held = None;
            if load.writes_victim() {
                // In place, a dirty victim's write must come before anyone else's use of the
                // write path (a read of that page, a checkpoint): its mutex is taken before the
                // core latch goes. The log is forced past the victim with no latch held.
                let ticket = self.writers.enter(&mut core);
                held = Some(crate::sync::lock(&wp));
                drop(core);
                load.force_victim(&mut SharedLog(&self.wal)).ok()?;
                // The write itself takes no log latch: exclusive operations may go on.
                drop(ticket);
                load.write_victim(&mut held).ok()?;
            } else if let Some(ahead) = load.take_ahead() {
                // Out of place and journaled, the dirty pages the hand reaches next: written
                // as a checkpoint's batch is, with the core latch released, and queued for the
                // next exclusive latch (`cache/clean_ahead.rs`). Not once the handle is
                // poisoned (queued unwritten: they stay dirty).
                let ticket = self.writers.enter(&mut core);
                drop(core);
                // The missed page first, its frame published while the ticket still keeps
                // every exclusive operation out. Read after the batch, the frame stayed
                // loading past the ticket's end, where the batch's end takes the log latch
                // (a full buffer's flush): an exclusive operation holding the log latch
                // (a scan waiting for transactions, `Txn::with_scan_wait`) that met the frame
                // waited for it, and this thread for the log latch, forever.
                let read = load.read(&wp, None);
                if self.health.check().is_ok() {
                    // Queued (`written`) before the ticket is given back; its error, if any,
                    // is the batch's to report.
                    let _ = self.write_detached(ahead, &wp, ticket, |ahead, r| ahead.written(r));
                } else {
                    drop(ahead);
                    drop(ticket);
                }
                read.ok()?;
                continue;
            } else {
                drop(core);
            }
            load.read(&wp, held).ok()?;
        }
        None
    }

    /// The core latch, exclusive. A panic while holding it leaves the components in an unknown
    /// state: the handle is poisoned, and the guard is handed out so that reads of counters
    /// still work.
    pub fn core(&self) -> CoreGuard<'_> {
        self.core_as(true)
    }

    /// The core latch, exclusive, taken while page writes with the core latch released may be
    /// under way (tickets out): for a reservation of a clean frame only, which neither writes
    /// a page nor takes the write path's mutex nor waits for anything with the latch held.
    /// What it gives has no `&mut Core`, so no ticket can be taken (nor copies) with it.
    fn core_beside_writers(&self) -> BesideWriters<'_> {
        BesideWriters(self.core_as(false))
    }

    /// [`Shared::core`]; not `wait_for_writers`: see [`Shared::core_beside_writers`], its only
    /// other use.
    fn core_as(&self, wait_for_writers: bool) -> CoreGuard<'_> {
        // Not while a page write with the core latch released is under way (`Writers`): wait
        // for it holding nothing, rather than stop every reader and then wait for it.
        let mut counted = false;
        let mut g = loop {
            if wait_for_writers && !self.writers.none() {
                if !counted {
                    self.writers.waiting.fetch_add(1, Ordering::SeqCst);
                    counted = true;
                }
                self.writers.wait_none();
            }
            let g = match self.core.write() {
                Ok(g) => g,
                Err(p) => {
                    let g = p.into_inner();
                    g.health
                        .poison_with(|| "a thread panicked inside the engine".into());
                    g
                }
            };
            if !wait_for_writers || self.writers.none() {
                break g;
            }
        };
        if counted {
            self.writers.waiting.fetch_sub(1, Ordering::SeqCst);
        }
        // Pages made by splits with the latch shared join the page table, and changes made with
        // it shared are marked dirty, before anyone looks.
        g.cache.adopt_split_pages();
        g.cache.adopt_loaded_pages();
        g.cache.pool.apply_dirty();
        g.cache.adopt_cleaned_pages();
        g.exclusive_epoch += 1;
        g
    }

    /// The core latch, shared (see the module's latching notes for what may be done under it).
    pub fn core_read(&self) -> CoreRead<'_> {
        match self.core.read() {
            Ok(g) => g,
            Err(p) => {
                let g = p.into_inner();
                g.health
                    .poison_with(|| "a thread panicked inside the engine".into());
                g
            }
        }
    }
}
