//! A put whose leaf is full, split with the core latch shared (see `splits.rs` and
//! docs/engine.md, "Leaf splits beside other threads"): the other threads' readers and writers
//! go on while it is made, and the separator goes to the parent at the next exclusive change.

use super::{update_log_need, Core};
use crate::btree::tree as bt;
use crate::btree::PageStore;
use crate::buffer::Seen;
use crate::catalog::Tree;
use crate::error::Result;
use crate::meta::{self, META_PID};
use crate::mtr::RedoSink;
use crate::page::{self, Lsn, PageId, NO_PAGE};
use crate::page_op::PageOp;
use crate::read_shared::SharedWriter;
use crate::splits::{PendingSplit, POSTING_LOG_PAGES, POSTING_PAGES};
use crate::wal::record::{Body, PageRedo, Redo, TxnId, Undo};
use crate::wal::SharedWal;

impl Core {
    /// Splits `leaf` (latched exclusive by `w`, full for the put of `key` = `value`, not the
    /// root, its split not pending) with the core latch shared, the put made in its half; the
    /// same pages, as [`crate::btree::tree::put`] makes them, save that the parent is left
    /// alone and the leaf flagged. `None`, having changed nothing: the split runs exclusive
    /// (no stock frame, the meta page not cached, pages on the free list or few left, log
    /// space short).
    ///
    /// Logged first, as a plain change is: one `Update` record with the leaf (as page
    /// operations, or its image), the new page's image and the meta page's next page id; then
    /// the pages are written, the new one in a stock frame, claimed in the page table before
    /// the leaf (with its link to it) is let go.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn split_beside(
        &self,
        wal: &SharedWal,
        (txn, (first, prev)): (TxnId, (Lsn, Lsn)),
        tree: &Tree,
        key: &[u8],
        value: &[u8],
        (leaf, old): (PageId, Option<Vec<u8>>),
        mut w: SharedWriter<'_>,
    ) -> Option<Result<Option<Vec<u8>>>> {
        let splits = &self.cache.splits;
        let pool = &self.cache.pool;
        let alloc = crate::sync::lock(&splits.alloc);
        // Asked before, without the mutex: another splitter may have taken the last room.
        if !splits.room() {
            return None;
        }
        // Nobody else reads or writes the meta page while the latch is shared: splitters
        // beside each other take turns on this mutex.
        let Seen::Resident(mf) = pool.seen(META_PID) else {
            return None;
        };
        let (right, free_head) = {
            let m = pool.data(mf);
            (meta::next_pid(m), meta::free_head(m))
        };
        let room = right
            .saturating_add(self.cache.page_reserve)
            .saturating_add(POSTING_PAGES)
            < self.cache.page_capacity;
        // A page from the free list needs its page read: the exclusive split takes those.
        if free_head != NO_PAGE || !room || !matches!(pool.seen(right), Seen::Absent) {
            return None;
        }
        let f = splits.take_frame()?;
        let made = w
            .read_page(leaf, |p| {
                bt::split_beside(p, right, (key, value), old.is_some(), true)
            })
            .and_then(|r| r);
        let Ok(aside) = made else {
            // The exclusive run meets the same fault and reports it.
            splits.return_frame(f);
            return None;
        };
        let right_image = aside
            .right
            .as_deref()
            .expect("a split made aside has its page");
        if let Some(vs) = &self.versions {
            // As a plain change keeps it (see `write_plain`).
            if let Err(e) = vs.before_write(txn, tree.id, key, old.as_deref()) {
                splits.return_frame(f);
                return Some(self.health.guard(Err(e)));
            }
        }
        // Room for this update and for this split's posting, which comes before the next
        // exclusive change or in recovery (those of the pending splits are reserved already).
        let posting = POSTING_LOG_PAGES * self.cfg.page_size as u64;
        let need = update_log_need(self.cfg.page_size, key, Some(value)) + posting;
        let mut log = wal.lock();
        if !self.shared_log_space_ok(&log, need) {
            splits.return_frame(f);
            return None;
        }
        let redo = if RedoSink::page_ops(&*log) {
            let left = match &aside.left_ops {
                Some(ops) => PageRedo::Ops(ops.clone()),
                None => PageRedo::Image(aside.left.clone()),
            };
            Redo::Pages(vec![
                (leaf, left),
                (right, PageRedo::Image(right_image.to_vec())),
                (
                    META_PID,
                    PageRedo::Ops(vec![PageOp::MetaNextPid(right + 1)]),
                ),
            ])
        } else {
            let mut m = pool.data(mf).to_vec();
            meta::set_next_pid(&mut m, right + 1);
            Redo::Images(vec![
                (leaf, aside.left.clone()),
                (right, right_image.to_vec()),
                (META_PID, m),
            ])
        };
        log.set_update_keep(Some(self.update_keep(first)));
        let undo = Undo {
            tree: tree.id,
            key: key.to_vec(),
            old: old.clone(),
        };
        let body = Body::Update {
            redo,
            undo: undo.clone(),
        };
        let r = log.append(txn, prev, &body);
        log.set_update_keep(None);
        let Ok(lsn) = r else {
            // Refused (the log is full): the exclusive run fails the same way, or waits.
            splits.return_frame(f);
            return None;
        };
        let record_bytes = log.last_whole_len();
        let grows = old.as_ref().is_some_and(|o| value.len() < o.len());
        self.txns.updated(txn, lsn, record_bytes, grows, undo);
        // Reserved before the log is let go, so the next writer's space check counts it.
        splits.reserve_posting(posting);
        drop(log);
        // SAFETY: the stock frame holds no page and is in no table: nobody else reaches it.
        let rd = unsafe { pool.frames[f as usize].data.write_shared() };
        rd.copy_from_slice(right_image);
        page::set_page_lsn(rd, lsn);
        // In the page table from here on, though nobody knows its id until the leaf is let go
        // (its link the only way to it); the claim publishes its bytes to whoever finds it.
        let claimed = pool.claim_made(f, right);
        pool.queue_dirty(f, lsn);
        // SAFETY: with the core latch shared only splitters, under `alloc`, touch the meta page.
        let md = unsafe { pool.frames[mf as usize].data.write_shared() };
        meta::set_next_pid(md, right + 1);
        page::set_page_lsn(md, lsn);
        pool.queue_dirty(mf, lsn);
        splits.made(
            PendingSplit {
                root: tree.root,
                leaf,
                reserved: posting,
            },
            f,
            right,
            claimed,
        );
        drop(alloc);
        // The leaf last: once its latch goes, its flag and link lead to the new page.
        if let Err(e) = w.write_page(leaf, |p| p.copy_from_slice(&aside.left)) {
            // Not to be: the leaf is latched and was read above. The log holds the split.
            self.health.poison(&e);
            return Some(Err(e));
        }
        w.finish(lsn);
        self.stats.ops.add(1);
        self.stats.splits_beside.add(1);
        Some(Ok(old))
    }
}
