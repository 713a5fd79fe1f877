//! Overflow chains: a value too large to be stored inline in a leaf (see `node.rs` for the
//! limit) is written to a chain of overflow pages (page type 4), and the leaf cell keeps the total
//! length and the first page id. All integers little-endian.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 48 | page header (`page.rs`) |
//! | 48 | 8 | next page of the chain (0 = this is the last page) |
//! | 56 | 4 | data bytes in this page, `d` |
//! | 60 | d | data; the rest of the page is zero |
//!
//! Every page but the last is full (`d = page size - 60`); the last holds the remainder (a chain
//! always has at least one page). The number of pages is therefore `ceil(total / (P - 60))`, which
//! readers use to reject cycles and truncated or overlong chains.

use super::PageStore;
use crate::error::{Error, Result};
use crate::page::{self, get_u32, get_u64, put_u32, put_u64, PageId, PageType, NO_PAGE};

const OFF_NEXT: usize = page::PAGE_HEADER_BYTES;
const OFF_LEN: usize = page::PAGE_HEADER_BYTES + 8;
/// Offset of the data in an overflow page.
pub const DATA_START: usize = page::PAGE_HEADER_BYTES + 12;

/// Data bytes per overflow page.
pub fn capacity(page_size: usize) -> usize {
    page_size.saturating_sub(DATA_START)
}

/// Number of pages of a chain holding `total_len` bytes.
pub fn pages_for(page_size: usize, total_len: usize) -> usize {
    total_len.div_ceil(capacity(page_size).max(1)).max(1)
}

fn corrupt(page: &[u8], reason: &'static str) -> Error {
    let pid = if page.len() >= page::PAGE_HEADER_BYTES {
        page::page_id(page)
    } else {
        NO_PAGE
    };
    Error::CorruptPage { pid, reason }
}

fn check(page: &[u8]) -> Result<()> {
    if page.len() <= DATA_START {
        return Err(corrupt(page, "overflow page too small"));
    }
    if page::page_type(page) != Some(PageType::Overflow) {
        return Err(corrupt(page, "expected an overflow page"));
    }
    Ok(())
}

/// Next page of the chain (0 = last).
pub fn next(page: &[u8]) -> Result<PageId> {
    check(page)?;
    Ok(get_u64(page, OFF_NEXT))
}

/// The data held by this page, bounds-checked.
pub fn data(page: &[u8]) -> Result<&[u8]> {
    check(page)?;
    let len = get_u32(page, OFF_LEN) as usize;
    if len > capacity(page.len()) {
        return Err(corrupt(page, "overflow data length out of range"));
    }
    Ok(&page[DATA_START..DATA_START + len])
}

/// Formats the body of an overflow page with `data` (at most [`capacity`] bytes).
pub fn init(page: &mut [u8], next: PageId, data: &[u8]) -> Result<()> {
    if data.len() > capacity(page.len()) {
        return Err(Error::InvalidArgument(format!(
            "{} bytes exceed an overflow page's capacity",
            data.len()
        )));
    }
    page::set_page_type(page, PageType::Overflow);
    page[page::PAGE_HEADER_BYTES..].fill(0);
    put_u64(page, OFF_NEXT, next);
    put_u32(page, OFF_LEN, data.len() as u32);
    page[DATA_START..DATA_START + data.len()].copy_from_slice(data);
    Ok(())
}

/// Writes `data` to a new chain and returns its first page.
pub fn write_chain<S: PageStore>(store: &mut S, data: &[u8]) -> Result<PageId> {
    let ps = store.page_size();
    if data.len() > u32::MAX as usize {
        return Err(Error::ValueTooLong {
            len: data.len(),
            max: u32::MAX as usize,
        });
    }
    let cap = capacity(ps);
    if cap == 0 {
        return Err(Error::Config(format!("page size {ps} too small")));
    }
    let n = pages_for(ps, data.len());
    let pids = (0..n)
        .map(|_| store.alloc_page(PageType::Overflow))
        .collect::<Result<Vec<_>>>()?;
    for (i, &pid) in pids.iter().enumerate() {
        let chunk = &data[(i * cap).min(data.len())..((i + 1) * cap).min(data.len())];
        let next = pids.get(i + 1).copied().unwrap_or(NO_PAGE);
        store.write_page(pid, |p| init(p, next, chunk))??;
    }
    Ok(pids[0])
}

/// Walks a chain of `total_len` bytes, checking its shape, and calls `f` with each page's data.
/// Returns the page ids.
fn walk<S: PageStore>(
    store: &mut S,
    first: PageId,
    total_len: u32,
    mut f: impl FnMut(&[u8]),
) -> Result<Vec<PageId>> {
    let ps = store.page_size();
    let cap = capacity(ps);
    let total = total_len as usize;
    let n = pages_for(ps, total);
    let mut pids = Vec::with_capacity(n);
    let mut pid = first;
    for i in 0..n {
        if pid == NO_PAGE {
            return Err(Error::CorruptPage {
                pid: first,
                reason: "overflow chain shorter than its value",
            });
        }
        let want = (total - i * cap).min(cap);
        let next = store.read_page(pid, |p| -> Result<PageId> {
            let d = data(p)?;
            if d.len() != want {
                return Err(corrupt(p, "overflow page holds the wrong number of bytes"));
            }
            f(d);
            next(p)
        })??;
        pids.push(pid);
        pid = next;
    }
    if pid != NO_PAGE {
        return Err(Error::CorruptPage {
            pid: first,
            reason: "overflow chain longer than its value",
        });
    }
    Ok(pids)
}

/// Reads a whole chain of `total_len` bytes.
pub fn read_chain<S: PageStore>(store: &mut S, first: PageId, total_len: u32) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(total_len as usize);
    read_chain_into(store, first, total_len, &mut out)?;
    Ok(out)
}

/// [`read_chain`], appending the value to `out`.
pub fn read_chain_into<S: PageStore>(
    store: &mut S,
    first: PageId,
    total_len: u32,
    out: &mut Vec<u8>,
) -> Result<()> {
    walk(store, first, total_len, |d| out.extend_from_slice(d)).map(|_| ())
}

/// Checks a chain's shape and returns its pages.
pub fn chain_pages<S: PageStore>(
    store: &mut S,
    first: PageId,
    total_len: u32,
) -> Result<Vec<PageId>> {
    walk(store, first, total_len, |_| {})
}

/// Frees every page of a chain.
pub fn free_chain<S: PageStore>(store: &mut S, first: PageId, total_len: u32) -> Result<()> {
    for pid in chain_pages(store, first, total_len)? {
        store.free_page(pid)?;
    }
    Ok(())
}
