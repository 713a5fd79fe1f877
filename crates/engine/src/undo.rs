//! The undo seam: where a live transaction's before-images are kept, and rollback. Today the
//! before-images live in memory ([`MemUndo`], the log holds them too, for recovery); a version
//! store on the `undo` device (MVCC rollback segments, paper 003) is meant to be another
//! [`UndoStore`]. Rollback applies each before-image logically through the tree, newest first,
//! and logs each as a compensation record, so a rollback interrupted by a crash is finished by
//! recovery without undoing anything twice.

use crate::cache::PageCache;
use crate::catalog::Catalog;
use crate::error::Result;
use crate::page::{Lsn, PageId};
use crate::wal::record::{Body, LoadUndo, TxnId, Undo};
use crate::wal::Wal;
use rustc_hash::FxHashMap as HashMap;

/// How to undo one logged change: a record's before-image, or a bulk load step's key range.
#[derive(Debug)]
pub(crate) enum Rollback {
    Key(Undo),
    Load(LoadUndo),
}

/// Before-images of live transactions.
pub(crate) trait UndoStore: Send + Sync {
    /// Keeps how to undo `txn`'s change logged at `lsn`.
    fn push(&mut self, txn: TxnId, lsn: Lsn, undo: Rollback);
    /// Removes and returns `txn`'s entries, oldest first.
    fn take(&mut self, txn: TxnId) -> Vec<(Lsn, Rollback)>;
}

/// Before-images in memory, per transaction.
#[derive(Default)]
pub(crate) struct MemUndo {
    entries: HashMap<TxnId, Vec<(Lsn, Rollback)>>,
}

impl UndoStore for MemUndo {
    fn push(&mut self, txn: TxnId, lsn: Lsn, undo: Rollback) {
        self.entries.entry(txn).or_default().push((lsn, undo));
    }
    fn take(&mut self, txn: TxnId) -> Vec<(Lsn, Rollback)> {
        self.entries.remove(&txn).unwrap_or_default()
    }
}

/// Applies a logical undo through the tree and logs it as a compensation record whose
/// `undo_next` is the next record to undo. Returns the transaction's new last LSN.
#[allow(clippy::too_many_arguments)]
pub(crate) fn undo_one(
    cache: &mut PageCache,
    wal: &mut Wal,
    catalog: &Catalog,
    changed: &mut Vec<PageId>,
    txn: TxnId,
    prev: Lsn,
    u: &Undo,
    undo_next: Lsn,
) -> Result<Lsn> {
    let tree = catalog.by_id(u.tree)?;
    let (_, lsn) = crate::ops::apply(
        cache,
        wal,
        (txn, prev),
        changed,
        &tree,
        (&u.key, u.old.as_deref()),
        crate::ops::Direction::Undo,
        |_, redo| Body::Clr { redo, undo_next },
    )?;
    Ok(if lsn == 0 { prev } else { lsn })
}

/// Undoes a bulk load step (`this`: its record's LSN; `before`: the transaction's record
/// before it): deletes the keys of its range one by one, each logged as a compensation record
/// whose `undo_next` is the load record itself, so that recovery after a crash part way runs
/// this again (the keys deleted already are simply not found). Returns the transaction's new
/// last LSN.
pub(crate) fn undo_load(
    cache: &mut PageCache,
    wal: &mut Wal,
    catalog: &Catalog,
    changed: &mut Vec<PageId>,
    (txn, mut prev): (TxnId, Lsn),
    u: &LoadUndo,
    (this, _before): (Lsn, Lsn),
) -> Result<Lsn> {
    use std::ops::Bound::Included;
    let tree = catalog.by_id(u.tree)?;
    loop {
        let next = crate::ops::read(cache, wal, |m| {
            let mut found = None;
            crate::btree::tree::scan(
                m,
                tree.root,
                Included(&u.first[..]),
                Included(&u.last[..]),
                false,
                &mut |k: &[u8], _: &[u8]| {
                    found = Some(k.to_vec());
                    false
                },
            )?;
            Ok(found)
        })?;
        let Some(key) = next else {
            return Ok(prev);
        };
        let (_, lsn) = crate::ops::apply(
            cache,
            wal,
            (txn, prev),
            changed,
            &tree,
            (&key, None),
            crate::ops::Direction::Undo,
            |_, redo| Body::Clr {
                redo,
                undo_next: this,
            },
        )?;
        if lsn == 0 {
            return Err(crate::error::Error::CorruptPage {
                pid: tree.root,
                reason: "a key a scan found could not be deleted",
            });
        }
        prev = lsn;
    }
}

/// Rolls back a live transaction whose last record is `last_lsn` from its undo entries (oldest
/// first), then logs its Abort and End records.
pub(crate) fn rollback(
    cache: &mut PageCache,
    wal: &mut Wal,
    catalog: &Catalog,
    changed: &mut Vec<PageId>,
    (txn, last_lsn): (TxnId, Lsn),
    undo: &[(Lsn, Rollback)],
) -> Result<()> {
    if last_lsn == 0 {
        return Ok(());
    }
    let mut prev = last_lsn;
    for i in (0..undo.len()).rev() {
        let undo_next = if i == 0 { 0 } else { undo[i - 1].0 };
        prev = match &undo[i].1 {
            Rollback::Key(u) => undo_one(cache, wal, catalog, changed, txn, prev, u, undo_next)?,
            Rollback::Load(u) => undo_load(
                cache,
                wal,
                catalog,
                changed,
                (txn, prev),
                u,
                (undo[i].0, undo_next),
            )?,
        };
    }
    let a = wal.append(txn, prev, Body::Abort)?;
    wal.append(txn, a, Body::End)?;
    Ok(())
}
