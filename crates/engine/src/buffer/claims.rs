//! Frames reserved, filled and adopted with the core latch **shared** (see the module notes
//! of `buffer/mod.rs`): a miss's claim of a frame set aside for it, a page made in a frame by a
//! split beside other threads, and what the exclusive latch does to set such frames aside and
//! to complete them.

use super::memory::{GUARDED, LOADING, REFERENCED};
use super::{is_leaf, BufferPool, LoadSlot, PageState};
use crate::page::PageId;
use crate::page_table::Unclaimed;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl BufferPool {
    /// Reserves frame `f`, a free frame set aside for misses (pinned, holding no page), for
    /// `pid` with the core latch **shared**: the page reads as loading until the slot is
    /// published, as after [`BufferPool::install_loading`]. The frame's own bookkeeping (its
    /// page id, its pin) is left to [`BufferPool::adopt_loaded`], with the latch exclusive;
    /// meanwhile only the page table, the frame's bits and its bytes are used, and the pin
    /// keeps the CLOCK sweep away. Fails if the page's entry is not absent (another thread
    /// claimed it first, or a failed load still holds it) or may not be claimed now.
    pub fn claim_loading(&self, f: u32, pid: PageId) -> std::result::Result<LoadSlot, Unclaimed> {
        let bits = self.mem.bits(f);
        debug_assert_eq!(
            bits.load(Ordering::Relaxed),
            0,
            "a frame set aside holds nothing"
        );
        bits.store(LOADING, Ordering::Relaxed);
        match self.table.claim(pid, f) {
            Ok(()) => {
                self.shared_misses.add(1);
                Ok(LoadSlot::new(Arc::clone(&self.mem), f))
            }
            Err(e) => {
                // Nobody found the frame: the entry never named it.
                bits.store(0, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    /// Puts `pid` in frame `f` with the core latch **shared**: a page made there, not read (a
    /// leaf split beside other threads, `engine/split_beside.rs`, its bytes written by the
    /// maker). `f` is a free frame set aside (pinned, holding no page, its bits clear), and
    /// nobody else knows `pid` yet (a page id never used, learnt by others only from the
    /// maker's pages once it lets them go). From the claim on, the page is resident and
    /// guarded, found through the page table, its bits and its bytes as a page claimed by a
    /// miss is; its frame's bookkeeping waits for [`BufferPool::adopt_loaded`] with the latch
    /// exclusive. Not counted as a miss. `false`, having changed nothing: the entry may not be
    /// claimed now (its chunk does not exist yet: the exclusive latch puts it in as before).
    pub fn claim_made(&self, f: u32, pid: PageId) -> bool {
        let bits = self.mem.bits(f);
        debug_assert_eq!(
            bits.load(Ordering::Relaxed),
            0,
            "a frame set aside holds nothing"
        );
        debug_assert!(is_leaf(self.mem.bytes(f)), "only leaves are made so");
        // Set before the claim, whose release publishes them with the bytes.
        bits.store(REFERENCED | GUARDED, Ordering::Relaxed);
        match self.table.claim(pid, f) {
            Ok(()) => true,
            Err(e) => {
                debug_assert_eq!(e, Unclaimed::NoPlace, "page {pid} was in the table already");
                bits.store(0, Ordering::Relaxed);
                false
            }
        }
    }

    /// Marks frame `f` guarded with the core latch **shared**: a leaf made in a frame that held
    /// a free page (a split beside other threads reusing the free list's head,
    /// `engine/split_beside.rs`), which no other thread can reach until the maker lets go of
    /// the leaf that links to it. Its other bits stay (a hit on the free page is not possible,
    /// nor a sweep with the latch shared).
    pub fn guard_made(&self, f: u32) {
        debug_assert!(is_leaf(self.mem.bytes(f)), "only leaves are made so");
        self.mem.bits(f).fetch_or(GUARDED, Ordering::Release);
    }

    /// Sets free frame `f` aside for misses reserved with the latch shared (core latch
    /// exclusive): pinned, so the CLOCK sweep passes it by, and its bits cleared (an evicted
    /// page leaves its reference and guard bits behind).
    pub fn set_aside(&mut self, f: u32) {
        debug_assert!(self.frames[f as usize].pid.is_none());
        self.pin(f);
        self.mem.bits(f).store(0, Ordering::Relaxed);
    }

    /// Gives frames set aside (pinned, holding no page) back to the CLOCK sweep (core latch
    /// exclusive). Whether there were any.
    pub fn give_back(&mut self, frames: &[u32]) -> bool {
        for &f in frames {
            self.unpin(f);
        }
        !frames.is_empty()
    }

    /// Completes the reservation of a frame claimed with the latch shared (core latch
    /// exclusive): the frame holds `pid` (loading, loaded or failed) and is unpinned, as
    /// [`BufferPool::install_loading`] leaves a frame.
    pub fn adopt_loaded(&mut self, f: u32, pid: PageId) {
        debug_assert_eq!(self.table.get(pid), Some(PageState::Resident(f)));
        let fr = &mut self.frames[f as usize];
        debug_assert!(fr.pid.is_none() && !fr.dirty && fr.pins == 1);
        fr.pid = Some(pid);
        fr.pins -= 1;
    }
}
