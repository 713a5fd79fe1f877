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
        let (next_pid, free_head) = {
            let m = pool.data(mf);
            (meta::next_pid(m), meta::free_head(m))
        };
        // Never-used pages left for the postings, whichever page this split takes.
        let room = next_pid
            .saturating_add(self.cache.page_reserve)
            .saturating_add(POSTING_PAGES)
            < self.cache.page_capacity;
        if !room {
            return None;
        }
        let (right, new) = if free_head == NO_PAGE {
            if !matches!(pool.seen(next_pid), Seen::Absent) {
                return None;
            }
            (next_pid, NewPage::Fresh(splits.take_frame()?))
        } else {
            (free_head, self.reusable(free_head)?)
        };
        let f = new.frame();
        let made = w
            .read_page(leaf, |p| {
                bt::split_beside(p, right, (key, value), old.is_some(), true)
            })
            .and_then(|r| r);
        let Ok(aside) = made else {
            // The exclusive run meets the same fault and reports it.
            new.give_back(splits);
            return None;
        };
        let right_image = aside
            .right
            .as_deref()
            .expect("a split made aside has its page");
        if let Some(vs) = &self.versions {
            // As a plain change keeps it (see `write_plain`).
            if let Err(e) = vs.before_write(txn, tree.id, key, old.as_deref()) {
                new.give_back(splits);
                return Some(self.health.guard(Err(e)));
            }
        }
        // Room for this update and for this split's posting, which comes before the next
        // exclusive change or in recovery (those of the pending splits are reserved already).
        let posting = POSTING_LOG_PAGES * self.cfg.page_size as u64;
        let need = update_log_need(self.cfg.page_size, key, Some(value)) + posting;
        let mut log = wal.lock();
        if !self.shared_log_space_ok(&log, need) {
            new.give_back(splits);
            return None;
        }
        let meta_op = match new {
            NewPage::Fresh(_) => PageOp::MetaNextPid(right + 1),
            NewPage::Reused { next, .. } => PageOp::MetaFreeHead(next),
        };
        let redo = if RedoSink::page_ops(&*log) {
            let left = match &aside.left_ops {
                Some(ops) => PageRedo::Ops(ops.clone()),
                None => PageRedo::Image(aside.left.clone()),
            };
            Redo::Pages(vec![
                (leaf, left),
                (right, PageRedo::Image(right_image.to_vec())),
                (META_PID, PageRedo::Ops(vec![meta_op.clone()])),
            ])
        } else {
            let mut m = pool.data(mf).to_vec();
            let applied = crate::page_op::apply_op(&mut m, &meta_op);
            debug_assert!(applied.is_ok(), "a meta field always fits");
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
            new.give_back(splits);
            return None;
        };
        let record_bytes = log.last_whole_len();
        let grows = old.as_ref().is_some_and(|o| value.len() < o.len());
        self.txns.updated(txn, lsn, record_bytes, grows, undo);
        // Reserved before the log is let go, so the next writer's space check counts it.
        splits.reserve_posting(posting);
        drop(log);
        // SAFETY: a stock frame holds no page and is in no table, and a free page is in no
        // tree (with the core latch shared only splitters, under `alloc`, touch free pages):
        // nobody else reaches it.
        let rd = unsafe { pool.frames[f as usize].data.write_shared() };
        rd.copy_from_slice(right_image);
        page::set_page_lsn(rd, lsn);
        // In the page table from here on (a reused page was already), though nobody knows it
        // holds this leaf until the leaf is let go (its link the only way to it).
        let adopt = match new {
            // The claim publishes its bytes to whoever finds it.
            NewPage::Fresh(_) => Some(pool.claim_made(f, right)),
            NewPage::Reused { .. } => {
                pool.guard_made(f);
                None
            }
        };
        pool.queue_dirty(f, lsn);
        // SAFETY: with the core latch shared only splitters, under `alloc`, touch the meta page.
        let md = unsafe { pool.frames[mf as usize].data.write_shared() };
        let applied = crate::page_op::apply_op(md, &meta_op);
        debug_assert!(applied.is_ok(), "a meta field always fits");
        page::set_page_lsn(md, lsn);
        pool.queue_dirty(mf, lsn);
        splits.made(
            PendingSplit {
                root: tree.root,
                leaf,
                reserved: posting,
            },
            adopt.map(|claimed| (f, right, claimed)),
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

/// Where a split beside others puts its new page.
#[derive(Clone, Copy)]
enum NewPage {
    /// The next never-used page id, in a frame from the stock.
    Fresh(u32),
    /// The free list's head, cached in this frame; `next` follows it on the list.
    Reused { frame: u32, next: PageId },
}

impl NewPage {
    fn frame(self) -> u32 {
        match self {
            NewPage::Fresh(f) | NewPage::Reused { frame: f, .. } => f,
        }
    }

    /// Gives a stock frame back (the split was not made).
    fn give_back(self, splits: &crate::splits::Splits) {
        if let NewPage::Fresh(f) = self {
            splits.return_frame(f);
        }
    }
}

impl Core {
    /// The free list's head `head` as a split's new page, if its page is cached (the one read
    /// the exclusive split would make is not made here) and is a free page: its frame takes
    /// the new page, the page after it on the list becomes the head. Not in the flushless
    /// mode, whose frees wait for their transactions' ends.
    fn reusable(&self, head: PageId) -> Option<NewPage> {
        if self.flushless.is_some() {
            return None;
        }
        let Seen::Resident(frame) = self.cache.pool.seen(head) else {
            return None;
        };
        // Not guarded (not a leaf): changed only with the latch exclusive, or by a splitter
        // under `alloc`, which the caller holds.
        let p = self.cache.pool.data(frame);
        if page::page_type(p) != Some(page::PageType::Free) || page::page_id(p) != head {
            // The exclusive split reads it and reports what is wrong.
            return None;
        }
        Some(NewPage::Reused {
            frame,
            next: meta::free_next(p),
        })
    }
}
