use super::*;
use std::collections::HashMap;

fn wl(pattern: Pattern) -> Workload {
    Workload {
        pattern,
        ..Workload::default()
    }
}

const MIB: u64 = 1 << 20;

#[test]
fn deterministic_for_a_seed_and_different_across_seeds() {
    for p in [
        Pattern::Uniform,
        Pattern::Zipf { theta: 0.99 },
        Pattern::HotCold { r: 0.9, f: 0.1 },
        Pattern::Sequential,
        Pattern::Streams { k: 8 },
    ] {
        let mut w = wl(p);
        w.read_share = 0.3;
        let a: Vec<Op> = Generator::new(&w, 64 * MIB).unwrap().take(5000).collect();
        let b: Vec<Op> = Generator::new(&w, 64 * MIB).unwrap().take(5000).collect();
        assert_eq!(a, b, "{p}");
        w.seed = 7;
        let c: Vec<Op> = Generator::new(&w, 64 * MIB).unwrap().take(5000).collect();
        assert_ne!(a, c, "{p}");
    }
}

#[test]
fn ops_are_aligned_and_in_bounds() {
    // A capacity that is not a multiple of the request size: the tail is never touched.
    let cap = 10 * MIB + 5000;
    for p in [
        Pattern::Uniform,
        Pattern::Zipf { theta: 1.2 },
        Pattern::HotCold { r: 0.8, f: 0.2 },
        Pattern::Sequential,
        Pattern::Streams { k: 3 },
    ] {
        let mut w = wl(p);
        w.write_size_bytes = 16384;
        w.read_share = 0.5;
        let g = Generator::new(&w, cap).unwrap();
        let mut reads = 0;
        for op in g.take(20_000) {
            assert_eq!(op.len_bytes, 16384);
            assert_eq!(op.offset_bytes % 16384, 0, "{p}");
            assert!(op.offset_bytes + op.len_bytes <= cap, "{p}: {op:?}");
            reads += (op.kind == OpKind::Read) as u32;
        }
        assert!((9000..11000).contains(&reads), "{p}: {reads} reads");
    }
}

#[test]
fn hot_cold_share_matches_r() {
    let w = wl(Pattern::HotCold { r: 0.9, f: 0.1 });
    let g = Generator::new(&w, 100 * MIB).unwrap();
    let hot_end = g.units() / 10 * 4096;
    let n = 100_000;
    let hot = g.take(n).filter(|op| op.offset_bytes < hot_end).count();
    let share = hot as f64 / n as f64;
    assert!((share - 0.9).abs() < 0.01, "hot share {share}");
}

#[test]
fn zipf_is_skewed_and_spread() {
    let w = wl(Pattern::Zipf { theta: 0.99 });
    let g = Generator::new(&w, 10_000 * 4096).unwrap();
    let n = 200_000;
    let mut counts: HashMap<u64, u64> = HashMap::new();
    for op in g.take(n) {
        *counts.entry(op.offset_bytes / 4096).or_default() += 1;
    }
    let mut by_count: Vec<(u64, u64)> = counts.into_iter().map(|(u, c)| (c, u)).collect();
    by_count.sort_unstable_by(|a, b| b.cmp(a));
    let top: u64 = by_count.iter().take(100).map(|(c, _)| c).sum();
    let share = top as f64 / n as f64;
    // Analytically H(100)/H(10000) ~ 0.53 for theta = 1; far above the 1% of uniform.
    assert!(share > 0.3, "top 1% of units got {share}");
    // Scrambled: the 10 hottest units are not all in the first 1% of the space.
    let low = by_count.iter().take(10).filter(|(_, u)| *u < 100).count();
    assert!(low < 10, "hot units not spread");
}

#[test]
fn zipf_zero_is_about_uniform() {
    let w = wl(Pattern::Zipf { theta: 0.0 });
    let g = Generator::new(&w, 1000 * 4096).unwrap();
    let first_half = g
        .take(50_000)
        .filter(|op| op.offset_bytes < 500 * 4096)
        .count();
    assert!((23_000..27_000).contains(&first_half), "{first_half}");
}

#[test]
fn scrambler_is_a_bijection() {
    for n in [1u64, 2, 3, 7, 8, 9, 100, 1000, 4097] {
        let s = Scrambler::new(n);
        let mut seen = vec![false; n as usize];
        for x in 0..n {
            let y = s.apply(x);
            assert!(y < n);
            assert!(!seen[y as usize], "n {n}: {y} hit twice");
            seen[y as usize] = true;
        }
    }
}

#[test]
fn sequential_wraps() {
    let w = wl(Pattern::Sequential);
    let offs: Vec<u64> = Generator::new(&w, 4 * 4096)
        .unwrap()
        .take(6)
        .map(|o| o.offset_bytes / 4096)
        .collect();
    assert_eq!(offs, [0, 1, 2, 3, 0, 1]);
}

#[test]
fn streams_stay_in_their_regions_and_are_sequential() {
    let w = wl(Pattern::Streams { k: 5 });
    let cap = 1003 * 4096;
    let g = Generator::new(&w, cap).unwrap();
    let regions = g.stream_regions();
    assert_eq!(regions.len(), 5);
    assert_eq!(regions[0].start, 0);
    assert_eq!(regions[4].end, 1003 * 4096);
    for pair in regions.windows(2) {
        assert_eq!(pair[0].end, pair[1].start);
    }
    let mut last: Vec<Option<u64>> = vec![None; 5];
    let mut used = [0u64; 5];
    for op in g.take(10_000) {
        let s = regions
            .iter()
            .position(|r| r.contains(&op.offset_bytes))
            .unwrap();
        assert!(op.offset_bytes + op.len_bytes <= regions[s].end);
        let expect = match last[s] {
            None => regions[s].start,
            Some(p) if p + 4096 == regions[s].end => regions[s].start,
            Some(p) => p + 4096,
        };
        assert_eq!(op.offset_bytes, expect, "stream {s} not sequential");
        last[s] = Some(op.offset_bytes);
        used[s] += 1;
    }
    // Interleaved randomly: every stream gets about a fifth.
    assert!(used.iter().all(|&u| (1700..2300).contains(&u)), "{used:?}");
}

#[test]
fn parses_patterns_and_round_trips() {
    assert_eq!("uniform".parse::<Pattern>().unwrap(), Pattern::Uniform);
    assert_eq!(
        "zipf:0.99".parse::<Pattern>().unwrap(),
        Pattern::Zipf { theta: 0.99 }
    );
    assert_eq!(
        "HotCold:0.9:0.1".parse::<Pattern>().unwrap(),
        Pattern::HotCold { r: 0.9, f: 0.1 }
    );
    assert_eq!("seq".parse::<Pattern>().unwrap(), Pattern::Sequential);
    assert_eq!(
        "streams:8".parse::<Pattern>().unwrap(),
        Pattern::Streams { k: 8 }
    );
    for p in ["uniform", "zipf:1.2", "hotcold:0.8:0.2", "seq", "streams:3"] {
        assert_eq!(p.parse::<Pattern>().unwrap().to_string(), p);
    }
}

#[test]
fn rejects_bad_patterns_with_clear_errors() {
    let msg = |s: &str| s.parse::<Pattern>().unwrap_err().to_string();
    assert!(msg("bogus").contains("'bogus': unknown pattern"));
    assert!(msg("bogus").contains("zipf:THETA"));
    assert!(msg("zipf").contains("zipf:THETA"));
    assert!(msg("zipf:abc").contains("not a number"));
    assert!(msg("zipf:-1").contains(">= 0"));
    assert!(msg("hotcold:0.9").contains("hotcold:R:F"));
    assert!(msg("hotcold:1.5:0.1").contains("[0, 1]"));
    assert!(msg("hotcold:0.9:1").contains("(0, 1)"));
    assert!(msg("streams:0").contains("at least one stream"));
    assert!(msg("streams:x").contains("positive integer"));
    assert!(msg("uniform:3").contains("expected the form uniform"));
}

#[test]
fn rejects_bad_workloads() {
    let mut w = Workload {
        write_size_bytes: 1000,
        ..Workload::default()
    };
    assert!(Generator::new(&w, MIB).is_err());
    w.write_size_bytes = 4096;
    w.read_share = 1.5;
    assert!(Generator::new(&w, MIB).is_err());
    w.read_share = 0.0;
    assert!(Generator::new(&w, 2048).is_err());
    let w = wl(Pattern::Streams { k: 10 });
    assert!(Generator::new(&w, 5 * 4096).is_err());
}

#[test]
fn serde_accepts_tables_and_strings() {
    let w = Workload {
        pattern: Pattern::HotCold { r: 0.9, f: 0.1 },
        ..Workload::default()
    };
    let j = serde_json::to_string(&w).unwrap();
    assert!(j.contains(r#""kind":"hot-cold""#), "{j}");
    assert_eq!(serde_json::from_str::<Workload>(&j).unwrap(), w);
    let s: Workload = serde_json::from_str(r#"{"pattern":"zipf:0.5"}"#).unwrap();
    assert_eq!(s.pattern, Pattern::Zipf { theta: 0.5 });
    assert_eq!(s.write_size_bytes, 4096);
    assert!(serde_json::from_str::<Workload>(r#"{"pattern":"zipf:-2"}"#).is_err());
    assert!(serde_json::from_str::<Workload>(r#"{"pattern":{"kind":"streams","k":0}}"#).is_err());
}
