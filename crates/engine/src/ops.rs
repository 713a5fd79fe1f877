//! Tree operations as mini-transactions: run one B+tree operation over the page cache, log it as
//! one record through a redo sink, and on failure put every page back as it was. Used by user
//! transactions, rollback and recovery's undo alike, so a logical change is applied one way.

use crate::btree::tree as bt;
use crate::cache::PageCache;
use crate::catalog::Tree;
use crate::error::Result;
use crate::mtr::{LeafChange, Mtr, RedoSink};
use crate::page::{Lsn, PageId};
use crate::wal::record::{Body, Redo, TxnId};

/// What the tree reported about a plain leaf change (owned, for the log record).
pub(crate) enum LeafInfo {
    Put {
        pid: PageId,
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Del {
        pid: PageId,
        key: Vec<u8>,
    },
}

impl LeafInfo {
    fn as_change(&self) -> LeafChange<'_> {
        match self {
            LeafInfo::Put { pid, key, value } => LeafChange::Put {
                pid: *pid,
                key,
                value,
            },
            LeafInfo::Del { pid, key } => LeafChange::Del { pid: *pid, key },
        }
    }
}

/// Runs one tree operation as a mini-transaction and logs it with `body_of(redo)`. Returns the
/// operation's result and the LSN of its record (0 if it changed nothing); the pages it changed
/// are added to `changed`. On an error every page is restored to its state before the operation
/// (the caller decides whether the error poisons the handle).
///
/// Splits made beside other threads are posted first ([`crate::splits::settle`]): a change
/// with the tree to itself sees no pending split.
pub(crate) fn run_op<R>(
    cache: &mut PageCache,
    log: &mut dyn RedoSink,
    txn: (TxnId, Lsn),
    changed: &mut Vec<PageId>,
    op: impl FnOnce(&mut Mtr<'_>) -> Result<(R, Option<LeafInfo>)>,
    body_of: impl FnOnce(&R, Redo) -> Body,
) -> Result<(R, Lsn)> {
    crate::splits::settle(cache, log)?;
    run_op_settled(cache, log, txn, changed, op, body_of)
}

/// [`run_op`] once no split is pending (or to post one).
pub(crate) fn run_op_settled<R>(
    cache: &mut PageCache,
    log: &mut dyn RedoSink,
    (txn, prev_lsn): (TxnId, Lsn),
    changed: &mut Vec<PageId>,
    op: impl FnOnce(&mut Mtr<'_>) -> Result<(R, Option<LeafInfo>)>,
    body_of: impl FnOnce(&R, Redo) -> Body,
) -> Result<(R, Lsn)> {
    let mut mtr = Mtr::new(cache, log);
    match op(&mut mtr) {
        Ok((r, leaf)) => {
            let redo = mtr.redo(leaf.as_ref().map(|l| l.as_change()));
            mtr.guard_touched();
            let body = redo.map(|redo| body_of(&r, redo));
            match mtr.append(txn, prev_lsn, body, changed) {
                Ok(lsn) => Ok((r, lsn)),
                Err((mtr, e)) => {
                    // Not logged (e.g. the log is full): undo the change in memory.
                    mtr.release();
                    Err(e)
                }
            }
        }
        Err(e) => {
            mtr.release();
            Err(e)
        }
    }
}

/// Whether a change is a transaction's own or the undo of one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    Forward,
    /// A rollback's change: a delete merges no nodes, so that undoing an insert never needs
    /// more log space than the insert's own record (a rollback must fit its reservation).
    Undo,
}

/// Applies a logical change (put, or delete if `value` is None) to `tree` for transaction `txn`
/// whose previous record is `prev_lsn`; returns the old value and the LSN logged.
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply(
    cache: &mut PageCache,
    log: &mut dyn RedoSink,
    txn: (TxnId, Lsn),
    changed: &mut Vec<PageId>,
    tree: &Tree,
    (key, value): (&[u8], Option<&[u8]>),
    direction: Direction,
    body_of: impl FnOnce(&Option<Vec<u8>>, Redo) -> Body,
) -> Result<(Option<Vec<u8>>, Lsn)> {
    let root = tree.root;
    run_op(
        cache,
        log,
        txn,
        changed,
        |m| match value {
            Some(v) => {
                let out = bt::put(m, root, key, v)?;
                let leaf = out.leaf.map(|pid| LeafInfo::Put {
                    pid,
                    key: key.to_vec(),
                    value: v.to_vec(),
                });
                Ok((out.old, leaf))
            }
            None => {
                let out = match direction {
                    Direction::Forward => bt::delete(m, root, key)?,
                    Direction::Undo => bt::delete_keeping_shape(m, root, key)?,
                };
                let leaf = out.leaf.map(|pid| LeafInfo::Del {
                    pid,
                    key: key.to_vec(),
                });
                Ok((out.old, leaf))
            }
        },
        body_of,
    )
}

/// Reads through a mini-transaction that changes nothing.
pub(crate) fn read<R>(
    cache: &mut PageCache,
    log: &mut dyn RedoSink,
    f: impl FnOnce(&mut Mtr<'_>) -> Result<R>,
) -> Result<R> {
    let mut mtr = Mtr::new(cache, log);
    let r = f(&mut mtr);
    mtr.release();
    r
}
