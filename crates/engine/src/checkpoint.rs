//! Fuzzy checkpoints and the page cleaner, as steppable work.
//!
//! A checkpoint (1) picks its candidates from the flush list (dirty pages, oldest modification
//! first) through a [`CheckpointPolicy`], (2) writes them in batches, one batch per step, (3) makes
//! them durable, logs a checkpoint record holding the dirty page table and the active transaction
//! table, forces the log, stamps the data device with the checkpoint's generation (`identity.rs`)
//! and (4) points the log master at it, which frees the log space before
//! `min(oldest recLSN still dirty, oldest active transaction's first record, the checkpoint)`.
//!
//! Log-space rule (the policy may defer pages; the log must never overrun): when the log is more
//! than [`FORCE_ALL_FILL`] full, every candidate is written regardless of the policy, and an
//! operation that finds less than [`LOG_RESERVE_PAGES`] pages of log space left first runs a whole
//! checkpoint; if that frees nothing (a transaction holds the log), it fails with `LogFull`.

use crate::cache::{Detached, PageCache};
use crate::clock::Clock;
use crate::config::DbConfig;
use crate::error::{Error, Result};
use crate::page::{Lsn, PageId};
use crate::txn_table::TxnTable;
use crate::wal::record::{Body, CheckpointData};
use crate::wal::{Master, SharedWal, Wal};
use crate::writepath::WriteReason;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Above this log fill, checkpoints write every candidate whatever the policy says.
pub const FORCE_ALL_FILL: f64 = 0.85;
/// Log space (in pages; at most a quarter of the log) an operation needs before it starts (a
/// split logs several images).
pub const LOG_RESERVE_PAGES: u64 = 32;
const _: () = assert!(FORCE_ALL_FILL > 0.5 && FORCE_ALL_FILL < 1.0);

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
pub trait CheckpointPolicy: Send + Sync {
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

/// Counters of the checkpointer and the page cleaner.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointStats {
    pub checkpoints: u64,
    pub cleaner_writes: u64,
    /// Checkpoint selections deferred by the checkpoint policy.
    pub deferrals: u64,
    /// The most consecutive deferrals any page reached.
    pub max_consecutive_deferrals: u32,
}

/// The checkpointer's settings (from [`DbConfig`]).
struct Settings {
    page_size: u32,
    log_fill: f64,
    interval_ns: u64,
    batch_pages: usize,
    cleaner_clean_fraction: f64,
}

/// The checkpointer and the page cleaner: their policy, their state between steps, their clock
/// and counters.
pub(crate) struct Checkpointer {
    policy: Box<dyn CheckpointPolicy>,
    settings: Settings,
    clock: Arc<dyn Clock>,
    in_progress: Option<InProgress>,
    /// A maintenance step wrote a checkpoint's last batch: its end is due.
    finish_due: bool,
    /// End of the log when the last checkpoint began (checkpoints run every
    /// `checkpoint_log_fill` x log space of log growth).
    last_begin_lsn: Lsn,
    /// When the last checkpoint completed, on `clock`.
    last_ns: u64,
    /// A checkpoint due is left to the end of the transaction whose change found it due
    /// ([`Checkpointer::want`]); shared with `Shared`, which runs it once a transaction ends.
    wanted: Arc<AtomicBool>,
    pub stats: CheckpointStats,
}

/// What the log's space says about an operation that may log some bytes
/// ([`Checkpointer::log_space`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LogSpace {
    /// Room, and no checkpoint due.
    Ok,
    /// Room, but the log grew by a checkpoint interval since the last one began: one is due.
    Due,
    /// Short of room: a checkpoint must run first (or the operation is refused).
    Short,
}

/// An upper bound of a checkpoint record's size when at most `frames` pages are dirty: 16 bytes a
/// dirty page, plus a few hundred transactions and the record's own framing.
pub(crate) fn record_bound(frames: usize) -> u64 {
    16 * frames as u64 + (16 << 10)
}

/// The end of every checkpoint, whatever the mode: makes the pages written so far durable, lets
/// the write path save its own state, logs the record `body` builds (from the system reserve:
/// location records may have used the ordinary space, and a checkpoint is what frees log space),
/// forces it, stamps the data device with the checkpoint's generation (`identity.rs`) and points
/// the log master at it. The log is kept from `floor` (the oldest record recovery still needs;
/// None: the checkpoint record itself). Returns the record's LSN.
pub(crate) fn log_checkpoint(
    cache: &mut PageCache,
    wal: &mut Wal,
    floor: Option<Lsn>,
    body: impl FnOnce(&PageCache) -> Body,
) -> Result<Lsn> {
    debug_assert!(
        !cache.splits.any_pending(),
        "a checkpoint with a split pending (see `Checkpointer::finish`)"
    );
    crate::sync::lock(&cache.wp).sync(wal)?;
    // This checkpoint's generation: the data device is stamped with it before the master names
    // it (identity.rs).
    let generation = wal.master().generation + 1;
    // The write path's own snapshot (out of place: the page map) is tagged with the LSN the
    // checkpoint record gets; recovery replays location records logged after it.
    crate::sync::lock(&cache.wp).checkpoint(wal.next_lsn(), generation, wal.durable_lsn())?;
    let lsn = wal.append_system(&body(cache))?;
    wal.flush_to(lsn)?;
    let start = floor.map_or(lsn, |f| f.min(lsn));
    crate::sync::lock(&cache.wp).set_stamp(&crate::identity::Stamp {
        id: wal.db_id(),
        generation,
        checkpoint_lsn: lsn,
    })?;
    wal.set_master(Master {
        checkpoint_lsn: lsn,
        start_lsn: start,
        generation,
    })?;
    crate::sync::lock(&cache.wp).checkpoint_done();
    Ok(lsn)
}

/// A checkpoint whose record is logged ([`Checkpointer::finish_record`]) and whose durable
/// steps are left to [`Tail::complete`], run with no latch held.
#[must_use = "the checkpoint is complete only once its tail is"]
pub(crate) struct Tail {
    lsn: Lsn,
    start: Lsn,
    generation: u64,
}

impl Tail {
    /// The rest of [`log_checkpoint`], in its order, with the core and log latches released
    /// (each taken only for its own step): the write path's own checkpoint (out of place: the
    /// map snapshot, tagged with the record's LSN; journaled: every journaled page moved
    /// home), the log forced past the record, the data device stamped, the master pointed at
    /// the record, the write path told. The caller's writer's ticket keeps every page write
    /// and every other checkpoint out meanwhile, so the write path holds what it held when the
    /// record was logged; readers, shared writers and commits go on. An error poisons (the
    /// caller's).
    pub fn complete(self, wp: &crate::cache::SharedWritePath, wal: &SharedWal) -> Result<()> {
        let durable = wal.lock().durable_lsn();
        crate::sync::lock(wp).checkpoint(self.lsn, self.generation, durable)?;
        wal.force(self.lsn)?;
        let id = wal.lock().db_id();
        crate::sync::lock(wp).set_stamp(&crate::identity::Stamp {
            id,
            generation: self.generation,
            checkpoint_lsn: self.lsn,
        })?;
        wal.set_master(Master {
            checkpoint_lsn: self.lsn,
            start_lsn: self.start,
            generation: self.generation,
        })?;
        crate::sync::lock(wp).checkpoint_done();
        Ok(())
    }
}

fn log_fill(wal: &Wal) -> f64 {
    wal.used_bytes() as f64 / wal.capacity_bytes().max(1) as f64
}

impl Checkpointer {
    /// The policy the configuration asks for: hot-page-aware with `max_checkpoint_count`, or
    /// write-all.
    pub fn new(cfg: &DbConfig, clock: Arc<dyn Clock>) -> Checkpointer {
        let policy: Box<dyn CheckpointPolicy> = if cfg.max_checkpoint_count > 0 {
            Box::new(HotPageAware {
                max_checkpoint_count: cfg.max_checkpoint_count,
            })
        } else {
            Box::new(WriteAll)
        };
        Checkpointer {
            policy,
            settings: Settings {
                page_size: cfg.page_size,
                log_fill: cfg.checkpoint_log_fill,
                interval_ns: cfg.checkpoint_interval_ms * 1_000_000,
                batch_pages: cfg.checkpoint_batch_pages,
                cleaner_clean_fraction: cfg.cleaner_clean_fraction,
            },
            clock,
            in_progress: None,
            finish_due: false,
            last_begin_lsn: 0,
            last_ns: 0,
            wanted: Arc::new(AtomicBool::new(false)),
            stats: CheckpointStats::default(),
        }
    }

    pub fn set_policy(&mut self, policy: Box<dyn CheckpointPolicy>) {
        self.policy = policy;
    }

    /// Time intervals count from now (the end of an open).
    pub fn restart_interval(&mut self) {
        self.last_ns = self.clock.now_ns();
    }

    /// Starts a checkpoint: snapshots its candidates (all dirty pages with `force_all`, else
    /// those the policy picks). Its batches are written by [`Checkpointer::checkpoint`], by
    /// maintenance steps, or by a caller that writes them with the core latch released
    /// ([`Checkpointer::next_detached`], then [`Checkpointer::finish`]: `Db::checkpoint`).
    pub fn begin(
        &mut self,
        cache: &mut PageCache,
        wal: &mut Wal,
        txns: &TxnTable,
        force_all: bool,
    ) -> InProgress {
        let target = wal.next_lsn();
        self.last_begin_lsn = target;
        let candidates: Vec<(PageId, Lsn)> = cache
            .pool
            .dirty_pages()
            .into_iter()
            .filter(|&(_, l)| l < target)
            .collect();
        let fill = log_fill(wal);
        let low_space = wal.free_bytes() <= 2 * self.op_reserve(wal) + txns.log_reserved();
        let pending: Vec<PageId> = if force_all || fill > FORCE_ALL_FILL || low_space {
            candidates.iter().map(|&(p, _)| p).collect()
        } else {
            let cands: Vec<Candidate> = candidates
                .iter()
                .map(|&(pid, rec_lsn)| Candidate {
                    pid,
                    rec_lsn,
                    deferrals: cache.pool.ckpt_count(pid),
                })
                .collect();
            let chosen = self.policy.select(&cands, fill);
            let chosen_set: std::collections::HashSet<PageId> = chosen.iter().copied().collect();
            for c in &cands {
                if !chosen_set.contains(&c.pid) {
                    let n = cache.pool.defer(c.pid);
                    self.stats.deferrals += 1;
                    self.stats.max_consecutive_deferrals =
                        self.stats.max_consecutive_deferrals.max(n);
                }
            }
            chosen
        };
        InProgress { pending }
    }

    /// Writes up to `batch_pages` pages of a checkpoint in progress. Returns true when all are
    /// written.
    fn step(&self, cache: &mut PageCache, wal: &mut Wal, ck: &mut InProgress) -> Result<bool> {
        let n = self.settings.batch_pages.min(ck.pending.len());
        let batch: Vec<PageId> = ck.pending.drain(..n).collect();
        cache.write_batch(&batch, wal, WriteReason::Checkpoint)?;
        Ok(ck.pending.is_empty())
    }

    /// Completes a checkpoint: pages durable, record logged, log master moved.
    pub fn finish(&mut self, cache: &mut PageCache, wal: &mut Wal, txns: &TxnTable) -> Result<()> {
        let (floor, body) = self.record(cache, wal, txns)?;
        log_checkpoint(cache, wal, floor, |cache| body(cache))?;
        self.counted();
        Ok(())
    }

    /// What every checkpoint's record is made of, as the core latch (exclusive) sees it now:
    /// the log's floor and the record. Pending splits are posted first.
    fn record(
        &mut self,
        cache: &mut PageCache,
        wal: &mut Wal,
        txns: &TxnTable,
    ) -> Result<(Option<Lsn>, impl FnOnce(&PageCache) -> Body)> {
        // No split made beside other threads is left pending across a checkpoint: recovery
        // finds those it must post among the records after the last one (`splits.rs`). Posted
        // before the log's floor is taken: the posting's pages are dirty from its record on.
        crate::splits::settle(cache, wal)?;
        let t = txns.snapshot();
        let floor = [cache.pool.min_rec_lsn(), t.oldest_first_lsn]
            .into_iter()
            .flatten()
            .min();
        let body = move |cache: &PageCache| {
            Body::Checkpoint(CheckpointData {
                dirty_pages: cache.pool.dirty_pages(),
                active_txns: t.active,
                next_txn: t.next_txn,
            })
        };
        Ok((floor, body))
    }

    fn counted(&mut self) {
        self.stats.checkpoints += 1;
        self.last_ns = self.clock.now_ns();
    }

    /// [`Checkpointer::finish`] up to its record, for a checkpoint whose durable steps run with
    /// the core latch released ([`Tail::complete`]): pages durable (the caller synced the
    /// write path with the latch released just before, so this sync finds little or nothing
    /// to do: the pages other threads wrote since), the record logged. The caller takes a
    /// writer's ticket before it lets the core latch go and holds it until the tail is
    /// complete: no page is written, and no other checkpoint runs, in between.
    pub fn finish_record(
        &mut self,
        cache: &mut PageCache,
        wal: &mut Wal,
        txns: &TxnTable,
    ) -> Result<Tail> {
        let (floor, body) = self.record(cache, wal, txns)?;
        // Before the record: journaled, the sync logs the locations of the images written so
        // far, which recovery from this checkpoint must not replay (the journal is emptied at
        // its end).
        crate::sync::lock(&cache.wp).sync(wal)?;
        let generation = wal.master().generation + 1;
        let lsn = wal.append_system(&body(cache))?;
        self.counted();
        Ok(Tail {
            lsn,
            start: floor.map_or(lsn, |f| f.min(lsn)),
            generation,
        })
    }

    /// A whole checkpoint, now; `force_all` writes every dirty page whatever the policy says.
    pub fn checkpoint(
        &mut self,
        cache: &mut PageCache,
        wal: &mut Wal,
        txns: &TxnTable,
        force_all: bool,
    ) -> Result<()> {
        let mut ck = self.begin(cache, wal, txns, force_all);
        while !self.step(cache, wal, &mut ck)? {}
        self.finish(cache, wal, txns)
    }

    /// The next batch of `ck` as sealed copies (pages no longer cached or dirty are skipped);
    /// `None` once every page has had its turn. The caller writes it and hands it to
    /// [`PageCache::attach`].
    pub fn next_detached(&self, cache: &mut PageCache, ck: &mut InProgress) -> Option<Detached> {
        while !ck.pending.is_empty() {
            let n = self.settings.batch_pages.min(ck.pending.len());
            let batch: Vec<PageId> = ck.pending.drain(..n).collect();
            if let Some(d) = cache.detach(&batch, WriteReason::Checkpoint) {
                return Some(d);
            }
        }
        None
    }

    /// Log space kept free for the next operation's record: 32 pages, at most a quarter of the
    /// log.
    fn op_reserve(&self, wal: &Wal) -> u64 {
        (LOG_RESERVE_PAGES * self.settings.page_size as u64).min(wal.capacity_bytes() / 4)
    }

    /// Log bytes between two checkpoints: `checkpoint_log_fill` of the log space.
    fn cadence(&self, wal: &Wal) -> u64 {
        (self.settings.log_fill * wal.capacity_bytes() as f64) as u64
    }

    /// Log bytes written since the last checkpoint began.
    fn log_growth(&self, wal: &Wal) -> u64 {
        wal.next_lsn().saturating_sub(self.last_begin_lsn)
    }

    /// Whether [`Checkpointer::ensure_log_space`] would do nothing for an operation that may
    /// log `need` bytes: no checkpoint due, and room for it beside the reservations. An
    /// operation run with the core latch shared checks this with the log latched (and runs
    /// exclusive, through `ensure_log_space`, when it fails).
    pub fn log_space_ok(&self, wal: &Wal, txns: &TxnTable, need: u64) -> bool {
        self.log_space(wal, txns, need) == LogSpace::Ok
    }

    /// [`Checkpointer::log_space_ok`], saying why not.
    pub fn log_space(&self, wal: &Wal, txns: &TxnTable, need: u64) -> LogSpace {
        let want = self.op_reserve(wal).max(need) + txns.log_reserved();
        if wal.free_bytes() <= want || log_fill(wal) > FORCE_ALL_FILL {
            LogSpace::Short
        } else if self.log_growth(wal) >= self.cadence(wal) && self.in_progress.is_none() {
            LogSpace::Due
        } else {
            LogSpace::Ok
        }
    }

    /// Leaves the checkpoint due to the end of the calling operation's transaction.
    pub fn want(&self) {
        self.wanted.store(true, Ordering::Relaxed);
    }

    /// The flag [`Checkpointer::want`] raises.
    pub fn wanted_flag(&self) -> Arc<AtomicBool> {
        self.wanted.clone()
    }

    /// Makes sure an operation that may log about `need` bytes (its record and, later, its
    /// undo) can run: checkpoints when the log passed its fill threshold or space runs short,
    /// and fails with `LogFull` when even a checkpoint that writes every dirty page leaves too
    /// little space beyond what live transactions have reserved for their rollback.
    ///
    /// If `txn` is the transaction that pins the log's start, it may use the slack kept for the
    /// next operation: it is the one whose end frees the log, so it must be able to finish.
    pub fn ensure_log_space(
        &mut self,
        cache: &mut PageCache,
        wal: &mut Wal,
        txns: &TxnTable,
        need: u64,
        txn: crate::wal::record::TxnId,
    ) -> Result<()> {
        let want = self.op_reserve(wal).max(need) + txns.log_reserved();
        if let Some(force_all) = self.due_for_space(wal, txns, need) {
            self.checkpoint(cache, wal, txns, force_all)?;
        }
        // The pinning transaction only needs room for its own record and the reservations.
        let pinning =
            wal.free_bytes() <= want && txn != 0 && txns.pinning().is_some_and(|(id, _)| id == txn);
        let refuse_at = if pinning {
            need + txns.log_reserved()
        } else {
            want
        };
        if wal.free_bytes() <= refuse_at {
            // Every term, so that the numbers add up: used + the system reserve + free is the
            // log space, and free must exceed what this operation needs with the reservations.
            return Err(Error::LogFull(format!(
                "the log space of {} bytes holds {} bytes of records the oldest live transaction \
                 or the last checkpoint still needs, keeps {} for checkpoints and recovery, and \
                 has {} free: not more than the {refuse_at} this operation needs, {} of them \
                 reserved for the rollbacks of live transactions; commit or abort them (one \
                 transaction can use about half of the log at most)",
                wal.capacity_bytes(),
                wal.used_bytes(),
                wal.capacity_bytes()
                    .saturating_sub(wal.used_bytes())
                    .saturating_sub(wal.free_bytes()),
                wal.free_bytes(),
                txns.log_reserved()
            )));
        }
        Ok(())
    }

    /// Whether [`Checkpointer::ensure_log_space`] would run a checkpoint for an operation that
    /// may log `need` bytes, and which: `Some(true)` when space is short (every dirty page,
    /// whatever the policy), `Some(false)` when the log grew by a checkpoint interval and no
    /// background checkpoint is under way (the policy chooses). A caller may run that
    /// checkpoint first, its writes outside the core latch (`Shared::make_log_space`).
    pub fn due_for_space(&self, wal: &Wal, txns: &TxnTable, need: u64) -> Option<bool> {
        let want = self.op_reserve(wal).max(need) + txns.log_reserved();
        let short = wal.free_bytes() <= want || log_fill(wal) > FORCE_ALL_FILL;
        // A checkpoint that writes every dirty page moves the log's start up to the first record
        // of the oldest live transaction. If that transaction already holds the start, it frees
        // nothing, and its record would eat into the space reserved for rollbacks (an operation
        // refused for log space and retried would log one each time).
        // (Looked at only when space is short: it visits every live transaction.)
        let can_free = || {
            let floor = txns
                .oldest_first_lsn()
                .unwrap_or(u64::MAX)
                .min(wal.next_lsn());
            floor > wal.master().start_lsn
        };
        if short && can_free() {
            Some(true)
        } else if self.log_growth(wal) >= self.cadence(wal) && self.in_progress.is_none() {
            Some(false)
        } else {
            None
        }
    }

    /// One step of background work: continue or start a checkpoint (started when the log has
    /// grown by 3/4 of a checkpoint interval since the last one began, so it usually completes
    /// before an operation would run one itself, or when the time interval has passed). In two
    /// halves around the checkpoint batch's writes, which the caller makes with the core latch
    /// released ([`crate::cache::Detached::write_pages`]): this half takes the batch (copies of
    /// its pages) and returns it; if there is none, it does the rest of the step too and
    /// returns `None`. The page cleaner comes after, in its own two halves
    /// ([`Checkpointer::cleaner_detach`]).
    pub fn maintenance_detach(
        &mut self,
        cache: &mut PageCache,
        wal: &mut Wal,
        txns: &TxnTable,
    ) -> Result<Option<Detached>> {
        let interval_ns = self.settings.interval_ns;
        let interval_due = interval_ns > 0 && self.clock.now_ns() >= self.last_ns + interval_ns;
        let growth_due = self.log_growth(wal) * 4 >= self.cadence(wal) * 3;
        let ck = match self.in_progress.take() {
            Some(ck) => Some(ck),
            None if interval_due || growth_due || log_fill(wal) > FORCE_ALL_FILL => {
                Some(self.begin(cache, wal, txns, false))
            }
            None => None,
        };
        let Some(mut ck) = ck else {
            return Ok(None);
        };
        let n = self.settings.batch_pages.min(ck.pending.len());
        let batch: Vec<PageId> = ck.pending.drain(..n).collect();
        self.in_progress = Some(ck);
        match cache.detach(&batch, WriteReason::Checkpoint) {
            Some(d) => Ok(Some(d)),
            None => {
                self.note_if_written();
                Ok(None)
            }
        }
    }

    /// The other half of [`Checkpointer::maintenance_detach`], with the core latch again: `written`
    /// is how the batch's write went.
    pub fn maintenance_attach(
        &mut self,
        cache: &mut PageCache,
        d: &Detached,
        written: Result<()>,
    ) -> Result<()> {
        cache.attach(d, written.is_ok());
        written?;
        self.note_if_written();
        Ok(())
    }

    /// Notes the checkpoint's end due if its last batch was written.
    fn note_if_written(&mut self) {
        if self
            .in_progress
            .as_ref()
            .is_some_and(|c| c.pending.is_empty())
        {
            self.in_progress = None;
            self.finish_due = true;
        }
    }

    /// Whether a maintenance step has anything of the checkpointer's to do: a checkpoint in
    /// progress or its end due, or [`Checkpointer::maintenance_detach`] would begin one, or
    /// the page cleaner is on. Looked at without changing anything (the core latch shared).
    pub fn step_due(&self, wal: &Wal) -> bool {
        let interval_ns = self.settings.interval_ns;
        self.in_progress.is_some()
            || self.finish_due
            || self.settings.cleaner_clean_fraction > 0.0
            || (interval_ns > 0 && self.clock.now_ns() >= self.last_ns + interval_ns)
            || self.log_growth(wal) * 4 >= self.cadence(wal) * 3
            || log_fill(wal) > FORCE_ALL_FILL
    }

    /// Whether a background checkpoint is under way with the log already past a checkpoint
    /// interval (`checkpoint_log_fill` of the log space in use): at one batch a step it may
    /// not end before the log is short, and then an operation writes every dirty page itself,
    /// in the foreground. The wall-clock driver steps again at once (`Db::start_background`).
    pub fn behind(&self, wal: &Wal) -> bool {
        self.in_progress.is_some() && log_fill(wal) >= self.settings.log_fill
    }

    /// Whether a checkpoint's batches are all written and its end is due (the maintenance
    /// step's caller finishes it: [`Checkpointer::finish`], or with the core latch released,
    /// [`Checkpointer::finish_record`] and [`Tail::complete`]); cleared.
    pub fn take_finish_due(&mut self) -> bool {
        std::mem::take(&mut self.finish_due)
    }

    /// The page cleaner, after a checkpoint step, in two halves like it: it keeps clean the
    /// victims eviction takes next (as InnoDB's page cleaner flushes the tail of its LRU list).
    /// Among the next `cleaner_clean_fraction` of the pool's frames the CLOCK hand would take,
    /// copies of up to `batch_pages` dirty pages, in the order the hand reaches them, to be
    /// written with the core latch released and then given to
    /// [`Checkpointer::cleaner_attach`]. (The write path's background work, out of place its
    /// garbage collection, comes next, run by the caller without the core latch:
    /// `Db::maintenance`.)
    pub fn cleaner_detach(&self, cache: &mut PageCache) -> Option<Detached> {
        let window =
            (self.settings.cleaner_clean_fraction * cache.pool.frame_count() as f64) as usize;
        if window == 0 {
            return None;
        }
        let picks = cache
            .pool
            .cleaner_candidates(self.settings.batch_pages, window);
        cache.detach(&picks, WriteReason::Eviction)
    }

    /// The other half of [`Checkpointer::cleaner_detach`], with the core latch again:
    /// `written` is how the batch's write went.
    pub fn cleaner_attach(
        &mut self,
        cache: &mut PageCache,
        d: &Detached,
        written: Result<()>,
    ) -> Result<()> {
        cache.attach(d, written.is_ok());
        written?;
        self.stats.cleaner_writes += d.page_count() as u64;
        Ok(())
    }
}
