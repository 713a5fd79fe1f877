//! The meta page (page 0): page allocation state and the catalog of trees. It is an ordinary
//! page of the buffer pool, changed through the page store and logged like any other page.
//!
//! Body layout after the 48-byte page header (little-endian):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 48 | 8 | next never-used page id |
//! | 56 | 8 | head of the free-page list (0 = empty) |
//! | 64 | 4 | number of trees |
//! | 68 | 4 | next tree id |
//! | 72 | .. | trees: tree id u32, root page u64, name length u8, name (UTF-8, at most 64 bytes) |
//!
//! A free page is a page of type Free whose body starts with the next free page id (u64 at 48).

use crate::error::{Error, Result};
use crate::page::{self, get_u32, get_u64, put_u32, put_u64, PageId, PageType, PAGE_HEADER_BYTES};
use crate::wal::record::TreeId;

pub const META_PID: PageId = 0;
pub const MAX_TREE_NAME: usize = 64;
const NEXT_PID: usize = PAGE_HEADER_BYTES;
const FREE_HEAD: usize = PAGE_HEADER_BYTES + 8;
const TREE_COUNT: usize = PAGE_HEADER_BYTES + 16;
const NEXT_TREE: usize = PAGE_HEADER_BYTES + 20;
const ENTRIES: usize = PAGE_HEADER_BYTES + 24;
// A catalog entry's name length is a u8; the smallest page holds at least one entry.
const _: () = assert!(MAX_TREE_NAME <= u8::MAX as usize);
const _: () = assert!(ENTRIES + 13 + MAX_TREE_NAME <= crate::btree::node::MIN_PAGE_SIZE);

/// One catalog entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeEntry {
    pub id: TreeId,
    pub root: PageId,
    pub name: String,
}

pub fn init(p: &mut [u8]) {
    page::init(p, META_PID, PageType::Meta);
    put_u64(p, NEXT_PID, 1);
    put_u64(p, FREE_HEAD, 0);
    put_u32(p, TREE_COUNT, 0);
    put_u32(p, NEXT_TREE, 1);
}

pub fn next_pid(p: &[u8]) -> PageId {
    get_u64(p, NEXT_PID)
}
pub fn set_next_pid(p: &mut [u8], v: PageId) {
    put_u64(p, NEXT_PID, v)
}
pub fn free_head(p: &[u8]) -> PageId {
    get_u64(p, FREE_HEAD)
}
pub fn set_free_head(p: &mut [u8], v: PageId) {
    put_u64(p, FREE_HEAD, v)
}

/// Next pointer stored in a free page.
pub fn free_next(p: &[u8]) -> PageId {
    get_u64(p, PAGE_HEADER_BYTES)
}
pub fn set_free_next(p: &mut [u8], v: PageId) {
    put_u64(p, PAGE_HEADER_BYTES, v)
}

/// Reads the catalog, checking bounds (a corrupt meta page is an error, not a panic).
pub fn trees(p: &[u8]) -> Result<Vec<TreeEntry>> {
    let bad = |why| Error::CorruptPage {
        pid: META_PID,
        reason: why,
    };
    if page::page_type(p) != Some(PageType::Meta) {
        return Err(bad("page 0 is not a meta page"));
    }
    let n = get_u32(p, TREE_COUNT) as usize;
    let mut at = ENTRIES;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        if at + 13 > p.len() {
            return Err(bad("catalog overruns the page"));
        }
        let id = get_u32(p, at);
        let root = get_u64(p, at + 4);
        let len = p[at + 12] as usize;
        let start = at + 13;
        if len > MAX_TREE_NAME || start + len > p.len() {
            return Err(bad("catalog entry overruns the page"));
        }
        let name = std::str::from_utf8(&p[start..start + len])
            .map_err(|_| bad("tree name is not UTF-8"))?
            .to_string();
        out.push(TreeEntry { id, root, name });
        at = start + len;
    }
    Ok(out)
}

/// Appends a catalog entry; returns the new tree id.
pub fn add_tree(p: &mut [u8], name: &str, root: PageId) -> Result<TreeId> {
    if name.is_empty() || name.len() > MAX_TREE_NAME {
        return Err(Error::InvalidArgument(format!(
            "tree name must be 1..={MAX_TREE_NAME} bytes"
        )));
    }
    let entries = trees(p)?;
    let end = entries.iter().fold(ENTRIES, |a, e| a + 13 + e.name.len());
    if end + 13 + name.len() > p.len() {
        return Err(Error::Full("the catalog page holds no more trees".into()));
    }
    let id = get_u32(p, NEXT_TREE);
    put_u32(p, end, id);
    put_u64(p, end + 4, root);
    p[end + 12] = name.len() as u8;
    p[end + 13..end + 13 + name.len()].copy_from_slice(name.as_bytes());
    put_u32(p, TREE_COUNT, entries.len() as u32 + 1);
    put_u32(p, NEXT_TREE, id + 1);
    Ok(id)
}
