//! The buffer pool's memory: the frames' bytes (one allocation), each frame's bits, views of a
//! frame's bytes, and the slot through which a loader fills a frame with no core latch held.
//! Who may touch which bytes when is the protocol of the module notes of `buffer/mod.rs`.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

/// A frame's bits ([`FrameMem`]): CLOCK's reference bit, set by hits (which may come
/// from threads sharing the core latch: written only when it changes, so a hot page's line is
/// not written by every read) and cleared by the sweep under the exclusive latch.
pub(super) const REFERENCED: u8 = 1;
/// May be written with the core latch shared (see the pool's module notes); changed only with it
/// exclusive, or by the store that publishes a loaded frame.
pub(super) const GUARDED: u8 = 2;
/// Reserved for a page whose bytes its loader is reading from the device (see the module
/// notes); cleared by one release store once they are in.
pub(super) const LOADING: u8 = 4;
/// Its load failed: the page is not cached, and the frame is free for the exclusive latch to
/// take back (see `BufferPool::pick_victim`).
pub(super) const FAILED: u8 = 8;

/// The frames' bytes, one zeroed allocation: the system hands it out as untouched zero pages,
/// so a pool costs memory only for the frames it has used (and a frame's bytes are at a fixed
/// offset, found without looking at the frame's bookkeeping).
pub(super) struct Arena {
    ptr: std::ptr::NonNull<u8>,
    layout: std::alloc::Layout,
}

// SAFETY: the arena is plain memory owned by the pool; who may read or write which bytes is the
// latching protocol of the pool's module notes, enforced through `PageBytes`.
unsafe impl Send for Arena {}
unsafe impl Sync for Arena {}

impl Arena {
    pub(super) fn zeroed(len: usize) -> std::result::Result<Arena, ()> {
        // The allocator's own alignment: zeroed memory of a larger alignment is allocated and
        // then written with zeros (every page touched), of this one it comes from calloc.
        let layout = std::alloc::Layout::from_size_align(len.max(1), 16).map_err(|_| ())?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = std::ptr::NonNull::new(raw).ok_or(())?;
        crate::memadvise::huge_pages(raw, len);
        Ok(Arena { ptr, layout })
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// The frames' bytes and bits, shared with the loaders that fill a frame with no core latch
/// held ([`LoadSlot`]).
pub(super) struct FrameMem {
    arena: Arena,
    /// Per frame, the [`REFERENCED`], [`GUARDED`], [`LOADING`] and [`FAILED`] bits: apart from
    /// the frames' bookkeeping, a byte each, so the hit path of a read touches a dense array
    /// (mostly cached) rather than a line of its own per frame.
    flags: Box<[AtomicU8]>,
    page_size: usize,
    /// Loads published (pages read with the core latch released).
    pub(super) published: AtomicU64,
}

impl FrameMem {
    pub(super) fn new(arena: Arena, frames: usize, page_size: usize) -> FrameMem {
        assert!(frames * page_size <= arena.layout.size(), "arena too small");
        FrameMem {
            arena,
            flags: (0..frames).map(|_| AtomicU8::new(0)).collect(),
            page_size,
            published: AtomicU64::new(0),
        }
    }

    /// A view of frame `f`'s bytes (the frame's `data`).
    pub(super) fn page_bytes(&self, f: usize) -> PageBytes {
        PageBytes::of(&self.arena, f, self.page_size)
    }

    /// Frame `f`'s bytes, read under the protocol of the pool's module notes.
    pub(super) fn bytes(&self, f: u32) -> &[u8] {
        let f = f as usize;
        assert!(f < self.flags.len(), "frame {f} out of range");
        // SAFETY: in bounds (one page per frame); who may read which bytes when is the
        // latching protocol of the pool's module notes.
        unsafe {
            std::slice::from_raw_parts(
                self.arena.ptr.as_ptr().add(f * self.page_size),
                self.page_size,
            )
        }
    }

    /// Frame `f`'s bits.
    pub(super) fn bits(&self, f: u32) -> &AtomicU8 {
        &self.flags[f as usize]
    }
}

/// A frame's bytes (a view into the pool's arena): read through `&self`, written through
/// `&mut self`, or, for a guarded frame with the core latch shared, through
/// [`PageBytes::write_shared`] under the frame's stripe latch held exclusive (see the module
/// notes).
pub(crate) struct PageBytes {
    ptr: std::ptr::NonNull<UnsafeCell<u8>>,
    len: usize,
}

// SAFETY: the bytes are shared between threads only while the core latch is shared, and then
// written only under the latching protocol of the pool's module notes (a guarded frame's stripe latch
// held exclusive, its readers holding it shared; other frames not written at all). Each view
// covers its own frame's bytes, and the arena outlives the views (both belong to the pool).
unsafe impl Sync for PageBytes {}
unsafe impl Send for PageBytes {}

impl PageBytes {
    /// The bytes of frame `f` of `arena`.
    fn of(arena: &Arena, f: usize, len: usize) -> PageBytes {
        debug_assert!((f + 1) * len <= arena.layout.size());
        // SAFETY: in bounds of the arena (checked by the caller's sizing, asserted above).
        let p = unsafe { arena.ptr.as_ptr().add(f * len) };
        PageBytes {
            ptr: std::ptr::NonNull::new(p as *mut UnsafeCell<u8>).expect("arena pointer"),
            len,
        }
    }

    /// The bytes, mutable, from a shared reference.
    ///
    /// # Safety
    /// The caller holds the frame's stripe latch exclusive with the core latch shared (the
    /// frame is guarded), or otherwise knows no other reference to these bytes is in use.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn write_shared(&self) -> &mut [u8] {
        // SAFETY: UnsafeCell<u8> has u8's layout and allows mutation through a shared
        // reference; exclusivity is the caller's promise.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr() as *mut u8, self.len) }
    }
}

impl std::ops::Deref for PageBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: same layout; see the pool's module notes for when a shared read may overlap a
        // write (never: guarded frames are read under their stripe latch).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr() as *const u8, self.len) }
    }
}

impl std::ops::DerefMut for PageBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: `&mut self` is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr() as *mut u8, self.len) }
    }
}

/// A frame reserved for a page being read with no core latch held (`BufferPool::install_loading`,
/// or `BufferPool::claim_loading` with the latch shared): its loader's to fill, then to publish.
/// Dropped unpublished (an error or a panic on the way), the load counts as failed, so nobody waits
/// for it forever.
pub(crate) struct LoadSlot {
    mem: Arc<FrameMem>,
    f: u32,
    done: bool,
}

impl LoadSlot {
    pub(super) fn new(mem: Arc<FrameMem>, f: u32) -> LoadSlot {
        LoadSlot {
            mem,
            f,
            done: false,
        }
    }

    /// The frame's bytes, for the loader to fill.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        debug_assert!(self.mem.bits(self.f).load(Ordering::Relaxed) & LOADING != 0);
        // SAFETY: the frame is loading, so only its loader (the holder of this slot, which is
        // not `Clone`) touches its bytes until `publish` or `fail` (see the pool's module notes);
        // the arena lives as long as `mem`.
        unsafe {
            let p = self
                .mem
                .arena
                .ptr
                .as_ptr()
                .add(self.f as usize * self.mem.page_size);
            std::slice::from_raw_parts_mut(p, self.mem.page_size)
        }
    }

    /// The bytes are in: the page is resident (guarded if it is a leaf, as a read under the
    /// exclusive latch would make it).
    pub fn publish(mut self) {
        let leaf = super::is_leaf(self.mem.bytes(self.f));
        let bits = REFERENCED | if leaf { GUARDED } else { 0 };
        self.mem.bits(self.f).store(bits, Ordering::Release);
        self.mem.published.fetch_add(1, Ordering::Relaxed);
        self.done = true;
    }

    /// The read failed: the page is not cached, and the frame goes back to the pool.
    pub fn fail(mut self) {
        self.mem.bits(self.f).store(FAILED, Ordering::Release);
        self.done = true;
    }
}

/// A frame another thread is loading, to be waited for with no latch held
/// (`BufferPool::load_wait`).
pub(crate) struct LoadWait {
    mem: Arc<FrameMem>,
    f: u32,
}

impl LoadWait {
    pub(super) fn new(mem: Arc<FrameMem>, f: u32) -> LoadWait {
        LoadWait { mem, f }
    }

    /// Returns once the load is published or failed.
    pub fn wait(self) {
        wait_settled(self.mem.bits(self.f));
    }
}

/// Waits until a frame's bits say it is not loading (its loader holds no latch, so this ends
/// whatever the caller holds); then whether it holds its page (false: the load failed). The
/// acquire pairs with the loader's release: the bytes it read are seen.
#[inline]
pub(super) fn wait_settled(bits: &AtomicU8) -> bool {
    let mut b = bits.load(Ordering::Acquire);
    let mut spins = 0u32;
    while b & LOADING != 0 {
        // A device read takes microseconds: spin briefly, then give the core away.
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
        spins += 1;
        b = bits.load(Ordering::Acquire);
    }
    b & FAILED == 0
}

impl Drop for LoadSlot {
    fn drop(&mut self) {
        if !self.done {
            self.mem.bits(self.f).store(FAILED, Ordering::Release);
        }
    }
}
