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

/// Where a scan stands when it lets go of a leaf, told to its [`ScanSink`] under the leaf's
/// latch: what a key-range lock must cover (see `ranges.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach<'a> {
    /// Every key in range up to this one (in scan order) was given, or is about to be (a value
    /// in an overflow chain); the scan goes on past it. `None`: no key in range was met in this
    /// leaf, and the scan goes on.
    On(Option<&'a [u8]>),
    /// The scan stopped after this key (the sink said so).
    Stop(&'a [u8]),
    /// The range's far bound was reached.
    Bound,
    /// The tree has no more keys in the scan's direction.
    All,
}

/// What a scan gives its pairs to.
pub trait ScanSink {
    /// A key in range and its value, in scan order (under the leaf's latch for an inline value):
    /// false stops the scan after it.
    fn pair(&mut self, key: &[u8], value: &[u8]) -> bool;
    /// How far the scan reached in a leaf, before it lets go of it. An error ends the scan.
    fn reach(&mut self, _reach: Reach<'_>) -> Result<()> {
        Ok(())
    }
}

impl<F: FnMut(&[u8], &[u8]) -> bool> ScanSink for F {
    fn pair(&mut self, key: &[u8], value: &[u8]) -> bool {
        self(key, value)
    }
}

/// How the visit of one leaf ended.
enum Visit {
    /// The sink said stop.
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

/// Gives `f` the keys within `start..end` and their values in ascending order (descending if
/// `reverse`) until it says stop, and tells it how far it reached in each leaf it visits.
pub fn scan<S, F>(
    store: &mut S,
    root: PageId,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    reverse: bool,
    f: &mut F,
) -> Result<()>
where
    S: PageStore,
    F: ScanSink + ?Sized,
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
        let visit = store.read_page(pid, |p| visit_up(p, pid, from, end, after, f))??;
        match visit {
            Visit::Stopped => return Ok(()),
            Visit::Overflow {
                key,
                total_len,
                first,
            } => {
                // The value, read with the leaf let go; the visit goes on after its key.
                let v = overflow::read_chain(store, first, total_len)?;
                if !f.pair(&key, &v) {
                    return f.reach(Reach::Stop(&key));
                }
                (last, resume) = (Some(key), true);
            }
            Visit::Done {
                last: l,
                ends,
                next,
            } => {
                // A visit resumed after an overflow value that found nothing more: the key may
                // have moved to the right sibling with a split beside others meanwhile, so that
                // leaf too is visited from after the key.
                resume = resume && l.is_none();
                if l.is_some() {
                    last = l;
                }
                if ends || next == NO_PAGE {
                    return Ok(());
                }
                pid = next;
            }
        }
    }
}

/// The keys of leaf `p` from `from` up to `end`, ascending. `after`: the last key the scan gave
/// out, which every key visited here must follow.
fn visit_up<F: ScanSink + ?Sized>(
    p: &[u8],
    pid: PageId,
    from: Bound<&[u8]>,
    end: Bound<&[u8]>,
    after: Option<&[u8]>,
    f: &mut F,
) -> Result<Visit> {
    let leaf = node::Leaf::of(p)?;
    let n = leaf.len();
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
        let (k, v) = leaf.cell(i)?;
        let beyond = match end {
            Bound::Unbounded => false,
            Bound::Included(e) => k > e,
            Bound::Excluded(e) => k >= e,
        };
        if beyond {
            f.reach(Reach::Bound)?;
            return Ok(done(visited, true, NO_PAGE));
        }
        if i == first && after.is_some_and(|a| k <= a) {
            return Err(corrupt(pid, "leaf sibling chain out of key order"));
        }
        if let Some(end) = give(k, v, f, &mut visited)? {
            return Ok(end);
        }
    }
    let next = node::right_sibling(p)?;
    f.reach(if next == NO_PAGE {
        Reach::All
    } else {
        Reach::On(visited)
    })?;
    Ok(done(visited, false, next))
}

/// [`scan`] in descending order: leaf by leaf to the left, each found by a descent to the keys
/// below the last leaf's lower bound.
fn scan_reverse<S, F>(
    store: &mut S,
    root: PageId,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    f: &mut F,
) -> Result<()>
where
    S: PageStore,
    F: ScanSink + ?Sized,
{
    let target = match end {
        Bound::Unbounded => Target::Last,
        Bound::Included(k) => Target::Le(k),
        Bound::Excluded(k) => Target::Lt(k),
    };
    let mut path = descend(store, root, target, true)?;
    // What the path was last descended for, past the first descent: `Lt` of this key.
    let mut seek: Option<Vec<u8>> = None;
    let mut last: Option<Vec<u8>> = None;
    let mut resume = false;
    loop {
        let to = match &last {
            Some(l) if resume => Bound::Excluded(l.as_slice()),
            _ => end,
        };
        let (leaf, before) = (path.leaf(), last.as_deref());
        let bounds = (path.lower.as_deref(), path.pending);
        let visit = store.read_page(leaf, |p| {
            visit_down(p, leaf, (start, to), before, bounds, f)
        })??;
        let Some(visit) = visit else {
            // Split beside others since the descent: its upper keys are in a new right
            // sibling. Down again for the same keys, along the link.
            let again = match &seek {
                Some(k) => Target::Lt(k),
                None => target,
            };
            path = descend(store, root, again, true)?;
            continue;
        };
        match visit {
            Visit::Stopped => return Ok(()),
            Visit::Overflow {
                key,
                total_len,
                first,
            } => {
                let v = overflow::read_chain(store, first, total_len)?;
                if !f.pair(&key, &v) {
                    return f.reach(Reach::Stop(&key));
                }
                // Down again to the keys below it, not back into the leaf: it may have split
                // while the chain was read, and some of those keys moved right.
                path = descend(store, root, Target::Lt(&key), true)?;
                seek = Some(key.clone());
                (last, resume) = (Some(key), true);
            }
            Visit::Done { last: l, ends, .. } => {
                if l.is_some() {
                    last = l;
                }
                let Some(lower) = path.lower.take() else {
                    return Ok(());
                };
                if ends || ends_below(start, &lower) {
                    return Ok(());
                }
                path = descend(store, root, Target::Lt(&lower), true)?;
                if path.lower.as_ref().is_some_and(|l| *l >= lower) {
                    return Err(corrupt(path.leaf(), "separators out of order"));
                }
                seek = Some(lower);
                resume = false;
            }
        }
    }
}

/// The keys of leaf `p` from `to` down to `start`, descending. `before`: the last key the scan
/// gave out, which every key visited here must precede. `lower`: the leaf's lower bound (the
/// separator below it; `None` for the tree's first leaf), and whether its split was pending
/// when the descent found it. `None` (nothing given) if the leaf has been split since.
fn visit_down<F: ScanSink + ?Sized>(
    p: &[u8],
    pid: PageId,
    (start, to): (Bound<&[u8]>, Bound<&[u8]>),
    before: Option<&[u8]>,
    (lower, pending): (Option<&[u8]>, bool),
    f: &mut F,
) -> Result<Option<Visit>> {
    if !pending && node::split_pending_unchecked(p) {
        return Ok(None);
    }
    let leaf = node::Leaf::of(p)?;
    let top = match to {
        Bound::Unbounded => leaf.len(),
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
        let (k, v) = leaf.cell(i)?;
        let below = match start {
            Bound::Unbounded => false,
            Bound::Included(s) => k < s,
            Bound::Excluded(s) => k <= s,
        };
        if below {
            f.reach(Reach::Bound)?;
            return Ok(Some(done(visited, true, NO_PAGE)));
        }
        if i + 1 == top && before.is_some_and(|b| k >= b) {
            return Err(corrupt(pid, "leaves out of key order"));
        }
        if let Some(end) = give(k, v, f, &mut visited)? {
            return Ok(Some(end));
        }
    }
    f.reach(match lower {
        None => Reach::All,
        Some(l) if ends_below(start, l) => Reach::Bound,
        Some(_) => Reach::On(visited),
    })?;
    Ok(Some(done(visited, false, NO_PAGE)))
}

/// Whether a descending scan from `start` ends below a leaf whose lower bound is `lower`: every
/// key to its left is below `start`.
fn ends_below(start: Bound<&[u8]>, lower: &[u8]) -> bool {
    match start {
        Bound::Included(s) | Bound::Excluded(s) => lower <= s,
        Bound::Unbounded => false,
    }
}

/// Gives the cell (`k`, `v`) to `f`: `None` to go on (`visited` is then `k`), or how the visit
/// of the leaf ends (`f` said stop, or the value is in an overflow chain), told to `f` first.
/// Inlined: it runs once per key a scan gives.
#[inline(always)]
fn give<'p, F: ScanSink + ?Sized>(
    k: &'p [u8],
    v: LeafValue<'p>,
    f: &mut F,
    visited: &mut Option<&'p [u8]>,
) -> Result<Option<Visit>> {
    match v {
        LeafValue::Inline(b) => {
            if !f.pair(k, b) {
                f.reach(Reach::Stop(k))?;
                return Ok(Some(Visit::Stopped));
            }
            *visited = Some(k);
            Ok(None)
        }
        LeafValue::Overflow { total_len, first } => {
            f.reach(Reach::On(Some(k)))?;
            Ok(Some(Visit::Overflow {
                key: k.to_vec(),
                total_len,
                first,
            }))
        }
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
