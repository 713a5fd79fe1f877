//! Page-wise compression and 4 KiB page packing for the out-of-place write path (paper 002,
//! sections 3.1-3.2 and 6.2): every page of a write batch is compressed on its own
//! ([`compress_page`]), then the blobs are placed into 4 KiB slots by best-fit decreasing bin
//! packing ([`pack_batch`]) so that a page is always fetched with ONE aligned read: one slot for
//! a blob of at most 4 KiB, `ceil(len / 4096)` consecutive slots for a larger one (the same read
//! an uncompressed page of that size would need).
//!
//! # Blob format
//!
//! A compressed page is stored as a *blob*: a 21-byte header then the compressed bytes.
//! Little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 1 | tag: `0xB0` (magic, high nibble) \| codec (low nibble: 1 = LZ4 block, 2 = zstd frame) |
//! | 1 | 8 | page id |
//! | 9 | 4 | uncompressed length (the page size) |
//! | 13 | 4 | stored length: compressed bytes after the header |
//! | 17 | 4 | CRC32C of header bytes 0..17 followed by the compressed bytes |
//! | 21 | stored length | compressed bytes |
//!
//! # Raw pages (do not compress well enough)
//!
//! A page whose blob would not be smaller than `max_stored_ratio` (default 0.97) of the page is
//! stored *raw*: the page image itself, with **no blob header** (a 4 KiB page plus a header would
//! not fit a 4 KiB slot). A raw page is still self-describing: the page format carries its own
//! CRC32C and page id, which [`unpack`] checks with [`page::verify`] (so pages must be sealed, as
//! [`super::WritePath::write_pages`] requires). Whoever maps page ids to locations tells raw from
//! compressed by the stored length alone: **stored length == page size means raw**; a blob is
//! always strictly shorter than the page. Raw pages of 4, 8 or 16 KiB fill 1, 2 or 4 whole slots.
//!
//! # Packing
//!
//! Blobs are sorted by decreasing length. A blob of at most one slot goes to the open slot with
//! the least remaining space that still fits it (best fit), or to a new slot: it never crosses a
//! slot boundary. A blob longer than a slot needs `k = ceil(len / slot)` slots; it starts in the
//! newest slot if it still ends within `k` slots from there, else at the next slot boundary, so it
//! too is read with one aligned read of `k` slots (the least possible) while large blobs of 8 and
//! 16 KiB pages chain without leaving most of a slot empty. Unused bytes are zero-filled
//! *padding*: DB-issued bytes that carry no user data, counted in [`PackedBatch::padding_bytes`]
//! so that `stored_bytes + padding_bytes == slots * slot_bytes`.

use crate::error::{Error, Result};
use crate::page::{self, get_u32, get_u64, put_u32, put_u64, PageId, PAGE_HEADER_BYTES};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeSet;

/// The read and alignment unit (paper 002 section 3.2: aligned 4 KiB reads are the fastest).
pub const SLOT_BYTES: usize = 4096;
/// Bytes of the header in front of the compressed bytes of a blob.
pub const BLOB_HEADER_BYTES: usize = 21;
/// High nibble of a blob's tag byte.
pub const BLOB_MAGIC: u8 = 0xB0;
/// A page is stored raw unless its blob is at most this fraction of the page size.
pub const DEFAULT_MAX_STORED_RATIO: f64 = 0.97;

const TAG_LZ4: u8 = 1;
const TAG_ZSTD: u8 = 2;

/// The compression algorithm of the write path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Codec {
    /// Store every page raw (packing still applies).
    None,
    /// LZ4 block format (`lz4_flex`), as in paper 002.
    #[default]
    Lz4,
    /// zstd at `level` (1..=22; negative levels are the fast modes).
    Zstd { level: i32 },
}

/// How a page ended up stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StoredAs {
    /// The page image itself, no blob header (see the module documentation).
    Raw,
    Lz4,
    Zstd,
}

/// A compressed page before packing, made by [`compress_page`]: the blob header is written by
/// [`pack_batch`], which knows the page id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compressed {
    pub stored_as: StoredAs,
    /// Length of the page.
    pub uncompressed_len: u32,
    /// The compressed bytes (without header), or the page image if raw.
    pub payload: Vec<u8>,
}

impl Compressed {
    /// A page stored as it is.
    pub fn raw(page: &[u8]) -> Compressed {
        Compressed {
            stored_as: StoredAs::Raw,
            uncompressed_len: page.len() as u32,
            payload: page.to_vec(),
        }
    }

    pub fn is_raw(&self) -> bool {
        self.stored_as == StoredAs::Raw
    }

    /// Bytes this page takes in a slot: header + compressed bytes, or the page size if raw.
    pub fn stored_len(&self) -> usize {
        if self.is_raw() {
            self.payload.len()
        } else {
            BLOB_HEADER_BYTES + self.payload.len()
        }
    }
}

/// Compresses one page with `codec` and the default threshold ([`DEFAULT_MAX_STORED_RATIO`]).
pub fn compress_page(codec: Codec, page: &[u8]) -> Compressed {
    compress_page_with(codec, page, DEFAULT_MAX_STORED_RATIO)
}

/// Compresses one page; it is stored raw if codec is `None`, if the blob (header included) would
/// exceed `max_stored_ratio * page.len()` or not be shorter than the page, or if the codec fails.
/// Never fails and never panics (a NaN ratio means raw).
pub fn compress_page_with(codec: Codec, page: &[u8], max_stored_ratio: f64) -> Compressed {
    let ratio = max_stored_ratio.clamp(0.0, 1.0); // NaN stays NaN: raw
    let limit = ((page.len() as f64 * ratio) as usize).min(page.len().saturating_sub(1));
    let budget = limit.saturating_sub(BLOB_HEADER_BYTES);
    if budget == 0 || u32::try_from(page.len()).is_err() {
        return Compressed::raw(page);
    }
    // LZ4 needs room for its worst case; zstd gives up early when the budget overflows.
    let (stored_as, mut out, n) = match codec {
        Codec::None => return Compressed::raw(page),
        Codec::Lz4 => {
            let mut out = vec![0u8; lz4_flex::block::get_maximum_output_size(page.len())];
            let n = lz4_flex::block::compress_into(page, &mut out).ok();
            (StoredAs::Lz4, out, n)
        }
        Codec::Zstd { level } => {
            let mut out = vec![0u8; budget];
            let n = zstd_compress(page, &mut out, level);
            (StoredAs::Zstd, out, n)
        }
    };
    match n {
        Some(n) if n > 0 && n <= budget => out.truncate(n),
        _ => return Compressed::raw(page),
    }
    Compressed {
        stored_as,
        uncompressed_len: page.len() as u32,
        payload: out,
    }
}

thread_local! {
    /// zstd contexts, reused: making one per page costs more than compressing the page.
    static ZSTD_C: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> =
        const { RefCell::new(None) };
    static ZSTD_D: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
}

fn zstd_compress(page: &[u8], out: &mut [u8], level: i32) -> Option<usize> {
    ZSTD_C.with(|c| {
        let mut c = c.try_borrow_mut().ok()?;
        if c.as_ref().is_none_or(|(l, _)| *l != level) {
            *c = Some((level, zstd::bulk::Compressor::new(level).ok()?));
        }
        c.as_mut()?.1.compress_to_buffer(page, out).ok()
    })
}

fn zstd_decompress(data: &[u8], out: &mut [u8]) -> Option<usize> {
    ZSTD_D.with(|d| {
        let mut d = d.try_borrow_mut().ok()?;
        if d.is_none() {
            *d = Some(zstd::bulk::Decompressor::new().ok()?);
        }
        d.as_mut()?.decompress_to_buffer(data, out).ok()
    })
}

#[cfg(test)]
/// Where a packed page lives within its batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobLocation {
    pub pid: PageId,
    /// Index of the blob's first slot within the batch.
    pub slot: u32,
    /// Byte offset of the blob within that slot.
    pub offset: u32,
    /// Stored length: header + compressed bytes, or the page size if raw.
    pub len: u32,
}

#[cfg(test)]
impl BlobLocation {
    /// True if the page is stored raw (its stored length is the page size).
    pub fn is_raw(&self, page_size: usize) -> bool {
        self.len as usize == page_size
    }

    /// Slots the one aligned read of this page fetches from `self.slot`: `ceil(len / slot_bytes)`.
    pub fn slot_span(&self, slot_bytes: usize) -> usize {
        (self.offset as usize + self.len as usize).div_ceil(slot_bytes.max(1))
    }

    /// Byte offset of the blob from the start of the batch image.
    pub fn batch_offset(&self, slot_bytes: usize) -> usize {
        self.slot as usize * slot_bytes + self.offset as usize
    }
}

/// Where [`plan_best_fit`] puts each blob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// `(slot, offset within slot)` of each blob, in input order.
    pub places: Vec<(usize, usize)>,
    /// Slots used.
    pub slots: usize,
}

/// Best-fit decreasing placement of blobs of lengths `lens` into slots of `slot_bytes`; see the
/// module documentation. Zero-length blobs are placed at the start of a slot of their own.
pub fn plan_best_fit(lens: &[usize], slot_bytes: usize) -> Plan {
    let slot_bytes = slot_bytes.max(1);
    let mut order: Vec<usize> = (0..lens.len()).collect();
    order.sort_by(|&a, &b| lens[b].cmp(&lens[a]).then(a.cmp(&b)));
    // Open slots with space left, as (remaining bytes, slot); the smallest fitting one wins.
    let mut open: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut free: Vec<usize> = Vec::new(); // remaining bytes of each slot
    let mut places = vec![(0, 0); lens.len()];
    for i in order {
        let len = lens[i];
        let fit = if len == 0 || len > slot_bytes {
            None
        } else {
            open.range((len, 0)..).next().copied()
        };
        if let Some((rem, s)) = fit {
            open.remove(&(rem, s));
            places[i] = (s, slot_bytes - rem);
            free[s] -= len;
            if free[s] > 0 {
                open.insert((free[s], s));
            }
            continue;
        }
        // A blob longer than a slot may start inside the newest slot if it still ends within
        // `span` slots: it is then still read with one aligned read of `span` slots.
        let span = len.div_ceil(slot_bytes).max(1);
        let start = match free.len().checked_sub(1).map(|s| (s, free[s])) {
            Some((s, r))
                if len > slot_bytes && r > 0 && slot_bytes - r + len <= span * slot_bytes =>
            {
                open.remove(&(r, s));
                (s + 1) * slot_bytes - r
            }
            _ => free.len() * slot_bytes,
        };
        places[i] = (start / slot_bytes, start % slot_bytes);
        let slots = (start + len)
            .div_ceil(slot_bytes)
            .max(start / slot_bytes + 1);
        free.resize(slots, 0);
        free[slots - 1] = slots * slot_bytes - (start + len);
        if free[slots - 1] > 0 {
            open.insert((free[slots - 1], slots - 1));
        }
    }
    Plan {
        places,
        slots: free.len(),
    }
}

#[cfg(test)]
/// A packed batch: the slot images to write with one sequential I/O, and where each page went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedBatch {
    pub slot_bytes: usize,
    /// `slot_count() * slot_bytes` bytes; padding is zero.
    pub image: Vec<u8>,
    /// One per input page, in input order.
    pub locations: Vec<BlobLocation>,
    /// Sum of the pages' uncompressed lengths.
    pub uncompressed_bytes: u64,
    /// Sum of the stored lengths (headers included).
    pub stored_bytes: u64,
    /// Zero bytes written only to fill slots.
    pub padding_bytes: u64,
}

#[cfg(test)]
impl PackedBatch {
    pub fn slot_count(&self) -> usize {
        self.image.len() / self.slot_bytes
    }

    /// The bytes the one aligned read of `loc` fetches (its slots); pass them to [`unpack`] with
    /// `loc.offset`.
    pub fn read_slots(&self, loc: &BlobLocation) -> &[u8] {
        let start = (loc.slot as usize * self.slot_bytes).min(self.image.len());
        let end = (start + loc.slot_span(self.slot_bytes) * self.slot_bytes).min(self.image.len());
        &self.image[start..end]
    }

    /// Stored bytes over uncompressed bytes (lower is better; 1.0 for an empty batch).
    pub fn compression_ratio(&self) -> f64 {
        ratio(self.stored_bytes, self.uncompressed_bytes)
    }
}

#[cfg(test)]
fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        return 1.0;
    }
    num as f64 / den as f64
}

#[cfg(test)]
/// Packs compressed pages into slots of `slot_bytes` (normally [`SLOT_BYTES`]). `slot_bytes`
/// must be a power of two of at least 512 (`Error::InvalidArgument` otherwise).
pub fn pack_batch(pages: &[(PageId, Compressed)], slot_bytes: usize) -> Result<PackedBatch> {
    if !slot_bytes.is_power_of_two() || slot_bytes < 512 {
        return Err(Error::InvalidArgument(format!(
            "slot size {slot_bytes} must be a power of two of at least 512"
        )));
    }
    let blobs: Vec<Vec<u8>> = pages.iter().map(|(pid, c)| stored_bytes(*pid, c)).collect();
    let slices: Vec<&[u8]> = blobs.iter().map(|b| b.as_slice()).collect();
    let lens: Vec<usize> = slices.iter().map(|b| b.len()).collect();
    let plan = plan_best_fit(&lens, slot_bytes);
    let (image, _) = pack_planned(&slices, &plan, slot_bytes);
    let locations = pages
        .iter()
        .zip(&lens)
        .zip(&plan.places)
        .map(|(((pid, _), &len), &(slot, offset))| BlobLocation {
            pid: *pid,
            slot: slot as u32,
            offset: offset as u32,
            len: len as u32,
        })
        .collect();
    let stored_bytes: u64 = lens.iter().map(|&l| l as u64).sum();
    Ok(PackedBatch {
        slot_bytes,
        padding_bytes: image.len() as u64 - stored_bytes,
        image,
        locations,
        uncompressed_bytes: pages
            .iter()
            .map(|(_, c)| u64::from(c.uncompressed_len))
            .sum(),
        stored_bytes,
    })
}

/// The stored bytes of page `pid`: its blob (header and compressed bytes), or the page itself
/// when it is stored raw.
pub fn stored_bytes(pid: PageId, c: &Compressed) -> Vec<u8> {
    let mut v = vec![0u8; c.stored_len()];
    write_blob(&mut v, pid, c);
    v
}

/// [`pack_stored`] with a plan already made for exactly these items' lengths.
pub fn pack_planned(items: &[&[u8]], plan: &Plan, slot_bytes: usize) -> (Vec<u8>, Vec<usize>) {
    debug_assert_eq!(items.len(), plan.places.len());
    let mut image = vec![0u8; plan.slots * slot_bytes];
    let mut at = Vec::with_capacity(items.len());
    for (b, &(slot, offset)) in items.iter().zip(&plan.places) {
        let o = slot * slot_bytes + offset;
        image[o..o + b.len()].copy_from_slice(b);
        at.push(o);
    }
    (image, at)
}

/// Writes the blob of page `pid` into `dst` (exactly `c.stored_len()` bytes).
fn write_blob(dst: &mut [u8], pid: PageId, c: &Compressed) {
    let tag = match c.stored_as {
        StoredAs::Raw => {
            dst.copy_from_slice(&c.payload);
            return;
        }
        StoredAs::Lz4 => TAG_LZ4,
        StoredAs::Zstd => TAG_ZSTD,
    };
    dst[0] = BLOB_MAGIC | tag;
    put_u64(dst, 1, pid);
    put_u32(dst, 9, c.uncompressed_len);
    put_u32(dst, 13, c.payload.len() as u32);
    dst[BLOB_HEADER_BYTES..].copy_from_slice(&c.payload);
    put_u32(dst, 17, blob_crc(dst));
}

fn blob_crc(blob: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&blob[..17]), &blob[BLOB_HEADER_BYTES..])
}

#[cfg(test)]
/// Reads page `expected_pid` of `page_size` bytes from the blob at `buf[offset..offset + len]`
/// (`buf` = the slots of one aligned read and `offset` = [`BlobLocation::offset`], or the whole
/// batch image and [`BlobLocation::batch_offset`]). See [`unpack_into`].
pub fn unpack(
    buf: &[u8],
    offset: usize,
    len: usize,
    expected_pid: PageId,
    page_size: usize,
) -> Result<Vec<u8>> {
    let mut out = vec![0u8; page_size];
    unpack_into(buf, offset, len, expected_pid, &mut out)?;
    Ok(out)
}

/// [`unpack`] into `out` (whose length is the page size). A raw page (`len == out.len()`) must
/// pass [`page::verify`]; a blob must have a valid tag, stored length, CRC, page id and
/// uncompressed length, and decompress to exactly the page size. Anything else is
/// `Error::CorruptPage` (never a panic); `out` is then unspecified.
pub fn unpack_into(
    buf: &[u8],
    offset: usize,
    len: usize,
    expected_pid: PageId,
    out: &mut [u8],
) -> Result<()> {
    let corrupt = |reason: &'static str| Error::CorruptPage {
        pid: expected_pid,
        reason,
    };
    let blob = offset
        .checked_add(len)
        .and_then(|end| buf.get(offset..end))
        .ok_or_else(|| corrupt("blob location is outside the bytes read"))?;
    let page_size = out.len();
    if len == page_size {
        if page_size < PAGE_HEADER_BYTES {
            return Err(corrupt("page size is smaller than a page header"));
        }
        page::verify(blob, Some(expected_pid))?;
        out.copy_from_slice(blob);
        return Ok(());
    }
    if len < BLOB_HEADER_BYTES {
        return Err(corrupt("blob is shorter than its header"));
    }
    if blob[0] & 0xF0 != BLOB_MAGIC {
        return Err(corrupt("bad blob magic"));
    }
    if get_u32(blob, 13) as usize != len - BLOB_HEADER_BYTES {
        return Err(corrupt("blob stored length does not match its location"));
    }
    if get_u32(blob, 17) != blob_crc(blob) {
        return Err(corrupt("blob checksum mismatch (torn or corrupted write)"));
    }
    if get_u64(blob, 1) != expected_pid {
        return Err(corrupt("blob page id does not match (misdirected write)"));
    }
    if get_u32(blob, 9) as usize != page_size {
        return Err(corrupt("blob uncompressed length is not the page size"));
    }
    let data = &blob[BLOB_HEADER_BYTES..];
    let n = match blob[0] & 0x0F {
        TAG_LZ4 => lz4_flex::block::decompress_into(data, out)
            .map_err(|_| corrupt("LZ4 data does not decompress"))?,
        TAG_ZSTD => {
            zstd_decompress(data, out).ok_or_else(|| corrupt("zstd data does not decompress"))?
        }
        _ => return Err(corrupt("unknown blob codec")),
    };
    if n != page_size {
        return Err(corrupt("blob decompresses to the wrong length"));
    }
    Ok(())
}

#[cfg(test)]
/// Running totals over many batches, for the write path's counters and reports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackStats {
    pub batches: u64,
    pub pages: u64,
    pub raw_pages: u64,
    pub uncompressed_bytes: u64,
    pub stored_bytes: u64,
    pub padding_bytes: u64,
    pub slots: u64,
}

#[cfg(test)]
impl PackStats {
    /// Adds a batch whose pages have `page_size` bytes (raw pages are counted by that).
    pub fn add(&mut self, b: &PackedBatch, page_size: usize) {
        self.batches += 1;
        self.pages += b.locations.len() as u64;
        self.raw_pages += b.locations.iter().filter(|l| l.is_raw(page_size)).count() as u64;
        self.uncompressed_bytes += b.uncompressed_bytes;
        self.stored_bytes += b.stored_bytes;
        self.padding_bytes += b.padding_bytes;
        self.slots += b.slot_count() as u64;
    }

    /// Stored bytes over uncompressed bytes.
    pub fn compression_ratio(&self) -> f64 {
        ratio(self.stored_bytes, self.uncompressed_bytes)
    }

    /// Stored bytes over stored + padding bytes.
    pub fn packing_efficiency(&self) -> f64 {
        ratio(self.stored_bytes, self.stored_bytes + self.padding_bytes)
    }

    /// Written bytes (stored + padding) over uncompressed bytes: the batch-level write reduction.
    pub fn write_ratio(&self) -> f64 {
        ratio(
            self.stored_bytes + self.padding_bytes,
            self.uncompressed_bytes,
        )
    }
}

#[cfg(test)]
mod tests;
