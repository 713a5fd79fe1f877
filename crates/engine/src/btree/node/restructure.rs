//! Structure changes of nodes: choosing a split point and a separator, splitting a node in two,
//! linking a new right leaf, and merging two siblings.

use super::*;

/// The shortest prefix of `hi` that is greater than `lo` (requires `lo < hi`): a separator `s`
/// with `lo < s <= hi`.
pub fn shortest_separator(lo: &[u8], hi: &[u8]) -> Vec<u8> {
    let common = lo.iter().zip(hi).take_while(|(a, b)| a == b).count();
    hi[..(common + 1).min(hi.len())].to_vec()
}

/// Where to split a node: the first cell index at which the cells before it hold at least half
/// of the used bytes, clamped so both halves are non-empty (an internal split also moves one cell
/// up, so it needs 3 cells).
pub fn split_point(page: &[u8]) -> Result<usize> {
    let h = hdr(page)?;
    let (min, max) = match h.kind {
        NodeKind::Leaf => (1, h.n.saturating_sub(1)),
        NodeKind::Internal => (1, h.n.saturating_sub(2)),
    };
    if max < min {
        return Err(corrupt(page, "too few cells to split"));
    }
    let sizes = (0..h.n)
        .map(|i| cell_range(page, &h, i).map(|(s, e)| e - s + SLOT_BYTES))
        .collect::<Result<Vec<_>>>()?;
    let total: usize = sizes.iter().sum();
    let (mut acc, mut at) = (0, 0);
    while at < h.n && acc * 2 < total {
        acc += sizes[at];
        at += 1;
    }
    Ok(at.clamp(min, max))
}

/// Splits `left` at cell `at`, moving the upper part into `right` (formatted here; its page
/// header, and so its page id, must already be set) and returns the separator for the parent.
/// Both pages are rebuilt compactly. Leaf: cells `at..` move, `right` takes over `left`'s right
/// sibling and becomes it; the separator is suffix-truncated. Internal: cell `at` moves up (its
/// child becomes `right`'s leftmost child) and cells `at + 1..` move.
pub fn split(left: &mut [u8], right: &mut [u8], at: usize) -> Result<Vec<u8>> {
    let h = hdr(left)?;
    if right.len() != left.len() {
        return Err(Error::InvalidArgument("split pages differ in size".into()));
    }
    let mut cells = raw_cells(left, &h)?;
    match h.kind {
        NodeKind::Leaf => {
            if at == 0 || at >= h.n {
                return Err(Error::InvalidArgument(format!(
                    "leaf split at {at} of {}",
                    h.n
                )));
            }
            let sep = shortest_separator(cell_key(&cells[at - 1]), cell_key(&cells[at]));
            let upper = cells.split_off(at);
            rebuild(right, NodeKind::Leaf, h.link, &upper)?;
            rebuild(left, NodeKind::Leaf, page::page_id(right), &cells)?;
            Ok(sep)
        }
        NodeKind::Internal => {
            if at >= h.n {
                return Err(Error::InvalidArgument(format!(
                    "internal split at {at} of {}",
                    h.n
                )));
            }
            let upper = cells.split_off(at + 1);
            let mid = cells.pop().expect("at < n");
            let sep = cell_key(&mid).to_vec();
            let child = get_u64(&mid, mid.len() - 8);
            rebuild(right, NodeKind::Internal, child, &upper)?;
            rebuild(left, NodeKind::Internal, h.link, &cells)?;
            Ok(sep)
        }
    }
}

/// Keeps the first `keep` cells of the node (of any kind) and sets its link: what [`split`] makes
/// of its left half, applied to the node in place (`PageOp::Truncate`).
pub fn truncate(page: &mut [u8], keep: usize, link: PageId) -> Result<()> {
    let h = hdr(page)?;
    if keep > h.n {
        return Err(corrupt(page, "truncating a node to more cells than it has"));
    }
    let mut cells = raw_cells(page, &h)?;
    cells.truncate(keep);
    rebuild(page, h.kind, link, &cells)
}

/// Sets the node's link: a leaf's right sibling, an internal node's leftmost child.
pub fn set_link(page: &mut [u8], link: PageId) -> Result<()> {
    let mut h = hdr(page)?;
    h.link = link;
    put_hdr(page, &h);
    Ok(())
}

/// The link of a node (see [`set_link`]).
pub fn link(page: &[u8]) -> Result<PageId> {
    Ok(hdr(page)?.link)
}

/// Makes the empty leaf `right` (page header set) the right sibling of leaf `left`.
pub fn link_new_right_leaf(left: &mut [u8], right: &mut [u8]) -> Result<()> {
    let old = right_sibling(left)?;
    init(right, NodeKind::Leaf, old);
    set_right_sibling(left, page::page_id(right))
}

fn merge_parts(left: &[u8], right: &[u8], sep: &[u8]) -> Result<(Hdr, Hdr, Vec<Vec<u8>>)> {
    let (hl, hr) = (hdr(left)?, hdr(right)?);
    if hl.kind != hr.kind {
        return Err(corrupt(right, "merging nodes of different kinds"));
    }
    if (hl.flags | hr.flags) & FLAG_SPLIT_PENDING != 0 {
        return Err(corrupt(right, "merging a leaf whose split is pending"));
    }
    let mut cells = Vec::with_capacity(hr.n + 1);
    if hl.kind == NodeKind::Internal {
        cells.push(internal_cell(sep, hr.link)?);
    }
    cells.extend(raw_cells(right, &hr)?);
    Ok((hl, hr, cells))
}

#[cfg(test)]
/// True if [`merge`] of these two nodes would fit.
pub fn can_merge(left: &[u8], right: &[u8], sep: &[u8]) -> Result<bool> {
    let (hl, _, cells) = merge_parts(left, right, sep)?;
    let need: usize = cells.iter().map(|c| c.len() + SLOT_BYTES).sum();
    Ok(need <= hl.contiguous() + hl.frag)
}

/// Appends the right neighbour `right` to `left` (internal: with the parent's separator `sep`
/// pulled down above `right`'s leftmost child; leaf: `left` takes `right`'s right sibling).
/// `Err(PutError::NoSpace)`: does not fit, `left` unchanged.
pub fn merge(left: &mut [u8], right: &[u8], sep: &[u8]) -> std::result::Result<(), PutError> {
    let (mut hl, hr, cells) = merge_parts(left, right, sep)?;
    let need: usize = cells.iter().map(|c| c.len() + SLOT_BYTES).sum();
    if need > hl.contiguous() + hl.frag {
        return Err(PutError::NoSpace);
    }
    if hl.n > 0 && !cells.is_empty() && key_h(left, &hl, hl.n - 1)? >= cell_key(&cells[0]) {
        return Err(corrupt(left, "merged nodes are out of key order").into());
    }
    if hl.contiguous() < need {
        compact_h(left, &mut hl)?;
    }
    for c in &cells {
        let n = hl.n;
        insert_raw(left, &mut hl, n, c)?;
    }
    if hl.kind == NodeKind::Leaf {
        hl.link = hr.link;
        put_hdr(left, &hl);
    }
    Ok(())
}
