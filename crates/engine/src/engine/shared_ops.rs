//! The operations that run with the core latch shared (see the latching notes in `mod.rs` and
//! docs/engine.md): cached point reads and scans, plain leaf changes, and the commit and end of
//! a transaction in the modes that allow it. Each returns `None` when it must run exclusive
//! instead, having changed nothing.

use super::scan::{ClaimedPairs, ScanParts};
use super::{update_log_need, Core};
use crate::btree::tree as bt;
use crate::catalog::Tree;
use crate::cc::{Access, KeyRange, ScanGuard};
use crate::error::Result;
use crate::page::Lsn;
use crate::ranges::Change;
use crate::read_shared::{SharedReader, SharedWriter};
use crate::scan_buf::PairOut;
use crate::txn_table::txn_reserve;
use crate::wal::record::{Body, TxnId, Undo};
use crate::wal::SharedWal;
use bt::plain::Plan;
use std::ops::Bound;

impl Core {
    /// [`Core::get`] with the core latch shared: `None` if a page it needs is not cached; then
    /// the caller runs `get` with the latch exclusive. A snapshot reader takes no lock and
    /// resolves the version it sees in the version store (see [`crate::mvcc::Versions`]).
    pub fn get_shared(
        &self,
        txn: TxnId,
        tree: &Tree,
        key: &[u8],
    ) -> Option<Result<Option<Vec<u8>>>> {
        let snapshot = self.is_snapshot(txn);
        let pre = if snapshot {
            self.checked(txn, tree)
        } else {
            self.access(txn, tree, Some(key), Access::Read)
        };
        if let Err(e) = pre {
            return Some(Err(e));
        }
        let Some(r) = SharedReader::run(&self.cache, |m| bt::get(m, tree.root, key)) else {
            self.stats.shared_retries.add(1);
            return None;
        };
        self.stats.ops.add(1);
        self.stats.shared.add(1);
        if !snapshot {
            return Some(r);
        }
        Some(r.and_then(|current| {
            let vs = self
                .versions
                .as_ref()
                .expect("a snapshot transaction has a store");
            let mut tally = crate::mvcc::ReadTally::default();
            let r = vs.visible(txn, tree.id, key, current, &mut tally);
            vs.count(&tally);
            self.health.guard(r)
        }))
    }

    /// A point read outside any transaction, with the core latch shared: whether `key` has a
    /// committed value, that value in `out` (see [`bt::get_to`]), or `None` when it must run as
    /// a one-read transaction instead (a page is
    /// not cached, a transaction may hold an uncommitted change of the key, or this mode keeps
    /// versions or uncommitted state the probe does not cover).
    ///
    /// Why it reads committed data without a lock: every change of a record is made under an X
    /// lock counted in the probe from before the change until after its commit or rollback,
    /// and under the latch of the record's page (the core latch exclusive, or a guarded leaf's
    /// stripe latch). The probe is asked while this reader holds that latch, so a change it
    /// saw is still counted. Serializable: the read takes its place at the probe, as a
    /// one-read transaction that locked the key there would.
    pub fn get_committed(
        &self,
        tree: &Tree,
        key: &[u8],
        out: &mut Vec<u8>,
    ) -> Option<Result<bool>> {
        if !self.commits_shared() {
            return None;
        }
        if let Err(e) = self.check().and_then(|()| self.catalog.check_handle(tree)) {
            return Some(Err(e));
        }
        let probe = self.txns.write_probe(tree.id, key)?;
        let Some(r) =
            SharedReader::run_committed(&self.cache, probe, |m| bt::get_to(m, tree.root, key, out))
        else {
            self.stats.shared_retries.add(1);
            return None;
        };
        self.stats.ops.add(1);
        self.stats.shared.add(1);
        Some(r)
    }

    /// [`Core::scan`] with the core latch shared, its pairs put in `out`: `None` if a page it
    /// needs is not cached (noted for the caller to read, see [`super::Shared::shared_op`]);
    /// after that read the caller runs it again, with the same `parts`, and then, if it still
    /// gives up, exclusive ([`Core::scan_to`], from the start). With several threads a scan
    /// runs in parts (see [`ScanParts`]): an attempt goes on after the pairs `out` holds from
    /// the parts before it; else `out` is emptied first and a refused attempt's pairs are to be
    /// dropped.
    pub(crate) fn scan_shared_to<O: PairOut>(
        &self,
        (txn, tree): (TxnId, &Tree),
        (range, reverse): (KeyRange<'_>, bool),
        limit: usize,
        cursor: Option<&mut Option<ScanGuard>>,
        parts: &mut ScanParts,
        out: &mut O,
    ) -> Option<Result<()>> {
        let batch = cursor.is_some();
        let resumes = *parts
            .resumes
            .get_or_insert_with(|| self.cache.splits.several_threads());
        out.truncate_pairs(parts.kept);
        debug_assert!(
            resumes || parts.kept == 0,
            "a scan that starts over kept pairs"
        );
        // The range left: after where the last part kept ended, in scan order.
        let last = parts.after.clone();
        let range = match (&last, reverse) {
            (None, _) => range,
            (Some(k), false) => (Bound::Excluded(k.as_slice()), range.1),
            (Some(k), true) => (range.0, Bound::Excluded(k.as_slice())),
        };
        if self.is_snapshot(txn) {
            if let Err(e) = self.checked(txn, tree) {
                return Some(Err(e));
            }
            let how = (limit, resumes, parts.kept);
            let mut resolved = None;
            let part = (&mut parts.counts, &mut resolved);
            let Some(r) = self.scan_snapshot_shared((txn, tree), (range, reverse), how, part, out)
            else {
                self.stats.shared_retries.add(1);
                match resolved {
                    Some(end) if resumes => {
                        // Kept: the windows resolved before the miss (perhaps no key of them
                        // visible), up to the end of the last.
                        parts.keep(out.pair_count(), end);
                        self.stats.scans_resumed.add(1);
                    }
                    _ => out.truncate_pairs(parts.kept),
                }
                return None;
            };
            if !batch {
                self.stats.ops.add(1);
            }
            self.stats.shared.add(1);
            return Some(r);
        }
        let mut own = None;
        let kept = cursor.or(resumes.then_some(&mut parts.guard));
        let guard = match self.scan_guard(txn, tree, (range, reverse), kept, &mut own) {
            Ok(g) => g,
            Err(e) => return Some(Err(e)),
        };
        let cc = self.txns.cc();
        let pages = std::cell::Cell::new(0);
        let mut sink = ClaimedPairs::new(cc, (txn, tree.id), guard, limit, out).tallied(&pages);
        // The kept parts' hits count once the scan completes here.
        let mut hits = parts.counts.hits;
        if limit > parts.kept {
            let r = SharedReader::run_keeping(&self.cache, &pages, |m| {
                bt::scan(m, tree.root, range.0, range.1, reverse, &mut sink)
            });
            // Hits counted once, as in one pass: an ascending part resumed goes back down to
            // the leaf the part before it stopped in and counted (one pass would have gone on
            // along the sibling link), so what it read up to its first reach is not counted;
            // a part that gives up keeps what it read up to its last reach (after that, the
            // way to the page it missed, which the next part reads again). A descending scan
            // goes down for each leaf anyway.
            let (first, last) = sink.pages_at_reach();
            let back = if parts.kept > 0 && !reverse { first } else { 0 };
            let Some(r) = r else {
                self.stats.shared_retries.add(1);
                let told = sink.told();
                drop(sink);
                if resumes && told > parts.kept {
                    // Kept: what the claim covers; the next part goes on after it.
                    out.truncate_pairs(told);
                    parts.keep(told, out.key_at(told - 1).to_vec());
                    parts.counts.hits += last - back;
                    self.stats.scans_resumed.add(1);
                }
                return None;
            };
            hits += pages.get() - back;
            if let Err(e) = r {
                self.cache.pool.shared_hits.add(hits);
                if !batch {
                    self.stats.ops.add(1);
                }
                return Some(Err(e));
            }
        }
        self.cache.pool.shared_hits.add(hits);
        if !batch {
            self.stats.ops.add(1);
        }
        self.stats.shared.add(1);
        Some(Ok(()))
    }

    /// Whether the plain reads outside transactions ([`Core::get_committed`]) may run shared:
    /// not in the modes that keep more per transaction than the lock probe covers (a version
    /// store, per-frame lists of uncommitted writers for a no-steal policy). The flushless
    /// mode's changes are made under the same locks and page latches, and its abort discards
    /// a page (with the latch exclusive) before the locks go.
    fn commits_shared(&self) -> bool {
        self.versions.is_none() && self.writes_shared()
    }

    /// Whether plain writes and commits may run with the core latch shared: not in a mode that
    /// keeps per-transaction state only an exclusive operation may change (per-frame lists of
    /// uncommitted writers for a no-steal policy). With a version store they may: the
    /// before-image is kept under the leaf's latch (see [`crate::mvcc::Versions`]); a rollback
    /// stays exclusive unless it has nothing to undo ([`Core::rollback_shared`]). In the
    /// flushless mode the change is recorded in the log table under the leaf's latch, and a
    /// commit of such changes only copies them to the log (`shared_flushless.rs`).
    pub(super) fn writes_shared(&self) -> bool {
        !self.cache.pool.track_uncommitted
    }

    /// [`Core::commit_record`] with the core latch shared (the log has its own latch): `None`
    /// if this mode commits exclusive. A read-only transaction (`Some(Ok(0))`) is ended too.
    pub fn commit_shared(&self, wal: &SharedWal, txn: TxnId) -> Option<Result<Lsn>> {
        if !self.writes_shared() {
            return None;
        }
        if let Some(fl) = &self.flushless {
            return self.commit_flushless_shared(fl, wal, txn);
        }
        if let Err(e) = self.check() {
            return Some(Err(e));
        }
        let r = (|| {
            if let Some(vs) = &self.versions {
                if self.txns.last_lsn(txn)? == 0 {
                    // Logged nothing: its snapshot ends, and a before-image a refused write
                    // left becomes a commit of the unchanged value, before its locks go.
                    let r = vs.end_unlogged(txn);
                    self.health.guard(r)?;
                }
            }
            let prev = self.txns.commit_point(txn)?;
            if prev == 0 {
                self.stats.commits.add(1);
                return Ok(0);
            }
            let mut log = wal.lock();
            let r = log.append(txn, prev, Body::Commit);
            let lsn = self.health.guard(r)?;
            if !self.cfg.durable_commits {
                // Not waiting for the log: the End follows at once, under the same latch.
                log.stats_mut().commits += 1;
                let _ = self.health.guard(log.append(txn, lsn, Body::End));
            }
            drop(log);
            self.txns.committing_shared(txn);
            Ok(lsn)
        })();
        Some(r)
    }

    /// In the flushless mode: the end of a transaction that changed nothing (a reader, or a
    /// writer refused before its first change), with the core latch shared, as in the ARIES
    /// mode; not counted (a commit or an abort, as the caller says). `None`: not that mode, or
    /// the transaction did something.
    pub(super) fn end_reader_shared(&self, txn: TxnId) -> Option<Result<()>> {
        let fl = self.flushless.as_ref()?;
        debug_assert!(
            self.versions.is_none(),
            "the flushless mode keeps no versions"
        );
        self.check().ok()?;
        // What the mode keeps for a transaction (log-table records, pages allocated or freed)
        // comes with a changed page or a reservation, which the table's test sees: looked at
        // in debug builds only (the log table's mutex is one for every thread).
        let kept_nothing = cfg!(debug_assertions).then(|| fl.untouched(txn));
        match self.txns.end_if_untouched(txn) {
            Ok(Some(())) => {
                debug_assert_ne!(
                    kept_nothing,
                    Some(false),
                    "an untouched transaction kept state"
                );
                Some(Ok(()))
            }
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }

    /// [`Core::rollback`] with the core latch shared, for a transaction that logged nothing
    /// (and, with a version store, left no before-image): nothing to undo, so it only ends,
    /// its locks released, as the commit of such a transaction does. `None`: roll it back
    /// exclusive (it logged changes, the mode rolls back exclusive, or the handle is poisoned,
    /// which the exclusive rollback reports). A reader that a writer's lock refused
    /// (`Db::get`'s transaction) and a writer refused before its first change end so.
    pub fn rollback_shared(&self, txn: TxnId) -> Option<Result<()>> {
        if !self.writes_shared() || self.check().is_err() {
            return None;
        }
        if let Some(fl) = &self.flushless {
            // Its writers log nothing before their commit: the last LSN cannot tell a reader.
            let r = self.end_reader_shared(txn)?;
            if r.is_ok() {
                self.stats.aborts.add(1);
                fl.aborted_shared();
            }
            return Some(r);
        }
        match self.txns.last_lsn(txn) {
            Ok(0) => {}
            Ok(_) => return None,
            Err(e) => return Some(Err(e)),
        }
        if let Some(vs) = &self.versions {
            if !vs.wrote_nothing(txn) {
                return None;
            }
            // Its snapshot, if any, is released.
            if let Err(e) = self.health.guard(vs.end_unlogged(txn)) {
                return Some(Err(e));
            }
        }
        let r = self.txns.commit_point(txn).map(|prev| {
            debug_assert_eq!(prev, 0, "a transaction's own thread ends it");
            self.stats.aborts.add(1);
        });
        Some(r)
    }

    /// [`Core::end_commit`] with the core latch shared, for a commit [`Core::commit_shared`]
    /// logged.
    pub fn end_commit_shared(&self, txn: TxnId) -> Result<()> {
        debug_assert!(self.writes_shared());
        if let Some(vs) = &self.versions {
            // Its versions become visible to snapshots that begin from now on, before its
            // locks go.
            let r = vs.commit(txn);
            self.health.guard(r)?;
        }
        let st = self.txns.remove(txn)?;
        self.txns.end(txn, &st);
        // The page reserve is brought up to date by the next exclusive write (it only shrinks
        // here, so until then allocations leave a few pages too many, never too few).
        self.stats.commits.add(1);
        Ok(())
    }

    /// What an update of a transaction whose first record is `first` (0: none yet) must leave
    /// in the log: every live transaction's rollback, its own included.
    pub(super) fn update_keep(&self, first: Lsn) -> crate::wal::UpdateKeep {
        let own_first = if first == 0 {
            txn_reserve(self.cfg.page_size)
        } else {
            0
        };
        crate::wal::UpdateKeep {
            reserved: self.txns.log_reserved() + own_first,
            undo_extra: crate::txn_table::UNDO_EXTRA_BYTES,
        }
    }

    /// [`Core::write`] with the core latch shared: a plain change of a guarded leaf (see
    /// `read_shared.rs`), logged under the log's own latch. `None`: this change, or this mode,
    /// needs the latch exclusive (a split or merge, an overflow value, a leaf not guarded yet, a
    /// page not in memory, a checkpoint due or log space short); nothing was changed, and the
    /// caller runs `write`. The records, pages and counters it leaves are those `write` would
    /// have left.
    pub fn write_shared(
        &self,
        wal: &SharedWal,
        txn: TxnId,
        tree: &Tree,
        key: &[u8],
        value: Option<&[u8]>,
        hint: &mut LeafHint,
    ) -> Option<Result<Option<Vec<u8>>>> {
        if !self.writes_shared() {
            return None;
        }
        let pre = (|| {
            self.check()?;
            self.check_sizes(key, value)?;
            // `access` fails with `TxnNotActive` for a transaction that is not live.
            self.access_lsns(txn, tree, Some(key), Access::Write)
        })();
        let lsns = match pre {
            Ok(lsns) => lsns,
            Err(e) => return Some(Err(e)),
        };
        let r = self.write_plain(wal, (txn, lsns), tree, key, value, hint);
        match &r {
            None => self.stats.shared_retries.add(1),
            Some(_) => self.stats.shared.add(1),
        }
        r
    }

    /// The leaf change of [`Core::write_shared`], once the transaction may write `key`: `txn`
    /// with its first and last LSN (0: none yet).
    fn write_plain(
        &self,
        wal: &SharedWal,
        (txn, (first, prev)): (TxnId, (Lsn, Lsn)),
        tree: &Tree,
        key: &[u8],
        value: Option<&[u8]>,
        hint: &mut LeafHint,
    ) -> Option<Result<Option<Vec<u8>>>> {
        let mut w = SharedWriter::new(&self.cache);
        // The leaf range noted by the transaction's last plain change still holds if it was
        // noted in this tree and the core latch has not been exclusive since: only then do
        // nodes split, merge or get freed.
        let now = (tree.id, tree.root, self.exclusive_epoch);
        let reuse = (hint.tree, hint.root, hint.epoch) == now;
        if !reuse {
            // Noted before a structure change, or in another tree: never to be used again,
            // whether or not this operation descends and notes a new one.
            hint.range.clear();
        }
        (hint.tree, hint.root, hint.epoch) = now;
        // A delete that leaves its leaf under-full leaves the merge for later, beside others
        // (`splits.rs`), not in the flushless mode (whose exclusive changes keep their own
        // records). Asked of deletes only: a put never leaves its leaf under-full.
        let merges = value.is_none() && self.flushless.is_none();
        let underfull = if merges && self.cache.splits.merges_later() {
            bt::plain::Underfull::Allow
        } else {
            bt::plain::Underfull::Refuse
        };
        let planned = bt::plain::plan(
            &mut w,
            tree.root,
            key,
            value,
            &mut hint.range,
            reuse,
            underfull,
        );
        let plan = match planned {
            Ok(Some(plan)) if !w.refused() => plan,
            // Not plain, refused (a page not in memory), or an error the exclusive run reports
            // the same way: nothing was written.
            _ => return None,
        };
        // What other transactions' scans read is not changed under them (`ranges.rs`): asked
        // with the leaf latched.
        if let Plan::Change { leaf, old, .. } | Plan::Full { leaf, old } = &plan {
            if w.latches(*leaf) {
                let there = old.is_some();
                if let Err(e) = self.range_check_latched(&w, txn, tree, (key, there), value) {
                    self.txns.refused_write(txn);
                    return Some(Err(e));
                }
            }
        }
        let (leaf, old, at) = match plan {
            Plan::Change {
                leaf,
                old,
                at,
                underfull,
            } if w.latches(leaf) => {
                if underfull {
                    // Noted before the change: an exclusive change that comes between finds
                    // nothing to merge yet and leaves it for the next.
                    self.cache.splits.merge_later(tree.root, leaf, key);
                }
                (leaf, old, at)
            }
            // A leaf that is not guarded changes only with the core latch exclusive.
            Plan::Change { .. } => return None,
            Plan::Full { leaf, old } if w.latches(leaf) && self.cache.splits.beside_now() => {
                let value = value.expect("only a put finds its leaf full");
                return self.split_beside(
                    wal,
                    (txn, (first, prev)),
                    tree,
                    key,
                    value,
                    (leaf, old),
                    w,
                );
            }
            Plan::Full { .. } => return None,
            // With a version store, the exclusive run keeps the (absent) version.
            Plan::Nothing if self.versions.is_some() => return None,
            Plan::Nothing => {
                // A delete of a missing key: nothing to change or log, but the same look at
                // the log (and table) as `Core::write`, which may checkpoint first.
                if !self.nothing_to_do_shared(wal, key, value) {
                    return None;
                }
                w.finish(0);
                self.stats.ops.add(1);
                return Some(Ok(None));
            }
        };
        if let Some(fl) = &self.flushless {
            // Recorded in the log table; the transaction's list of changed pages serves only
            // the per-frame lists of uncommitted changes, which this mode does not keep.
            return self.change_flushless(fl, wal, txn, (key, value), (leaf, old, at), w);
        }
        if let Some(vs) = &self.versions {
            // The version this change replaces, kept under the leaf's latch (a snapshot
            // writer's lost update refused). A refusal below leaves it kept: the exclusive
            // run finds it kept already.
            if let Err(e) = vs.before_write(txn, tree.id, key, old.as_deref()) {
                return Some(self.health.guard(Err(e)));
            }
        }
        // Logged first, the change made after: a refusal (the log short of space or a
        // checkpoint due, which the exclusive run then takes) leaves nothing to take back.
        let need = update_log_need(self.cfg.page_size, key, value);
        let mut log = wal.lock();
        if !self.shared_log_space_ok(&log, need) {
            return None;
        }
        log.set_update_keep(Some(self.update_keep(first)));
        let update = crate::wal::codec::LeafUpdate {
            pid: leaf,
            key,
            value,
            tree: tree.id,
            old: old.as_deref(),
        };
        let r = log.append_leaf_update(txn, prev, update);
        log.set_update_keep(None);
        // Refused (the log is full): the exclusive run fails the same way, or waits.
        let lsn = r.ok()?;
        let record_bytes = log.next_lsn().saturating_sub(lsn);
        let grows = old
            .as_ref()
            .is_some_and(|o| value.is_none_or(|v| v.len() < o.len()));
        let undo = Undo {
            tree: tree.id,
            key: key.to_vec(),
            old: old.clone(),
        };
        // Reserved before the log is let go, so the next writer's space check counts it.
        self.txns.updated(txn, lsn, record_bytes, grows, undo);
        drop(log);
        if let Err(e) = bt::plain::apply(&mut w, leaf, key, value, at) {
            // The leaf the plan read under this latch could not take the change: it is
            // corrupt, and the log holds a change the page does not: nothing more may be
            // written (recovery redoes the record on the page as written).
            self.health.poison(&e);
            return Some(Err(e));
        }
        w.finish(lsn);
        // The transaction's list of changed pages serves only the per-frame lists of
        // uncommitted changes, which a mode that writes with the latch shared does not keep.
        debug_assert!(!self.cache.pool.track_uncommitted);
        self.stats.ops.add(1);
        Some(Ok(old))
    }
}

impl Core {
    /// Whether a change made with the core latch shared, that may log `need` bytes, may go on
    /// (the log latched: `log`). A checkpoint due only because the log grew by an interval
    /// does not stop it once a second thread has run operations (in place, without a version
    /// store): it is left to the end of the transaction (`Checkpointer::want`,
    /// `Shared::run_wanted_checkpoint`). Run now, by the exclusive path, it would hold this
    /// change's record lock, taken before, through all its page writes: writers of a hot key
    /// then waited up to 100 ms or, refused by a running holder, retried thousands of times
    /// (durable YCSB-A at 8 threads, docs/results.md). A log short of space still stops it.
    pub(super) fn shared_log_space_ok(&self, log: &crate::wal::Wal, need: u64) -> bool {
        use crate::checkpoint::LogSpace;
        match self.checkpointer.log_space(log, &self.txns, need) {
            LogSpace::Ok => true,
            LogSpace::Due
                if self.cache.splits.several_threads()
                    && self.flushless.is_none()
                    && self.versions.is_none() =>
            {
                self.checkpointer.want();
                true
            }
            LogSpace::Due | LogSpace::Short => false,
        }
    }

    /// The key-range check of a change of `key` (`None`: a delete) by `txn` whose leaf `w`
    /// holds latched (see `ranges.rs`); `there`: the key is in the leaf. Nothing to ask for a
    /// put while no scan claims the tree; the leaf is searched for the neighbours of a new key
    /// only. A write not made here (refused for the exclusive path) is checked again there.
    fn range_check_latched(
        &self,
        w: &SharedWriter<'_>,
        txn: TxnId,
        tree: &Tree,
        (key, there): (&[u8], bool),
        value: Option<&[u8]>,
    ) -> Result<()> {
        let cc = self.txns.cc();
        if value.is_some() && !cc.claims_any(tree.id) {
            return Ok(());
        }
        let change = match (there, value) {
            (true, Some(_)) => Change::Update,
            (true, None) => Change::Delete,
            (false, Some(_)) => {
                let page = w.latched_page().expect("the leaf is latched");
                let (found, pred, succ) = bt::leaf_place(page, key)?;
                debug_assert!(!found, "the plan found no old value");
                return cc.before_change(txn, tree.id, key, Change::Insert { pred, succ });
            }
            (false, None) => return Ok(()),
        };
        cc.before_change(txn, tree.id, key, change)
    }

    /// [`Core::range_check_latched`] for a write with the core latch exclusive: no scan runs
    /// then, so every claim is closed and only what a claim covers refuses the write (no need
    /// to know whether the key is new, or its neighbours). A delete is recorded whether or not
    /// its key is there.
    pub(super) fn range_check_exclusive(
        &self,
        txn: TxnId,
        tree: &Tree,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<()> {
        let cc = self.txns.cc();
        let r = match value {
            Some(_) if !cc.claims_any(tree.id) => Ok(()),
            Some(_) => cc.before_change(txn, tree.id, key, Change::Put),
            None => cc.before_change(txn, tree.id, key, Change::Delete),
        };
        if r.is_err() {
            self.txns.refused_write(txn);
        }
        r
    }
}

/// A transaction's note of the leaf its last plain change went to (see
/// [`bt::LeafRange`]), and when: the tree, its root, and [`Core::exclusive_epoch`] then.
#[derive(Debug, Default)]
pub(crate) struct LeafHint {
    tree: crate::wal::record::TreeId,
    root: crate::page::PageId,
    epoch: u64,
    range: bt::LeafRange,
}
