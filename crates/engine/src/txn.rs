//! Transactions (the facade): reads, writes, scans and cursors under the engine's concurrency
//! control (strict two-phase locking, no-wait), commit through group commit, rollback with
//! compensation records.

use crate::catalog::Tree;
use crate::engine::LeafHint;
use crate::engine::{Core, Shared, POINT_READS};
use crate::error::{Error, Result};
use crate::page::Lsn;
use crate::scan_buf::ScanBuf;
use crate::txn_table::TxnAge;
use crate::wal::record::{Body, TxnId};
use crate::wal::Wal;
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

/// A transaction. Dropped without `commit`, it aborts.
pub struct Txn {
    shared: Arc<Shared>,
    id: TxnId,
    /// Its wait-die priority (see [`TxnAge`]).
    age: TxnAge,
    done: bool,
    /// The leaf of this transaction's last plain change and the keys that lead to it.
    leaf_hint: LeafHint,
    /// The live transaction whose page refused this one's last operation (flushless), which
    /// it did not wait for: its rollback waits for that one's end (see [`Txn::abort`]).
    refused_by: Option<TxnId>,
}

impl Txn {
    pub(crate) fn new(shared: Arc<Shared>, (id, age): (TxnId, TxnAge)) -> Txn {
        Txn {
            shared,
            id,
            age,
            done: false,
            leaf_hint: LeafHint::default(),
            refused_by: None,
        }
    }

    pub fn id(&self) -> TxnId {
        self.id
    }

    /// When it began, or the first try of the work it retries (see [`TxnAge`]): what to
    /// pass to [`crate::Db::begin_retry`] to try the same work again after a
    /// [`Error::Conflict`] without losing its place among older transactions.
    pub fn age(&self) -> TxnAge {
        self.age
    }

    /// Reads `key`.
    pub fn get(&mut self, tree: &Tree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.past_committers(|t| t.get_once(tree, key))
    }

    fn get_once(&mut self, tree: &Tree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        // Beside other readers first; alone if a page must be read from the device.
        let id = self.id;
        if let Some(r) = self
            .shared
            .shared_op(POINT_READS, |c| c.get_shared(id, tree, key))
        {
            return r;
        }
        let mut core = self.shared.core();
        let mut wal = self.shared.wal.lock();
        core.get(&mut wal, self.id, tree, key)
    }

    /// Inserts or replaces `key`. Returns the previous value.
    pub fn put(&mut self, tree: &Tree, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.write(tree, key, Some(value))
    }

    /// Deletes `key`. Returns the previous value.
    pub fn delete(&mut self, tree: &Tree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.write(tree, key, None)
    }

    /// Bulk load: appends `pairs` to `tree`. Their keys must be strictly ascending, the first
    /// above every key the tree holds; otherwise the error is `InvalidArgument` and nothing is
    /// changed.
    ///
    /// The transaction takes the whole tree exclusively until it ends: other transactions can
    /// neither read nor write it meanwhile (they get `Conflict`), and `Db::get` waits for it
    /// (up to two seconds, then `Conflict`). In return the records are written a leaf at a time: each full leaf is
    /// one log record of its page, with no record lock, before-image or log record per key.
    /// Aborting (or a crash before the commit) deletes them again.
    ///
    /// In the flushless mode, with a version store, or for a value too long to be stored
    /// inline, the records are put one by one instead: the same result, with the record locks
    /// and log records of [`Txn::put`] (and a shared lock on the tree, as a scan's).
    ///
    /// Another error may come after some records were appended: abort the transaction then.
    pub fn load<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        tree: &Tree,
        pairs: &[(K, V)],
    ) -> Result<()> {
        let pairs: Vec<(&[u8], &[u8])> = pairs
            .iter()
            .map(|(k, v)| (k.as_ref(), v.as_ref()))
            .collect();
        // A retry after the log filled goes on with the records not appended yet.
        let mut done = 0;
        let id = self.id;
        let r = self.with_log_wait(|core, wal| core.load(wal, id, tree, &pairs[done..], &mut done));
        // With a version store the records were put one by one: their last undo blocks.
        self.shared.write_undo_blocks(id);
        r
    }

    /// Runs `f` with the core latch exclusive, waiting out a log another thread's transaction
    /// holds full ([`Shared::exclusive_log_wait`]).
    fn with_log_wait<R>(&mut self, f: impl FnMut(&mut Core, &mut Wal) -> Result<R>) -> Result<R> {
        self.shared.exclusive_log_wait(self.id, f)
    }

    /// How long a read-only transaction's scan waits, in all, for the writers of its tree.
    const SCAN_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

    /// Runs `f` (a scan of `tree`, or a cursor's batch) under the core latch. If writers of the
    /// tree refuse it and this transaction has written nothing, it waits for them to end (up to
    /// [`Txn::SCAN_WAIT`], the latch released) while new writers of the tree are turned away,
    /// so a long reader is not starved by a stream of short writers.
    fn with_scan_wait<R>(
        &mut self,
        tree: &Tree,
        mut f: impl FnMut(&mut Core, &mut Wal) -> Result<R>,
    ) -> Result<R> {
        let mut core = self.shared.core();
        let started = std::time::Instant::now();
        loop {
            let r = {
                let mut wal = self.shared.wal.lock();
                f(&mut core, &mut wal)
            };
            match r {
                Err(Error::Conflict { .. })
                    if started.elapsed() < Self::SCAN_WAIT && core.wait_for_scan(self.id, tree) =>
                {
                    core = self
                        .shared
                        .wait_for_an_end(core, std::time::Duration::from_millis(10));
                }
                r => {
                    core.stop_waiting(self.id);
                    drop(core);
                    self.shared.flush_full_log();
                    return r;
                }
            }
        }
    }

    /// How long, in all, an operation waits for transactions that hold its record.
    const COMMITTER_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

    /// Runs `op` (one read or write of a record); if a record lock it needs is held by a
    /// transaction that is committing on another thread, or running on another thread and
    /// younger ([`TxnAge`]), waits for that one to end and runs it again (up to [`Txn::COMMITTER_WAIT`]
    /// in all), rather than refuse at once: a committing holder waits only for its log write,
    /// a running one of a short transaction ends soon, and a retry of the whole transaction
    /// costs more (with more client threads than cores, retrying at once takes the processor
    /// from the holder). Waits for running holders go from older transactions to younger
    /// only (wait-die), so they never form a cycle (`Shared::wait_for_holder`).
    /// The refused operation changed nothing.
    fn past_committers<R>(&mut self, mut op: impl FnMut(&mut Self) -> Result<R>) -> Result<R> {
        // A refusal an operation after it went on from is not what a rollback waits out.
        self.refused_by = None;
        let mut deadline = None;
        loop {
            let _ = crate::locks::take_refuser();
            let r = op(self);
            let Err(Error::Conflict { .. }) = &r else {
                return r;
            };
            let Some((holder, page)) = crate::locks::take_refuser_of() else {
                return r;
            };
            let deadline =
                *deadline.get_or_insert_with(|| std::time::Instant::now() + Self::COMMITTER_WAIT);
            if !self
                .shared
                .wait_for_holder((self.id, self.age), holder, deadline)
            {
                if page {
                    self.refused_by = Some(holder);
                }
                return r;
            }
        }
    }

    fn write(&mut self, tree: &Tree, key: &[u8], value: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        self.past_committers(|t| t.write_once(tree, key, value))
    }

    fn write_once(
        &mut self,
        tree: &Tree,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        // A plain leaf change beside other threads' operations; anything more, alone.
        let (id, wal, hint) = (self.id, &self.shared.wal, &mut self.leaf_hint);
        let shared = self.shared.shared_op(POINT_READS, |c| {
            c.write_shared(wal, id, tree, key, value, hint)
        });
        if let Some(r) = shared {
            // A full log buffer this write's record left behind is written now, and the undo
            // blocks its before-image completed, no latch held.
            self.shared.flush_full_log();
            self.shared.write_undo_blocks(id);
            return r;
        }
        // A checkpoint the write must run first runs now, with its page writes outside the
        // core latch.
        self.shared.make_log_space(key, value);
        let id = self.id;
        let r = self.with_log_wait(|core, wal| core.write(wal, id, tree, key, value));
        self.shared.write_undo_blocks(id);
        r
    }

    /// Key-value pairs with keys in `range`, in key order (descending if `reverse`), at most
    /// `limit` of them. Serializable: until the transaction ends, no other transaction may
    /// insert, change or delete a key in the part of the range the scan read (a key-range lock;
    /// a writer that tries is refused with `Error::Conflict`). A scan that meets another
    /// transaction's uncommitted change is refused, or waits a little while that transaction
    /// ends, new writers of the tree turned away meanwhile (so long scans are not starved).
    pub fn scan(
        &mut self,
        tree: &Tree,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let id = self.id;
        let mut out = Vec::new();
        let shared = self.shared.scan_shared_op(|c, parts| {
            c.scan_shared_to((id, tree), (range, reverse), limit, None, parts, &mut out)
        });
        match shared {
            // A conflict may be waited out: that needs the latch exclusive.
            Some(Err(Error::Conflict { .. })) | None => {}
            Some(r) => return r.map(|()| out),
        }
        self.with_scan_wait(tree, |core, wal| {
            core.scan_to(wal, (id, tree), (range, reverse), limit, None, &mut out)
        })?;
        Ok(out)
    }

    /// [`Txn::scan`] into `buf` (emptied first), which keeps every key and value in one
    /// allocation: nothing is allocated per pair, and a buffer scanned into again reuses its
    /// memory. The same locks, conflicts and waits as `scan`.
    pub fn scan_into(
        &mut self,
        tree: &Tree,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        limit: usize,
        buf: &mut ScanBuf,
    ) -> Result<()> {
        let id = self.id;
        let shared = self.shared.scan_shared_op(|c, parts| {
            c.scan_shared_to((id, tree), (range, reverse), limit, None, parts, &mut *buf)
        });
        match shared {
            // A conflict may be waited out: that needs the latch exclusive.
            Some(Err(Error::Conflict { .. })) | None => {}
            Some(r) => return r,
        }
        self.with_scan_wait(tree, |core, wal| {
            core.scan_to(wal, (id, tree), (range, reverse), limit, None, &mut *buf)
        })
    }

    /// A streaming cursor over the keys of `tree` in `range`, ascending (descending if
    /// `reverse`). It reads a batch of pairs at a time, each locked as `scan` locks what it
    /// reads (to the transaction's end), so no result set is built under the engine's latch and
    /// memory stays bounded whatever the range. A batch that meets another transaction's
    /// uncommitted change yields `Error::Conflict`.
    ///
    /// ```
    /// use std::ops::Bound;
    /// use wafer_engine::{Db, DbConfig, Devices};
    /// let db = Db::open(Devices::memory(16 << 20, 4 << 20), DbConfig::default()).unwrap();
    /// let t = db.create_tree("t").unwrap();
    /// let mut txn = db.begin().unwrap();
    /// for i in 0..1000u32 {
    ///     txn.put(&t, format!("k{i:04}").as_bytes(), b"v").unwrap();
    /// }
    /// let range = (Bound::Included(&b"k0100"[..]), Bound::Excluded(&b"k0200"[..]));
    /// let keys: Vec<Vec<u8>> = txn
    ///     .cursor(&t, range, false)
    ///     .unwrap()
    ///     .map(|kv| kv.map(|(k, _)| k))
    ///     .collect::<Result<_, _>>()
    ///     .unwrap();
    /// assert_eq!(keys.len(), 100);
    /// assert_eq!(keys[0], b"k0100");
    /// txn.commit().unwrap();
    /// ```
    pub fn cursor(
        &mut self,
        tree: &Tree,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
    ) -> Result<Cursor<'_>> {
        let id = self.id;
        let guard =
            self.with_scan_wait(tree, |core, _| core.open_cursor(id, tree, range, reverse))?;
        let own = |b: Bound<&[u8]>| match b {
            Bound::Included(k) => Bound::Included(k.to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        Ok(Cursor {
            txn: self,
            tree: tree.clone(),
            start: own(range.0),
            end: own(range.1),
            reverse,
            buf: VecDeque::new(),
            done: false,
            guard,
        })
    }

    /// Commits: durable when this returns.
    pub fn commit(mut self) -> Result<()> {
        // Logged and ended beside other threads' operations where the mode allows: the commit
        // record goes to the log under the log's own latch, the wait for the log holds no
        // latch, and a read-only transaction only releases its locks.
        let logged = self
            .shared
            .core_read()
            .commit_shared(&self.shared.wal, self.id);
        match logged {
            None => {}
            Some(Err(e)) => {
                // Not committed: the drop of `self` rolls the transaction back.
                return Err(e);
            }
            Some(Ok(lsn)) => {
                self.done = true;
                if lsn != 0 && !self.shared.durable_commits {
                    // Logged with its End (see `commit_shared`); durable with a later log write.
                    self.shared.core_read().end_commit_shared(self.id)?;
                    self.shared.flush_full_log();
                } else if lsn != 0 {
                    // Durable, then its End record: failing to log that only leaves recovery
                    // one record more to look at, so it does not fail the commit.
                    let (id, health) = (self.id, &self.shared.health);
                    let r = self.shared.wal.commit_wait_then(lsn, |wal| {
                        let _ = health.guard(wal.append(id, lsn, Body::End));
                    });
                    if let Err(e) = r {
                        self.shared.health.poison(&e);
                        return Err(e);
                    }
                    self.shared.core_read().end_commit_shared(self.id)?;
                    self.shared.flush_full_log();
                }
                self.shared.notify_ended(self.id);
                self.shared.run_wanted_checkpoint();
                return Ok(());
            }
        }
        let pending = self.commit_deferred()?;
        if pending.lsn != 0 && pending.shared.durable_commits {
            if let Err(e) = pending.shared.wal.commit_wait(pending.lsn) {
                pending.shared.health.poison(&e);
                return Err(e);
            }
        }
        let shared = pending.shared.clone();
        let r = pending.finish();
        shared.run_wanted_checkpoint();
        r
    }

    /// The first half of a commit, for schedulers that batch log flushes themselves (group
    /// commit in virtual time): appends the commit record and returns. The transaction keeps its
    /// locks; it is committed once the log is durable up to `PendingCommit::lsn` (after
    /// `Db::flush_log`), and `PendingCommit::finish` then ends it. Dropping a `PendingCommit`
    /// unfinished leaves the transaction to recovery (committed if its record became durable).
    pub fn commit_deferred(mut self) -> Result<PendingCommit> {
        self.done = true;
        let mut core = self.shared.core();
        core.check()?;
        let r = {
            let mut wal = self.shared.wal.lock();
            core.commit_record(&mut wal, self.id)
        };
        drop(core);
        match r {
            Ok(lsn) => Ok(PendingCommit {
                shared: self.shared.clone(),
                id: self.id,
                lsn,
            }),
            Err(Error::TxnNotActive) => Err(Error::TxnNotActive),
            Err(e) => {
                // Not committed: the drop of `self` rolls the transaction back.
                self.done = false;
                Err(e)
            }
        }
    }

    /// Rolls back every change of the transaction. In the flushless mode, after an operation
    /// refused because another thread's live transaction holds the page (`Conflict`), it waits
    /// for that transaction's end (at most 100 ms, its own locks already released) before it
    /// returns, so that a retry does not meet the same holder at once; a drop does the same.
    pub fn abort(mut self) -> Result<()> {
        self.done = true;
        self.rollback()
    }

    fn rollback(&mut self) -> Result<()> {
        let r = self.rollback_only();
        if let Some(holder) = self.refused_by.take() {
            // Refused for a page another thread's live transaction holds (flushless: one live
            // transaction per page), by wait-die: a retry begun now would meet it again, and
            // each meeting is a rollback that discards frames (wall-clock TPC-C, two threads:
            // thousands a second). With its locks gone this transaction waits for nobody's
            // sake, so it waits (at most 100 ms) for that one's end before it returns.
            self.shared.wait_for_end(holder, Self::COMMITTER_WAIT);
        }
        r
    }

    fn rollback_only(&mut self) -> Result<()> {
        // Nothing logged: it ends with the core latch shared.
        let shared = self.shared.core_read().rollback_shared(self.id);
        if let Some(r) = shared {
            self.shared.notify_ended(self.id);
            self.shared.run_wanted_checkpoint();
            return r;
        }
        // With several threads, changes undone as plain leaf changes, beside the others; what
        // is left, exclusive.
        let (id, wal) = (self.id, &self.shared.wal);
        let shared = self
            .shared
            .shared_op(POINT_READS, |c| c.rollback_changes_shared(wal, id));
        if let Some(r) = shared {
            self.shared.notify_ended(self.id);
            self.shared.flush_full_log();
            self.shared.run_wanted_checkpoint();
            return r;
        }
        let mut core = self.shared.core();
        let mut wal = self.shared.wal.lock();
        let r = core.rollback(&mut wal, self.id);
        drop(wal);
        drop(core);
        self.shared.notify_ended(self.id);
        self.shared.flush_full_log();
        self.shared.run_wanted_checkpoint();
        r
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.rollback();
        }
    }
}

/// Pairs a cursor reads per visit to the tree.
const CURSOR_BATCH: usize = 64;

/// A streaming range cursor of a transaction (see [`Txn::cursor`]). Yields `Result`s: an error
/// (e.g. a poisoned handle) ends the iteration.
pub struct Cursor<'t> {
    txn: &'t mut Txn,
    tree: Tree,
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    reverse: bool,
    buf: VecDeque<(Vec<u8>, Vec<u8>)>,
    done: bool,
    /// The key-range claim its batches grow (`None` for a snapshot reader).
    guard: Option<crate::cc::ScanGuard>,
}

impl Cursor<'_> {
    /// Reads the next batch, starting after the last key returned.
    fn refill(&mut self) -> Result<()> {
        let range = (as_ref(&self.start), as_ref(&self.end));
        let (id, tree, reverse) = (self.txn.id, &self.tree, self.reverse);
        let range_rev = (range, reverse);
        let guard = &mut self.guard;
        let mut got = Vec::new();
        let shared = self.txn.shared.scan_shared_op(|c, parts| {
            let g = Some(&mut *guard);
            c.scan_shared_to((id, tree), range_rev, CURSOR_BATCH, g, parts, &mut got)
        });
        let batch = match shared {
            // A conflict may be waited out, as a scan's (`Txn::scan`): so a long cursor among
            // a stream of writers is not starved.
            Some(Err(Error::Conflict { .. })) | None => {
                self.txn.with_scan_wait(tree, |core, wal| {
                    core.scan(
                        wal,
                        id,
                        tree,
                        range,
                        reverse,
                        CURSOR_BATCH,
                        Some(&mut *guard),
                    )
                })?
            }
            Some(r) => r.map(|()| got)?,
        };
        if batch.len() < CURSOR_BATCH {
            self.done = true;
        }
        if let Some((last, _)) = batch.last() {
            let after = Bound::Excluded(last.clone());
            if self.reverse {
                self.end = after;
            } else {
                self.start = after;
            }
        }
        self.buf.extend(batch);
        Ok(())
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Iterator for Cursor<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() && !self.done {
            if let Err(e) = self.refill() {
                self.done = true;
                return Some(Err(e));
            }
        }
        self.buf.pop_front().map(Ok)
    }
}

/// A transaction whose commit record is in the log but maybe not yet durable (see
/// [`Txn::commit_deferred`]).
pub struct PendingCommit {
    shared: Arc<Shared>,
    id: TxnId,
    /// LSN of the commit record (0: the transaction changed nothing).
    pub lsn: Lsn,
}

impl PendingCommit {
    /// Ends the transaction once its commit record is durable (normally the caller flushed the
    /// log with `Db::flush_log`; if not, this flushes it). Releases its locks.
    pub fn finish(self) -> Result<()> {
        if self.lsn != 0 && self.shared.durable_commits {
            // Made durable with no latch held (nothing to do if the caller flushed), as a
            // committer waits: it was flushed with the core and log latches held, and every
            // other thread's operation waited for the device.
            if let Err(e) = self.shared.wal.force(self.lsn) {
                self.shared.health.poison(&e);
                return Err(e);
            }
        }
        let mut core = self.shared.core();
        if self.lsn != 0 {
            let mut wal = self.shared.wal.lock();
            if !self.shared.durable_commits {
                // Counted as a commit the log served, as `commit_wait` counts one.
                wal.stats_mut().commits += 1;
            }
            // The commit is durable: failing to log its end only leaves recovery one record
            // more to look at, so it does not fail the commit.
            let r = wal.append(self.id, self.lsn, Body::End);
            let _ = core.health.guard(r);
        }
        let r = core.end_commit(self.id);
        self.shared.notify_ended(self.id);
        r
    }
}
