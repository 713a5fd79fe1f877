//! Range scans: leaf by leaf from the first key in range, each leaf looked at with its page read
//! once; an inline value goes to the caller straight from the page (no copy of the leaf's cells
//! first), a value in an overflow chain is read after the leaf is let go, and the visit then
//! goes on in the same leaf after that key (found again by key: the leaf may have changed
//! meanwhile when other threads write beside the scan).

use super::{corrupt, descend, Target};
use crate::btree::node::{self, LeafValue, Search};
use crate::btree::{overflow, PageStore};
use crate::error::Result;
use crate::page::{PageId, NO_PAGE};
use std::ops::Bound;

/// How the visit of one leaf ended.
enum Visit {
    /// The caller's function returned false.
    Stopped,
    /// A cell whose value is in an overflow chain: its key and where the value is.
    Overflow {
        key: Vec<u8>,
        total_len: u32,
        first: PageId,
    },
    /// Every cell of the leaf in range was visited: the last key visited (if any), whether the
    /// range ends in this leaf, and its right sibling.
    Done {
        last: Option<Vec<u8>>,
        ends: bool,
        next: PageId,
    },
}

/// Calls `f(key, value)` for the keys within `start..end` in ascending order (descending if
/// `reverse`) until it returns false.
pub fn scan<S, F>(
    store: &mut S,
    root: PageId,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    reverse: bool,
    mut f: F,
) -> Result<()>
where
    S: PageStore,
    F: FnMut(&[u8], &[u8]) -> bool,
{
    if reverse {
        return scan_reverse(store, root, start, end, f);
    }
    let target = match start {
        Bound::Unbounded => Target::First,
        Bound::Included(k) | Bound::Excluded(k) => Target::Le(k),
    };
    let mut pid = descend(store, root, target, false)?.leaf();
    // The last key given to `f`, and whether the visit goes on after it in the same leaf.
    let mut last: Option<Vec<u8>> = None;
    let mut resume = false;
    loop {
        let from = match &last {
            Some(l) if resume => Bound::Excluded(l.as_slice()),
            _ => start,
        };
        let after = last.as_deref();
        let visit = store.read_page(pid, |p| visit_up(p, pid, from, end, after, &mut f))??;
        match visit {
            Visit::Stopped => return Ok(()),
            Visit::Overflow {
                key,
                total_len,
                first,
            } => {
                // The value, read with the leaf let go; the visit goes on after its key.
                let v = overflow::read_chain(store, first, total_len)?;
                if !f(&key, &v) {
                    return Ok(());
                }
                (last, resume) = (Some(key), true);
            }
            Visit::Done {
                last: l,
                ends,
                next,
            } => {
                if l.is_some() {
                    last = l;
                }
                if ends || next == NO_PAGE {
                    return Ok(());
                }
                (pid, resume) = (next, false);
            }
        }
    }
}

/// The keys of leaf `p` from `from` up to `end`, ascending. `after`: the last key the scan gave
/// out, which every key visited here must follow.
fn visit_up<F: FnMut(&[u8], &[u8]) -> bool>(
    p: &[u8],
    pid: PageId,
    from: Bound<&[u8]>,
    end: Bound<&[u8]>,
    after: Option<&[u8]>,
    f: &mut F,
) -> Result<Visit> {
    let n = node::cell_count(p)?;
    let first = match from {
        Bound::Unbounded => 0,
        Bound::Included(s) => match node::search(p, s)? {
            Search::Found(i) | Search::NotFound(i) => i,
        },
        Bound::Excluded(s) => match node::search(p, s)? {
            Search::Found(i) => i + 1,
            Search::NotFound(i) => i,
        },
    };
    let mut visited = None;
    for i in first..n {
        let (k, v) = node::leaf_cell_at(p, i)?;
        let beyond = match end {
            Bound::Unbounded => false,
            Bound::Included(e) => k > e,
            Bound::Excluded(e) => k >= e,
        };
        if beyond {
            return Ok(done(visited, true, NO_PAGE));
        }
        if i == first && after.is_some_and(|a| k <= a) {
            return Err(corrupt(pid, "leaf sibling chain out of key order"));
        }
        if let Some(end) = give(k, v, f, &mut visited) {
            return Ok(end);
        }
    }
    Ok(done(visited, false, node::right_sibling(p)?))
}

/// [`scan`] in descending order: leaf by leaf to the left, each found by a descent to the keys
/// below the last leaf's lower bound.
fn scan_reverse<S, F>(
    store: &mut S,
    root: PageId,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    mut f: F,
) -> Result<()>
where
    S: PageStore,
    F: FnMut(&[u8], &[u8]) -> bool,
{
    let target = match end {
        Bound::Unbounded => Target::Last,
        Bound::Included(k) => Target::Le(k),
        Bound::Excluded(k) => Target::Lt(k),
    };
    let mut path = descend(store, root, target, true)?;
    let mut last: Option<Vec<u8>> = None;
    let mut resume = false;
    loop {
        let to = match &last {
            Some(l) if resume => Bound::Excluded(l.as_slice()),
            _ => end,
        };
        let (leaf, before) = (path.leaf(), last.as_deref());
        let visit = store.read_page(leaf, |p| visit_down(p, leaf, start, to, before, &mut f))??;
        match visit {
            Visit::Stopped => return Ok(()),
            Visit::Overflow {
                key,
                total_len,
                first,
            } => {
                let v = overflow::read_chain(store, first, total_len)?;
                if !f(&key, &v) {
                    return Ok(());
                }
                (last, resume) = (Some(key), true);
            }
            Visit::Done { last: l, ends, .. } => {
                if l.is_some() {
                    last = l;
                }
                let Some(lower) = path.lower.take() else {
                    return Ok(());
                };
                let done = match start {
                    Bound::Included(s) | Bound::Excluded(s) => ends || lower.as_slice() <= s,
                    Bound::Unbounded => false,
                };
                if done {
                    return Ok(());
                }
                path = descend(store, root, Target::Lt(&lower), true)?;
                if path.lower.as_ref().is_some_and(|l| *l >= lower) {
                    return Err(corrupt(path.leaf(), "separators out of order"));
                }
                resume = false;
            }
        }
    }
}

/// The keys of leaf `p` from `to` down to `start`, descending. `before`: the last key the scan
/// gave out, which every key visited here must precede.
fn visit_down<F: FnMut(&[u8], &[u8]) -> bool>(
    p: &[u8],
    pid: PageId,
    start: Bound<&[u8]>,
    to: Bound<&[u8]>,
    before: Option<&[u8]>,
    f: &mut F,
) -> Result<Visit> {
    let top = match to {
        Bound::Unbounded => node::cell_count(p)?,
        Bound::Included(e) => match node::search(p, e)? {
            Search::Found(i) => i + 1,
            Search::NotFound(i) => i,
        },
        Bound::Excluded(e) => match node::search(p, e)? {
            Search::Found(i) | Search::NotFound(i) => i,
        },
    };
    let mut visited = None;
    for i in (0..top).rev() {
        let (k, v) = node::leaf_cell_at(p, i)?;
        let below = match start {
            Bound::Unbounded => false,
            Bound::Included(s) => k < s,
            Bound::Excluded(s) => k <= s,
        };
        if below {
            return Ok(done(visited, true, NO_PAGE));
        }
        if i + 1 == top && before.is_some_and(|b| k >= b) {
            return Err(corrupt(pid, "leaves out of key order"));
        }
        if let Some(end) = give(k, v, f, &mut visited) {
            return Ok(end);
        }
    }
    Ok(done(visited, false, NO_PAGE))
}

/// Gives the cell (`k`, `v`) to `f`: `None` to go on (`visited` is then `k`), or how the visit
/// of the leaf ends (`f` said stop, or the value is in an overflow chain).
fn give<'p, F: FnMut(&[u8], &[u8]) -> bool>(
    k: &'p [u8],
    v: LeafValue<'p>,
    f: &mut F,
    visited: &mut Option<&'p [u8]>,
) -> Option<Visit> {
    match v {
        LeafValue::Inline(b) => {
            if !f(k, b) {
                return Some(Visit::Stopped);
            }
            *visited = Some(k);
            None
        }
        LeafValue::Overflow { total_len, first } => Some(Visit::Overflow {
            key: k.to_vec(),
            total_len,
            first,
        }),
    }
}

/// The end of a leaf's visit with every cell in range given out.
fn done(visited: Option<&[u8]>, ends: bool, next: PageId) -> Visit {
    Visit::Done {
        last: visited.map(<[u8]>::to_vec),
        ends,
        next,
    }
}
