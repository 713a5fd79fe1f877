//! The heads of the version store, sharded by (tree, key): a snapshot reader looks at the one
//! shard of its key, a writer changes the one of its key, and neither waits for the other's
//! work elsewhere in the store. A scan asks every shard for the keys in its range and merges
//! them.

use super::{Head, Ts};
use crate::sync::Shards;
use crate::wal::record::{TreeId, TxnId};
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, BuildHasherDefault};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

/// Shards of the heads: more than writer threads meet, few enough that a scan asks them all
/// cheaply.
const SHARDS: usize = 16;

/// One shard: the heads of its keys, per tree in key order (scans read ranges).
#[derive(Default)]
struct Shard {
    trees: HashMap<TreeId, BTreeMap<Vec<u8>, Head>>,
}

/// See the module notes.
pub(super) struct Heads {
    shards: Shards<Shard>,
    /// Heads in all shards.
    count: AtomicU64,
}

/// The shard hash of `key` in `tree` (deterministic: the same keys, the same shards).
fn hash(tree: TreeId, key: &[u8]) -> u64 {
    BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one((tree, key))
}

impl Heads {
    pub fn new() -> Heads {
        Heads {
            shards: Shards::new(SHARDS),
            count: AtomicU64::new(0),
        }
    }

    /// The head of `key` in `tree`.
    pub fn get(&self, tree: TreeId, key: &[u8]) -> Option<Head> {
        if self.none() {
            return None;
        }
        let s = self.shards.lock(hash(tree, key));
        s.trees.get(&tree).and_then(|m| m.get(key)).copied()
    }

    /// Makes `head` the head of `key`.
    pub fn insert(&self, tree: TreeId, key: &[u8], head: Head) {
        let mut s = self.shards.lock(hash(tree, key));
        let m = s.trees.entry(tree).or_default();
        if let Some(h) = m.get_mut(key) {
            *h = head;
        } else {
            m.insert(key.to_vec(), head);
            self.count.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Gives the head of `key`, written by `writer`, its commit timestamp.
    pub fn stamp(&self, tree: TreeId, key: &[u8], writer: TxnId, ts: Ts) {
        let mut s = self.shards.lock(hash(tree, key));
        if let Some(h) = s.trees.get_mut(&tree).and_then(|m| m.get_mut(key)) {
            debug_assert_eq!(h.writer, writer);
            h.ts = Some(ts);
        }
    }

    /// Removes the head of `key` if `keep` refuses it.
    pub fn remove_unless(&self, tree: TreeId, key: &[u8], keep: impl FnOnce(&Head) -> bool) {
        let mut s = self.shards.lock(hash(tree, key));
        let Some(m) = s.trees.get_mut(&tree) else {
            return;
        };
        if m.get(key).is_some_and(|h| !keep(h)) {
            m.remove(key);
            self.count.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Puts `head` back as the head of `key` (`None`: no head).
    pub fn restore(&self, tree: TreeId, key: &[u8], head: Option<Head>) {
        match head {
            Some(h) => self.insert(tree, key, h),
            None => self.remove_unless(tree, key, |_| false),
        }
    }

    /// Up to `limit` keys of `tree` with a head in `range`, in scan order (descending if
    /// `reverse`).
    pub fn keys_in(
        &self,
        tree: TreeId,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        limit: usize,
    ) -> Vec<Vec<u8>> {
        let mut keys = Vec::new();
        if self.none() {
            return keys;
        }
        self.shards.each(|s| {
            let Some(m) = s.trees.get(&tree) else {
                return;
            };
            let r = m.range::<[u8], _>(range).map(|(k, _)| k.clone());
            if reverse {
                keys.extend(r.rev().take(limit));
            } else {
                keys.extend(r.take(limit));
            }
        });
        // Each shard gave its first `limit`: the first `limit` of all are among them.
        keys.sort_unstable();
        if reverse {
            keys.reverse();
        }
        keys.truncate(limit);
        keys
    }

    /// Whether there is no head at all (most of the time, when no snapshot is older than the
    /// newest commits): a look needs no shard then. A head a reader must see was inserted
    /// before the leaf change the reader saw (under the leaf's latch, which orders the two),
    /// so its count is seen too; one purged since, every snapshot sees past.
    fn none(&self) -> bool {
        self.count.load(Ordering::SeqCst) == 0
    }

    /// Heads in all shards.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}
