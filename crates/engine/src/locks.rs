//! Record and tree locks for transactions: strict two-phase locking with multi-granularity modes
//! (a tree is locked IS/IX/S/X, a record S/X), held until the transaction ends. Conflicts follow the
//! no-wait policy: the requester gets `Error::Conflict` at once and is expected to abort and retry,
//! so there are no deadlocks. A refused record request notes a holder for its thread
//! ([`take_refuser`]): the transaction's operation may wait for that holder outside every latch
//! if it is committing (`Txn::past_committers`), which needs no lock either, so it closes no
//! cycle.
//!
//! Isolation: reads take S locks on records, writes take IX on the tree and X on the record,
//! scans a key-range claim on what they read (`ranges.rs`, kept in the tree's gate here), a bulk
//! load X on the whole tree. Together this is serializable.
//!
//! One exception keeps long readers from starving: a read-only transaction whose scan is refused
//! by writers may become the tree's *waiting scan* ([`LockManager::claim_scan`]). While it waits,
//! new writers of that tree are refused (writers already in it finish), so the scan gets through
//! once they end. The waiter holds no write lock and only one transaction waits per tree, so no
//! wait cycle can form; the caller also bounds the wait.

use crate::error::{Error, Result};
use crate::ranges::RangeLocks;
use crate::sync::{lock, Shards};
use crate::wal::record::{TreeId, TxnId};
use crossbeam_utils::CachePadded;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
/// User keys are hashed with foldhash's seeded quality hasher: several times SipHash's speed
/// on short keys, still randomly seeded per process (keys come from users).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::quality::RandomState>;

thread_local! {
    /// A holder of the record lock this thread's last refused request wanted (0: none noted).
    static REFUSER: std::cell::Cell<TxnId> = const { std::cell::Cell::new(0) };
    /// The refuser noted last held a page (flushless), not a record lock.
    static PAGE_REFUSER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A transaction that held the record lock this thread was last refused, if one was noted
/// since the last call (and forgets it). A caller that finds it committing may wait for its end
/// and ask again (`Txn`'s operations do): a committing transaction waits for no lock, so such a
/// wait cannot close a cycle.
pub(crate) fn take_refuser() -> Option<TxnId> {
    take_refuser_of().map(|(t, _)| t)
}

/// [`take_refuser`], and whether what it held was a page (flushless, [`note_refuser`])
/// rather than a record lock.
pub(crate) fn take_refuser_of() -> Option<(TxnId, bool)> {
    let page = PAGE_REFUSER.with(|p| p.replace(false));
    Some(REFUSER.with(|r| r.replace(0)))
        .filter(|&t| t != 0)
        .map(|t| (t, page))
}

/// Notes `holder` as what refused this thread's last request: in the flushless mode, the live
/// transaction whose changes a page holds (one live transaction per page). Waited for as a
/// record lock's holder is, by the same rule (wait-die by id, or its commit).
pub(crate) fn note_refuser(holder: TxnId) {
    REFUSER.with(|r| r.set(holder));
    PAGE_REFUSER.with(|p| p.set(true));
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LockMode {
    /// Kept for completeness of the modes; the engine's reads take no IS (see `cc.rs`).
    #[allow(dead_code)]
    IS,
    IX,
    S,
    X,
}

impl LockMode {
    fn compatible(self, other: LockMode) -> bool {
        use LockMode::*;
        matches!(
            (self, other),
            (IS, IS) | (IS, IX) | (IS, S) | (IX, IS) | (IX, IX) | (S, IS) | (S, S)
        )
    }

    /// The weakest mode at least as strong as both.
    fn join(self, other: LockMode) -> LockMode {
        use LockMode::*;
        match (self, other) {
            (X, _) | (_, X) => X,
            (S, IX) | (IX, S) => X, // SIX folded into X: simpler, stricter
            (a, b) => a.max(b),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockKey {
    Tree(TreeId),
    /// A record, named by a 64-bit hash of its key ([`LockManager::record_name`]): a lock
    /// entry then copies and allocates nothing. Two keys whose names collide share one lock,
    /// which can only refuse more (a spurious, retryable conflict), never let two writers in.
    Record(TreeId, u64),
    /// IX on a tree, counted in the tree's striped writer gate rather than held in the table
    /// (see [`LockManager::acquire_ix`]).
    TreeIx(TreeId),
    /// A bulk load of a tree, held with [`LockKey::Tree`] in X and counted in the tree's gate
    /// (see [`LockManager::acquire_load`]).
    TreeLoad(TreeId),
    /// Key-range claims of scans in a tree, kept in the tree's gate (`ranges.rs`), not in the
    /// table: the transaction's note that it has some to give back.
    TreeRange(TreeId),
}

/// Writers (IX holders) of one tree, counted per stripe so that writers on different cores do
/// not write one cache line; and how many transactions hold the tree in S or X (in the table).
/// An IX holder counts itself in first and then looks for S/X holders; an S/X taker announces
/// itself first and then sums the writers: with sequentially consistent operations at least
/// one of two racing requests sees the other (and, no-wait, refuses itself).
struct TreeGate {
    writers: Box<[CachePadded<AtomicI64>]>,
    strong: AtomicU64,
    /// Transactions loading the tree ([`LockKey::TreeLoad`]): they change records without
    /// record locks, so record readers look here (a line written only by loads).
    loading: CachePadded<AtomicU64>,
    /// Key-range locks of the tree's scans, and its uncommitted deletes.
    ranges: CachePadded<RangeLocks>,
}

impl TreeGate {
    fn new() -> TreeGate {
        TreeGate {
            writers: (0..GATE_STRIPES)
                .map(|_| CachePadded::new(AtomicI64::new(0)))
                .collect(),
            strong: AtomicU64::new(0),
            loading: CachePadded::new(AtomicU64::new(0)),
            ranges: CachePadded::new(RangeLocks::default()),
        }
    }

    /// IX holders, all stripes (a count taken in on one stripe may be taken out on another).
    fn writers(&self) -> i64 {
        self.writers.iter().map(|w| w.load(Ordering::SeqCst)).sum()
    }
}

/// Stripes of a tree's writer gate.
const GATE_STRIPES: usize = 16;

/// The holders of one lock: nearly always one or two, kept inline (a new lock allocates
/// nothing beyond its map slot).
type Holders = smallvec::SmallVec<[(TxnId, LockMode); 2]>;

/// Lock table shards: enough that two threads rarely meet on one.
const SHARDS: usize = 64;

/// The lock table, sharded by key: each shard is a map of held locks under its own mutex, so
/// transactions on different keys do not serialise on one latch. A shard's mutex is held only
/// for the map operation, never across I/O or another shard's mutex.
pub struct LockManager {
    held: Shards<HashMap<LockKey, Holders>>,
    hasher: foldhash::quality::RandomState,
    /// The read-only transaction whose refused scan waits for the tree, per tree (rarely used:
    /// writers look at it only while `scan_waiters_n` says one exists).
    scan_waiters: Mutex<HashMap<TreeId, TxnId>>,
    scan_waiters_n: AtomicUsize,
    conflicts: AtomicU64,
    /// Writer gates of trees with small ids, found with one load (no shared line written to
    /// find one); trees with larger ids in `more`.
    gates: Box<[std::sync::OnceLock<TreeGate>]>,
    more: RwLock<rustc_hash::FxHashMap<TreeId, Arc<TreeGate>>>,
    /// Record X locks held, counted per stripe of (tree, key) hashes: a reader outside any
    /// transaction that finds its key's stripe at zero knows no transaction holds an
    /// uncommitted change of that key (see [`LockManager::write_probe`]). Only writers write
    /// these lines; such readers only load them.
    write_locked: Box<[AtomicU32]>,
}

/// Stripes of [`LockManager::write_locked`]: enough that a key shares its stripe with few
/// keys being written at any moment.
const WRITE_STRIPES: usize = 4096;

/// Trees whose writer gate sits in a fixed slot.
const GATE_SLOTS: usize = 256;

impl Default for LockManager {
    fn default() -> Self {
        LockManager {
            held: Shards::new(SHARDS),
            hasher: Default::default(),
            scan_waiters: Default::default(),
            scan_waiters_n: AtomicUsize::new(0),
            conflicts: AtomicU64::new(0),
            gates: (0..GATE_SLOTS)
                .map(|_| std::sync::OnceLock::new())
                .collect(),
            more: RwLock::new(Default::default()),
            write_locked: (0..WRITE_STRIPES).map(|_| AtomicU32::new(0)).collect(),
        }
    }
}

impl LockManager {
    /// Accesses refused so far.
    pub fn conflicts(&self) -> u64 {
        self.conflicts.load(Ordering::Relaxed)
    }

    fn shard_hash(&self, key: &LockKey) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The name of record `key` of `tree` in the lock table ([`LockKey::Record`]).
    pub fn record_name(&self, tree: TreeId, key: &[u8]) -> u64 {
        self.hasher.hash_one((tree, key))
    }

    /// The [`LockManager::write_locked`] stripe of the record named `name`.
    fn write_stripe(&self, name: u64) -> &AtomicU32 {
        &self.write_locked
            [(name.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize % WRITE_STRIPES]
    }

    /// A probe that tells whether any transaction may hold record `key` of `tree` in X (and so
    /// may have changed it without committing yet). An X holder is counted from before it
    /// changes the record until after its commit or rollback, so a reader that saw the record
    /// under the latch that guards its page, and probes while it still holds that latch, read
    /// committed data if the probe says no writer. Conservative: other keys share the stripe.
    pub fn write_probe(&self, tree: TreeId, key: &[u8]) -> WriteProbe<'_> {
        let gate = match self.gates.get(tree as usize) {
            Some(slot) => GateRef::Slot(slot.get_or_init(TreeGate::new)),
            None => GateRef::More(self.with_more_gate(tree)),
        };
        WriteProbe(self.write_stripe(self.record_name(tree, key)), gate)
    }

    /// Takes `tree` whole in X for a bulk load by `txn` (which may hold IX on it already:
    /// `own_ix`), refused while any other transaction holds a lock on the tree, and counts the
    /// load in the tree's gate, where readers of its records look: from here until
    /// [`LockManager::release_all`] releases the returned key, `txn` may change the tree's
    /// records without record locks. The caller remembers [`LockKey::Tree`] (when this returns
    /// a new lock, as [`LockManager::acquire_with`]) and [`LockKey::TreeLoad`].
    pub fn acquire_load(&self, txn: TxnId, tree: TreeId, own_ix: bool) -> Result<bool> {
        let new = self.acquire_with(txn, &LockKey::Tree(tree), LockMode::X, own_ix)?;
        // Announced, then the scans looked at: a scan counts itself, then looks at `loading`.
        let scanned = self.with_gate(tree, |gate| {
            gate.loading.fetch_add(1, Ordering::SeqCst);
            gate.ranges.others(txn)
        });
        if scanned {
            self.with_gate(tree, |gate| gate.loading.fetch_sub(1, Ordering::SeqCst));
            if new {
                self.release_all(txn, &[LockKey::Tree(tree)]);
            }
            return Err(self.conflict(format!("tree {tree} (being scanned)")));
        }
        Ok(new)
    }

    /// Runs `f` on `tree`'s key-range locks.
    pub fn with_ranges<R>(&self, tree: TreeId, f: impl FnOnce(&RangeLocks) -> R) -> R {
        self.with_gate(tree, |gate| f(&gate.ranges))
    }

    /// Whether a transaction other than `txn` holds record `key` of `tree` in X: a scan that
    /// read the record under its leaf's latch meets an uncommitted change (conservative only
    /// in that a stripe count comes first, exact after).
    pub fn written_by_other(&self, txn: TxnId, tree: TreeId, key: &[u8]) -> bool {
        let name = self.record_name(tree, key);
        if self.write_stripe(name).load(Ordering::SeqCst) == 0 {
            return false;
        }
        let rk = LockKey::Record(tree, name);
        self.held
            .lock(self.shard_hash(&rk))
            .get(&rk)
            .is_some_and(|h| h.iter().any(|&(t, m)| t != txn && m == LockMode::X))
    }

    /// Whether a transaction other than one holding IX on `tree` (counted once in `own_ix`) may
    /// hold an uncommitted change of a record of `tree`: one holds IX or X on it. A writer is
    /// counted in the gate before it takes its record locks, and uncounted only once its
    /// changes are committed or undone, so a reader that saw a change under its page's latch
    /// and then finds no writer here read a committed one.
    pub fn others_writing(&self, tree: TreeId, own_ix: bool) -> bool {
        self.with_gate(tree, |gate| {
            gate.writers() > i64::from(own_ix) || gate.strong.load(Ordering::SeqCst) > 0
        })
    }

    /// The conflict a scan meets at `key` of `tree` (see `ranges.rs`).
    pub fn refuse_range(&self, tree: TreeId, why: &str) -> Error {
        self.conflict(format!("tree {tree} ({why})"))
    }

    /// Whether a transaction other than one holding [`LockKey::TreeLoad`] may not read records
    /// of `tree`: one loads it.
    pub fn loading(&self, tree: TreeId) -> bool {
        self.with_gate(tree, |gate| gate.loading.load(Ordering::SeqCst) > 0)
    }

    /// Whether a new writer of `tree` stands back for another transaction's waiting scan.
    fn yields_to_scan(&self, txn: TxnId, tree: TreeId) -> bool {
        self.scan_waiters_n.load(Ordering::SeqCst) > 0
            && lock(&self.scan_waiters)
                .get(&tree)
                .is_some_and(|&w| w != txn)
    }

    /// Runs `f` on `tree`'s writer gate (made at its first use).
    fn with_gate<R>(&self, tree: TreeId, f: impl FnOnce(&TreeGate) -> R) -> R {
        if let Some(slot) = self.gates.get(tree as usize) {
            return f(slot.get_or_init(TreeGate::new));
        }
        f(&self.with_more_gate(tree))
    }

    /// The writer gate of a tree whose id has no fixed slot.
    fn with_more_gate(&self, tree: TreeId) -> Arc<TreeGate> {
        let found = self
            .more
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&tree)
            .cloned();
        found.unwrap_or_else(|| {
            let mut w = self.more.write().unwrap_or_else(|p| p.into_inner());
            w.entry(tree)
                .or_insert_with(|| Arc::new(TreeGate::new()))
                .clone()
        })
    }

    /// The conflict a reader of `tree`'s records meets while another transaction loads it.
    pub fn refuse(&self, tree: TreeId) -> Error {
        self.conflict(format!("tree {tree} (being loaded)"))
    }

    fn conflict(&self, what: String) -> Error {
        self.conflicts.fetch_add(1, Ordering::Relaxed);
        Error::Conflict { what }
    }

    /// IX on `tree` for `txn`, which holds no lock on the tree yet, through the tree's writer
    /// gate: a count on this thread's stripe, refused if another transaction holds the tree in
    /// S or X, or a scan waits for it. The caller remembers [`LockKey::TreeIx`].
    pub fn acquire_ix(&self, txn: TxnId, tree: TreeId) -> Result<()> {
        if self.yields_to_scan(txn, tree) {
            return Err(self.conflict(format!("tree {tree}")));
        }
        let stripe = crate::sync::stripe() % GATE_STRIPES;
        let strong = self.with_gate(tree, |gate| {
            gate.writers[stripe].fetch_add(1, Ordering::SeqCst);
            gate.strong.load(Ordering::SeqCst)
        });
        if strong > 0 {
            let key = LockKey::Tree(tree);
            let shard = self.held.lock(self.shard_hash(&key));
            let refused = shard
                .get(&key)
                .is_some_and(|h| h.iter().any(|&(t, _)| t != txn));
            if refused {
                drop(shard);
                self.with_gate(tree, |gate| {
                    gate.writers[stripe].fetch_sub(1, Ordering::SeqCst)
                });
                return Err(self.conflict(format!("tree {tree}")));
            }
        }
        Ok(())
    }

    /// Releases an IX taken by [`LockManager::acquire_ix`].
    fn release_ix(&self, tree: TreeId) {
        let stripe = crate::sync::stripe() % GATE_STRIPES;
        self.with_gate(tree, |gate| {
            gate.writers[stripe].fetch_sub(1, Ordering::SeqCst)
        });
    }

    /// Acquires (or upgrades to) `mode` on `key` for `txn`, or fails at once on a conflict.
    /// Returns true if this is a new lock for the transaction (it must remember the key).
    pub fn acquire(&self, txn: TxnId, key: &LockKey, mode: LockMode) -> Result<bool> {
        self.acquire_with(txn, key, mode, false)
    }

    /// [`LockManager::acquire`]; a tree lock here is S or X (or IX joined with an S the
    /// transaction holds: X), and `own_ix` says whether `txn` is counted in the tree's writer
    /// gate (its own count does not refuse it).
    pub fn acquire_with(
        &self,
        txn: TxnId,
        key: &LockKey,
        mode: LockMode,
        own_ix: bool,
    ) -> Result<bool> {
        let h = self.shard_hash(key);
        let mut shard = self.held.lock(h);
        let holders = shard.entry(*key).or_default();
        let mine = holders.iter().position(|(t, _)| *t == txn);
        let wanted = match mine {
            Some(i) => holders[i].1.join(mode),
            None => mode,
        };
        if let Some(i) = mine {
            if holders[i].1 == wanted {
                return Ok(false);
            }
        }
        // A new writer of a tree a scan waits for stands back: a first lock in a write mode, or
        // a reader of the tree (IS, S) upgrading to one. Writers already in the tree go on.
        let writes = |m: LockMode| matches!(m, LockMode::IX | LockMode::X);
        let yields = match key {
            LockKey::Tree(t) if writes(wanted) && !mine.is_some_and(|i| writes(holders[i].1)) => {
                self.yields_to_scan(txn, *t)
            }
            _ => false,
        };
        let ok = !yields
            && holders
                .iter()
                .filter(|(t, _)| *t != txn)
                .all(|(_, m)| wanted.compatible(*m));
        if !ok {
            self.conflicts.fetch_add(1, Ordering::Relaxed);
            if let (LockKey::Record(..), false) = (key, yields) {
                let refuser = holders
                    .iter()
                    .find(|(t, m)| *t != txn && !wanted.compatible(*m));
                if let Some(&(t, _)) = refuser {
                    REFUSER.with(|r| r.set(t));
                }
            }
            if holders.is_empty() {
                shard.remove(key);
            }
            return Err(Error::Conflict {
                what: match key {
                    LockKey::Tree(t)
                    | LockKey::TreeIx(t)
                    | LockKey::TreeLoad(t)
                    | LockKey::TreeRange(t) => {
                        format!("tree {t}")
                    }
                    LockKey::Record(t, _) => format!("a record of tree {t}"),
                },
            });
        }
        let previous = mine.map(|i| holders[i].1);
        match mine {
            Some(i) => holders[i].1 = wanted,
            None => holders.push((txn, wanted)),
        }
        if let LockKey::Record(_, name) = key {
            if wanted == LockMode::X {
                // Counted before the holder can change the record (it has not returned yet).
                self.write_stripe(*name).fetch_add(1, Ordering::SeqCst);
            }
        }
        if let LockKey::Tree(t) = key {
            debug_assert!(matches!(wanted, LockMode::S | LockMode::X));
            // Announce (a first table lock on the tree), then look for writers counted in the
            // gate other than itself: S and X both exclude them.
            let others = self.with_gate(*t, |gate| {
                if previous.is_none() {
                    gate.strong.fetch_add(1, Ordering::SeqCst);
                }
                gate.writers() > i64::from(own_ix)
            });
            if others {
                let holders = shard.get_mut(key).expect("just added");
                match previous {
                    Some(m) => {
                        let i = holders.iter().position(|(x, _)| *x == txn).expect("mine");
                        holders[i].1 = m;
                    }
                    None => {
                        self.with_gate(*t, |gate| gate.strong.fetch_sub(1, Ordering::SeqCst));
                        holders.retain(|(x, _)| *x != txn);
                        if holders.is_empty() {
                            shard.remove(key);
                        }
                    }
                }
                return Err(self.conflict(format!("tree {t}")));
            }
        }
        Ok(previous.is_none())
    }

    /// Makes `txn` the waiting scan of `tree` unless another transaction already is; true if
    /// `txn` is (now) the waiter. The caller makes sure `txn` holds no write lock.
    pub fn claim_scan(&self, txn: TxnId, tree: TreeId) -> bool {
        let mut w = lock(&self.scan_waiters);
        let who = *w.entry(tree).or_insert(txn);
        self.scan_waiters_n.store(w.len(), Ordering::SeqCst);
        who == txn
    }

    /// Whether `txn` holds `key` in a write mode (IX or X); a [`LockKey::TreeIx`] it holds is
    /// one.
    pub fn holds_write(&self, txn: TxnId, key: &LockKey) -> bool {
        if let LockKey::TreeIx(_) | LockKey::TreeLoad(_) = key {
            return true;
        }
        self.held
            .lock(self.shard_hash(key))
            .get(key)
            .is_some_and(|h| {
                h.iter()
                    .any(|&(t, m)| t == txn && matches!(m, LockMode::IX | LockMode::X))
            })
    }

    /// `txn` no longer waits for a scan of any tree.
    pub fn drop_scan_claims(&self, txn: TxnId) {
        if self.scan_waiters_n.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut w = lock(&self.scan_waiters);
        w.retain(|_, t| *t != txn);
        self.scan_waiters_n.store(w.len(), Ordering::SeqCst);
    }

    /// Releases every lock in `keys` held by `txn`.
    pub fn release_all(&self, txn: TxnId, keys: &[LockKey]) {
        self.drop_scan_claims(txn);
        for k in keys {
            if let LockKey::TreeIx(t) = k {
                self.release_ix(*t);
                continue;
            }
            if let LockKey::TreeLoad(t) = k {
                self.with_gate(*t, |gate| gate.loading.fetch_sub(1, Ordering::SeqCst));
                continue;
            }
            if let LockKey::TreeRange(_) = k {
                // Given back by the protocol's end (`cc.rs`), with the deletes.
                continue;
            }
            self.release(txn, k);
        }
    }

    /// Releases `txn`'s lock on `k` (a record or a tree's S/X in the table).
    pub fn release(&self, txn: TxnId, k: &LockKey) {
        let mut shard = self.held.lock(self.shard_hash(k));
        if let Some(h) = shard.get_mut(k) {
            let before = h.len();
            let x = h.iter().any(|&(t, m)| t == txn && m == LockMode::X);
            h.retain(|(t, _)| *t != txn);
            let released = h.len() < before;
            if let (LockKey::Record(_, name), true) = (k, x) {
                // Uncounted only now: the transaction's changes are committed or undone (or
                // it made none under this lock).
                self.write_stripe(*name).fetch_sub(1, Ordering::SeqCst);
            }
            if h.is_empty() {
                shard.remove(k);
            }
            if let (LockKey::Tree(t), true) = (k, released) {
                // Every table lock on a tree is S or X (IX goes through the gate).
                drop(shard);
                self.with_gate(*t, |gate| gate.strong.fetch_sub(1, Ordering::SeqCst));
            }
        }
    }
}

/// A tree's gate, borrowed from its fixed slot or shared from the map of the others.
enum GateRef<'a> {
    Slot(&'a TreeGate),
    More(Arc<TreeGate>),
}

/// See [`LockManager::write_probe`].
pub struct WriteProbe<'a>(&'a AtomicU32, GateRef<'a>);

impl WriteProbe<'_> {
    /// Whether no transaction holds the probed record (or a record sharing its stripe) in X,
    /// and none loads its tree.
    pub fn clear(&self) -> bool {
        let gate = match &self.1 {
            GateRef::Slot(g) => g,
            GateRef::More(g) => &**g,
        };
        self.0.load(Ordering::SeqCst) == 0 && gate.loading.load(Ordering::SeqCst) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_wait_conflicts_and_upgrades() {
        let lm = LockManager::default();
        let r = LockKey::Record(1, lm.record_name(1, b"k"));
        assert!(lm.acquire(1, &r, LockMode::S).unwrap());
        assert!(lm.acquire(2, &r, LockMode::S).unwrap());
        assert!(matches!(
            lm.acquire(2, &r, LockMode::X),
            Err(Error::Conflict { .. })
        ));
        lm.release_all(1, std::slice::from_ref(&r));
        assert!(!lm.acquire(2, &r, LockMode::X).unwrap());
        // A writer in the tree's gate refuses a scan's S, and the other way round.
        let t = LockKey::Tree(1);
        let ix = LockKey::TreeIx(1);
        lm.acquire_ix(3, 1).unwrap();
        lm.acquire_ix(5, 1).unwrap();
        assert!(lm.acquire(4, &t, LockMode::S).is_err());
        lm.release_all(3, std::slice::from_ref(&ix));
        lm.release_all(5, std::slice::from_ref(&ix));
        assert!(lm.acquire(4, &t, LockMode::S).unwrap());
        assert!(lm.acquire(6, &t, LockMode::S).unwrap(), "S and S share");
        assert!(lm.acquire_ix(3, 1).is_err());
        // The scanner's own write joins S and IX into X, refused while another scans.
        assert!(lm.acquire(4, &t, LockMode::IX).is_err());
        lm.release_all(6, std::slice::from_ref(&t));
        assert!(!lm.acquire(4, &t, LockMode::IX).unwrap());
        assert!(lm.acquire(6, &t, LockMode::S).is_err(), "X excludes S");
        lm.release_all(4, std::slice::from_ref(&t));
        lm.acquire_ix(3, 1).unwrap();
        // A writer that then scans: its own IX does not refuse it (X), another's does.
        assert!(lm.acquire_with(3, &t, LockMode::X, true).unwrap());
        lm.release_all(3, &[ix, t]);
        lm.acquire_ix(7, 1).unwrap();
        assert!(lm.acquire_with(3, &t, LockMode::X, false).is_err());
        lm.release_all(7, std::slice::from_ref(&ix));
        assert!(lm.acquire(3, &t, LockMode::S).unwrap(), "all released");
    }

    #[test]
    fn a_waiting_scan_turns_new_writers_away() {
        let lm = LockManager::default();
        let t = LockKey::Tree(1);
        let ix = LockKey::TreeIx(1);
        lm.acquire_ix(1, 1).unwrap();
        assert!(lm.acquire(2, &t, LockMode::S).is_err());
        assert!(lm.claim_scan(2, 1));
        assert!(!lm.claim_scan(3, 1), "one waiter per tree");
        // A new writer is refused; the writer already in the tree goes on (it holds its IX).
        assert!(lm.acquire_ix(3, 1).is_err());
        lm.release_all(1, std::slice::from_ref(&ix));
        assert!(lm.acquire(2, &t, LockMode::S).unwrap());
        lm.release_all(2, std::slice::from_ref(&t));
        lm.acquire_ix(3, 1)
            .expect("the claim ends with the scanner");
    }

    #[test]
    fn racing_writers_and_scans_never_both_get_the_tree() {
        // Many threads take IX or S on one tree at once; a scan must never hold S while a
        // writer holds IX.
        let lm = LockManager::default();
        let t = LockKey::Tree(1);
        let ix = LockKey::TreeIx(1);
        let inside = AtomicI64::new(0);
        std::thread::scope(|s| {
            for th in 0..4u64 {
                let (lm, t, ix, inside) = (&lm, &t, &ix, &inside);
                s.spawn(move || {
                    for i in 0..20_000u64 {
                        let txn = th * 1_000_000 + i + 1;
                        if th % 2 == 0 {
                            if lm.acquire_ix(txn, 1).is_ok() {
                                assert!(inside.fetch_add(1, Ordering::SeqCst) >= 0);
                                inside.fetch_sub(1, Ordering::SeqCst);
                                lm.release_all(txn, std::slice::from_ref(ix));
                            }
                        } else if lm.acquire(txn, t, LockMode::S).unwrap_or(false) {
                            // Writers count +1 inside; a scan marks -1_000_000.
                            let before = inside.fetch_sub(1_000_000, Ordering::SeqCst);
                            assert!(before <= 0, "a writer was inside during a scan");
                            inside.fetch_add(1_000_000, Ordering::SeqCst);
                            lm.release_all(txn, std::slice::from_ref(t));
                        }
                    }
                });
            }
        });
    }
}
