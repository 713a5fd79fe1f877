//! Node format: unit tests of the slotted-page functions, and decoding of garbage never panics.

use crate::btree::node::{self, LeafValue, NodeKind, PutError, Search};
use crate::btree::overflow;
use crate::page::{self, PageType, NO_PAGE};
use proptest::prelude::*;

fn leaf(page_size: usize, pid: u64) -> Vec<u8> {
    let mut p = vec![0; page_size];
    page::init(&mut p, pid, PageType::Leaf);
    node::init(&mut p, NodeKind::Leaf, NO_PAGE);
    p
}

#[test]
fn leaf_put_get_replace_delete() {
    let mut p = leaf(4096, 5);
    assert_eq!(node::free_bytes(&p).unwrap(), 4096 - 64);
    for k in [b"m".as_slice(), b"c", b"x", b"a"] {
        node::leaf_put_inline(&mut p, k, k).unwrap();
    }
    assert_eq!(node::cell_count(&p).unwrap(), 4);
    assert_eq!(node::search(&p, b"c").unwrap(), Search::Found(1));
    assert_eq!(node::search(&p, b"d").unwrap(), Search::NotFound(2));
    let keys: Vec<_> = node::leaf_entries(&p)
        .unwrap()
        .iter()
        .map(|e| e.0.to_vec())
        .collect();
    assert_eq!(
        keys,
        [b"a".to_vec(), b"c".to_vec(), b"m".to_vec(), b"x".to_vec()]
    );
    // Replace with a shorter, then a longer value.
    node::leaf_put_inline(&mut p, b"m", b"").unwrap();
    assert_eq!(node::leaf_cell_at(&p, 2).unwrap().1, LeafValue::Inline(b""));
    node::leaf_put_inline(&mut p, b"m", &[9; 300]).unwrap();
    assert_eq!(
        node::leaf_cell_at(&p, 2).unwrap().1,
        LeafValue::Inline(&[9; 300])
    );
    let ov = LeafValue::Overflow {
        total_len: 99_999,
        first: 77,
    };
    node::leaf_put(&mut p, b"c", ov).unwrap();
    assert_eq!(node::leaf_cell_at(&p, 1).unwrap().1, ov);
    node::validate(&p).unwrap();
    assert!(node::leaf_del(&mut p, b"m").unwrap());
    assert!(!node::leaf_del(&mut p, b"m").unwrap());
    node::validate(&p).unwrap();
    let used = (7 + 1 + 1) * 2 + (15 + 1) + 3 * 2;
    assert_eq!(node::used_bytes(&p).unwrap(), used);
}

#[test]
fn compacts_fragmented_space_and_reports_full() {
    let mut p = leaf(512, 1);
    let mut i = 0u32;
    while node::leaf_put_inline(&mut p, &i.to_be_bytes(), &[1; 40]).is_ok() {
        i += 1;
    }
    let n = node::cell_count(&p).unwrap();
    assert_eq!(n as u32, i);
    let full = p.clone();
    assert_eq!(
        node::leaf_put_inline(&mut p, b"zzzz", &[1; 40]),
        Err(PutError::NoSpace)
    );
    assert_eq!(p, full, "a failed put leaves the page unchanged");
    // Free space only as fragments in the middle of the cell area, then reuse it.
    for k in (0..i).step_by(2) {
        assert!(node::leaf_del(&mut p, &k.to_be_bytes()).unwrap());
    }
    node::validate(&p).unwrap();
    for k in (0..i).step_by(2) {
        node::leaf_put_inline(&mut p, &k.to_be_bytes(), &[2; 40]).unwrap();
    }
    node::validate(&p).unwrap();
    assert_eq!(node::cell_count(&p).unwrap(), n);
    // Deterministic: the same changes on a copy give the same bytes.
    let mut q = full.clone();
    for k in (0..i).step_by(2) {
        node::leaf_del(&mut q, &k.to_be_bytes()).unwrap();
    }
    for k in (0..i).step_by(2) {
        node::leaf_put_inline(&mut q, &k.to_be_bytes(), &[2; 40]).unwrap();
    }
    assert_eq!(p, q);
}

#[test]
fn split_and_merge_roundtrip() {
    for kind in [NodeKind::Leaf, NodeKind::Internal] {
        let mut l = vec![0; 1024];
        page::init(&mut l, 3, kind.page_type());
        node::init(&mut l, kind, 100);
        for i in 0..40u32 {
            let k = format!("key{i:04}");
            let r = match kind {
                NodeKind::Leaf => node::leaf_put_inline(&mut l, k.as_bytes(), b"vv"),
                NodeKind::Internal => node::internal_insert(&mut l, k.as_bytes(), 1000 + i as u64),
            };
            r.unwrap();
        }
        let orig = l.clone();
        let mut r = vec![0; 1024];
        page::init(&mut r, 4, kind.page_type());
        let at = node::split_point(&l).unwrap();
        assert!((15..=25).contains(&at), "{at}");
        let sep = node::split(&mut l, &mut r, at).unwrap();
        node::validate(&l).unwrap();
        node::validate(&r).unwrap();
        let (nl, nr) = (node::cell_count(&l).unwrap(), node::cell_count(&r).unwrap());
        match kind {
            NodeKind::Leaf => {
                assert_eq!(nl + nr, 40);
                assert_eq!(node::right_sibling(&l).unwrap(), 4);
                assert_eq!(node::right_sibling(&r).unwrap(), 100);
                assert!(node::key_at(&l, nl - 1).unwrap() < sep.as_slice());
                assert!(sep.as_slice() <= node::key_at(&r, 0).unwrap());
            }
            NodeKind::Internal => {
                assert_eq!(nl + nr, 39);
                assert_eq!(sep, format!("key{at:04}").into_bytes());
                assert_eq!(node::child_at(&r, 0).unwrap(), 1000 + at as u64);
            }
        }
        assert!(node::can_merge(&l, &r, &sep).unwrap());
        node::merge(&mut l, &r, &sep).unwrap();
        node::validate(&l).unwrap();
        let entries = |p: &[u8]| -> Vec<Vec<u8>> {
            (0..node::cell_count(p).unwrap())
                .map(|i| node::key_at(p, i).unwrap().to_vec())
                .collect()
        };
        assert_eq!(entries(&l), entries(&orig));
        match kind {
            NodeKind::Leaf => assert_eq!(node::right_sibling(&l).unwrap(), 100),
            NodeKind::Internal => {
                for c in 0..=40 {
                    assert_eq!(
                        node::child_at(&l, c).unwrap(),
                        node::child_at(&orig, c).unwrap()
                    );
                }
            }
        }
    }
}

#[test]
fn limits_and_separators() {
    assert_eq!(node::max_key_len(4096), 512);
    assert_eq!(node::max_leaf_cell_bytes(4096), 1342);
    assert_eq!(node::max_inline_value(4096, 10), 1342 - 17);
    assert_eq!(node::shortest_separator(b"abc", b"abd"), b"abd");
    assert_eq!(node::shortest_separator(b"abc", b"b"), b"b");
    assert_eq!(node::shortest_separator(b"ab", b"abcd"), b"abc");
    assert_eq!(node::shortest_separator(b"apple", b"banana"), b"b");
    assert!(node::check_page_size(256).is_err());
    assert!(node::check_page_size(65536).is_ok());
    // A leaf of the largest page size round-trips its offsets.
    let mut p = leaf(65536, 1);
    node::leaf_put_inline(&mut p, b"k", &[5; 16000]).unwrap();
    node::leaf_put_inline(&mut p, b"j", &[6; 16000]).unwrap();
    node::validate(&p).unwrap();
    assert!(node::leaf_del(&mut p, b"k").unwrap());
    node::validate(&p).unwrap();
}

#[test]
fn overflow_page_format() {
    let mut p = vec![0; 512];
    page::init(&mut p, 9, PageType::Overflow);
    overflow::init(&mut p, 10, &[7; 100]).unwrap();
    assert_eq!(overflow::next(&p).unwrap(), 10);
    assert_eq!(overflow::data(&p).unwrap(), &[7; 100]);
    assert!(overflow::init(&mut p, 0, &[0; 453]).is_err());
    assert_eq!(overflow::capacity(512), 452);
    assert_eq!(overflow::pages_for(512, 0), 1);
    assert_eq!(overflow::pages_for(512, 905), 3);
}

/// Every read and write function on one page; none may panic.
fn exercise(page: &[u8]) {
    let _ = node::validate(page);
    let _ = node::kind(page);
    let _ = node::free_bytes(page);
    let _ = node::is_underfull(page);
    let _ = node::search(page, b"key");
    let _ = node::search(page, b"");
    let _ = node::leaf_entries(page);
    let _ = node::internal_entries(page);
    let _ = node::split_point(page);
    let _ = node::child_index_le(page, b"m");
    let _ = node::child_index_lt(page, b"m");
    let _ = node::right_sibling(page);
    let _ = overflow::data(page);
    let _ = overflow::next(page);
    let n = node::cell_count(page).unwrap_or(0);
    for i in 0..n.min(64) + 2 {
        let _ = node::key_at(page, i);
        let _ = node::leaf_cell_at(page, i);
        let _ = node::child_at(page, i);
    }
    let mut q = page.to_vec();
    let _ = node::leaf_put_inline(&mut q, b"key", b"value");
    let _ = node::leaf_put_inline(&mut q, b"k", &[1; 100]);
    let _ = node::leaf_del(&mut q, b"key");
    let _ = node::internal_insert(&mut q, b"sep", 5);
    let _ = node::set_child(&mut q, 1, 5);
    let _ = node::remove_cell(&mut q, 0);
    let _ = node::compact(&mut q);
    let mut r = vec![0; page.len()];
    page::init(&mut r, 2, PageType::Leaf);
    let mut q = page.to_vec();
    let _ = node::split(&mut q, &mut r, 1);
    let mut q = page.to_vec();
    let _ = node::merge(&mut q, page, b"s");
    let _ = node::can_merge(page, page, b"s");
}

fn garbage_page() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(vec![512usize, 1024, 4096]),
        any::<u64>(),
        0u8..6,
        any::<[u8; 16]>(),
        0usize..8,
    )
        .prop_map(|(size, seed, ty, hdr, shrink)| {
            let mut x = seed | 1;
            let mut p: Vec<u8> = (0..size)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Mostly small bytes so lengths and offsets are often plausible.
                    if x % 3 == 0 {
                        (x >> 8) as u8
                    } else {
                        (x >> 8) as u8 & 0x07
                    }
                })
                .collect();
            p[6] = if ty < 4 { 2 + ty % 2 } else { ty };
            p[48..64].copy_from_slice(&hdr);
            // Mostly plausible header fields: a small count, the cell area start inside the
            // page, fragmented bytes within the cell area.
            if shrink > 0 {
                let cell_start = size - (hdr[1] as usize * shrink * 7) % (size / 2);
                page::put_u16(&mut p, 48, (hdr[0] % 40) as u16);
                page::put_u32(&mut p, 52, cell_start as u32);
                page::put_u16(
                    &mut p,
                    50,
                    (hdr[2] as usize % (size - cell_start + 1)) as u16,
                );
            }
            p
        })
}

/// Valid nodes with a few bytes flipped.
fn damaged_node() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<bool>(),
        1usize..60,
        prop::collection::vec((0usize..1024, any::<u8>()), 1..6),
    )
        .prop_map(|(is_leaf, n, flips)| {
            let kind = if is_leaf {
                NodeKind::Leaf
            } else {
                NodeKind::Internal
            };
            let mut p = vec![0; 1024];
            page::init(&mut p, 1, kind.page_type());
            node::init(&mut p, kind, 9);
            for i in 0..n as u32 {
                let k = (i * 7919).to_be_bytes();
                let _ = match kind {
                    NodeKind::Leaf => node::leaf_put_inline(&mut p, &k, &[1; 9]),
                    NodeKind::Internal => node::internal_insert(&mut p, &k, i as u64 + 10),
                };
            }
            for (at, b) in flips {
                p[48 + at % (1024 - 48)] = b;
            }
            p
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn garbage_never_panics(p in garbage_page()) {
        exercise(&p);
    }

    #[test]
    fn damage_never_panics(p in damaged_node()) {
        exercise(&p);
    }

    #[test]
    fn short_pages_never_panic(len in 0usize..600, b in any::<u8>()) {
        let p = vec![b; len];
        let _ = node::search(&p, b"k");
        let _ = node::leaf_entries(&p);
        let _ = node::validate(&p);
        let _ = overflow::data(&p);
    }
}

proptest! {
    /// The inlined key comparison orders keys as byte slices do (short alphabets make equal
    /// prefixes, words that tie and tails of every length likely).
    #[test]
    fn key_comparison_is_byte_order(
        a in proptest::collection::vec(0u8..3, 0..40),
        b in proptest::collection::vec(0u8..3, 0..40),
    ) {
        prop_assert_eq!(node::cmp_key(&a, &b), a.cmp(&b));
        prop_assert_eq!(node::cmp_key(&a, &a), std::cmp::Ordering::Equal);
    }
}
