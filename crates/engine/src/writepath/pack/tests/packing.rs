//! Packing: round trips of batches of real leaf pages for every page size and codec, the packing
//! invariants (no blob crosses a slot boundary, one aligned read per page, padding accounting),
//! and best fit against first fit.

use super::*;

#[test]
fn best_fit_fills_the_tightest_slot() {
    // 3000 opens slot 0, 2000 opens slot 1, 1000 fits both: best fit picks slot 0 (96 left
    // after it), 1500 then only fits slot 1.
    let plan = plan_best_fit(&[3000, 2000, 1000, 1500], 4096);
    assert_eq!(plan.places, vec![(0, 0), (1, 0), (0, 3000), (1, 2000)]);
    assert_eq!(plan.slots, 2);
    // A 9000-byte blob spans 3 slots; the 3288-byte tail of slot 2 takes the 3000 blob.
    let plan = plan_best_fit(&[3000, 9000], 4096);
    assert_eq!((plan.places, plan.slots), (vec![(2, 808), (0, 0)], 3));
    // Two-slot blobs chain: 5000 starts in the 1192-byte tail of the 7000 and still ends
    // within 2 slots; the next 5000 would need 3 slots from the 288-byte tail, so it does not.
    let plan = plan_best_fit(&[5000, 5000, 7000], 4096);
    assert_eq!(
        (plan.places, plan.slots),
        (vec![(1, 2904), (3, 0), (0, 0)], 5)
    );
    assert!(pack_batch(&[], 1000).is_err());
    let empty = pack_batch(&[], SLOT_BYTES).unwrap();
    assert_eq!((empty.slot_count(), empty.compression_ratio()), (0, 1.0));
}

#[test]
fn round_trip_random_batches_every_page_size_and_codec() {
    let mut rng = Pcg64Mcg::seed_from_u64(0xBA7C);
    for &page_size in &PAGE_SIZES {
        for &codec in &CODECS {
            let mut raw = 0;
            for round in 0..6 {
                let n = if round == 0 {
                    1
                } else {
                    rng.random_range(2..=64)
                };
                let pages: Vec<(PageId, Vec<u8>)> = (0..n)
                    .map(|i| {
                        let pid = 1000 + round * 100 + i as u64;
                        // Raw pages are checked with the page checksum, so a store without
                        // compression only ever sees sealed pages (no never-written zero page).
                        let content = match random_content(&mut rng) {
                            Content::Zero if matches!(codec, Codec::None) => Content::Noise,
                            c => c,
                        };
                        (pid, make_page(pid, page_size, content, &mut rng))
                    })
                    .collect();
                let input = compress_all(codec, &pages);
                raw += input.iter().filter(|(_, c)| c.is_raw()).count();
                let b = pack_batch(&input, SLOT_BYTES).unwrap();
                check_batch(&b, &pages, page_size);
                if matches!(codec, Codec::None) {
                    assert_eq!(b.slot_count(), n * page_size / SLOT_BYTES);
                    assert_eq!(b.padding_bytes, 0);
                }
            }
            assert!(raw > 0, "no raw page at {page_size} {codec:?}");
        }
    }
}

#[test]
fn every_content_kind_round_trips_and_noise_is_raw() {
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    for &page_size in &PAGE_SIZES {
        for content in [
            Content::Ycsb,
            Content::RandomValues,
            Content::Text,
            Content::Noise,
            Content::Zero,
        ] {
            let pages: Vec<_> = (1..=5u64)
                .map(|pid| (pid, make_page(pid, page_size, content, &mut rng)))
                .collect();
            for &codec in &CODECS[1..] {
                let input = compress_all(codec, &pages);
                let raw = input.iter().all(|(_, c)| c.is_raw());
                assert_eq!(
                    raw,
                    matches!(content, Content::Noise),
                    "{content:?} {codec:?}"
                );
                check_batch(&pack_batch(&input, SLOT_BYTES).unwrap(), &pages, page_size);
            }
        }
    }
}

/// First fit in input order: each blob goes to the lowest slot with room (the baseline).
fn first_fit_by_order(lens: &[usize], slot: usize) -> usize {
    let mut free: Vec<usize> = Vec::new();
    for &len in lens {
        if len > slot {
            let span = len.div_ceil(slot);
            free.extend(std::iter::repeat_n(0, span - 1));
            free.push(span * slot - len);
        } else if let Some(f) = free.iter_mut().find(|f| **f >= len) {
            *f -= len;
        } else {
            free.push(slot - len);
        }
    }
    free.len()
}

#[test]
fn best_fit_decreasing_uses_no_more_slots_than_first_fit() {
    let mut rng = Pcg64Mcg::seed_from_u64(11);
    let (mut best, mut first) = (0usize, 0usize);
    for _ in 0..500 {
        let n = rng.random_range(1..=64);
        let lens: Vec<usize> = (0..n)
            .map(|_| rng.random_range(BLOB_HEADER_BYTES + 1..=SLOT_BYTES))
            .collect();
        let plan = plan_best_fit(&lens, SLOT_BYTES);
        let lower_bound = lens.iter().sum::<usize>().div_ceil(SLOT_BYTES);
        assert!(plan.slots >= lower_bound);
        let ff = first_fit_by_order(&lens, SLOT_BYTES);
        assert!(
            plan.slots <= ff + 1,
            "best fit {} first fit {ff}",
            plan.slots
        );
        best += plan.slots;
        first += ff;
    }
    println!("random sizes, 500 batches: best-fit decreasing {best} slots, first fit {first}");
    assert!(best < first, "best fit {best} >= first fit {first}");
}
