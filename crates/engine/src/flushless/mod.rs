//! The flushless buffer mode (paper 001, Jeong et al.): flushing-less eviction with on-the-fly
//! redo, no-steal, a redo-only log, abort by discarding, and checkpoints that compact the online
//! log table.
//!
//! * [`table`]: the online log table (page -> redo records, live transactions' records).
//! * [`sink`]: where a mini-transaction's record goes (the table, not the log), one live
//!   transaction per page.
//! * [`DropDirty`] and [`OnTheFly`]: the page cache's eviction policy (a dirty victim is dropped
//!   without a write; the page table says `EvictedDirty`) and after-read hook (a page evicted
//!   dirty is brought up to date from its records when read again).
//! * [`checkpoint`]: Figure 4, log compaction (`min_del`, `max_age`) and the checkpoint record.
//! * [`restart`]: Figure 5, reloading the committed records into the table; no page is written,
//!   there is no undo phase.
//!
//! The engine (`engine/`) calls [`Flushless`] at the points where the modes differ: before an
//! operation (table and log space), after it (pages allocated and frees deferred), at commit
//! (copy the records to the log), at abort (discard), and for checkpoints and maintenance.

pub(crate) mod checkpoint;
pub(crate) mod restart;
pub(crate) mod shared;
pub(crate) mod sink;
pub(crate) mod table;

use crate::cache::{AfterRead, DirtyVictim, EvictionPolicy, PageCache};
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::page::{self, Lsn, PageId};
use crate::txn_table::TxnTable;
use crate::wal::record::{Body, TxnId};
use crate::wal::Wal;
use serde::{Deserialize, Serialize};
use sink::{Phase, TableSink};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use table::LogTable;

pub use table::TableStats;

/// Pages one give-back operation frees (it pins each, and the meta page): well under the 16
/// frames the mode needs at least.
pub(crate) const GIVE_BACK_BATCH: usize = 8;

/// Log bytes a transaction reserves per record for the record's header (and, once, for its
/// commit record).
pub(crate) const HEADER_RESERVE: u64 = 64;

/// Log bytes the commit of a transaction needs for one page it freed (the free waits for the
/// commit): a record with the images of the page and of the meta page.
pub(crate) fn free_log_bytes(page_size: u64) -> u64 {
    2 * (page_size + 16) + HEADER_RESERVE
}

/// Log bytes an abort (or a restart) needs to give back `pages` pages a transaction allocated:
/// their images and free-list entries, the meta page's image once a batch, and the `Abort`.
pub(crate) fn give_back_log_bytes(page_size: u64, pages: u64) -> u64 {
    if pages == 0 {
        return 0;
    }
    pages * (page_size + 32)
        + pages.div_ceil(GIVE_BACK_BATCH as u64) * (page_size + HEADER_RESERVE)
        + HEADER_RESERVE
}

/// Settings of the flushless mode (`DbConfig::flushless`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlushlessConfig {
    /// The online log table's share of the buffer memory (`buffer_pages` x page size); the
    /// frames get the rest. Paper 001 found about 0.3 best at 40 and 60 MB (section 5.1).
    pub table_fraction: f64,
    /// A checkpoint (log compaction) starts when the table's free space falls to this fraction
    /// of its budget (paper: 5-10%).
    pub checkpoint_free: f64,
    /// A checkpoint writes a page once it has this many committed records (paper: 16) ...
    pub min_del: u32,
    /// ... or its oldest committed record is older than this (on the database clock).
    pub max_age_ms: u64,
}

impl Default for FlushlessConfig {
    fn default() -> Self {
        FlushlessConfig {
            table_fraction: 0.3,
            checkpoint_free: 0.10,
            min_del: 16,
            max_age_ms: 10_000,
        }
    }
}

impl FlushlessConfig {
    pub fn validate(&self) -> Result<()> {
        if !(0.05..=0.9).contains(&self.table_fraction) {
            return Err(Error::Config(format!(
                "flushless.table_fraction {} must be in [0.05, 0.9]",
                self.table_fraction
            )));
        }
        if !(0.01..=0.5).contains(&self.checkpoint_free) {
            return Err(Error::Config(format!(
                "flushless.checkpoint_free {} must be in [0.01, 0.5]",
                self.checkpoint_free
            )));
        }
        if self.min_del == 0 {
            return Err(Error::Config("flushless.min_del must be >= 1".into()));
        }
        Ok(())
    }
}

/// Counters of the flushless mode (`DbStats::flushless`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlushlessStats {
    pub table: TableStats,
    /// Dirty pages evicted without a write.
    pub flushless_evictions: u64,
    /// Checkpoint records, and log compactions and what they wrote: pages written from their
    /// frame (all their records committed), pages written as their stored image plus the
    /// committed records (a live transaction has records on them too, or they were evicted),
    /// records deleted.
    pub checkpoints: u64,
    pub compactions: u64,
    pub compacted_frames: u64,
    pub compacted_rebuilt: u64,
    pub compacted_records: u64,
    /// Pages compaction read and found already holding their committed records (not written).
    #[serde(default)]
    pub compacted_unchanged: u64,
    /// Transactions whose commit copied records to the log, and those records.
    pub commits_logged: u64,
    pub records_logged: u64,
    /// Aborts, the frames they discarded, and the pages they gave back to the free list.
    pub aborts: u64,
    pub frames_discarded: u64,
    pub pages_given_back: u64,
    /// Changes refused because the page held another live transaction's changes.
    pub page_conflicts: u64,
}

/// The error for a database opened in the other mode than the one it was created in.
pub(crate) fn wrong_mode(flushless_db: bool) -> Error {
    if flushless_db {
        Error::Config(
            "the database was created in the flushless mode (its last checkpoint is a log-table \
             checkpoint): open it with DbConfig::flushless set"
                .into(),
        )
    } else {
        Error::Config(
            "the database was created in the ARIES mode (flushless = None): it cannot be opened \
             in the flushless mode"
                .into(),
        )
    }
}

fn lock(t: &Mutex<LogTable>) -> std::sync::MutexGuard<'_, LogTable> {
    t.lock().unwrap_or_else(|p| p.into_inner())
}

/// Eviction of the flushless mode: any unpinned frame may go, a dirty one without a write.
pub(crate) struct DropDirty;

impl EvictionPolicy for DropDirty {
    fn steal(&self) -> bool {
        // Nothing is written, so evicting a page with uncommitted changes writes nothing
        // uncommitted: its changes stay in the table (no-steal holds for the device).
        true
    }
    fn dirty_victim(&mut self, _pid: PageId) -> DirtyVictim {
        DirtyVictim::Drop
    }
}

/// On-the-fly redo: a page read while `EvictedDirty` gets its records applied.
pub(crate) struct OnTheFly {
    table: Arc<Mutex<LogTable>>,
}

impl AfterRead for OnTheFly {
    fn after_read(&mut self, pid: PageId, data: &mut [u8], evicted_dirty: bool) -> Result<bool> {
        if !evicted_dirty {
            return Ok(false);
        }
        let mut t = lock(&self.table);
        // Records the stored image already holds (a restart reloads some) leave the table.
        let left = t.drop_applied(pid, page::page_lsn(data));
        let n = t.redo_page(pid, data, true)?;
        t.stats.otf_redos += 1;
        t.stats.otf_records_applied += n;
        Ok(left)
    }

    fn evicted_dirty_only(&self) -> bool {
        // A page with no page-table entry has no records in the table (the mode's invariant,
        // `Flushless::check_invariants`): nothing to apply.
        true
    }
}

/// The flushless mode's state beside the engine's components.
pub(crate) struct Flushless {
    pub cfg: FlushlessConfig,
    pub table: Arc<Mutex<LogTable>>,
    /// Pages live transactions allocated (given back if they abort) and freed (freed at their
    /// commit).
    allocs: HashMap<TxnId, Vec<PageId>>,
    frees: HashMap<TxnId, Vec<PageId>>,
    clock: Arc<dyn Clock>,
    pub stats: FlushlessStats,
    /// End of the log when the last checkpoint began.
    last_begin_lsn: Lsn,
    batch_pages: usize,
    log_fill: f64,
}

impl Flushless {
    pub fn new(
        cfg: FlushlessConfig,
        table_bytes: u64,
        clock: Arc<dyn Clock>,
        db: &crate::config::DbConfig,
    ) -> Flushless {
        Flushless {
            cfg,
            table: Arc::new(Mutex::new(LogTable::new(table_bytes))),
            allocs: HashMap::new(),
            frees: HashMap::new(),
            clock,
            stats: FlushlessStats::default(),
            last_begin_lsn: 0,
            batch_pages: db.checkpoint_batch_pages,
            log_fill: db.checkpoint_log_fill,
        }
    }

    /// Puts the mode's eviction policy and after-read hook into the page cache.
    pub fn install(&self, cache: &mut PageCache) {
        cache.set_eviction(Box::new(DropDirty));
        cache.set_after_read(Some(Box::new(OnTheFly {
            table: self.table.clone(),
        })));
    }

    /// A sink for one operation of a transaction (or a system operation, `txn` 0).
    pub fn sink<'a>(&'a self, wal: &'a mut Wal) -> TableSink<'a> {
        TableSink::new(wal, &self.table, Phase::Op, self.clock.now_ns())
    }

    /// A sink for one operation of transaction `txn` whose commit and abort may together need
    /// at most `room` more log bytes than the transactions reserved (see
    /// [`TableSink::log_need`]).
    pub fn op_sink<'a>(
        &'a self,
        wal: &'a mut Wal,
        txn: TxnId,
        page_size: u64,
        room: u64,
    ) -> TableSink<'a> {
        let mut s = self.sink(wal);
        s.log_budget = Some(sink::LogBudget {
            room,
            page_size,
            prior_allocs: self.allocs.get(&txn).map_or(0, |a| a.len() as u64),
        });
        s
    }

    /// Whether `txn` changed nothing this mode keeps for it: no live record in the log
    /// table, no page allocated or freed. Read with the core latch shared (these maps change
    /// only with it exclusive; the table has its own mutex).
    pub fn untouched(&self, txn: TxnId) -> bool {
        !self.allocs.contains_key(&txn)
            && !self.frees.contains_key(&txn)
            && !lock(&self.table).has_live(txn)
    }

    /// An operation of `txn` through `sink` succeeded: keep its allocations and deferred frees.
    pub fn after_op(&mut self, txn: TxnId, allocated: Vec<PageId>, freed: Vec<PageId>) {
        if txn == 0 {
            return;
        }
        if !allocated.is_empty() {
            self.allocs.entry(txn).or_default().extend(allocated);
        }
        if !freed.is_empty() {
            self.frees.entry(txn).or_default().extend(freed);
        }
    }

    /// Counts a change refused for another transaction's page.
    pub fn note_error(&mut self, e: &Error) {
        if let Error::Conflict { what } = e {
            if what.starts_with("page ") {
                self.stats.page_conflicts += 1;
            }
        }
    }

    /// Before an operation that may add `need_table` bytes to the table and log about
    /// `need_log` bytes at its commit: checkpoints when the table's free space fell to the
    /// threshold or the log runs short, and fails with `TableFull` / `LogFull` when even a
    /// checkpoint that compacts every committed record leaves too little.
    pub fn ensure_space(
        &mut self,
        cache: &mut PageCache,
        wal: &mut Wal,
        txns: &TxnTable,
        need_log: u64,
        need_table: u64,
    ) -> Result<()> {
        let page_size = cache.pool.page_size() as u64;
        let (log_short, want) = shared::log_short(wal, txns, page_size, need_log);
        let next_txn = txns.next_txn();
        if log_short {
            checkpoint::run(self, cache, wal, next_txn, checkpoint::Compact::All)?;
        } else if self.log_due(wal) {
            checkpoint::run(self, cache, wal, next_txn, checkpoint::Compact::Normal)?;
        }
        if self.table_low(need_table) {
            self.compact(cache, wal, txns, checkpoint::Compact::Normal)?;
            if self.table_low(need_table) {
                // min_del and max_age freed too little: the fullest pages, until the free space
                // is twice the threshold (plus what this change needs).
                let target = self.free_target(need_table);
                self.compact(cache, wal, txns, checkpoint::Compact::Free(target))?;
            }
            if self.table_low(need_table) {
                self.compact(cache, wal, txns, checkpoint::Compact::All)?;
            }
        }
        if wal.free_bytes() <= want {
            return Err(Error::LogFull(format!(
                "{} of {} log bytes are in use or reserved for the commits of live transactions \
                 ({} reserved); commit or abort them",
                wal.used_bytes(),
                wal.capacity_bytes(),
                txns.log_reserved()
            )));
        }
        lock(&self.table).check_room(need_table)
    }

    /// The table's free space is at the checkpoint threshold, or below what is needed.
    fn table_low(&self, need: u64) -> bool {
        self.table_low_by(1.0, need)
    }

    /// The table's free space is at `factor` x the checkpoint threshold, or below `need`.
    fn table_low_by(&self, factor: f64, need: u64) -> bool {
        let t = lock(&self.table);
        let threshold = (factor * self.cfg.checkpoint_free * t.budget() as f64) as u64;
        t.free_bytes() <= threshold.max(need)
    }

    /// A compaction, then (where the write path's checkpoint is cheap: in place) the checkpoint
    /// record, as in Figure 4, so the dirty page table a restart starts from stays current (out
    /// of place the record waits for the log's cadence: each would write a page-map snapshot).
    fn compact(
        &mut self,
        cache: &mut PageCache,
        wal: &mut Wal,
        txns: &TxnTable,
        how: checkpoint::Compact,
    ) -> Result<()> {
        let before = self.stats.compactions;
        checkpoint::compact(self, cache, wal, how)?;
        if self.stats.compactions > before && crate::sync::lock(&cache.wp).cheap_checkpoint() {
            checkpoint::run(
                self,
                cache,
                wal,
                txns.next_txn(),
                checkpoint::Compact::RecordOnly,
            )?;
        }
        Ok(())
    }

    /// Bytes a compaction should free so the table has three times the threshold (plus
    /// `need`) free.
    fn free_target(&self, need: u64) -> u64 {
        let t = lock(&self.table);
        let want = 3 * (self.cfg.checkpoint_free * t.budget() as f64) as u64 + need;
        want.saturating_sub(t.free_bytes())
    }

    /// The log grew by a checkpoint interval (`checkpoint_log_fill` of the log space) since the
    /// last checkpoint began.
    fn log_due(&self, wal: &Wal) -> bool {
        let cadence = (self.log_fill * wal.capacity_bytes() as f64) as u64;
        wal.next_lsn().saturating_sub(self.last_begin_lsn) >= cadence
    }

    /// One step of background work: a compaction when the table asks for one, a checkpoint
    /// when the log does.
    pub fn maintenance(
        &mut self,
        cache: &mut PageCache,
        wal: &mut Wal,
        txns: &TxnTable,
    ) -> Result<()> {
        if self.log_due(wal) {
            checkpoint::run(
                self,
                cache,
                wal,
                txns.next_txn(),
                checkpoint::Compact::Normal,
            )?;
        } else if self.table_low_by(2.0, 0) {
            // In the background the compaction starts at twice the threshold, so operations
            // rarely have to wait for one.
            self.compact(cache, wal, txns, checkpoint::Compact::Normal)?;
            if self.table_low_by(2.0, 0) {
                let target = self.free_target(0);
                self.compact(cache, wal, txns, checkpoint::Compact::Free(target))?;
            }
        }
        crate::sync::lock(&cache.wp).maintain(wal)?;
        Ok(())
    }

    /// Commit, first half: runs `txn`'s deferred frees, copies its records to the log followed by
    /// its `Commit`, marks them committed and stamps their LSNs on the frames that hold their
    /// pages. Returns the commit record's LSN (0: the transaction changed nothing). The caller
    /// poisons the handle on an error.
    pub fn commit(
        &mut self,
        cache: &mut PageCache,
        wal: &mut Wal,
        txn: TxnId,
        changed: &mut Vec<PageId>,
    ) -> Result<Lsn> {
        for pid in self.frees.remove(&txn).unwrap_or_default() {
            let mut sink = TableSink::new(wal, &self.table, Phase::Commit, self.clock.now_ns());
            crate::ops::run_op(
                cache,
                &mut sink,
                (txn, 0),
                changed,
                |m| {
                    crate::btree::PageStore::free_page(m, pid)?;
                    Ok(((), None))
                },
                |_, redo| Body::Redo { redo },
            )?;
        }
        // Allocations of a committed transaction stay.
        self.allocs.remove(&txn);
        let records = lock(&self.table).live_redo(txn);
        if records.is_empty() {
            return Ok(0);
        }
        // The space was reserved when the records were made (`TxnTable::reserve_log`).
        let (lsns, commit_lsn) = shared::log_records(wal, txn, records)?;
        self.stats.commits_logged += 1;
        self.stats.records_logged += lsns.len() as u64;
        let now = self.clock.now_ns();
        let pages = lock(&self.table).commit(txn, &lsns, now);
        for (pid, lsn) in pages {
            if let Some(f) = cache.pool.lookup(pid) {
                page::set_page_lsn(cache.pool.data_mut(f), lsn);
            }
        }
        Ok(commit_lsn)
    }

    /// Abort without undo: drops `txn`'s records, discards (without writing) the frames of the
    /// pages it changed, and gives the pages it allocated back to the free list (one `Space`
    /// record, then an `Abort` so a restart does not give them back again). Nothing else is
    /// logged. With `poisoned`, only memory is cleaned: a restart gives the pages back.
    pub fn abort(
        &mut self,
        cache: &mut PageCache,
        wal: &mut Wal,
        txn: TxnId,
        poisoned: bool,
    ) -> Result<()> {
        self.frees.remove(&txn);
        let pages = lock(&self.table).discard(txn);
        {
            let t = lock(&self.table);
            for &pid in &pages {
                match cache.pool.state(pid) {
                    Some(crate::buffer::PageState::Resident(f)) => {
                        debug_assert_eq!(cache.pool.frames[f as usize].pins, 0);
                        cache.pool.evict(f, t.has_records(pid));
                        self.stats.frames_discarded += 1;
                    }
                    Some(crate::buffer::PageState::EvictedDirty) if !t.has_records(pid) => {
                        cache.pool.forget(pid)
                    }
                    _ => {}
                }
            }
        }
        self.stats.aborts += 1;
        let allocated = self.allocs.remove(&txn).unwrap_or_default();
        if allocated.is_empty() || poisoned {
            return Ok(());
        }
        self.give_back(cache, wal, txn, allocated)?;
        wal.unreserved(|wal| wal.append(txn, 0, Body::Abort))
            .map(|_| ())
    }

    /// Returns `pages` (allocated for `owner`, which will not commit) to the free list,
    /// [`GIVE_BACK_BATCH`] pages an operation (one `Space` record each): an operation pins every
    /// page it frees, and a transaction may have allocated more pages than the pool has frames.
    pub fn give_back(
        &mut self,
        cache: &mut PageCache,
        wal: &mut Wal,
        owner: TxnId,
        pages: Vec<PageId>,
    ) -> Result<()> {
        wal.unreserved(|wal| {
            for batch in pages.chunks(GIVE_BACK_BATCH) {
                let mut sink = TableSink::give_back(
                    wal,
                    &self.table,
                    owner,
                    batch.to_vec(),
                    self.clock.now_ns(),
                );
                crate::ops::run_op(
                    cache,
                    &mut sink,
                    (0, 0),
                    &mut Vec::new(),
                    |m| {
                        for &pid in batch {
                            crate::btree::PageStore::free_page(m, pid)?;
                        }
                        Ok(((), None))
                    },
                    |_, redo| Body::System { redo },
                )?;
                self.stats.pages_given_back += batch.len() as u64;
            }
            Ok(())
        })
    }

    /// Pages each live transaction allocated (for the checkpoint record).
    pub fn allocations(&self) -> Vec<(TxnId, Vec<PageId>)> {
        let mut v: Vec<(TxnId, Vec<PageId>)> = self
            .allocs
            .iter()
            .filter(|(_, p)| !p.is_empty())
            .map(|(&t, p)| (t, p.clone()))
            .collect();
        v.sort_unstable();
        v
    }

    /// The counters, with the table's current counts and the pool's flushing-less evictions.
    pub fn snapshot(&self, cache: &PageCache) -> FlushlessStats {
        let t = lock(&self.table);
        let s = &self.stats;
        FlushlessStats {
            table: t.snapshot(),
            flushless_evictions: cache.pool.stats.dirty_evictions,
            commits_logged: s.commits_logged + t.shared.commits_logged,
            records_logged: s.records_logged + t.shared.records_logged,
            page_conflicts: s.page_conflicts + t.shared.page_conflicts,
            aborts: s.aborts + t.shared.aborts,
            ..s.clone()
        }
    }

    /// Checks the mode's invariants (tests and debug builds): a page has records in the table
    /// exactly when it is resident and dirty or evicted dirty.
    pub fn check_invariants(&self, cache: &PageCache) {
        let t = lock(&self.table);
        for pid in t.pages() {
            match cache.pool.state(pid) {
                Some(crate::buffer::PageState::Resident(f)) => assert!(
                    cache.pool.frames[f as usize].dirty,
                    "page {pid} has records in the log table but its frame is clean"
                ),
                Some(crate::buffer::PageState::EvictedDirty) => {}
                None => panic!("page {pid} has records in the log table but no page table entry"),
            }
        }
        for pid in cache.pool.evicted_dirty() {
            assert!(
                t.has_records(pid),
                "page {pid} is evicted dirty without records in the log table"
            );
        }
    }
}
