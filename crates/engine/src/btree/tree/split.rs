//! Splitting a full node: the left half kept in place (as a page operation where one describes
//! it), the right half on a new page, the separator into the parent, upward as far as needed.

use super::{corrupt, read_copy, scratch, write_body, Path};
use crate::btree::node::{self, LeafValue, NodeKind, PutError, Search};
use crate::btree::PageStore;
use crate::error::Result;
use crate::page::{PageId, NO_PAGE, PAGE_HEADER_BYTES};
use crate::page_op::PageOp;

/// A cell waiting to be inserted into a full node.
pub(super) enum Pending<'a> {
    Leaf { key: &'a [u8], val: LeafValue<'a> },
    Internal { key: Vec<u8>, child: PageId },
}

impl Pending<'_> {
    fn key(&self) -> &[u8] {
        match self {
            Pending::Leaf { key, .. } => key,
            Pending::Internal { key, .. } => key,
        }
    }
    fn insert_into(&self, page: &mut [u8]) -> std::result::Result<(), PutError> {
        match self {
            Pending::Leaf { key, val } => node::leaf_put(page, key, *val),
            Pending::Internal { key, child } => node::internal_insert(page, key, *child),
        }
    }
}

/// Splits the full node `path.pids[level]` (its current contents in `buf`, without `pending`),
/// inserts `pending` into the proper half and the new separator into the parent, splitting
/// upward as needed. A root split keeps the root page id. `in_sync`: the node's page holds
/// exactly `buf` (true above the leaf level), so a left half that is `buf` cut short or
/// relinked is made by a [`PageOp`] on the page, which the store may log instead of its image.
pub(super) fn insert_with_split<S: PageStore>(
    store: &mut S,
    path: &Path,
    mut level: usize,
    mut buf: Vec<u8>,
    mut pending: Pending<'_>,
    mut in_sync: bool,
) -> Result<()> {
    let ps = store.page_size();
    loop {
        let pid = path.pids[level];
        let kind = node::kind(&buf)?;
        let is_root = level == 0;
        let left_pid = if is_root {
            store.alloc_page(kind.page_type())?
        } else {
            pid
        };
        let right_pid = store.alloc_page(kind.page_type())?;
        let fresh = |buf: &[u8]| {
            let mut left = scratch(ps, left_pid, kind, NO_PAGE);
            left[PAGE_HEADER_BYTES..].copy_from_slice(&buf[PAGE_HEADER_BYTES..]);
            (left, scratch(ps, right_pid, kind, NO_PAGE))
        };
        let (mut left, mut right) = fresh(&buf);
        let n = node::cell_count(&left)?;
        // Appending past the last key of the rightmost leaf (sequential inserts): leave the
        // left leaf full and start an empty right one.
        let append = kind == NodeKind::Leaf
            && n > 0
            && node::right_sibling(&left)? == NO_PAGE
            && node::search(&left, pending.key())? == Search::NotFound(n);
        // The left half as an operation on the page, where one describes it.
        let mut left_op = None;
        let sep = if append {
            left_op = Some(PageOp::SetLink(right_pid));
            node::link_new_right_leaf(&mut left, &mut right)?;
            let sep = node::shortest_separator(node::key_at(&left, n - 1)?, pending.key());
            if !PutError::no_space(pending.insert_into(&mut right))? {
                return Err(corrupt(pid, "no room for a cell after a split"));
            }
            sep
        } else {
            // The byte-balanced split point first, then its neighbours, until the pending cell
            // fits in its half (large cells can make the balanced point the wrong one).
            let base = node::split_point(&left)?;
            let (lo, hi) = match kind {
                NodeKind::Leaf => (1, n.saturating_sub(1)),
                NodeKind::Internal => (1, n.saturating_sub(2)),
            };
            let mut found = None;
            'search: for d in 0..n.max(1) {
                for at in [base.checked_sub(d), base.checked_add(d)] {
                    let Some(at) = at.filter(|a| (lo..=hi).contains(a)) else {
                        continue;
                    };
                    if d == 0 && at != base {
                        continue;
                    }
                    let (mut l, mut r) = fresh(&buf);
                    let sep = node::split(&mut l, &mut r, at)?;
                    let went_left = pending.key() < sep.as_slice();
                    let half = if went_left { &mut l } else { &mut r };
                    if PutError::no_space(pending.insert_into(half))? {
                        if !went_left {
                            let link = match kind {
                                NodeKind::Leaf => right_pid,
                                NodeKind::Internal => node::link(&buf)?,
                            };
                            left_op = Some(PageOp::Truncate {
                                keep: at as u32,
                                link,
                            });
                        }
                        found = Some((l, r, sep));
                        break 'search;
                    }
                }
            }
            let Some((l, r, sep)) = found else {
                return Err(corrupt(pid, "no room for a cell after a split"));
            };
            left = l;
            right = r;
            sep
        };
        match left_op.filter(|_| in_sync && !is_root) {
            Some(op) => {
                if !PutError::no_space(store.apply_op(left_pid, op)?)? {
                    return Err(corrupt(pid, "a split's left half does not fit its page"));
                }
                debug_assert!(
                    store.read_page(left_pid, |p| p[PAGE_HEADER_BYTES..]
                        == left[PAGE_HEADER_BYTES..])?,
                    "the left half made by an operation differs from the one built aside"
                );
            }
            None => write_body(store, left_pid, &left)?,
        }
        write_body(store, right_pid, &right)?;
        if is_root {
            let mut r = scratch(ps, pid, NodeKind::Internal, left_pid);
            if !PutError::no_space(node::internal_insert(&mut r, &sep, right_pid))? {
                return Err(corrupt(pid, "separator does not fit in a new root"));
            }
            return write_body(store, pid, &r);
        }
        let parent = path.pids[level - 1];
        let insert = PageOp::InternalInsert {
            key: sep.clone(),
            child: right_pid,
        };
        if PutError::no_space(store.apply_op(parent, insert)?)? {
            return Ok(());
        }
        // The parent is full and unchanged: it holds exactly what is copied here.
        in_sync = true;
        buf = read_copy(store, parent)?;
        pending = Pending::Internal {
            key: sep,
            child: right_pid,
        };
        level -= 1;
    }
}
