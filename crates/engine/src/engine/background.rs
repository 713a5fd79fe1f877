//! Checkpoints with their page writes outside the core latch: a maintenance step (one batch of
//! a background checkpoint, one of the page cleaner, then the write path's own background work) and
//! a whole checkpoint asked for by the user (`Db::checkpoint`), batch after batch. Each batch is
//! taken as sealed copies under the core latch, written with the core and log latches released
//! (readers, shared writers and commits go on), and handed back under it (`PageCache::attach`).

use super::latch::Ticket;
use super::{CoreGuard, Shared};
use crate::cache::{Detached, SharedWritePath};
use crate::error::Result;
use crate::wal::WalGuard;
use crate::writepath::SharedLog;
use std::borrow::Borrow;

impl Shared {
    /// One maintenance step (`Db::maintenance`). Returns whether the page cleaner wrote a whole
    /// batch (its window may hold more dirty pages) or the checkpoint under way is behind the
    /// log ([`crate::checkpoint::Checkpointer::behind`]): the wall-clock driver steps again at
    /// once.
    pub fn maintenance(&self) -> Result<bool> {
        // Not beside a whole checkpoint (it would write the same pages).
        let _one = crate::sync::lock(&self.checkpointing);
        if !self.maintenance_due() {
            return Ok(false);
        }
        let mut core = self.core();
        let mut step = core.maintenance_detach(&mut self.wal.lock())?;
        let wp = core.cache.wp.clone();
        if let Some(batch) = step.batch.take() {
            let ticket = self.writers.enter(&mut core);
            drop(core);
            let written = self.write_detached(&batch, &wp, ticket, |_, _| ());
            core = self.core();
            core.maintenance_attach(batch, written)?;
        }
        // Also after a step whose batch was all clean already (nothing to write): the rest of
        // the checkpoint is still behind.
        let mut more = core.checkpointer.behind(&self.wal.lock());
        if core.checkpointer.take_finish_due() {
            core = self.finish_checkpoint(core)?;
        }
        // The page cleaner: its batch written the same way, with the core latch released.
        if let Some(batch) = core.cleaner_detach() {
            let ticket = self.writers.enter(&mut core);
            drop(core);
            let written = self.write_detached(&batch, &wp, ticket, |_, _| ());
            core = self.core();
            more |= written.is_ok() && batch.page_count() >= core.cfg.checkpoint_batch_pages;
            core.cleaner_attach(batch, written)?;
        }
        if step.write_path_work {
            // The write path's own background work (out of place: garbage collection), which
            // needs the write path and the log only; with several threads in short steps
            // (`WritePath::maintain_beside`).
            let beside = core.cache.splits.several_threads();
            let ticket = self.writers.enter(&mut core);
            drop(core);
            let r = {
                let mut path = crate::sync::lock(&wp);
                let log = &mut SharedLog(&self.wal);
                if beside {
                    path.maintain_beside(log)
                } else {
                    path.maintain(log).map(|_| false)
                }
            };
            drop(ticket);
            self.flush_full_log();
            if let Err(e) = &r {
                self.health.poison(e);
            }
            if let Ok(true) = r {
                // Another step comes at once: threads waiting for the core latch exclusive
                // have it first.
                self.writers.give_way();
            }
            return r.map(|again| more || again);
        }
        Ok(more)
    }

    /// Whether a maintenance step has anything to do, looked at with the core latch shared, so
    /// that a step with nothing to do does not stop every other thread (it took the latch
    /// exclusive every time: a quarter of the exclusive takes of journaled YCSB-A with misses
    /// at 2 threads and a 10 ms step, docs/results.md). With one thread every step takes it, as
    /// before (virtual time unchanged: it also applies the dirty marks of shared writes); so
    /// does the flushless mode, and a poisoned handle (the step reports it). The write path is
    /// asked only if its mutex is free: one held by a page write is looked at next step.
    fn maintenance_due(&self) -> bool {
        let core = self.core_read();
        if !core.cache.splits.several_threads() || core.flushless.is_some() || core.check().is_err()
        {
            return true;
        }
        if core.checkpointer.step_due(&self.wal.lock()) {
            return true;
        }
        let due = match core.cache.wp.try_lock() {
            Ok(wp) => wp.maintenance_due(),
            Err(std::sync::TryLockError::WouldBlock) => false,
            Err(std::sync::TryLockError::Poisoned(_)) => true,
        };
        due
    }

    /// A whole checkpoint (`Db::checkpoint`): the pages the policy picks among those dirty now,
    /// a batch at a time, each written with the core latch released; then the checkpoint
    /// record, under it. In the flushless mode, whose checkpoints are made differently, all of
    /// it runs exclusive.
    pub fn checkpoint(&self) -> Result<()> {
        let _one = crate::sync::lock(&self.checkpointing);
        let mut core = self.core();
        let mut wal = self.wal.lock();
        if core.flushless.is_some() {
            return core.checkpoint(&mut wal);
        }
        core.check()?;
        let r = self.checkpoint_detached(core, wal, false);
        if let Err(e) = &r {
            self.health.poison(e);
        }
        r
    }

    /// Before a write of `key` (to `value`) that runs exclusive: if it would run a
    /// checkpoint first to make log space (`Checkpointer::ensure_log_space`), runs that
    /// checkpoint now, its batches written with the core latch released, so that only this
    /// thread waits for it. The operation then finds nothing to do (or, if other threads logged
    /// meanwhile, runs one itself, as before). With one thread the device sees the same writes
    /// in the same order. Not in the flushless mode or with a version store (whose writes read
    /// a record before they make log space).
    ///
    /// One such checkpoint runs at a time (`Shared::checkpointing`): a thread that finds one due
    /// while another thread runs one waits for it and looks again. Before, with the log short,
    /// each writer ran its own, all of them writing the same dirty pages side by side.
    ///
    /// Best effort: whether one is due is looked at with the core latch shared (most writes
    /// find none and take no exclusive latch here), and an error is left to the write, whose
    /// own `ensure_log_space` meets it again and handles it as it always has (a `LogFull` it
    /// may wait out; a device error has poisoned the handle already).
    pub fn make_log_space(&self, key: &[u8], value: Option<&[u8]>) {
        let due = |core: &super::Core, wal: &crate::wal::Wal| {
            if core.flushless.is_some() || core.versions.is_some() || core.check().is_err() {
                return None;
            }
            let need = super::update_log_need(core.cfg.page_size, key, value);
            core.checkpointer.due_for_space(wal, &core.txns, need)
        };
        {
            let core = self.core_read();
            if due(&core, &self.wal.lock()).is_none() {
                return;
            }
        }
        // Another thread's checkpoint is waited for here (it would write the same pages).
        let _one = crate::sync::lock(&self.checkpointing);
        let core = self.core();
        let wal = self.wal.lock();
        // Looked at again: another thread may have run it in between.
        let Some(force_all) = due(&core, &wal) else {
            return;
        };
        let _ = self
            .health
            .guard(self.checkpoint_detached(core, wal, force_all));
    }

    /// A whole checkpoint, its batches written with the core latch released (see
    /// [`Shared::checkpoint`]); `force_all`: every dirty page, whatever the policy.
    fn checkpoint_detached<'a>(
        &'a self,
        mut core: CoreGuard<'a>,
        mut wal: WalGuard<'a>,
        force_all: bool,
    ) -> Result<()> {
        let c = &mut *core;
        let mut ck = c
            .checkpointer
            .begin(&mut c.cache, &mut wal, &c.txns, force_all);
        drop(wal);
        loop {
            let c = &mut *core;
            let Some(batch) = c.checkpointer.next_detached(&mut c.cache, &mut ck) else {
                break;
            };
            let wp = core.cache.wp.clone();
            let ticket = self.writers.enter(&mut core);
            drop(core);
            let written = self.write_detached(&batch, &wp, ticket, |_, _| ());
            core = self.core();
            core.cache.attach(&batch, written.is_ok());
            written.and_then(|()| core.check())?;
        }
        self.finish_checkpoint(core).map(drop)
    }

    /// Ends a checkpoint whose pages are all written. With one thread, under the core latch as
    /// it always was (`Checkpointer::finish`: the device sees the same I/O in the same order).
    /// With several, its device I/O runs with the core latch released, so readers, shared
    /// writers and commits go on (before, all of them waited for it: the data device synced,
    /// out of place the map snapshot written, journaled every journaled page moved home, the
    /// log forced, the data device stamped and the master written, each with its flush):
    /// 1. the write path synced with no latch held, under a writer's ticket (exclusive
    ///    operations wait; the pages this checkpoint wrote become durable);
    /// 2. under the core and log latches, the record made and logged
    ///    (`Checkpointer::finish_record`, whose sync finds only what other threads wrote
    ///    since; files skip a flush with nothing written since the last);
    /// 3. a writer's ticket taken before the core latch is let go and held to the end, so no
    ///    page is written and no other checkpoint begins; then the rest with no latch held
    ///    (`Tail::complete`).
    ///
    /// An error poisons the handle, as it did under the latch.
    fn finish_checkpoint<'a>(&'a self, mut core: CoreGuard<'a>) -> Result<CoreGuard<'a>> {
        if !core.cache.splits.several_threads() {
            let c = &mut *core;
            let r = c
                .checkpointer
                .finish(&mut c.cache, &mut self.wal.lock(), &c.txns);
            self.health.guard(r)?;
            return Ok(core);
        }
        let wp = core.cache.wp.clone();
        let ticket = self.writers.enter(&mut core);
        drop(core);
        let r = crate::sync::lock(&wp).sync(&mut SharedLog(&self.wal));
        drop(ticket);
        self.flush_full_log();
        if let Err(e) = &r {
            self.health.poison(e);
        }
        r?;
        let mut core = self.core();
        core.check()?;
        let c = &mut *core;
        let r = c
            .checkpointer
            .finish_record(&mut c.cache, &mut self.wal.lock(), &c.txns);
        let tail = self.health.guard(r)?;
        let ticket = self.writers.enter(&mut core);
        drop(core);
        let r = tail.complete(&wp, &self.wal);
        drop(ticket);
        if let Err(e) = &r {
            // The record is logged and the write path half way through its own checkpoint.
            self.health.poison(e);
        }
        r?;
        Ok(self.core())
    }

    /// Writes a detached batch (a checkpoint's, the page cleaner's, or one written ahead of the
    /// misses: `Shared::shared_op`) with no latch held: the log forced past the copies (the
    /// write-ahead rule, with the log latch let go during the flush), then the pages under the
    /// write path's mutex. Out of place or journaled, page writes log their locations, each
    /// append taking the log latch for itself ([`SharedLog`]); in place they log nothing.
    /// Shared writers and commits go on meanwhile.
    ///
    /// `ticket` (`Writers`), taken where the copies were, with the core latch exclusive, is
    /// given back as soon as the write no longer needs it: in place once the write path's mutex
    /// is held (nothing else can then come between the copies and their write, and the write
    /// takes no log latch), so exclusive operations go on during the device write unless they
    /// need the mutex; out of place and journaled after the write and after `done` has seen its
    /// outcome (a batch written ahead is queued there, so the next exclusive latch finds it).
    pub(super) fn write_detached<B: Borrow<Detached>>(
        &self,
        held: B,
        wp: &SharedWritePath,
        ticket: Ticket<'_>,
        done: impl FnOnce(B, &Result<()>),
    ) -> Result<()> {
        let mut ticket = Some(ticket);
        let mut log = SharedLog(&self.wal);
        let batch: &Detached = held.borrow();
        let r = batch.force(&mut log).and_then(|()| {
            // In place, the log as the write path sees it (taken before the mutex, which must
            // not wait for the log latch once the ticket is given back).
            let mut durable = crate::writepath::DurableLog::of(&log);
            let mut w = crate::sync::lock(wp);
            if w.writes_log() {
                batch.write_pages(&mut **w, &mut log)
            } else {
                drop(ticket.take());
                batch.write_pages(&mut **w, &mut durable)
            }
        });
        done(held, &r);
        drop(ticket);
        self.flush_full_log();
        r
    }
}
