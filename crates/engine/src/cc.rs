//! The concurrency-control seam: what a transaction must do before it reads or writes a record
//! or a whole tree, and what happens when it ends. Strict two-phase locking with no-wait
//! conflicts ([`TwoPhaseLocking`], over `locks.rs`) is today's implementation and gives
//! serializable transactions; snapshot isolation with a version store is meant to be another.

use crate::btree::tree::Reach;
use crate::error::Result;
use crate::locks::{LockKey, LockManager, LockMode, WriteProbe};
use crate::ranges::{Change, ScanClaim};
use crate::wal::record::{TreeId, TxnId};
use std::ops::Bound;

/// A scan's range of keys.
pub(crate) type KeyRange<'a> = (Bound<&'a [u8]>, Bound<&'a [u8]>);

/// What keeps a scan free of phantoms ([`ConcurrencyControl::scan_begin`]).
#[derive(Debug)]
pub(crate) enum ScanGuard {
    /// The transaction holds the whole tree (S or X): nothing more to do as it reads.
    Tree,
    /// A key-range claim, grown as the scan reads (see `ranges.rs`).
    Ranges(ScanClaim),
}

/// Read or write access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// What a protocol keeps per transaction, stored with the transaction in the transaction table
/// (so the common path touches one table shard, not a second map of the protocol's own).
#[derive(Default, Clone, Debug)]
pub(crate) struct CcState {
    /// Record locks held (2PL).
    pub locks: Vec<LockKey>,
    /// Tree locks held (2PL): few, kept apart so that the check of what a transaction holds
    /// on a tree does not walk its record locks (a bulk load holds thousands).
    pub trees: Vec<LockKey>,
    /// The record lock the last write access took anew (the last of `locks`), if it did: a
    /// write refused before it changed anything gives it back
    /// ([`ConcurrencyControl::refused_write`]).
    pub fresh: Option<LockKey>,
}

impl CcState {
    /// Every lock held.
    pub fn all(&self) -> impl Iterator<Item = &LockKey> {
        self.trees.iter().chain(&self.locks)
    }
}

/// A concurrency-control protocol, used by many threads at once (each call synchronises what it
/// touches itself; a transaction's [`CcState`] comes from its table entry, locked by the caller).
pub(crate) trait ConcurrencyControl: Send + Sync {
    /// Before `txn` accesses `key` of `tree` (or, for `None`, the whole tree: a scan). An error
    /// (a conflict) leaves the transaction active; the caller aborts and retries.
    fn before_access(
        &self,
        txn: TxnId,
        state: &mut CcState,
        tree: TreeId,
        key: Option<&[u8]>,
        access: Access,
    ) -> Result<()>;
    /// Before `txn` scans `tree` (descending if `reverse`): the whole tree if the transaction
    /// holds it already, else a key-range claim to grow with [`ConcurrencyControl::scan_reach`]
    /// and end with [`ConcurrencyControl::scan_end`]. An error (a conflict: the tree is being
    /// loaded) leaves the transaction active.
    fn scan_begin(
        &self,
        txn: TxnId,
        state: &mut CcState,
        at: (TreeId, KeyRange<'_>),
        reverse: bool,
    ) -> Result<ScanGuard>;
    /// `txn`'s scan of `tree` read `keys` and reached `reach`, told under the latch of the leaf
    /// it read: grows its claim, or fails with a conflict (another transaction's uncommitted
    /// change among the keys or in the extent; the claim stays as it was).
    fn scan_reach(
        &self,
        txn: TxnId,
        tree: TreeId,
        claim: &ScanClaim,
        keys: &mut dyn Iterator<Item = &[u8]>,
        reach: Reach<'_>,
    ) -> Result<()>;
    /// The scan (or a cursor's batch) ended, however: its claim stops growing.
    fn scan_end(&self, tree: TreeId, claim: &ScanClaim);
    /// Before `txn` makes `change` to `key` of `tree`, holding the latch of the key's leaf (or
    /// the core latch exclusive): refused if it changes what another transaction scanned.
    fn before_change(&self, txn: TxnId, tree: TreeId, key: &[u8], change: Change<'_>)
        -> Result<()>;
    /// Whether any transaction holds a key-range claim on `tree`, or is about to: a look with no
    /// lock, for writers (see `ranges.rs`).
    fn claims_any(&self, tree: TreeId) -> bool;
    /// Whether a key of `tree` that `txn`'s rollback puts back between `pred` and `succ` (its
    /// neighbours in its leaf, latched) lands where another transaction's scan claims the
    /// range or its gap (see [`crate::ranges::RangeLocks::insert_claimed`]). Nothing recorded.
    fn insert_claimed(
        &self,
        txn: TxnId,
        tree: TreeId,
        key: &[u8],
        around: (Option<&[u8]>, Option<&[u8]>),
    ) -> bool;
    /// `txn`'s write, allowed by [`ConcurrencyControl::before_access`], was refused by
    /// [`ConcurrencyControl::before_change`] before it changed anything: the record lock that
    /// access took anew (if it did) is given back, so that the scan that refused it does not
    /// meet it later. Under strict 2PL a lock under which nothing was read or written may go.
    fn refused_write(&self, txn: TxnId, state: &mut CcState);
    /// Before `txn` bulk loads `tree` (see `Core::load`): after this, until it ends, it may
    /// change the tree's records without taking their locks, and no other transaction reads or
    /// writes the tree. An error (a conflict) leaves the transaction active.
    fn before_load(&self, txn: TxnId, state: &mut CcState, tree: TreeId) -> Result<()>;
    /// `txn`'s scan of `tree` was refused: may it wait for the tree (see `locks.rs`)? If so,
    /// new writers of the tree are turned away until `txn` gets it, ends or calls
    /// [`ConcurrencyControl::stop_waiting`].
    /// `same_thread` are the transactions last used by the calling thread (with their state):
    /// a wait for one of them could only time out.
    fn wait_for_scan(
        &self,
        txn: TxnId,
        state: &CcState,
        tree: TreeId,
        same_thread: &[(TxnId, CcState)],
    ) -> bool;
    /// `txn` no longer waits for a scan.
    fn stop_waiting(&self, txn: TxnId);
    /// `txn` ended (committed or rolled back): release what it holds.
    fn end(&self, txn: TxnId, state: &CcState);
    /// Accesses refused so far.
    fn conflicts(&self) -> u64;
    /// For a read outside any transaction: a probe of whether a transaction may hold an
    /// uncommitted change of record `key` of `tree`, to be asked while the reader still holds
    /// the latch under which it saw the record (see [`LockManager::write_probe`]). `None`: this
    /// protocol cannot tell, and such reads run as one-read transactions.
    fn write_probe(&self, tree: TreeId, key: &[u8]) -> Option<WriteProbe<'_>>;
}

/// Strict 2PL with multi-granularity locks, no-wait (see `locks.rs`).
#[derive(Default)]
pub(crate) struct TwoPhaseLocking {
    locks: LockManager,
}

impl ConcurrencyControl for TwoPhaseLocking {
    fn before_access(
        &self,
        txn: TxnId,
        state: &mut CcState,
        tree: TreeId,
        key: Option<&[u8]>,
        access: Access,
    ) -> Result<()> {
        let write = access == Access::Write;
        let tk = LockKey::Tree(tree);
        let ik = LockKey::TreeIx(tree);
        // What the transaction holds on the tree already: IX in the tree's writer gate, or S/X
        // in the table.
        let (has_ix, has_table) = (state.trees.contains(&ik), state.trees.contains(&tk));
        match key {
            Some(k) => {
                // IS on the tree is compatible with every tree mode the engine requests (IS,
                // IX for writers, S for scans; X on a whole tree is never requested, only
                // reached by joining S and IX), so a record read does not take it: every read
                // would otherwise write one lock-table entry that all threads share. A writer's
                // IX goes through the tree's striped writer gate for the same reason.
                if write && !has_ix {
                    if has_table {
                        // S joined with IX: X, in the table.
                        self.locks.acquire(txn, &tk, LockMode::IX)?;
                    } else {
                        self.locks.acquire_ix(txn, tree)?;
                        state.trees.push(ik);
                    }
                }
                if !write && !has_ix && self.locks.loading(tree) {
                    // A loader changes records without their locks: a reader other than the
                    // loader itself (or a writer of the tree, which the loader excludes) is
                    // refused as by the loader's X on the tree, which records do not check.
                    if !state.trees.contains(&LockKey::TreeLoad(tree)) {
                        return Err(self.locks.refuse(tree));
                    }
                }
                let rm = if write { LockMode::X } else { LockMode::S };
                let rk = LockKey::Record(tree, self.locks.record_name(tree, k));
                state.fresh = None;
                if self.locks.acquire(txn, &rk, rm)? {
                    state.locks.push(rk);
                    if write {
                        state.fresh = Some(rk);
                    }
                }
                Ok(())
            }
            None => {
                let m = if write || has_ix {
                    LockMode::X
                } else {
                    LockMode::S
                };
                if self.locks.acquire_with(txn, &tk, m, has_ix)? {
                    state.trees.push(tk);
                }
                Ok(())
            }
        }
    }

    fn before_load(&self, txn: TxnId, state: &mut CcState, tree: TreeId) -> Result<()> {
        let load = LockKey::TreeLoad(tree);
        if state.trees.contains(&load) {
            return Ok(());
        }
        let has_ix = state.trees.contains(&LockKey::TreeIx(tree));
        if self.locks.acquire_load(txn, tree, has_ix)? {
            state.trees.push(LockKey::Tree(tree));
        }
        state.trees.push(load);
        Ok(())
    }

    fn wait_for_scan(
        &self,
        txn: TxnId,
        state: &CcState,
        tree: TreeId,
        same_thread: &[(TxnId, CcState)],
    ) -> bool {
        // Only a transaction that holds no write lock waits: then nobody waits for it. And
        // only for writers on other threads: this thread's own cannot end while it waits.
        let writes = state.all().any(|k| self.locks.holds_write(txn, k));
        let own_writer = same_thread.iter().any(|(t, st)| {
            *t != txn
                && (st.trees.contains(&LockKey::TreeIx(tree))
                    || self.locks.holds_write(*t, &LockKey::Tree(tree)))
        });
        !writes && !own_writer && self.locks.claim_scan(txn, tree)
    }

    fn stop_waiting(&self, txn: TxnId) {
        self.locks.drop_scan_claims(txn);
    }

    fn scan_begin(
        &self,
        txn: TxnId,
        state: &mut CcState,
        (tree, range): (TreeId, KeyRange<'_>),
        reverse: bool,
    ) -> Result<ScanGuard> {
        if state.trees.contains(&LockKey::Tree(tree)) {
            return Ok(ScanGuard::Tree);
        }
        let mut claim = self
            .locks
            .with_ranges(tree, |r| r.begin(txn, range, reverse));
        let mark = LockKey::TreeRange(tree);
        if !state.trees.contains(&mark) {
            state.trees.push(mark);
        }
        // Made, then the loaders looked at (a loader announces itself, then looks at the
        // claims). A claim refused here stays, empty and closed, to the transaction's end.
        if self.locks.loading(tree) && !state.trees.contains(&LockKey::TreeLoad(tree)) {
            self.locks.with_ranges(tree, |r| r.end_scan(&claim));
            return Err(self.locks.refuse(tree));
        }
        claim.own_ix = state.trees.contains(&LockKey::TreeIx(tree));
        Ok(ScanGuard::Ranges(claim))
    }

    fn scan_reach(
        &self,
        txn: TxnId,
        tree: TreeId,
        claim: &ScanClaim,
        keys: &mut dyn Iterator<Item = &[u8]>,
        reach: Reach<'_>,
    ) -> Result<()> {
        // No other writer in the tree (the usual case of a lone scan): nothing to probe.
        if self.locks.others_writing(tree, claim.own_ix) {
            for k in keys {
                if self.locks.written_by_other(txn, tree, k) {
                    return Err(self
                        .locks
                        .refuse_range(tree, "a record changed by a transaction"));
                }
            }
        }
        self.locks
            .with_ranges(tree, |r| r.reach(txn, claim, reach))
            .map_err(|_| {
                self.locks
                    .refuse_range(tree, "a record deleted by a transaction")
            })
    }

    fn scan_end(&self, tree: TreeId, claim: &ScanClaim) {
        self.locks.with_ranges(tree, |r| r.end_scan(claim));
    }

    fn before_change(
        &self,
        txn: TxnId,
        tree: TreeId,
        key: &[u8],
        change: Change<'_>,
    ) -> Result<()> {
        self.locks
            .with_ranges(tree, |r| r.check(txn, key, change))
            .map_err(|why| self.locks.refuse_range(tree, why))
    }

    fn refused_write(&self, txn: TxnId, state: &mut CcState) {
        let Some(k) = state.fresh.take() else {
            return;
        };
        if state.locks.last() == Some(&k) {
            state.locks.pop();
            self.locks.release(txn, &k);
        }
    }

    fn claims_any(&self, tree: TreeId) -> bool {
        self.locks.with_ranges(tree, |r| r.any())
    }

    fn insert_claimed(
        &self,
        txn: TxnId,
        tree: TreeId,
        key: &[u8],
        around: (Option<&[u8]>, Option<&[u8]>),
    ) -> bool {
        self.locks
            .with_ranges(tree, |r| r.insert_claimed(txn, key, around))
    }

    fn end(&self, txn: TxnId, state: &CcState) {
        // Claims and uncommitted deletes go first (the changes are committed or undone): a
        // deleter holds the tree in IX or X, a scanner its range mark. Before the record
        // locks, so that the next deleter of a key finds its delete's entry gone.
        let mut done: smallvec::SmallVec<[TreeId; 4]> = smallvec::SmallVec::new();
        for k in &state.trees {
            if let LockKey::Tree(t) | LockKey::TreeIx(t) | LockKey::TreeRange(t) = *k {
                if !done.contains(&t) {
                    done.push(t);
                    self.locks.with_ranges(t, |r| r.release(txn));
                }
            }
        }
        self.locks.release_all(txn, &state.trees);
        self.locks.release_all(txn, &state.locks);
    }

    fn conflicts(&self) -> u64 {
        self.locks.conflicts()
    }

    fn write_probe(&self, tree: TreeId, key: &[u8]) -> Option<WriteProbe<'_>> {
        Some(self.locks.write_probe(tree, key))
    }
}
