//! The version store as the core's operations share it: the registry of active snapshots,
//! striped so that snapshot transactions begin and end beside each other, and the store, whose
//! parts latch themselves (see [`VersionStore`]).
//!
//! Who changes what, and why a snapshot reader with the core latch shared sees a consistent
//! state:
//!
//! - A plain write (core latch shared) holds the record's exclusive lock and the latch of its
//!   leaf; before it changes the leaf it appends the version it replaces to its segment and
//!   then makes itself the record's head, uncommitted (in the head's shard).
//! - A commit gives its heads their timestamp and only then publishes that timestamp as the
//!   newest, before its locks go; commits that changed versions do both in turn, under the
//!   store's writers' mutex. A snapshot begins at the newest published timestamp, so it sees
//!   all of a commit or none of it.
//! - A snapshot reader reads the record from the tree (under the leaf's latch), then its head
//!   (in its shard). Whatever it read from the tree, a version its snapshot may not see has a
//!   head by then that is uncommitted or newer than the snapshot (the head is set before the
//!   leaf changes), and the reader follows the chain of before-images to the version it sees.
//!   Chains are append-only, and purge frees only what no registered snapshot reads, so a
//!   reader needs no latch across its reads of the chain.
//! - A rollback takes a leaf change and its head back: it runs with the core latch exclusive,
//!   so no reader is between its two reads then.
//!
//! Following a chain reads the undo device and its block cache under their own mutex.

use super::{ReadTally, Ts, VersionStore};
use crate::error::Result;
use crate::sync::Shards;
use crate::wal::record::{TreeId, TxnId};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Stripes of the snapshot registry.
const SNAPSHOT_STRIPES: usize = 16;

/// One stripe of [`Snapshots`]: the snapshot of each of its transactions, and how many hold
/// each timestamp.
#[derive(Default)]
struct Stripe {
    of: HashMap<TxnId, Ts>,
    held: BTreeMap<Ts, u32>,
}

/// The active snapshots, striped by transaction id, and the newest commit timestamp.
pub(crate) struct Snapshots {
    stripes: Shards<Stripe>,
    /// Commits so far that changed versions (the newest timestamp). Moved by a commit holding
    /// the store's writers' mutex, after its heads carry the new value; read by snapshots
    /// that begin beside it.
    last_ts: AtomicU64,
    /// Snapshots ended so far (see `VersionStore::purge`).
    ends: AtomicU64,
}

impl Snapshots {
    pub fn new() -> Snapshots {
        Snapshots {
            stripes: Shards::new(SNAPSHOT_STRIPES),
            last_ts: AtomicU64::new(0),
            ends: AtomicU64::new(0),
        }
    }

    /// `txn` starts as a snapshot-isolation transaction: it sees every commit so far.
    pub fn begin(&self, txn: TxnId) -> Ts {
        let mut st = self.stripes.lock(crate::txn_table::shard(txn));
        // Read under the stripe's lock (see `oldest`).
        let s = self.last_ts();
        let prev = st.of.insert(txn, s);
        debug_assert!(prev.is_none(), "transaction {txn} began a second snapshot");
        *st.held.entry(s).or_default() += 1;
        s
    }

    /// `txn`'s snapshot, if it is a snapshot transaction.
    pub fn of(&self, txn: TxnId) -> Option<Ts> {
        self.stripes
            .lock(crate::txn_table::shard(txn))
            .of
            .get(&txn)
            .copied()
    }

    /// `txn` ended: its snapshot, if it had one, is no longer held.
    pub fn end(&self, txn: TxnId) -> Option<Ts> {
        let mut st = self.stripes.lock(crate::txn_table::shard(txn));
        let s = st.of.remove(&txn)?;
        if let Some(n) = st.held.get_mut(&s) {
            *n -= 1;
            if *n == 0 {
                st.held.remove(&s);
            }
        }
        // Counted once it is out of the registry, before its end looks at what is retired.
        self.ends.fetch_add(1, Ordering::SeqCst);
        Some(s)
    }

    /// The oldest active snapshot, or the newest commit when there is none.
    ///
    /// A snapshot that begins meanwhile is no older than the result: the newest timestamp is
    /// read first, then each stripe under its lock. A begin that takes its stripe's lock after
    /// that stripe was looked at reads the timestamp after this did, so no older one; a begin
    /// that took it before is seen.
    pub fn oldest(&self) -> Ts {
        let newest = self.last_ts();
        let mut oldest = newest;
        self.stripes.each(|st| {
            if let Some((&s, _)) = st.held.first_key_value() {
                oldest = oldest.min(s);
            }
        });
        oldest
    }

    /// Snapshots ended so far.
    pub fn ends(&self) -> u64 {
        self.ends.load(Ordering::SeqCst)
    }

    pub fn last_ts(&self) -> Ts {
        self.last_ts.load(Ordering::SeqCst)
    }

    /// Makes `ts`, the next timestamp, the newest commit: once its heads carry it (commits
    /// are serialized by the store's writers' mutex).
    pub fn publish(&self, ts: Ts) {
        debug_assert_eq!(ts, self.last_ts() + 1);
        self.last_ts.store(ts, Ordering::SeqCst);
    }
}

/// The version store with its snapshot registry, shared by the core (see the module notes).
pub(crate) struct Versions {
    store: VersionStore,
    snaps: Arc<Snapshots>,
}

impl Versions {
    pub fn new(store: VersionStore) -> Versions {
        let snaps = store.snapshots().clone();
        Versions { store, snaps }
    }

    /// The store (its parts latch themselves), the core latch held either way.
    pub fn store(&self) -> &VersionStore {
        &self.store
    }

    /// `txn`'s snapshot, if it is a snapshot transaction.
    pub fn snapshot_of(&self, txn: TxnId) -> Option<Ts> {
        self.snaps.of(txn)
    }

    /// Starts `txn`'s snapshot (the core latch held either way).
    pub fn begin_snapshot(&self, txn: TxnId) -> Ts {
        self.snaps.begin(txn)
    }

    /// [`VersionStore::visible`]; what it read goes to `tally`, for [`Versions::count`] once
    /// the operation is done.
    pub fn visible(
        &self,
        txn: TxnId,
        tree: TreeId,
        key: &[u8],
        current: Option<Vec<u8>>,
        tally: &mut ReadTally,
    ) -> Result<Option<Vec<u8>>> {
        self.store.visible(txn, tree, key, current, tally)
    }

    /// Adds what snapshot reads did to the counters.
    pub fn count(&self, tally: &ReadTally) {
        self.store.count(tally);
    }

    /// [`VersionStore::check_write`] and [`VersionStore::before_write`]: the caller holds the
    /// latch of the leaf that has `key` (so `old` is its version and no other writer of the
    /// leaf runs), or the core latch exclusive, and `key`'s exclusive lock.
    pub fn before_write(
        &self,
        txn: TxnId,
        tree: TreeId,
        key: &[u8],
        old: Option<&[u8]>,
    ) -> Result<()> {
        self.store.check_write(txn, tree, key)?;
        self.store.before_write(txn, tree, key, old)
    }

    /// [`VersionStore::write_completed`]: holding no latch, after a write operation.
    pub fn write_completed(&self, txn: TxnId) -> Result<()> {
        self.store.write_completed(txn)
    }

    /// [`VersionStore::commit`].
    pub fn commit(&self, txn: TxnId) -> Result<()> {
        self.store.commit(txn)
    }

    /// The end of a transaction that logged nothing, with the core latch shared: a snapshot
    /// reader's snapshot is released (the store purged only if that lets heads go); a
    /// before-image that a refused write left is committed, as the exclusive commit would.
    pub fn end_unlogged(&self, txn: TxnId) -> Result<()> {
        if !self.store.wrote_nothing(txn) {
            return self.commit(txn);
        }
        if let Some(snap) = self.snaps.end(txn) {
            if self.store.purge_due_after(snap) {
                self.store.purge();
            }
        }
        Ok(())
    }

    /// Whether `txn` left no version in the store (no before-image): its rollback has nothing
    /// to take back there.
    pub fn wrote_nothing(&self, txn: TxnId) -> bool {
        self.store.wrote_nothing(txn)
    }
}
