//! The flushless mode's operations with the core latch shared (see `flushless/shared.rs` for
//! why the log table stays right): a plain leaf change, the commit of a transaction made of
//! such changes, and the end of one that changed nothing. Anything more (a split, a page
//! allocated or freed, a table or log short of space, a page its commit cannot stamp) runs
//! exclusive, as before.

use super::{update_log_need, Core};
use crate::btree::tree as bt;
use crate::buffer::Seen;
use crate::error::Result;
use crate::flushless::shared::{last_lsns, log_records};
use crate::flushless::{Flushless, HEADER_RESERVE};
use crate::page::{self, Lsn, PageId};
use crate::read_shared::SharedWriter;
use crate::wal::record::{Redo, TxnId};
use crate::wal::SharedWal;

/// Table bytes an operation of the flushless mode asks to be free before it runs: a leaf change
/// or a leaf split (two leaves and their parent).
pub(super) fn table_need(page_size: u64, key: &[u8], value: Option<&[u8]>) -> u64 {
    (key.len() + value.map_or(0, |v| v.len())) as u64 + 3 * page_size + 256
}

impl Core {
    /// Whether an operation that changes nothing (a delete of a missing key) may end with the
    /// latch shared: what the exclusive run would do first (a checkpoint, a compaction) is not
    /// due.
    pub(super) fn nothing_to_do_shared(
        &self,
        wal: &SharedWal,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> bool {
        let need = update_log_need(self.cfg.page_size, key, value);
        let log = wal.lock();
        match &self.flushless {
            Some(fl) => {
                let ps = self.cfg.page_size as u64;
                fl.space_ok((&log, &self.txns), ps, need, table_need(ps, key, value))
            }
            None => self.checkpointer.log_space_ok(&log, &self.txns, need),
        }
    }

    /// The flushless mode's plain change of `leaf` (latched by `w`, as the plan `at` says) by
    /// `txn`: recorded live in the log table, then made. `None`: the exclusive run makes room
    /// first (or refuses); nothing was changed.
    pub(super) fn change_flushless(
        &self,
        fl: &Flushless,
        wal: &SharedWal,
        txn: TxnId,
        (key, value): (&[u8], Option<&[u8]>),
        (leaf, old, at): (PageId, Option<Vec<u8>>, crate::btree::node::Search),
        mut w: SharedWriter<'_>,
    ) -> Option<Result<Option<Vec<u8>>>> {
        let ps = self.cfg.page_size as u64;
        let need_log = update_log_need(self.cfg.page_size, key, value);
        let redo = match value {
            Some(v) => Redo::LeafPut {
                pid: leaf,
                key: key.to_vec(),
                value: v.to_vec(),
            },
            None => Redo::LeafDel {
                pid: leaf,
                key: key.to_vec(),
            },
        };
        let log = wal.lock();
        if !fl.space_ok((&log, &self.txns), ps, need_log, table_need(ps, key, value)) {
            return None;
        }
        let room = log.free_bytes().saturating_sub(self.txns.log_reserved());
        let recorded = match fl.add_plain(txn, redo, room) {
            Ok(Some(r)) => r,
            Ok(None) => return None,
            Err(e) => return Some(Err(e)),
        };
        // Reserved before the log is let go, so the next writer's space check counts it; the
        // first change also reserves the commit record.
        self.txns
            .reserve_log(txn, recorded.log_need, 2 * HEADER_RESERVE);
        drop(log);
        if let Err(e) = bt::plain::apply(&mut w, leaf, key, value, at) {
            // The leaf the plan read under this latch could not take the change: it is
            // corrupt, and the table holds a change the page does not.
            self.health.poison(&e);
            return Some(Err(e));
        }
        w.finish(recorded.lsn);
        self.stats.ops.add(1);
        Some(Ok(old))
    }

    /// The flushless mode's commit with the core latch shared: a transaction that changed
    /// nothing ends (`Ok(0)`); one whose changes are all plain leaf changes on pages this
    /// latch lets it stamp copies its records to the log and marks them committed (the
    /// commit record's LSN). `None`: it commits exclusive (it allocated or freed pages, a page
    /// it changed is not guarded, the handle is poisoned).
    pub(super) fn commit_flushless_shared(
        &self,
        fl: &Flushless,
        wal: &SharedWal,
        txn: TxnId,
    ) -> Option<Result<Lsn>> {
        if let Some(r) = self.end_reader_shared(txn) {
            if r.is_ok() {
                self.stats.commits.add(1);
            }
            return Some(r.map(|()| 0));
        }
        if self.check().is_err() || fl.keeps_pages(txn) {
            return None;
        }
        let pool = &self.cache.pool;
        // Only a guarded page may be written with the core latch shared (its stripe latch
        // held); guards change only with the latch exclusive.
        let stampable = |pid| match pool.seen(pid) {
            Seen::Resident(f) => pool.guarded(f),
            Seen::Loading(_) => false,
            Seen::EvictedDirty | Seen::Absent => true,
        };
        let (records, pages) = fl.live_if(txn, stampable)?;
        if records.is_empty() {
            return None;
        }
        let logged = log_records(&mut wal.lock(), txn, records);
        let (lsns, commit_lsn) = match logged {
            Ok(l) => l,
            Err(e) => {
                // As the exclusive commit: the log may hold part of the records.
                self.health.poison(&e);
                return Some(Err(e));
            }
        };
        // The real LSNs replace the provisional ones while the pages are still this
        // transaction's (no other may change them until the table marks the records
        // committed).
        for (pid, lsn) in last_lsns(&pages, &lsns) {
            if let Seen::Resident(f) = pool.seen(pid) {
                let _latch = crate::sync::write(pool.frame_latch(f));
                // SAFETY: the frame is guarded (checked above) and its stripe latch is held
                // exclusive.
                let data = unsafe { pool.frames[f as usize].data.write_shared() };
                page::set_page_lsn(data, lsn);
            }
        }
        fl.committed_shared(txn, &lsns);
        self.txns.committing_shared(txn);
        Some(Ok(commit_lsn))
    }
}
