//! B+tree node format: pure, deterministic functions on the bytes of one page. Recovery redoes
//! `Redo::LeafPut` / `Redo::LeafDel` with [`leaf_put_inline`] / [`leaf_del`], which depend on
//! nothing but the page bytes, so a redo reproduces the original change byte for byte.
//!
//! A node is a slotted page (page types 2 = internal, 3 = leaf). All integers little-endian.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 48 | page header (`page.rs`) |
//! | 48 | 2 | cell count `n` |
//! | 50 | 2 | fragmented bytes: dead bytes inside the cell area, reclaimed by compaction |
//! | 52 | 3 | cell area start: offset of the lowest cell byte (= page size when the area is empty) |
//! | 55 | 1 | flags: bit 0 (leaves only) = split pending, see below; other bits zero |
//! | 56 | 8 | leaf: right sibling page id (0 = none); internal: leftmost child page id |
//! | 64 | 2 n | slot array: u16 offset of each cell, in ascending key order |
//! | 64 + 2 n | .. | free space (zero) |
//! | cell area start | .. | cells (in any order), growing down from the page end |
//!
//! Free space = (cell area start - (64 + 2 n)) + fragmented bytes = page size - 64 - 2 n - the
//! sum of the live cells' lengths (an invariant [`validate`] checks).
//!
//! Leaf cell:
//!
//! | size | field |
//! |---|---|
//! | 2 | key length `k` |
//! | k | key |
//! | 1 | value tag: 0 inline, 1 overflow |
//! | 4 + v | tag 0: value length `v` (u32), value bytes |
//! | 4 + 8 | tag 1: total value length (u32), first overflow page id (u64), see `overflow.rs` |
//!
//! Internal cell: key length `k` (u16), key, child page id (u64). The child holds the keys
//! `>= key` and `<` the next cell's key; the leftmost child (node header) holds the keys `<` the
//! first cell's key. Leaf separators are suffix-truncated: the shortest prefix of the right
//! node's first key that is greater than the left node's last key.
//!
//! A leaf whose *split pending* flag is set was split with the tree shared (see
//! `tree/split.rs`, [`crate::btree::tree::split_beside`]): its right sibling holds the keys above
//! its own last key that its parent would lead to it, and the parent does not know the sibling
//! yet. A key greater than the flagged leaf's last key is looked for in the sibling (and on
//! along the links while the sibling is flagged too). The flag is cleared when the separator is
//! posted to the parent. (Byte 55 was the high byte of a 4-byte cell area start, always zero:
//! files written before the flag read as having it clear.)
//!
//! Limits (for a page of `P` bytes, `U = P - 64` usable bytes): keys are at most `P / 8` bytes; a
//! leaf cell plus its slot is at most `U / 3` bytes, so a value is inline iff
//! `7 + k + v <= U / 3 - 2`, else it goes to an overflow chain. A leaf therefore always has room
//! for at least 3 cells, and a split always leaves room for the cell being inserted.
//! Page sizes from 512 to 65536 bytes are supported.

use crate::error::{Error, Result};
use crate::page::{
    self, get_u16, get_u32, get_u64, put_u16, put_u32, put_u64, PageId, PageType, NO_PAGE,
    PAGE_HEADER_BYTES,
};
use std::cmp::Ordering;

const OFF_COUNT: usize = PAGE_HEADER_BYTES;
const OFF_FRAG: usize = PAGE_HEADER_BYTES + 2;
const OFF_CELL_START: usize = PAGE_HEADER_BYTES + 4;
const OFF_FLAGS: usize = PAGE_HEADER_BYTES + 7;
/// Node flag: a leaf split whose separator is not in the parent yet (see the module notes).
const FLAG_SPLIT_PENDING: u8 = 1;
const OFF_LINK: usize = PAGE_HEADER_BYTES + 8;
/// Bytes of the node header after the page header.
pub const NODE_HEADER_BYTES: usize = 16;
/// Offset of the slot array.
pub const SLOTS_START: usize = PAGE_HEADER_BYTES + NODE_HEADER_BYTES;
pub const SLOT_BYTES: usize = 2;
pub const MIN_PAGE_SIZE: usize = 512;
pub const MAX_PAGE_SIZE: usize = 65536;
// Offsets within a node are u16s: a page may not be larger than they can address, and the node
// header must fit its fields (count, fragmented bytes, cell start, link).
const _: () = assert!(MAX_PAGE_SIZE <= u16::MAX as usize + 1);
const _: () = assert!(OFF_LINK + 8 == SLOTS_START);
const _: () = assert!(SLOTS_START < MIN_PAGE_SIZE);
pub const TAG_INLINE: u8 = 0;
pub const TAG_OVERFLOW: u8 = 1;
/// Leaf cell bytes besides key and value for an inline value: key length, tag, value length.
pub const LEAF_INLINE_OVERHEAD: usize = 7;
/// Leaf cell bytes besides the key for an overflow value.
pub const LEAF_OVERFLOW_OVERHEAD: usize = 15;
/// Internal cell bytes besides the key: key length, child page id.
pub const INTERNAL_OVERHEAD: usize = 10;

/// Why a node change was not made.
#[derive(Debug, Clone, PartialEq)]
pub enum PutError {
    /// The change does not fit in the page; the page is unchanged.
    NoSpace,
    /// The page is malformed (or the key / value cannot be encoded).
    Corrupt(Error),
}

impl From<Error> for PutError {
    fn from(e: Error) -> Self {
        PutError::Corrupt(e)
    }
}

impl PutError {
    /// `Ok(false)` for `NoSpace`, the error otherwise: for callers that handle a full page.
    pub fn no_space(r: std::result::Result<(), PutError>) -> Result<bool> {
        match r {
            Ok(()) => Ok(true),
            Err(PutError::NoSpace) => Ok(false),
            Err(PutError::Corrupt(e)) => Err(e),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Leaf,
    Internal,
}

impl NodeKind {
    pub fn page_type(self) -> PageType {
        match self {
            NodeKind::Leaf => PageType::Leaf,
            NodeKind::Internal => PageType::Internal,
        }
    }
}

/// Result of a binary search: the slot of the key, or where it would be inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Search {
    Found(usize),
    NotFound(usize),
}

/// A leaf cell's value, borrowed from the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafValue<'a> {
    Inline(&'a [u8]),
    Overflow { total_len: u32, first: PageId },
}

/// Bytes for cells and slots in a page of `page_size` bytes.
pub fn usable_bytes(page_size: usize) -> usize {
    page_size.saturating_sub(SLOTS_START)
}
pub fn max_key_len(page_size: usize) -> usize {
    page_size / 8
}
/// Largest leaf cell (without its slot).
pub fn max_leaf_cell_bytes(page_size: usize) -> usize {
    (usable_bytes(page_size) / 3).saturating_sub(SLOT_BYTES)
}
/// Largest value stored inline next to a key of `key_len` bytes.
pub fn max_inline_value(page_size: usize, key_len: usize) -> usize {
    max_leaf_cell_bytes(page_size).saturating_sub(LEAF_INLINE_OVERHEAD + key_len)
}
pub fn check_page_size(page_size: usize) -> Result<()> {
    if (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size) {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "B+tree page size {page_size} is outside {MIN_PAGE_SIZE}..={MAX_PAGE_SIZE}"
        )))
    }
}

mod cell;
mod flags;
mod hints;
mod leaf;
mod restructure;
use cell::{internal_cell, leaf_cell};
pub use flags::*;
pub use hints::SearchHints;
pub use leaf::*;
pub use restructure::*;

fn corrupt(page: &[u8], reason: &'static str) -> Error {
    let pid = if page.len() >= PAGE_HEADER_BYTES {
        page::page_id(page)
    } else {
        NO_PAGE
    };
    Error::CorruptPage { pid, reason }
}

#[derive(Clone, Copy, Debug)]
struct Hdr {
    kind: NodeKind,
    n: usize,
    frag: usize,
    cell_start: usize,
    flags: u8,
    link: PageId,
}

impl Hdr {
    fn slots_end(&self) -> usize {
        SLOTS_START + SLOT_BYTES * self.n
    }
    fn contiguous(&self) -> usize {
        self.cell_start - self.slots_end()
    }
}

fn hdr(page: &[u8]) -> Result<Hdr> {
    if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page.len()) {
        return Err(corrupt(page, "node page size out of range"));
    }
    let kind = match page::page_type(page) {
        Some(PageType::Leaf) => NodeKind::Leaf,
        Some(PageType::Internal) => NodeKind::Internal,
        _ => return Err(corrupt(page, "not a B+tree node")),
    };
    let h = Hdr {
        kind,
        n: get_u16(page, OFF_COUNT) as usize,
        frag: get_u16(page, OFF_FRAG) as usize,
        cell_start: (get_u32(page, OFF_CELL_START) & 0xFF_FFFF) as usize,
        flags: page[OFF_FLAGS],
        link: get_u64(page, OFF_LINK),
    };
    let allowed = match kind {
        NodeKind::Leaf => FLAG_SPLIT_PENDING,
        NodeKind::Internal => 0,
    };
    if h.flags & !allowed != 0 {
        return Err(corrupt(page, "unknown node flags"));
    }
    if h.slots_end() > h.cell_start || h.cell_start > page.len() {
        return Err(corrupt(page, "node free-space bounds out of range"));
    }
    if h.frag > page.len() - h.cell_start {
        return Err(corrupt(page, "node fragmented byte count out of range"));
    }
    Ok(h)
}

fn put_hdr(page: &mut [u8], h: &Hdr) {
    put_u16(page, OFF_COUNT, h.n as u16);
    put_u16(page, OFF_FRAG, h.frag as u16);
    debug_assert!(h.cell_start <= MAX_PAGE_SIZE);
    put_u32(
        page,
        OFF_CELL_START,
        h.cell_start as u32 | (h.flags as u32) << 24,
    );
    put_u64(page, OFF_LINK, h.link);
}

/// Byte range of cell `i`, bounds-checked.
fn cell_range(page: &[u8], h: &Hdr, i: usize) -> Result<(usize, usize)> {
    if i >= h.n {
        return Err(corrupt(page, "cell index out of range"));
    }
    let len = page.len();
    let off = get_u16(page, SLOTS_START + SLOT_BYTES * i) as usize;
    if off < h.cell_start || off + 2 > len {
        return Err(corrupt(page, "slot points outside the cell area"));
    }
    let kend = off + 2 + get_u16(page, off) as usize;
    let end = match h.kind {
        NodeKind::Leaf => {
            if kend + 5 > len {
                return Err(corrupt(page, "leaf cell runs past the page end"));
            }
            match page[kend] {
                TAG_INLINE => kend + 5 + get_u32(page, kend + 1) as usize,
                TAG_OVERFLOW => kend + 13,
                _ => return Err(corrupt(page, "unknown leaf value tag")),
            }
        }
        NodeKind::Internal => kend + 8,
    };
    if end > len {
        return Err(corrupt(page, "cell runs past the page end"));
    }
    Ok((off, end))
}

fn cell_key(cell: &[u8]) -> &[u8] {
    &cell[2..2 + get_u16(cell, 0) as usize]
}

/// Key of cell `i`, checked only as far as the key reaches (a search probes many cells and
/// needs only their keys; the value is checked when it is read, by [`cell_range`]).
fn key_h<'a>(page: &'a [u8], h: &Hdr, i: usize) -> Result<&'a [u8]> {
    if i >= h.n {
        return Err(corrupt(page, "cell index out of range"));
    }
    let off = get_u16(page, SLOTS_START + SLOT_BYTES * i) as usize;
    if off < h.cell_start || off + 2 > page.len() {
        return Err(corrupt(page, "slot points outside the cell area"));
    }
    let end = off + 2 + get_u16(page, off) as usize;
    if end > page.len() {
        return Err(corrupt(page, "cell runs past the page end"));
    }
    Ok(&page[off + 2..end])
}

fn raw_cells(page: &[u8], h: &Hdr) -> Result<Vec<Vec<u8>>> {
    (0..h.n)
        .map(|i| cell_range(page, h, i).map(|(s, e)| page[s..e].to_vec()))
        .collect()
}

/// Formats the body of `page` as an empty node of `kind` (sets the page type; keeps the rest of
/// the page header). `link` is the right sibling (leaf) or the leftmost child (internal).
pub fn init(page: &mut [u8], kind: NodeKind, link: PageId) {
    page::set_page_type(page, kind.page_type());
    page[PAGE_HEADER_BYTES..].fill(0);
    let h = Hdr {
        kind,
        n: 0,
        frag: 0,
        cell_start: page.len(),
        flags: 0,
        link,
    };
    put_hdr(page, &h);
}

pub fn kind(page: &[u8]) -> Result<NodeKind> {
    Ok(hdr(page)?.kind)
}
pub fn cell_count(page: &[u8]) -> Result<usize> {
    Ok(hdr(page)?.n)
}
/// Free bytes, counting fragmented space.
pub fn free_bytes(page: &[u8]) -> Result<usize> {
    let h = hdr(page)?;
    Ok(h.contiguous() + h.frag)
}
/// Bytes used by slots and live cells.
pub fn used_bytes(page: &[u8]) -> Result<usize> {
    Ok(usable_bytes(page.len()) - free_bytes(page)?)
}
/// Below a quarter full: a candidate for a merge.
pub fn is_underfull(page: &[u8]) -> Result<bool> {
    Ok(used_bytes(page)? < usable_bytes(page.len()) / 4)
}

/// Right sibling of a leaf (0 = none).
pub fn right_sibling(page: &[u8]) -> Result<PageId> {
    let h = hdr(page)?;
    if h.kind != NodeKind::Leaf {
        return Err(corrupt(page, "expected a leaf"));
    }
    Ok(h.link)
}
pub fn set_right_sibling(page: &mut [u8], pid: PageId) -> Result<()> {
    let mut h = hdr(page)?;
    if h.kind != NodeKind::Leaf {
        return Err(corrupt(page, "expected a leaf"));
    }
    h.link = pid;
    put_hdr(page, &h);
    Ok(())
}

/// Binary search for `key` among the node's keys.
pub fn search(page: &[u8], key: &[u8]) -> Result<Search> {
    search_h(page, &hdr(page)?, key)
}

fn search_h(page: &[u8], h: &Hdr, key: &[u8]) -> Result<Search> {
    let (mut lo, mut hi) = (0, h.n);
    // The rest of the slot array (a page's first three lines are fetched by its reader).
    let mut line = SLOTS_START + 128;
    while line < h.slots_end().min(SLOTS_START + 512) {
        crate::sync::prefetch(page, line);
        line += 64;
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        // The cells of both possible next probes are fetched while this one's key is compared:
        // in a page not in the CPU's caches each probe otherwise waits for its cell in turn.
        if lo < mid {
            prefetch_cell(page, lo + (mid - lo) / 2);
        }
        if mid + 1 < hi {
            prefetch_cell(page, mid + 1 + (hi - mid - 1) / 2);
        }
        match cmp_key(key_h(page, h, mid)?, key) {
            Ordering::Less => lo = mid + 1,
            Ordering::Greater => hi = mid,
            Ordering::Equal => return Ok(Search::Found(mid)),
        }
    }
    Ok(Search::NotFound(lo))
}

/// A hint to fetch the start of cell `i` (its key) into the CPU's caches; a slot out of range
/// is skipped (the search that probes it reports the corruption).
#[inline(always)]
fn prefetch_cell(page: &[u8], i: usize) {
    let s = SLOTS_START + SLOT_BYTES * i;
    if let Some(b) = page.get(s..s + 2) {
        crate::sync::prefetch(page, u16::from_le_bytes([b[0], b[1]]) as usize);
    }
}

/// `a` against `b` in byte order (as `a.cmp(b)`), eight bytes at a time as big-endian words,
/// inlined: keys are short and a search compares a dozen of them, where a call into the C
/// library's `memcmp` for each cost more than the comparison itself. The last partial word is
/// compared as the word that ends with the shorter key (its first bytes, already found equal,
/// cannot decide): a byte loop over the tail cost more than the whole words before it.
#[inline]
pub fn cmp_key(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let word = |s: &[u8], i: usize| u64::from_be_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    let mut i = 0;
    while i + 8 <= n {
        let (x, y) = (word(a, i), word(b, i));
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    if i < n {
        let (x, y) = if n >= 8 {
            (word(a, n - 8), word(b, n - 8))
        } else {
            // Keys shorter than a word: both padded with zeros after `n` bytes.
            let mut x = [0u8; 8];
            let mut y = [0u8; 8];
            x[..n].copy_from_slice(&a[..n]);
            y[..n].copy_from_slice(&b[..n]);
            (u64::from_be_bytes(x), u64::from_be_bytes(y))
        };
        if x != y {
            return x.cmp(&y);
        }
    }
    a.len().cmp(&b.len())
}

/// Key of cell `i`.
pub fn key_at(page: &[u8], i: usize) -> Result<&[u8]> {
    key_h(page, &hdr(page)?, i)
}

/// Child `c` of an internal node: 0 is the leftmost child, `c >= 1` the child of cell `c - 1`.
pub fn child_at(page: &[u8], c: usize) -> Result<PageId> {
    let h = hdr(page)?;
    if h.kind != NodeKind::Internal {
        return Err(corrupt(page, "expected an internal node"));
    }
    if c == 0 {
        return Ok(h.link);
    }
    let (_, e) = cell_range(page, &h, c - 1)?;
    Ok(get_u64(page, e - 8))
}

#[cfg(test)]
/// Sets child `c` (numbered as in [`child_at`]).
pub fn set_child(page: &mut [u8], c: usize, pid: PageId) -> Result<()> {
    let mut h = hdr(page)?;
    if h.kind != NodeKind::Internal {
        return Err(corrupt(page, "expected an internal node"));
    }
    if c == 0 {
        h.link = pid;
        put_hdr(page, &h);
    } else {
        let (_, e) = cell_range(page, &h, c - 1)?;
        put_u64(page, e - 8, pid);
    }
    Ok(())
}

/// An internal node's leftmost child and its (separator, child) cells.
pub type InternalEntries<'a> = (PageId, Vec<(&'a [u8], PageId)>);

/// The separators and children of an internal node: (leftmost child, [(key, child)]).
pub fn internal_entries(page: &[u8]) -> Result<InternalEntries<'_>> {
    let h = hdr(page)?;
    if h.kind != NodeKind::Internal {
        return Err(corrupt(page, "expected an internal node"));
    }
    let cells = (0..h.n)
        .map(|i| {
            let (s, e) = cell_range(page, &h, i)?;
            Ok((cell_key(&page[s..]), get_u64(page, e - 8)))
        })
        .collect::<Result<_>>()?;
    Ok((h.link, cells))
}

/// Index of the child whose key range holds `key` (the number of separators `<= key`).
pub fn child_index_le(page: &[u8], key: &[u8]) -> Result<usize> {
    Ok(match search(page, key)? {
        Search::Found(i) => i + 1,
        Search::NotFound(i) => i,
    })
}
/// Index of the child holding the largest keys `< key` (the number of separators `< key`).
pub fn child_index_lt(page: &[u8], key: &[u8]) -> Result<usize> {
    Ok(match search(page, key)? {
        Search::Found(i) | Search::NotFound(i) => i,
    })
}

/// Inserts `cell` as slot `idx` if it fits (compacting the page first if only the fragmented
/// space makes it fit). Returns false (page unchanged) if it does not fit.
fn insert_raw(page: &mut [u8], h: &mut Hdr, idx: usize, cell: &[u8]) -> Result<bool> {
    let need = cell.len() + SLOT_BYTES;
    if h.contiguous() < need {
        if h.contiguous() + h.frag < need {
            return Ok(false);
        }
        compact_h(page, h)?;
        if h.contiguous() < need {
            return Err(corrupt(page, "node space accounting is inconsistent"));
        }
    }
    h.cell_start -= cell.len();
    page[h.cell_start..h.cell_start + cell.len()].copy_from_slice(cell);
    let s = SLOTS_START + SLOT_BYTES * idx;
    page.copy_within(s..h.slots_end(), s + SLOT_BYTES);
    put_u16(page, s, h.cell_start as u16);
    h.n += 1;
    put_hdr(page, h);
    Ok(true)
}

/// Removes slot `idx` and its cell (zeroing the cell bytes).
fn remove_raw(page: &mut [u8], h: &mut Hdr, idx: usize) -> Result<()> {
    let (s, e) = cell_range(page, h, idx)?;
    page[s..e].fill(0);
    if s == h.cell_start {
        h.cell_start = e;
    } else {
        h.frag += e - s;
    }
    let at = SLOTS_START + SLOT_BYTES * idx;
    let end = h.slots_end();
    page.copy_within(at + SLOT_BYTES..end, at);
    page[end - SLOT_BYTES..end].fill(0);
    h.n -= 1;
    put_hdr(page, h);
    Ok(())
}

fn compact_h(page: &mut [u8], h: &mut Hdr) -> Result<()> {
    let cells = raw_cells(page, h)?;
    let total: usize = cells.iter().map(Vec::len).sum();
    if total > page.len() - h.slots_end() {
        return Err(corrupt(page, "node cells overlap"));
    }
    let mut pos = page.len();
    for (i, c) in cells.iter().enumerate() {
        pos -= c.len();
        page[pos..pos + c.len()].copy_from_slice(c);
        put_u16(page, SLOTS_START + SLOT_BYTES * i, pos as u16);
    }
    page[h.slots_end()..pos].fill(0);
    h.cell_start = pos;
    h.frag = 0;
    put_hdr(page, h);
    Ok(())
}

#[cfg(test)]
/// Rewrites the node so all free space is contiguous (cells packed at the page end in slot
/// order, slot 0's cell last in the page; the gap zeroed).
pub fn compact(page: &mut [u8]) -> Result<()> {
    let mut h = hdr(page)?;
    compact_h(page, &mut h)
}

/// Rebuilds `page` as a node of `kind` holding `cells` (raw cell bytes, in key order).
fn rebuild(page: &mut [u8], kind: NodeKind, link: PageId, cells: &[Vec<u8>]) -> Result<()> {
    let need: usize = cells.iter().map(|c| c.len() + SLOT_BYTES).sum();
    if need > usable_bytes(page.len()) {
        return Err(corrupt(page, "cells do not fit in a node"));
    }
    init(page, kind, link);
    let mut h = hdr(page)?;
    for (i, c) in cells.iter().enumerate() {
        insert_raw(page, &mut h, i, c)?;
    }
    Ok(())
}

fn debug_validate(page: &[u8]) -> Result<()> {
    if cfg!(debug_assertions) {
        validate(page)?;
    }
    Ok(())
}

/// Inserts or replaces `key` in a leaf with the value `val` (in place when the new cell is no
/// larger; otherwise the old cell is dropped and the new one allocated, compacting the page if
/// only the fragmented space makes it fit). `Err(PutError::NoSpace)`: it does not fit; the page
/// is unchanged.
pub fn leaf_put(
    page: &mut [u8],
    key: &[u8],
    val: LeafValue<'_>,
) -> std::result::Result<(), PutError> {
    let at = search(page, key)?;
    leaf_put_at(page, key, val, at)
}

/// [`leaf_put`] where the caller already searched the page for `key` (`at`, from [`search`]
/// on this page as it is now): a plain change searches its leaf once, not once to plan and
/// again to apply.
pub fn leaf_put_at(
    page: &mut [u8],
    key: &[u8],
    val: LeafValue<'_>,
    at: Search,
) -> std::result::Result<(), PutError> {
    debug_validate(page)?;
    let mut h = hdr(page)?;
    if h.kind != NodeKind::Leaf {
        return Err(corrupt(page, "expected a leaf").into());
    }
    debug_assert_eq!(Ok(at), search_h(page, &h, key), "a stale search result");
    let cell = leaf_cell(key, val)?;
    let fits = match at {
        Search::Found(i) if i < h.n => {
            let (s, e) = cell_range(page, &h, i)?;
            let old = e - s;
            if cell.len() <= old {
                page[s..s + cell.len()].copy_from_slice(&cell);
                page[s + cell.len()..e].fill(0);
                h.frag += old - cell.len();
                put_hdr(page, &h);
                true
            } else if h.contiguous() + h.frag + old < cell.len() {
                false
            } else {
                remove_raw(page, &mut h, i)?;
                if !insert_raw(page, &mut h, i, &cell)? {
                    return Err(corrupt(page, "node space accounting is inconsistent").into());
                }
                true
            }
        }
        Search::NotFound(i) if i <= h.n => insert_raw(page, &mut h, i, &cell)?,
        _ => return Err(corrupt(page, "a search result outside the node").into()),
    };
    if fits {
        Ok(())
    } else {
        Err(PutError::NoSpace)
    }
}

/// Whether [`leaf_put`] of `key` with `val` succeeds on `page` (false: it fails with `NoSpace`
/// and changes nothing), found without changing the page.
pub fn leaf_value_fits(page: &[u8], key: &[u8], val: LeafValue<'_>) -> Result<bool> {
    let cell = match val {
        LeafValue::Inline(v) => LEAF_INLINE_OVERHEAD + key.len() + v.len(),
        LeafValue::Overflow { .. } => LEAF_OVERFLOW_OVERHEAD + key.len(),
    };
    fits_cell(page, key, cell)
}

/// Whether a leaf cell of `cell` bytes for `key` fits as [`leaf_put`] would place it.
fn fits_cell(page: &[u8], key: &[u8], cell: usize) -> Result<bool> {
    fits_cell_at(page, cell, search(page, key)?)
}

/// Whether [`leaf_put_at`] of `key` with an inline value of `value_len` bytes at `at` (the
/// caller's search of the page for `key`) succeeds, found without changing the page.
pub fn leaf_put_fits_at(page: &[u8], key: &[u8], value_len: usize, at: Search) -> Result<bool> {
    fits_cell_at(page, LEAF_INLINE_OVERHEAD + key.len() + value_len, at)
}

/// Whether a leaf cell of `cell` bytes fits as [`leaf_put_at`] would place it at `at`.
fn fits_cell_at(page: &[u8], cell: usize, at: Search) -> Result<bool> {
    let h = hdr(page)?;
    if h.kind != NodeKind::Leaf {
        return Err(corrupt(page, "expected a leaf"));
    }
    // The same tests as `leaf_put`: in place, or after removing the old cell, or a new slot.
    Ok(match at {
        Search::Found(i) => {
            let (s, e) = cell_range(page, &h, i)?;
            cell <= e - s || h.contiguous() + h.frag + (e - s) >= cell
        }
        Search::NotFound(_) => h.contiguous() + h.frag >= cell + SLOT_BYTES,
    })
}

/// Whether `page` would be under-full ([`is_underfull`]) once [`leaf_del`] removed `key` (as it
/// is, if `key` is not there).
pub fn underfull_after_del(page: &[u8], key: &[u8]) -> Result<bool> {
    let h = hdr(page)?;
    if h.kind != NodeKind::Leaf {
        return Err(corrupt(page, "expected a leaf"));
    }
    let freed = match search_h(page, &h, key)? {
        Search::Found(i) => {
            let (s, e) = cell_range(page, &h, i)?;
            e - s + SLOT_BYTES
        }
        Search::NotFound(_) => 0,
    };
    let used = usable_bytes(page.len())
        .checked_sub(h.contiguous() + h.frag)
        .and_then(|u| u.checked_sub(freed))
        .ok_or_else(|| corrupt(page, "node space accounting is inconsistent"))?;
    Ok(used < usable_bytes(page.len()) / 4)
}

/// [`leaf_put`] of an inline value: what `Redo::LeafPut` replays.
pub fn leaf_put_inline(
    page: &mut [u8],
    key: &[u8],
    value: &[u8],
) -> std::result::Result<(), PutError> {
    leaf_put(page, key, LeafValue::Inline(value))
}

/// Removes `key` from a leaf; false if it was not there. What `Redo::LeafDel` replays.
pub fn leaf_del(page: &mut [u8], key: &[u8]) -> Result<bool> {
    debug_validate(page)?;
    let mut h = hdr(page)?;
    if h.kind != NodeKind::Leaf {
        return Err(corrupt(page, "expected a leaf"));
    }
    match search_h(page, &h, key)? {
        Search::Found(i) => {
            remove_raw(page, &mut h, i)?;
            Ok(true)
        }
        Search::NotFound(_) => Ok(false),
    }
}

/// Inserts the separator `key` with the child holding keys `>= key` into an internal node.
pub fn internal_insert(
    page: &mut [u8],
    key: &[u8],
    child: PageId,
) -> std::result::Result<(), PutError> {
    debug_validate(page)?;
    let mut h = hdr(page)?;
    if h.kind != NodeKind::Internal {
        return Err(corrupt(page, "expected an internal node").into());
    }
    let cell = internal_cell(key, child)?;
    match search_h(page, &h, key)? {
        Search::Found(_) => Err(corrupt(page, "separator already present").into()),
        Search::NotFound(i) => {
            if insert_raw(page, &mut h, i, &cell)? {
                Ok(())
            } else {
                Err(PutError::NoSpace)
            }
        }
    }
}

/// Removes cell `i` (leaf or internal; for an internal node this drops child `i + 1`).
pub fn remove_cell(page: &mut [u8], i: usize) -> Result<()> {
    let mut h = hdr(page)?;
    remove_raw(page, &mut h, i)
}

/// Full structural check of a node: header bounds, every cell in bounds, no overlapping cells,
/// the free-space accounting exact, keys strictly ascending.
pub fn validate(page: &[u8]) -> Result<()> {
    let h = hdr(page)?;
    let mut ranges = (0..h.n)
        .map(|i| cell_range(page, &h, i))
        .collect::<Result<Vec<_>>>()?;
    for i in 1..h.n {
        if key_h(page, &h, i - 1)? >= key_h(page, &h, i)? {
            return Err(corrupt(page, "node keys are not strictly ascending"));
        }
    }
    ranges.sort_unstable();
    if ranges.windows(2).any(|w| w[0].1 > w[1].0) {
        return Err(corrupt(page, "node cells overlap"));
    }
    let live: usize = ranges.iter().map(|(s, e)| e - s).sum();
    if live + h.frag != page.len() - h.cell_start {
        return Err(corrupt(page, "node free-space accounting is inconsistent"));
    }
    Ok(())
}
