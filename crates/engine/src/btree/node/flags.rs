//! The node header's flags byte (offset 55): a leaf's *split pending* flag (module notes of
//! `node`).

use super::*;

/// Whether the node is a leaf whose split is pending (see the module notes).
pub fn split_pending(page: &[u8]) -> Result<bool> {
    Ok(hdr(page)?.flags & FLAG_SPLIT_PENDING != 0)
}

/// [`split_pending`] of a page known to be a node (one byte, no header check: descents).
#[inline]
pub fn split_pending_unchecked(page: &[u8]) -> bool {
    page[OFF_FLAGS] & FLAG_SPLIT_PENDING != 0
}

/// Sets or clears a leaf's split-pending flag (`PageOp::SplitPending`).
pub fn set_split_pending(page: &mut [u8], on: bool) -> Result<()> {
    let mut h = hdr(page)?;
    if h.kind != NodeKind::Leaf {
        return Err(corrupt(page, "only a leaf has a pending split"));
    }
    if on {
        h.flags |= FLAG_SPLIT_PENDING;
    } else {
        h.flags &= !FLAG_SPLIT_PENDING;
    }
    put_hdr(page, &h);
    Ok(())
}
