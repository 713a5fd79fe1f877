//! Leaf splits beside other threads, at the tree's level: a put that finds its leaf full splits
//! it aside ([`tree::split_beside`]), the halves go in, the leaf is flagged and the separator
//! waits; reads, scans (both ways) and plain changes meanwhile follow the flags; a change that is
//! not plain first posts every pending split ([`tree::post_split`]), as the engine's exclusive
//! latch does. All against a `BTreeMap` oracle.

use super::tree::{bound, check_scan, key_of, value_of, MemStore};
use crate::btree::tree::plain::{self, Plan};
use crate::btree::{node, tree};
use crate::page::PageId;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Bound;

#[derive(Debug, Clone)]
enum Op {
    Put(u32, usize, u8),
    Del(u32),
    Get(u32),
    Scan(u32, u32, u8, u8, bool, usize),
    /// Post the pending splits (the exclusive latch taken for something else).
    Settle,
}

fn op_strategy(nkeys: u32) -> impl Strategy<Value = Op> {
    let vlen = prop_oneof![8 => 0usize..80, 2 => 80usize..600];
    prop_oneof![
        12 => (0..nkeys, vlen, any::<u8>()).prop_map(|(k, l, s)| Op::Put(k, l, s)),
        3 => (0..nkeys).prop_map(Op::Del),
        3 => (0..nkeys).prop_map(Op::Get),
        2 => (0..nkeys, 0..nkeys, 0u8..3, 0u8..3, any::<bool>(), 1usize..300)
            .prop_map(|(a, b, x, y, r, l)| Op::Scan(a, b, x, y, r, l)),
        1 => Just(Op::Settle),
    ]
}

/// The pending splits, posted in the order they were made.
fn settle(s: &mut MemStore, root: PageId, pending: &mut Vec<PageId>) {
    settle_merging(s, root, pending, &mut Vec::new());
}

/// [`settle`], then the merges plain deletes left (as `splits::settle` makes them).
fn settle_merging(
    s: &mut MemStore,
    root: PageId,
    pending: &mut Vec<PageId>,
    merges: &mut Vec<Vec<u8>>,
) {
    for leaf in pending.drain(..) {
        tree::post_split(s, root, leaf).unwrap();
    }
    for key in merges.drain(..) {
        tree::merge_underfull(s, root, &key).unwrap();
    }
    let st = tree::check(s, root).unwrap();
    assert!(st.keys > 0 || st.leaves == 1);
}

fn run(page_size: usize, key_max: usize, ops: &[Op]) {
    let mut s = MemStore::new(page_size);
    let root = tree::create(&mut s).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut pending: Vec<PageId> = Vec::new();
    // Leaves plain deletes left under-full, merged at the next settle.
    let mut merges: Vec<Vec<u8>> = Vec::new();
    let mut range = tree::LeafRange::default();
    // Whether the noted range may be used: no node split, merged or was freed exclusive since.
    let mut reuse = false;
    for op in ops {
        match op {
            Op::Put(k, l, seed) => {
                let key = key_of(*k, key_max);
                let val = value_of(*l, *seed);
                let plan = plain::plan(
                    &mut s,
                    root,
                    &key,
                    Some(&val),
                    &mut range,
                    reuse,
                    plain::Underfull::Refuse,
                );
                reuse = true;
                match plan.unwrap() {
                    Some(Plan::Change { leaf, at, .. }) => {
                        plain::apply(&mut s, leaf, &key, Some(&val), at).unwrap();
                    }
                    Some(Plan::Full { leaf, old })
                        if pending.len() < crate::splits::MAX_PENDING =>
                    {
                        let right = s.next;
                        s.next += 1;
                        let image = s.pages[&leaf].clone();
                        let aside =
                            tree::split_beside(&image, right, (&key, &val), old.is_some(), true)
                                .unwrap();
                        // The operations describe the leaf's new image, where they are kept.
                        if let Some(ops) = &aside.left_ops {
                            let mut p = image.clone();
                            for op in ops {
                                crate::page_op::apply_op(&mut p, op).unwrap();
                            }
                            assert_eq!(p, aside.left);
                        }
                        s.pages.insert(right, aside.right.clone().unwrap());
                        s.pages.insert(leaf, aside.left);
                        pending.push(leaf);
                    }
                    Some(Plan::Nothing) => unreachable!("a put changes something"),
                    _ => {
                        settle_merging(&mut s, root, &mut pending, &mut merges);
                        tree::put(&mut s, root, &key, &val).unwrap();
                        reuse = false;
                        range.clear();
                    }
                }
                model.insert(key, val);
            }
            Op::Del(k) => {
                let key = key_of(*k, key_max);
                let plan = plain::plan(
                    &mut s,
                    root,
                    &key,
                    None,
                    &mut range,
                    reuse,
                    plain::Underfull::Allow,
                );
                reuse = true;
                match plan.unwrap() {
                    Some(Plan::Change {
                        leaf,
                        at,
                        underfull,
                        ..
                    }) => {
                        plain::apply(&mut s, leaf, &key, None, at).unwrap();
                        if underfull {
                            merges.push(key.clone());
                        }
                    }
                    Some(Plan::Nothing) => assert!(!model.contains_key(&key)),
                    _ => {
                        settle_merging(&mut s, root, &mut pending, &mut merges);
                        tree::delete(&mut s, root, &key).unwrap();
                        reuse = false;
                        range.clear();
                    }
                }
                model.remove(&key);
            }
            Op::Get(k) => {
                let key = key_of(*k, key_max);
                let got = tree::get(&mut s, root, &key).unwrap();
                assert_eq!(got.as_ref(), model.get(&key));
            }
            Op::Scan(a, b, x, y, reverse, limit) => {
                let (ka, kb) = (key_of(*a, key_max), key_of(*b, key_max));
                let (lo, hi) = (bound(*x, &ka), bound(*y, &kb));
                check_scan(&mut s, root, &model, (lo, hi), *reverse, *limit);
            }
            Op::Settle => {
                settle_merging(&mut s, root, &mut pending, &mut merges);
                reuse = false;
                range.clear();
            }
        }
    }
    settle_merging(&mut s, root, &mut pending, &mut merges);
    let st = tree::check(&mut s, root).unwrap();
    assert_eq!(st.keys as usize, model.len());
    let all = (Bound::Unbounded, Bound::Unbounded);
    check_scan(&mut s, root, &model, all, false, usize::MAX);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn model_with_splits_beside(
        page_size in prop::sample::select(vec![512usize, 4096]),
        ops in prop::collection::vec(op_strategy(600), 1..900),
    ) {
        run(page_size, 48, &ops);
    }
}

/// Many splits pending at once, chained (a right page split again before its own separator
/// was posted), read through and posted in order: every key is found, both scan directions see
/// them all in order, and the tree is whole after the posting.
#[test]
fn chains_of_pending_splits_read_and_post_in_order() {
    let mut ops = Vec::new();
    for i in 0..3000u32 {
        ops.push(Op::Put((i * 7919) % 2000, 40, i as u8));
        if i % 50 == 0 {
            ops.push(Op::Scan(i % 2000, 0, 1, 0, true, 100));
            ops.push(Op::Scan(0, i % 2000, 0, 2, false, 100));
        }
        if i % 700 == 0 {
            ops.push(Op::Settle);
        }
    }
    for i in 0..2000u32 {
        ops.push(Op::Get(i));
    }
    run(512, 24, &ops);
    // The same with the splits counted: a small page makes a split every few puts.
    let mut s = MemStore::new(512);
    let root = tree::create(&mut s).unwrap();
    let mut pending: Vec<PageId> = Vec::new();
    let mut range = tree::LeafRange::default();
    let (mut most, mut chained) = (0, 0);
    for i in 0..400u32 {
        let key = key_of((i * 7919) % 2000, 24);
        let val = value_of(40, i as u8);
        match plain::plan(
            &mut s,
            root,
            &key,
            Some(&val),
            &mut range,
            false,
            plain::Underfull::Refuse,
        )
        .unwrap()
        {
            Some(Plan::Change { leaf, at, .. }) => {
                plain::apply(&mut s, leaf, &key, Some(&val), at).unwrap()
            }
            Some(Plan::Full { leaf, old }) => {
                // A leaf only a pending split's link leads to, split again.
                let rights: Vec<PageId> = pending
                    .iter()
                    .map(|l| node::right_sibling(&s.pages[l]).unwrap())
                    .collect();
                chained += usize::from(rights.contains(&leaf));
                let right = s.next;
                s.next += 1;
                let image = s.pages[&leaf].clone();
                let aside =
                    tree::split_beside(&image, right, (&key, &val), old.is_some(), true).unwrap();
                s.pages.insert(right, aside.right.unwrap());
                s.pages.insert(leaf, aside.left);
                pending.push(leaf);
                most = most.max(pending.len());
            }
            _ => {
                // The root leaf, or a flagged leaf full again: exclusive, after the posting.
                settle(&mut s, root, &mut pending);
                tree::put(&mut s, root, &key, &val).unwrap();
            }
        }
    }
    assert!(
        most > 20 && chained > 0,
        "{most} splits pending at most, {chained} chained"
    );
    settle(&mut s, root, &mut pending);
    let st = tree::check(&mut s, root).unwrap();
    assert!(st.leaves > 30, "{st:?}");
}

/// A store that, at its `at`-th page read, first splits the page beside others if it is a leaf
/// that a put just above its first key would split: what another thread's split does between a
/// scan's descent and its visit of the leaf, or while the scan reads an overflow chain.
struct SplitOnRead {
    s: MemStore,
    root: PageId,
    reads: usize,
    at: usize,
    val: Vec<u8>,
    /// The key the split put in, once it split.
    split: Option<Vec<u8>>,
}

impl SplitOnRead {
    fn split(&mut self, pid: PageId) {
        let p = &self.s.pages[&pid];
        let leaf = node::kind(p).is_ok_and(|k| k == node::NodeKind::Leaf);
        if !leaf || node::split_pending_unchecked(p) || node::cell_count(p).unwrap() < 2 {
            return;
        }
        let mut key = node::key_at(p, 0).unwrap().to_vec();
        key.push(0);
        let mut range = tree::LeafRange::default();
        let plan = plain::plan(
            &mut self.s,
            self.root,
            &key,
            Some(&self.val),
            &mut range,
            false,
            plain::Underfull::Refuse,
        );
        let Ok(Some(Plan::Full { leaf, old })) = plan else {
            return;
        };
        if leaf != pid {
            return;
        }
        let right = self.s.next;
        self.s.next += 1;
        let image = self.s.pages[&leaf].clone();
        let aside =
            tree::split_beside(&image, right, (&key, &self.val), old.is_some(), true).unwrap();
        self.s.pages.insert(right, aside.right.unwrap());
        self.s.pages.insert(leaf, aside.left);
        self.split = Some(key);
    }
}

impl crate::btree::PageStore for SplitOnRead {
    fn page_size(&self) -> usize {
        self.s.page_size()
    }
    fn read_page<R>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> R) -> crate::Result<R> {
        self.reads += 1;
        if self.reads == self.at && self.split.is_none() {
            self.split(pid);
        }
        self.s.read_page(pid, f)
    }
    fn write_page<R>(&mut self, pid: PageId, f: impl FnOnce(&mut [u8]) -> R) -> crate::Result<R> {
        self.s.write_page(pid, f)
    }
    fn alloc_page(&mut self, kind: crate::page::PageType) -> crate::Result<PageId> {
        self.s.alloc_page(kind)
    }
    fn free_page(&mut self, pid: PageId) -> crate::Result<()> {
        self.s.free_page(pid)
    }
}

/// A scan, either way, over leaves one of which splits beside it at any one of its page reads
/// (before the visit of a leaf it descended to, or while it reads an overflow value of the leaf):
/// every key that was there is given, once, in order. (Reverse scans used to read only the left
/// half of a leaf split after their descent; a forward scan resuming after an overflow value
/// whose key moved right called the tree corrupt.)
#[test]
fn scans_see_every_key_when_a_leaf_splits_beside_them() {
    let build = || {
        let mut s = MemStore::new(512);
        let root = tree::create(&mut s).unwrap();
        let mut model = BTreeMap::new();
        // An ascending load leaves its leaves full; every seventh value is in a chain.
        for i in 0..300u32 {
            let key = format!("k{i:05}").into_bytes();
            let val = value_of(if i % 7 == 3 { 700 } else { 20 }, i as u8);
            tree::put(&mut s, root, &key, &val).unwrap();
            model.insert(key, val);
        }
        (s, root, model)
    };
    let (lo, hi) = (b"k00050".to_vec(), b"k00250".to_vec());
    let ranges = [
        (Bound::Unbounded, Bound::Unbounded),
        (Bound::Included(&lo[..]), Bound::Excluded(&hi[..])),
    ];
    let mut splits = 0;
    for (lo, hi) in ranges {
        for reverse in [false, true] {
            for at in 1..120 {
                let (s, root, model) = build();
                let val = value_of(100, 9);
                let mut w = SplitOnRead {
                    s,
                    root,
                    reads: 0,
                    at,
                    val: val.clone(),
                    split: None,
                };
                let mut got = Vec::new();
                tree::scan(&mut w, root, lo, hi, reverse, &mut |k: &[u8], v: &[u8]| {
                    got.push((k.to_vec(), v.to_vec()));
                    true
                })
                .unwrap();
                let mut want = model;
                // The key the split put in went in beside the scan: seen or not.
                if let Some(k) = w.split.as_ref().filter(|k| got.iter().any(|p| p.0 == **k)) {
                    want.insert(k.clone(), val);
                }
                let mut want: Vec<(Vec<u8>, Vec<u8>)> = want
                    .into_iter()
                    .filter(|(k, _)| super::tree::in_bounds(k, lo, hi))
                    .collect();
                if reverse {
                    want.reverse();
                }
                let what = format!("reverse {reverse}, {lo:?}..{hi:?}, split at read {at}");
                assert_eq!(got.len(), want.len(), "{what}");
                assert!(got == want, "{what}");
                splits += usize::from(w.split.is_some());
            }
        }
    }
    assert!(splits > 100, "{splits} scans met a split");
}

/// Deletes from the top of a tree whose splits are all pending, down to nothing: a plain delete
/// may leave a leaf under-full (its merge for the next settle) but never empty, since the
/// posting of a pending split needs keys in both of its halves; the delete of a leaf's last key
/// runs as a change that is not plain, posting first.
#[test]
fn plain_deletes_never_empty_a_pending_splits_half() {
    let mut ops: Vec<Op> = (0..200u32).map(|i| Op::Put(i, 40, i as u8)).collect();
    ops.extend((0..200u32).rev().map(Op::Del));
    ops.push(Op::Settle);
    run(512, 48, &ops);
}
