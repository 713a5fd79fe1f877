//! Transactions: reads, writes and scans under record and tree locks (strict two-phase locking,
//! no-wait), commit through group commit, rollback with compensation records.

use crate::btree::tree as bt;
use crate::db::{lock, Core, Db, Tree};
use crate::error::{Error, Result};
use crate::locks::{LockKey, LockMode};
use crate::wal::record::{Body, TxnId, Undo};
use std::ops::Bound;

/// A transaction. Dropped without `commit`, it aborts.
pub struct Txn {
    db: Db,
    id: TxnId,
    done: bool,
}

impl Txn {
    pub(crate) fn new(db: Db, id: TxnId) -> Txn {
        Txn {
            db,
            id,
            done: false,
        }
    }

    pub fn id(&self) -> TxnId {
        self.id
    }

    fn lock_pair(
        core: &mut Core,
        id: TxnId,
        tree: &Tree,
        key: Option<&[u8]>,
        write: bool,
    ) -> Result<()> {
        if tree.instance != core.instance {
            return Err(Error::InvalidArgument(format!(
                "tree '{}' was opened on another database handle (or before a reopen): \
                 get it from this one with Db::open_tree",
                tree.name()
            )));
        }
        let (tm, rm) = if write {
            (LockMode::IX, LockMode::X)
        } else {
            (LockMode::IS, LockMode::S)
        };
        let mut new = Vec::new();
        let tk = LockKey::Tree(tree.id);
        match key {
            Some(k) => {
                if core.locks.acquire(id, &tk, tm)? {
                    new.push(tk);
                }
                let rk = LockKey::Record(tree.id, k.to_vec());
                let r = core.locks.acquire(id, &rk, rm);
                if let Ok(true) = r {
                    new.push(rk);
                }
                let st = core.txns.get_mut(&id).ok_or(Error::TxnNotActive)?;
                st.locks.extend(new);
                r.map(|_| ())
            }
            None => {
                let m = if write { LockMode::X } else { LockMode::S };
                if core.locks.acquire(id, &tk, m)? {
                    core.txns
                        .get_mut(&id)
                        .ok_or(Error::TxnNotActive)?
                        .locks
                        .push(tk);
                }
                Ok(())
            }
        }
    }

    fn check_sizes(core: &Core, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let max_key = core.cfg.page_size as usize / 8;
        if key.len() > max_key {
            return Err(Error::KeyTooLong {
                len: key.len(),
                max: max_key,
            });
        }
        if let Some(v) = value {
            let max = u32::MAX as usize / 2;
            if v.len() > max {
                return Err(Error::ValueTooLong { len: v.len(), max });
            }
        }
        Ok(())
    }

    /// Reads `key`.
    pub fn get(&mut self, tree: &Tree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut core = lock(&self.db.inner.core);
        core.check()?;
        if !core.txns.contains_key(&self.id) {
            return Err(Error::TxnNotActive);
        }
        Self::lock_pair(&mut core, self.id, tree, Some(key), false)?;
        core.stats.ops += 1;
        let mut wal = self.db.inner.wal.lock();
        let mut mtr = core.mtr(&mut wal);
        let r = bt::get(&mut mtr, tree.root, key);
        mtr.release();
        core.guard(r)
    }

    /// Inserts or replaces `key`. Returns the previous value.
    pub fn put(&mut self, tree: &Tree, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.write(tree, key, Some(value))
    }

    /// Deletes `key`. Returns the previous value.
    pub fn delete(&mut self, tree: &Tree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.write(tree, key, None)
    }

    fn write(&mut self, tree: &Tree, key: &[u8], value: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        let mut core = lock(&self.db.inner.core);
        core.check()?;
        if !core.txns.contains_key(&self.id) {
            return Err(Error::TxnNotActive);
        }
        Self::check_sizes(&core, key, value)?;
        Self::lock_pair(&mut core, self.id, tree, Some(key), true)?;
        core.stats.ops += 1;
        let mut wal = self.db.inner.wal.lock();
        let ps = core.cfg.page_size as u64;
        let vlen = value.map_or(0, |v| v.len() as u64);
        // This record (leaf change or images) and its future compensation record.
        let need =
            2 * (key.len() as u64 + vlen + 4 * ps) + crate::checkpoint::txn_reserve(ps as u32);
        let r = crate::checkpoint::ensure_log_space(&mut core, &mut wal, need);
        core.guard(r)?;
        let prev = core.txns[&self.id].last_lsn;
        let tree_id = tree.id;
        let (old, lsn) = core.apply(&mut wal, (self.id, prev), tree, key, value, |old, redo| {
            Body::Update {
                redo,
                undo: Undo {
                    tree: tree_id,
                    key: key.to_vec(),
                    old: old.clone(),
                },
            }
        })?;
        if lsn != 0 {
            let record = wal.next_lsn().saturating_sub(lsn);
            let mut add = crate::checkpoint::undo_reserve(record);
            let txn_reserve = crate::checkpoint::txn_reserve(core.cfg.page_size);
            let st = core.txns.get_mut(&self.id).expect("active");
            if st.first_lsn == 0 {
                st.first_lsn = lsn;
                add += txn_reserve;
            }
            st.reserved += add;
            core.log_reserved += add;
            let st = core.txns.get_mut(&self.id).expect("active");
            st.last_lsn = lsn;
            st.undo.push((
                lsn,
                Undo {
                    tree: tree_id,
                    key: key.to_vec(),
                    old: old.clone(),
                },
            ));
        }
        Ok(old)
    }

    /// Key-value pairs with keys in `range`, in key order (descending if `reverse`), at most
    /// `limit` of them. Locks the whole tree in shared mode until the transaction ends.
    pub fn scan(
        &mut self,
        tree: &Tree,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut core = lock(&self.db.inner.core);
        core.check()?;
        if !core.txns.contains_key(&self.id) {
            return Err(Error::TxnNotActive);
        }
        Self::lock_pair(&mut core, self.id, tree, None, false)?;
        core.stats.ops += 1;
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut wal = self.db.inner.wal.lock();
        let mut mtr = core.mtr(&mut wal);
        let mut out = Vec::new();
        let r = bt::scan(&mut mtr, tree.root, range.0, range.1, reverse, |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            out.len() < limit
        });
        mtr.release();
        core.guard(r)?;
        Ok(out)
    }

    /// Commits: durable when this returns.
    pub fn commit(self) -> Result<()> {
        let pending = self.commit_deferred()?;
        if pending.lsn != 0 {
            if let Err(e) = pending.db.inner.wal.commit_wait(pending.lsn) {
                lock(&pending.db.inner.core).poison(&e);
                return Err(e);
            }
        }
        pending.finish()
    }

    /// The first half of a commit, for schedulers that batch log flushes themselves (group
    /// commit in virtual time): appends the commit record and returns. The transaction keeps its
    /// locks; it is committed once the log is durable up to `PendingCommit::lsn` (after
    /// `Db::flush_log`), and `PendingCommit::finish` then ends it. Dropping a `PendingCommit`
    /// unfinished leaves the transaction to recovery (committed if its record became durable).
    pub fn commit_deferred(mut self) -> Result<PendingCommit> {
        self.done = true;
        let mut core = lock(&self.db.inner.core);
        core.check()?;
        let st = core.txns.get(&self.id).ok_or(Error::TxnNotActive)?;
        let lsn = if st.last_lsn == 0 {
            0
        } else {
            let prev = st.last_lsn;
            let r = self.db.inner.wal.lock().append(self.id, prev, Body::Commit);
            match r {
                Ok(l) => {
                    core.txns.get_mut(&self.id).expect("active").committing = true;
                    l
                }
                Err(e) => {
                    // Not committed: the drop of `self` rolls the transaction back.
                    self.done = false;
                    let r = core.guard(Err(e));
                    drop(core);
                    return r;
                }
            }
        };
        drop(core);
        Ok(PendingCommit {
            db: self.db.clone(),
            id: self.id,
            lsn,
        })
    }
    /// Rolls back every change of the transaction.
    pub fn abort(mut self) -> Result<()> {
        self.done = true;
        self.rollback()
    }

    fn rollback(&mut self) -> Result<()> {
        let mut core = lock(&self.db.inner.core);
        let st = match core.txns.remove(&self.id) {
            Some(s) => s,
            None => return Err(Error::TxnNotActive),
        };
        let r = if core.poisoned.is_some() {
            // Nothing more may be written; recovery will roll this transaction back.
            Ok(())
        } else {
            let mut wal = self.db.inner.wal.lock();
            crate::recovery::rollback(&mut core, &mut wal, self.id, st.last_lsn, &st.undo)
        };
        core.log_reserved -= st.reserved;
        core.locks.release_all(self.id, &st.locks);
        core.stats.aborts += 1;
        if let Err(e) = &r {
            core.poison(e);
        }
        r
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.rollback();
        }
    }
}

/// A transaction whose commit record is in the log but maybe not yet durable (see
/// [`Txn::commit_deferred`]).
pub struct PendingCommit {
    db: Db,
    id: TxnId,
    /// LSN of the commit record (0: the transaction changed nothing).
    pub lsn: crate::page::Lsn,
}

impl PendingCommit {
    /// Ends the transaction once its commit record is durable (normally the caller flushed the
    /// log with `Db::flush_log`; if not, this flushes it). Releases its locks.
    pub fn finish(self) -> Result<()> {
        let mut core = lock(&self.db.inner.core);
        if self.lsn != 0 {
            let durable = self.db.inner.wal.lock().durable_lsn();
            if durable <= self.lsn {
                let r = self.db.inner.wal.lock().flush_to(self.lsn);
                core.guard(r)?;
            }
            // The commit is durable: failing to log its end only leaves recovery one record
            // more to look at, so it does not fail the commit.
            let r = self
                .db
                .inner
                .wal
                .lock()
                .append(self.id, self.lsn, Body::End);
            let _ = core.guard(r);
        }
        let st = core.txns.remove(&self.id).ok_or(Error::TxnNotActive)?;
        core.log_reserved -= st.reserved;
        core.locks.release_all(self.id, &st.locks);
        core.stats.commits += 1;
        Ok(())
    }
}
