//! Plain leaf changes: a put or delete that changes one leaf in place and no other page (no
//! split, merge, root collapse or overflow chain). [`plan`] finds out by reading alone whether
//! an operation is plain, before anything is written; [`apply`] then makes the change, which
//! cannot fail for want of space. The engine runs plain changes beside other writers with only
//! the leaf latched (see `read_shared.rs`): it plans, logs the change, then applies it; an
//! operation that is not plain runs again with the tree to itself.
//!
//! A plain change reads and writes the same pages, as many times, as [`super::put`] and
//! [`super::delete`] do for the same change, so the buffer pool counts the same hits either
//! way.

use super::{check_key, corrupt, descend, find_stored, Stored, Target};
use crate::btree::node::{self, LeafValue, NodeKind, PutError};
use crate::btree::PageStore;
use crate::error::Result;
use crate::page::PageId;

/// What a plain change does.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// Nothing (the delete of a key that is not there).
    Nothing,
    /// Changes `key` in `leaf`, whose value was `old`.
    Change { leaf: PageId, old: Option<Vec<u8>> },
}

/// The plain change that sets `key` to `value` (a put) or, for `None`, deletes it; `Ok(None)`
/// if the operation is not plain. Changes nothing. Errors are those of [`super::put`] and
/// [`super::delete`] for the same key and value.
pub fn plan<S: PageStore>(
    store: &mut S,
    root: PageId,
    key: &[u8],
    value: Option<&[u8]>,
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
    let path = descend(store, root, Target::Le(key), false)?;
    let leaf = path.leaf();
    // The leaf is looked at once here, as `put` and `delete` look for the old value.
    let found = store.read_page(leaf, |p| -> Result<Option<Option<Vec<u8>>>> {
        let old = match find_stored(p, key)? {
            Some(Stored::Overflow { .. }) => return Ok(None),
            Some(Stored::Inline(v)) => Some(v),
            None => None,
        };
        match value {
            Some(v) if !node::leaf_put_fits(p, key, v.len())? => Ok(None),
            _ => Ok(Some(old)),
        }
    })??;
    let Some(old) = found else {
        return Ok(None);
    };
    if value.is_none() {
        if old.is_none() {
            return Ok(Some(Plan::Nothing));
        }
        // What `delete` looks at after the change, looked at before it: a leaf below the root
        // left under-full would be merged, an internal root without keys collapsed.
        if path.pids.len() > 1 && store.read_page(leaf, |p| node::underfull_after_del(p, key))?? {
            return Ok(None);
        }
        let collapses = store.read_page(root, |p| -> Result<bool> {
            Ok(node::kind(p)? == NodeKind::Internal && node::cell_count(p)? == 0)
        })??;
        if collapses {
            return Ok(None);
        }
    }
    Ok(Some(Plan::Change { leaf, old }))
}

/// Makes the change [`plan`] found plain (`leaf` and the other pages on the way to it unchanged
/// since): `key` set to `value` in `leaf`, or removed for None. A failure here means a corrupt
/// page.
pub fn apply<S: PageStore>(
    store: &mut S,
    leaf: PageId,
    key: &[u8],
    value: Option<&[u8]>,
) -> Result<()> {
    let done = match value {
        Some(v) => store.write_page(leaf, |p| {
            PutError::no_space(node::leaf_put(p, key, LeafValue::Inline(v)))
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
