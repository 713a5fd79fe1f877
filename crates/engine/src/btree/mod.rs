//! B+tree on slotted pages: node format (`node.rs`, pure functions on page bytes, also used by
//! recovery to redo leaf records), tree algorithms (`tree.rs`) over any [`PageStore`], and
//! overflow chains for large values (`overflow.rs`).
//!
//! The root page of a tree never moves: a root split copies the root's contents into two new
//! children and turns the root into an internal node above them. Structure modifications are done
//! in place through the store; the store records which pages an operation touched, and the engine
//! turns that into one log record per operation.

pub(crate) mod accounting;
pub mod node;
pub mod overflow;
#[cfg(test)]
mod tests;
pub mod tree;

use crate::error::Result;
use crate::page::{PageId, PageType};
use crate::page_op::PageOp;

/// What the tree needs from the buffer pool. Page accesses pin the page for the closure's
/// duration; a mutable access marks it dirty and part of the current operation.
pub trait PageStore {
    fn page_size(&self) -> usize;
    fn read_page<R>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> R) -> Result<R>;
    /// [`PageStore::read_page`] of a node, `f` also given the store's search hints for
    /// internal nodes if it keeps them (`node/hints.rs`).
    fn read_node<R>(
        &mut self,
        pid: PageId,
        f: impl FnOnce(&[u8], Option<&node::SearchHints>) -> R,
    ) -> Result<R> {
        self.read_page(pid, |p| f(p, None))
    }
    fn write_page<R>(&mut self, pid: PageId, f: impl FnOnce(&mut [u8]) -> R) -> Result<R>;
    /// A new page, initialised as an empty page of `kind` (header written, body zero).
    fn alloc_page(&mut self, kind: PageType) -> Result<PageId>;
    /// Returns a page to the free list.
    fn free_page(&mut self, pid: PageId) -> Result<()>;
    /// Changes page `pid` by `op` (`page_op::apply_op`); `Ok(Err(NoSpace))` if it does not fit,
    /// the page unchanged. A store that logs may log the operation instead of the page.
    fn apply_op(
        &mut self,
        pid: PageId,
        op: PageOp,
    ) -> Result<std::result::Result<(), node::PutError>> {
        match self.write_page(pid, |p| crate::page_op::apply_op(p, &op))? {
            Err(node::PutError::Corrupt(e)) => Err(e),
            r => Ok(r),
        }
    }
}
