//! Appending sorted records past a tree's last key, a leaf at a time (the engine's bulk load):
//! the last leaf is filled in one write of the page, and a full one gets an empty right sibling
//! through the append split, which is then filled the same way.

use super::{descend, insert_with_split, read_copy, write_body, Pending, Target};
use crate::btree::node::{self, LeafValue, PutError, Search};
use crate::btree::PageStore;
use crate::error::{Error, Result};

/// Whether `append` can take `key` with the inline `value` (a value longer than a leaf holds
/// inline goes through `put`, which writes an overflow chain).
pub fn appendable(page_size: usize, key: &[u8], value: &[u8]) -> bool {
    key.len() <= node::max_key_len(page_size)
        && value.len() <= node::max_inline_value(page_size, key.len())
}

/// The lower fence of the tree's last leaf if that leaf is empty (None: it holds keys, or it
/// is the only leaf). Keys below it cannot be appended there though the tree holds none above
/// them: a bulk load rolled back (aborted, or undone by recovery) deletes its keys without
/// merging, and leaves the leaves it appended in the tree, empty. The caller puts such keys
/// one by one; they go to the leaves whose ranges hold them.
pub fn empty_last_leaf_fence<S: PageStore>(
    store: &mut S,
    root: super::PageId,
) -> Result<Option<Vec<u8>>> {
    let path = descend(store, root, Target::Last, true)?;
    let empty = node::cell_count(&read_copy(store, path.leaf())?)? == 0;
    Ok(path.lower.filter(|_| empty))
}

/// Appends a prefix of `pairs` to the tree at `root` and returns how many it took (at least one
/// when `pairs` is not empty). The keys must be strictly ascending, the first above every key
/// of the tree, and each pair [`appendable`]; otherwise the tree is left as it was and the
/// error is `InvalidArgument`.
///
/// One call changes the last leaf (the records that fit in it, in one write of the page) or,
/// when that leaf is full, splits it at its end and fills the new right leaf: a few pages, so
/// that the caller can log each call as one record.
pub fn append<S: PageStore>(
    store: &mut S,
    root: super::PageId,
    pairs: &[(&[u8], &[u8])],
) -> Result<usize> {
    let Some(&(first, _)) = pairs.first() else {
        return Ok(0);
    };
    let ps = store.page_size();
    let path = descend(store, root, Target::Last, true)?;
    let leaf = path.leaf();
    let mut buf = read_copy(store, leaf)?;
    let n = node::cell_count(&buf)?;
    let above_leaf = n == 0 || node::cmp_key(node::key_at(&buf, n - 1)?, first).is_lt();
    // The last leaf takes keys from its lower fence up; an empty last leaf (its keys deleted)
    // says nothing about the keys left of it, so the caller must know the tree's last key.
    let above_fence = path
        .lower
        .as_deref()
        .is_none_or(|lo| node::cmp_key(lo, first).is_le());
    if !above_leaf || !above_fence {
        return Err(Error::InvalidArgument(
            "a bulk load's keys must be above every key of the tree".into(),
        ));
    }
    let took = fill(&mut buf, ps, pairs)?;
    if took > 0 {
        write_body(store, leaf, &buf)?;
        return Ok(took);
    }
    // The leaf is full: an append split leaves it as it is and starts an empty right leaf
    // holding the first pair; the rest that fit go into that new leaf.
    let (key, value) = pairs[0];
    let level = path.pids.len() - 1;
    let pending = Pending::Leaf {
        key,
        val: LeafValue::Inline(value),
    };
    insert_with_split(store, &path, level, buf, pending, true)?;
    let path = descend(store, root, Target::Last, false)?;
    let right = path.leaf();
    let mut buf = read_copy(store, right)?;
    debug_assert!(
        node::cell_count(&buf)? == 1,
        "an append split starts an empty leaf"
    );
    let more = fill(&mut buf, ps, &pairs[1..])?;
    if more > 0 {
        write_body(store, right, &buf)?;
    }
    Ok(1 + more)
}

/// Puts the pairs that fit at the end of the leaf in `buf`, in order; returns how many.
fn fill(buf: &mut [u8], ps: usize, pairs: &[(&[u8], &[u8])]) -> Result<usize> {
    let n = node::cell_count(buf)?;
    let mut prev: Option<&[u8]> = None;
    for (i, &(key, value)) in pairs.iter().enumerate() {
        if !appendable(ps, key, value) || prev.is_some_and(|p| node::cmp_key(p, key).is_ge()) {
            return Err(Error::InvalidArgument(
                "a bulk load's keys must be strictly ascending, with values stored inline".into(),
            ));
        }
        prev = Some(key);
        if !PutError::no_space(node::leaf_put_at(
            buf,
            key,
            LeafValue::Inline(value),
            Search::NotFound(n + i),
        ))? {
            return Ok(i);
        }
    }
    Ok(pairs.len())
}
