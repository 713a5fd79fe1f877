//! The flushless mode's part of the operations that run with the core latch shared
//! (`engine/shared_flushless.rs`, docs/engine.md "Flushless mode" and Latching): a plain leaf
//! change recorded live in the log table, and the commit of a transaction made of such changes
//! only.
//!
//! Why the table stays right with other threads beside:
//!
//! * One live transaction per page is checked under the table's mutex while the writer holds the
//!   leaf's stripe latch, and the record enters the table in the same step: two writers of a
//!   leaf take turns on its latch, so the record order of each page is the order its changes
//!   were made, as with the latch exclusive.
//! * With the core latch shared nothing else in this mode touches the table's pages: no page is
//!   evicted (the stock is filled exclusive), none is read in (the mode reads its misses
//!   exclusive, to redo them on the fly), and compactions, checkpoints and aborts run
//!   exclusive.
//! * Log space: the check and the transaction's reservation are made under the log's latch, so
//!   the next writer's check counts it, as in the ARIES mode.
//! * A commit copies the records to the log, stamps their real LSNs on the resident pages
//!   (under each page's stripe latch) and only then marks them committed, which lets another
//!   transaction change those pages: its provisional LSN is never overwritten by an older one.

use super::table::LogTable;
use super::{lock, Flushless, HEADER_RESERVE};
use crate::checkpoint::FORCE_ALL_FILL;
use crate::error::{Error, Result};
use crate::page::{Lsn, PageId};
use crate::txn_table::TxnTable;
use crate::wal::record::{Body, Redo, TxnId};
use crate::wal::Wal;
use std::collections::HashMap;

/// A plain change [`Flushless::add_plain`] recorded: the provisional page LSN to stamp, and the
/// log bytes the transaction's commit will copy for it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Recorded {
    pub lsn: Lsn,
    pub log_need: u64,
}

impl Flushless {
    /// Whether an operation that may add `need_table` bytes to the table and log `need_log`
    /// bytes at its commit can run with nothing to do first: [`Flushless::ensure_space`] would
    /// neither checkpoint, compact nor refuse it.
    pub fn space_ok(
        &self,
        (wal, txns): (&Wal, &TxnTable),
        page_size: u64,
        need_log: u64,
        need_table: u64,
    ) -> bool {
        let (log_short, _) = log_short(wal, txns, page_size, need_log);
        !log_short && !self.log_due(wal) && !self.table_low(need_table)
    }

    /// Records `redo`, a plain change of one leaf by `txn` (which holds the leaf latched), live
    /// in the table, when `room` log bytes (free beyond every reservation) hold what its commit
    /// adds. `Ok(None)`: the table or the log is short, the exclusive run makes room or
    /// refuses; `Conflict`: the leaf holds another live transaction's changes. Nothing is
    /// recorded then.
    pub fn add_plain(&self, txn: TxnId, redo: Redo, room: u64) -> Result<Option<Recorded>> {
        let pid = match &redo {
            Redo::LeafPut { pid, .. } | Redo::LeafDel { pid, .. } => *pid,
            _ => unreachable!("a plain change is a leaf record"),
        };
        let mut t = lock(&self.table);
        if let Some(o) = t.owner(pid).filter(|&o| o != txn) {
            t.shared.page_conflicts += 1;
            // Its end may be waited for (`Txn::past_committers`), as a record lock's holder's.
            crate::locks::note_refuser(o);
            return Err(Error::Conflict {
                what: format!("page {pid}, which holds uncommitted changes of transaction {o}"),
            });
        }
        let cost = LogTable::cost(&redo);
        // The commit copies the record (and logs its commit record, reserved by the caller
        // with the first change), as the exclusive sink counts it.
        let log_need = cost + HEADER_RESERVE;
        if t.check_room(cost).is_err() || log_need + 2 * HEADER_RESERVE > room {
            return Ok(None);
        }
        let lsn = t.add_live(txn, redo);
        Ok(Some(Recorded { lsn, log_need }))
    }

    /// Whether `txn` allocated or freed pages (its commit or abort then runs exclusive). These
    /// maps change only with the core latch exclusive.
    pub fn keeps_pages(&self, txn: TxnId) -> bool {
        self.allocs.contains_key(&txn) || self.frees.contains_key(&txn)
    }

    /// `txn`'s live records, oldest first, with the pages of each, if `stampable` holds for
    /// every one of those pages (looked at under the table's mutex, the records copied only
    /// then; the page lists made after it is let go); `None` otherwise.
    pub fn live_if(
        &self,
        txn: TxnId,
        stampable: impl Fn(PageId) -> bool,
    ) -> Option<(Vec<Redo>, Vec<Vec<PageId>>)> {
        let records = {
            let t = lock(&self.table);
            if !t.live_pages_all(txn, stampable) {
                return None;
            }
            t.live_redo(txn)
        };
        let pages = records.iter().map(crate::redo::pages).collect();
        Some((records, pages))
    }

    /// A transaction that changed nothing was rolled back with the core latch shared.
    pub fn aborted_shared(&self) {
        lock(&self.table).shared.aborts += 1;
    }

    /// `txn`'s commit with the core latch shared, once [`log_records`] logged its records at
    /// `lsns`: they are committed in the table (other transactions may change their pages
    /// from now on).
    pub fn committed_shared(&self, txn: TxnId, lsns: &[Lsn]) {
        let now = self.clock.now_ns();
        let mut t = lock(&self.table);
        t.commit(txn, lsns, now);
        t.shared.commits_logged += 1;
        t.shared.records_logged += lsns.len() as u64;
    }
}

/// Whether the log is short for an operation that logs `need_log` bytes at its commit (a
/// checkpoint that compacts everything is due), and the free bytes it wants.
pub(super) fn log_short(wal: &Wal, txns: &TxnTable, page_size: u64, need_log: u64) -> (bool, u64) {
    let reserve = super::checkpoint::op_log_reserve(page_size, wal);
    let want = reserve.max(need_log) + txns.log_reserved();
    let short = wal.free_bytes() <= want || super::checkpoint::log_fill(wal) > FORCE_ALL_FILL;
    (short, want)
}

/// Appends `records`, `txn`'s live records, to the log followed by its `Commit`, in the space
/// the transaction reserved. Returns their LSNs and the commit record's.
pub(crate) fn log_records(
    wal: &mut Wal,
    txn: TxnId,
    records: Vec<Redo>,
) -> Result<(Vec<Lsn>, Lsn)> {
    wal.unreserved(|wal| {
        let mut lsns = Vec::with_capacity(records.len());
        let mut prev = 0;
        for redo in records {
            prev = wal.append(txn, prev, Body::Redo { redo })?;
            lsns.push(prev);
        }
        let c = wal.append(txn, prev, Body::Commit)?;
        Ok((lsns, c))
    })
}

/// Each page of `pages` (the pages of each record, in order) with the LSN of the last record
/// that changes it (`lsns`: the records' LSNs, in order), by page id.
pub(crate) fn last_lsns(pages: &[Vec<PageId>], lsns: &[Lsn]) -> Vec<(PageId, Lsn)> {
    debug_assert_eq!(pages.len(), lsns.len());
    let mut last: HashMap<PageId, Lsn> = HashMap::new();
    for (pids, &lsn) in pages.iter().zip(lsns) {
        for &pid in pids {
            last.insert(pid, lsn);
        }
    }
    let mut v: Vec<(PageId, Lsn)> = last.into_iter().collect();
    v.sort_unstable();
    v
}
