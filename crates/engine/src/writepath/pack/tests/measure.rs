//! Measured compression ratio, packing efficiency and throughput on YCSB-like pages in batches
//! of 64 (paper 002 section 6.2). Only sanity is checked; run in release with `--nocapture` to
//! see the numbers.

use super::*;
use std::time::Instant;

/// `n` YCSB-like pages of `size` bytes, full or filled to 50..100 % like B-tree leaves after
/// splits.
fn ycsb_pages(n: usize, size: usize, full: bool, rng: &mut Pcg64Mcg) -> Vec<(PageId, Vec<u8>)> {
    (0..n as u64)
        .map(|pid| {
            let fill = if full {
                1.0
            } else {
                rng.random_range(0.5..1.0)
            };
            let p = make_page_filled(pid + 1, size, Content::Ycsb, fill, rng);
            (pid + 1, p)
        })
        .collect()
}

#[test]
fn ycsb_like_batches() {
    let mut rng = Pcg64Mcg::seed_from_u64(0x41);
    let batches = if cfg!(debug_assertions) { 4 } else { 64 };
    for full in [true, false] {
        for &page_size in &PAGE_SIZES {
            let pages = ycsb_pages(64 * batches, page_size, full, &mut rng);
            for codec in [
                Codec::Lz4,
                Codec::Zstd { level: 1 },
                Codec::Zstd { level: 3 },
            ] {
                let stats = measure(&pages, codec, page_size, full);
                if full && matches!(codec, Codec::Lz4) && page_size == 4096 {
                    let r = stats.compression_ratio();
                    assert!((0.36..0.46).contains(&r), "YCSB-like LZ4 ratio {r}");
                }
            }
        }
    }
}

/// Compresses and packs `pages` in batches of 64, reads every page back, prints the numbers.
fn measure(pages: &[(PageId, Vec<u8>)], codec: Codec, page_size: usize, full: bool) -> PackStats {
    let mut stats = PackStats::default();
    let start = Instant::now();
    let mut packed = Vec::new();
    for chunk in pages.chunks(64) {
        let b = pack_batch(&compress_all(codec, chunk), SLOT_BYTES).unwrap();
        stats.add(&b, page_size);
        packed.push(b);
    }
    let pack_secs = start.elapsed().as_secs_f64();
    let start = Instant::now();
    for (b, chunk) in packed.iter().zip(pages.chunks(64)) {
        for (loc, (pid, p)) in b.locations.iter().zip(chunk) {
            let (off, len) = (loc.offset as usize, loc.len as usize);
            let got = unpack(b.read_slots(loc), off, len, *pid, page_size);
            assert!(got.unwrap() == *p);
        }
    }
    let unpack_secs = start.elapsed().as_secs_f64();
    let mb = stats.uncompressed_bytes as f64 / 1e6;
    println!(
        "YCSB-like {page_size:>5} B pages ({}), {codec:?}: ratio {:.3}, packing efficiency {:.3}, \
         written/uncompressed {:.3}, raw {}/{}, compress+pack {:.0} MB/s, unpack {:.0} MB/s",
        if full { "full" } else { "fill 50-100%" },
        stats.compression_ratio(),
        stats.packing_efficiency(),
        stats.write_ratio(),
        stats.raw_pages,
        stats.pages,
        mb / pack_secs,
        mb / unpack_secs,
    );
    assert!(stats.compression_ratio() < 0.6);
    assert!(stats.packing_efficiency() > 0.5);
    assert_eq!(
        stats.stored_bytes + stats.padding_bytes,
        stats.slots * SLOT_BYTES as u64
    );
    stats
}
