//! Log records: what the engine logs. Encoding (little-endian, CRC32C per record) lives in
//! `wal/codec.rs`; its layout is documented in docs/format.md.

use crate::page::{Lsn, PageId};
pub use crate::page_op::PageOp;

pub type TxnId = u64;
pub type TreeId = u32;

/// How to redo a change to pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Redo {
    /// Insert or replace `key` with the inline `value` in leaf page `pid` (physiological: the page is
    /// named, the slot is found by key). The change fit in the page without a split.
    LeafPut {
        pid: PageId,
        key: Vec<u8>,
        value: Vec<u8>,
    },
    /// Remove `key` from leaf page `pid`.
    LeafDel { pid: PageId, key: Vec<u8> },
    /// After-images of every page a structure modification (split, merge, overflow chain, page
    /// allocation, new tree) touched; applied atomically, as one record.
    Images(Vec<(PageId, Vec<u8>)>),
    /// A structure modification as [`Redo::Images`], except that a page changed only by
    /// [`PageOp`]s is logged as those operations instead of its image (`DbConfig::log_page_ops`):
    /// an append split logs the left leaf's new link, not its 4 KiB.
    Pages(Vec<(PageId, PageRedo)>),
}

/// How one page of a [`Redo::Pages`] record is redone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageRedo {
    /// The page's after-image (a new page, or one changed in a way no [`PageOp`] describes).
    Image(Vec<u8>),
    /// Operations applied in order to the page as it was before the record. Each is logical
    /// within the page (cells by key or by rank, header fields), so it does not depend on
    /// where the cells sit in the page.
    Ops(Vec<PageOp>),
}

impl PageRedo {
    /// Bytes of the page's redo (the image, or roughly the operations' encoding).
    pub fn bytes(&self) -> usize {
        match self {
            PageRedo::Image(img) => img.len(),
            PageRedo::Ops(ops) => ops.iter().map(PageOp::bytes).sum(),
        }
    }
}

/// How to undo a transaction's change, logically (through the tree, since pages may have split
/// since): set `key` of `tree` back to `old` (None: delete it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undo {
    pub tree: TreeId,
    pub key: Vec<u8>,
    pub old: Option<Vec<u8>>,
}

/// How to undo a bulk load's record ([`Body::Load`]): delete every key of `tree` from `first`
/// to `last` (both included). The loading transaction held the whole tree exclusively and every
/// key it loaded was above the tree's last key, so no key in the range is another's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadUndo {
    pub tree: TreeId,
    pub first: Vec<u8>,
    pub last: Vec<u8>,
}

/// A fuzzy checkpoint: the dirty page table and the active transaction table at its time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckpointData {
    /// (page, recLSN): the LSN of the oldest change not yet on the device.
    pub dirty_pages: Vec<(PageId, Lsn)>,
    /// (transaction, LSN of its last record, LSN of the next record to undo).
    pub active_txns: Vec<(TxnId, Lsn, Lsn)>,
    /// Next transaction id to hand out.
    pub next_txn: TxnId,
}

/// The checkpoint of the flushless buffer mode (paper 001, Figure 4): the pages whose committed
/// changes are still only in the log (with the LSN of the oldest), and the pages live
/// transactions allocated (returned to the free list at restart if they never commit).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableCheckpointData {
    /// (page, recovery LSN): the oldest committed change of the page not yet on the device.
    pub dirty_pages: Vec<(PageId, Lsn)>,
    /// (transaction, pages it allocated) of transactions live at the checkpoint.
    pub allocations: Vec<(TxnId, Vec<PageId>)>,
    /// Next transaction id to hand out.
    pub next_txn: TxnId,
}

/// The body of a log record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// A change by a transaction: redo it forward, undo it logically on abort.
    Update {
        redo: Redo,
        undo: Undo,
    },
    /// A compensation record written while undoing: redo-only; `undo_next` is the next record of
    /// the transaction still to undo.
    Clr {
        redo: Redo,
        undo_next: Lsn,
    },
    /// A redo-only change outside any transaction's undo scope (e.g. a split done for a
    /// transaction: structure changes are never undone).
    System {
        redo: Redo,
    },
    /// A bulk load's step: records appended past the last key of a tree the transaction holds
    /// whole, logged as the pages they filled (`redo`, images and page operations) rather than
    /// one record per key; undone by deleting the keys in `undo`'s range.
    Load {
        redo: Redo,
        undo: LoadUndo,
    },
    Commit,
    Abort,
    /// The transaction is finished (after commit, or after its rollback completed).
    End,
    Checkpoint(CheckpointData),
    /// Page locations changed by an out-of-place write path (redo-only, no page change): each
    /// page's new stored copy is durable on the data device before this record is logged.
    Map(Vec<MapChange>),
    /// Flushless mode: a committed transaction's change, redo only (no undo: the buffer never
    /// writes uncommitted changes). Written at commit, with the transaction's other changes,
    /// right before its `Commit`; recovery ignores it unless that `Commit` follows.
    Redo {
        redo: Redo,
    },
    /// Flushless mode: a page-space change (allocation, or pages given back) done for the
    /// record's transaction but committed at once, whatever that transaction does: `alloc` are
    /// pages it took, `free` pages returned to the free list (by its abort, or by restart when
    /// it never committed).
    Space {
        redo: Redo,
        alloc: Vec<PageId>,
        free: Vec<PageId>,
    },
    /// Flushless mode's checkpoint record.
    TableCheckpoint(TableCheckpointData),
}

/// One page moved by the out-of-place write path: page `pid` is now stored at byte `offset` of
/// the data device, `len` bytes long (`len` = page size: stored raw; less: a compressed blob).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapChange {
    pub pid: PageId,
    pub offset: u64,
    pub len: u32,
}

/// A log record. `lsn` is the byte position of the record in the (unbounded) log stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    pub lsn: Lsn,
    /// 0 for records of no transaction.
    pub txn: TxnId,
    /// The transaction's previous record (0 = none).
    pub prev_lsn: Lsn,
    pub body: Body,
}
