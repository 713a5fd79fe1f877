//! Plain leaf changes: a put or delete that changes one leaf in place and no other page (no
//! split, merge, root collapse or overflow chain). [`plan`] finds out by reading alone whether
//! an operation is plain, before anything is written; [`apply`] then makes the change, which
//! cannot fail for want of space. The engine runs plain changes beside other writers with only
//! the leaf latched (see `read_shared.rs`): it plans, logs the change, then applies it; an
//! operation that is not plain runs again with the tree to itself.
//!
//! A plain change reads and writes the same pages, as many times, as [`super::put`] and
//! [`super::delete`] do for the same change, so the buffer pool counts the same hits either
//! way; except a put that [`plan`] sends straight to its leaf through a [`super::LeafRange`]
//! noted before, which reads only the leaf.

use super::{check_key, corrupt, descend_fenced, find_stored_at, LeafRange, Stored, Target};
use crate::btree::node::{self, LeafValue, NodeKind, PutError, Search};
use crate::btree::PageStore;
use crate::error::Result;
use crate::page::PageId;

/// What a plain change does.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// Nothing (the delete of a key that is not there).
    Nothing,
    /// Changes `key` in `leaf`, whose value was `old`; `at` is where the search of the leaf
    /// found the key (or its place), for [`apply`] while the leaf stays as it was.
    Change {
        leaf: PageId,
        old: Option<Vec<u8>>,
        at: Search,
        /// A delete that leaves the leaf under-full (planned with [`Underfull::Allow`]): the
        /// merge a delete with the tree to itself makes is the caller's to make later.
        underfull: bool,
    },
    /// A put of an inline value into `leaf` (whose value of the key was `old`) that does not
    /// fit: the leaf must split. It is not the root and its split is not pending, so it may
    /// split beside other threads ([`super::split_beside`]); else the plan is `None`.
    Full { leaf: PageId, old: Option<Vec<u8>> },
}

/// What [`plan`] makes of a delete that would leave its leaf (below the root) under a
/// quarter full, which [`super::delete`] merges with a sibling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Underfull {
    /// Not plain (the delete runs with the tree to itself and merges).
    Refuse,
    /// Plain, the plan saying so (`Plan::Change::underfull`): the merge is left for later, or
    /// not made at all (a rollback's delete keeps the shape, as [`super::delete_keeping_shape`]).
    /// Not the delete of a leaf's last key, which stays not plain.
    Allow,
}

/// The plain change that sets `key` to `value` (a put) or, for `None`, deletes it; `Ok(None)`
/// if the operation is not plain. Changes nothing. Errors are those of [`super::put`] and
/// [`super::delete`] for the same key and value.
///
/// `range` is noted as the leaf the descent reached and its key range. With `reuse`, a put of a
/// key in `range` as given goes to its leaf without descending (the caller vouches that no node
/// of the tree split, merged or was freed since the range was noted): a run of puts into one
/// leaf, as a sequential load makes, descends once per leaf rather than once per key. The
/// pages above the leaf are then not read (nor counted as hits).
pub fn plan<S: PageStore>(
    store: &mut S,
    root: PageId,
    key: &[u8],
    value: Option<&[u8]>,
    range: &mut LeafRange,
    reuse: bool,
    underfull: Underfull,
) -> Result<Option<Plan>> {
    let ps = store.page_size();
    match value {
        Some(_) => check_key(ps, key)?,
        // A key that long was never stored: its delete does nothing.
        None if key.len() > node::max_key_len(ps) => return Ok(Some(Plan::Nothing)),
        None => {}
    }
    if value.is_some_and(|v| v.len() > node::max_inline_value(ps, key.len())) {
        // An overflow chain.
        return Ok(None);
    }
    let mut known = match value {
        Some(_) if reuse => range.leaf_for(key),
        _ => None,
    };
    loop {
        let (leaf, depth) = match known {
            // A put does not need the path above the leaf.
            Some(leaf) => (leaf, None),
            None => {
                let path = descend_fenced(store, root, Target::Le(key), false, Some(range))?;
                (path.leaf(), Some(path.pids.len()))
            }
        };
        // The leaf is looked at once here, as `put` and `delete` look for the old value: one
        // search finds the old value, tells whether the new one fits, and is where `apply`
        // makes the change.
        let found = store.read_page(leaf, |p| -> Result<Look> {
            // A page that is not a leaf fails the search just below.
            let pending = node::split_pending_unchecked(p);
            if pending && known.is_some() {
                // Split since the range was noted: it holds no more.
                return Ok(Look::Descend);
            }
            let at = node::search(p, key)?;
            let old = match find_stored_at(p, at)? {
                Some(Stored::Overflow { .. }) => return Ok(Look::NotPlain),
                Some(Stored::Inline(v)) => Some(v),
                None => None,
            };
            match value {
                Some(v) if !node::leaf_put_fits_at(p, key, v.len(), at)? => {
                    // A split: beside other threads only of a leaf that is not the root (a
                    // root split keeps the root's id) and not split already.
                    let splits = !pending && leaf != root;
                    Ok(if splits {
                        Look::Full(old)
                    } else {
                        Look::NotPlain
                    })
                }
                _ => Ok(Look::Plain(old, at)),
            }
        })??;
        let (old, at) = match found {
            Look::Descend => {
                range.clear();
                known = None;
                continue;
            }
            Look::NotPlain => return Ok(None),
            Look::Full(old) => return Ok(Some(Plan::Full { leaf, old })),
            Look::Plain(old, at) => (old, at),
        };
        return finish_plan(
            store,
            root,
            (key, value),
            (leaf, depth),
            (old, at),
            underfull,
        );
    }
}

/// What [`plan`] found in the leaf.
enum Look {
    /// The leaf's split is pending and the noted range led to it: descend instead.
    Descend,
    NotPlain,
    /// A put that does not fit: the old value, if any.
    Full(Option<Vec<u8>>),
    /// The old value and where the key is (or goes).
    Plain(Option<Vec<u8>>, Search),
}

/// The rest of [`plan`] once the leaf holds the change: a delete looked at as `delete` would.
fn finish_plan<S: PageStore>(
    store: &mut S,
    root: PageId,
    (key, value): (&[u8], Option<&[u8]>),
    (leaf, depth): (PageId, Option<usize>),
    (old, at): (Option<Vec<u8>>, Search),
    allow: Underfull,
) -> Result<Option<Plan>> {
    let mut underfull = false;
    if value.is_none() {
        if old.is_none() {
            return Ok(Some(Plan::Nothing));
        }
        // What `delete` looks at after the change, looked at before it: a leaf below the root
        // left under-full would be merged, an internal root without keys collapsed.
        let below_root = depth.expect("a delete descends") > 1;
        if below_root && store.read_page(leaf, |p| node::underfull_after_del(p, key))?? {
            // Never emptied beside others: the posting of a pending split needs keys in both
            // of its halves, and a leaf may be either without saying so.
            let last_key = store.read_page(leaf, |p| node::cell_count(p).map(|n| n <= 1))??;
            if allow == Underfull::Refuse || last_key {
                return Ok(None);
            }
            underfull = true;
        }
        let collapses = store.read_page(root, |p| -> Result<bool> {
            Ok(node::kind(p)? == NodeKind::Internal && node::cell_count(p)? == 0)
        })??;
        if collapses {
            return Ok(None);
        }
    }
    Ok(Some(Plan::Change {
        leaf,
        old,
        at,
        underfull,
    }))
}

/// Makes the change [`plan`] found plain (`leaf` and the other pages on the way to it unchanged
/// since; `at` the plan's search of the leaf): `key` set to `value` in `leaf`, or removed for
/// None. A failure here means a corrupt page.
pub fn apply<S: PageStore>(
    store: &mut S,
    leaf: PageId,
    key: &[u8],
    value: Option<&[u8]>,
    at: Search,
) -> Result<()> {
    let done = match value {
        Some(v) => store.write_page(leaf, |p| {
            PutError::no_space(node::leaf_put_at(p, key, LeafValue::Inline(v), at))
        })??,
        None => store.write_page(leaf, |p| node::leaf_del(p, key))??,
    };
    if !done {
        return Err(corrupt(
            leaf,
            "a plain leaf change did not fit (space accounting)",
        ));
    }
    Ok(())
}
