//! Acceptance tests: steady-state write amplification of the simulator against the closed-form
//! models of Desnoyers, "Analytic models of SSD write performance" (SYSTOR 2012 / TOS 2014).
//!
//! Notation: `alpha` = physical / logical pages, `Np` = pages per erase unit, spare factor
//! `sf = (T - U) / T`, so `alpha = 1 / (1 - sf)`.
//!
//! Method. One channel x one die x one plane, 4 KiB pages = 4 KiB mapping units, `Np` pages per
//! block (block GC unit = superblock, one lane), >= 1024 erase units, `gc.free_eus_min = 1`, timing
//! off. The device is preconditioned with a sequential fill of the whole logical space and several
//! capacity-multiples of the workload, then WAF is measured with `waf_since` over the next few
//! capacity-multiples. All randomness comes from `Pcg64Mcg` with fixed seeds.
//!
//! Which alpha. The model assumes every physical page can hold data; the simulator keeps a few
//! erase units out of circulation: foreground GC runs until *more* than `free_eus_min` EUs are
//! free (so 1 or 2 are free while host writes proceed, with `free_eus_min = 1`) and one EU is the
//! open, partially written frontier. Fitting the runs below puts the effective reserve at ~1.5-2
//! EUs. It matters: with 1024 EUs at sf 0.07 / Np 128 the raw alpha gives A = 6.94 while alpha
//! reduced by 2 EUs gives 7.11 (+2.4%, more than the tolerance); at 2048 EUs the difference is
//! 1.2%. The tests therefore use `alpha = (EUs - (free_eus_min + 1)) * eu_units / logical_units`,
//! i.e. the config's physical size minus the GC reserve, and 2048 EUs wherever the run is cheap.
//! Against that alpha the uniform runs come out 0.1-0.3% low; against the raw alpha they would be
//! 0.3-1.4% high.

use flashsim::{GcPolicy, Geometry, Ssd, SsdConfig};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

const UNIT: u64 = 4096;

/// The closed-form models.
mod model {
    /// Principal branch W0 of the Lambert W function for x >= -1/e (Halley iteration).
    pub fn lambert_w0(x: f64) -> f64 {
        let branch = -1.0 / std::f64::consts::E;
        assert!(x >= branch, "W0 undefined below -1/e");
        if x == 0.0 {
            return 0.0;
        }
        // Start near the branch point with its series, elsewhere with ln(1 + x).
        let mut w = if x < -0.25 {
            let p = (2.0 * (std::f64::consts::E * x + 1.0)).max(0.0).sqrt();
            -1.0 + p - p * p / 3.0
        } else {
            (1.0 + x).ln()
        };
        for _ in 0..100 {
            let e = w.exp();
            let f = w * e - x;
            if w <= -1.0 {
                break; // at the branch point itself
            }
            let step = f / (e * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0));
            w -= step;
            if step.abs() < 1e-15 * (1.0 + w.abs()) {
                break;
            }
        }
        w
    }

    /// FIFO (and greedy for large Np), uniform random writes.
    pub fn fifo(alpha: f64) -> f64 {
        alpha / (alpha + lambert_w0(-alpha * (-alpha).exp()))
    }

    fn k(np: u32) -> f64 {
        1.0 + 1.0 / (2.0 * np as f64)
    }

    /// Greedy with `np` pages per erase unit, uniform random writes.
    pub fn greedy(alpha: f64, np: u32) -> f64 {
        fifo(k(np) * alpha) / k(np)
    }

    /// FIFO, hot/cold mixed in one stream: a fraction `r` of the writes goes to a fraction `f`
    /// of the LBAs. Solves the fixed-point equation for A by bisection.
    pub fn hot_cold_fifo(alpha: f64, r: f64, f: f64) -> f64 {
        let g = |a: f64| {
            1.0 + r / (((r / f) * alpha / a).exp() - 1.0)
                + (1.0 - r) / ((((1.0 - r) / (1.0 - f)) * alpha / a).exp() - 1.0)
                - a
        };
        // g(1) > 0 and g(a) ~ 1 + a / alpha - a < 0 for large a (alpha > 1).
        let (mut lo, mut hi) = (1.0, 1000.0);
        assert!(g(lo) > 0.0 && g(hi) < 0.0);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if g(mid) > 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        0.5 * (lo + hi)
    }

    /// Greedy, hot/cold mixed in one stream.
    pub fn hot_cold_greedy(alpha: f64, np: u32, r: f64, f: f64) -> f64 {
        hot_cold_fifo(k(np) * alpha, r, f) / k(np)
    }
}

fn rel_err(measured: f64, expected: f64) -> f64 {
    (measured - expected).abs() / expected
}

#[test]
fn lambert_w0_solves_its_equation() {
    for &x in &[-0.3678794, -0.36, -0.3, -0.1, -1e-6, 0.0, 0.5, 1.0, 10.0] {
        let w = model::lambert_w0(x);
        assert!(w >= -1.0, "W0({x}) = {w} is not on the principal branch");
        assert!((w * w.exp() - x).abs() < 1e-9, "W0({x}) = {w}");
    }
    assert!((model::lambert_w0(1.0) - 0.567_143_290_409_783_8).abs() < 1e-12);
}

#[test]
fn formulas_reproduce_reference_values() {
    let alpha = |sf: f64| 1.0 / (1.0 - sf);
    let greedy = [
        (0.10, 64, 4.82),
        (0.10, 128, 4.99),
        (0.10, 256, 5.08),
        (0.20, 128, 2.65),
        (0.07, 128, 6.94),
    ];
    for (sf, np, want) in greedy {
        let got = model::greedy(alpha(sf), np);
        assert!(
            rel_err(got, want) < 0.01,
            "greedy sf {sf} Np {np}: {got} vs {want}"
        );
    }
    // Greedy with large Np: k -> 1, so the FIFO forms apply.
    let a = alpha(0.125);
    let hot_cold = [
        (0.5, 0.5, 4.17),
        (0.8, 0.2, 4.53),
        (0.9, 0.1, 5.12),
        (0.95, 0.05, 5.92),
    ];
    for (r, f, want) in hot_cold {
        let got = model::hot_cold_greedy(a, 1 << 30, r, f);
        assert!(
            rel_err(got, want) < 0.01,
            "hot/cold {r}/{f}: {got} vs {want}"
        );
    }
    // r = f is uniform traffic: the mixed-stream equation reduces to the Lambert-W form.
    assert!(rel_err(model::hot_cold_fifo(a, 0.5, 0.5), model::fifo(a)) < 1e-9);
    // Greedy tends to FIFO as Np grows, and is always below it.
    assert!(model::greedy(a, 64) < model::greedy(a, 1024));
    assert!(model::greedy(a, 1024) < model::fifo(a));
    assert!(rel_err(model::greedy(a, 1 << 30), model::fifo(a)) < 1e-6);
}

/// Which LBAs the host writes.
#[derive(Clone, Copy)]
enum Workload {
    Uniform,
    /// A fraction `r` of the writes goes to the first fraction `f` of the LBAs.
    HotCold {
        r: f64,
        f: f64,
    },
}

struct Run {
    measured: f64,
    /// Model alpha: physical minus the GC reserve over logical (see the module comment).
    alpha: f64,
}

fn device(np: u32, eus: u32, sf: f64, policy: GcPolicy) -> Ssd {
    let geometry = Geometry {
        channels: 1,
        dies_per_channel: 1,
        planes_per_die: 1,
        blocks_per_plane: eus,
        pages_per_block: np,
        page_size_bytes: UNIT as u32,
    };
    let mut cfg = SsdConfig::sized(geometry.clone(), UNIT, sf);
    cfg.geometry = geometry;
    cfg.mapping_unit_bytes = UNIT as u32;
    cfg.timing.enabled = false;
    cfg.gc.policy = policy;
    cfg.gc.free_eus_min = 1;
    cfg.gc.free_eus_background = 1;
    let cfg = cfg.with_spare_factor(sf);
    assert_eq!(cfg.erase_units(), eus);
    Ssd::new(cfg).expect("valid config")
}

/// Preconditions (sequential fill + `warm` capacity-multiples of the workload) and returns the WAF
/// of the next `measure` capacity-multiples, where `(warm, measure) = multiples`.
fn steady_waf(
    np: u32,
    eus: u32,
    sf: f64,
    policy: GcPolicy,
    load: Workload,
    seed: u64,
    (warm, measure): (u64, u64),
) -> Run {
    let mut ssd = device(np, eus, sf, policy);
    let n = ssd.capacity().logical_bytes / UNIT;
    let cfg = ssd.config();
    let reserve = (cfg.gc.free_eus_min + 1) as f64;
    let alpha = (cfg.erase_units() as f64 - reserve) * cfg.eu_units() as f64 / n as f64;
    for lba in 0..n {
        ssd.write(0, lba * UNIT, UNIT, 0, None).unwrap();
    }
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let next = |rng: &mut Pcg64Mcg| match load {
        Workload::Uniform => rng.random_range(0..n),
        Workload::HotCold { r, f } => {
            let hot = ((n as f64 * f) as u64).clamp(1, n - 1);
            if rng.random::<f64>() < r {
                rng.random_range(0..hot)
            } else {
                rng.random_range(hot..n)
            }
        }
    };
    for _ in 0..warm * n {
        let lba = next(&mut rng);
        ssd.write(0, lba * UNIT, UNIT, 0, None).unwrap();
    }
    let before = ssd.counters().clone();
    for _ in 0..measure * n {
        let lba = next(&mut rng);
        ssd.write(0, lba * UNIT, UNIT, 0, None).unwrap();
    }
    ssd.check_invariants().unwrap();
    let c = ssd.counters();
    // WAF counts every programmed byte: host data plus GC relocation, nothing else here.
    assert_eq!(
        c.media_write_bytes - before.media_write_bytes,
        (c.host_write_bytes - before.host_write_bytes) + (c.gc_write_bytes - before.gc_write_bytes)
    );
    Run {
        measured: c.waf_since(&before),
        alpha,
    }
}

fn check(label: &str, run: &Run, model: f64, tol: f64) {
    let err = rel_err(run.measured, model);
    eprintln!(
        "{label}: measured {:.4} model {:.4} (alpha {:.5}) error {:+.2}%",
        run.measured,
        model,
        run.alpha,
        100.0 * (run.measured - model) / model
    );
    assert!(
        err < tol,
        "{label}: measured WAF {:.4} vs model {model:.4}: {:.2}% off (tolerance {:.0}%)",
        run.measured,
        100.0 * err,
        100.0 * tol
    );
}

fn greedy_case(sf: f64, np: u32, eus: u32, seed: u64) {
    let run = steady_waf(
        np,
        eus,
        sf,
        GcPolicy::Greedy,
        Workload::Uniform,
        seed,
        (4, 4),
    );
    let label = format!("greedy uniform sf {sf} Np {np} EUs {eus}");
    check(&label, &run, model::greedy(run.alpha, np), 0.02);
}

fn fifo_case(sf: f64, np: u32, eus: u32, seed: u64) {
    let run = steady_waf(np, eus, sf, GcPolicy::Fifo, Workload::Uniform, seed, (4, 4));
    let label = format!("fifo uniform sf {sf} Np {np} EUs {eus}");
    check(&label, &run, model::fifo(run.alpha), 0.02);
}

#[test]
fn greedy_uniform_sf07_np128() {
    greedy_case(0.07, 128, 2048, 11);
}

#[test]
fn greedy_uniform_sf10_np64() {
    greedy_case(0.10, 64, 2048, 12);
}

#[test]
fn greedy_uniform_sf10_np128() {
    greedy_case(0.10, 128, 2048, 13);
}

#[test]
fn greedy_uniform_sf10_np256() {
    greedy_case(0.10, 256, 1024, 14);
}

#[test]
fn greedy_uniform_sf20_np128() {
    greedy_case(0.20, 128, 2048, 15);
}

#[test]
fn greedy_uniform_sf10_np128_fewest_eus() {
    // The smallest device the method allows: the reserve correction is what keeps this in bounds.
    greedy_case(0.10, 128, 1024, 16);
}

#[test]
fn fifo_uniform_sf07() {
    fifo_case(0.07, 128, 2048, 21);
}

#[test]
fn fifo_uniform_sf10() {
    fifo_case(0.10, 64, 2048, 22);
}

#[test]
fn fifo_uniform_sf20() {
    fifo_case(0.20, 256, 1024, 23);
}

const HOT_COLD_90_10: Workload = Workload::HotCold { r: 0.9, f: 0.1 };

#[test]
fn fifo_hot_cold_90_10_matches_mixed_stream_model() {
    // FIFO's WAF does not depend on where GC puts the pages it relocates, so the mixed-stream
    // model applies exactly whatever the GC's scheduling.
    let (sf, np, eus) = (0.125, 128, 2048);
    let run = steady_waf(np, eus, sf, GcPolicy::Fifo, HOT_COLD_90_10, 41, (6, 4));
    check(
        "fifo hot/cold 90/10 sf 0.125 Np 128",
        &run,
        model::hot_cold_fifo(run.alpha, 0.9, 0.1),
        0.02,
    );
}

#[test]
fn greedy_hot_cold_90_10_is_worse_than_uniform() {
    let (sf, np, eus) = (0.125, 128, 2048);
    let mixed = steady_waf(np, eus, sf, GcPolicy::Greedy, HOT_COLD_90_10, 31, (6, 4));
    let uniform = steady_waf(np, eus, sf, GcPolicy::Greedy, Workload::Uniform, 32, (4, 4));
    check(
        "greedy uniform sf 0.125 Np 128",
        &uniform,
        model::greedy(uniform.alpha, np),
        0.02,
    );
    eprintln!(
        "greedy hot/cold 90/10 sf 0.125 Np 128: measured {:.4}, uniform {:.4}",
        mixed.measured, uniform.measured
    );
    // Mixing hot and cold data in one stream makes greedy worse than uniform traffic.
    assert!(
        mixed.measured > uniform.measured * 1.05,
        "hot/cold {:.3} should exceed uniform {:.3}",
        mixed.measured,
        uniform.measured
    );
}

// Regression test (fixed) for the simulator bug "bursty foreground GC segregates relocated data". `Ssd::program` calls
// `ensure_free` only when a host frontier is exhausted, and `ensure_free` (src/ssd.rs, the
// `while self.free[lane].len() <= min` loop) then collects victims until a whole free erase unit
// is regained: about 1 / (1 - v) victims (~5 here) whose valid pages are written back to back. So
// ~4 EUs of pure relocated (mostly cold) data alternate with ~1 EU of pure host (mostly hot) data:
// the "shared" GC frontier is in effect a separate one, and greedy exploits that segregation. The
// simulator measures ~4.72 against the model's 5.03 (-6%); with Np = 2048 it still measures 4.75
// while greedy should approach FIFO's 5.19. A copy of the simulator that collects one victim per
// host erase unit opened (GC paced with host writes, as the model assumes) measures 5.14 (Np 128)
// and 5.22 (Np 2048), within 2% of the model; on uniform traffic (where placement cannot matter)
// it moves WAF by < 1%, the effect of the one extra free EU that variant keeps.
#[test]
fn greedy_hot_cold_90_10_matches_mixed_stream_model() {
    let (sf, np, eus) = (0.125, 128, 2048);
    let run = steady_waf(np, eus, sf, GcPolicy::Greedy, HOT_COLD_90_10, 31, (6, 4));
    check(
        "greedy hot/cold 90/10 sf 0.125 Np 128",
        &run,
        model::hot_cold_greedy(run.alpha, np, 0.9, 0.1),
        0.03,
    );
}
