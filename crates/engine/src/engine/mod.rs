//! The engine behind the facade: one open database's components, and the operations that need
//! several of them. Each component owns its state and is reached through narrow methods:
//!
//! - `cache` ([`PageCache`]): buffer pool + write path, eviction policy, after-read hook;
//! - `txns` ([`TxnTable`]): live transactions, log reservations, concurrency control, undo store;
//! - `catalog` ([`Catalog`]): the named trees;
//! - `checkpointer` ([`Checkpointer`]): checkpoint policy and state, page cleaner;
//! - `health` ([`Health`]): the poison signal every component shares.
//!
//! Only this module and the API facade (`db.rs`, `txn.rs`) see the whole; checkpoint, recovery,
//! undo and the components themselves receive just the parts they use.
//!
//! Latching: a reader-writer core latch (`Shared::core`, `Shared::core_read`) over the
//! components, sharded per thread (crossbeam's `ShardedLock`: shared acquisitions on different
//! cores do not write one cache line). Cached point reads and scans, plain changes of guarded
//! leaves (under the leaf's stripe latch, see `buffer.rs`), commit records and transaction ends
//! take it shared and run side by side (`shared_ops.rs`); anything else (a split, a checkpoint,
//! recovery) takes it exclusive and runs alone, and a shared attempt that meets one of those
//! gives up and runs again exclusive. A shared attempt that misses a page has the page read with
//! the latch released (it takes it exclusive only to reserve a frame, see
//! [`Shared::shared_op`]) and tries again. The log has its own latch (`Shared::wal`), always
//! taken after the core latch, never before; the write path's mutex comes after both. docs/engine.md
//! ("Latching") has the whole protocol and the lock order.

mod background;
mod latch;
mod load;
mod rollback_shared;
mod scan;
mod shared_flushless;
mod shared_ops;
mod split_beside;
pub(crate) use latch::{Shared, POINT_READS};
pub(crate) use shared_ops::LeafHint;

use crate::btree::{self, tree as bt};
use crate::cache::{Detached, PageCache};
use crate::catalog::{Catalog, Tree};
use crate::cc::Access;
use crate::checkpoint::Checkpointer;
use crate::config::DbConfig;
use crate::device::BlockDevice;
use crate::error::{Error, Result};
use crate::flushless::HEADER_RESERVE;
use crate::health::Health;
use crate::meta::{self, META_PID};
use crate::page::Lsn;
use crate::recovery::RecoveryReport;
use crate::sync::Striped;
use crate::txn_table::{txn_reserve, TxnAge, TxnTable};
use crate::wal::record::{Body, TxnId, Undo};
use crate::wal::Wal;
use crossbeam_utils::sync::{ShardedLockReadGuard, ShardedLockWriteGuard};

/// Key-value pairs a scan returns.
pub(crate) type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// The core latch held exclusive.
pub(crate) type CoreGuard<'a> = ShardedLockWriteGuard<'a, Core>;
/// The core latch held shared.
pub(crate) type CoreRead<'a> = ShardedLockReadGuard<'a, Core>;

/// Counters of user operations and transaction outcomes, added to by threads that share the
/// core latch (striped: no cache line every operation writes).
#[derive(Default)]
pub(crate) struct OpStats {
    pub commits: Striped,
    pub aborts: Striped,
    pub ops: Striped,
    /// Reads, scans and writes that ran with the core latch shared.
    pub shared: Striped,
    /// Attempts with the core latch shared that gave up: the operation read a missing page with
    /// the latch released and tried again, or ran exclusive.
    pub shared_retries: Striped,
    /// Scans that gave up at a miss after reading part of their range and resumed there
    /// (`Core::scan_shared_to`).
    pub scans_resumed: Striped,
    /// Leaf splits made with the core latch shared (`split_beside.rs`).
    pub splits_beside: Striped,
    /// Changes undone by rollbacks with the core latch shared (`rollback_shared.rs`).
    pub undone_beside: Striped,
}

/// Devices of the roles beside data and log (`undo`: version store; `temp`: sort and hash
/// spill, lent to query operators through [`crate::Db::temp_device`]), reported per role in the
/// statistics.
pub(crate) struct RoleDevices {
    pub undo: Option<Box<dyn BlockDevice>>,
    pub temp: Option<crate::device::Handle<Box<dyn BlockDevice>>>,
}

/// One open database's components.
pub(crate) struct Core {
    pub cfg: DbConfig,
    pub cache: PageCache,
    pub txns: TxnTable,
    pub catalog: Catalog,
    pub checkpointer: Checkpointer,
    pub stats: OpStats,
    pub recovery: Option<RecoveryReport>,
    pub health: Health,
    pub roles: RoleDevices,
    /// The flushless buffer mode's state (paper 001); None in the ARIES mode.
    pub flushless: Option<crate::flushless::Flushless>,
    /// The version store on the undo device (snapshot isolation), when there is one.
    /// Shared with [`crate::engine::latch::Shared`], which writes undo blocks with no latch held.
    pub versions: Option<std::sync::Arc<crate::mvcc::Versions>>,
    /// Times the core latch was taken exclusive. B+tree nodes split, merge and are freed only
    /// with it exclusive (a change made with it shared touches one leaf), so a leaf's key range
    /// noted at one value still holds while the value is the same (see `LeafHint`).
    pub exclusive_epoch: u64,
    /// The longest value a put accepts (see [`max_value_len`]).
    pub max_value: usize,
}

/// The longest value a configuration accepts: one whose every later change fits in one step.
/// A value longer than a leaf holds goes to an overflow chain, and the change that writes or
/// frees a chain holds all of its pages pinned and logs them, with the value itself as the undo
/// of a delete or an overwrite. The costliest such change, an overwrite of the value by one as
/// long, pins both chains (`2n` frames for `n` chain pages, plus the leaf, the meta page and
/// margin for a split) and needs log space for about five times the chain (the old and new
/// chains' images, the old value for its undo, and the rollback kept for it), beside the
/// system reserve and a transaction's own reserve. So that a put never accepts what its
/// delete, overwrite or rollback then cannot do in the same configuration, the put refuses
/// longer values with `ValueTooLong`. Measured (thirty-second session, 4 KiB pages, a
/// 2,000-row tree): overwrites fail from `(frames - 2) / 2` chain pages, and once the free log
/// space is below about `5.07 * chain bytes + 32..89 KiB`; the bounds below keep a margin
/// (6 frames, a sixth of the log per chain page, six transaction reserves).
pub(crate) fn max_value_len(
    page_size: u32,
    frames: usize,
    log_capacity: u64,
    system_reserve: u64,
) -> usize {
    let ps = page_size as u64;
    let per_page = crate::btree::overflow::capacity(page_size as usize) as u64;
    let by_pool = (frames as u64).saturating_sub(8) / 2;
    let log_room = log_capacity
        .saturating_sub(system_reserve)
        .saturating_sub(6 * txn_reserve(page_size));
    let by_log = log_room / (6 * ps);
    let max = by_pool.min(by_log).saturating_mul(per_page);
    max.min(u32::MAX as u64 / 2) as usize
}

/// The log space an update of `key` to `value` may need: its record and its future
/// compensation record, plus the transaction's one-off reserve.
pub(crate) fn update_log_need(page_size: u32, key: &[u8], value: Option<&[u8]>) -> u64 {
    let ps = page_size as u64;
    let vlen = value.map_or(0, |v| v.len() as u64);
    2 * (key.len() as u64 + vlen + 4 * ps) + txn_reserve(page_size)
}

/// The smallest log space the engine accepts: three times what the smallest update may need,
/// so that beside the system reserve (at most a quarter of the log) an update always fits once a
/// checkpoint has emptied the log.
pub(crate) fn min_log_space(page_size: u32) -> u64 {
    3 * update_log_need(page_size, &[], None)
}

/// What [`Core::maintenance_detach`] leaves to its caller.
pub(crate) struct MaintenanceStep {
    /// A checkpoint batch to write, then to give to [`Core::maintenance_attach`].
    pub batch: Option<Detached>,
    /// The write path's background work is to be run (after the batch).
    pub write_path_work: bool,
}

/// Never-used data pages ordinary allocations leave, besides what live transactions reserved:
/// for structure changes rollbacks and recovery may cause beyond their reservations.
const ROLLBACK_SPARE_PAGES: u64 = 8;

impl Core {
    /// Ordinary allocations leave the pages live transactions' rollbacks may need.
    pub fn sync_page_reserve(&mut self) {
        // And the pages the postings of pending leaf splits may need.
        self.cache.page_reserve =
            self.txns.pages_reserved() + ROLLBACK_SPARE_PAGES + self.cache.splits.posting_pages();
    }

    /// Fails once the handle is poisoned.
    pub fn check(&self) -> Result<()> {
        self.health.check()
    }

    /// Checks a key and value against the engine's limits.
    fn check_sizes(&self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let max_key = self.cfg.page_size as usize / 8;
        if key.len() > max_key {
            return Err(Error::KeyTooLong {
                len: key.len(),
                max: max_key,
            });
        }
        if let Some(v) = value {
            // A value a leaf holds inline needs no chain: always accepted.
            let inline =
                crate::btree::node::max_inline_value(self.cfg.page_size as usize, key.len());
            let max = self.max_value.max(inline);
            if v.len() > max {
                return Err(Error::ValueTooLong { len: v.len(), max });
            }
        }
        Ok(())
    }

    /// The checks of an access without concurrency control: the handle is healthy, `txn` is
    /// active and `tree` exists (a snapshot reader's, or a cursor's that locked already).
    fn checked(&self, txn: TxnId, tree: &Tree) -> Result<()> {
        self.check()?;
        self.txns.active(txn)?;
        self.catalog.check_handle(tree)
    }

    /// Concurrency control before `txn` touches `key` of `tree` (`None`: the whole tree).
    fn access(&self, txn: TxnId, tree: &Tree, key: Option<&[u8]>, access: Access) -> Result<()> {
        self.access_lsns(txn, tree, key, access).map(|_| ())
    }

    /// [`Core::access`], returning the transaction's first and last LSN (0: none yet). The
    /// checks of `checked`, in its order, with one look at the transaction table.
    pub fn access_lsns(
        &self,
        txn: TxnId,
        tree: &Tree,
        key: Option<&[u8]>,
        access: Access,
    ) -> Result<(Lsn, Lsn)> {
        self.check()?;
        self.txns.before_access(txn, tree.id, key, access, || {
            self.catalog.check_handle(tree)
        })
    }

    /// Reads `key` of `tree` for `txn`.
    pub fn get(
        &mut self,
        wal: &mut Wal,
        txn: TxnId,
        tree: &Tree,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        let snapshot = self.is_snapshot(txn);
        if snapshot {
            // A snapshot reader takes no lock: it reads its version.
            self.checked(txn, tree)?;
        } else {
            self.access(txn, tree, Some(key), Access::Read)?;
        }
        self.stats.ops.add(1);
        let r = crate::ops::read(&mut self.cache, wal, |m| bt::get(m, tree.root, key));
        let current = self.health.guard(r)?;
        match (snapshot, self.versions.as_mut()) {
            (true, Some(vs)) => {
                let vs = vs.store();
                let mut tally = crate::mvcc::ReadTally::default();
                let r = vs.visible(txn, tree.id, key, current, &mut tally);
                vs.count(&tally);
                self.health.guard(r)
            }
            _ => Ok(current),
        }
    }

    /// Whether `txn` runs under snapshot isolation.
    pub fn is_snapshot(&self, txn: TxnId) -> bool {
        self.versions
            .as_ref()
            .is_some_and(|vs| vs.snapshot_of(txn).is_some())
    }

    /// Starts a snapshot-isolation transaction (needs the version store: an undo device). Runs
    /// with the core latch shared: its snapshot is the newest commit, and commits that change
    /// what snapshots see run exclusive.
    pub fn begin_snapshot(&self, age: Option<TxnAge>) -> Result<(TxnId, TxnAge)> {
        self.check()?;
        let Some(vs) = self.versions.as_ref() else {
            return Err(Error::InvalidArgument(
                "snapshot isolation needs an undo device (Devices::with_undo) and the ARIES \
                 mode (not flushless)"
                    .into(),
            ));
        };
        let (id, age) = self.txns.begin(age);
        vs.begin_snapshot(id);
        Ok((id, age))
    }

    /// With a version store: refuses a snapshot writer's lost update, and keeps the version
    /// `txn` is about to replace.
    fn keep_version(&mut self, wal: &mut Wal, txn: TxnId, tree: &Tree, key: &[u8]) -> Result<()> {
        if self.versions.is_none() {
            return Ok(());
        }
        self.versions
            .as_ref()
            .expect("checked above")
            .store()
            .check_write(txn, tree.id, key)?;
        let r = crate::ops::read(&mut self.cache, wal, |m| bt::get(m, tree.root, key));
        let old = self.health.guard(r)?;
        let vs = self.versions.as_ref().expect("checked above").store();
        let r = vs.before_write(txn, tree.id, key, old.as_deref());
        match r {
            Err(Error::Device(_)) => self.health.guard(r),
            r => r,
        }
    }

    /// Puts (or, with `value` None, deletes) `key` of `tree` for `txn`; returns the old value.
    pub fn write(
        &mut self,
        wal: &mut Wal,
        txn: TxnId,
        tree: &Tree,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        self.check()?;
        self.txns.state(txn)?;
        self.check_sizes(key, value)?;
        // Ends with the latch shared released reservations without touching the cache.
        self.sync_page_reserve();
        self.access(txn, tree, Some(key), Access::Write)?;
        self.range_check_exclusive(txn, tree, key, value)?;
        if self.flushless.is_some() {
            return self.write_flushless(wal, txn, tree, key, value);
        }
        self.keep_version(wal, txn, tree, key)?;
        let mut need = update_log_need(self.cfg.page_size, key, value);
        let prev = self.txns.state(txn)?.last_lsn;
        let tree_id = tree.id;
        // The record must leave room for every rollback, its own included.
        let own_first = if self.txns.state(txn)?.first_lsn == 0 {
            txn_reserve(self.cfg.page_size)
        } else {
            0
        };
        let (mut counted, mut retried) = (false, false);
        let (old, lsn) = loop {
            let r = self
                .checkpointer
                .ensure_log_space(&mut self.cache, wal, &self.txns, need, txn);
            self.health.guard(r)?;
            // Counted once it may proceed: a write refused for log space may be retried.
            if !counted {
                self.stats.ops.add(1);
                counted = true;
            }
            let mut changed = std::mem::take(self.txns.pages_mut(txn).expect("active"));
            wal.set_update_keep(Some(crate::wal::UpdateKeep {
                reserved: self.txns.log_reserved() + own_first,
                undo_extra: crate::txn_table::UNDO_EXTRA_BYTES,
            }));
            let r = crate::ops::apply(
                &mut self.cache,
                wal,
                (txn, prev),
                &mut changed,
                tree,
                (key, value),
                crate::ops::Direction::Forward,
                |old, redo| Body::Update {
                    redo,
                    undo: Undo {
                        tree: tree_id,
                        key: key.to_vec(),
                        old: old.clone(),
                    },
                },
            );
            wal.set_update_keep(None);
            *self.txns.pages_mut(txn).expect("active") = changed;
            // An update larger than the estimate (it replaced a long value, which its undo
            // logs) was refused before anything was logged, its pages put back: retried once
            // after making room for what it turned out to need (the refusal says so if even
            // that cannot be had).
            let refused = wal.take_refused_update();
            match r {
                Err(Error::LogFull(_)) if !retried && refused + own_first > need => {
                    need = refused + own_first;
                    retried = true;
                }
                r => break self.health.guard(r)?,
            }
        };
        if lsn != 0 {
            // Measured with whole page images: the compensation's may have smaller holes.
            let record_bytes = wal.last_whole_len();
            let undo = Undo {
                tree: tree_id,
                key: key.to_vec(),
                old: old.clone(),
            };
            let grows = old
                .as_ref()
                .is_some_and(|o| value.is_none_or(|v| v.len() < o.len()));
            self.txns.updated(txn, lsn, record_bytes, grows, undo);
            self.sync_page_reserve();
        }
        Ok(old)
    }

    /// [`Core::write`] in the flushless mode: the change goes to the online log table (live until
    /// the commit copies it to the log); no undo is kept.
    fn write_flushless(
        &mut self,
        wal: &mut Wal,
        txn: TxnId,
        tree: &Tree,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        let fl = self.flushless.as_mut().expect("flushless mode");
        let mut need_log = update_log_need(self.cfg.page_size, key, value);
        // A leaf change, or a leaf split (two leaves and their parent); a larger change that
        // finds the table short is retried once after a checkpoint that compacts everything.
        let mut need_table = shared_flushless::table_need(self.cfg.page_size as u64, key, value);
        let (mut retried, mut retried_log) = (false, false);
        let page_size = self.cfg.page_size as u64;
        loop {
            let r = fl.ensure_space(&mut self.cache, wal, &self.txns, need_log, need_table);
            self.health.guard(r)?;
            let mut changed = std::mem::take(self.txns.pages_mut(txn).expect("active"));
            let room = wal.free_bytes().saturating_sub(self.txns.log_reserved());
            let mut sink = fl.op_sink(wal, txn, page_size, room);
            let r = crate::ops::apply(
                &mut self.cache,
                &mut sink,
                (txn, 0),
                &mut changed,
                tree,
                (key, value),
                crate::ops::Direction::Forward,
                |_, redo| Body::Redo { redo },
            );
            let (allocated, freed, log_need, refused, refused_log) = (
                std::mem::take(&mut sink.allocated),
                std::mem::take(&mut sink.freed),
                sink.log_need,
                sink.refused_bytes,
                sink.refused_log,
            );
            drop(sink);
            *self.txns.pages_mut(txn).expect("active") = changed;
            match r {
                Ok((old, lsn)) => {
                    self.stats.ops.add(1);
                    fl.after_op(txn, allocated, freed);
                    if lsn != 0 {
                        // What its commit or abort will log (see `TableSink::log_need`); the
                        // first change also reserves the commit record.
                        self.txns.reserve_log(txn, log_need, 2 * HEADER_RESERVE);
                    }
                    return Ok(old);
                }
                Err(Error::TableFull(_)) if !retried && refused > need_table => {
                    retried = true;
                    need_table = refused;
                }
                // Retried once after a checkpoint that makes room for that much.
                Err(Error::LogFull(_)) if !retried_log && refused_log > need_log => {
                    retried_log = true;
                    need_log = refused_log;
                }
                Err(e) => {
                    fl.note_error(&e);
                    return self.health.guard(Err(e));
                }
            }
        }
    }

    /// Opens a cursor of `txn` on `tree` over `range`: the checks, counted as one operation,
    /// and the key-range claim its batches grow (see `ranges.rs`; `None` for a snapshot
    /// reader, who claims nothing).
    pub fn open_cursor(
        &mut self,
        txn: TxnId,
        tree: &Tree,
        range: crate::cc::KeyRange<'_>,
        reverse: bool,
    ) -> Result<Option<crate::cc::ScanGuard>> {
        let guard = if self.is_snapshot(txn) {
            self.checked(txn, tree)?;
            None
        } else {
            let mut own = None;
            self.scan_guard(txn, tree, (range, reverse), None, &mut own)?;
            own
        };
        self.stats.ops.add(1);
        Ok(guard)
    }

    /// `txn`'s scan of `tree` was refused by writers: whether it may wait for them to end (new
    /// writers of the tree are turned away meanwhile).
    pub fn wait_for_scan(&mut self, txn: TxnId, tree: &Tree) -> bool {
        self.txns.wait_for_scan(txn, tree.id)
    }

    /// `txn` stopped waiting for a scan (it got the tree, or gave up).
    pub fn stop_waiting(&self, txn: TxnId) {
        self.txns.stop_waiting(txn);
    }

    /// Whether a `LogFull` of `txn` is worth waiting out: the transaction holding the log's
    /// start is another one, last used by another thread, so its end (which frees the log) can
    /// come while this thread waits.
    pub fn log_pinned_by_another_thread(&self, txn: TxnId) -> bool {
        match self.txns.pinning() {
            Some((id, thread)) => id != txn && thread != Some(crate::sync::thread_id()),
            None => false,
        }
    }

    /// Starts a transaction, of age `age` (a retry's) or, if None, now.
    pub fn begin(&self, age: Option<TxnAge>) -> Result<(TxnId, TxnAge)> {
        self.check()?;
        Ok(self.txns.begin(age))
    }

    /// Appends `txn`'s commit record (0 if it wrote nothing). The transaction stays in the
    /// table, holding its locks, until [`Core::end_commit`].
    pub fn commit_record(&mut self, wal: &mut Wal, txn: TxnId) -> Result<Lsn> {
        self.check()?;
        if let Some(fl) = self.flushless.as_mut() {
            self.txns.state(txn)?;
            let mut changed = std::mem::take(self.txns.pages_mut(txn).expect("active"));
            let r = fl.commit(&mut self.cache, wal, txn, &mut changed);
            *self.txns.pages_mut(txn).expect("active") = changed;
            if let Err(e) = &r {
                self.health.poison(e);
            }
            let lsn = r?;
            if lsn != 0 {
                self.txns.committing(txn);
            }
            return Ok(lsn);
        }
        let prev = self.txns.state(txn)?.last_lsn;
        if prev == 0 {
            return Ok(0);
        }
        let r = wal.append(txn, prev, Body::Commit);
        let lsn = self.health.guard(r)?;
        self.txns.committing(txn);
        Ok(lsn)
    }

    /// Ends a committed transaction: releases its reservation, its pages' uncommitted marks and
    /// its locks.
    pub fn end_commit(&mut self, txn: TxnId) -> Result<()> {
        if let Some(vs) = self.versions.as_mut() {
            // Its versions become visible to snapshots that begin from now on.
            let r = vs.store().commit(txn);
            self.health.guard(r)?;
        }
        let st = self.txns.remove(txn)?;
        self.txns.end(txn, &st);
        self.sync_page_reserve();
        self.cache.pool.txn_ended(txn, &st.pages);
        self.stats.commits.add(1);
        Ok(())
    }

    /// Rolls `txn` back and ends it. After a poison nothing more is written: recovery will roll
    /// it back.
    pub fn rollback(&mut self, wal: &mut Wal, txn: TxnId) -> Result<()> {
        if let Some(fl) = self.flushless.as_mut() {
            // Abort without undo: discard, nothing logged but pages given back.
            let st = self.txns.remove(txn)?;
            let poisoned = self.health.is_poisoned();
            let r = fl.abort(&mut self.cache, wal, txn, poisoned);
            self.txns.end(txn, &st);
            self.sync_page_reserve();
            self.cache.pool.txn_ended(txn, &st.pages);
            self.stats.aborts.add(1);
            if let Err(e) = &r {
                self.health.poison(e);
            }
            return r;
        }
        let st = self.txns.remove(txn)?;
        let undo = self.txns.take_undo(txn);
        let mut changed = st.pages.clone();
        let r = if self.health.is_poisoned() {
            Ok(())
        } else {
            // The rollback may use the log's system reserve and the pages kept for rollbacks.
            let was = wal.swap_unreserved(true);
            self.cache.page_reserve = 0;
            let r = crate::undo::rollback(
                &mut self.cache,
                wal,
                &self.catalog,
                &mut changed,
                (txn, st.last_lsn),
                &undo,
            );
            wal.swap_unreserved(was);
            r
        };
        if let Some(vs) = self.versions.as_mut() {
            vs.store().abort(txn);
        }
        self.txns.end(txn, &st);
        self.sync_page_reserve();
        self.cache.pool.txn_ended(txn, &changed);
        self.stats.aborts.add(1);
        if let Err(e) = &r {
            self.health.poison(e);
        }
        r
    }

    /// Creates a tree, committed once the log is durable past the returned LSN (the caller
    /// forces it with the latches let go: `Db::create_tree`).
    pub fn create_tree(&mut self, wal: &mut Wal, name: &str) -> Result<(Tree, Lsn)> {
        self.check()?;
        self.sync_page_reserve();
        if self.catalog.contains(name) {
            return Err(Error::TreeExists(name.into()));
        }
        if name.is_empty() || name.len() > meta::MAX_TREE_NAME {
            return Err(Error::InvalidArgument(format!(
                "tree name must be 1..={} bytes",
                meta::MAX_TREE_NAME
            )));
        }
        let need = 8 * self.cfg.page_size as u64;
        let r = match self.flushless.as_mut() {
            Some(fl) => fl.ensure_space(&mut self.cache, wal, &self.txns, need, 0),
            None => self
                .checkpointer
                .ensure_log_space(&mut self.cache, wal, &self.txns, need, 0),
        };
        self.health.guard(r)?;
        let op = |m: &mut crate::mtr::Mtr<'_>| {
            let root = bt::create(m)?;
            let id = btree::PageStore::write_page(m, META_PID, |p| meta::add_tree(p, name, root))??;
            Ok(((id, root), None))
        };
        let body = |_: &_, redo| Body::System { redo };
        let r = match self.flushless.as_ref() {
            Some(fl) => crate::ops::run_op(
                &mut self.cache,
                &mut fl.sink(wal),
                (0, 0),
                &mut Vec::new(),
                op,
                body,
            ),
            None => crate::ops::run_op(&mut self.cache, wal, (0, 0), &mut Vec::new(), op, body),
        };
        let ((id, root), lsn) = self.health.guard(r)?;
        Ok((self.catalog.add(id, root, name), lsn))
    }

    /// A whole checkpoint now (the policy decides which pages it writes); an error poisons.
    pub fn checkpoint(&mut self, wal: &mut Wal) -> Result<()> {
        self.check()?;
        let r = match self.flushless.as_mut() {
            // Writes every committed change: what a caller of `Db::checkpoint` expects.
            Some(fl) => crate::flushless::checkpoint::run(
                fl,
                &mut self.cache,
                wal,
                self.txns.next_txn(),
                crate::flushless::checkpoint::Compact::All,
            ),
            None => self
                .checkpointer
                .checkpoint(&mut self.cache, wal, &self.txns, false),
        };
        if let Err(e) = &r {
            self.health.poison(e);
        }
        r
    }

    /// Background work, one step (`Db::maintenance`), up to its checkpoint batch's writes,
    /// which the caller makes with the core latch released ([`Detached::write`]): the batch,
    /// if any (none in the flushless mode, whose checkpoints run whole), and whether the
    /// write path's background work (`WritePath::maintain`) is left for the caller to run,
    /// also without the core latch, after the batch.
    pub fn maintenance_detach(&mut self, wal: &mut Wal) -> Result<MaintenanceStep> {
        self.check()?;
        let r = match self.flushless.as_mut() {
            Some(fl) => {
                fl.maintenance(&mut self.cache, wal, &self.txns)
                    .map(|()| MaintenanceStep {
                        batch: None,
                        write_path_work: false,
                    })
            }
            None => self
                .checkpointer
                .maintenance_detach(&mut self.cache, wal, &self.txns)
                .map(|batch| MaintenanceStep {
                    batch,
                    write_path_work: true,
                }),
        };
        self.health.guard(r)
    }

    /// The rest of the step once the batch of [`Core::maintenance_detach`] was
    /// written (`written`: how that went).
    pub fn maintenance_attach(&mut self, d: Detached, written: Result<()>) -> Result<()> {
        let r = self
            .checkpointer
            .maintenance_attach(&mut self.cache, &d, written);
        // Its pages leave the in-flight set as they are attached (see `cleaner_attach`).
        drop(d);
        self.health.guard(r)
    }

    /// The page cleaner's batch, after the checkpoint's (see
    /// [`Checkpointer::cleaner_detach`]); none in the flushless mode, which has no cleaner.
    pub fn cleaner_detach(&mut self) -> Option<Detached> {
        if self.flushless.is_some() || self.check().is_err() {
            return None;
        }
        self.checkpointer.cleaner_detach(&mut self.cache)
    }

    /// The rest of the cleaner's step once its batch was written (`written`: how that went).
    /// Consumed, its pages leave the in-flight set here: a page in it, attached clean and
    /// evicted, is missed under the write path's mutex (docs/engine.md, "Checkpoints").
    pub fn cleaner_attach(&mut self, d: Detached, written: Result<()>) -> Result<()> {
        let r = self
            .checkpointer
            .cleaner_attach(&mut self.cache, &d, written);
        drop(d);
        self.health.guard(r)
    }

    /// Verifies every tree; keys per tree, sorted by name.
    pub fn verify(&mut self, wal: &mut Wal) -> Result<Vec<(String, u64)>> {
        self.check()?;
        // Splits made beside other threads are posted first: the checker walks parents.
        let r = crate::splits::settle(&mut self.cache, wal);
        self.health.guard(r)?;
        let mut out = Vec::new();
        for t in self.catalog.all() {
            let r = crate::ops::read(&mut self.cache, wal, |m| bt::check(m, t.root));
            out.push((t.name().to_string(), r?.keys));
        }
        out.sort();
        if cfg!(debug_assertions) {
            self.cache.pool.check_invariants();
            if let Some(fl) = &self.flushless {
                fl.check_invariants(&self.cache);
            }
        }
        Ok(out)
    }

    /// Page accounting of every tree and the free list (see `btree::accounting`).
    pub fn check_pages(&mut self, wal: &mut Wal) -> Result<Vec<String>> {
        self.check()?;
        let r = crate::splits::settle(&mut self.cache, wal);
        self.health.guard(r)?;
        crate::ops::read(&mut self.cache, wal, |m| crate::btree::accounting::check(m))
    }

    /// The checkpoint that ends `Db::open`: in the flushless mode it only logs the record (the
    /// restart writes no page; on-the-fly redo and later checkpoints do the work).
    pub fn open_checkpoint(&mut self, wal: &mut Wal) -> Result<()> {
        self.check()?;
        match self.flushless.as_mut() {
            Some(fl) => {
                let r = crate::flushless::checkpoint::run(
                    fl,
                    &mut self.cache,
                    wal,
                    self.txns.next_txn(),
                    crate::flushless::checkpoint::Compact::RecordOnly,
                );
                if let Err(e) = &r {
                    self.health.poison(e);
                }
                r
            }
            None => self.checkpoint(wal),
        }
    }

    /// Pages ever allocated and the data device's page capacity.
    pub fn page_usage(&mut self, wal: &mut Wal) -> Result<(u64, u64)> {
        self.check()?;
        let cap = self.cache.page_capacity;
        let used = crate::ops::read(&mut self.cache, wal, |m| {
            btree::PageStore::read_page(m, META_PID, meta::next_pid)
        })?;
        Ok((used, cap))
    }
}
