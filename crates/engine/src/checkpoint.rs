//! Fuzzy checkpoints and the page cleaner, as steppable work.
//!
//! A checkpoint (1) picks its candidates from the flush list (dirty pages, oldest modification
//! first) through a [`CheckpointPolicy`], (2) writes them in batches, one batch per step, (3) makes
//! them durable, logs a checkpoint record holding the dirty page table and the active transaction
//! table, forces the log and (4) points the log master at it, which frees the log space before
//! `min(oldest recLSN still dirty, oldest active transaction's first record, the checkpoint)`.
//!
//! Log-space rule (the policy may defer pages; the log must never overrun): when the log is more
//! than [`FORCE_ALL_FILL`] full, every candidate is written regardless of the policy, and an
//! operation that finds less than [`LOG_RESERVE_PAGES`] pages of log space left first runs a whole
//! checkpoint; if that frees nothing (a transaction holds the log), it fails with `LogFull`.

use crate::db::Core;
use crate::error::{Error, Result};
use crate::page::{Lsn, PageId};
use crate::wal::record::{Body, CheckpointData};
use crate::wal::{Master, Wal};
use crate::writepath::WriteReason;

/// Above this log fill, checkpoints write every candidate whatever the policy says.
pub const FORCE_ALL_FILL: f64 = 0.85;
/// Log space (in pages; at most a quarter of the log) an operation needs before it starts (a
/// split logs several images).
pub const LOG_RESERVE_PAGES: u64 = 32;

/// A dirty page a checkpoint may write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub pid: PageId,
    /// LSN of its oldest change not on the device.
    pub rec_lsn: Lsn,
    /// Consecutive earlier checkpoints that selected and deferred it (reset when the page is
    /// written or evicted by any path).
    pub deferrals: u32,
}

/// Which dirty pages a checkpoint writes. The default writes all; hot-page-aware checkpointing
/// (paper 000) defers some. Candidates a policy does not return are deferred: their count goes
/// up by one.
pub trait CheckpointPolicy: Send {
    /// From `candidates` (oldest modification first) choose the pages to write in this
    /// checkpoint. `log_fill` is the used fraction of the log space.
    fn select(&mut self, candidates: &[Candidate], log_fill: f64) -> Vec<PageId>;
    fn name(&self) -> &'static str;
}

/// Write every candidate (plain fuzzy checkpointing).
pub struct WriteAll;

impl CheckpointPolicy for WriteAll {
    fn select(&mut self, candidates: &[Candidate], _log_fill: f64) -> Vec<PageId> {
        candidates.iter().map(|c| c.pid).collect()
    }
    fn name(&self) -> &'static str {
        "write-all"
    }
}

/// Hot-page-aware checkpointing (paper 000, Algorithm 1): a selected page whose count of
/// consecutive deferrals is below `max_checkpoint_count` is skipped (its count goes up); at the
/// maximum it is written (and its count reset). Pages that stay dirty across checkpoints are the
/// hot ones, so their redundant writes are saved; eviction and the page cleaner are unaffected.
pub struct HotPageAware {
    pub max_checkpoint_count: u32,
}

impl CheckpointPolicy for HotPageAware {
    fn select(&mut self, candidates: &[Candidate], _log_fill: f64) -> Vec<PageId> {
        candidates
            .iter()
            .filter(|c| c.deferrals >= self.max_checkpoint_count)
            .map(|c| c.pid)
            .collect()
    }
    fn name(&self) -> &'static str {
        "hot-page-aware"
    }
}

/// A checkpoint in progress.
pub(crate) struct InProgress {
    pending: Vec<PageId>,
}

fn log_fill(wal: &Wal) -> f64 {
    wal.used_bytes() as f64 / wal.capacity_bytes().max(1) as f64
}

/// Starts a checkpoint: snapshots its candidates.
pub(crate) fn begin(core: &mut Core, wal: &mut Wal, force_all: bool) -> InProgress {
    let target = wal.next_lsn();
    core.last_checkpoint_begin_lsn = target;
    let candidates: Vec<(PageId, Lsn)> = core
        .pool
        .dirty_pages()
        .into_iter()
        .filter(|&(_, l)| l < target)
        .collect();
    let fill = log_fill(wal);
    let low_space = wal.free_bytes() <= 2 * op_reserve(core, wal) + core.log_reserved;
    let pending: Vec<PageId> = if force_all || fill > FORCE_ALL_FILL || low_space {
        candidates.iter().map(|&(p, _)| p).collect()
    } else {
        let cands: Vec<Candidate> = candidates
            .iter()
            .map(|&(pid, rec_lsn)| Candidate {
                pid,
                rec_lsn,
                deferrals: core.pool.ckpt_count(pid),
            })
            .collect();
        let chosen = core.policy.select(&cands, fill);
        let chosen_set: std::collections::HashSet<PageId> = chosen.iter().copied().collect();
        for c in &cands {
            if !chosen_set.contains(&c.pid) {
                let n = core.pool.defer(c.pid);
                core.stats.checkpoint_deferrals += 1;
                core.stats.max_consecutive_deferrals = core.stats.max_consecutive_deferrals.max(n);
            }
        }
        chosen
    };
    InProgress { pending }
}

/// Writes up to `budget` pages of a checkpoint in progress. Returns true when all are written.
pub(crate) fn step(
    core: &mut Core,
    wal: &mut Wal,
    ck: &mut InProgress,
    budget: usize,
) -> Result<bool> {
    let n = budget.min(ck.pending.len());
    let batch: Vec<PageId> = ck.pending.drain(..n).collect();
    core.pool
        .write_batch(&batch, core.wp.as_mut(), wal, WriteReason::Checkpoint)?;
    Ok(ck.pending.is_empty())
}

/// Completes a checkpoint: pages durable, record logged, log master moved.
pub(crate) fn finish(core: &mut Core, wal: &mut Wal) -> Result<()> {
    core.wp.sync(wal)?;
    // The write path's own snapshot (out of place: the page map) is tagged with the LSN the
    // checkpoint record gets; recovery replays location records logged after it.
    core.wp.checkpoint(wal.next_lsn())?;
    let dirty_pages = core.pool.dirty_pages();
    let active_txns: Vec<(u64, Lsn, Lsn)> = core
        .txns
        .iter()
        .filter(|(_, s)| s.last_lsn != 0 && !s.committing)
        .map(|(&id, s)| (id, s.last_lsn, s.last_lsn))
        .collect();
    let oldest_txn = core
        .txns
        .values()
        .filter(|s| s.first_lsn != 0 && !s.committing)
        .map(|s| s.first_lsn)
        .min();
    // From the system reserve too: location records may have used the ordinary space, and a
    // checkpoint is what frees log space.
    let lsn = wal.append_system(&Body::Checkpoint(CheckpointData {
        dirty_pages,
        active_txns,
        next_txn: core.next_txn,
    }))?;
    wal.flush_to(lsn)?;
    let mut start = lsn;
    if let Some(l) = core.pool.min_rec_lsn() {
        start = start.min(l);
    }
    if let Some(l) = oldest_txn {
        start = start.min(l);
    }
    wal.set_master(Master {
        checkpoint_lsn: lsn,
        start_lsn: start,
    })?;
    core.wp.checkpoint_done();
    core.stats.checkpoints += 1;
    core.last_checkpoint_ns = core.clock.now_ns();
    Ok(())
}

/// A whole checkpoint, now (the policy decides which pages it writes).
pub(crate) fn checkpoint(core: &mut Core, wal: &mut Wal) -> Result<()> {
    checkpoint_with(core, wal, false)
}

/// A whole checkpoint; `force_all` writes every dirty page whatever the policy says.
pub(crate) fn checkpoint_with(core: &mut Core, wal: &mut Wal, force_all: bool) -> Result<()> {
    let mut ck = begin(core, wal, force_all);
    let batch = core.cfg.checkpoint_batch_pages;
    while !step(core, wal, &mut ck, batch)? {}
    finish(core, wal)
}

/// Log space kept free for the next operation's record: 32 pages, at most a quarter of the log.
fn op_reserve(core: &Core, wal: &Wal) -> u64 {
    (LOG_RESERVE_PAGES * core.cfg.page_size as u64).min(wal.capacity_bytes() / 4)
}

/// Log space a transaction keeps reserved to roll back an update whose record took
/// `record_bytes`: its compensation record mirrors it (the inverse leaf change, or images of a
/// structure change of the same extent).
pub(crate) fn undo_reserve(record_bytes: u64) -> u64 {
    record_bytes + 128
}

/// Log bytes a transaction reserves once, from its first update on: its Abort and End records
/// and room for a few structure changes its rollback may cause by itself (a re-inserted key
/// splitting a leaf that other transactions filled meanwhile).
pub(crate) fn txn_reserve(page_size: u32) -> u64 {
    256 + 4 * page_size as u64
}

/// Makes sure an operation that may log about `need` bytes (its record and, later, its undo)
/// can run: checkpoints when the log passed its fill threshold or space runs short, and fails
/// with `LogFull` when even a checkpoint that writes every dirty page leaves too little space
/// beyond what live transactions have reserved for their rollback.
pub(crate) fn ensure_log_space(core: &mut Core, wal: &mut Wal, need: u64) -> Result<()> {
    let want = op_reserve(core, wal).max(need) + core.log_reserved;
    let short = wal.free_bytes() <= want || log_fill(wal) > FORCE_ALL_FILL;
    if short {
        // Space is short: a checkpoint that writes every dirty page, whatever the policy.
        checkpoint_with(core, wal, true)?;
    } else if log_growth(core, wal) >= cadence(core, wal) && core.checkpoint_in_progress.is_none() {
        // The log grew by a checkpoint interval and no background checkpoint is under way.
        checkpoint_with(core, wal, false)?;
    }
    if wal.free_bytes() <= want {
        return Err(Error::LogFull(format!(
            "{} of {} log bytes are in use or reserved for the rollback of live transactions \
             ({} reserved); abort or commit them",
            wal.used_bytes(),
            wal.capacity_bytes(),
            core.log_reserved
        )));
    }
    Ok(())
}

/// Log bytes between two checkpoints: `checkpoint_log_fill` of the log space.
fn cadence(core: &Core, wal: &Wal) -> u64 {
    (core.cfg.checkpoint_log_fill * wal.capacity_bytes() as f64) as u64
}

/// Log bytes written since the last checkpoint began.
fn log_growth(core: &Core, wal: &Wal) -> u64 {
    wal.next_lsn()
        .saturating_sub(core.last_checkpoint_begin_lsn)
}

/// One step of background work: continue or start a checkpoint (started when the log has grown
/// by 3/4 of a checkpoint interval since the last one began, so it usually completes before an
/// operation would run one itself, or when the time interval has passed), and clean frames.
pub(crate) fn maintenance(core: &mut Core, wal: &mut Wal) -> Result<()> {
    let interval_ns = core.cfg.checkpoint_interval_ms * 1_000_000;
    let interval_due =
        interval_ns > 0 && core.clock.now_ns() >= core.last_checkpoint_ns + interval_ns;
    let growth_due = log_growth(core, wal) * 4 >= cadence(core, wal) * 3;
    let mut ck = match core.checkpoint_in_progress.take() {
        Some(ck) => Some(ck),
        None if interval_due || growth_due || log_fill(wal) > FORCE_ALL_FILL => {
            Some(begin(core, wal, false))
        }
        None => None,
    };
    if let Some(c) = ck.as_mut() {
        let batch = core.cfg.checkpoint_batch_pages;
        if step(core, wal, c, batch)? {
            finish(core, wal)?;
            ck = None;
        }
    }
    core.checkpoint_in_progress = ck;
    let want = (core.cfg.cleaner_clean_fraction * core.pool.frame_count() as f64) as usize;
    if want > 0 && core.pool.clean_frames() < want {
        let picks = core
            .pool
            .cleaner_candidates(core.cfg.checkpoint_batch_pages);
        let n = core
            .pool
            .write_batch(&picks, core.wp.as_mut(), wal, WriteReason::Eviction)?;
        core.stats.cleaner_writes += n as u64;
    }
    // Background work of the write path (out of place: garbage collection).
    core.wp.maintain(wal)?;
    Ok(())
}
