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
        if node::split_pending(&buf)? {
            // Its right sibling would be lost: pending splits are posted before any split with
            // the tree to itself (`splits::settle`).
            return Err(corrupt(pid, "a leaf whose split is pending split again"));
        }
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

/// A leaf split made aside, for a split beside other threads ([`split_beside`]): the leaf's new
/// image and the new right page, built from a copy, so that nothing of the tree changes until
/// the split is logged.
pub struct Aside {
    ps: usize,
    left_pid: PageId,
    /// The leaf's new image.
    pub left: Vec<u8>,
    /// The page operations that made `left` from the leaf, if nothing else changed it (`None`:
    /// log its image; or operations were not asked for).
    pub left_ops: Option<Vec<PageOp>>,
    pub right_pid: PageId,
    /// The new right page's image (`None` until the split allocates it).
    pub right: Option<Vec<u8>>,
    /// The separator the split would have posted to the parent (it stays unposted).
    posted: bool,
}

impl Aside {
    fn page(&mut self, pid: PageId) -> Result<&mut Vec<u8>> {
        if pid == self.left_pid {
            return Ok(&mut self.left);
        }
        match (&mut self.right, pid == self.right_pid) {
            (Some(r), true) => Ok(r),
            _ => Err(corrupt(
                pid,
                "a split made aside reached beyond its two pages",
            )),
        }
    }
}

impl PageStore for Aside {
    fn page_size(&self) -> usize {
        self.ps
    }

    fn read_page<R>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        Ok(f(self.page(pid)?))
    }

    fn write_page<R>(&mut self, pid: PageId, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        if pid == self.left_pid {
            self.left_ops = None;
        }
        Ok(f(self.page(pid)?))
    }

    fn alloc_page(&mut self, kind: crate::page::PageType) -> Result<PageId> {
        if self.right.is_some() {
            return Err(corrupt(self.left_pid, "a leaf split aside allocated twice"));
        }
        let mut p = vec![0; self.ps];
        crate::page::init(&mut p, self.right_pid, kind);
        self.right = Some(p);
        Ok(self.right_pid)
    }

    fn free_page(&mut self, pid: PageId) -> Result<()> {
        Err(corrupt(pid, "a leaf split aside frees no page"))
    }

    fn apply_op(&mut self, pid: PageId, op: PageOp) -> Result<std::result::Result<(), PutError>> {
        if pid != self.left_pid && pid != self.right_pid {
            // The parent: its separator waits (see `split_beside`).
            if !matches!(op, PageOp::InternalInsert { .. }) || self.posted {
                return Err(corrupt(pid, "a leaf split aside changed its parent"));
            }
            self.posted = true;
            return Ok(Ok(()));
        }
        let page = self.page(pid)?;
        match crate::page_op::apply_op(page, &op) {
            Ok(()) => {}
            Err(PutError::NoSpace) => return Ok(Err(PutError::NoSpace)),
            Err(PutError::Corrupt(e)) => return Err(e),
        }
        if pid == self.left_pid {
            if let Some(ops) = &mut self.left_ops {
                ops.push(op);
            }
        }
        Ok(Ok(()))
    }
}

/// Splits a full leaf (its image `leaf`, not the tree's root) for a put of `key` to the inline
/// value `value` that does not fit, aside: the halves [`put`](super::put) would make, `key` in
/// its half (`replaced`: the leaf holds `key` already, with an older value), the new right page
/// `right`; and the leaf's split-pending flag set instead of a separator posted to its parent
/// (node module notes). With `page_ops`, the leaf's new image is also described as page
/// operations where they can.
///
/// The engine logs the result, writes both pages, and posts the separator later with the tree
/// to itself ([`post_split`]). Until then the flag sends every key above the leaf's last key to
/// `right`: `key` included, the upper half's keys, and keys put meanwhile.
pub fn split_beside(
    leaf: &[u8],
    right: PageId,
    (key, value): (&[u8], &[u8]),
    replaced: bool,
    page_ops: bool,
) -> Result<Aside> {
    let left_pid = crate::page::page_id(leaf);
    let mut aside = Aside {
        ps: leaf.len(),
        left_pid,
        left: leaf.to_vec(),
        left_ops: page_ops.then(Vec::new),
        right_pid: right,
        right: None,
        posted: false,
    };
    if node::kind(leaf)? != NodeKind::Leaf || node::split_pending(leaf)? {
        return Err(corrupt(
            left_pid,
            "a split aside of a page that cannot take it",
        ));
    }
    let mut buf = leaf.to_vec();
    if replaced {
        node::leaf_del(&mut buf, key)?;
    }
    // The path as the split sees it: a parent (never read: its change is the one held back)
    // above the leaf.
    let path = Path {
        pids: [NO_PAGE, left_pid].into_iter().collect(),
        idx: [0].into_iter().collect(),
        lower: None,
        pending: false,
    };
    let pending = Pending::Leaf {
        key,
        val: LeafValue::Inline(value),
    };
    insert_with_split(&mut aside, &path, 1, buf, pending, !replaced)?;
    if !aside.posted || aside.right.is_none() {
        return Err(corrupt(left_pid, "a leaf split aside did not split"));
    }
    if !PutError::no_space(aside.apply_op(left_pid, PageOp::SplitPending(true))?)? {
        return Err(corrupt(left_pid, "a split-pending flag did not fit"));
    }
    Ok(aside)
}

/// Posts the separator of the pending split of `leaf` (in the tree rooted at `root`) to the
/// leaf's parent, splitting upward as needed, and clears the leaf's flag. The separator is the
/// shortest key between the leaf's last key and its right sibling's first, as they are now
/// (keys put since the split went to the side their key chose). A leaf whose flag is clear
/// (posted already) is left alone; the leaf must be reachable from its parent, so chained
/// pending splits are posted leftmost first (in the order they were made).
pub fn post_split<S: PageStore>(store: &mut S, root: PageId, leaf: PageId) -> Result<()> {
    // (first key, last key, right sibling) of a leaf whose split is pending.
    type Ends = Option<(Vec<u8>, Vec<u8>, PageId)>;
    let info = store.read_page(leaf, |p| -> Result<Ends> {
        if node::kind(p)? != NodeKind::Leaf || !node::split_pending(p)? {
            return Ok(None);
        }
        let n = node::cell_count(p)?;
        if n == 0 {
            return Err(corrupt(leaf, "a leaf with a pending split is empty"));
        }
        let first = node::key_at(p, 0)?.to_vec();
        let last = node::key_at(p, n - 1)?.to_vec();
        Ok(Some((first, last, node::right_sibling(p)?)))
    })??;
    let Some((first, last, right)) = info else {
        return Ok(());
    };
    let right_first = store.read_page(right, |p| -> Result<Vec<u8>> {
        if node::kind(p)? != NodeKind::Leaf || node::cell_count(p)? == 0 {
            return Err(corrupt(
                right,
                "a pending split's right page is not a leaf with keys",
            ));
        }
        Ok(node::key_at(p, 0)?.to_vec())
    })??;
    if right_first <= last {
        return Err(corrupt(right, "a pending split's halves overlap"));
    }
    let path = super::descend(store, root, super::Target::Le(&first), false)?;
    let level = path.pids.len() - 1;
    let under_parent = level > 0
        && path.leaf() == leaf
        && store.read_page(path.pids[level - 1], |p| {
            node::child_at(p, path.idx[level - 1]).map(|c| c == leaf)
        })??;
    if !under_parent {
        return Err(corrupt(
            leaf,
            "a leaf with a pending split is not under its parent",
        ));
    }
    if !PutError::no_space(store.apply_op(leaf, PageOp::SplitPending(false))?)? {
        return Err(corrupt(leaf, "a split-pending flag did not fit"));
    }
    let sep = node::shortest_separator(&last, &right_first);
    let parent = path.pids[level - 1];
    let insert = PageOp::InternalInsert {
        key: sep.clone(),
        child: right,
    };
    if PutError::no_space(store.apply_op(parent, insert)?)? {
        return Ok(());
    }
    let buf = read_copy(store, parent)?;
    let pending = Pending::Internal {
        key: sep,
        child: right,
    };
    insert_with_split(store, &path, level - 1, buf, pending, true)
}

/// Whether the descent for the first key of `leaf` in the tree rooted at `root` ends at `leaf`
/// (links of pending splits followed): recovery's way to tell which tree a leaf whose split is
/// pending belongs to.
pub fn leads_to<S: PageStore>(store: &mut S, root: PageId, leaf: PageId) -> Result<bool> {
    let first = store.read_page(leaf, |p| -> Result<Option<Vec<u8>>> {
        if node::kind(p)? != NodeKind::Leaf || node::cell_count(p)? == 0 {
            return Ok(None);
        }
        Ok(Some(node::key_at(p, 0)?.to_vec()))
    })??;
    let Some(first) = first else {
        return Ok(false);
    };
    Ok(super::descend(store, root, super::Target::Le(&first), false)?.leaf() == leaf)
}
