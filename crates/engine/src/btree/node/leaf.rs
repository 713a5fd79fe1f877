//! Reading a leaf's cells: one at a time, all of them, or many through [`Leaf`], whose header
//! is read and checked once.

use super::*;

/// Key and value of leaf cell `i`.
pub fn leaf_cell_at(page: &[u8], i: usize) -> Result<(&[u8], LeafValue<'_>)> {
    let h = hdr(page)?;
    if h.kind != NodeKind::Leaf {
        return Err(corrupt(page, "expected a leaf"));
    }
    leaf_cell_h(page, &h, i)
}

/// A leaf whose header is read and checked once, for reading many of its cells (a scan).
pub struct Leaf<'a> {
    page: &'a [u8],
    h: Hdr,
}

impl<'a> Leaf<'a> {
    /// `page` as a leaf (an error if it is not one).
    pub fn of(page: &'a [u8]) -> Result<Leaf<'a>> {
        let h = hdr(page)?;
        if h.kind != NodeKind::Leaf {
            return Err(corrupt(page, "expected a leaf"));
        }
        Ok(Leaf { page, h })
    }

    /// Cells in the leaf.
    pub fn len(&self) -> usize {
        self.h.n
    }

    /// Key and value of cell `i` ([`leaf_cell_at`], each cell still bounds-checked).
    pub fn cell(&self, i: usize) -> Result<(&'a [u8], LeafValue<'a>)> {
        leaf_cell_h(self.page, &self.h, i)
    }
}

fn leaf_cell_h<'a>(page: &'a [u8], h: &Hdr, i: usize) -> Result<(&'a [u8], LeafValue<'a>)> {
    let (s, e) = cell_range(page, h, i)?;
    let cell = &page[s..e];
    let key = cell_key(cell);
    let t = 2 + key.len();
    let val = match cell[t] {
        TAG_INLINE => LeafValue::Inline(&cell[t + 5..]),
        _ => LeafValue::Overflow {
            total_len: get_u32(cell, t + 1),
            first: get_u64(cell, t + 5),
        },
    };
    Ok((key, val))
}

/// All (key, value) pairs of a leaf, in key order.
pub fn leaf_entries(page: &[u8]) -> Result<Vec<(&[u8], LeafValue<'_>)>> {
    let h = hdr(page)?;
    if h.kind != NodeKind::Leaf {
        return Err(corrupt(page, "expected a leaf"));
    }
    (0..h.n).map(|i| leaf_cell_h(page, &h, i)).collect()
}
