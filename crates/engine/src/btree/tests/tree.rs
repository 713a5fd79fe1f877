//! B+tree algorithms against a BTreeMap oracle, over an in-memory page store.

use crate::btree::tree::plain::Plan;
use crate::btree::{node, tree, PageStore};
use crate::page::{self, PageId, PageType};
use crate::{Error, Result};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;

/// Pages in a HashMap, a free list, and the set of pages written / allocated / freed since the
/// last `reset_touched`.
pub(super) struct MemStore {
    page_size: usize,
    pub(super) pages: HashMap<PageId, Vec<u8>>,
    free: Vec<PageId>,
    pub(super) next: PageId,
    touched: BTreeSet<PageId>,
    /// Each touched page's contents before its first write since `reset_touched`.
    before: HashMap<PageId, Vec<u8>>,
    /// Page reads and writes so far.
    accesses: usize,
    /// The leaf after the last plain change planned, made on a copy.
    applied: Option<Vec<u8>>,
    /// The leaf range noted by the plans so far (cleared after a change that is not plain).
    range: tree::LeafRange,
    /// Plans that went straight to the leaf through `range`.
    reused: usize,
}

impl MemStore {
    pub(super) fn new(page_size: usize) -> Self {
        MemStore {
            page_size,
            pages: HashMap::new(),
            free: Vec::new(),
            next: 1,
            touched: BTreeSet::new(),
            before: HashMap::new(),
            accesses: 0,
            applied: None,
            range: tree::LeafRange::default(),
            reused: 0,
        }
    }
    fn reset_touched(&mut self) {
        self.touched.clear();
        self.before.clear();
    }
    fn live(&self) -> usize {
        self.pages.len()
    }
}

impl PageStore for MemStore {
    fn page_size(&self) -> usize {
        self.page_size
    }
    fn read_page<R>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        self.accesses += 1;
        match self.pages.get(&pid) {
            Some(p) => Ok(f(p)),
            None => Err(Error::CorruptPage {
                pid,
                reason: "read of a page not allocated",
            }),
        }
    }
    fn write_page<R>(&mut self, pid: PageId, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        self.accesses += 1;
        self.touched.insert(pid);
        match self.pages.get_mut(&pid) {
            Some(p) => {
                self.before.entry(pid).or_insert_with(|| p.clone());
                Ok(f(p))
            }
            None => Err(Error::CorruptPage {
                pid,
                reason: "write of a page not allocated",
            }),
        }
    }
    fn alloc_page(&mut self, kind: PageType) -> Result<PageId> {
        let pid = self.free.pop().unwrap_or_else(|| {
            self.next += 1;
            self.next - 1
        });
        let mut p = vec![0; self.page_size];
        page::init(&mut p, pid, kind);
        self.pages.insert(pid, p);
        self.touched.insert(pid);
        Ok(pid)
    }
    fn free_page(&mut self, pid: PageId) -> Result<()> {
        if self.pages.remove(&pid).is_none() {
            return Err(Error::CorruptPage {
                pid,
                reason: "double free",
            });
        }
        self.free.push(pid);
        self.touched.insert(pid);
        Ok(())
    }
}

pub(super) fn key_of(i: u32, max_len: usize) -> Vec<u8> {
    let mut h = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let len = 1 + (h >> 40) as usize % max_len;
    let mut k = vec![b'a' + (i % 5) as u8];
    while k.len() < len {
        h = h.rotate_left(7).wrapping_mul(0x2545_F491_4F6C_DD1D) ^ i as u64;
        k.push(b'a' + (h >> 61) as u8);
    }
    k
}

pub(super) fn value_of(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|j| seed.wrapping_add((j / 7) as u8)).collect()
}

pub(super) fn in_bounds(k: &[u8], lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    let a = match lo {
        Bound::Unbounded => true,
        Bound::Included(s) => k >= s,
        Bound::Excluded(s) => k > s,
    };
    let b = match hi {
        Bound::Unbounded => true,
        Bound::Included(e) => k <= e,
        Bound::Excluded(e) => k < e,
    };
    a && b
}

/// A scan of `range` (descending if `reverse`, at most `limit` pairs) returns what `model`
/// holds there.
pub(super) fn check_scan<S: PageStore>(
    s: &mut S,
    root: PageId,
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    (lo, hi): (Bound<&[u8]>, Bound<&[u8]>),
    reverse: bool,
    limit: usize,
) {
    let mut got = Vec::new();
    tree::scan(s, root, lo, hi, reverse, &mut |k: &[u8], v: &[u8]| {
        got.push((k.to_vec(), v.to_vec()));
        got.len() < limit
    })
    .unwrap();
    let it = model.iter().filter(|(k, _)| in_bounds(k, lo, hi));
    let want: Vec<_> = if reverse {
        it.rev()
            .take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    } else {
        it.take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    assert_eq!(got, want, "scan {lo:?}..{hi:?} reverse {reverse}");
}

pub(super) fn bound(kind: u8, k: &[u8]) -> Bound<&[u8]> {
    match kind % 3 {
        0 => Bound::Unbounded,
        1 => Bound::Included(k),
        _ => Bound::Excluded(k),
    }
}

#[derive(Debug, Clone)]
enum Op {
    Put(u32, usize, u8),
    Del(u32),
    Get(u32),
    Scan(u32, u32, u8, u8, bool, usize),
}

fn op_strategy(nkeys: u32) -> impl Strategy<Value = Op> {
    let vlen = prop_oneof![6 => 0usize..64, 3 => 64usize..900, 1 => 900usize..3000];
    prop_oneof![
        10 => (0..nkeys, vlen, any::<u8>()).prop_map(|(k, l, s)| Op::Put(k, l, s)),
        5 => (0..nkeys).prop_map(Op::Del),
        2 => (0..nkeys).prop_map(Op::Get),
        1 => (0..nkeys, 0..nkeys, 0u8..3, 0u8..3, any::<bool>(), 1usize..200)
            .prop_map(|(a, b, x, y, r, l)| Op::Scan(a, b, x, y, r, l)),
    ]
}

/// Runs `ops` against the tree and the oracle, checking every result, the simple-leaf outcome
/// (only that leaf touched, and redoing the change on the old page gives the new page), and the
/// tree invariants every `batch` ops.
fn run_model(page_size: usize, key_max: usize, ops: &[Op], batch: usize) {
    let mut s = MemStore::new(page_size);
    let root = tree::create(&mut s).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let max_key = node::max_key_len(page_size);
    for (n, op) in ops.iter().enumerate() {
        s.reset_touched();
        match op {
            Op::Put(k, l, seed) => {
                let key = key_of(*k, key_max);
                let val = value_of(*l, *seed);
                let (plan, plan_reads) = plan_plain(&mut s, root, &key, Some(&val));
                let at = s.accesses;
                match tree::put(&mut s, root, &key, &val) {
                    Err(Error::KeyTooLong { .. }) => {
                        assert!(key.len() > max_key);
                        assert!(s.touched.is_empty());
                        assert!(matches!(plan, Err(Error::KeyTooLong { .. })));
                        continue;
                    }
                    r => {
                        let out = r.unwrap();
                        // A put is plain exactly when it is a simple leaf change, and then it
                        // reads and writes as often.
                        match plan.unwrap() {
                            Some(Plan::Change { leaf, old, .. }) => {
                                assert_eq!((Some(leaf), &old), (out.leaf, &out.old));
                                assert_eq!(plan_reads + 1, s.accesses - at, "page accesses");
                                assert_eq!(s.applied.take().as_ref(), Some(&s.pages[&leaf]));
                            }
                            p => {
                                let split = matches!(p, None | Some(Plan::Full { .. }));
                                assert!(split && out.leaf.is_none(), "{p:?}");
                                s.range.clear();
                            }
                        }
                        assert_eq!(out.old, model.insert(key.clone(), val.clone()));
                        if let Some(pid) = out.leaf {
                            assert_eq!(s.touched, BTreeSet::from([pid]));
                            let mut p = s.before[&pid].clone();
                            node::leaf_put_inline(&mut p, &key, &val).unwrap();
                            assert_eq!(p, s.pages[&pid], "redo of LeafPut differs");
                        }
                    }
                }
            }
            Op::Del(k) => {
                let key = key_of(*k, key_max);
                let (plan, plan_reads) = plan_plain(&mut s, root, &key, None);
                let at = s.accesses;
                let out = tree::delete(&mut s, root, &key).unwrap();
                assert_eq!(out.old, model.remove(&key));
                // A plain delete is a simple one with as many accesses; a simple delete that
                // left its leaf under-full (and found no sibling to merge with) is not plain.
                match plan.unwrap() {
                    Some(Plan::Change { leaf, old, .. }) => {
                        assert_eq!((Some(leaf), &old), (out.leaf, &out.old));
                        assert_eq!(plan_reads + 1, s.accesses - at, "page accesses");
                        assert_eq!(s.applied.take().as_ref(), Some(&s.pages[&leaf]));
                    }
                    Some(Plan::Nothing) => assert_eq!(out.old, None),
                    Some(Plan::Full { .. }) => unreachable!("a delete finds no leaf full"),
                    None => {
                        assert!(out.old.is_some());
                        s.range.clear();
                    }
                }
                if out.old.is_none() {
                    assert!(s.touched.is_empty());
                }
                if let Some(pid) = out.leaf {
                    assert_eq!(s.touched, BTreeSet::from([pid]));
                    let mut p = s.before[&pid].clone();
                    assert!(node::leaf_del(&mut p, &key).unwrap());
                    assert_eq!(p, s.pages[&pid], "redo of LeafDel differs");
                }
            }
            Op::Get(k) => {
                let key = key_of(*k, key_max);
                assert_eq!(
                    tree::get(&mut s, root, &key).unwrap().as_ref(),
                    model.get(&key)
                );
            }
            Op::Scan(a, b, x, y, reverse, limit) => {
                let (ka, kb) = (key_of(*a, key_max), key_of(*b, key_max));
                let (lo, hi) = (bound(*x, &ka), bound(*y, &kb));
                check_scan(&mut s, root, &model, (lo, hi), *reverse, *limit);
            }
        }
        assert!(s.touched.iter().all(|p| *p != 0));
        if (n + 1) % batch == 0 {
            let st = tree::check(&mut s, root).unwrap();
            assert_eq!(st.keys as usize, model.len());
        }
    }
    let st = tree::check(&mut s, root).unwrap();
    assert_eq!(st.keys as usize, model.len());
    let all = (Bound::Unbounded, Bound::Unbounded);
    check_scan(&mut s, root, &model, all, false, usize::MAX);
    // Delete everything: one empty root leaf, no leaked pages.
    for k in model.keys() {
        tree::delete(&mut s, root, k).unwrap();
    }
    let st = tree::check(&mut s, root).unwrap();
    assert_eq!((st.keys, st.leaves, st.internals, st.depth), (0, 1, 0, 1));
    assert_eq!(s.live(), 1, "pages leaked");
}

/// [`tree::plain::plan`] on `s`, checked to change nothing, with its page accesses; for a plain
/// change, the leaf as [`tree::plain::apply`] leaves it is kept in `s.applied`.
fn plan_plain(
    s: &mut MemStore,
    root: PageId,
    key: &[u8],
    value: Option<&[u8]>,
) -> (Result<Option<Plan>>, usize) {
    let (at, pages) = (s.accesses, s.pages.clone());
    let plan = tree::plain::plan(
        s,
        root,
        key,
        value,
        &mut tree::LeafRange::default(),
        false,
        tree::plain::Underfull::Refuse,
    );
    assert!(
        s.touched.is_empty() && s.pages == pages,
        "a plan changed a page"
    );
    let reads = s.accesses - at;
    // The same plan through the range the last plans noted (no node has split, merged or been
    // freed since: the caller clears it after a change that is not plain).
    let mut range = std::mem::take(&mut s.range);
    let before = s.accesses;
    let again = tree::plain::plan(
        s,
        root,
        key,
        value,
        &mut range,
        true,
        tree::plain::Underfull::Refuse,
    );
    if s.accesses - before < reads {
        s.reused += 1;
    }
    s.range = range;
    match (&plan, &again) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "a plan through the leaf range differs"),
        (a, b) => assert_eq!(a.is_err(), b.is_err(), "{a:?} against {b:?}"),
    }
    assert!(s.touched.is_empty() && s.pages == pages);
    if let Ok(Some(Plan::Change { leaf, at, .. })) = &plan {
        // The change made on a copy of the leaf is the general operation's: checked by the
        // caller against the page the general operation wrote.
        let mut copy = MemStore::new(s.page_size);
        copy.pages.insert(*leaf, pages[leaf].clone());
        tree::plain::apply(&mut copy, *leaf, key, value, *at).unwrap();
        s.applied = Some(copy.pages.remove(leaf).unwrap());
    }
    (plan, reads)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn model_4k_8k(
        page_size in prop::sample::select(vec![4096usize, 8192]),
        ops in prop::collection::vec(op_strategy(400), 1..700),
    ) {
        run_model(page_size, 200, &ops, 50);
    }

    /// Small pages give deep trees: internal splits, internal merges, root collapse; keys over
    /// 64 bytes are rejected with KeyTooLong.
    #[test]
    fn model_small_pages(
        page_size in prop::sample::select(vec![512usize, 1024]),
        ops in prop::collection::vec(op_strategy(1500), 1..1500),
    ) {
        run_model(page_size, 80, &ops, 100);
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn many_inserts_then_delete_all_leaks_nothing() {
    for page_size in [512usize, 4096] {
        let mut s = MemStore::new(page_size);
        let root = tree::create(&mut s).unwrap();
        let mut model = BTreeMap::new();
        let mut rng = Rng(0x1234_5678 + page_size as u64);
        for i in 0..4000u32 {
            let k = format!("seq{i:08}").into_bytes();
            let v = value_of(
                (i % 97) as usize * if i % 50 == 0 { 40 } else { 1 },
                i as u8,
            );
            tree::put(&mut s, root, &k, &v).unwrap();
            model.insert(k, v);
        }
        for _ in 0..4000 {
            let r = rng.next();
            let k = format!("rnd{:x}", r % 100_000).into_bytes();
            let v = value_of((r >> 32) as usize % 200, r as u8);
            tree::put(&mut s, root, &k, &v).unwrap();
            model.insert(k, v);
        }
        let st = tree::check(&mut s, root).unwrap();
        assert_eq!(st.keys as usize, model.len());
        assert!(st.depth >= 2, "{st:?}");
        if page_size == 512 {
            assert!(st.depth >= 3 && st.internals > 1, "{st:?}");
        }
        let mut keys: Vec<_> = model.keys().cloned().collect();
        for i in (1..keys.len()).rev() {
            keys.swap(i, rng.next() as usize % (i + 1));
        }
        for (n, k) in keys.iter().enumerate() {
            let out = tree::delete(&mut s, root, k).unwrap();
            assert_eq!(out.old.as_ref(), model.get(k));
            if n % 1000 == 0 {
                tree::check(&mut s, root).unwrap();
            }
        }
        let st = tree::check(&mut s, root).unwrap();
        assert_eq!((st.keys, st.leaves, st.internals, st.depth), (0, 1, 0, 1));
        assert_eq!(s.live(), 1, "pages leaked at page size {page_size}");
        assert_eq!(s.free.len() as u64, s.next - 2);
    }
}

#[test]
fn sequential_inserts_fill_leaves() {
    let mut s = MemStore::new(4096);
    let root = tree::create(&mut s).unwrap();
    for i in 0..20_000u32 {
        tree::put(&mut s, root, &i.to_be_bytes(), &[7u8; 100]).unwrap();
    }
    let st = tree::check(&mut s, root).unwrap();
    // (4 + 7 + 100 + 2 slot) bytes per key, 4032 usable bytes: 35 keys per full leaf.
    let full = 20_000 / ((4096 - 64) / 113);
    assert!(st.leaves as usize <= full + 2, "{st:?}");
}

/// Sequential puts planned through the leaf range of the last one descend once per leaf, and
/// make the same tree as puts that descend every time.
#[test]
fn a_leaf_range_spares_sequential_puts_the_descent() {
    // Small pages: a deep tree from few keys.
    let (mut s, mut plain) = (MemStore::new(512), 0);
    let root = tree::create(&mut s).unwrap();
    let mut oracle = MemStore::new(512);
    let oracle_root = tree::create(&mut oracle).unwrap();
    for i in 0..3_000u32 {
        let (key, val) = (i.to_be_bytes(), [i as u8; 20]);
        s.reset_touched();
        let (plan, _) = plan_plain(&mut s, root, &key, Some(&val));
        match plan.unwrap() {
            Some(Plan::Change { leaf, .. }) => {
                plain += 1;
                let applied = s.applied.take().unwrap();
                s.pages.insert(leaf, applied);
            }
            _ => {
                tree::put(&mut s, root, &key, &val).unwrap();
                s.range.clear();
            }
        }
        tree::put(&mut oracle, oracle_root, &key, &val).unwrap();
    }
    assert_eq!(s.pages, oracle.pages, "the trees differ");
    let st = tree::check(&mut s, root).unwrap();
    assert!(st.depth >= 3, "{st:?}");
    // All but the first put into each leaf (and the one after each split) skip the descent.
    assert!(
        plain > 2_500 && s.reused > plain - 2 * st.leaves as usize,
        "{} of {plain} ({st:?})",
        s.reused
    );
}

#[test]
fn simple_outcomes_and_overflow() {
    let mut s = MemStore::new(4096);
    let root = tree::create(&mut s).unwrap();
    s.reset_touched();
    let out = tree::put(&mut s, root, b"a", b"1").unwrap();
    assert_eq!(
        out,
        tree::Outcome {
            old: None,
            leaf: Some(root)
        }
    );
    // Overflow value: not a simple change, chain pages allocated.
    s.reset_touched();
    let big = value_of(10_000, 3);
    let out = tree::put(&mut s, root, b"b", &big).unwrap();
    assert_eq!(out.leaf, None);
    assert!(s.touched.len() >= 4);
    assert_eq!(tree::get(&mut s, root, b"b").unwrap(), Some(big.clone()));
    assert_eq!(tree::check(&mut s, root).unwrap().overflow_pages, 3);
    // Replacing it with an inline value frees the chain.
    let out = tree::put(&mut s, root, b"b", b"small").unwrap();
    assert_eq!((out.old, out.leaf), (Some(big), None));
    assert_eq!(s.live(), 1);
    s.reset_touched();
    let out = tree::delete(&mut s, root, b"b").unwrap();
    assert_eq!(
        out,
        tree::Outcome {
            old: Some(b"small".to_vec()),
            leaf: Some(root)
        }
    );
    assert_eq!(
        tree::delete(&mut s, root, b"zz").unwrap(),
        tree::Outcome::default()
    );
    assert!(matches!(
        tree::put(&mut s, root, &[0u8; 513], b""),
        Err(Error::KeyTooLong { len: 513, max: 512 })
    ));
    tree::put(&mut s, root, &[0u8; 512], &[1u8; 5000]).unwrap();
    tree::check(&mut s, root).unwrap();
    // The empty key is a key like any other.
    for i in 0..2000u32 {
        tree::put(&mut s, root, &i.to_be_bytes(), b"v").unwrap();
    }
    tree::put(&mut s, root, b"", b"empty").unwrap();
    assert_eq!(
        tree::get(&mut s, root, b"").unwrap(),
        Some(b"empty".to_vec())
    );
    let mut first = None;
    tree::scan(
        &mut s,
        root,
        Bound::Unbounded,
        Bound::Unbounded,
        false,
        &mut |k: &[u8], _: &[u8]| {
            first = Some(k.to_vec());
            false
        },
    )
    .unwrap();
    assert_eq!(first, Some(vec![]));
    let mut n = 0;
    let (lo, hi) = (Bound::Unbounded, Bound::Included(b"".as_slice()));
    tree::scan(&mut s, root, lo, hi, true, &mut |_: &[u8], _: &[u8]| {
        n += 1;
        true
    })
    .unwrap();
    assert_eq!(n, 1);
    tree::check(&mut s, root).unwrap();
}

#[test]
fn clear_and_destroy_free_all_pages() {
    let mut s = MemStore::new(1024);
    let a = tree::create(&mut s).unwrap();
    let b = tree::create(&mut s).unwrap();
    for i in 0..3000u32 {
        let v = value_of(if i % 10 == 0 { 2000 } else { 30 }, i as u8);
        tree::put(&mut s, a, &i.to_le_bytes(), &v).unwrap();
        tree::put(&mut s, b, &i.to_be_bytes(), &v).unwrap();
    }
    tree::clear(&mut s, a).unwrap();
    let st = tree::check(&mut s, a).unwrap();
    assert_eq!((st.keys, st.leaves, st.depth), (0, 1, 1));
    tree::put(&mut s, a, b"again", b"x").unwrap();
    assert_eq!(tree::get(&mut s, a, b"again").unwrap(), Some(b"x".to_vec()));
    tree::destroy(&mut s, a).unwrap();
    tree::destroy(&mut s, b).unwrap();
    assert_eq!(s.live(), 0);
}

#[test]
fn check_detects_damage() {
    let mut s = MemStore::new(512);
    let root = tree::create(&mut s).unwrap();
    for i in 0..500u32 {
        tree::put(&mut s, root, &i.to_be_bytes(), b"value").unwrap();
    }
    tree::check(&mut s, root).unwrap();
    // Swap two keys' order inside a leaf by rewriting a leaf's first key to a large one.
    let leaf = {
        let mut pid = root;
        loop {
            let p = &s.pages[&pid];
            if node::kind(p).unwrap() == node::NodeKind::Leaf {
                break pid;
            }
            pid = node::child_at(p, 0).unwrap();
        }
    };
    let mut bad = s.clone_page(leaf);
    node::leaf_del(&mut bad, &0u32.to_be_bytes()).unwrap();
    node::leaf_put_inline(&mut bad, &u32::MAX.to_be_bytes(), b"x").unwrap();
    s.pages.insert(leaf, bad);
    assert!(matches!(
        tree::check(&mut s, root),
        Err(Error::CorruptPage { .. })
    ));
}

impl MemStore {
    fn clone_page(&self, pid: PageId) -> Vec<u8> {
        self.pages[&pid].clone()
    }
}
