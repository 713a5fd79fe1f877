//! The blob format: header layout, raw pages, round trips, and corrupt or random input giving
//! `Error::CorruptPage` (never a panic).

use super::*;
use crate::error::Error;
use proptest::prelude::*;
use rand::Rng;

#[test]
fn header_layout_is_as_documented() {
    let p = text_page(0x0102_0304_0506_0708, 4096);
    let c = compress_page(Codec::Lz4, &p);
    assert_eq!(c.stored_as, StoredAs::Lz4);
    let b = pack_batch(&[(0x0102_0304_0506_0708, c.clone())], SLOT_BYTES).unwrap();
    let blob = &b.image[..c.stored_len()];
    assert_eq!(blob[0], 0xB1);
    assert_eq!(&blob[1..9], &0x0102_0304_0506_0708u64.to_le_bytes());
    assert_eq!(get_u32(blob, 9), 4096);
    assert_eq!(get_u32(blob, 13) as usize, c.payload.len());
    assert_eq!(&blob[21..], &c.payload[..]);
    let crc = crc32c::crc32c(&[&blob[..17], &c.payload[..]].concat());
    assert_eq!(get_u32(blob, 17), crc);
}

#[test]
fn incompressible_and_tiny_pages_are_raw_not_errors() {
    let p = noise_page(3, 4096);
    for codec in [Codec::None, Codec::Lz4, Codec::Zstd { level: 3 }] {
        assert_eq!(compress_page(codec, &p), Compressed::raw(&p), "{codec:?}");
    }
    assert!(compress_page(Codec::Lz4, &[0u8; 16]).is_raw());
    assert!(compress_page(Codec::Lz4, &[]).is_raw());
    assert!(compress_page(Codec::Zstd { level: 99 }, &text_page(1, 4096)).stored_len() < 4096);
    // A threshold of 0 (or NaN) forces raw.
    assert!(compress_page_with(Codec::Lz4, &text_page(1, 4096), 0.0).is_raw());
    assert!(compress_page_with(Codec::Lz4, &text_page(1, 4096), f64::NAN).is_raw());
}

#[test]
fn roundtrip_raw_and_compressed_and_detects_mismatches() {
    let pages = [(5, text_page(5, 8192)), (6, noise_page(6, 8192))];
    let input: Vec<_> = pages
        .iter()
        .map(|(pid, p)| (*pid, compress_page(Codec::Lz4, p)))
        .collect();
    let b = pack_batch(&input, SLOT_BYTES).unwrap();
    assert_eq!(b.slot_count(), 3);
    for (loc, (pid, p)) in b.locations.iter().zip(&pages) {
        let (off, len) = (loc.batch_offset(SLOT_BYTES), loc.len as usize);
        assert_eq!(&unpack(&b.image, off, len, *pid, 8192).unwrap(), p);
        let wrong = unpack(&b.image, off, len, pid + 1, 8192);
        assert!(matches!(wrong, Err(Error::CorruptPage { .. })));
        assert!(unpack(&b.image, off, len, *pid, 4096).is_err());
    }
    // A raw page is checked with its own checksum: an unsealed one is corrupt.
    let b = pack_batch(&[(7, Compressed::raw(&[0u8; 4096]))], SLOT_BYTES).unwrap();
    assert!(unpack(&b.image, 0, 4096, 7, 4096).is_err());
}

#[test]
fn corrupted_blobs_are_errors() {
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    let pages: Vec<_> = [(1, Content::Ycsb), (2, Content::Noise), (3, Content::Text)]
        .into_iter()
        .map(|(pid, c)| (pid, make_page(pid, 8192, c, &mut rng)))
        .collect();
    for codec in [Codec::Lz4, Codec::Zstd { level: 3 }] {
        let b = pack_batch(&compress_all(codec, &pages), SLOT_BYTES).unwrap();
        for loc in &b.locations {
            let (off, len) = (loc.batch_offset(SLOT_BYTES), loc.len as usize);
            for _ in 0..200 {
                let mut img = b.image.clone();
                let bit = rng.random_range(0..len * 8);
                img[off + bit / 8] ^= 1 << (bit % 8);
                let r = unpack(&img, off, len, loc.pid, 8192);
                assert!(matches!(r, Err(Error::CorruptPage { .. })), "bit {bit}");
            }
            // Wrong page id, wrong length, wrong page size, truncated read.
            assert!(unpack(&b.image, off, len, loc.pid + 7, 8192).is_err());
            assert!(unpack(&b.image, off, len - 1, loc.pid, 8192).is_err());
            assert!(unpack(&b.image, off, len, loc.pid, 16384).is_err());
            assert!(unpack(&b.image[..off + len - 1], off, len, loc.pid, 8192).is_err());
        }
    }
}

proptest! {
    #[test]
    fn unpack_never_panics_on_random_input(
        buf in proptest::collection::vec(any::<u8>(), 0..9000),
        offset in 0usize..10_000,
        len in 0usize..10_000,
        pid in any::<u64>(),
        page_size in prop_oneof![Just(0usize), Just(4096), Just(8192), 0usize..20_000],
        tag in prop_oneof![Just(0xB1u8), Just(0xB2), any::<u8>()],
    ) {
        let mut buf = buf;
        if let Some(b) = buf.get_mut(offset) {
            *b = tag;
        }
        let _ = unpack(&buf, offset, len, pid, page_size);
        let _ = unpack(&buf, offset, len, pid, len);
    }

    #[test]
    fn unpack_never_panics_on_mangled_blobs(
        seed in any::<u64>(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        zstd in any::<bool>(),
    ) {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let pages = vec![(9, make_page(9, 4096, Content::Ycsb, &mut rng))];
        let codec = if zstd { Codec::Zstd { level: 1 } } else { Codec::Lz4 };
        let b = pack_batch(&compress_all(codec, &pages), SLOT_BYTES).unwrap();
        let loc = b.locations[0];
        let mut img = b.image.clone();
        for (at, v) in edits {
            let at = at % loc.len as usize;
            img[at] = v;
        }
        let r = unpack(&img, 0, loc.len as usize, 9, 4096);
        if img != b.image {
            prop_assert!(r.is_err());
        }
    }
}
