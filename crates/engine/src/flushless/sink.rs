//! Where a mini-transaction's record goes in the flushless mode: into the online log table, not
//! the log. A transaction's changes stay there, live, until its commit copies them to the log
//! (redo-only); what must be committed at once is logged now:
//!
//! * system operations (`txn` 0: a new tree, the format) are logged and enter the table
//!   committed;
//! * the meta page's part of a transaction's operation (a page allocation: the free list's head
//!   or the high-water mark) is split off into a `Space` record logged at once, on behalf of the
//!   transaction: allocations are never undone (no undo exists), so an abort gives the pages
//!   back with another `Space` record, and a restart gives back those of transactions that
//!   never committed;
//! * a transaction's page frees wait for its commit (`defer_free`): freeing now would put on the
//!   free list a page that an abort brings back into the tree.
//!
//! One live transaction at a time may change a page: a change to a page that holds another live
//! transaction's changes fails with `Conflict` and changes nothing. This is what makes abort by
//! discarding records correct (no other transaction's change was built on the discarded ones,
//! and no structure change captured them), and it keeps each page's records in the order they
//! were made (docs/engine.md, "Flushless mode").

use super::table::LogTable;
use crate::error::{Error, Result};
use crate::meta::META_PID;
use crate::mtr::RedoSink;
use crate::page::{Lsn, PageId};
use crate::wal::record::{Body, MapChange, Redo, TxnId};
use crate::wal::Wal;
use crate::writepath::LogSink;
use std::sync::Mutex;

/// What an operation is part of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// A transaction's operation (or a system operation, `txn` 0).
    Op,
    /// A transaction's commit (its deferred frees): everything is the transaction's own and is
    /// logged with it right away.
    Commit,
    /// Pages given back for a transaction that will not commit: logged at once as `Space`.
    GiveBack(TxnId),
}

/// The flushless mode's redo sink, for one operation.
pub(crate) struct TableSink<'a> {
    pub wal: &'a mut Wal,
    table: &'a Mutex<LogTable>,
    phase: Phase,
    now_ns: u64,
    /// Pages the operation allocated, and frees it deferred.
    pub allocated: Vec<PageId>,
    pub freed: Vec<PageId>,
    /// Pages given back (phase `GiveBack`).
    give_back: Vec<PageId>,
    /// The part logged at once, with its LSN.
    system: Option<(Lsn, Vec<PageId>)>,
    /// Table bytes of the live part (what the commit will copy to the log).
    pub live_bytes: u64,
    /// Bytes of a change the table had no room for.
    pub refused_bytes: u64,
    /// For a transaction's operation: the log space its transaction's end may take.
    pub log_budget: Option<LogBudget>,
    /// Log bytes the operation adds to what its transaction's end needs (its commit: the live
    /// part, the frees it deferred; its abort or a restart: giving back the pages it allocated).
    pub log_need: u64,
    /// Log bytes of a change the log had no room for.
    pub refused_log: u64,
}

/// The log space an operation's transaction may add to its reservation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LogBudget {
    /// Free log bytes beyond every reservation.
    pub room: u64,
    pub page_size: u64,
    /// Pages the transaction allocated before the operation.
    pub prior_allocs: u64,
}

impl<'a> TableSink<'a> {
    pub fn new(wal: &'a mut Wal, table: &'a Mutex<LogTable>, phase: Phase, now_ns: u64) -> Self {
        TableSink {
            wal,
            table,
            phase,
            now_ns,
            allocated: Vec::new(),
            freed: Vec::new(),
            give_back: Vec::new(),
            system: None,
            live_bytes: 0,
            refused_bytes: 0,
            log_budget: None,
            log_need: 0,
            refused_log: 0,
        }
    }

    /// A sink that gives `pages` back to the free list on behalf of `owner`.
    pub fn give_back(
        wal: &'a mut Wal,
        table: &'a Mutex<LogTable>,
        owner: TxnId,
        pages: Vec<PageId>,
        now_ns: u64,
    ) -> Self {
        let mut s = TableSink::new(wal, table, Phase::GiveBack(owner), now_ns);
        s.give_back = pages;
        s
    }
}

fn lock(t: &Mutex<LogTable>) -> std::sync::MutexGuard<'_, LogTable> {
    t.lock().unwrap_or_else(|p| p.into_inner())
}

impl LogSink for TableSink<'_> {
    fn force(&mut self, lsn: Lsn) -> Result<()> {
        self.wal.flush_to(lsn)
    }
    fn next_lsn(&self) -> Lsn {
        self.wal.next_lsn()
    }
    fn durable_lsn(&self) -> Lsn {
        self.wal.durable_lsn()
    }
    fn log_map(&mut self, changes: &[MapChange]) -> Result<Lsn> {
        self.wal.append_system(&Body::Map(changes.to_vec()))
    }
}

impl RedoSink for TableSink<'_> {
    fn append_op(&mut self, txn: TxnId, prev_lsn: Lsn, body: Body) -> Result<Lsn> {
        let redo = match body {
            Body::Update { redo, .. }
            | Body::System { redo }
            | Body::Redo { redo }
            | Body::Clr { redo, .. } => redo,
            other => return self.wal.append(txn, prev_lsn, other),
        };
        let mut table = lock(self.table);
        // One live transaction per page: a system change, or another transaction's, must not
        // land on a page holding live changes (the meta page never holds any: its changes are
        // logged at once or within the commit). A page the operation took out of its tree
        // (a merge, a root collapse; its free waits for the commit) counts as changed: its
        // cells went into a page this transaction owns, and another's live changes among them
        // would be committed with this transaction and survive their own abort.
        let removed = self.freed.iter().copied();
        for pid in crate::redo::pages(&redo).into_iter().chain(removed) {
            let shared_meta = pid == META_PID && self.phase == Phase::Op && txn != 0;
            match table.owner(pid) {
                Some(o) if o != txn && !shared_meta => {
                    // Its end may be waited for (`Txn::past_committers`), as a record lock's holder's.
                    crate::locks::note_refuser(o);
                    return Err(Error::Conflict {
                        what: format!(
                            "page {pid}, which holds uncommitted changes of transaction {o}"
                        ),
                    });
                }
                _ => {}
            }
        }
        // Split: what is logged now (committed at once) and what stays live in the table.
        let (now, live): (Option<Redo>, Option<Redo>) = match (self.phase, txn) {
            (Phase::GiveBack(_), _) | (Phase::Op, 0) => (Some(redo), None),
            (Phase::Commit, _) => (None, Some(redo)),
            (Phase::Op, _) => match redo {
                Redo::Images(images) => {
                    let (meta, own): (Vec<_>, Vec<_>) =
                        images.into_iter().partition(|(p, _)| *p == META_PID);
                    (
                        (!meta.is_empty()).then_some(Redo::Images(meta)),
                        (!own.is_empty()).then_some(Redo::Images(own)),
                    )
                }
                Redo::Pages(pages) => {
                    let (meta, own): (Vec<_>, Vec<_>) =
                        pages.into_iter().partition(|(p, _)| *p == META_PID);
                    (
                        (!meta.is_empty()).then_some(Redo::Pages(meta)),
                        (!own.is_empty()).then_some(Redo::Pages(own)),
                    )
                }
                leaf => (None, Some(leaf)),
            },
        };
        let cost = now.as_ref().map_or(0, LogTable::cost) + live.as_ref().map_or(0, LogTable::cost);
        // System changes may exceed the budget: they are what frees it (checkpoints compact
        // committed records), and refusing a give-back would leak pages.
        if live.is_some() && self.phase == Phase::Op {
            if let Err(e) = table.check_room(cost) {
                self.refused_bytes = cost;
                return Err(e);
            }
        }
        // What the operation's transaction will log at its end must fit beside the other
        // transactions' reservations: the commit copies the live part and logs the frees
        // deferred to it, an abort (or a restart) gives back the pages allocated. Checked
        // before anything is logged, so a refusal changes nothing.
        if let (Some(b), Phase::Op) = (self.log_budget, self.phase) {
            let ps = b.page_size;
            let allocs = self.allocated.len() as u64;
            let need = live
                .as_ref()
                .map_or(0, |r| LogTable::cost(r) + super::HEADER_RESERVE)
                + self.freed.len() as u64 * super::free_log_bytes(ps)
                + super::give_back_log_bytes(ps, b.prior_allocs + allocs)
                - super::give_back_log_bytes(ps, b.prior_allocs);
            // The part logged now, and the commit record.
            let now_bytes = now.as_ref().map_or(0, |r| {
                LogTable::cost(r) + 8 * allocs + super::HEADER_RESERVE
            });
            let total = need + now_bytes + 2 * super::HEADER_RESERVE;
            if total > b.room {
                self.refused_log = total;
                return Err(Error::LogFull(format!(
                    "the change and the end of its transaction need {total} log bytes and {} \
                     are free beside what live transactions reserved: commit or abort them",
                    b.room
                )));
            }
            self.log_need = need;
        }
        self.live_bytes = live.as_ref().map_or(0, LogTable::cost);
        if let Some(redo) = now {
            let pages = crate::redo::pages(&redo);
            let body = match self.phase {
                Phase::GiveBack(owner) => (
                    owner,
                    Body::Space {
                        redo,
                        alloc: Vec::new(),
                        free: std::mem::take(&mut self.give_back),
                    },
                ),
                _ if txn == 0 => (0, Body::System { redo }),
                _ => (
                    txn,
                    Body::Space {
                        redo,
                        alloc: self.allocated.clone(),
                        free: Vec::new(),
                    },
                ),
            };
            let (owner, body) = body;
            let lsn = self.wal.append(owner, 0, &body)?;
            let redo = match body {
                Body::System { redo } | Body::Space { redo, .. } => redo,
                _ => unreachable!("built above"),
            };
            table.add_committed(0, lsn, self.now_ns, redo);
            self.system = Some((lsn, pages));
        }
        Ok(match live {
            Some(redo) => table.add_live(txn, redo),
            None => self.system.as_ref().map_or(0, |(l, _)| *l),
        })
    }

    fn note_alloc(&mut self, pid: PageId) {
        self.allocated.push(pid);
    }

    fn defer_free(&mut self, pid: PageId) -> bool {
        if self.phase == Phase::Op {
            self.freed.push(pid);
            true
        } else {
            false
        }
    }

    fn stamp(&self, pid: PageId, lsn: Lsn, txn: TxnId) -> (Lsn, TxnId) {
        match &self.system {
            Some((l, pages)) if pages.contains(&pid) => (*l, 0),
            _ => (lsn, txn),
        }
    }
}
