//! Page operations: changes to one page that the log can describe without the page's image (a
//! B+tree node's link, its left half after a split, a separator added, the meta page's
//! allocation fields). The vocabulary shared by the B+tree and the page allocator that make
//! them, the log that records them (redo tag 5) and redo that replays them, with the one
//! function that applies them.

use crate::btree::node;
use crate::meta;
use crate::page::PageId;

/// A change to one page that the log can describe without the page's image; applied by
/// [`apply_op`], in the operation itself and in redo alike. An operation that does not fit
/// (`NoSpace`) must leave the page unchanged: the mini-transaction then logs nothing for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageOp {
    /// Sets a B+tree node's link (a leaf's right sibling, an internal node's leftmost child).
    SetLink(PageId),
    /// Inserts separator `key` with child `child` into an internal node.
    InternalInsert { key: Vec<u8>, child: PageId },
    /// Keeps a node's first `keep` cells (by key order) and sets its link: the left half of a
    /// split whose new cell went right.
    Truncate { keep: u32, link: PageId },
    /// Sets the meta page's next never-used page id.
    MetaNextPid(PageId),
    /// Sets the meta page's free-list head.
    MetaFreeHead(PageId),
    /// Sets (a leaf split beside other threads) or clears (its separator posted) a leaf's
    /// split-pending flag (`node::split_pending`).
    SplitPending(bool),
}

impl PageOp {
    /// Bytes of the operation's encoding.
    pub fn bytes(&self) -> usize {
        match self {
            PageOp::InternalInsert { key, .. } => 1 + 4 + key.len() + 8,
            PageOp::Truncate { .. } => 1 + 4 + 8,
            PageOp::SetLink(_) | PageOp::MetaNextPid(_) | PageOp::MetaFreeHead(_) => 1 + 8,
            PageOp::SplitPending(_) => 1 + 1,
        }
    }
}

/// Applies one page operation to `page`: the one implementation, used by the operation that
/// logs it and by redo, so both leave the same bytes behind from the same page.
pub fn apply_op(page: &mut [u8], op: &PageOp) -> std::result::Result<(), node::PutError> {
    match op {
        PageOp::SetLink(link) => node::set_link(page, *link)?,
        PageOp::InternalInsert { key, child } => node::internal_insert(page, key, *child)?,
        PageOp::Truncate { keep, link } => node::truncate(page, *keep as usize, *link)?,
        PageOp::MetaNextPid(pid) => meta::set_next_pid(page, *pid),
        PageOp::MetaFreeHead(pid) => meta::set_free_head(page, *pid),
        PageOp::SplitPending(on) => node::set_split_pending(page, *on)?,
    }
    Ok(())
}
