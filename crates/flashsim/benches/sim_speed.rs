//! Simulation speed of flashsim: host 4 KiB writes simulated per second, uniform random, spare
//! factor 0.10, greedy GC, 64 GiB logical device (the datacenter geometry).
//!
//! Run: `cargo bench -p flashsim --bench sim_speed` (options: `-- --gib N --sf F --multiple M
//! --phases batch,single,timing`).
//!
//! Three timed phases, each after a sequential fill and 2 capacity-multiples of random writes,
//! each timing `--multiple` capacity-multiples of random writes on one thread:
//! - `batch`: WAF-only device, offsets handed to `write_batch` (the bulk path `wafer sim
//!   --no-timing` uses);
//! - `single`: the same device, one `write` call per command;
//! - `timing`: a second device with the timing model on, driven as `wafer sim` drives a timed
//!   device: a closed loop of 32 clients, each submitting its next write at its previous write's
//!   completion time, in submit-time order from a binary heap, with the commands drawn 16 ahead
//!   and announced to the device (`Ssd::prefetch`). Its cost is reported as the ratio of the
//!   WAF-only rates to its rate.
//!
//! - `ceiling`: no device, only the traffic that bounds the batched path: random 4-byte stores,
//!   prefetched 128 ahead (indices drawn beforehand), into a table the size of the mapping table (transparent huge pages
//!   asked for, as flashsim does), as many as the batched phase made mapping-table updates (WAF
//!   x host writes). Its rate, in host writes' worth, is what the batched path could reach if
//!   nothing but mapping-table misses cost time.
//!
//! Both devices see the same writes, so all phases report the same WAF.

use flashsim::{Ssd, SsdConfig};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;

/// Offsets drawn per `write_batch` call.
const BATCH: u64 = 4096;
/// Closed-loop clients of the timed phase (the `wafer sim` default queue depth).
const QUEUE_DEPTH: u32 = 32;
/// Commands the timed closed loop draws ahead (as `wafer sim` does).
const LOOKAHEAD: usize = 16;

fn args() -> Vec<String> {
    std::env::args().collect()
}

fn arg(name: &str, default: f64) -> f64 {
    let args = args();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn phases() -> Vec<String> {
    let args = args();
    let list = args
        .iter()
        .position(|a| a == "--phases")
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
        .unwrap_or("batch,single,timing,ceiling");
    list.split(',').map(str::to_string).collect()
}

fn device(logical: u64, sf: f64, timing: bool) -> Ssd {
    let mut cfg = SsdConfig::datacenter(logical, sf);
    cfg.timing.enabled = timing;
    let cfg = cfg.with_spare_factor(sf);
    Ssd::new(cfg).expect("valid config")
}

/// `n` uniform random unit offsets through `write_batch`, drawn in batches of [`BATCH`].
fn random_batched(ssd: &mut Ssd, rng: &mut Pcg64Mcg, units: u64, n: u64) {
    let mut batch = Vec::with_capacity(BATCH as usize);
    let mut left = n;
    while left > 0 {
        let k = left.min(BATCH);
        batch.clear();
        batch.extend((0..k).map(|_| rng.random_range(0..units) * 4096));
        ssd.write_batch(0, &batch, 4096, 0).expect("write");
        left -= k;
    }
}

/// `n` writes from `next` through a closed loop of [`QUEUE_DEPTH`] clients starting at `start_ns`,
/// the loop of `wafer sim` on a timed device: commands are drawn [`LOOKAHEAD`] ahead and
/// announced with `Ssd::prefetch`, and the heap's top is replaced in place. Returns the last
/// completion time.
fn closed_loop(ssd: &mut Ssd, start_ns: u64, n: u64, mut next: impl FnMut() -> u64) -> u64 {
    let mut heap: BinaryHeap<Reverse<(u64, u32)>> =
        (0..QUEUE_DEPTH).map(|c| Reverse((start_ns, c))).collect();
    let mut ahead = VecDeque::with_capacity(LOOKAHEAD);
    let (mut drawn, mut issued, mut now) = (0, 0, start_ns);
    while let Some(mut top) = heap.peek_mut() {
        if issued == n {
            PeekMut::pop(top);
            continue;
        }
        let Reverse((t, client)) = *top;
        while ahead.len() < LOOKAHEAD && drawn < n {
            let o = next();
            ssd.prefetch(o);
            ahead.push_back(o);
            drawn += 1;
        }
        let o = ahead.pop_front().expect("drawn ahead");
        let done = ssd.write(t, o, 4096, 0, None).expect("write");
        issued += 1;
        now = now.max(done);
        *top = Reverse((done, client));
    }
    now
}

/// Wall-clock and CPU time of this thread (the machine may be shared: CPU time leaves out the
/// time other processes had the core).
#[derive(Clone, Copy)]
struct Clock {
    wall: Instant,
    cpu_s: f64,
}

fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `ts` is.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

impl Clock {
    fn start() -> Clock {
        Clock {
            wall: Instant::now(),
            cpu_s: thread_cpu_s(),
        }
    }

    /// (wall, CPU) seconds since `start`.
    fn elapsed(self) -> (f64, f64) {
        (
            self.wall.elapsed().as_secs_f64(),
            thread_cpu_s() - self.cpu_s,
        )
    }
}

/// Prints a phase's rate; returns it in M writes per wall-clock second.
/// A prefetch hint for the cache line holding `*p` (as flashsim's bulk loops issue).
#[inline(always)]
fn flashsim_prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

fn report(path: &str, ssd: &Ssd, before: &flashsim::Counters, n: u64, clock: Clock) -> f64 {
    let (secs, cpu) = clock.elapsed();
    let rate = n as f64 / secs / 1e6;
    println!(
        "sim_speed ({path}): {n} random 4 KiB host writes in {secs:.2} s = {rate:.2} M writes/s ({:.2} M per CPU second; WAF {:.3}, {} GC runs)",
        n as f64 / cpu / 1e6,
        ssd.counters().waf_since(before),
        ssd.counters().gc_runs - before.gc_runs
    );
    rate
}

fn main() {
    let gib = arg("--gib", 64.0);
    let sf = arg("--sf", 0.10);
    let multiple = arg("--multiple", 1.0);
    let phases = phases();
    let has = |p: &str| phases.iter().any(|x| x == p);
    let logical = (gib * (1u64 << 30) as f64) as u64;

    let t0 = Instant::now();
    let mut ssd = device(logical, sf, false);
    let cap = ssd.capacity().clone();
    let units = cap.logical_bytes / 4096;
    let n = (multiple * units as f64) as u64;
    eprintln!(
        "device: {:.1} GiB logical, {:.1} GiB physical, sf {:.4}, {} erase units of {} MiB (setup {:.2}s)",
        cap.logical_bytes as f64 / (1u64 << 30) as f64,
        cap.physical_bytes as f64 / (1u64 << 30) as f64,
        cap.spare_factor,
        cap.erase_units,
        cap.eu_bytes >> 20,
        t0.elapsed().as_secs_f64()
    );

    let mut batched_rate = None;
    let mut single_rate = None;
    if has("batch") || has("single") {
        // Preconditioning: sequential fill, then 2 capacities of random writes.
        let fill: Vec<u64> = (0..units).map(|u| u * 4096).collect();
        for chunk in fill.chunks(BATCH as usize) {
            ssd.write_batch(0, chunk, 4096, 0).expect("write");
        }
        drop(fill);
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        random_batched(&mut ssd, &mut rng, units, 2 * units);
        if has("batch") {
            // Offsets are drawn in batches and handed to `write_batch`, which prefetches the
            // mapping entries ahead; drawing them is part of the timed loop.
            let before = ssd.counters().clone();
            let clock = Clock::start();
            random_batched(&mut ssd, &mut rng, units, n);
            batched_rate = Some(report("write_batch", &ssd, &before, n, clock));
        }
        if has("single") {
            // One `write` call per command: no look-ahead, so every mapping-table miss is paid.
            let before = ssd.counters().clone();
            let clock = Clock::start();
            for _ in 0..n {
                let u = rng.random_range(0..units);
                ssd.write(0, u * 4096, 4096, 0, None).expect("write");
            }
            single_rate = Some(report("write, one per command", &ssd, &before, n, clock));
        }
    }
    drop(ssd);

    if has("ceiling") {
        let waf = 5.731;
        let updates = (waf * n as f64) as u64;
        let mut table: Vec<u32> = Vec::with_capacity(units as usize);
        let start = (table.as_ptr() as usize) & !4095;
        let end = table.as_ptr() as usize + units as usize * 4;
        // SAFETY: the range lies within (or on the first page of) the table's allocation;
        // madvise only changes paging advice.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        table.resize(units as usize, u32::MAX);
        // The random indices are drawn before the clock starts (4 M of them, used in turn).
        let mut rng = Pcg64Mcg::seed_from_u64(9);
        let idx: Vec<u32> = (0..1 << 22)
            .map(|_| rng.random_range(0..units) as u32)
            .collect();
        let ahead = 128;
        let clock = Clock::start();
        let mut done = 0;
        while done < updates {
            let k = (updates - done).min(idx.len() as u64) as usize;
            for i in 0..k {
                if let Some(&a) = idx.get(i + ahead) {
                    flashsim_prefetch(table.as_ptr().wrapping_add(a as usize));
                }
                table[idx[i] as usize] = i as u32;
            }
            done += k as u64;
        }
        let (secs, cpu) = clock.elapsed();
        println!(
            "sim_speed (ceiling: mapping-table stores only): {updates} random stores in {secs:.2} s = {:.0} M/s ({:.0} M per CPU second) = {:.1} M host writes/s at WAF {waf}",
            updates as f64 / secs / 1e6,
            updates as f64 / cpu / 1e6,
            n as f64 / secs / 1e6
        );
    }

    if has("timing") {
        let mut ssd = device(logical, sf, true);
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let mut u = 0;
        let now = closed_loop(&mut ssd, 0, units, || {
            u += 1;
            (u - 1) * 4096
        });
        let now = closed_loop(&mut ssd, now, 2 * units, || {
            rng.random_range(0..units) * 4096
        });
        ssd.reset_latency();
        let before = ssd.counters().clone();
        let clock = Clock::start();
        closed_loop(&mut ssd, now, n, || rng.random_range(0..units) * 4096);
        let rate = report("timing model, closed loop of 32", &ssd, &before, n, clock);
        for (path, waf_only) in [
            ("write_batch", batched_rate),
            ("one write per command", single_rate),
        ] {
            if let Some(w) = waf_only {
                println!(
                    "timing-model cost: {:.2}x the time per write of WAF-only {path}",
                    w / rate
                );
            }
        }
    }
}
