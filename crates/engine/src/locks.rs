//! Record and tree locks for transactions: strict two-phase locking with multi-granularity modes
//! (a tree is locked IS/IX/S/X, a record S/X), held until the transaction ends. Conflicts follow the
//! no-wait policy: the requester gets `Error::Conflict` at once and is expected to abort and retry,
//! so there are no deadlocks.
//!
//! One exception keeps long readers from starving: a read-only transaction whose whole-tree S
//! lock (a scan) conflicts with writers may become the tree's *waiting scan* ([`LockManager::
//! claim_scan`]). While it waits, new writers of that tree are refused (writers already in it
//! finish), so the scan gets the tree once they end. The waiter holds no write lock and only one
//! transaction waits per tree, so no wait cycle can form; the caller also bounds the wait.
//!
//! Isolation: reads take S locks on records, scans take an S lock on the whole tree, writes take
//! IX on the tree and X on the record. Together this is serializable (scans exclude concurrent
//! writers of the tree, so there are no phantoms).

use crate::error::{Error, Result};
use crate::sync::{lock, Shards};
use crate::wal::record::{TreeId, TxnId};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
/// User keys are hashed with foldhash's seeded quality hasher: several times SipHash's speed
/// on short keys, still randomly seeded per process (keys come from users).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::quality::RandomState>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LockMode {
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

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LockKey {
    Tree(TreeId),
    Record(TreeId, Vec<u8>),
}

/// Lock table shards: enough that two threads rarely meet on one.
const SHARDS: usize = 64;

/// The lock table, sharded by key: each shard is a map of held locks under its own mutex, so
/// transactions on different keys do not serialise on one latch. A shard's mutex is held only
/// for the map operation, never across I/O or another shard's mutex.
pub struct LockManager {
    held: Shards<HashMap<LockKey, Vec<(TxnId, LockMode)>>>,
    hasher: foldhash::quality::RandomState,
    /// The transaction waiting for a whole-tree S lock, per tree (rarely used: writers look at
    /// it only while `scan_waiters_n` says one exists).
    scan_waiters: Mutex<HashMap<TreeId, TxnId>>,
    scan_waiters_n: AtomicUsize,
    conflicts: AtomicU64,
}

impl Default for LockManager {
    fn default() -> Self {
        LockManager {
            held: Shards::new(SHARDS),
            hasher: Default::default(),
            scan_waiters: Default::default(),
            scan_waiters_n: AtomicUsize::new(0),
            conflicts: AtomicU64::new(0),
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

    /// Whether a new writer of `tree` stands back for another transaction's waiting scan.
    fn yields_to_scan(&self, txn: TxnId, tree: TreeId) -> bool {
        self.scan_waiters_n.load(Ordering::SeqCst) > 0
            && lock(&self.scan_waiters)
                .get(&tree)
                .is_some_and(|&w| w != txn)
    }

    /// Acquires (or upgrades to) `mode` on `key` for `txn`, or fails at once on a conflict.
    /// Returns true if this is a new lock for the transaction (it must remember the key).
    pub fn acquire(&self, txn: TxnId, key: &LockKey, mode: LockMode) -> Result<bool> {
        let h = self.shard_hash(key);
        let mut shard = self.held.lock(h);
        let holders = shard.entry(key.clone()).or_default();
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
            if holders.is_empty() {
                shard.remove(key);
            }
            return Err(Error::Conflict {
                what: match key {
                    LockKey::Tree(t) => format!("tree {t}"),
                    LockKey::Record(t, k) => {
                        format!("a record of tree {t} (key {} bytes)", k.len())
                    }
                },
            });
        }
        match mine {
            Some(i) => {
                holders[i].1 = wanted;
                Ok(false)
            }
            None => {
                holders.push((txn, wanted));
                Ok(true)
            }
        }
    }

    /// Makes `txn` the waiting scan of `tree` unless another transaction already is; true if
    /// `txn` is (now) the waiter. The caller makes sure `txn` holds no write lock.
    pub fn claim_scan(&self, txn: TxnId, tree: TreeId) -> bool {
        let mut w = lock(&self.scan_waiters);
        let who = *w.entry(tree).or_insert(txn);
        self.scan_waiters_n.store(w.len(), Ordering::SeqCst);
        who == txn
    }

    /// Whether `txn` holds `key` in a write mode (IX or X).
    pub fn holds_write(&self, txn: TxnId, key: &LockKey) -> bool {
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
            let mut shard = self.held.lock(self.shard_hash(k));
            if let Some(h) = shard.get_mut(k) {
                h.retain(|(t, _)| *t != txn);
                if h.is_empty() {
                    shard.remove(k);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_wait_conflicts_and_upgrades() {
        let lm = LockManager::default();
        let r = LockKey::Record(1, b"k".to_vec());
        assert!(lm.acquire(1, &r, LockMode::S).unwrap());
        assert!(lm.acquire(2, &r, LockMode::S).unwrap());
        assert!(matches!(
            lm.acquire(2, &r, LockMode::X),
            Err(Error::Conflict { .. })
        ));
        lm.release_all(1, std::slice::from_ref(&r));
        assert!(!lm.acquire(2, &r, LockMode::X).unwrap());
        let t = LockKey::Tree(1);
        lm.acquire(3, &t, LockMode::IX).unwrap();
        assert!(lm.acquire(4, &t, LockMode::S).is_err());
        assert!(lm.acquire(4, &t, LockMode::IS).is_ok());
    }

    #[test]
    fn a_waiting_scan_turns_new_writers_away() {
        let lm = LockManager::default();
        let t = LockKey::Tree(1);
        lm.acquire(1, &t, LockMode::IX).unwrap();
        assert!(lm.acquire(2, &t, LockMode::S).is_err());
        assert!(lm.claim_scan(2, 1));
        assert!(!lm.claim_scan(3, 1), "one waiter per tree");
        // A new writer is refused; the writer already in the tree goes on.
        assert!(lm.acquire(3, &t, LockMode::IX).is_err());
        assert!(!lm.acquire(1, &t, LockMode::IX).unwrap());
        // A reader of the tree that upgrades to a write mode is a new writer: it stands back.
        lm.acquire(4, &t, LockMode::IS).unwrap();
        assert!(lm.acquire(4, &t, LockMode::IX).is_err());
        lm.release_all(4, std::slice::from_ref(&t));
        lm.release_all(1, std::slice::from_ref(&t));
        assert!(lm.acquire(2, &t, LockMode::S).unwrap());
        lm.release_all(2, std::slice::from_ref(&t));
        assert!(
            lm.acquire(3, &t, LockMode::IX).unwrap(),
            "the claim ends with the scanner"
        );
    }
}
