//! Bulk loads: sorted records appended past a tree's last key by a transaction that holds the
//! tree whole. Each step fills the tree's last leaf (or splits it at its end and fills the new
//! one) and is logged as one record of the pages it changed, with the range of keys it added
//! as its undo, instead of one record, one record lock and one before-image per key.

use super::{update_log_need, Core};
use crate::btree::tree as bt;
use crate::catalog::Tree;
use crate::error::{Error, Result};
use crate::txn_table::{txn_reserve, LOAD_UNDO_RECORD_BYTES, UNDO_EXTRA_BYTES};
use crate::wal::record::{Body, LoadUndo, TxnId};
use crate::wal::Wal;
use std::ops::Bound;

/// Pairs for [`Core::load`]: keys and values borrowed from the caller.
pub(crate) type Pairs<'a> = [(&'a [u8], &'a [u8])];

impl Core {
    /// Appends `pairs` to `tree` for `txn`: keys strictly ascending, the first above every key
    /// the tree holds (otherwise `InvalidArgument`, and nothing is changed). The transaction
    /// takes the tree whole (no other transaction reads or writes it until this one ends).
    ///
    /// In the flushless mode, with a version store, or when a value is too long to be stored
    /// inline, the records are put one by one instead (the same result, record locks and
    /// records as [`Core::write`] takes and logs).
    /// `done` counts the pairs appended so far (an error may come after some): a caller that
    /// retries passes the rest.
    pub fn load(
        &mut self,
        wal: &mut Wal,
        txn: TxnId,
        tree: &Tree,
        pairs: &Pairs<'_>,
        done: &mut usize,
    ) -> Result<()> {
        self.check()?;
        self.txns.state(txn)?;
        // Before the tree's root is used: a handle from before a reopen, or from another
        // database, names pages that are not this tree's.
        self.catalog.check_handle(tree)?;
        for &(k, v) in pairs {
            self.check_sizes(k, Some(v))?;
        }
        if pairs.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(Error::InvalidArgument(
                "a bulk load's keys must be strictly ascending".into(),
            ));
        }
        let Some(&(first, _)) = pairs.first() else {
            return Ok(());
        };
        let ps = self.cfg.page_size as usize;
        let by_pages = self.flushless.is_none()
            && self.versions.is_none()
            && pairs.iter().all(|&(k, v)| bt::appendable(ps, k, v));
        if by_pages {
            self.sync_page_reserve();
            self.txns.before_load(txn, tree.id)?;
        } else if !self.is_snapshot(txn) {
            // The check of the tree's last key below is a read of the whole tree's end.
            self.access(txn, tree, None, crate::cc::Access::Read)?;
        }
        let last = self.last_key(wal, tree)?;
        if last.as_deref().is_some_and(|l| l >= first) {
            return Err(Error::InvalidArgument(
                "a bulk load's first key must be above every key of the tree".into(),
            ));
        }
        if !by_pages {
            for &(k, v) in pairs {
                self.write(wal, txn, tree, k, Some(v))?;
                *done += 1;
            }
            return Ok(());
        }
        let mut at = 0;
        // Keys below an empty last leaf's lower fence (left by a load rolled back) are put
        // one by one, into the leaves whose ranges hold them; the rest are appended.
        if let Some(fence) = self.empty_last_leaf_fence(wal, tree)? {
            while at < pairs.len() && pairs[at].0 < fence.as_slice() {
                self.write(wal, txn, tree, pairs[at].0, Some(pairs[at].1))?;
                at += 1;
                *done += 1;
            }
        }
        while at < pairs.len() {
            let n = self.load_step(wal, txn, tree, &pairs[at..])?;
            at += n;
            *done += n;
        }
        Ok(())
    }

    /// The largest key of `tree`, if any.
    fn last_key(&mut self, wal: &mut Wal, tree: &Tree) -> Result<Option<Vec<u8>>> {
        let r = crate::ops::read(&mut self.cache, wal, |m| {
            let mut last = None;
            bt::scan(
                m,
                tree.root,
                Bound::Unbounded,
                Bound::Unbounded,
                true,
                &mut |k: &[u8], _: &[u8]| {
                    last = Some(k.to_vec());
                    false
                },
            )?;
            Ok(last)
        });
        self.health.guard(r)
    }

    /// [`bt::empty_last_leaf_fence`] of `tree`.
    fn empty_last_leaf_fence(&mut self, wal: &mut Wal, tree: &Tree) -> Result<Option<Vec<u8>>> {
        let r = crate::ops::read(&mut self.cache, wal, |m| {
            bt::empty_last_leaf_fence(m, tree.root)
        });
        self.health.guard(r)
    }

    /// One logged step of [`Core::load`]; returns how many of `pairs` it appended (at least one).
    fn load_step(
        &mut self,
        wal: &mut Wal,
        txn: TxnId,
        tree: &Tree,
        pairs: &Pairs<'_>,
    ) -> Result<usize> {
        let ps = self.cfg.page_size;
        // A step takes at most the keys whose rollback fits a fixed share of log space: a
        // compensation record per key.
        let budget = 2 * ps as u64;
        let mut undo_bytes = 0;
        let take = pairs
            .iter()
            .take_while(|(k, _)| {
                undo_bytes += LOAD_UNDO_RECORD_BYTES + k.len() as u64;
                undo_bytes <= budget
            })
            .count()
            .max(1);
        let need = update_log_need(ps, &[], None) + budget + UNDO_EXTRA_BYTES;
        let r = self
            .checkpointer
            .ensure_log_space(&mut self.cache, wal, &self.txns, need, txn);
        self.health.guard(r)?;
        let prev = self.txns.state(txn)?.last_lsn;
        let own_first = if self.txns.state(txn)?.first_lsn == 0 {
            txn_reserve(ps)
        } else {
            0
        };
        let mut changed = std::mem::take(self.txns.pages_mut(txn).expect("active"));
        wal.set_update_keep(Some(crate::wal::UpdateKeep {
            reserved: self.txns.log_reserved() + own_first,
            undo_extra: UNDO_EXTRA_BYTES,
        }));
        let undo_of = |n: usize| LoadUndo {
            tree: tree.id,
            first: pairs[0].0.to_vec(),
            last: pairs[n - 1].0.to_vec(),
        };
        let r = crate::ops::run_op(
            &mut self.cache,
            wal,
            (txn, prev),
            &mut changed,
            |m| Ok((bt::append(m, tree.root, &pairs[..take])?, None)),
            |&n, redo| Body::Load {
                redo,
                undo: undo_of(n),
            },
        );
        wal.set_update_keep(None);
        *self.txns.pages_mut(txn).expect("active") = changed;
        let (n, lsn) = self.health.guard(r)?;
        debug_assert!(n > 0 && lsn != 0, "a load step appends and logs");
        let key_bytes = pairs[..n].iter().map(|(k, _)| k.len() as u64).sum();
        self.txns
            .loaded(txn, lsn, (n as u64, key_bytes), undo_of(n));
        self.sync_page_reserve();
        self.stats.ops.add(n as u64);
        Ok(n)
    }
}
