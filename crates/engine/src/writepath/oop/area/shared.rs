//! The page map as readers share it: a miss looks its page's place up and confirms it with no
//! part of the write path's mutex (docs/engine.md, "Misses", step 3).
//!
//! The write path holds its mutex across its device I/O: a batch's append, garbage
//! collection's copies, a checkpoint's snapshot. A miss that looked its place up under that
//! mutex waited for all of it. So the area keeps a copy of its map that readers can read
//! without it: one atomic word per page id (offset, stored length, and a *staged* bit) and one
//! atomic reset count per zone. Only the write path writes them (under its mutex), each map
//! change mirrored where it is made ([`super::LogArea`]'s `set_loc`, recovery's reload).
//!
//! The staged bit stands for the copy the write path holds in memory: set when a page is
//! staged, cleared only once the staged copy is on the device and the map names it. While it
//! is set the word's place is not the page's newest copy (a staged page, or one taken from the
//! stage and being written). With copies kept (`keep_copies`: beside a page cleaner, see
//! `WritePath::serve_held_pages`) the reader reads the staged copy's bytes, which the map keeps
//! beside the words under a small mutex of its own (set before the bit, taken out after it is
//! cleared: a reader that finds the bit and no copy looks the word up again); without, it asks
//! the write path, under the write path's mutex, held across a batch's writes and its log
//! force (77 misses in 5 s of out-of-place YCSB-A at 2 threads waited 4-16 ms for it). Garbage collection may move a staged page's older copy meanwhile;
//! the bit stays.
//!
//! Why a place read without the mutex is the page's (the same argument as the journal's,
//! `writepath/journal/places.rs`): a page being read is not cached, so nothing stages it
//! meanwhile; its copy stays at its place until the page is written again or moved by garbage
//! collection, which change the word; and the place's bytes are reused only after its zone is
//! reset, whose count is bumped before the reset. The look-up reads the word, the zone's count
//! and the word again: if the word is the same after the count, the copy it names was on the
//! device when the count was read (the word is set after the append), and stays there until
//! the count changes. The confirmation after the device read compares the word and the count.

use crate::page::PageId;
use crate::writepath::Place;
use std::collections::HashMap;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Bits of the offset in a word (8 TiB of device).
const OFF_BITS: u32 = 43;
/// Bits of the stored length (up to 1 MiB; a stored page is at most a page and a blob header).
const LEN_BITS: u32 = 20;
const OFF_MASK: u64 = (1 << OFF_BITS) - 1;
const LEN_MASK: u64 = (1 << LEN_BITS) - 1;
/// The page's newest copy is the write path's staged one (see the module notes).
const STAGED: u64 = 1 << 63;
const _: () = assert!(OFF_BITS + LEN_BITS < 64);

/// The shared copy of the page map and the zones' reset counts.
pub(crate) struct SharedMap {
    words: Box<[AtomicU64]>,
    resets: Box<[AtomicU64]>,
    data_start: u64,
    zone_bytes: u64,
    /// Whether every offset of the device fits a word: else readers always ask the write path.
    fits: bool,
    /// The stored bytes of each staged page, so that a miss reads it without the write path's
    /// mutex (held across a batch's writes and its log force): set before the page's staged
    /// bit, taken out after the bit is cleared.
    staged: Mutex<HashMap<PageId, Arc<[u8]>>>,
    /// Whether `staged` keeps copies ([`SharedMap::keep_copies`]); else readers of a staged
    /// page ask the write path.
    copies: AtomicBool,
}

/// A word: no copy (0: the data zones never start at offset 0), or an offset and a length.
fn word(off: u64, len: u32) -> u64 {
    debug_assert!(off <= OFF_MASK && (len as u64) <= LEN_MASK && off != 0);
    (len as u64) << OFF_BITS | off
}

fn place_of(w: u64) -> (u64, u32) {
    (w & OFF_MASK, ((w >> OFF_BITS) & LEN_MASK) as u32)
}

impl SharedMap {
    pub(super) fn new(pages: u64, zones: u32, data_start: u64, zone_bytes: u64) -> SharedMap {
        let data_end = data_start + zones as u64 * zone_bytes;
        SharedMap {
            words: (0..pages).map(|_| AtomicU64::new(0)).collect(),
            resets: (0..zones).map(|_| AtomicU64::new(0)).collect(),
            data_start,
            zone_bytes,
            fits: data_start > 0 && data_end <= OFF_MASK,
            staged: Mutex::default(),
            copies: AtomicBool::new(false),
        }
    }

    /// Whether readers can look places up here at all.
    pub(crate) fn usable(&self) -> bool {
        self.fits
    }

    fn zone_of(&self, off: u64) -> usize {
        ((off - self.data_start) / self.zone_bytes) as usize
    }

    /// Page `pid`'s copy is now at `off` (`len` bytes), or nowhere (None); its staged bit is
    /// kept. The write path only, after the copy is on the device.
    pub(super) fn set(&self, pid: PageId, at: Option<(u64, u32)>) {
        if !self.fits {
            return;
        }
        let w = &self.words[pid as usize];
        let staged = w.load(Ordering::Relaxed) & STAGED;
        let new = at.map_or(0, |(off, len)| word(off, len));
        w.store(new | staged, Ordering::Release);
    }

    /// Page `pid`'s staged copy is now `bytes` (stored form), for [`SharedMap::staged_copy`].
    /// Before [`SharedMap::stage`] marks it.
    pub(super) fn keep_staged(&self, pid: PageId, bytes: &[u8]) {
        if self.fits && self.copies.load(Ordering::Relaxed) {
            crate::sync::lock(&self.staged).insert(pid, bytes.into());
        }
    }

    /// Keeps copies of staged pages from now on (or stops: those kept stay until written).
    /// Set by the write path's owner under the write path's mutex, before any read uses it.
    pub(crate) fn keep_copies(&self, on: bool) {
        self.copies.store(on, Ordering::Relaxed);
    }

    /// The stored bytes of page `pid` if it is staged (None: it is not, or no longer: look it
    /// up again).
    pub(crate) fn staged_copy(&self, pid: PageId) -> Option<Arc<[u8]>> {
        crate::sync::lock(&self.staged).get(&pid).cloned()
    }

    /// Page `pid`'s newest copy is (or is no longer) the write path's staged one.
    pub(super) fn stage(&self, pid: PageId, staged: bool) {
        if !self.fits {
            return;
        }
        if !staged {
            // The bit is cleared below first: a reader that finds no copy looks again.
            let w = &self.words[pid as usize];
            w.fetch_and(!STAGED, Ordering::Release);
            crate::sync::lock(&self.staged).remove(&pid);
            return;
        }
        let w = &self.words[pid as usize];
        if staged {
            w.fetch_or(STAGED, Ordering::Release);
        } else {
            w.fetch_and(!STAGED, Ordering::Release);
        }
    }

    /// Zone `z` is being reset: a read of its bytes that began before is not confirmed. Called
    /// before the device reset.
    pub(super) fn reset(&self, z: u32) {
        self.resets[z as usize].fetch_add(1, Ordering::AcqRel);
    }

    /// Times zone `z` was reset since the area was opened.
    pub(super) fn resets(&self, z: u32) -> u64 {
        self.resets[z as usize].load(Ordering::Acquire)
    }

    /// Page `pid`'s place without the write path's mutex, or None: ask the write path (the
    /// page is staged, never written, or its offsets do not fit a word). The caller checked
    /// `pid` against the map's length.
    pub(crate) fn locate(&self, pid: PageId) -> Option<Place> {
        if !self.fits {
            return None;
        }
        let w = &self.words[pid as usize];
        loop {
            let before = w.load(Ordering::Acquire);
            if before & STAGED != 0 || before == 0 {
                return None;
            }
            let (offset, len) = place_of(before);
            let epoch = self.resets[self.zone_of(offset)].load(Ordering::Acquire);
            if w.load(Ordering::Acquire) == before {
                return Some(Place {
                    offset,
                    len,
                    epoch,
                    home: false,
                });
            }
        }
    }

    /// Whether `place` ([`SharedMap::locate`] of `pid`) held page `pid` all the while since.
    pub(crate) fn confirm(&self, pid: PageId, place: &Place) -> bool {
        if !self.fits || place.len as u64 > LEN_MASK || place.offset < self.data_start {
            return false;
        }
        // The device read's bytes were all read before the word and the count are looked at.
        fence(Ordering::SeqCst);
        let w = self.words[pid as usize].load(Ordering::Acquire);
        w == word(place.offset, place.len)
            && self.resets[self.zone_of(place.offset)].load(Ordering::Acquire) == place.epoch
    }

    /// The word's place (None: no copy) and staged bit, to check the mirror.
    pub(crate) fn get(&self, pid: PageId) -> (Option<(u64, u32)>, bool) {
        let w = self.words[pid as usize].load(Ordering::Acquire);
        let at = (w & !STAGED != 0).then(|| place_of(w));
        (at, w & STAGED != 0)
    }
}
