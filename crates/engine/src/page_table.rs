//! The buffer pool's page table: page id -> where the page is ([`PageState`]), as a two-level array
//! of 4-byte entries. Page ids are dense (the pages of a device), so the ids are cut into chunks of
//! 1,024, and a chunk's array is made when a page of it is first put in: 4 bytes per page id of the
//! chunks ever cached. The entries are atomics: with the core latch shared, a miss may claim an
//! absent entry of an existing chunk for the frame it loads the page into ([`PageTable::claim`]);
//! every other change is made with the latch exclusive (`&mut`). A lookup is two dependent loads
//! without hashing, and the entries of pages near each other share cache lines (a hash map's
//! buckets took about a tenth of a cached read: a miss per tree level). Ids beyond [`MAX_CHUNKS`]
//! chunks, which no device of today has, go to a hash map.

use crate::buffer::PageState;
use crate::page::PageId;
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicU32, Ordering};

const CHUNK_BITS: u32 = 10;
const CHUNK: usize = 1 << CHUNK_BITS;
/// Chunks kept in the array: 2^32 page ids (16 TiB of 4 KiB pages).
const MAX_CHUNKS: usize = 1 << 22;
const ABSENT: u32 = u32::MAX;
const EVICTED_DIRTY: u32 = u32::MAX - 1;
/// The largest frame index an entry can hold (see `config::MAX_BUFFER_PAGES`).
pub const MAX_FRAME: u32 = u32::MAX - 2;

type Chunk = Box<[AtomicU32; CHUNK]>;

/// Why [`PageTable::claim`] did not claim an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unclaimed {
    /// The entry holds this (another thread's claim, a resident page, a failed load).
    Taken(PageState),
    /// The page's chunk does not exist yet, or its id is kept in the hash map: only an
    /// exclusive change may put it in.
    NoPlace,
}

#[derive(Default)]
pub(crate) struct PageTable {
    chunks: Vec<Option<Chunk>>,
    far: FxHashMap<PageId, PageState>,
}

fn encode(s: PageState) -> u32 {
    match s {
        PageState::Resident(f) => {
            assert!(f <= MAX_FRAME, "frame {f} beyond the page table's range");
            f
        }
        PageState::EvictedDirty => EVICTED_DIRTY,
    }
}

fn decode(e: u32) -> Option<PageState> {
    match e {
        ABSENT => None,
        EVICTED_DIRTY => Some(PageState::EvictedDirty),
        f => Some(PageState::Resident(f)),
    }
}

/// (chunk, index in it) of `pid`, or None for an id kept in the hash map.
fn place(pid: PageId) -> Option<(usize, usize)> {
    let c = usize::try_from(pid >> CHUNK_BITS).ok()?;
    (c < MAX_CHUNKS).then_some((c, pid as usize & (CHUNK - 1)))
}

impl PageTable {
    #[inline]
    pub fn get(&self, pid: PageId) -> Option<PageState> {
        match place(pid) {
            // Acquire: pairs with a claim's release, so the frame's bits set before it are seen.
            Some((c, i)) => decode(self.chunks.get(c)?.as_ref()?[i].load(Ordering::Acquire)),
            None => self.far.get(&pid).copied(),
        }
    }

    /// Puts `pid` in frame `f` if its entry is absent, with the core latch shared: the claim
    /// of a miss (one thread wins a race for a page). The frame's state (its bits) is set
    /// before: the release publishes it to whoever finds the entry.
    pub fn claim(&self, pid: PageId, f: u32) -> Result<(), Unclaimed> {
        let Some((c, i)) = place(pid) else {
            return Err(Unclaimed::NoPlace);
        };
        let Some(Some(chunk)) = self.chunks.get(c) else {
            return Err(Unclaimed::NoPlace);
        };
        chunk[i]
            .compare_exchange(
                ABSENT,
                encode(PageState::Resident(f)),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .map(|_| ())
            .map_err(|e| Unclaimed::Taken(decode(e).expect("a claim failed on an absent entry")))
    }

    pub fn insert(&mut self, pid: PageId, s: PageState) {
        let Some((c, i)) = place(pid) else {
            self.far.insert(pid, s);
            return;
        };
        if self.chunks.len() <= c {
            self.chunks.resize_with(c + 1, || None);
        }
        let chunk = self.chunks[c]
            .get_or_insert_with(|| Box::new(std::array::from_fn(|_| AtomicU32::new(ABSENT))));
        *chunk[i].get_mut() = encode(s);
    }

    pub fn remove(&mut self, pid: PageId) {
        match place(pid) {
            Some((c, i)) => {
                if let Some(Some(chunk)) = self.chunks.get_mut(c) {
                    *chunk[i].get_mut() = ABSENT;
                }
            }
            None => {
                self.far.remove(&pid);
            }
        }
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (PageId, PageState)> + '_ {
        let near = self
            .chunks
            .iter()
            .enumerate()
            .filter_map(|(c, chunk)| chunk.as_ref().map(|ch| (c, ch)))
            .flat_map(|(c, ch)| {
                ch.iter().enumerate().filter_map(move |(i, e)| {
                    decode(e.load(Ordering::Relaxed))
                        .map(|s| (((c << CHUNK_BITS) | i) as PageId, s))
                })
            });
        near.chain(self.far.iter().map(|(&p, &s)| (p, s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn behaves_as_a_map() {
        let mut t = PageTable::default();
        let mut model: HashMap<PageId, PageState> = HashMap::new();
        let mut x = 12345u64;
        for step in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Mostly dense ids, some far beyond the array.
            let pid = if x.is_multiple_of(97) {
                (1u64 << 40) + (x >> 50)
            } else {
                (x >> 33) % 50_000
            };
            match (x >> 20) % 3 {
                0 => {
                    let s = if step.is_multiple_of(5) {
                        PageState::EvictedDirty
                    } else {
                        PageState::Resident((x >> 40) as u32 % 1000)
                    };
                    t.insert(pid, s);
                    model.insert(pid, s);
                }
                1 => {
                    t.remove(pid);
                    model.remove(&pid);
                }
                _ => assert_eq!(t.get(pid), model.get(&pid).copied(), "page {pid}"),
            }
        }
        let mut all: Vec<_> = t.iter().collect();
        all.sort_by_key(|&(p, _)| p);
        let mut want: Vec<_> = model.into_iter().collect();
        want.sort_by_key(|&(p, _)| p);
        assert_eq!(all, want);
        assert_eq!(t.get(u64::MAX), None);
    }
}
