//! Small concurrency helpers shared by the components that are used from several threads at
//! once: a stripe per thread (so that counters and shards touched by every operation do not
//! bounce one cache line between cores), striped counters, and a sharded map under mutexes.

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Stripes of a [`Striped`] counter: a power of two, more than the cores this engine expects.
pub(crate) const STRIPES: usize = 16;

/// This thread's stripe: threads are numbered round-robin at their first use, so a few threads
/// get distinct stripes.
pub(crate) fn stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static MINE: usize = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
    }
    MINE.with(|s| *s)
}

/// This thread's id, kept in a thread-local (`std::thread::current()` clones a handle to the
/// thread on every call, two atomic writes of a shared count).
pub(crate) fn thread_id() -> std::thread::ThreadId {
    thread_local! {
        static MINE: std::thread::ThreadId = std::thread::current().id();
    }
    MINE.with(|t| *t)
}

/// A counter that many threads add to and few read: one cache line per stripe, summed on read.
pub(crate) struct Striped {
    cells: Box<[CachePadded<AtomicU64>]>,
}

impl Default for Striped {
    fn default() -> Self {
        Striped {
            cells: (0..STRIPES)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
        }
    }
}

impl Striped {
    pub fn add(&self, n: u64) {
        if n != 0 {
            self.cells[stripe()].fetch_add(n, Ordering::Relaxed);
        }
    }

    pub fn get(&self) -> u64 {
        self.cells.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

/// A signed total that many threads change and few read: one cache line per stripe (a thread
/// may take out on its stripe what another put in on its own; only the sum means anything).
pub(crate) struct StripedSum {
    cells: Box<[CachePadded<AtomicI64>]>,
}

impl Default for StripedSum {
    fn default() -> Self {
        StripedSum {
            cells: (0..STRIPES)
                .map(|_| CachePadded::new(AtomicI64::new(0)))
                .collect(),
        }
    }
}

impl StripedSum {
    pub fn add(&self, n: i64) {
        if n != 0 {
            self.cells[stripe()].fetch_add(n, Ordering::SeqCst);
        }
    }

    pub fn get(&self) -> i64 {
        self.cells.iter().map(|c| c.load(Ordering::SeqCst)).sum()
    }
}

/// A mutex whose poisoning is ignored: the data it guards is kept consistent by short critical
/// sections that do not panic (a panic elsewhere poisons the database's health instead).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A reader-writer latch taken shared, poisoning ignored (it guards no data of its own).
pub(crate) fn read(l: &std::sync::RwLock<()>) -> std::sync::RwLockReadGuard<'_, ()> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

/// A reader-writer latch taken exclusive, poisoning ignored (it guards no data of its own).
pub(crate) fn write(l: &std::sync::RwLock<()>) -> std::sync::RwLockWriteGuard<'_, ()> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

/// `n` shards of `T`, each under its own mutex on its own cache line.
pub(crate) struct Shards<T> {
    shards: Box<[CachePadded<Mutex<T>>]>,
}

impl<T: Default> Shards<T> {
    pub fn new(n: usize) -> Shards<T> {
        assert!(n.is_power_of_two(), "shard counts are powers of two");
        Shards {
            shards: (0..n)
                .map(|_| CachePadded::new(Mutex::new(T::default())))
                .collect(),
        }
    }
}

impl<T> Shards<T> {
    /// The shard of hash `h`, locked.
    pub fn lock(&self, h: u64) -> MutexGuard<'_, T> {
        lock(&self.shards[self.index(h)])
    }

    /// The shard of hash `h`, without locking: the caller has the whole set exclusively.
    pub fn get_mut(&mut self, h: u64) -> &mut T {
        let i = self.index(h);
        self.shards[i].get_mut().unwrap_or_else(|p| p.into_inner())
    }

    fn index(&self, h: u64) -> usize {
        // The high bits: integer ids hashed by a multiply carry their entropy there.
        (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & (self.shards.len() - 1)
    }

    /// Every shard, locked one at a time.
    pub fn each(&self, mut f: impl FnMut(&T)) {
        for s in self.shards.iter() {
            f(&lock(s));
        }
    }

    /// Every shard, exclusively.
    pub fn each_mut(&mut self, mut f: impl FnMut(&mut T)) {
        for s in self.shards.iter_mut() {
            f(s.get_mut().unwrap_or_else(|p| p.into_inner()));
        }
    }
}

/// Asks the CPU to bring the cache line holding `bytes[at]` closer (a hint: no effect on what
/// any load returns). Out of range `at` is ignored.
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8], at: usize) {
    if at < bytes.len() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch reads nothing into the program and cannot fault; the address is in
        // bounds anyway. SSE is part of the x86_64 baseline.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().add(at).cast());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn striped_counts_from_many_threads() {
        let c = Striped::default();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        c.add(1);
                    }
                });
            }
        });
        assert_eq!(c.get(), 4000);
    }

    #[test]
    fn shards_spread_ids() {
        let s: Shards<Vec<u64>> = Shards::new(16);
        for id in 0..1600u64 {
            s.lock(id).push(id);
        }
        let mut sizes = Vec::new();
        s.each(|v| sizes.push(v.len()));
        assert!(sizes.iter().all(|&n| n > 50), "{sizes:?}");
    }
}
