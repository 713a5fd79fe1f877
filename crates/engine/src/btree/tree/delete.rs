//! Deletes: a key removed from its leaf, then under-full nodes merged with a sibling bottom-up
//! and the root collapsed ([`delete`]); or the shape kept ([`delete_keeping_shape`], a
//! rollback's); or the merge a plain delete beside other threads left for later, made on its
//! own ([`merge_underfull`]).

use super::{corrupt, descend, find_stored, read_copy, write_body, Outcome, Path, Stored, Target};
use super::{PageStore, MAX_DEPTH};
use crate::btree::node::{self, NodeKind, PutError};
use crate::error::Result;
use crate::page::{PageId, NO_PAGE};

/// Removes `key`, returning its old value; merges under-full nodes and collapses the root.
pub fn delete<S: PageStore>(store: &mut S, root: PageId, key: &[u8]) -> Result<Outcome> {
    delete_inner(store, root, key, true)
}

/// Removes `key` without merging under-full nodes (they merge at a later delete): the delete a
/// rollback does, which must not need more log space than the change it undoes.
pub fn delete_keeping_shape<S: PageStore>(
    store: &mut S,
    root: PageId,
    key: &[u8],
) -> Result<Outcome> {
    delete_inner(store, root, key, false)
}

fn delete_inner<S: PageStore>(
    store: &mut S,
    root: PageId,
    key: &[u8],
    merge: bool,
) -> Result<Outcome> {
    if key.len() > node::max_key_len(store.page_size()) {
        return Ok(Outcome::default());
    }
    let path = descend(store, root, Target::Le(key), false)?;
    let leaf = path.leaf();
    let Some(old) = store.read_page(leaf, |p| find_stored(p, key))?? else {
        return Ok(Outcome::default());
    };
    let value = old.clone().into_value(store)?;
    store.write_page(leaf, |p| node::leaf_del(p, key))??;
    let mut simple = matches!(old, Stored::Inline(_));
    old.free(store)?;
    if merge && rebalance(store, &path)? {
        simple = false;
    }
    Ok(Outcome {
        old: Some(value),
        leaf: simple.then_some(leaf),
    })
}

/// Merges the leaf `key` descends to, if it is under-full, with a sibling (and the nodes above
/// it that become under-full, as a delete does), and collapses the root: the merge a delete
/// made beside other threads left for later (`splits.rs`). True if any page changed.
pub fn merge_underfull<S: PageStore>(store: &mut S, root: PageId, key: &[u8]) -> Result<bool> {
    let path = descend(store, root, Target::Le(key), false)?;
    rebalance(store, &path)
}

/// Merges under-full nodes on `path` bottom-up, then collapses the root. True if any page other
/// than the leaf was changed.
fn rebalance<S: PageStore>(store: &mut S, path: &Path) -> Result<bool> {
    let mut changed = false;
    for level in (1..path.pids.len()).rev() {
        let pid = path.pids[level];
        let buf = read_copy(store, pid)?;
        if !node::is_underfull(&buf)? {
            break;
        }
        let parent = path.pids[level - 1];
        let pbuf = read_copy(store, parent)?;
        let c = path.idx[level - 1];
        let n = node::cell_count(&pbuf)?;
        let mut merged = false;
        if c > 0 {
            let lpid = node::child_at(&pbuf, c - 1)?;
            let mut lbuf = read_copy(store, lpid)?;
            if PutError::no_space(node::merge(&mut lbuf, &buf, node::key_at(&pbuf, c - 1)?))? {
                write_body(store, lpid, &lbuf)?;
                store.write_page(parent, |p| node::remove_cell(p, c - 1))??;
                store.free_page(pid)?;
                merged = true;
            }
        }
        if !merged && c < n {
            let rpid = node::child_at(&pbuf, c + 1)?;
            let rbuf = read_copy(store, rpid)?;
            let mut nbuf = buf;
            if PutError::no_space(node::merge(&mut nbuf, &rbuf, node::key_at(&pbuf, c)?))? {
                write_body(store, pid, &nbuf)?;
                store.write_page(parent, |p| node::remove_cell(p, c))??;
                store.free_page(rpid)?;
                merged = true;
            }
        }
        if !merged {
            break;
        }
        changed = true;
    }
    Ok(collapse_root(store, path.pids[0])? || changed)
}

/// While the root is internal with a single child, copies the child into the root.
fn collapse_root<S: PageStore>(store: &mut S, root: PageId) -> Result<bool> {
    for depth in 0..MAX_DEPTH {
        let only_child = store.read_page(root, |p| -> Result<Option<PageId>> {
            if node::kind(p)? == NodeKind::Internal && node::cell_count(p)? == 0 {
                Ok(Some(node::child_at(p, 0)?))
            } else {
                Ok(None)
            }
        })??;
        let Some(child) = only_child else {
            return Ok(depth > 0);
        };
        if child == NO_PAGE || child == root {
            return Err(corrupt(root, "bad child link"));
        }
        let cbuf = read_copy(store, child)?;
        write_body(store, root, &cbuf)?;
        store.free_page(child)?;
    }
    Err(corrupt(root, "tree too deep"))
}
