//! Restart of the flushless mode (paper 001, section 4.2, Figure 5): "reincarnating the buffer
//! pool". The log holds only committed changes (a transaction's records are written at its
//! commit, right before its `Commit`; system and `Space` records are committed at once), so there
//! is nothing to undo and nothing is redone now: from the checkpoint's redo start, every committed
//! record a page may still lack is reloaded into the online log table and its page is marked
//! evicted dirty; on-the-fly redo applies them when the pages are read. A record older than the
//! checkpoint is skipped when its page is not in the checkpoint's dirty page table or the record
//! is older than the page's recovery LSN (Figure 5, lines 9-10); records the page already holds
//! are skipped by page LSN when it is read (the paper reads each page here to decide; reading
//! lazily keeps the restart free of page I/O). Pages allocated by transactions that never
//! committed are given back to the free list (a `Space` record each). No page is written.

use super::Flushless;
use crate::cache::PageCache;
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::identity::Agreement;
use crate::page::{Lsn, PageId};
use crate::recovery::{Recovered, RecoveryReport};
use crate::wal::record::{Body, Redo, TableCheckpointData, TxnId};
use crate::wal::{Master, Wal};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Keeps the parts of `redo` (logged at `lsn`) some page may lack.
fn needed(redo: Redo, lsn: Lsn, ckpt_lsn: Lsn, dpt: &HashMap<PageId, Lsn>) -> Option<Redo> {
    let keep = |pid: PageId| lsn > ckpt_lsn || dpt.get(&pid).is_some_and(|&rec| lsn >= rec);
    match redo {
        Redo::Images(images) => {
            let v: Vec<_> = images.into_iter().filter(|(p, _)| keep(*p)).collect();
            (!v.is_empty()).then_some(Redo::Images(v))
        }
        Redo::Pages(pages) => {
            let v: Vec<_> = pages.into_iter().filter(|(p, _)| keep(*p)).collect();
            (!v.is_empty()).then_some(Redo::Pages(v))
        }
        leaf => crate::redo::pages(&leaf)
            .into_iter()
            .all(keep)
            .then_some(leaf),
    }
}

/// Restart from `wal`, whose master is `master`; phase times on `clock`.
pub(crate) fn restart(
    fl: &mut Flushless,
    cache: &mut PageCache,
    wal: &mut Wal,
    clock: &dyn Clock,
    master: Master,
    agreement: Agreement,
) -> Result<Recovered> {
    wal.unreserved(|wal| restart_inner(fl, cache, wal, clock, master, agreement))
}

fn restart_inner(
    fl: &mut Flushless,
    cache: &mut PageCache,
    wal: &mut Wal,
    clock: &dyn Clock,
    master: Master,
    agreement: Agreement,
) -> Result<Recovered> {
    let mut rep = RecoveryReport {
        flushless: true,
        ..RecoveryReport::default()
    };
    // ---- analysis: the checkpoint record
    let t = clock.now_ns();
    let ckpt_lsn = master.checkpoint_lsn;
    let ck: TableCheckpointData = if ckpt_lsn == 0 {
        TableCheckpointData::default()
    } else {
        let first = wal
            .scan_from(ckpt_lsn)
            .and_then(|mut r| r.next_record())
            .map(|r| r.filter(|r| r.lsn == ckpt_lsn).map(|r| r.body));
        match first {
            Ok(Some(Body::TableCheckpoint(d))) => d,
            Ok(Some(Body::Checkpoint(_))) => return Err(super::wrong_mode(false)),
            Ok(Some(_)) => {
                return Err(Error::CorruptLog {
                    lsn: ckpt_lsn,
                    reason: "the log master names a record that is not a checkpoint".into(),
                })
            }
            Ok(None) | Err(Error::CorruptLog { .. }) => {
                return Err(Error::CorruptLog {
                    lsn: ckpt_lsn,
                    reason: "the checkpoint record the log master names is missing".into(),
                })
            }
            Err(e) => return Err(e),
        }
    };
    let dpt: HashMap<PageId, Lsn> = ck.dirty_pages.iter().copied().collect();
    let mut allocs: HashMap<TxnId, Vec<PageId>> = ck.allocations.iter().cloned().collect();
    let mut next_txn = ck.next_txn.max(1);
    rep.analysis_records = 1;
    rep.analysis_us = clock.now_ns().saturating_sub(t) / 1000;

    // ---- reload: the committed records into the table
    let t = clock.now_ns();
    let ahead_lsn = match agreement {
        Agreement::Ahead { checkpoint_lsn, .. } => checkpoint_lsn,
        Agreement::Same => 0,
    };
    let mut saw_ahead = false;
    let mut saw_checkpoint = ckpt_lsn == 0;
    let scan_start = master.start_lsn;
    rep.redo_start_lsn = scan_start;
    crate::sync::lock(&cache.wp).recover_begin(ckpt_lsn)?;
    // Records of transactions whose `Commit` has not been read yet.
    let mut pending: HashMap<TxnId, Vec<(Lsn, Redo)>> = HashMap::new();
    let mut reload: Vec<(Lsn, Redo)> = Vec::new();
    let mut ended: HashSet<TxnId> = HashSet::new();
    let mut end = scan_start;
    {
        let mut reader = wal.scan_from(scan_start)?.detecting_damage();
        while let Some(rec) = reader.next_record()? {
            rep.redo_records += 1;
            end = reader.position();
            if rec.txn != 0 {
                next_txn = next_txn.max(rec.txn + 1);
            }
            let after = rec.lsn > ckpt_lsn;
            match rec.body {
                Body::TableCheckpoint(_) if rec.lsn == ckpt_lsn => saw_checkpoint = true,
                Body::TableCheckpoint(_) => saw_ahead |= rec.lsn == ahead_lsn,
                Body::Checkpoint(_) => return Err(super::wrong_mode(false)),
                Body::Map(changes) if after => {
                    crate::sync::lock(&cache.wp).redo_map(rec.lsn, &changes)?
                }
                Body::System { redo } => {
                    reload.extend(needed(redo, rec.lsn, ckpt_lsn, &dpt).map(|r| (rec.lsn, r)))
                }
                Body::Space { redo, alloc, free } => {
                    if after {
                        let a = allocs.entry(rec.txn).or_default();
                        a.extend(alloc);
                        a.retain(|p| !free.contains(p));
                    }
                    reload.extend(needed(redo, rec.lsn, ckpt_lsn, &dpt).map(|r| (rec.lsn, r)));
                }
                Body::Redo { redo } => pending.entry(rec.txn).or_default().push((rec.lsn, redo)),
                Body::Commit => {
                    for (lsn, redo) in pending.remove(&rec.txn).unwrap_or_default() {
                        reload.extend(needed(redo, lsn, ckpt_lsn, &dpt).map(|r| (lsn, r)));
                    }
                    ended.insert(rec.txn);
                }
                Body::Abort => {
                    ended.insert(rec.txn);
                }
                _ => {}
            }
        }
    }
    if !saw_checkpoint {
        return Err(Error::CorruptLog {
            lsn: ckpt_lsn,
            reason: "the checkpoint record the log master names is missing".into(),
        });
    }
    if crate::identity::settle(agreement, saw_ahead, end)? {
        crate::sync::lock(&cache.wp).discard_unfinished_checkpoint()?;
    }
    wal.set_end(end)?;
    crate::sync::lock(&cache.wp).recover_end()?;
    rep.log_end_lsn = end;
    let now = fl.clock.now_ns();
    {
        let mut table = super::lock(&fl.table);
        // In log order: each page's records in the order they were made.
        for (lsn, redo) in reload {
            for pid in crate::redo::pages(&redo) {
                cache.pool.mark_evicted_dirty(pid);
            }
            table.add_committed(0, lsn, now, redo);
        }
        // Records are reloaded without reading pages, so some are already in their stored
        // image (a compaction wrote the page after the last checkpoint record). If that puts
        // the table over its budget, Figure 5's check is done after all: the pages whose
        // records take the most bytes are read (not written) and the records their stored
        // image holds are dropped, until the table fits.
        if table.bytes() > table.budget() {
            for pid in table.pages_by_bytes() {
                if table.bytes() <= table.budget() {
                    break;
                }
                // A page that does not read back keeps its records (its image may be among
                // them); reading it later reports it.
                let Ok(img) = cache.read_stored(pid) else {
                    continue;
                };
                rep.reload_pages_read += 1;
                if !table.drop_applied(pid, crate::page::page_lsn(&img)) {
                    cache.pool.forget(pid);
                }
            }
        }
        let s = table.snapshot();
        rep.reload_records = s.records;
        rep.reload_pages = s.pages;
    }
    rep.redo_us = clock.now_ns().saturating_sub(t) / 1000;

    // ---- pages of transactions that never committed go back to the free list
    let t = clock.now_ns();
    let losers: BTreeMap<TxnId, Vec<PageId>> = allocs
        .into_iter()
        .filter(|(txn, pages)| !ended.contains(txn) && !pages.is_empty())
        .collect();
    for (txn, pages) in losers {
        rep.undo_txns += 1;
        rep.given_back_pages += pages.len() as u64;
        fl.give_back(cache, wal, txn, pages)?;
        wal.append(txn, 0, Body::Abort)?;
    }
    let last = wal.next_lsn();
    wal.flush_to(last)?;
    rep.undo_us = clock.now_ns().saturating_sub(t) / 1000;
    Ok(Recovered {
        report: rep,
        next_txn,
    })
}
