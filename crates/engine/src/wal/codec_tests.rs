//! Tests of the log record codec.

use super::*;
use crate::page_op::PageOp;
use proptest::prelude::*;

fn bytes_s(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

fn redo_s() -> impl Strategy<Value = Redo> {
    prop_oneof![
        (any::<u64>(), bytes_s(40), bytes_s(200)).prop_map(|(pid, key, value)| Redo::LeafPut {
            pid,
            key,
            value
        }),
        (any::<u64>(), bytes_s(40)).prop_map(|(pid, key)| Redo::LeafDel { pid, key }),
        proptest::collection::vec((any::<u64>(), image_s()), 0..4).prop_map(Redo::Images),
        proptest::collection::vec((any::<u64>(), page_redo_s()), 0..4).prop_map(Redo::Pages),
    ]
}

fn page_op_s() -> impl Strategy<Value = PageOp> {
    prop_oneof![
        any::<u64>().prop_map(PageOp::SetLink),
        (bytes_s(40), any::<u64>()).prop_map(|(key, child)| PageOp::InternalInsert { key, child }),
        (any::<u32>(), any::<u64>()).prop_map(|(keep, link)| PageOp::Truncate { keep, link }),
        any::<u64>().prop_map(PageOp::MetaNextPid),
        any::<u64>().prop_map(PageOp::MetaFreeHead),
        any::<bool>().prop_map(PageOp::SplitPending),
    ]
}

fn page_redo_s() -> impl Strategy<Value = PageRedo> {
    prop_oneof![
        image_s().prop_map(PageRedo::Image),
        proptest::collection::vec(page_op_s(), 0..4).prop_map(PageRedo::Ops),
    ]
}

/// A page image: random bytes, often with a run of zeros somewhere (a page's free middle).
fn image_s() -> impl Strategy<Value = Vec<u8>> {
    (bytes_s(300), any::<prop::sample::Index>(), 0usize..200).prop_map(|(mut b, at, n)| {
        if !b.is_empty() {
            let at = at.index(b.len());
            let end = (at + n).min(b.len());
            b[at..end].fill(0);
        }
        b
    })
}

fn undo_s() -> impl Strategy<Value = Undo> {
    (
        any::<u32>(),
        bytes_s(40),
        proptest::option::of(bytes_s(100)),
    )
        .prop_map(|(tree, key, old)| Undo { tree, key, old })
}

fn body_s() -> impl Strategy<Value = Body> {
    prop_oneof![
        (redo_s(), undo_s()).prop_map(|(redo, undo)| Body::Update { redo, undo }),
        (redo_s(), any::<u64>()).prop_map(|(redo, undo_next)| Body::Clr { redo, undo_next }),
        redo_s().prop_map(|redo| Body::System { redo }),
        (redo_s(), any::<u32>(), bytes_s(40), bytes_s(40)).prop_map(|(redo, tree, first, last)| {
            Body::Load {
                redo,
                undo: LoadUndo { tree, first, last },
            }
        }),
        Just(Body::Commit),
        Just(Body::Abort),
        Just(Body::End),
        proptest::collection::vec(any::<(u64, u64, u32)>(), 0..8).prop_map(|v| Body::Map(
            v.into_iter()
                .map(|(pid, offset, len)| MapChange { pid, offset, len })
                .collect()
        )),
        (
            proptest::collection::vec(any::<(u64, u64)>(), 0..8),
            proptest::collection::vec(any::<(u64, u64, u64)>(), 0..8),
            any::<u64>()
        )
            .prop_map(|(dirty_pages, active_txns, next_txn)| Body::Checkpoint(
                CheckpointData {
                    dirty_pages,
                    active_txns,
                    next_txn
                }
            )),
        redo_s().prop_map(|redo| Body::Redo { redo }),
        (
            redo_s(),
            proptest::collection::vec(any::<u64>(), 0..5),
            proptest::collection::vec(any::<u64>(), 0..5)
        )
            .prop_map(|(redo, alloc, free)| Body::Space { redo, alloc, free }),
        (
            proptest::collection::vec(any::<(u64, u64)>(), 0..8),
            proptest::collection::vec(
                (any::<u64>(), proptest::collection::vec(any::<u64>(), 0..4)),
                0..4
            ),
            any::<u64>()
        )
            .prop_map(
                |(dirty_pages, allocations, next_txn)| Body::TableCheckpoint(TableCheckpointData {
                    dirty_pages,
                    allocations,
                    next_txn
                })
            ),
    ]
}

pub(crate) fn record_s() -> impl Strategy<Value = LogRecord> {
    (any::<u64>(), any::<u64>(), any::<u64>(), body_s()).prop_map(|(lsn, txn, prev_lsn, body)| {
        LogRecord {
            lsn,
            txn,
            prev_lsn,
            body,
        }
    })
}

proptest! {
    #[test]
    fn roundtrip(rec in record_s(), trailing in bytes_s(16)) {
        let mut enc = encode_to_vec(&rec).unwrap();
        let len = enc.len();
        prop_assert_eq!(record_len(&enc), Some(len as u32));
        enc.extend_from_slice(&trailing);
        prop_assert_eq!(check(&enc), Ok(len));
        prop_assert_eq!(decode(&enc, rec.lsn).unwrap(), rec);
    }

    /// Tag 5 decodes to the same record with image holes on or off; its operations are
    /// counted at their encoded size.
    #[test]
    fn pages_roundtrip_with_and_without_holes(
        pages in proptest::collection::vec((any::<u64>(), page_redo_s()), 0..5),
    ) {
        let body = Body::System { redo: Redo::Pages(pages.clone()) };
        let rec = LogRecord { lsn: 40, txn: 0, prev_lsn: 0, body };
        for holes in [false, true] {
            let mut v = Vec::new();
            let e = encode_parts(40, 0, 0, BodyRef::Body(&rec.body), holes, &mut v).unwrap();
            prop_assert_eq!(e.len, v.len());
            prop_assert_eq!(decode(&v, 40).unwrap(), rec.clone());
            if !holes {
                // Header, kind, tag, count; then pid and form per page, and the image's three
                // fields and bytes or the operations' count and encodings.
                let per_page: usize = pages.iter().map(|(_, r)| 8 + 1 + match r {
                    PageRedo::Image(img) => 12 + img.len(),
                    PageRedo::Ops(ops) => 4 + ops.iter().map(PageOp::bytes).sum::<usize>(),
                }).sum();
                prop_assert_eq!(v.len(), HEADER_BYTES + 1 + 4 + per_page);
                prop_assert_eq!(e.whole_len, e.len);
            }
        }
    }

    #[test]
    fn a_leaf_update_from_parts_encodes_as_its_body(
        pid in any::<u64>(), key in bytes_s(40), value in proptest::option::of(bytes_s(200)),
        tree in any::<u32>(), old in proptest::option::of(bytes_s(100)),
    ) {
        let redo = match &value {
            Some(v) => Redo::LeafPut { pid, key: key.clone(), value: v.clone() },
            None => Redo::LeafDel { pid, key: key.clone() },
        };
        let undo = Undo { tree, key: key.clone(), old: old.clone() };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        encode_parts(9, 2, 3, BodyRef::Body(&Body::Update { redo, undo }), true, &mut a).unwrap();
        let parts = LeafUpdate {
            pid, key: &key, value: value.as_deref(), tree, old: old.as_deref(),
        };
        encode_parts(9, 2, 3, BodyRef::LeafUpdate(parts), true, &mut b).unwrap();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn random_bytes_never_panic(b in bytes_s(600)) {
        let _ = decode(&b, 1);
    }

    #[test]
    fn random_body_with_valid_crc_never_panics(
        kind in 0u8..10, body in bytes_s(300), head in any::<[u8; 24]>()
    ) {
        // Valid length and checksum around garbage: exercises the body parser.
        let mut v = vec![0u8; 8];
        v.extend_from_slice(&head);
        v.push(kind);
        v.extend_from_slice(&body);
        let n = v.len() as u32;
        v[0..4].copy_from_slice(&n.to_le_bytes());
        let crc = crc32c::crc32c(&v[8..]);
        v[4..8].copy_from_slice(&crc.to_le_bytes());
        if let Ok(rec) = decode(&v, 1) {
            // Anything accepted re-encodes (images in the current form, with the longest
            // hole) to bytes that decode to the same record.
            let again = encode_to_vec(&rec).unwrap();
            prop_assert_eq!(decode(&again, 1).unwrap(), rec);
        }
    }

    #[test]
    fn truncations_are_detected(rec in record_s(), cut in any::<prop::sample::Index>()) {
        let enc = encode_to_vec(&rec).unwrap();
        let k = cut.index(enc.len());
        prop_assert!(decode(&enc[..k], 1).is_err());
    }

    #[test]
    fn bit_flips_are_detected(rec in record_s(), bit in any::<prop::sample::Index>()) {
        let mut enc = encode_to_vec(&rec).unwrap();
        let b = bit.index(enc.len() * 8);
        enc[b / 8] ^= 1 << (b % 8);
        prop_assert!(decode(&enc, 1).is_err(), "flip of bit {} undetected", b);
    }
}

#[test]
fn zeroes_are_not_a_record() {
    let z = [0u8; 64];
    assert_eq!(decode_raw(&z), Err(Fault::BadLength(0)));
    match decode(&z, 77) {
        Err(Error::CorruptLog { lsn: 77, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn commit_record_is_header_only() {
    let rec = LogRecord {
        lsn: 4096,
        txn: 3,
        prev_lsn: 100,
        body: Body::Commit,
    };
    let enc = encode_to_vec(&rec).unwrap();
    assert_eq!(enc.len(), HEADER_BYTES);
    assert_eq!(&enc[8..16], &4096u64.to_le_bytes());
    assert_eq!(enc[32], KIND_COMMIT);
}

#[test]
fn the_longest_zero_run_is_the_hole() {
    assert_eq!(zero_hole(&[]), (0, 0));
    assert_eq!(zero_hole(&[1u8; 64]), (0, 0));
    // Shorter than the threshold: kept.
    let mut p = vec![1u8; 64];
    p[8..20].fill(0);
    assert_eq!(zero_hole(&p), (0, 0));
    // Whole words widened by the zero bytes on either side; the longest run wins.
    let mut p = vec![1u8; 4096];
    p[100..140].fill(0);
    p[1003..3001].fill(0);
    assert_eq!(zero_hole(&p), (1003, 1998));
    // A page that is all zeros past its header, to the end.
    let mut p = vec![0u8; 4096];
    p[..37].fill(9);
    assert_eq!(zero_hole(&p), (37, 4096 - 37));
}

/// Both forms of page images decode to the same record: a log may hold either.
#[test]
fn whole_images_of_earlier_logs_still_decode() {
    let image: Vec<u8> = (0..4096u32)
        .map(|i| if i < 500 { i as u8 } else { 0 })
        .collect();
    let rec = LogRecord {
        lsn: 77,
        txn: 3,
        prev_lsn: 0,
        body: Body::System {
            redo: Redo::Images(vec![(9, image.clone())]),
        },
    };
    let holed = encode_to_vec(&rec).unwrap();
    assert!(
        holed.len() < 700,
        "the zeros were left out: {} bytes",
        holed.len()
    );
    // The same record with tag 3 (`log_image_holes` off): header, kind, tag, count, pid,
    // length-prefixed image.
    let mut v = Vec::new();
    let e = encode_parts(77, 3, 0, BodyRef::Body(&rec.body), false, &mut v).unwrap();
    assert_eq!(
        e,
        Encoded {
            len: v.len(),
            whole_len: v.len()
        }
    );
    assert_eq!(v[HEADER_BYTES], REDO_IMAGES);
    assert_eq!(v.len(), HEADER_BYTES + 1 + 4 + 8 + 4 + 4096);
    assert_eq!(&v[v.len() - 4096..], &image[..]);
    // Holes: the bytes left out are what the record's rollback reservation adds back.
    let mut h = Vec::new();
    let e = encode_parts(77, 3, 0, BodyRef::Body(&rec.body), true, &mut h).unwrap();
    assert_eq!(h, holed);
    assert_eq!(e.whole_len, e.len + (4096 - 500));
    assert_eq!(decode(&v, 77).unwrap(), rec);
    assert_eq!(decode(&holed, 77).unwrap(), rec);
}

/// A hole that reaches past its image, or an image larger than any page, is a typed error.
#[test]
fn bad_holes_are_corrupt_records() {
    let rec = LogRecord {
        lsn: 5,
        txn: 0,
        prev_lsn: 0,
        body: Body::System {
            redo: Redo::Images(vec![(2, vec![0u8; 64])]),
        },
    };
    let good = encode_to_vec(&rec).unwrap();
    // Fields after header (33), tag (1), count (4), pid (8): len, hole_at, hole_len.
    let field = HEADER_BYTES + 1 + 4 + 8;
    // A hole over a whole large image: 20 bytes that would decode to 64 KiB.
    let mut big = good.clone();
    big[field..field + 4].copy_from_slice(&(MAX_IMAGE as u32).to_le_bytes());
    big[field + 4..field + 8].copy_from_slice(&0u32.to_le_bytes());
    big[field + 8..field + 12].copy_from_slice(&(MAX_IMAGE as u32).to_le_bytes());
    let stored = 64 - zero_hole(&[0u8; 64]).1;
    big.drain(field + 12..field + 12 + stored);
    let n = big.len() as u32;
    big[0..4].copy_from_slice(&n.to_le_bytes());
    let crc = crc32c::crc32c(&big[8..]);
    big[4..8].copy_from_slice(&crc.to_le_bytes());
    assert!(matches!(decode(&big, 5), Err(Error::CorruptLog { .. })));
    for (at, value) in [
        (field + 8, 65u32),
        (field, (MAX_IMAGE + 1) as u32),
        (field + 4, 1),
    ] {
        let mut v = good.clone();
        v[at..at + 4].copy_from_slice(&value.to_le_bytes());
        let crc = crc32c::crc32c(&v[8..]);
        v[4..8].copy_from_slice(&crc.to_le_bytes());
        assert!(
            matches!(decode(&v, 5), Err(Error::CorruptLog { .. })),
            "field at {at} = {value}"
        );
    }
}
