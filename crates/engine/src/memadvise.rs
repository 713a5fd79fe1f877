//! Advice to the kernel about the engine's large anonymous regions (the buffer pool's arena, the
//! in-memory devices): huge pages, and giving zeroed pages back.
//!
//! Transparent huge pages: such a region is zeroed memory the kernel maps on first touch; with
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
pub(crate) fn huge_pages(ptr: *mut u8, len: usize) {
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

/// Below this many bytes [`zero`] just writes zeros.
const RELEASE_MIN: usize = 64 << 10;

/// The kernel's page size (what `madvise` rounds a length up to), looked up once.
fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PAGE.get_or_init(|| {
        #[cfg(target_os = "linux")]
        // SAFETY: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        #[cfg(not(target_os = "linux"))]
        let n = 4096;
        usize::try_from(n)
            .ok()
            .filter(|n| n.is_power_of_two())
            .unwrap_or(4096)
    })
}

/// Sets `buf` to zeros. The whole pages inside a large `buf` are given back to the kernel
/// (`madvise(MADV_DONTNEED)`: they read as zeros and take no memory until written again), as a
/// trim frees an SSD's blocks; the partial pages at its ends are written. `buf` must lie in a
/// private anonymous mapping (memory from the system allocator, or any allocator that maps
/// private anonymous memory, does), where that advice means zero-fill on the next touch; a
/// region that does not read back as zeros is written instead. The release covers whole pages of
/// the kernel's page size inside `buf`, never a byte outside it.
pub(crate) fn zero(buf: &mut [u8]) {
    let page = page_size();
    let start = (buf.as_ptr() as usize).next_multiple_of(page) - buf.as_ptr() as usize;
    let whole = buf.len().saturating_sub(start) / page * page;
    if !cfg!(target_os = "linux") || buf.len() < RELEASE_MIN || whole == 0 {
        buf.fill(0);
        return;
    }
    let (head, rest) = buf.split_at_mut(start);
    let (middle, tail) = rest.split_at_mut(whole);
    head.fill(0);
    tail.fill(0);
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `middle` is page-aligned, whole pages, and borrowed mutably here: nothing else
        // reads it while the kernel replaces its pages with zero-fill-on-demand ones.
        let r = unsafe {
            libc::madvise(
                middle.as_mut_ptr().cast::<libc::c_void>(),
                middle.len(),
                libc::MADV_DONTNEED,
            )
        };
        // Looked at through a volatile read, so the check is not assumed away.
        // SAFETY: both indexes are inside `middle`.
        let zeroed = |i: usize| unsafe { std::ptr::read_volatile(middle.as_ptr().add(i)) } == 0;
        if r != 0 || !zeroed(0) || !zeroed(middle.len() - 1) {
            middle.fill(0);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn zero_clears_every_byte_of_any_range() {
        let mut v = vec![0xAAu8; 1 << 20];
        for (at, len) in [
            (0, 100),
            (3, 70_000),
            (4096, 8192),
            (5, (1 << 20) - 9),
            (0, 1 << 20),
        ] {
            v.fill(0xAA);
            super::zero(&mut v[at..at + len]);
            assert!(v[..at].iter().all(|&b| b == 0xAA), "before {at}");
            assert!(v[at..at + len].iter().all(|&b| b == 0), "range {at}+{len}");
            assert!(v[at + len..].iter().all(|&b| b == 0xAA), "after {at}+{len}");
            // Written again after the release, it holds what was written.
            v[at..at + len].fill(7);
            assert!(v[at..at + len].iter().all(|&b| b == 7));
        }
    }
}
