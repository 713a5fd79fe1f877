//! Checkpoints of the flushless mode (paper 001, section 4.1, Figure 4): log compaction, then the
//! checkpoint record.
//!
//! For each page with committed records in the table, a checkpoint decides whether compacting it
//! pays: it has at least `min_del` committed records, or its oldest is older than `max_age` (a
//! cold page must not hold the table, and the log, forever). A compacted page is written with
//! exactly its committed changes: from its frame when every record is committed (the frame then
//! is clean), else as its stored image with the committed records applied (a live transaction's
//! changes stay in the frame and the table: no-steal). Its committed records are then deleted.
//! The checkpoint record lists the other pages with the LSN of their oldest committed record,
//! and the pages live transactions allocated; the log is kept from the oldest of those LSNs.
//!
//! When (a departure from Figure 4, which always does both): compaction runs whenever the table's
//! free space falls to `checkpoint_free`; the checkpoint record (with the write path's own
//! snapshot: out of place, the page map) is logged at the log's cadence (`checkpoint_log_fill`,
//! as in the ARIES mode), on `Db::checkpoint` and at open. Compaction alone changes nothing a
//! restart needs, and on a small table it runs every few transactions: a map snapshot each time
//! would cost more than the compaction saves.
//!
//! Log-space rule (the paper leaves it open; the log must never overrun): once the log is
//! `checkpoint_log_fill` full, pages whose oldest committed record lies in the older half of the
//! log are compacted too; when the log runs short, every committed record is.

use super::Flushless;
use crate::cache::PageCache;
use crate::error::Result;
use crate::page::{Lsn, PageId};
use crate::wal::record::{Body, TableCheckpointData};
use crate::wal::Wal;
use crate::writepath::WriteReason;

/// Which pages a checkpoint compacts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Compact {
    /// None: only the checkpoint record (restart: no page writes).
    RecordOnly,
    /// By `min_del` and `max_age` (and the log-space rule).
    Normal,
    /// The pages whose committed records hold the most bytes, until this many bytes are freed
    /// (when `min_del` and `max_age` free too little: each write frees the most it can).
    Free(u64),
    /// Every page with committed records.
    All,
}

pub(crate) fn log_fill(wal: &Wal) -> f64 {
    wal.used_bytes() as f64 / wal.capacity_bytes().max(1) as f64
}

/// Log space kept free for the next operation: 32 pages, at most a quarter of the log.
pub(crate) fn op_log_reserve(page_size: u64, wal: &Wal) -> u64 {
    (crate::checkpoint::LOG_RESERVE_PAGES * page_size).min(wal.capacity_bytes() / 4)
}

/// Runs a checkpoint: compaction as `how` says, then the checkpoint record.
pub(crate) fn run(
    fl: &mut Flushless,
    cache: &mut PageCache,
    wal: &mut Wal,
    next_txn: crate::wal::record::TxnId,
    how: Compact,
) -> Result<()> {
    fl.last_begin_lsn = wal.next_lsn();
    if how != Compact::RecordOnly {
        compact(fl, cache, wal, how)?;
    }
    let (dirty_pages, floor) = {
        let t = super::lock(&fl.table);
        let dpt: Vec<(PageId, Lsn)> = t
            .summaries()
            .iter()
            .map(|s| (s.pid, s.oldest_lsn))
            .collect();
        let floor = dpt.iter().map(|&(_, l)| l).min();
        (dpt, floor)
    };
    let allocations = fl.allocations();
    crate::checkpoint::log_checkpoint(cache, wal, floor, move |_| {
        Body::TableCheckpoint(TableCheckpointData {
            dirty_pages,
            allocations,
            next_txn,
        })
    })?;
    fl.stats.checkpoints += 1;
    Ok(())
}

/// Log compaction (Figure 4, lines 4-19). Needs no checkpoint record of its own: the records
/// it deletes stay in the log until a checkpoint moves the log's start past them, and a restart
/// that reloads them skips them by page LSN once the pages it wrote are on the device.
pub(crate) fn compact(
    fl: &mut Flushless,
    cache: &mut PageCache,
    wal: &mut Wal,
    how: Compact,
) -> Result<()> {
    let now = fl.clock.now_ns();
    let max_age_ns = fl.cfg.max_age_ms.saturating_mul(1_000_000);
    let min_del = fl.cfg.min_del as usize;
    // The log-space rule: once the log is `checkpoint_log_fill` full, what holds its older half.
    let below = if log_fill(wal) >= fl.log_fill {
        wal.master().start_lsn + wal.used_bytes() / 2
    } else {
        0
    };
    let summaries = super::lock(&fl.table).summaries();
    let chosen: Vec<_> = match how {
        Compact::Free(target) => {
            let mut v = summaries;
            // Most bytes first (ties: the oldest first), so each page write frees the most.
            v.sort_by_key(|s| (std::cmp::Reverse(s.committed_bytes), s.oldest_lsn));
            let mut freed = 0;
            v.into_iter()
                .take_while(|s| {
                    let take = freed < target;
                    freed += s.committed_bytes;
                    take
                })
                .collect()
        }
        _ => summaries
            .into_iter()
            .filter(|s| {
                how == Compact::All
                    || s.committed >= min_del
                    || now.saturating_sub(s.oldest_ns) >= max_age_ns
                    || s.oldest_lsn < below
            })
            .collect(),
    };
    if chosen.is_empty() {
        return Ok(());
    }
    // The write-ahead rule: every committed record is durable before a page holding it is.
    wal.flush()?;
    let mut from_frames = Vec::new();
    let mut rebuilt = Vec::new();
    for s in &chosen {
        match cache.pool.lookup(s.pid) {
            Some(_) if !s.live => from_frames.push(s.pid),
            _ => {
                let mut img = cache.read_stored(s.pid)?;
                // Nothing to write if the stored image already holds every committed record
                // (they were reloaded by a restart, or written by an earlier compaction).
                if super::lock(&fl.table).redo_page(s.pid, &mut img, false)? > 0 {
                    rebuilt.push((s.pid, img));
                } else {
                    fl.stats.compacted_unchanged += 1;
                }
            }
        }
    }
    for batch in from_frames.chunks(fl.batch_pages.max(1)) {
        cache.write_batch(batch, wal, WriteReason::Checkpoint)?;
    }
    for batch in rebuilt.chunks_mut(fl.batch_pages.max(1)) {
        cache.write_images(batch, wal, WriteReason::Checkpoint)?;
    }
    fl.stats.compactions += 1;
    fl.stats.compacted_frames += from_frames.len() as u64;
    fl.stats.compacted_rebuilt += rebuilt.len() as u64;
    let mut t = super::lock(&fl.table);
    for s in &chosen {
        fl.stats.compacted_records += s.committed as u64;
        if !t.drop_committed(s.pid) && cache.pool.lookup(s.pid).is_none() {
            // Evicted dirty and now entirely on the device.
            cache.pool.forget(s.pid);
        }
    }
    Ok(())
}
