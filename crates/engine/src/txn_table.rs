//! The transaction table: live transactions, their ids, log positions and log-space
//! reservations, the pages they changed, behind a concurrency-control protocol (`cc.rs`) and an
//! undo store (`undo.rs`).
//!
//! Log-space reservation: from its first update on, a transaction keeps enough log space
//! reserved to roll itself back (its compensation records mirror its updates, plus its Abort and
//! End records and room for a few structure changes); operations refuse to start when the free
//! log space, less every reservation, is too small (`checkpoint::Checkpointer::ensure_log_space`).

use crate::cc::{Access, CcState, ConcurrencyControl, TwoPhaseLocking};
use crate::error::{Error, Result};
use crate::page::{Lsn, PageId};
use crate::sync::{lock, Shards, StripedSum};
use crate::undo::{MemUndo, Rollback, UndoStore};
use crate::wal::record::{LoadUndo, TreeId, TxnId, Undo};
use crossbeam_utils::CachePadded;
use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Per-transaction state.
#[derive(Default)]
pub(crate) struct TxnState {
    pub first_lsn: Lsn,
    pub last_lsn: Lsn,
    /// The commit record is in the log: the transaction is no longer a candidate for undo
    /// (a checkpoint taken before its end must not list it as active).
    pub committing: bool,
    /// Log bytes reserved for this transaction's rollback (part of `TxnTable::log_reserved`).
    pub reserved: u64,
    /// Pages its rollback may allocate (part of `TxnTable::pages_reserved`).
    pub reserved_pages: u64,
    /// Pages it changed (with repeats), for the buffer's per-frame uncommitted lists.
    pub pages: Vec<PageId>,
    /// The thread of its latest operation (a transaction may move between threads), or, once
    /// it is committing, of its commit record.
    pub thread: Option<std::thread::ThreadId>,
    /// What concurrency control keeps for it (its locks).
    pub cc: CcState,
    /// Its wait-die priority: when it (or the first try it retries) began ([`TxnAge`]).
    pub age: TxnAge,
}

impl TxnState {
    /// Whether it reserved any log space yet.
    pub fn reserved_any(&self) -> bool {
        self.reserved > 0
    }
}

/// Log space a transaction keeps reserved to roll back an update whose record took
/// `record_bytes`: its compensation record mirrors it (the inverse leaf change, or images of a
/// structure change of the same extent). A rollback's deletes never merge nodes
/// (`ops::Direction::Undo`), so undoing an insert logs no more than the insert did.
pub(crate) fn undo_reserve(record_bytes: u64) -> u64 {
    record_bytes + UNDO_EXTRA_BYTES
}

/// What a compensation record may take beyond the record it undoes.
pub(crate) const UNDO_EXTRA_BYTES: u64 = 128;

/// Log bytes of the compensation record that deletes one bulk-loaded key, beyond the key: the
/// record header and a leaf delete's redo (the page and the key's length), rounded up.
pub(crate) const LOAD_UNDO_RECORD_BYTES: u64 = 64;

/// Log bytes a transaction reserves once, from its first update on: its Abort and End records
/// and room for a few structure changes its rollback may cause by itself (a re-inserted key
/// splitting a leaf that other transactions filled meanwhile).
pub(crate) fn txn_reserve(page_size: u32) -> u64 {
    256 + 4 * page_size as u64
}

/// Pages a transaction keeps reserved, once, for the structure changes its rollback may cause
/// beyond one leaf split per re-insert (a parent split, or a new root).
pub(crate) const TXN_RESERVE_PAGES: u64 = 4;

/// Pages the rollback of a change needs to put `old` back under `key`: a value too long to be
/// stored inline goes back into a new overflow chain; and if the undo re-inserts bytes into a
/// leaf (`grows`: a delete, or a value that shrank), that leaf may have filled meanwhile and
/// split.
pub(crate) fn undo_pages(page_size: u32, key_len: usize, old: Option<&[u8]>, grows: bool) -> u64 {
    let ps = page_size as usize;
    let chain = match old {
        Some(v) if v.len() > crate::btree::node::max_inline_value(ps, key_len) => {
            crate::btree::overflow::pages_for(ps, v.len()) as u64
        }
        _ => 0,
    };
    chain + grows as u64
}

/// One shard of the undo store.
struct UndoShard(Box<dyn UndoStore>);

impl Default for UndoShard {
    fn default() -> Self {
        UndoShard(Box::new(MemUndo::default()))
    }
}

/// When a transaction began, for the order of wait-die: a transaction waits only for running
/// holders of its locks that are younger than it, and is refused by older ones (so waits form
/// no cycle, and the oldest transaction is never refused by a running one: it makes progress).
/// Nanoseconds since the database opened, ties broken by transaction id. A transaction retried
/// after a conflict keeps its first try's age if begun with [`crate::Db::begin_retry`], so it
/// grows older with every try instead of starting again as the youngest; an application that
/// always does will not starve a transaction that keeps meeting the same hot keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TxnAge(pub(crate) u64);

/// The live transactions.
///
/// Latching: the table lives in the engine's core, so it is used either by one thread with the
/// core latch exclusive (`&mut self`: no locking, shards reached with `get_mut`) or by several
/// threads with the latch shared (`&self`: beginning, checking and ending read-only
/// transactions, and concurrency control). The shared paths lock one shard of the map, or
/// reach the concurrency control, which synchronises itself; reservations and the undo store
/// change only under the exclusive latch.
pub(crate) struct TxnTable {
    txns: Shards<HashMap<TxnId, TxnState>>,
    /// The first id no thread stripe has been handed yet.
    next_txn: AtomicU64,
    /// Per thread stripe, the ids `[next, end)` it was handed and has not used: a thread takes
    /// [`ID_BLOCK`] ids from `next_txn` at a time, so concurrent beginners do not write one
    /// counter's line, and its transactions' table and undo shard (chosen by block) stay its
    /// own. One thread (a virtual-time scheduler too) gets 1, 2, 3, ... as with one counter.
    id_blocks: Box<[IdBlock]>,
    /// Log bytes reserved by live transactions for their rollback.
    log_reserved: StripedSum,
    /// Log bytes kept beside them for other work that must be logged before the next
    /// checkpoint (the postings of leaf splits made beside other threads: `splits.rs`).
    others_reserved: Option<std::sync::Arc<AtomicU64>>,
    /// Data pages reserved by live transactions for their rollback.
    pages_reserved: StripedSum,
    cc: Box<dyn ConcurrencyControl>,
    /// Sharded by transaction, like the table.
    undo: Shards<UndoShard>,
    page_size: u32,
    /// What [`TxnAge`]s count from.
    epoch: std::time::Instant,
}

/// A thread stripe's unused ids, `[next, end)`.
type IdBlock = CachePadded<Mutex<(TxnId, TxnId)>>;

/// Transaction ids a thread stripe takes at a time (see `TxnTable::id_blocks`).
const ID_BLOCK: u64 = 64;

/// The shard key of transaction `id`: its block, so one thread's transactions share a shard.
pub(crate) fn shard(id: TxnId) -> u64 {
    id / ID_BLOCK
}

/// What [`TxnTable::holder`] found of a lock holder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Holder {
    /// Running, its latest operation on this thread (or committing on this thread): the
    /// requester is refused (this thread is the one that would have to end it).
    Active,
    /// Running, its latest operation on another thread: waited for by an older requester,
    /// refused to a younger (wait-die by [`TxnAge`], then id: see `Shared::wait_for_holder`).
    Running { age: TxnAge },
    /// Committing on another thread: it releases its locks once its commit is durable.
    Committing,
    /// Ended: its locks are released or about to be.
    Gone,
}

/// What a checkpoint records of the transaction table.
pub(crate) struct TxnSnapshot {
    /// (id, last LSN, undo-next LSN) of transactions that may have to be rolled back.
    pub active: Vec<(TxnId, Lsn, Lsn)>,
    /// The first record of the oldest of them: the log must keep it.
    pub oldest_first_lsn: Option<Lsn>,
    pub next_txn: TxnId,
}

impl TxnTable {
    /// An empty table with strict 2PL and in-memory undo.
    pub fn new(page_size: u32) -> TxnTable {
        TxnTable {
            txns: Shards::new(16),
            next_txn: AtomicU64::new(1),
            id_blocks: (0..crate::sync::STRIPES)
                .map(|_| CachePadded::new(Mutex::new((0, 0))))
                .collect(),
            log_reserved: StripedSum::default(),
            others_reserved: None,
            pages_reserved: StripedSum::default(),
            cc: Box::new(TwoPhaseLocking::default()),
            undo: Shards::new(16),
            page_size,
            epoch: std::time::Instant::now(),
        }
    }

    /// Starts a transaction, of age `age` (a retry's: its first try's) or, if None, now.
    pub fn begin(&self, age: Option<TxnAge>) -> (TxnId, TxnAge) {
        let age = age.unwrap_or_else(|| TxnAge(self.epoch.elapsed().as_nanos() as u64));
        let id = {
            let mut b = lock(&self.id_blocks[crate::sync::stripe() % self.id_blocks.len()]);
            if b.0 == b.1 {
                let start = self.next_txn.fetch_add(ID_BLOCK, Ordering::Relaxed);
                *b = (start, start + ID_BLOCK);
            }
            b.0 += 1;
            b.0 - 1
        };
        let st = TxnState {
            age,
            ..TxnState::default()
        };
        self.txns.lock(shard(id)).insert(id, st);
        (id, age)
    }

    /// An id above every id handed out so far (what recovery must not hand out again): the
    /// highest next id of the stripes' blocks; with one thread, exactly the next id it gets.
    pub fn next_txn(&self) -> TxnId {
        let blocks = self.id_blocks.iter().map(|b| *lock(b));
        let used = blocks
            .filter(|&(n, e)| e != 0 && n > e - ID_BLOCK)
            .map(|(n, _)| n);
        used.max()
            .unwrap_or_else(|| self.next_txn.load(Ordering::Relaxed))
    }

    fn get_mut(&mut self, id: TxnId) -> Option<&mut TxnState> {
        self.txns.get_mut(shard(id)).get_mut(&id)
    }

    /// Flushless mode: `id` will copy `bytes` of records to the log at its commit; reserve them
    /// (no undo is kept, and the log's start is not held), and `first` more if it reserved
    /// nothing yet (its commit record).
    pub fn reserve_log(&self, id: TxnId, bytes: u64, first: u64) {
        let add = match self.txns.lock(shard(id)).get_mut(&id) {
            Some(st) => {
                let add = bytes + if st.reserved_any() { 0 } else { first };
                st.reserved += add;
                add
            }
            None => return,
        };
        self.log_reserved.add(add as i64);
    }

    /// Recovery found transaction ids up to `next - 1` in the log.
    pub fn set_next_txn(&mut self, next: TxnId) {
        *self.next_txn.get_mut() = next;
        for b in self.id_blocks.iter_mut() {
            *b.get_mut().unwrap_or_else(|p| p.into_inner()) = (0, 0);
        }
    }

    pub fn state(&mut self, id: TxnId) -> Result<&TxnState> {
        self.get_mut(id).map(|s| &*s).ok_or(Error::TxnNotActive)
    }

    /// The LSN of `id`'s last record (0: it logged nothing), with the table shared.
    pub fn last_lsn(&self, id: TxnId) -> Result<Lsn> {
        self.txns
            .lock(shard(id))
            .get(&id)
            .map(|st| st.last_lsn)
            .ok_or(Error::TxnNotActive)
    }

    /// Fails unless `id` is live.
    pub fn active(&self, id: TxnId) -> Result<()> {
        match self.txns.lock(shard(id)).contains_key(&id) {
            true => Ok(()),
            false => Err(Error::TxnNotActive),
        }
    }

    /// Log bytes every operation's space check leaves free: live transactions' rollbacks, and
    /// what [`TxnTable::share_reserved`] counts.
    pub fn log_reserved(&self) -> u64 {
        let others = self
            .others_reserved
            .as_ref()
            .map_or(0, |r| r.load(Ordering::Acquire));
        self.log_reserved.get() as u64 + others
    }

    /// Counts `bytes` (kept up to date by its owner) in [`TxnTable::log_reserved`].
    pub fn share_reserved(&mut self, bytes: std::sync::Arc<AtomicU64>) {
        self.others_reserved = Some(bytes);
    }

    pub fn pages_reserved(&self) -> u64 {
        self.pages_reserved.get() as u64
    }

    /// Concurrency control before `id` accesses `key` of `tree` (`None`: the whole tree).
    /// `checks` runs once `id` is known to be live, before the protocol.
    /// Returns the transaction's first and last LSN (0: none yet), as [`TxnTable::lsns`] does:
    /// only the transaction's own operations change them.
    pub fn before_access(
        &self,
        id: TxnId,
        tree: TreeId,
        key: Option<&[u8]>,
        access: Access,
        checks: impl FnOnce() -> Result<()>,
    ) -> Result<(Lsn, Lsn)> {
        self.with_live(id, checks, |st| {
            self.cc.before_access(id, &mut st.cc, tree, key, access)?;
            Ok((st.first_lsn, st.last_lsn))
        })
    }

    /// The write `id` was allowed to make was refused before it changed anything (a scan's
    /// key-range claim): the record lock it took for it goes back
    /// ([`crate::cc::ConcurrencyControl::refused_write`]).
    pub fn refused_write(&self, id: TxnId) {
        let _ = self.with_live(
            id,
            || Ok(()),
            |st| {
                self.cc.refused_write(id, &mut st.cc);
                Ok(())
            },
        );
    }

    /// Runs `f` on the state of live transaction `id` once `checks` pass, noting the calling
    /// thread as its last. The shard stays locked while `f` runs (the protocol changes the
    /// transaction's state); lock order: a table shard, then lock-table shards (never the
    /// other way).
    fn with_live<R>(
        &self,
        id: TxnId,
        checks: impl FnOnce() -> Result<()>,
        f: impl FnOnce(&mut TxnState) -> Result<R>,
    ) -> Result<R> {
        let mut shard = self.txns.lock(shard(id));
        let st = shard.get_mut(&id).ok_or(Error::TxnNotActive)?;
        let me = crate::sync::thread_id();
        if st.thread != Some(me) {
            st.thread = Some(me);
        }
        checks()?;
        f(st)
    }

    /// Concurrency control before `id` scans `tree` (see
    /// [`crate::cc::ConcurrencyControl::scan_begin`]); `checks` as for
    /// [`TxnTable::before_access`].
    pub fn scan_begin(
        &self,
        id: TxnId,
        at: (TreeId, crate::cc::KeyRange<'_>),
        reverse: bool,
        checks: impl FnOnce() -> Result<()>,
    ) -> Result<crate::cc::ScanGuard> {
        self.with_live(id, checks, |st| {
            self.cc.scan_begin(id, &mut st.cc, at, reverse)
        })
    }

    /// The concurrency-control protocol, for what a scan or a write asks it while it holds a
    /// leaf's latch (no table shard is locked for that).
    pub fn cc(&self) -> &dyn ConcurrencyControl {
        &*self.cc
    }

    /// Concurrency control before `id` bulk loads `tree` (see [`crate::cc::ConcurrencyControl::
    /// before_load`]).
    pub fn before_load(&self, id: TxnId, tree: TreeId) -> Result<()> {
        let mut shard = self.txns.lock(shard(id));
        let st = shard.get_mut(&id).ok_or(Error::TxnNotActive)?;
        self.cc.before_load(id, &mut st.cc, tree)
    }

    /// The live transaction whose first record is the oldest the log must keep (it holds the
    /// log's start where it is), with the thread of its latest operation.
    pub fn pinning(&self) -> Option<(TxnId, Option<std::thread::ThreadId>)> {
        let mut best: Option<(Lsn, TxnId, Option<std::thread::ThreadId>)> = None;
        self.txns.each(|m| {
            for (&id, s) in m.iter() {
                if s.first_lsn != 0 && !s.committing && best.is_none_or(|b| s.first_lsn < b.0) {
                    best = Some((s.first_lsn, id, s.thread));
                }
            }
        });
        best.map(|(_, id, t)| (id, t))
    }

    /// `id` logged an update at `lsn` whose record took `record_bytes`: remember how to undo it
    /// and reserve the log space its rollback needs.
    /// `grows`: undoing it re-inserts bytes into a leaf (see [`undo_pages`]).
    pub fn updated(&self, id: TxnId, lsn: Lsn, record_bytes: u64, grows: bool, undo: Undo) {
        let pages = undo_pages(self.page_size, undo.key.len(), undo.old.as_deref(), grows);
        self.logged(
            id,
            lsn,
            undo_reserve(record_bytes),
            pages,
            Rollback::Key(undo),
        );
    }

    /// `id` logged a bulk load step at `lsn` whose rollback deletes keys taking `key_bytes`
    /// in all, `keys` of them: remember its range and reserve the log space of those deletes
    /// (a compensation record each; a rollback's deletes need no page).
    pub fn loaded(&self, id: TxnId, lsn: Lsn, (keys, key_bytes): (u64, u64), undo: LoadUndo) {
        let add = keys * LOAD_UNDO_RECORD_BYTES + key_bytes + UNDO_EXTRA_BYTES;
        self.logged(id, lsn, add, 0, Rollback::Load(undo));
    }

    fn logged(&self, id: TxnId, lsn: Lsn, mut add: u64, mut pages: u64, undo: Rollback) {
        debug_assert!(lsn != 0);
        let txn_reserve = txn_reserve(self.page_size);
        {
            let mut shard = self.txns.lock(shard(id));
            let st = shard.get_mut(&id).expect("active");
            debug_assert!(
                lsn > st.last_lsn,
                "a transaction's records are in LSN order"
            );
            if st.first_lsn == 0 {
                st.first_lsn = lsn;
                add += txn_reserve;
                pages += TXN_RESERVE_PAGES;
            }
            st.reserved += add;
            st.reserved_pages += pages;
            st.last_lsn = lsn;
        }
        self.pages_reserved.add(pages as i64);
        self.log_reserved.add(add as i64);
        self.undo.lock(shard(id)).0.push(id, lsn, undo);
    }

    /// Pages `id` changed in its last operation.
    pub fn pages_mut(&mut self, id: TxnId) -> Option<&mut Vec<PageId>> {
        self.get_mut(id).map(|s| &mut s.pages)
    }

    /// The commit record of `id` is in the log, appended by this thread (the one that ends the
    /// commit: see [`TxnTable::holder`]).
    pub fn committing(&mut self, id: TxnId) {
        if let Some(st) = self.get_mut(id) {
            st.committing = true;
            st.thread = Some(crate::sync::thread_id());
        }
    }

    /// Whether a transaction of another thread that refused this one may be waited for:
    /// [`Holder::Committing`] if `id` is committing (its commit record logged: it waits for
    /// the log, never for a lock) and its commit record was appended by another thread (a
    /// thread's own deferred commit ends only when that thread finishes it);
    /// [`Holder::Running`] if it runs and its latest operation was on another thread;
    /// [`Holder::Gone`] if it is no longer in the table (its locks are being released).
    pub fn holder(&self, id: TxnId) -> Holder {
        let me = Some(crate::sync::thread_id());
        match self.txns.lock(shard(id)).get(&id) {
            None => Holder::Gone,
            Some(st) if st.thread == me => Holder::Active,
            Some(st) if st.committing => Holder::Committing,
            Some(st) => Holder::Running { age: st.age },
        }
    }

    /// Removes `id` from the table (its reservation stays counted until [`TxnTable::end`]).
    pub fn remove(&self, id: TxnId) -> Result<TxnState> {
        self.txns
            .lock(shard(id))
            .remove(&id)
            .ok_or(Error::TxnNotActive)
    }

    /// The commit record of `id` is in the log (see [`TxnTable::committing`]), with the core
    /// latch shared.
    pub fn committing_shared(&self, id: TxnId) {
        if let Some(st) = self.txns.lock(shard(id)).get_mut(&id) {
            st.committing = true;
            st.thread = Some(crate::sync::thread_id());
        }
    }

    /// Ends `id` if it logged, reserved and changed nothing (a reader), with the core latch
    /// shared: `Some` then, its locks released; `None` if it did any of those. For modes
    /// whose writers log nothing before their commit (the flushless mode), where
    /// [`TxnTable::commit_point`]'s test of the last LSN cannot tell a reader.
    pub fn end_if_untouched(&self, id: TxnId) -> Result<Option<()>> {
        let st = {
            let mut shard = self.txns.lock(shard(id));
            let st = shard.get(&id).ok_or(Error::TxnNotActive)?;
            if st.last_lsn != 0
                || st.reserved != 0
                || st.reserved_pages != 0
                || !st.pages.is_empty()
            {
                return Ok(None);
            }
            shard.remove(&id)
        }
        .expect("found above");
        self.cc.end(id, &st.cc);
        Ok(Some(()))
    }

    /// The commit of `id` with the core latch shared, one look at the table: a read-only
    /// transaction is ended here (`Ok(0)`, its locks released); otherwise its last LSN, which
    /// its commit record follows.
    pub fn commit_point(&self, id: TxnId) -> Result<Lsn> {
        let st = {
            let mut shard = self.txns.lock(shard(id));
            let st = shard.get(&id).ok_or(Error::TxnNotActive)?;
            if st.last_lsn != 0 {
                return Ok(st.last_lsn);
            }
            debug_assert!(
                st.first_lsn == 0 && st.reserved == 0 && st.reserved_pages == 0,
                "a transaction that logged nothing reserved nothing"
            );
            shard.remove(&id)
        }
        .expect("found above");
        self.cc.end(id, &st.cc);
        Ok(0)
    }

    /// The undo entries of `id`, oldest first (taken out of the store).
    pub fn take_undo(&mut self, id: TxnId) -> Vec<(Lsn, Rollback)> {
        self.undo.get_mut(shard(id)).0.take(id)
    }

    /// [`TxnTable::take_undo`] with the core latch shared, by the thread rolling `id` back
    /// beside others (`engine/rollback_shared.rs`), which gives back what it does not undo
    /// ([`TxnTable::put_back_undo`]).
    pub fn take_undo_shared(&self, id: TxnId) -> Vec<(Lsn, Rollback)> {
        self.undo.lock(shard(id)).0.take(id)
    }

    /// Gives back `id`'s undo entries not undone yet (oldest first), for the exclusive
    /// rollback to go on with.
    pub fn put_back_undo(&self, id: TxnId, entries: Vec<(Lsn, Rollback)>) {
        // Taken by the same thread, which logged nothing for `id` since: the list is empty.
        let mut u = self.undo.lock(shard(id));
        for (lsn, undo) in entries {
            u.0.push(id, lsn, undo);
        }
    }

    /// A rollback beside others logged a compensation record of `id` at `lsn`: its last record
    /// now (a checkpoint records it; the exclusive rollback, if it finishes the job, goes on
    /// from it).
    pub fn compensated(&self, id: TxnId, lsn: Lsn) {
        if let Some(st) = self.txns.lock(shard(id)).get_mut(&id) {
            debug_assert!(lsn > st.last_lsn, "records in LSN order");
            st.last_lsn = lsn;
        }
    }

    /// The transaction `st` (already removed) ended: its reservation is released, then its
    /// locks.
    pub fn end(&self, id: TxnId, st: &TxnState) {
        self.log_reserved.add(-(st.reserved as i64));
        self.pages_reserved.add(-(st.reserved_pages as i64));
        debug_assert!(self.log_reserved.get() >= 0 && self.pages_reserved.get() >= 0);
        if st.first_lsn != 0 {
            let _ = self.undo.lock(shard(id)).0.take(id);
        }
        self.cc.end(id, &st.cc);
    }

    /// See [`ConcurrencyControl::wait_for_scan`].
    pub fn wait_for_scan(&mut self, id: TxnId, tree: TreeId) -> bool {
        let me = Some(crate::sync::thread_id());
        let mut same_thread: Vec<(TxnId, CcState)> = Vec::new();
        self.txns.each_mut(|m| {
            same_thread.extend(
                m.iter()
                    .filter(|(_, s)| s.thread == me)
                    .map(|(&t, s)| (t, s.cc.clone())),
            )
        });
        let Some(mine) = self.get_mut(id).map(|s| s.cc.clone()) else {
            return false;
        };
        self.cc.wait_for_scan(id, &mine, tree, &same_thread)
    }

    pub fn stop_waiting(&self, id: TxnId) {
        self.cc.stop_waiting(id);
    }

    pub fn conflicts(&self) -> u64 {
        self.cc.conflicts()
    }

    /// See [`ConcurrencyControl::write_probe`].
    pub fn write_probe(&self, tree: TreeId, key: &[u8]) -> Option<crate::locks::WriteProbe<'_>> {
        self.cc.write_probe(tree, key)
    }

    /// The first record of the oldest transaction that may still roll back: the log must keep it.
    pub fn oldest_first_lsn(&self) -> Option<Lsn> {
        let mut min: Option<Lsn> = None;
        self.txns.each(|m| {
            for s in m.values() {
                if s.first_lsn != 0 && !s.committing && min.is_none_or(|x| s.first_lsn < x) {
                    min = Some(s.first_lsn);
                }
            }
        });
        min
    }

    /// What a checkpoint record needs.
    pub fn snapshot(&self) -> TxnSnapshot {
        let mut active: Vec<(TxnId, Lsn, Lsn)> = Vec::new();
        self.txns.each(|m| {
            active.extend(
                m.iter()
                    .filter(|(_, s)| s.last_lsn != 0 && !s.committing)
                    .map(|(&id, s)| (id, s.last_lsn, s.last_lsn)),
            )
        });
        active.sort_unstable();
        let oldest_first_lsn = self.oldest_first_lsn();
        TxnSnapshot {
            active,
            oldest_first_lsn,
            next_txn: self.next_txn(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_thread_gets_consecutive_ids_and_next_txn_is_exact() {
        let t = TxnTable::new(4096);
        for want in 1..=200 {
            assert_eq!(t.begin(None).0, want);
            assert_eq!(t.next_txn(), want + 1);
        }
    }

    #[test]
    fn ids_from_many_threads_are_unique_and_below_next_txn() {
        let t = TxnTable::new(4096);
        let mut all: Vec<TxnId> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..150).map(|_| t.begin(None).0).collect::<Vec<_>>()))
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let max = *all.iter().max().unwrap();
        assert!(t.next_txn() > max, "{} <= {max}", t.next_txn());
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 600);
        // After recovery sets the next id, ids start there.
        let mut t = t;
        t.set_next_txn(5000);
        assert_eq!(t.next_txn(), 5000);
        assert_eq!(t.begin(None).0, 5000);
    }
}
