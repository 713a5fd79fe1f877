//! Tests of page-wise compression and 4 KiB page packing: the blob format and its corruption
//! checks (`blob`), the packing invariants and best fit (`packing`), and the measured
//! compression ratio, packing efficiency and throughput on YCSB-like pages (`measure`;
//! `cargo test --release -p wafer-engine --lib writepath::pack::tests::measure -- --nocapture`
//! prints them).

mod blob;
mod measure;
mod packing;

use super::*;
use crate::btree::node::{self, NodeKind};
use crate::page::{self, PageId, PageType};
use rand::{Rng, RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;

const PAGE_SIZES: [usize; 3] = [4096, 8192, 16384];
const CODECS: [Codec; 4] = [
    Codec::None,
    Codec::Lz4,
    Codec::Zstd { level: 1 },
    Codec::Zstd { level: 3 },
];
const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// A sealed leaf page whose body is one phrase repeated (compresses well).
fn text_page(pid: PageId, size: usize) -> Vec<u8> {
    let mut p = vec![0u8; size];
    page::init(&mut p, pid, PageType::Leaf);
    for (i, b) in p[PAGE_HEADER_BYTES..].iter_mut().enumerate() {
        *b = b"hello wafer, "[i % 13];
    }
    page::seal(&mut p);
    p
}

/// A sealed leaf page whose body is pseudo-random (does not compress).
fn noise_page(pid: PageId, size: usize) -> Vec<u8> {
    let mut p = vec![0u8; size];
    page::init(&mut p, pid, PageType::Leaf);
    for (i, b) in p[PAGE_HEADER_BYTES..].iter_mut().enumerate() {
        let h = crc32c::crc32c(&(i as u64 ^ pid << 32).to_le_bytes());
        *b = (u64::from(h).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8;
    }
    page::seal(&mut p);
    p
}

/// What the values of a generated page look like.
#[derive(Clone, Copy, Debug)]
enum Content {
    /// YCSB-like: 120-byte values, each a random run of printable characters repeated until the
    /// value ends; pages LZ4-compress to about 41 % (paper 002, section 3.1, YCSB).
    Ycsb,
    /// Values of uniformly random bytes (only the keys and the slot array compress).
    RandomValues,
    /// Highly compressible text-like values.
    Text,
    /// A page body of random bytes: incompressible, stored raw.
    Noise,
    /// A page of zeros (never written).
    Zero,
}

/// Literal run of a 120-byte YCSB-like value (calibrated for a ~41 % LZ4 page ratio).
const YCSB_LITERAL: usize = 46;
const YCSB_VALUE: usize = 120;

fn value(rng: &mut Pcg64Mcg, content: Content) -> Vec<u8> {
    match content {
        Content::Ycsb => {
            let run: Vec<u8> = (0..YCSB_LITERAL)
                .map(|_| ALNUM[rng.random_range(0..ALNUM.len())])
                .collect();
            run.iter().copied().cycle().take(YCSB_VALUE).collect()
        }
        Content::RandomValues => {
            let mut v = vec![0u8; rng.random_range(20..300)];
            rng.fill_bytes(&mut v);
            v
        }
        _ => {
            let words: [&[u8]; 6] = [
                b"order ",
                b"status ",
                b"shipped ",
                b"42 ",
                b"east ",
                b"item ",
            ];
            let n = rng.random_range(30..200);
            let mut v = Vec::with_capacity(n + 8);
            while v.len() < n {
                v.extend_from_slice(words[rng.random_range(0..words.len())]);
            }
            v
        }
    }
}

/// A sealed leaf page full of records (or a noise / zero page).
fn make_page(pid: PageId, size: usize, content: Content, rng: &mut Pcg64Mcg) -> Vec<u8> {
    make_page_filled(pid, size, content, 1.0, rng)
}

/// [`make_page`] with records until `fill` of the page is used (1.0: until the next one does not
/// fit; the free space of a leaf is zeros).
fn make_page_filled(
    pid: PageId,
    size: usize,
    content: Content,
    fill: f64,
    rng: &mut Pcg64Mcg,
) -> Vec<u8> {
    let mut p = vec![0u8; size];
    if let Content::Zero = content {
        return p;
    }
    page::init(&mut p, pid, PageType::Leaf);
    if let Content::Noise = content {
        rng.fill_bytes(&mut p[page::PAGE_HEADER_BYTES..]);
    } else {
        node::init(&mut p, NodeKind::Leaf, 0);
        let mut id = rng.random_range(0..1_000_000_000u64);
        while node::free_bytes(&p).unwrap() as f64 >= (1.0 - fill) * size as f64 {
            id += rng.random_range(1..10);
            let key = format!("user{id:020}");
            if node::leaf_put_inline(&mut p, key.as_bytes(), &value(rng, content)).is_err() {
                break;
            }
        }
        page::set_page_lsn(&mut p, rng.random_range(1..1 << 40));
        page::note_write(&mut p);
    }
    page::seal(&mut p);
    p
}

fn random_content(rng: &mut Pcg64Mcg) -> Content {
    match rng.random_range(0..10) {
        0..=3 => Content::Ycsb,
        4 | 5 => Content::RandomValues,
        6 | 7 => Content::Text,
        8 => Content::Noise,
        _ => Content::Zero,
    }
}

fn compress_all(codec: Codec, pages: &[(PageId, Vec<u8>)]) -> Vec<(PageId, Compressed)> {
    pages
        .iter()
        .map(|(pid, p)| (*pid, compress_page(codec, p)))
        .collect()
}

/// Checks every packing invariant of `b` for pages of `page_size` and that each page reads back
/// with one aligned read of its slots.
fn check_batch(b: &PackedBatch, pages: &[(PageId, Vec<u8>)], page_size: usize) {
    let slot = b.slot_bytes;
    assert_eq!(b.image.len(), b.slot_count() * slot);
    assert_eq!(b.locations.len(), pages.len());
    let mut used = vec![false; b.image.len()];
    let mut stored = 0u64;
    for (loc, (pid, p)) in b.locations.iter().zip(pages) {
        let (off, len) = (loc.offset as usize, loc.len as usize);
        assert_eq!(loc.pid, *pid);
        assert!(len <= page_size);
        // A blob never crosses more slot boundaries than its length forces: it is fetched with
        // one aligned read of ceil(len / slot) slots (1 for a blob of at most a slot).
        assert!(
            off < slot && off + len <= len.div_ceil(slot).max(1) * slot,
            "blob needs more slots than ceil(len / slot): {loc:?}"
        );
        if len == page_size {
            assert_eq!(
                off, 0,
                "raw page does not start on a slot boundary: {loc:?}"
            );
        }
        let start = loc.batch_offset(slot);
        for u in &mut used[start..start + len] {
            assert!(!*u, "blobs overlap at {loc:?}");
            *u = true;
        }
        stored += len as u64;
        // One aligned read: exactly the slots the location names.
        let read = b.read_slots(loc);
        assert_eq!(read.len(), loc.slot_span(slot) * slot);
        assert_eq!(read.len(), (off + len).div_ceil(slot) * slot);
        let got = unpack(read, off, len, *pid, page_size).unwrap();
        assert!(got == *p, "page {pid} differs after the round trip");
        if loc.is_raw(page_size) {
            assert_eq!(&b.image[start..start + len], &p[..]);
        }
    }
    assert_eq!(stored, b.stored_bytes);
    assert_eq!(
        b.stored_bytes + b.padding_bytes,
        (b.slot_count() * slot) as u64
    );
    let padding: Vec<usize> = (0..b.image.len()).filter(|&i| !used[i]).collect();
    assert_eq!(padding.len() as u64, b.padding_bytes);
    assert!(
        padding.iter().all(|&i| b.image[i] == 0),
        "padding is not zero"
    );
}
