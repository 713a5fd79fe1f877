//! B+tree algorithms over any [`PageStore`]: lookups, inserts with leaf and internal splits,
//! deletes with merges and root collapse, bounded scans in both directions, an invariant checker,
//! and freeing a whole tree.
//!
//! The root page id never changes. A root split moves the root's contents into two new pages and
//! makes the root an internal node above them; when the root is internal with a single child,
//! the child's contents are copied into the root and the child freed.
//!
//! Forward scans follow the leaves' right-sibling links. Reverse scans need no left links: after
//! finishing a leaf they descend again from the root to the leaf holding the keys just below the
//! current leaf's lower bound (the separator that led to it).
//!
//! Deletes merge a node that fell below a quarter full with an adjacent sibling under the same
//! parent (left first, then right) when both fit in one page, recursively upward. There is no
//! redistribution, so a node may stay under-full (even an internal node with a single child) when
//! its siblings are too full; it merges later, once they shrink.

use super::node::{self, LeafValue, NodeKind, PutError, Search};
use super::overflow;
use super::PageStore;
use crate::error::{Error, Result};
use crate::page::{self, PageId, NO_PAGE, PAGE_HEADER_BYTES};
use smallvec::SmallVec;
use std::collections::HashSet;

mod append;
mod delete;
pub mod plain;
mod scan;
mod split;

pub use append::{append, appendable, empty_last_leaf_fence};
pub use delete::{delete, delete_keeping_shape, merge_underfull};
pub use scan::{scan, Reach, ScanSink};
pub use split::{leads_to, post_split, split_beside};

use split::{insert_with_split, Pending};

/// Deepest tree accepted; deeper means a corrupt tree (e.g. a cycle of child links).
const MAX_DEPTH: usize = 64;

/// What `put` / `delete` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The previous value of the key.
    pub old: Option<Vec<u8>>,
    /// Set when the operation was a simple leaf change: exactly this leaf was modified in place,
    /// with an inline value (old and new), and no other page was written, allocated or freed.
    /// The engine can then log `Redo::LeafPut` / `Redo::LeafDel` on it instead of page images.
    pub leaf: Option<PageId>,
}

/// Counts returned by [`check`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeStats {
    pub keys: u64,
    pub leaves: u64,
    pub internals: u64,
    pub overflow_pages: u64,
    /// Levels: 1 for a tree that is a single leaf.
    pub depth: u32,
}

/// A leaf value copied out of its page.
#[derive(Debug, Clone)]
enum Stored {
    Inline(Vec<u8>),
    Overflow { total_len: u32, first: PageId },
}

impl Stored {
    fn from(v: LeafValue<'_>) -> Stored {
        match v {
            LeafValue::Inline(b) => Stored::Inline(b.to_vec()),
            LeafValue::Overflow { total_len, first } => Stored::Overflow { total_len, first },
        }
    }
    fn into_value<S: PageStore>(self, store: &mut S) -> Result<Vec<u8>> {
        match self {
            Stored::Inline(v) => Ok(v),
            Stored::Overflow { total_len, first } => overflow::read_chain(store, first, total_len),
        }
    }
    fn free<S: PageStore>(&self, store: &mut S) -> Result<()> {
        match *self {
            Stored::Inline(_) => Ok(()),
            Stored::Overflow { total_len, first } => overflow::free_chain(store, first, total_len),
        }
    }
}

fn corrupt(pid: PageId, reason: &'static str) -> Error {
    Error::CorruptPage { pid, reason }
}

fn read_copy<S: PageStore>(store: &mut S, pid: PageId) -> Result<Vec<u8>> {
    store.read_page(pid, |p| p.to_vec())
}

/// Copies the node in `buf` (page type and body) into page `pid`, keeping its page header.
fn write_body<S: PageStore>(store: &mut S, pid: PageId, buf: &[u8]) -> Result<()> {
    let kind = node::kind(buf)?;
    store.write_page(pid, |p| {
        page::set_page_type(p, kind.page_type());
        p[PAGE_HEADER_BYTES..].copy_from_slice(&buf[PAGE_HEADER_BYTES..]);
    })
}

/// A scratch page for `pid`: page header set, body an empty node of `kind`.
fn scratch(page_size: usize, pid: PageId, kind: NodeKind, link: PageId) -> Vec<u8> {
    let mut v = vec![0; page_size];
    page::init(&mut v, pid, kind.page_type());
    node::init(&mut v, kind, link);
    v
}

fn find_stored(page: &[u8], key: &[u8]) -> Result<Option<Stored>> {
    find_stored_at(page, node::search(page, key)?)
}

/// [`find_stored`] where the page was searched for the key already (`at`).
fn find_stored_at(page: &[u8], at: Search) -> Result<Option<Stored>> {
    match at {
        Search::Found(i) => Ok(Some(Stored::from(node::leaf_cell_at(page, i)?.1))),
        Search::NotFound(_) => Ok(None),
    }
}

#[derive(Clone, Copy)]
enum Target<'a> {
    First,
    Last,
    /// The leaf whose range holds the key.
    Le(&'a [u8]),
    /// The leaf holding the largest keys below the key.
    Lt(&'a [u8]),
}

/// A root-to-leaf path.
struct Path {
    /// Root first, leaf last. Inline up to `PATH_CAPACITY` levels: a descent per operation
    /// would otherwise allocate twice.
    pids: SmallVec<[PageId; PATH_CAPACITY]>,
    /// `idx[i]`: index of the child of `pids[i]` that is `pids[i + 1]`.
    idx: SmallVec<[usize; PATH_CAPACITY]>,
    /// The leaf's lower bound (the deepest separator left of the path), if tracked and any.
    lower: Option<Vec<u8>>,
    /// The leaf's split was pending when the descent read it. A leaf not pending then that is
    /// pending when read again was split beside meanwhile (a flagged leaf splits only alone).
    pending: bool,
}

impl Path {
    fn leaf(&self) -> PageId {
        *self.pids.last().expect("a path holds the root")
    }
}

/// Levels a path is allocated for at once (deeper trees grow it).
const PATH_CAPACITY: usize = 8;

/// One step down: (child index, child, the separator left of it if tracked); or at a leaf,
/// whether its split is pending.
type Step = std::result::Result<(usize, PageId, Option<Vec<u8>>), bool>;

fn descend<S: PageStore>(
    store: &mut S,
    root: PageId,
    target: Target<'_>,
    track_lower: bool,
) -> Result<Path> {
    descend_fenced(store, root, target, track_lower, None)
}

/// [`descend`], also noting in `fences` (if given) the leaf reached and the key range that leads
/// to it: the deepest separators left and right of the path.
fn descend_fenced<S: PageStore>(
    store: &mut S,
    root: PageId,
    target: Target<'_>,
    track_lower: bool,
    mut fences: Option<&mut LeafRange>,
) -> Result<Path> {
    if let Some(f) = fences.as_deref_mut() {
        f.clear();
    }
    let mut pids = SmallVec::new();
    pids.push(root);
    let mut path = Path {
        pids,
        idx: SmallVec::new(),
        lower: None,
        pending: false,
    };
    let mut pid = root;
    loop {
        let step = store.read_node(pid, |p, hints| -> Result<Step> {
            if node::kind(p)? == NodeKind::Leaf {
                return Ok(Err(node::split_pending_unchecked(p)));
            }
            let c = match target {
                Target::First => 0,
                Target::Last => node::cell_count(p)?,
                Target::Le(k) => match hints {
                    Some(h) => h.child_le(p, k)?.0,
                    None => node::child_index_le(p, k)?,
                },
                Target::Lt(k) => node::child_index_lt(p, k)?,
            };
            let lower = if track_lower && c > 0 {
                Some(node::key_at(p, c - 1)?.to_vec())
            } else {
                None
            };
            if let Some(f) = fences.as_deref_mut() {
                // Child `c` holds the keys from separator `c - 1` (inclusive) up to separator
                // `c` (exclusive); a deeper level narrows what a shallower one set.
                if c > 0 {
                    f.lo.clear();
                    f.lo.extend_from_slice(node::key_at(p, c - 1)?);
                    f.has_lo = true;
                }
                if c < node::cell_count(p)? {
                    f.hi.clear();
                    f.hi.extend_from_slice(node::key_at(p, c)?);
                    f.has_hi = true;
                }
            }
            Ok(Ok((c, node::child_at(p, c)?, lower)))
        })??;
        let (c, child, lower) = match step {
            Ok(inner) => inner,
            Err(false) => {
                if let Some(f) = fences {
                    f.leaf = pid;
                }
                return Ok(path);
            }
            Err(true) => {
                // A leaf whose split is pending: it, and a leaf reached through its link, hold
                // less than the separators above them say.
                if let Some(f) = fences {
                    f.clear();
                }
                let (leaf, moved, lower, pending) = settle_leaf(store, pid, target)?;
                path.pending = pending;
                if moved {
                    *path.pids.last_mut().expect("a path holds the root") = leaf;
                    if track_lower {
                        path.lower = lower;
                    }
                }
                return Ok(path);
            }
        };
        if path.pids.len() >= MAX_DEPTH || child == NO_PAGE {
            return Err(corrupt(pid, "bad child link (tree too deep or child 0)"));
        }
        if lower.is_some() {
            path.lower = lower;
        }
        path.idx.push(c);
        path.pids.push(child);
        pid = child;
    }
}

/// Links a descent may follow from the leaf its parents lead to: leaves split beside other
/// threads whose separators are not posted yet (see `split::split_beside`). The engine keeps
/// fewer splits pending than this (`splits::MAX_PENDING`).
pub const MAX_PENDING_CHAIN: usize = 128;

/// Whether `key` lies past the last key of the leaf in `p` (or the leaf is empty): in a leaf
/// whose split is pending, such a key belongs to its right sibling (node module notes).
fn past_last(p: &[u8], key: &[u8]) -> Result<bool> {
    let n = node::cell_count(p)?;
    Ok(n == 0 || node::cmp_key(key, node::key_at(p, n - 1)?).is_gt())
}

/// Where a descent for `target` that reached leaf `pid` through its parent ends: on along the
/// links of leaves whose split is pending, while the target lies beyond them. Returns the leaf,
/// whether a link was followed, the first key of the leaf reached (its lower bound for a
/// reverse scan, which goes back to the leaf before with `Target::Lt` of it), and whether that
/// leaf's split is pending.
fn settle_leaf<S: PageStore>(
    store: &mut S,
    mut pid: PageId,
    target: Target<'_>,
) -> Result<(PageId, bool, Option<Vec<u8>>, bool)> {
    let mut moved = false;
    let mut lower = None;
    // A chain of n pending splits is n links: n + 1 leaves to look at.
    for _ in 0..=MAX_PENDING_CHAIN {
        let (pending, next) = store.read_page(pid, |p| -> Result<(bool, Option<PageId>)> {
            if !node::split_pending(p)? {
                return Ok((false, None));
            }
            let go = match target {
                Target::First => false,
                Target::Last | Target::Lt(_) => true,
                Target::Le(k) => past_last(p, k)?,
            };
            Ok((true, go.then(|| node::right_sibling(p)).transpose()?))
        })??;
        let Some(next) = next else {
            return Ok((pid, moved, lower, pending));
        };
        if next == NO_PAGE {
            return Err(corrupt(
                pid,
                "a leaf with a pending split has no right sibling",
            ));
        }
        // The right sibling's keys are all above the leaf's: for `Lt`, go on only if some key
        // of it is below the target.
        let first = store.read_page(next, |p| -> Result<Option<Vec<u8>>> {
            Ok(match node::cell_count(p)? {
                0 => None,
                _ => Some(node::key_at(p, 0)?.to_vec()),
            })
        })??;
        if let Target::Lt(k) = target {
            if first.as_deref().is_none_or(|f| node::cmp_key(f, k).is_ge()) {
                return Ok((pid, moved, lower, true));
            }
        }
        pid = next;
        moved = true;
        lower = first;
    }
    Err(corrupt(pid, "too many pending splits along a leaf chain"))
}

/// A leaf and the keys that lead to it from the root: separators `lo` (inclusive) to `hi`
/// (exclusive), either side open if absent. It stays true for as long as no node of the tree
/// splits, merges or is freed; the caller knows when that may have happened (the engine: not
/// while it holds its core latch shared), and may then go straight to the leaf for a key in the
/// range (see `plain::plan`). Its buffers are kept between uses, so noting a range allocates
/// nothing once they are large enough.
#[derive(Debug, Default)]
pub struct LeafRange {
    /// The leaf; 0 when none is known.
    leaf: PageId,
    lo: Vec<u8>,
    has_lo: bool,
    hi: Vec<u8>,
    has_hi: bool,
}

impl LeafRange {
    /// Forgets the leaf.
    pub fn clear(&mut self) {
        self.leaf = 0;
        self.has_lo = false;
        self.has_hi = false;
    }

    /// The leaf that `key` leads to, if this range holds it.
    pub fn leaf_for(&self, key: &[u8]) -> Option<PageId> {
        let above_lo = !self.has_lo || node::cmp_key(&self.lo, key).is_le();
        let below_hi = !self.has_hi || node::cmp_key(key, &self.hi).is_lt();
        (self.leaf != 0 && above_lo && below_hi).then_some(self.leaf)
    }
}

fn check_key(page_size: usize, key: &[u8]) -> Result<()> {
    let max = node::max_key_len(page_size);
    if key.len() > max {
        return Err(Error::KeyTooLong {
            len: key.len(),
            max,
        });
    }
    Ok(())
}

/// Creates an empty tree (one empty leaf) and returns its root page id.
pub fn create<S: PageStore>(store: &mut S) -> Result<PageId> {
    node::check_page_size(store.page_size())?;
    let pid = store.alloc_page(NodeKind::Leaf.page_type())?;
    store.write_page(pid, |p| node::init(p, NodeKind::Leaf, NO_PAGE))?;
    Ok(pid)
}

/// What [`leaf_place`] finds: whether the key is there, and its neighbours in the leaf.
pub type LeafPlace<'p> = (bool, Option<&'p [u8]>, Option<&'p [u8]>);

/// Where `key` is in leaf page `p`: whether it is there, and the keys just before and after
/// its place in the leaf (`None` at either end of the leaf).
pub fn leaf_place<'p>(p: &'p [u8], key: &[u8]) -> Result<LeafPlace<'p>> {
    let n = node::cell_count(p)?;
    let (found, i) = match node::search(p, key)? {
        Search::Found(i) => (true, i),
        Search::NotFound(i) => (false, i),
    };
    let pred = if i > 0 {
        Some(node::key_at(p, i - 1)?)
    } else {
        None
    };
    let after = if found { i + 1 } else { i };
    let succ = if after < n {
        Some(node::key_at(p, after)?)
    } else {
        None
    };
    Ok((found, pred, succ))
}

/// The value of `key`, if any.
pub fn get<S: PageStore>(store: &mut S, root: PageId, key: &[u8]) -> Result<Option<Vec<u8>>> {
    let mut v = Vec::new();
    Ok(get_to(store, root, key, &mut v)?.then_some(v))
}

/// [`get`] into `out`: whether `key` has a value, and if so the value in `out` (its contents
/// replaced, its capacity reused). `out` is left as it was when the key has no value; after an
/// error its contents are unspecified.
pub fn get_to<S: PageStore>(
    store: &mut S,
    root: PageId,
    key: &[u8],
    out: &mut Vec<u8>,
) -> Result<bool> {
    if key.len() > node::max_key_len(store.page_size()) {
        return Ok(false);
    }
    // Down without recording the path (no allocation), the leaf searched in the same look
    // that finds it is one; an inline value is copied out in that look too.
    let mut pid = root;
    for _ in 0..MAX_DEPTH + MAX_PENDING_CHAIN {
        let step =
            store.read_node(pid, |p, hints| -> Result<std::result::Result<PageId, _>> {
                if node::kind(p)? == NodeKind::Leaf {
                    if node::split_pending_unchecked(p) && past_last(p, key)? {
                        // On to the right sibling of a pending split (node module notes).
                        return Ok(Ok(node::right_sibling(p)?));
                    }
                    return Ok(Err(match node::search(p, key)? {
                        Search::Found(i) => match node::leaf_cell_at(p, i)?.1 {
                            LeafValue::Inline(b) => {
                                out.clear();
                                out.extend_from_slice(b);
                                Some(None)
                            }
                            LeafValue::Overflow { total_len, first } => {
                                Some(Some((total_len, first)))
                            }
                        },
                        Search::NotFound(_) => None,
                    }));
                }
                Ok(Ok(match hints {
                    Some(h) => h.child_le(p, key)?.1,
                    None => node::child_at(p, node::child_index_le(p, key)?)?,
                }))
            })??;
        match step {
            Ok(NO_PAGE) => break,
            Ok(child) => pid = child,
            Err(Some(None)) => return Ok(true),
            Err(Some(Some((total_len, first)))) => {
                out.clear();
                out.reserve(total_len as usize);
                overflow::read_chain_into(store, first, total_len, out)?;
                return Ok(true);
            }
            Err(None) => return Ok(false),
        }
    }
    Err(corrupt(pid, "bad child link (tree too deep or child 0)"))
}

/// Sets `key` to `value`, returning the old value. Keys are at most page size / 8 bytes; values
/// larger than the inline limit go to an overflow chain (a replaced chain is freed).
pub fn put<S: PageStore>(store: &mut S, root: PageId, key: &[u8], value: &[u8]) -> Result<Outcome> {
    let ps = store.page_size();
    check_key(ps, key)?;
    if value.len() > u32::MAX as usize {
        return Err(Error::ValueTooLong {
            len: value.len(),
            max: u32::MAX as usize,
        });
    }
    let path = descend(store, root, Target::Le(key), false)?;
    let leaf = path.leaf();
    let inline = value.len() <= node::max_inline_value(ps, key.len());
    // Whether the new cell fits, found in the same look as the old value: a full leaf is then
    // left untouched for the split, which may log it as an operation rather than its image.
    let probe = if inline {
        LeafValue::Inline(value)
    } else {
        LeafValue::Overflow {
            total_len: 0,
            first: NO_PAGE,
        }
    };
    let (old, fits) = store.read_page(leaf, |p| -> Result<_> {
        Ok((find_stored(p, key)?, node::leaf_value_fits(p, key, probe)?))
    })??;
    let old_value = match &old {
        Some(s) => Some(s.clone().into_value(store)?),
        None => None,
    };
    let val = if inline {
        LeafValue::Inline(value)
    } else {
        LeafValue::Overflow {
            total_len: value.len() as u32,
            first: overflow::write_chain(store, value)?,
        }
    };
    let mut simple = inline && !matches!(old, Some(Stored::Overflow { .. }));
    if fits && !PutError::no_space(store.write_page(leaf, |p| node::leaf_put(p, key, val))?)? {
        return Err(corrupt(leaf, "a leaf change that fits was refused"));
    }
    if !fits {
        simple = false;
        let mut buf = read_copy(store, leaf)?;
        node::leaf_del(&mut buf, key)?;
        let level = path.pids.len() - 1;
        // A new key: the leaf holds exactly `buf`, so its left half can be logged as an
        // operation on it. A replaced key is still in the leaf (it is not in `buf`).
        let in_sync = old.is_none();
        insert_with_split(
            store,
            &path,
            level,
            buf,
            Pending::Leaf { key, val },
            in_sync,
        )?;
    }
    if let Some(s) = &old {
        s.free(store)?;
    }
    Ok(Outcome {
        old: old_value,
        leaf: simple.then_some(leaf),
    })
}

struct Checker {
    page_size: usize,
    stats: TreeStats,
    seen: HashSet<PageId>,
    leaf_depth: Option<u32>,
    /// (leaf, its right sibling), in key order.
    leaves: Vec<(PageId, PageId)>,
}

/// Verifies the tree's invariants: every node well formed, keys sorted within nodes and bounded
/// by the separators above them, all leaves at the same depth, the sibling chain linking the
/// leaves in key order, overflow chains well formed, no page reachable twice.
pub fn check<S: PageStore>(store: &mut S, root: PageId) -> Result<TreeStats> {
    let mut cx = Checker {
        page_size: store.page_size(),
        stats: TreeStats::default(),
        seen: HashSet::new(),
        leaf_depth: None,
        leaves: Vec::new(),
    };
    check_node(store, root, None, None, 1, &mut cx)?;
    for w in cx.leaves.windows(2) {
        if w[0].1 != w[1].0 {
            return Err(corrupt(w[0].0, "right sibling is not the next leaf"));
        }
    }
    if let Some(&(pid, next)) = cx.leaves.last() {
        if next != NO_PAGE {
            return Err(corrupt(pid, "last leaf has a right sibling"));
        }
    }
    cx.stats.depth = cx.leaf_depth.unwrap_or(0);
    Ok(cx.stats)
}

fn check_node<S: PageStore>(
    store: &mut S,
    pid: PageId,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
    depth: u32,
    cx: &mut Checker,
) -> Result<()> {
    if depth as usize > MAX_DEPTH {
        return Err(corrupt(pid, "tree too deep"));
    }
    if pid == NO_PAGE || !cx.seen.insert(pid) {
        return Err(corrupt(pid, "page reachable twice (or page 0)"));
    }
    let buf = read_copy(store, pid)?;
    if page::page_id(&buf) != pid {
        return Err(corrupt(pid, "page id in the header does not match"));
    }
    node::validate(&buf)?;
    let n = node::cell_count(&buf)?;
    for i in 0..n {
        let k = node::key_at(&buf, i)?;
        if k.len() > node::max_key_len(cx.page_size) {
            return Err(corrupt(pid, "key longer than the limit"));
        }
        if lo.is_some_and(|lo| k < lo) || hi.is_some_and(|hi| k >= hi) {
            return Err(corrupt(pid, "key outside its parent's separators"));
        }
    }
    match node::kind(&buf)? {
        NodeKind::Leaf => {
            if *cx.leaf_depth.get_or_insert(depth) != depth {
                return Err(corrupt(pid, "leaves at different depths"));
            }
            for (k, v) in node::leaf_entries(&buf)? {
                let max_inline = node::max_inline_value(cx.page_size, k.len());
                match v {
                    LeafValue::Inline(v) if v.len() > max_inline => {
                        return Err(corrupt(pid, "inline value over the inline limit"));
                    }
                    LeafValue::Inline(_) => {}
                    LeafValue::Overflow { total_len, first } => {
                        if total_len as usize <= max_inline {
                            return Err(corrupt(pid, "overflow value under the inline limit"));
                        }
                        for op in overflow::chain_pages(store, first, total_len)? {
                            if !cx.seen.insert(op) {
                                return Err(corrupt(op, "overflow page reachable twice"));
                            }
                            cx.stats.overflow_pages += 1;
                        }
                    }
                }
            }
            cx.stats.leaves += 1;
            cx.stats.keys += n as u64;
            cx.leaves.push((pid, node::right_sibling(&buf)?));
        }
        NodeKind::Internal => {
            if depth == 1 && n == 0 {
                return Err(corrupt(pid, "root is internal with a single child"));
            }
            cx.stats.internals += 1;
            let (leftmost, cells) = node::internal_entries(&buf)?;
            let mut child_lo = lo;
            let mut child = leftmost;
            for &(key, next) in &cells {
                check_node(store, child, child_lo, Some(key), depth + 1, cx)?;
                child_lo = Some(key);
                child = next;
            }
            check_node(store, child, child_lo, hi, depth + 1, cx)?;
        }
    }
    Ok(())
}

#[cfg(test)]
/// Frees every page below `pid` (children and overflow chains), not `pid` itself.
fn free_below<S: PageStore>(store: &mut S, pid: PageId, depth: usize) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(corrupt(pid, "tree too deep"));
    }
    let buf = read_copy(store, pid)?;
    match node::kind(&buf)? {
        NodeKind::Leaf => {
            for (_, v) in node::leaf_entries(&buf)? {
                Stored::from(v).free(store)?;
            }
        }
        NodeKind::Internal => {
            let (leftmost, cells) = node::internal_entries(&buf)?;
            for child in std::iter::once(leftmost).chain(cells.iter().map(|c| c.1)) {
                free_below(store, child, depth + 1)?;
                store.free_page(child)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
/// Removes every key: frees all pages but the root, which becomes an empty leaf.
pub fn clear<S: PageStore>(store: &mut S, root: PageId) -> Result<()> {
    free_below(store, root, 1)?;
    store.write_page(root, |p| node::init(p, NodeKind::Leaf, NO_PAGE))
}

#[cfg(test)]
/// Frees every page of the tree, the root included.
pub fn destroy<S: PageStore>(store: &mut S, root: PageId) -> Result<()> {
    free_below(store, root, 1)?;
    store.free_page(root)
}
