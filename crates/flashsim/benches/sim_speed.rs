//! Simulation speed of flashsim in WAF-only mode: host 4 KiB writes simulated per second, uniform
//! random, spare factor 0.10, greedy GC, 64 GiB logical device (the datacenter geometry).
//!
//! Run: `cargo bench -p flashsim --bench sim_speed` (options: `-- --gib N --sf F --multiple M`).
//! Preconditions with a sequential fill and 2 capacity-multiples of random writes, then times
//! `--multiple` capacity-multiples of random writes on one thread, first through `write_batch`
//! (the bulk path `wafer sim --no-timing` uses), then through one `write` call per command.

use flashsim::{Ssd, SsdConfig};
use rand::{Rng, SeedableRng};
use std::time::Instant;

fn arg(name: &str, default: f64) -> f64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let gib = arg("--gib", 64.0);
    let sf = arg("--sf", 0.10);
    let multiple = arg("--multiple", 1.0);
    let logical = (gib * (1u64 << 30) as f64) as u64;
    let mut cfg = SsdConfig::datacenter(logical, sf);
    cfg.timing.enabled = false;
    let cfg = cfg.with_spare_factor(sf);
    let t0 = Instant::now();
    let mut ssd = Ssd::new(cfg).expect("valid config");
    let cap = ssd.capacity().clone();
    let units = cap.logical_bytes / 4096;
    eprintln!(
        "device: {:.1} GiB logical, {:.1} GiB physical, sf {:.4}, {} erase units of {} MiB (setup {:.2}s)",
        cap.logical_bytes as f64 / (1u64 << 30) as f64,
        cap.physical_bytes as f64 / (1u64 << 30) as f64,
        cap.spare_factor,
        cap.erase_units,
        cap.eu_bytes >> 20,
        t0.elapsed().as_secs_f64()
    );
    for u in 0..units {
        ssd.write(0, u * 4096, 4096, 0, None).expect("write");
    }
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
    for _ in 0..2 * units {
        let u = rng.random_range(0..units);
        ssd.write(0, u * 4096, 4096, 0, None).expect("write");
    }
    let before = ssd.counters().clone();
    let n = (multiple * units as f64) as u64;
    // Offsets are drawn in batches of 4096 and handed to `write_batch`, which prefetches the
    // mapping entries ahead; drawing them is part of the timed loop.
    let mut batch = Vec::with_capacity(4096);
    let t = Instant::now();
    let mut left = n;
    while left > 0 {
        let k = left.min(4096);
        batch.clear();
        batch.extend((0..k).map(|_| rng.random_range(0..units) * 4096));
        ssd.write_batch(0, &batch, 4096, 0).expect("write");
        left -= k;
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "sim_speed (write_batch): {} random 4 KiB host writes in {:.2} s = {:.2} M writes/s (WAF {:.3}, {} GC runs)",
        n,
        secs,
        n as f64 / secs / 1e6,
        ssd.counters().waf_since(&before),
        ssd.counters().gc_runs - before.gc_runs
    );
    // The same with one `write` call per command (no look-ahead, so every mapping-table miss is
    // paid in full).
    let before = ssd.counters().clone();
    let t = Instant::now();
    for _ in 0..n {
        let u = rng.random_range(0..units);
        ssd.write(0, u * 4096, 4096, 0, None).expect("write");
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "sim_speed (write):       {} random 4 KiB host writes in {:.2} s = {:.2} M writes/s (WAF {:.3}, {} GC runs)",
        n,
        secs,
        n as f64 / secs / 1e6,
        ssd.counters().waf_since(&before),
        ssd.counters().gc_runs - before.gc_runs
    );
}
