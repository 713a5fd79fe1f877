//! The rollback of a transaction's logged changes with the core latch shared (docs/engine.md,
//! "Rollbacks beside other threads"). With several threads, a transaction refused by another
//! (wait-die) or aborted by its caller no longer stops every other thread while it undoes its
//! changes: each change whose undo is a plain leaf change (a put of the old value that fits in
//! its leaf, or the delete of a key it inserted, the leaf's shape kept as the exclusive
//! rollback keeps it)
//! is undone as a plain change is made, the leaf latched, and logged as the compensation record
//! the exclusive rollback logs for it (`Clr` of a `LeafPut` or `LeafDel`, the same `undo_next`).
//! The first undo that is more than that (a split, a merge, an overflow value, a bulk load's
//! range, a leaf not guarded, a deleted key put back in a running scan's gap: see
//! [`Core::undo_plain`]) leaves the rest to the exclusive rollback ([`Core::rollback`]),
//! which goes on from the last compensation record logged here: the undone entries are gone
//! from the transaction's undo list, the others given back, and its last LSN is that record's.
//! A page not in memory is read with the latch released and the rollback tried again from
//! where it stopped. A lone thread rolls back exclusive, as before (virtual time unchanged).

use super::Core;
use crate::btree::tree::{self as bt, plain::Plan, LeafRange};
use crate::error::Result;
use crate::page::Lsn;
use crate::read_shared::SharedWriter;
use crate::undo::Rollback;
use crate::wal::record::{Body, Redo, TxnId, Undo};
use crate::wal::SharedWal;

impl Core {
    /// Rolls `txn` back and ends it with the core latch shared, if every undo is a plain leaf
    /// change. `None`: the rest runs exclusive, or, if a page was missing (noted), this runs
    /// again once it is read; what was undone stays undone (see the module notes).
    pub fn rollback_changes_shared(&self, wal: &SharedWal, txn: TxnId) -> Option<Result<()>> {
        let several = self.cache.splits.several_threads();
        if !several || self.flushless.is_some() || self.versions.is_some() {
            return None;
        }
        if !self.writes_shared() || self.check().is_err() {
            return None;
        }
        let mut prev = match self.txns.last_lsn(txn) {
            // Logged nothing: `rollback_shared` ends those.
            Ok(0) => return None,
            Ok(lsn) => lsn,
            Err(e) => return Some(Err(e)),
        };
        let mut undo = self.txns.take_undo_shared(txn);
        while let Some((_, Rollback::Key(u))) = undo.last() {
            let undo_next = undo.len().checked_sub(2).map_or(0, |i| undo[i].0);
            match self.undo_plain(wal, txn, prev, u, undo_next) {
                Some(Ok(0)) => {}
                Some(Ok(lsn)) => {
                    prev = lsn;
                    self.txns.compensated(txn, lsn);
                }
                Some(Err(e)) => {
                    // The handle is poisoned: recovery rolls the rest back.
                    self.txns.put_back_undo(txn, undo);
                    return Some(Err(e));
                }
                None => break,
            }
            undo.pop();
        }
        if !undo.is_empty() {
            self.txns.put_back_undo(txn, undo);
            return None;
        }
        let ended = {
            let mut log = wal.lock();
            let was = log.swap_unreserved(true);
            let r = log
                .append(txn, prev, Body::Abort)
                .and_then(|a| log.append(txn, a, Body::End));
            log.swap_unreserved(was);
            r
        };
        if ended.is_err() {
            // The exclusive rollback logs them (or fails the same way, and poisons).
            return None;
        }
        let r = self.txns.remove(txn).map(|st| {
            self.txns.end(txn, &st);
            // The page reserve is brought up to date by the next exclusive write, as after a
            // commit beside others.
            self.stats.aborts.add(1);
        });
        Some(r)
    }

    /// Undoes one change as a plain leaf change, logged as a compensation record whose
    /// `undo_next` is given: its LSN (0: nothing to undo, the key is not there), or `None`
    /// having changed nothing.
    fn undo_plain(
        &self,
        wal: &SharedWal,
        txn: TxnId,
        prev: Lsn,
        u: &Undo,
        undo_next: Lsn,
    ) -> Option<Result<Lsn>> {
        // An unknown tree: the exclusive rollback reports it.
        let tree = self.catalog.by_id(u.tree).ok()?;
        let value = u.old.as_deref();
        let mut w = SharedWriter::new(&self.cache);
        // An undo's delete keeps the tree's shape, as the exclusive rollback's does: a leaf
        // left under-full merges at a later delete.
        let planned = bt::plain::plan(
            &mut w,
            tree.root,
            &u.key,
            value,
            &mut LeafRange::default(),
            false,
            bt::plain::Underfull::Allow,
        );
        let (leaf, at, there) = match planned {
            Ok(Some(Plan::Nothing)) if !w.refused() => {
                // The delete of a key that is not there: the exclusive undo logs nothing
                // either.
                w.finish(0);
                return Some(Ok(0));
            }
            Ok(Some(Plan::Change { leaf, at, old, .. })) if !w.refused() && w.latches(leaf) => {
                (leaf, at, old.is_some())
            }
            _ => return None,
        };
        // The undo of a delete brings its key back. If it lands in the gap a running scan of
        // another transaction claims (past the last key that scan read in this leaf, so it will
        // not read it), the key's uncommitted delete must outlive the scan, which is refused
        // when its claim grows over the key: the exclusive rollback makes it once no scan runs
        // (and ends the transaction, the delete's record going, only then).
        let cc = self.txns.cc();
        if value.is_some() && !there && cc.claims_any(tree.id) {
            let page = w.latched_page().expect("the leaf is latched");
            let (_, pred, succ) = bt::leaf_place(page, &u.key).ok()?;
            if cc.insert_claimed(txn, tree.id, &u.key, (pred, succ)) {
                return None;
            }
        }
        let key = u.key.clone();
        let redo = match value {
            Some(v) => Redo::LeafPut {
                pid: leaf,
                key,
                value: v.to_vec(),
            },
            None => Redo::LeafDel { pid: leaf, key },
        };
        let lsn = {
            let mut log = wal.lock();
            // A rollback may use the log's system reserve, as the exclusive one does.
            let was = log.swap_unreserved(true);
            let r = log.append(txn, prev, Body::Clr { redo, undo_next });
            log.swap_unreserved(was);
            // Refused (the log is full): the exclusive rollback meets it too.
            r.ok()?
        };
        if let Err(e) = bt::plain::apply(&mut w, leaf, &u.key, value, at) {
            // A corrupt leaf (the plan found room): logged, not made.
            self.health.poison(&e);
            return Some(Err(e));
        }
        w.finish(lsn);
        self.stats.undone_beside.add(1);
        Some(Ok(lsn))
    }
}
