//! Transparent huge pages for the engine's large anonymous regions (the buffer pool's arena and
//! the in-memory devices). Such a region is zeroed memory the kernel maps on first touch; with
//! 4 KiB pages, a 1 GiB region is 262,144 faults, each with its own zeroing, accounting and page
//! table update, and then as many TLB entries for random reads. Asking for huge pages
//! (`madvise(MADV_HUGEPAGE)`, which the kernel honours when THP is in `madvise` or `always`
//! mode) makes that 512 faults of 2 MiB. The advice is only a hint: where it is refused or THP is
//! off, the region works as before.

/// The huge page size the advice aims at (x86-64 and aarch64 with 4 KiB base pages).
const HUGE: usize = 2 << 20;

/// Regions smaller than this are left alone (the advice would cover little of them).
const MIN_LEN: usize = 4 * HUGE;

/// Advises huge pages for the 2 MiB-aligned part of `[ptr, ptr + len)`, if the region is large.
/// The region must be an anonymous mapping owned by the caller (memory from `calloc` or a `Vec`
/// of that size is: glibc serves large allocations with their own `mmap`).
pub(crate) fn advise(ptr: *mut u8, len: usize) {
    if len < MIN_LEN {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize + len) / HUGE * HUGE;
    if end <= start {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: the range lies inside the caller's allocation; MADV_HUGEPAGE changes no contents
    // and its failure (an old kernel, THP off) leaves the mapping as it was.
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
    }
}
