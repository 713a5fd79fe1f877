use flashsim::*;
use rand::{Rng, SeedableRng};
fn main() {
    let np: u32 = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(128);
    let sf: f64 = std::env::args()
        .nth(2)
        .map(|s| s.parse().unwrap())
        .unwrap_or(0.10);
    let g = Geometry {
        channels: 1,
        dies_per_channel: 1,
        planes_per_die: 1,
        blocks_per_plane: 2048,
        pages_per_block: np,
        page_size_bytes: 4096,
    };
    let mut cfg = SsdConfig::sized(g.clone(), 4096, 0.1);
    cfg.geometry = g;
    cfg.timing.enabled = false;
    cfg.gc.free_eus_min = 1;
    let cfg = cfg.with_spare_factor(sf);
    let mut ssd = Ssd::new(cfg).unwrap();
    let n = ssd.capacity().logical_bytes / 4096;
    for i in 0..n {
        ssd.write(0, i * 4096, 4096, 0, None).unwrap();
    }
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
    for _ in 0..(n * 4) {
        let l = rng.random_range(0..n);
        ssd.write(0, l * 4096, 4096, 0, None).unwrap();
    }
    let c0 = ssd.counters().clone();
    let t = std::time::Instant::now();
    for _ in 0..(n * 4) {
        let l = rng.random_range(0..n);
        ssd.write(0, l * 4096, 4096, 0, None).unwrap();
    }
    let el = t.elapsed();
    ssd.check_invariants().unwrap();
    println!(
        "np {np} sf {sf} waf {:.4} rate {:.1} M/s",
        ssd.counters().waf_since(&c0),
        (n * 4) as f64 / el.as_secs_f64() / 1e6
    );
}
