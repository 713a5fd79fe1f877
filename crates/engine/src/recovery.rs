//! Formatting a new database and ARIES-style crash recovery: analysis from
//! the last checkpoint, redo from the oldest recLSN (page-LSN tested), undo of loser transactions
//! with compensation records. The time and records of each phase are reported (paper 000 Table II
//! reports exactly these).

use crate::cache::PageCache;
use crate::catalog::Catalog;
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::identity::Agreement;
use crate::meta::{self, META_PID};
use crate::page::{Lsn, PageId};
use crate::redo::Applied;
use crate::wal::record::{Body, LogRecord, Redo, TxnId};
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
    /// The restart of the flushless mode (paper 001, Figure 5): `analysis` reads the checkpoint,
    /// `redo` reloads committed records into the online log table (`redo_records` read,
    /// `reload_records` kept for `reload_pages` pages, nothing applied: on-the-fly redo applies
    /// them later), and `undo` gives back the pages of transactions that never committed
    /// (`undo_txns`, `given_back_pages`); nothing is undone and no page is written.
    #[serde(default)]
    pub flushless: bool,
    #[serde(default)]
    pub reload_records: u64,
    #[serde(default)]
    pub reload_pages: u64,
    #[serde(default)]
    pub given_back_pages: u64,
    /// Flushless restart: pages read (never written) because the reloaded records exceeded
    /// the log table's budget (Figure 5's page check, done only then).
    #[serde(default)]
    pub reload_pages_read: u64,
    /// Leaf splits made beside other threads whose separators the crash left unposted: found
    /// flagged after redo and posted before undo.
    #[serde(default)]
    pub splits_posted: u64,
}

/// Creates the meta page of a new database and makes it durable (in the flushless mode its
/// record also enters the log table).
pub(crate) fn format(
    cache: &mut PageCache,
    wal: &mut Wal,
    flushless: Option<&crate::flushless::Flushless>,
) -> Result<()> {
    let lsn = match flushless {
        Some(fl) => format_through(cache, &mut fl.sink(wal))?,
        None => format_through(cache, wal)?,
    };
    wal.flush_to(lsn)
}

fn format_through(cache: &mut PageCache, sink: &mut dyn crate::mtr::RedoSink) -> Result<Lsn> {
    let (_, lsn) = crate::ops::run_op(
        cache,
        sink,
        (0, 0),
        &mut Vec::new(),
        |m| {
            crate::btree::PageStore::write_page(m, META_PID, meta::init)?;
            Ok(((), None))
        },
        |_, redo| Body::System { redo },
    )?;
    Ok(lsn)
}

/// Reads the catalog from the meta page.
pub(crate) fn load_catalog(
    cache: &mut PageCache,
    wal: &mut Wal,
    catalog: &mut Catalog,
) -> Result<()> {
    let entries = crate::ops::read(cache, wal, |m| {
        crate::btree::PageStore::read_page(m, META_PID, meta::trees)
    })??;
    catalog.load(entries);
    Ok(())
}

fn redo_of(body: &Body) -> Option<&Redo> {
    match body {
        Body::Update { redo, .. }
        | Body::Load { redo, .. }
        | Body::Clr { redo, .. }
        | Body::System { redo } => Some(redo),
        _ => None,
    }
}

/// Hands the splits the log left pending (`flagged`: leaves flagged since the last checkpoint,
/// with the record that last flagged each) to `cache.splits`, in the order they were made: those
/// whose leaf, after redo, still has its flag, each with the tree it is in. Returns how many.
fn pending_splits(
    cache: &mut PageCache,
    wal: &mut Wal,
    catalog: &Catalog,
    flagged: HashMap<PageId, Lsn>,
) -> Result<u64> {
    let mut flagged: Vec<(Lsn, PageId)> = flagged.into_iter().map(|(p, l)| (l, p)).collect();
    flagged.sort_unstable();
    let mut pending = Vec::new();
    for (_, leaf) in flagged {
        let r = crate::ops::read(cache, wal, |m| {
            let read = crate::btree::PageStore::read_page(m, leaf, |p| {
                crate::btree::node::split_pending(p).unwrap_or(false)
            });
            if !read? {
                return Ok(None);
            }
            for t in catalog.all() {
                if crate::btree::tree::leads_to(m, t.root, leaf)? {
                    return Ok(Some(t.root));
                }
            }
            Err(Error::CorruptPage {
                pid: leaf,
                reason: "a leaf with a pending split is in no tree",
            })
        })?;
        if let Some(root) = r {
            pending.push(crate::splits::PendingSplit {
                root,
                leaf,
                reserved: 0,
            });
        }
    }
    let n = pending.len() as u64;
    cache.splits.add_pending(pending);
    Ok(n)
}

struct TxnEntry {
    last_lsn: Lsn,
    undo_next: Lsn,
    committed: bool,
}

/// What recovery hands back besides the repaired pages.
pub(crate) struct Recovered {
    pub report: RecoveryReport,
    /// The next transaction id to give out.
    pub next_txn: TxnId,
}

/// Crash recovery of the pages in `cache` from `wal`, whose master is `master`; phase times on
/// `clock`. `catalog` is loaded on the way (the undo phase needs the trees). Its appends may use
/// the log's system reserve: the crashed run kept that free, and losers' rollbacks fit the
/// space their reservations kept, so recovery always completes; `Db::open` checkpoints next.
pub(crate) fn recover(
    cache: &mut PageCache,
    wal: &mut Wal,
    catalog: &mut Catalog,
    clock: &dyn Clock,
    master: Master,
    agreement: Agreement,
) -> Result<Recovered> {
    wal.unreserved(|wal| recover_inner(cache, wal, catalog, clock, master, agreement))
}

fn recover_inner(
    cache: &mut PageCache,
    wal: &mut Wal,
    catalog: &mut Catalog,
    clock: &dyn Clock,
    master: Master,
    agreement: Agreement,
) -> Result<Recovered> {
    let mut rep = RecoveryReport::default();
    // ---- analysis
    let t = clock.now_ns();
    let scan_start = if master.checkpoint_lsn != 0 {
        master.checkpoint_lsn
    } else {
        master.start_lsn
    };
    let mut dpt: HashMap<PageId, Lsn> = HashMap::new();
    let mut att: HashMap<TxnId, TxnEntry> = HashMap::new();
    // Leaves split beside other threads after the checkpoint (none is pending across one),
    // with the last record that flagged each.
    let mut flagged: HashMap<PageId, Lsn> = HashMap::new();
    let mut next_txn = 1;
    let mut end = scan_start;
    let mut saw_checkpoint = false;
    // The checkpoint record the data device's stamp names when it is one checkpoint ahead.
    let ahead_lsn = match agreement {
        Agreement::Ahead { checkpoint_lsn, .. } => checkpoint_lsn,
        Agreement::Same => 0,
    };
    let mut saw_ahead = false;
    // The write path reloads what it saved at that checkpoint (out of place: the page map).
    crate::sync::lock(&cache.wp).recover_begin(master.checkpoint_lsn)?;
    {
        let mut reader = wal.scan_from(scan_start)?.detecting_damage();
        while let Some(rec) = reader.next_record()? {
            rep.analysis_records += 1;
            end = reader.position();
            if rec.txn != 0 {
                next_txn = next_txn.max(rec.txn + 1);
            }
            match &rec.body {
                Body::Checkpoint(d) if rec.lsn == master.checkpoint_lsn => {
                    saw_checkpoint = true;
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
                Body::Checkpoint(_) => saw_ahead |= rec.lsn == ahead_lsn,
                Body::TableCheckpoint(_) => return Err(crate::flushless::wrong_mode(true)),
                Body::Map(changes) => crate::sync::lock(&cache.wp).redo_map(rec.lsn, changes)?,
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
                        for pid in crate::redo::pages(redo) {
                            dpt.entry(pid).or_insert(rec.lsn);
                        }
                        for pid in crate::redo::flags_split(redo) {
                            flagged.insert(pid, rec.lsn);
                        }
                    }
                    if rec.txn != 0 {
                        let undo_next = match body {
                            Body::Clr { undo_next, .. } => *undo_next,
                            Body::Update { .. } | Body::Load { .. } => rec.lsn,
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
    if master.checkpoint_lsn != 0 && !saw_checkpoint {
        // The master is written only after its checkpoint record is durable: a log that ends
        // before that record lost durable records (zeroed, truncated or overwritten), which a
        // torn tail cannot explain. Recovering from it would resurrect or drop committed work.
        return Err(Error::CorruptLog {
            lsn: master.checkpoint_lsn,
            reason: "the checkpoint record the log master names is missing".into(),
        });
    }
    // Before anything is written: the data device's stamp must be confirmed by the log.
    if crate::identity::settle(agreement, saw_ahead, end)? {
        crate::sync::lock(&cache.wp).discard_unfinished_checkpoint()?;
    }
    wal.set_end(end)?;
    crate::sync::lock(&cache.wp).recover_end()?;
    rep.log_end_lsn = end;
    rep.analysis_us = clock.now_ns().saturating_sub(t) / 1000;

    // ---- redo
    let t = clock.now_ns();
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
            rep.redo_applied += redo_record(cache, wal, rec.lsn, redo, &dpt)?;
        }
    }
    rep.redo_us = clock.now_ns().saturating_sub(t) / 1000;

    // ---- undo
    let t = clock.now_ns();
    load_catalog(cache, wal, catalog)?;
    // Splits the crash left pending are posted before the first change (an undo's, or the
    // checkpoint that ends the open).
    rep.splits_posted = pending_splits(cache, wal, catalog, flagged)?;
    let mut changed = Vec::new();
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
                    prev = crate::undo::undo_one(
                        cache,
                        wal,
                        catalog,
                        &mut changed,
                        txn,
                        prev,
                        &undo,
                        rec.prev_lsn,
                    )?;
                    next = rec.prev_lsn;
                }
                Body::Load { undo, .. } => {
                    rep.undo_records += 1;
                    prev = crate::undo::undo_load(
                        cache,
                        wal,
                        catalog,
                        &mut changed,
                        (txn, prev),
                        &undo,
                        (next, rec.prev_lsn),
                    )?;
                    next = rec.prev_lsn;
                }
                Body::Clr { undo_next, .. } => next = undo_next,
                _ => next = rec.prev_lsn,
            }
        }
        let a = wal.append(txn, prev, Body::Abort)?;
        wal.append(txn, a, Body::End)?;
        // The loser's changes are undone: its pages hold nothing uncommitted of it any more.
        cache.pool.txn_ended(txn, &changed);
        changed.clear();
    }
    let last = wal.next_lsn();
    wal.flush_to(last)?;
    rep.undo_us = clock.now_ns().saturating_sub(t) / 1000;
    Ok(Recovered {
        report: rep,
        next_txn,
    })
}

/// Redoes one record's page changes where the page is older than the record.
fn redo_record(
    cache: &mut PageCache,
    wal: &mut Wal,
    lsn: Lsn,
    redo: &Redo,
    dpt: &HashMap<PageId, Lsn>,
) -> Result<u64> {
    let mut applied = 0;
    for pid in crate::redo::pages(redo) {
        if dpt.get(&pid).is_none_or(|&rec| rec > lsn) {
            continue;
        }
        let f = match cache.fetch(pid, wal) {
            Ok(f) => f,
            // A full image needs no valid old page: a torn page is simply replaced.
            Err(Error::CorruptPage { .. }) if crate::redo::has_image(redo, pid) => {
                cache.create(pid, wal)?
            }
            Err(e) => return Err(e),
        };
        if crate::redo::apply(cache.pool.data_mut(f), pid, lsn, redo)? == Applied::Changed {
            cache.pool.mark_dirty(f, lsn, 0);
            applied += 1;
        }
    }
    Ok(applied)
}

/// A recovery that ran out of buffer frames: says so, and what to do. Recovery redoes and
/// undoes what the crashed run did, with the pool this open has: undoing a change that held
/// many pages at once (a long value's overflow chain) needs as many frames as the run that
/// made it had. Nothing was changed that a later open does not redo; reopening with that
/// run's `buffer_pages` recovers.
pub(crate) fn out_of_frames(e: Error, frames: usize) -> Error {
    match e {
        Error::PoolExhausted(why) => Error::PoolExhausted(format!(
            "recovery ran out of buffer frames ({why}): undoing the crashed run's changes needs \
             more than the {frames} frames this open has; reopen with a larger buffer_pages (at \
             least what the crashed run used)"
        )),
        e => e,
    }
}
