//! The page format shared by every page type: a 48-byte little-endian header with a CRC32C
//! checksum, the page id, the page LSN and a short write history (paper 002 section 4.2 estimates
//! a page's deathtime from it). Layout (bytes):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | CRC32C of the whole page, computed with this field zero |
//! | 4 | 2 | magic `0x5746` ("WF") |
//! | 6 | 1 | page type ([`PageType`]) |
//! | 7 | 1 | format version (1) |
//! | 8 | 8 | page id |
//! | 16 | 8 | page LSN: LSN of the last log record applied to the page |
//! | 24 | 24 | write history: page LSN at each of the last 3 writes to the device, newest first |
//! | 48 | .. | body, by page type |

use crate::error::{Error, Result};

pub type PageId = u64;
pub type Lsn = u64;

pub const PAGE_HEADER_BYTES: usize = 48;
pub const PAGE_MAGIC: u16 = 0x5746;
pub const PAGE_FORMAT_VERSION: u8 = 1;
pub const WRITE_HISTORY_LEN: usize = 3;
/// Page id 0 is the meta page; no tree page ever has it, so it doubles as "none".
pub const NO_PAGE: PageId = 0;

// The header's fields, as laid out above, fill it exactly.
const _: () = assert!(24 + 8 * WRITE_HISTORY_LEN == PAGE_HEADER_BYTES);

/// Kinds of pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PageType {
    Free = 0,
    Meta = 1,
    Internal = 2,
    Leaf = 3,
    Overflow = 4,
}

impl PageType {
    pub fn from_u8(v: u8) -> Option<PageType> {
        Some(match v {
            0 => PageType::Free,
            1 => PageType::Meta,
            2 => PageType::Internal,
            3 => PageType::Leaf,
            4 => PageType::Overflow,
            _ => return None,
        })
    }
}

#[inline]
pub fn get_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}
#[inline]
pub fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
#[inline]
pub fn get_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}
#[inline]
pub fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Formats `page` as an empty page of `kind` with id `pid` (LSN 0, no write history).
pub fn init(page: &mut [u8], pid: PageId, kind: PageType) {
    page.fill(0);
    put_u16(page, 4, PAGE_MAGIC);
    page[6] = kind as u8;
    page[7] = PAGE_FORMAT_VERSION;
    put_u64(page, 8, pid);
}

pub fn page_type(page: &[u8]) -> Option<PageType> {
    PageType::from_u8(page[6])
}
pub fn set_page_type(page: &mut [u8], kind: PageType) {
    page[6] = kind as u8;
}
pub fn page_id(page: &[u8]) -> PageId {
    get_u64(page, 8)
}
pub fn page_lsn(page: &[u8]) -> Lsn {
    get_u64(page, 16)
}
pub fn set_page_lsn(page: &mut [u8], lsn: Lsn) {
    put_u64(page, 16, lsn);
}

/// Page LSNs at the last writes to the device, newest first (0 = none).
pub fn write_history(page: &[u8]) -> [Lsn; WRITE_HISTORY_LEN] {
    let mut h = [0; WRITE_HISTORY_LEN];
    for (i, v) in h.iter_mut().enumerate() {
        *v = get_u64(page, 24 + 8 * i);
    }
    h
}

/// Records that the page is being written at its current page LSN (shifts the history).
pub fn note_write(page: &mut [u8]) {
    let lsn = page_lsn(page);
    let h = write_history(page);
    if h[0] == lsn {
        return;
    }
    for i in (1..WRITE_HISTORY_LEN).rev() {
        put_u64(page, 24 + 8 * i, h[i - 1]);
    }
    put_u64(page, 24, lsn);
}

/// The CRC32C of `page` as [`seal`] computes it (its checksum field taken as zero).
pub fn checksum(page: &[u8]) -> u32 {
    crc(page)
}

fn crc(page: &[u8]) -> u32 {
    let c = crc32c::crc32c(&[0u8; 4]);
    crc32c::crc32c_append(c, &page[4..])
}

/// Computes and stores the checksum. Call right before the page goes to a device.
pub fn seal(page: &mut [u8]) {
    let c = crc(page);
    put_u32(page, 0, c);
}

/// Checks a page read from a device: checksum, magic, version, type and (if given) its id.
pub fn verify(page: &[u8], expected: Option<PageId>) -> Result<()> {
    let pid = page_id(page);
    let corrupt = |why: &'static str| Error::CorruptPage {
        pid: expected.unwrap_or(pid),
        reason: why,
    };
    if page.len() < PAGE_HEADER_BYTES {
        return Err(corrupt("shorter than a page header"));
    }
    if get_u32(page, 0) != crc(page) {
        return Err(corrupt("checksum mismatch (torn or corrupted write)"));
    }
    if get_u16(page, 4) != PAGE_MAGIC {
        return Err(corrupt("bad magic"));
    }
    if page[7] != PAGE_FORMAT_VERSION {
        return Err(corrupt("unknown page format version"));
    }
    if page_type(page).is_none() {
        return Err(corrupt("unknown page type"));
    }
    if let Some(e) = expected {
        if pid != e {
            return Err(corrupt(
                "page id does not match its location (misdirected write)",
            ));
        }
    }
    Ok(())
}

/// True if the page is all zeros (never written).
pub fn is_zeroed(page: &[u8]) -> bool {
    page.iter().all(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_verify_roundtrip_and_detects_flips() {
        let mut p = vec![0u8; 4096];
        init(&mut p, 7, PageType::Leaf);
        set_page_lsn(&mut p, 99);
        note_write(&mut p);
        seal(&mut p);
        verify(&p, Some(7)).unwrap();
        assert_eq!(write_history(&p), [99, 0, 0]);
        assert!(verify(&p, Some(8)).is_err());
        for bit in [0usize, 40, 4095 * 8 + 7] {
            let mut q = p.clone();
            q[bit / 8] ^= 1 << (bit % 8);
            assert!(verify(&q, Some(7)).is_err(), "bit {bit}");
        }
    }
}
