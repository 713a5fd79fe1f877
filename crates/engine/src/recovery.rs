//! Formatting a new database, transaction rollback, and ARIES-style crash recovery: analysis from
//! the last checkpoint, redo from the oldest recLSN (page-LSN tested), undo of loser transactions
//! with compensation records. The time and records of each phase are reported (paper 000 Table II
//! reports exactly these).

use crate::btree::node;
use crate::db::Core;
use crate::error::{Error, Result};
use crate::meta::{self, META_PID};
use crate::page::{self, Lsn, PageId};
use crate::wal::record::{Body, LogRecord, Redo, TxnId, Undo};
use crate::wal::{Master, Wal};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// What recovery did, phase by phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RecoveryReport {
    pub analysis_records: u64,
    pub analysis_us: u64,
    pub redo_records: u64,
    /// Page changes actually reapplied (page LSN older than the record).
    pub redo_applied: u64,
    pub redo_us: u64,
    pub undo_txns: u64,
    pub undo_records: u64,
    pub undo_us: u64,
    /// First LSN redo read, and the end of the valid log.
    pub redo_start_lsn: Lsn,
    pub log_end_lsn: Lsn,
}

/// Creates the meta page of a new database and makes it durable.
pub(crate) fn format(core: &mut Core, wal: &mut Wal) -> Result<()> {
    let (_, lsn) = core.run_op(
        wal,
        0,
        0,
        |m| {
            crate::btree::PageStore::write_page(m, META_PID, meta::init)?;
            Ok(((), None))
        },
        |_, redo| Body::System { redo },
    )?;
    wal.flush_to(lsn)
}

/// Applies a logical undo through the tree and logs it as a compensation record.
fn undo_one(
    core: &mut Core,
    wal: &mut Wal,
    txn: TxnId,
    prev: Lsn,
    u: &Undo,
    undo_next: Lsn,
) -> Result<Lsn> {
    let tree = core.tree_by_id(u.tree)?;
    let (_, lsn) = core.apply(
        wal,
        (txn, prev),
        &tree,
        &u.key,
        u.old.as_deref(),
        |_, redo| Body::Clr { redo, undo_next },
    )?;
    Ok(if lsn == 0 { prev } else { lsn })
}

/// Rolls back a live transaction from its in-memory undo list.
pub(crate) fn rollback(
    core: &mut Core,
    wal: &mut Wal,
    txn: TxnId,
    last_lsn: Lsn,
    undo: &[(Lsn, Undo)],
) -> Result<()> {
    if last_lsn == 0 {
        return Ok(());
    }
    let mut prev = last_lsn;
    for i in (0..undo.len()).rev() {
        let undo_next = if i == 0 { 0 } else { undo[i - 1].0 };
        prev = undo_one(core, wal, txn, prev, &undo[i].1, undo_next)?;
    }
    let a = wal.append(txn, prev, Body::Abort)?;
    wal.append(txn, a, Body::End)?;
    Ok(())
}

fn redo_pages(redo: &Redo) -> Vec<PageId> {
    match redo {
        Redo::LeafPut { pid, .. } | Redo::LeafDel { pid, .. } => vec![*pid],
        Redo::Images(v) => v.iter().map(|(p, _)| *p).collect(),
    }
}

fn redo_of(body: &Body) -> Option<&Redo> {
    match body {
        Body::Update { redo, .. } | Body::Clr { redo, .. } | Body::System { redo } => Some(redo),
        _ => None,
    }
}

struct TxnEntry {
    last_lsn: Lsn,
    undo_next: Lsn,
    committed: bool,
}

/// Crash recovery.
pub(crate) fn recover(core: &mut Core, wal: &mut Wal, master: Master) -> Result<()> {
    let mut rep = RecoveryReport::default();
    // ---- analysis
    let t = core.clock.now_ns();
    let scan_start = if master.checkpoint_lsn != 0 {
        master.checkpoint_lsn
    } else {
        master.start_lsn
    };
    let mut dpt: HashMap<PageId, Lsn> = HashMap::new();
    let mut att: HashMap<TxnId, TxnEntry> = HashMap::new();
    let mut next_txn = 1;
    let mut end = scan_start;
    // The write path reloads what it saved at that checkpoint (out of place: the page map).
    core.wp.recover_begin(master.checkpoint_lsn)?;
    {
        let mut reader = wal.scan_from(scan_start)?;
        while let Some(rec) = reader.next_record()? {
            rep.analysis_records += 1;
            end = reader.position();
            if rec.txn != 0 {
                next_txn = next_txn.max(rec.txn + 1);
            }
            match &rec.body {
                Body::Checkpoint(d) if rec.lsn == master.checkpoint_lsn => {
                    for &(pid, l) in &d.dirty_pages {
                        dpt.entry(pid).or_insert(l);
                    }
                    for &(id, last, undo_next) in &d.active_txns {
                        att.entry(id).or_insert(TxnEntry {
                            last_lsn: last,
                            undo_next,
                            committed: false,
                        });
                    }
                    next_txn = next_txn.max(d.next_txn);
                }
                Body::Checkpoint(_) => {}
                Body::Map(changes) => core.wp.redo_map(rec.lsn, changes)?,
                Body::Commit => {
                    att.entry(rec.txn).or_insert(TxnEntry {
                        last_lsn: rec.lsn,
                        undo_next: 0,
                        committed: true,
                    });
                    if let Some(e) = att.get_mut(&rec.txn) {
                        e.committed = true;
                        e.last_lsn = rec.lsn;
                    }
                }
                Body::End => {
                    att.remove(&rec.txn);
                }
                Body::Abort => {
                    if let Some(e) = att.get_mut(&rec.txn) {
                        e.last_lsn = rec.lsn;
                    }
                }
                body => {
                    if let Some(redo) = redo_of(body) {
                        for pid in redo_pages(redo) {
                            dpt.entry(pid).or_insert(rec.lsn);
                        }
                    }
                    if rec.txn != 0 {
                        let undo_next = match body {
                            Body::Clr { undo_next, .. } => *undo_next,
                            Body::Update { .. } => rec.lsn,
                            _ => att.get(&rec.txn).map_or(0, |e| e.undo_next),
                        };
                        let e = att.entry(rec.txn).or_insert(TxnEntry {
                            last_lsn: 0,
                            undo_next: 0,
                            committed: false,
                        });
                        e.last_lsn = rec.lsn;
                        e.undo_next = undo_next;
                    }
                }
            }
        }
    }
    wal.set_end(end)?;
    core.wp.recover_end()?;
    rep.log_end_lsn = end;
    rep.analysis_us = core.clock.now_ns().saturating_sub(t) / 1000;
    core.next_txn = next_txn;

    // ---- redo
    let t = core.clock.now_ns();
    if let Some(&redo_start) = dpt.values().min() {
        rep.redo_start_lsn = redo_start;
        let records: Vec<LogRecord> = {
            let mut reader = wal.scan_from(redo_start.max(master.start_lsn))?;
            let mut v = Vec::new();
            while let Some(rec) = reader.next_record()? {
                if rec.lsn >= end {
                    break;
                }
                if redo_of(&rec.body).is_some() {
                    v.push(rec);
                }
            }
            v
        };
        for rec in records {
            rep.redo_records += 1;
            let redo = redo_of(&rec.body).expect("filtered");
            rep.redo_applied += redo_record(core, wal, rec.lsn, redo, &dpt)?;
        }
    }
    rep.redo_us = core.clock.now_ns().saturating_sub(t) / 1000;

    // ---- undo
    let t = core.clock.now_ns();
    core.load_catalog(wal)?;
    let mut losers: Vec<(TxnId, TxnEntry)> = att.into_iter().collect();
    losers.sort_by_key(|(id, _)| *id);
    for (txn, e) in losers {
        if e.committed {
            wal.append(txn, e.last_lsn, Body::End)?;
            continue;
        }
        rep.undo_txns += 1;
        let mut prev = e.last_lsn;
        let mut next = e.undo_next;
        while next != 0 {
            let rec = wal.read_record(next)?;
            if rec.txn != txn {
                return Err(Error::CorruptLog {
                    lsn: next,
                    reason: format!(
                        "undo chain of txn {txn} reached a record of txn {}",
                        rec.txn
                    ),
                });
            }
            match rec.body {
                Body::Update { undo, .. } => {
                    rep.undo_records += 1;
                    prev = undo_one(core, wal, txn, prev, &undo, rec.prev_lsn)?;
                    next = rec.prev_lsn;
                }
                Body::Clr { undo_next, .. } => next = undo_next,
                _ => next = rec.prev_lsn,
            }
        }
        let a = wal.append(txn, prev, Body::Abort)?;
        wal.append(txn, a, Body::End)?;
    }
    let last = wal.next_lsn();
    wal.flush_to(last)?;
    rep.undo_us = core.clock.now_ns().saturating_sub(t) / 1000;
    core.recovery = Some(rep);
    Ok(())
}

/// Redoes one record's page changes where the page is older than the record.
fn redo_record(
    core: &mut Core,
    wal: &mut Wal,
    lsn: Lsn,
    redo: &Redo,
    dpt: &HashMap<PageId, Lsn>,
) -> Result<u64> {
    let mut applied = 0;
    let wants = |pid: PageId| dpt.get(&pid).is_some_and(|&rec| rec <= lsn);
    match redo {
        Redo::Images(images) => {
            for (pid, image) in images {
                if !wants(*pid) {
                    continue;
                }
                // A full image needs no valid old page: a torn page is simply replaced.
                let f = match core.pool.fetch(*pid, core.wp.as_mut(), wal) {
                    Ok(f) => f,
                    Err(Error::CorruptPage { .. }) => {
                        core.pool.create(*pid, core.wp.as_mut(), wal)?
                    }
                    Err(e) => return Err(e),
                };
                let data = core.pool.data_mut(f);
                if page::is_zeroed(data) || page::page_lsn(data) < lsn {
                    if image.len() != data.len() {
                        return Err(Error::CorruptLog {
                            lsn,
                            reason: format!("page image of {} bytes", image.len()),
                        });
                    }
                    data.copy_from_slice(image);
                    page::set_page_lsn(data, lsn);
                    core.pool.mark_dirty(f, lsn);
                    applied += 1;
                }
            }
        }
        Redo::LeafPut { pid, key, .. } | Redo::LeafDel { pid, key } if wants(*pid) => {
            let f = core.pool.fetch(*pid, core.wp.as_mut(), wal)?;
            let data = core.pool.data_mut(f);
            if page::is_zeroed(data) {
                return Err(Error::CorruptPage {
                    pid: *pid,
                    reason: "redo of a leaf change found the page never written",
                });
            }
            if page::page_lsn(data) < lsn {
                if let Redo::LeafPut { value, .. } = redo {
                    node::leaf_put_inline(data, key, value).map_err(|e| match e {
                        node::PutError::Corrupt(e) => e,
                        node::PutError::NoSpace => Error::CorruptLog {
                            lsn,
                            reason: format!("redo of a leaf put does not fit page {pid}"),
                        },
                    })?;
                } else {
                    node::leaf_del(data, key)?;
                }
                page::set_page_lsn(data, lsn);
                core.pool.mark_dirty(f, lsn);
                applied += 1;
            }
        }
        _ => {}
    }
    Ok(applied)
}
