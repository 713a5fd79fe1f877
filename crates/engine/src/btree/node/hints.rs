//! Search hints for internal nodes: an in-memory table, beside the pages, of each recently read
//! internal node's *key heads* (four bytes of every separator, after the prefix all its
//! separators share), so that a descent through a cached internal node binary-searches a
//! compact array of `u32`s instead of comparing whole keys in cells spread over the page (the
//! idea of LeanStore's heads, kept out of the page so that the on-disk node format does not
//! change).
//!
//! A hint is never trusted: the child it points to is checked against the page itself (the
//! separator left of it is `<=` the key, the one right of it `>`), and a hint that fails the
//! check, belongs to another page or another version of it, or is being rebuilt is ignored and
//! the node searched as without hints. So the table needs no latch and no invalidation: readers
//! build entries as they meet nodes that have none (with whatever latch guards their read of
//! the page), racing builders only cost each other a plain search, and a page changed under an
//! entry fails the check or its stamp. Entries are direct-mapped by page id; nodes with more
//! separators than an entry holds are searched as before.
//!
//! Order: all separators of a node start with the node's common prefix `P` (that of its first and
//! last separators, which bound the others). A key that does not start with `P` is below or
//! above them all. For one that does, the head of a key is the big-endian `u32` of its four
//! bytes after `P` (zero-padded), and `head(a) < head(b)` implies `a < b`: the heads narrow the
//! search to the separators whose head equals the key's, which are compared whole.

use super::*;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering as Mem};

/// Separators an entry holds (a node with more is searched without a hint).
pub const HINT_CELLS: usize = 128;

struct Entry {
    /// The page version the heads were built from ([`stamp`]); 0: none, or being rebuilt.
    stamp: AtomicU64,
    /// Prefix length (low 16 bits) and separator count (high 16 bits) of that version.
    meta: AtomicU32,
    heads: [AtomicU32; HINT_CELLS],
}

/// Two entries a page id may use (two hot nodes whose ids map to the same set do not evict
/// each other at every read), and which of them the next build replaces.
struct Set {
    ways: [Entry; 2],
    next: AtomicU32,
}

/// The table of hints (see the module notes).
pub struct SearchHints {
    sets: Box<[Set]>,
}

/// What identifies a version of an internal node for its hint: page id, page LSN and the node
/// header's count and free-space fields (a mismatch only costs a rebuild; the check against the
/// page catches what a stamp misses). Never 0.
fn stamp(page: &[u8], h: &Hdr) -> u64 {
    let mut x = page::page_id(page).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= page::page_lsn(page).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    x ^= ((h.n as u64) << 40) ^ ((h.cell_start as u64) << 16) ^ h.frag as u64;
    x | 1
}

/// Separators sharing the key's head compared one by one at most; more, and the node is
/// searched without the hint.
const MAX_TIES: usize = 8;

/// The head of `key` after a prefix of `p` bytes.
#[inline]
fn head(key: &[u8], p: usize) -> u32 {
    if let Some(b) = key.get(p..p + 4) {
        return u32::from_be_bytes(b.try_into().expect("4 bytes"));
    }
    let mut b = [0u8; 4];
    if let Some(rest) = key.get(p..) {
        let n = rest.len().min(4);
        b[..n].copy_from_slice(&rest[..n]);
    }
    u32::from_be_bytes(b)
}

impl SearchHints {
    /// A table of at least `entries` entries (two per set, a power of two of sets).
    pub fn new(entries: usize) -> SearchHints {
        let sets = entries.div_ceil(2).max(1).next_power_of_two();
        let entry = || Entry {
            stamp: AtomicU64::new(0),
            meta: AtomicU32::new(0),
            heads: std::array::from_fn(|_| AtomicU32::new(0)),
        };
        SearchHints {
            sets: (0..sets)
                .map(|_| Set {
                    ways: [entry(), entry()],
                    next: AtomicU32::new(0),
                })
                .collect(),
        }
    }

    /// A table sized for a buffer pool of `frames` pages: one entry per 32 frames (internal
    /// nodes are about one page in a hundred), from 64 to 16,384 entries of 528 bytes (at most
    /// 8.3 MiB).
    pub fn for_frames(frames: usize) -> SearchHints {
        SearchHints::new((frames / 32).clamp(64, 16_384))
    }

    fn set(&self, pid: PageId) -> &Set {
        let i = (pid.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & (self.sets.len() - 1);
        &self.sets[i]
    }

    /// The child of internal node `page` whose key range holds `key`, and its index: as
    /// [`child_index_le`] and [`child_at`], through the node's hint where it has (or can build)
    /// one.
    pub fn child_le(&self, page: &[u8], key: &[u8]) -> Result<(usize, PageId)> {
        let h = hdr(page)?;
        if h.kind != NodeKind::Internal {
            return Err(corrupt(page, "expected an internal node"));
        }
        let c = match self.hinted_index(page, &h, key)? {
            Some(c) => c,
            None => match search_h(page, &h, key)? {
                Search::Found(i) => i + 1,
                Search::NotFound(i) => i,
            },
        };
        if c == 0 {
            return Ok((0, h.link));
        }
        let (_, e) = cell_range(page, &h, c - 1)?;
        Ok((c, get_u64(page, e - 8)))
    }

    /// The number of separators `<= key`, found through the hint and checked against the page;
    /// `None` if there is no usable hint or it fails the check.
    fn hinted_index(&self, page: &[u8], h: &Hdr, key: &[u8]) -> Result<Option<usize>> {
        let n = h.n;
        if n == 0 || n > HINT_CELLS {
            return Ok(None);
        }
        let set = self.set(page::page_id(page));
        let want = stamp(page, h);
        let Some(e) = set.ways.iter().find(|e| e.stamp.load(Mem::Acquire) == want) else {
            let w = set.next.load(Mem::Relaxed) as usize & 1;
            set.next.store(w as u32 ^ 1, Mem::Relaxed);
            Self::build(&set.ways[w], page, h, want)?;
            return Ok(None);
        };
        let meta = e.meta.load(Mem::Relaxed);
        let p = (meta & 0xFFFF) as usize;
        if (meta >> 16) as usize != n {
            return Ok(None);
        }
        // The separators whose heads are below the key's are below it, those whose heads are
        // above it above it (if the key starts with the node's prefix: if not, the check below
        // fails and the node is searched without the hint). The ones with the key's head are
        // compared whole; each comparison also checks one side of the answer.
        let hk = head(key, p);
        let heads = &e.heads[..n];
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if heads[mid].load(Mem::Relaxed) < hk {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let (mut c, mut below, mut above) = (lo, lo == 0, false);
        while c < n && heads[c].load(Mem::Relaxed) == hk {
            if c - lo == MAX_TIES {
                return Ok(None);
            }
            if cmp_key(key_h(page, h, c)?, key).is_gt() {
                above = true;
                break;
            }
            below = true;
            c += 1;
        }
        // The check against the page, of the sides no comparison above settled: a stale, torn
        // or colliding hint is not used.
        if !below && cmp_key(key_h(page, h, c - 1)?, key).is_gt() {
            return Ok(None);
        }
        if !above && c < n && cmp_key(key_h(page, h, c)?, key).is_le() {
            return Ok(None);
        }
        Ok(Some(c))
    }

    /// Builds `e` for node `page` (version `want`). A racing builder of the same entry may
    /// interleave its stores with these, and a reader may read them half done: the stamp,
    /// cleared first and set last, makes that rare, and the check against the page makes it
    /// harmless (nothing read from an entry is trusted without it).
    fn build(e: &Entry, page: &[u8], h: &Hdr, want: u64) -> Result<()> {
        let n = h.n;
        let first = key_h(page, h, 0)?;
        let last = key_h(page, h, n - 1)?;
        let p = first
            .iter()
            .zip(last)
            .take_while(|(a, b)| a == b)
            .count()
            .min(u16::MAX as usize);
        e.stamp.store(0, Mem::Relaxed);
        for (i, slot) in e.heads[..n].iter().enumerate() {
            slot.store(head(key_h(page, h, i)?, p), Mem::Relaxed);
        }
        e.meta.store(p as u32 | (n as u32) << 16, Mem::Relaxed);
        e.stamp.store(want, Mem::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::PageType;
    use proptest::prelude::*;

    fn internal(pid: PageId, lsn: u64, seps: &[Vec<u8>]) -> Vec<u8> {
        let mut p = vec![0; 4096];
        page::init(&mut p, pid, PageType::Internal);
        init(&mut p, NodeKind::Internal, 1);
        for (i, s) in seps.iter().enumerate() {
            internal_insert(&mut p, s, 100 + i as u64).expect("fits");
        }
        page::set_page_lsn(&mut p, lsn);
        p
    }

    fn plain(page: &[u8], key: &[u8]) -> PageId {
        child_at(page, child_index_le(page, key).unwrap()).unwrap()
    }

    #[test]
    fn a_built_hint_is_used_and_agrees_with_the_page() {
        let seps: Vec<Vec<u8>> = (0..100)
            .map(|i| format!("user{:020}", i * 10).into_bytes())
            .collect();
        let page = internal(9, 3, &seps);
        let hints = SearchHints::new(8);
        let h = hdr(&page).unwrap();
        let key = format!("user{:020}", 355).into_bytes();
        assert_eq!(
            hints.hinted_index(&page, &h, &key).unwrap(),
            None,
            "built, not yet used"
        );
        assert_eq!(hints.hinted_index(&page, &h, &key).unwrap(), Some(36));
        for k in [
            &b""[..],
            b"user",
            b"user0",
            b"zzz",
            &seps[0],
            &seps[99],
            &key,
        ] {
            assert_eq!(
                hints.child_le(&page, k).unwrap().1,
                plain(&page, k),
                "{k:?}"
            );
        }
    }

    #[test]
    fn a_stale_hint_under_the_same_stamp_is_caught_by_the_check() {
        // Same page id, LSN, count and cell sizes: the same stamp, other keys (a change the
        // stamp cannot see).
        let a: Vec<Vec<u8>> = (0..50).map(|i| format!("b{i:04}").into_bytes()).collect();
        let b: Vec<Vec<u8>> = (0..50)
            .map(|i| format!("c{:04}", i * 3).into_bytes())
            .collect();
        let (pa, pb) = (internal(4, 7, &a), internal(4, 7, &b));
        let (ha, hb) = (hdr(&pa).unwrap(), hdr(&pb).unwrap());
        assert_eq!(stamp(&pa, &ha), stamp(&pb, &hb));
        let hints = SearchHints::new(2);
        hints.child_le(&pa, b"b0010").unwrap();
        for i in 0..200 {
            let k = format!("c{i:04}").into_bytes();
            assert_eq!(hints.child_le(&pb, &k).unwrap().1, plain(&pb, &k), "{i}");
        }
    }

    proptest! {
        /// Any separators (a short alphabet: long shared prefixes and equal heads), any keys,
        /// several nodes in a table of one set: the hinted child is the plain search's.
        #[test]
        fn hinted_children_are_the_plain_searchs(
            nodes in proptest::collection::vec(
                proptest::collection::btree_set(proptest::collection::vec(0u8..3, 0..12), 1..60),
                1..4,
            ),
            keys in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..14), 1..40),
        ) {
            let hints = SearchHints::new(2);
            let pages: Vec<Vec<u8>> = nodes
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let seps: Vec<Vec<u8>> = s.iter().filter(|k| !k.is_empty()).cloned().collect();
                    internal(10 + i as u64, 1, &seps)
                })
                .collect();
            for _ in 0..3 {
                for p in &pages {
                    for k in &keys {
                        prop_assert_eq!(hints.child_le(p, k).unwrap().1, plain(p, k));
                        prop_assert_eq!(
                            hints.child_le(p, k).unwrap().0,
                            child_index_le(p, k).unwrap()
                        );
                    }
                }
            }
        }
    }
}
