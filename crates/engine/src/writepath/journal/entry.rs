//! Journal entries: how a batch of page images is laid out in the journal area.
//!
//! Two formats, chosen by the checkpoint method (docs/format.md, "Journal write path"):
//!
//! * **Conventional** (host copy, ISC-A, ISC-B, ISC-C): each entry is a descriptor sector (magic
//!   `WJ`, page id, page LSN, image length, CRC32C) followed by the raw page image, entries back
//!   to back. Images start on sector boundaries, so the device's copy commands (which address
//!   sectors, like NVMe Copy) can move them, but one sector past a mapping-unit boundary: an FTL
//!   that maps 4 KiB units can remap only the images that happen to be aligned and copies the
//!   rest (paper 004 Figure 7, "unnecessary write operation").
//! * **Sector-aligned** (Check-In, paper 004 section III.E and Algorithm 2): no inline
//!   descriptor (an image names its page itself: the page header or the blob header carries the
//!   page id and a CRC32C, and the log carries its location); each image is compressed (LZ4) when
//!   that makes it smaller and sized by Algorithm 2 against the device's mapping unit `U`: larger
//!   than `U`, it is padded to a whole number of units (FULL) and starts on a unit boundary; not
//!   larger, it is rounded up to a quarter of a unit (at least a sector) and, unless that is a
//!   whole unit, is PARTIAL: partial images are merged into shared units after the FULL ones,
//!   and a checkpoint can move them home only by copying.

use crate::page::{self, put_u32, put_u64, PageId};
use crate::writepath::pack::{self, Codec};

/// Bytes of a conventional entry's descriptor that carry data (the rest of its sector is zero).
pub(crate) const DESCRIPTOR_BYTES: usize = 32;
/// The descriptor's magic, "WJ".
const DESCRIPTOR_MAGIC: u16 = 0x4a57;

/// Which format a journal uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Conventional,
    SectorAligned,
}

/// One image placed in a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placed {
    pub pid: PageId,
    /// Offset of the image in the batch.
    pub at: usize,
    /// Stored bytes of the image (the page size when raw, else the blob's length).
    pub len: usize,
    /// Bytes the image occupies in the journal (`len` rounded up by the format).
    pub span: usize,
    /// Merged with other images into a shared mapping unit (Check-In's PARTIAL type).
    pub merged: bool,
}

/// A batch ready to append: its bytes and where each image is in them.
pub(crate) struct Batch {
    pub bytes: Vec<u8>,
    pub placed: Vec<Placed>,
    /// Bytes of descriptors and of padding (not image bytes).
    pub descriptor_bytes: u64,
    pub padding_bytes: u64,
}

/// Algorithm 2's size of an image of `len` stored bytes: (bytes it takes, whether it is
/// PARTIAL). `unit` is the mapping unit, `sector` the device block.
pub(crate) fn sized(len: usize, unit: usize, sector: usize) -> (usize, bool) {
    if len > unit {
        (len.div_ceil(unit) * unit, false)
    } else {
        let quarter = (unit / 4).max(sector).div_ceil(sector) * sector;
        let size = len.div_ceil(quarter) * quarter;
        (size.min(unit), size < unit)
    }
}

/// Lays out `pages` (sealed images of `page_size` bytes) as one batch. `unit` and `sector` are
/// the device's mapping unit and block; the batch starts on a unit boundary of the device and
/// its length is a whole number of sectors.
pub(crate) fn build(
    format: Format,
    pages: &[(PageId, &[u8])],
    page_size: usize,
    unit: usize,
    sector: usize,
) -> Batch {
    match format {
        Format::Conventional => conventional(pages, page_size, sector),
        Format::SectorAligned => sector_aligned(pages, unit, sector),
    }
}

fn conventional(pages: &[(PageId, &[u8])], page_size: usize, sector: usize) -> Batch {
    let entry = sector + page_size;
    let mut bytes = vec![0u8; entry * pages.len()];
    let mut placed = Vec::with_capacity(pages.len());
    for (k, (pid, img)) in pages.iter().enumerate() {
        let d = k * entry;
        put_u32(&mut bytes, d + 4, u32::from(DESCRIPTOR_MAGIC));
        put_u64(&mut bytes, d + 8, *pid);
        put_u64(&mut bytes, d + 16, page::page_lsn(img));
        put_u32(&mut bytes, d + 24, page_size as u32);
        let c = crc32c::crc32c(&bytes[d + 4..d + DESCRIPTOR_BYTES]);
        put_u32(&mut bytes, d, c);
        bytes[d + sector..d + entry].copy_from_slice(img);
        placed.push(Placed {
            pid: *pid,
            at: d + sector,
            len: page_size,
            span: page_size,
            merged: false,
        });
    }
    Batch {
        bytes,
        descriptor_bytes: (sector * pages.len()) as u64,
        padding_bytes: 0,
        placed,
    }
}

fn sector_aligned(pages: &[(PageId, &[u8])], unit: usize, sector: usize) -> Batch {
    let images: Vec<Vec<u8>> = pages
        .iter()
        .map(|(pid, img)| pack::stored_bytes(*pid, &pack::compress_page(Codec::Lz4, img)))
        .collect();
    let sizes: Vec<(usize, bool)> = images
        .iter()
        .map(|i| sized(i.len(), unit, sector))
        .collect();
    // FULL images first, each on a unit boundary (their sizes are whole units); then the
    // partial ones, packed into shared units (an image never straddles a unit boundary).
    let mut placed = Vec::with_capacity(pages.len());
    let mut at = 0usize;
    for (k, &(span, partial)) in sizes.iter().enumerate() {
        if !partial {
            placed.push((k, at, span, false));
            at += span;
        }
    }
    for (k, &(span, partial)) in sizes.iter().enumerate() {
        if partial {
            if at / unit != (at + span - 1) / unit {
                at = at.next_multiple_of(unit);
            }
            placed.push((k, at, span, true));
            at += span;
        }
    }
    let total = at.next_multiple_of(sector);
    let mut bytes = vec![0u8; total];
    let mut out = Vec::with_capacity(pages.len());
    let mut image_bytes = 0u64;
    for &(k, at, span, merged) in &placed {
        let img = &images[k];
        bytes[at..at + img.len()].copy_from_slice(img);
        image_bytes += img.len() as u64;
        out.push(Placed {
            pid: pages[k].0,
            at,
            len: img.len(),
            span,
            merged,
        });
    }
    Batch {
        padding_bytes: total as u64 - image_bytes,
        descriptor_bytes: 0,
        bytes,
        placed: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm_2_sizes() {
        // 512-byte units: everything above a unit is whole sectors; small images round to a
        // sector (a quarter unit is less than a sector) and are FULL.
        assert_eq!(sized(1300, 512, 512), (1536, false));
        assert_eq!(sized(100, 512, 512), (512, false));
        // 4 KiB units: larger images take whole units, smaller ones quarter units.
        assert_eq!(sized(4096, 4096, 512), (4096, false));
        assert_eq!(sized(4097, 4096, 512), (8192, false));
        assert_eq!(sized(1300, 4096, 512), (2048, true));
        assert_eq!(sized(3500, 4096, 512), (4096, false));
        assert_eq!(sized(40, 2048, 512), (512, true));
    }

    fn page_of(pid: PageId, fill: u8) -> Vec<u8> {
        let mut p = vec![fill; 4096];
        page::init(&mut p, pid, page::PageType::Leaf);
        page::seal(&mut p);
        p
    }

    #[test]
    fn sector_aligned_batches_put_full_images_on_unit_boundaries() {
        let a = page_of(3, 0);
        let mut b = page_of(4, 0);
        // An incompressible body: stored raw.
        let mut r = 0x9E37_79B9_7F4A_7C15u64;
        for x in b.iter_mut().skip(64) {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            *x = r as u8;
        }
        page::seal(&mut b);
        let batch = build(Format::SectorAligned, &[(3, &a), (4, &b)], 4096, 2048, 512);
        let raw = batch.placed.iter().find(|p| p.pid == 4).unwrap();
        assert_eq!((raw.len, raw.span, raw.at % 2048), (4096, 4096, 0));
        let small = batch.placed.iter().find(|p| p.pid == 3).unwrap();
        assert!(small.merged && small.span == 512, "{small:?}");
        assert_eq!(batch.bytes.len() % 512, 0);
        let mut out = vec![0u8; 4096];
        pack::unpack_into(&batch.bytes, small.at, small.len, 3, &mut out).unwrap();
        assert_eq!(out, a);
    }

    #[test]
    fn conventional_entries_sit_one_sector_past_their_descriptors() {
        let a = page_of(9, 1);
        let batch = build(Format::Conventional, &[(9, &a), (9, &a)], 4096, 4096, 512);
        assert_eq!(batch.bytes.len(), 2 * (512 + 4096));
        assert_eq!(batch.placed[1].at, 512 + 4096 + 512);
        assert_eq!(&batch.bytes[512..4608], &a[..]);
        assert_eq!(batch.descriptor_bytes, 1024);
    }
}
