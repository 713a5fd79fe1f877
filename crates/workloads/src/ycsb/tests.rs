use super::*;
use crate::values::{page_lz4_ratio, DEFAULT_LZ4_RATIO, PAGE_BYTES};
use std::collections::HashMap;

fn cfg(workload: YcsbWorkload, record_count: u64) -> YcsbConfig {
    YcsbConfig {
        workload,
        record_count,
        value_bytes: 100,
        ..YcsbConfig::default()
    }
}

fn id(key: &[u8]) -> u64 {
    key_id(key).unwrap_or_else(|| panic!("not a key: {:?}", String::from_utf8_lossy(key)))
}

/// Access counts per id over `ops` operations (start key for scans, inserts left out).
fn counts(g: &mut YcsbGenerator, ops: usize) -> HashMap<u64, u64> {
    let mut c = HashMap::new();
    for op in g.take(ops) {
        if op.kind() != YcsbOpKind::Insert {
            *c.entry(id(op.key())).or_insert(0) += 1;
        }
    }
    c
}

/// Ids sorted by decreasing access count.
fn hottest(c: &HashMap<u64, u64>) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = c.iter().map(|(&k, &n)| (k, n)).collect();
    v.sort_by_key(|&(k, n)| (std::cmp::Reverse(n), k));
    v
}

#[test]
fn same_seed_same_ops_other_seed_other_ops() {
    for w in YcsbWorkload::ALL {
        let c = cfg(w, 10_000);
        let a: Vec<YcsbOp> = YcsbGenerator::new(&c).unwrap().take(2000).collect();
        let b: Vec<YcsbOp> = YcsbGenerator::new(&c).unwrap().take(2000).collect();
        assert_eq!(a, b, "workload {w}");
        let other = YcsbConfig { seed: 7, ..c };
        let d: Vec<YcsbOp> = YcsbGenerator::new(&other).unwrap().take(2000).collect();
        assert_ne!(a, d, "workload {w}");
    }
}

#[test]
fn op_mix_matches_each_workload_within_one_point() {
    let n = 100_000;
    for w in YcsbWorkload::ALL {
        let mut g = YcsbGenerator::new(&cfg(w, 50_000)).unwrap();
        let mut seen: HashMap<YcsbOpKind, u64> = HashMap::new();
        for op in g.by_ref().take(n) {
            *seen.entry(op.kind()).or_insert(0) += 1;
        }
        let m = w.mix();
        let share = |k| *seen.get(&k).unwrap_or(&0) as f64 / n as f64;
        let got = [
            share(YcsbOpKind::Read),
            share(YcsbOpKind::Update),
            share(YcsbOpKind::Insert),
            share(YcsbOpKind::Scan),
            share(YcsbOpKind::ReadModifyWrite),
        ];
        let want = [m.read, m.update, m.insert, m.scan, m.read_modify_write];
        println!("workload {w}: read/update/insert/scan/rmw {got:?}");
        assert!(
            (want.iter().sum::<f64>() - 1.0).abs() < 1e-12,
            "workload {w}"
        );
        for (g, x) in got.iter().zip(want) {
            assert!((g - x).abs() <= 0.01, "workload {w}: {got:?} vs {want:?}");
            assert_eq!(*g == 0.0, x == 0.0, "workload {w}: {got:?} vs {want:?}");
        }
        assert_eq!(g.inserted(), *seen.get(&YcsbOpKind::Insert).unwrap_or(&0));
    }
}

#[test]
fn zipf_099_gives_the_top_one_percent_most_accesses() {
    let records = 100_000;
    let mut g = YcsbGenerator::new(&cfg(YcsbWorkload::C, records)).unwrap();
    let ops = 500_000;
    let h = hottest(&counts(&mut g, ops));
    let top: u64 = h.iter().take(records as usize / 100).map(|&(_, n)| n).sum();
    let share = top as f64 / ops as f64;
    let want = crate::zipf::zeta(records / 100, 0.99) / crate::zipf::zeta(records, 0.99);
    println!("zipf 0.99: top 1% of keys get {share:.3} of accesses (zipf law {want:.3})");
    assert!(
        share > 0.5 && (share - want).abs() < 0.03,
        "{share} vs {want}"
    );

    let mut u = YcsbGenerator::new(&YcsbConfig {
        dist: KeyDist::Uniform,
        ..cfg(YcsbWorkload::C, records)
    })
    .unwrap();
    let h = hottest(&counts(&mut u, ops));
    let top: u64 = h.iter().take(records as usize / 100).map(|&(_, n)| n).sum();
    assert!((top as f64 / ops as f64) < 0.03, "uniform top 1%: {top}");
}

#[test]
fn scrambling_spreads_hot_keys_over_the_key_space() {
    let records = 100_000u64;
    let mut g = YcsbGenerator::new(&cfg(YcsbWorkload::C, records)).unwrap();
    let h = hottest(&counts(&mut g, 300_000));
    let hot: Vec<u64> = h.iter().take(100).map(|&(k, _)| k).collect();
    let mut deciles = [0u32; 10];
    for &k in &hot {
        deciles[(k * 10 / records) as usize] += 1;
    }
    println!("top 100 keys per tenth of the key space: {deciles:?}");
    assert!(deciles.iter().all(|d| (2..=25).contains(d)), "{deciles:?}");
    let low = hot.iter().filter(|&&k| k < records / 100).count();
    assert!(
        low <= 6,
        "{low} of the 100 hottest keys in the first 1% of ids"
    );
    // The hottest key is the scrambled image of rank 0, not id 0.
    assert_eq!(hot[0], crate::zipf::Scrambler::new(records).apply(0));
    assert_ne!(hot[0], 0);
}

#[test]
fn latest_prefers_the_newest_inserts() {
    let records = 10_000u64;
    let mut g = YcsbGenerator::new(&cfg(YcsbWorkload::D, records)).unwrap();
    assert_eq!(g.config().key_dist(), KeyDist::Latest);
    let (mut reads, mut recent, mut newest, mut of_inserted) = (0u64, 0u64, 0u64, 0u64);
    for _ in 0..100_000 {
        let op = g.next_op();
        if op.kind() == YcsbOpKind::Read {
            let age = g.key_count() - 1 - id(op.key());
            reads += 1;
            recent += u64::from(age < 100);
            newest += u64::from(age == 0);
            of_inserted += u64::from(id(op.key()) >= records);
        }
    }
    let (recent, newest) = (recent as f64 / reads as f64, newest as f64 / reads as f64);
    println!(
        "latest: {:.3} of reads to the 100 newest keys, {:.3} to the newest, {:.3} to inserted",
        recent,
        newest,
        of_inserted as f64 / reads as f64
    );
    assert!(recent > 0.4, "{recent}");
    assert!(newest > 0.05, "{newest}");
    assert!(of_inserted as f64 / reads as f64 > 0.5);
}

#[test]
fn inserts_extend_the_key_space_in_order() {
    for w in [YcsbWorkload::D, YcsbWorkload::E] {
        let records = 5_000u64;
        let mut g = YcsbGenerator::new(&cfg(w, records)).unwrap();
        let mut next = records;
        let mut touched_new = false;
        for _ in 0..40_000 {
            let op = g.next_op();
            let k = id(op.key());
            if op.kind() == YcsbOpKind::Insert {
                assert_eq!(k, next, "workload {w}");
                assert_eq!(op.value().unwrap().len(), 100);
                next += 1;
                assert_eq!(g.key_count(), next);
            } else {
                assert!(k < g.key_count(), "workload {w}: {k} >= {}", g.key_count());
                touched_new |= k >= records;
            }
        }
        assert!(
            next > records + 1500,
            "workload {w}: {} inserts",
            next - records
        );
        assert!(touched_new, "workload {w}: no access to an inserted key");
    }
}

#[test]
fn zipf_and_uniform_reach_inserted_keys_too() {
    for dist in [KeyDist::Uniform, KeyDist::Zipf { theta: 0.5 }] {
        let mut g = YcsbGenerator::new(&YcsbConfig {
            dist,
            ..cfg(YcsbWorkload::E, 1_000)
        })
        .unwrap();
        let c = counts(&mut g, 50_000);
        assert!(c.keys().all(|&k| k < g.key_count()));
        assert!(c.keys().any(|&k| k >= 1_000), "{dist}");
    }
}

#[test]
fn scans_stay_in_bounds() {
    let mut g = YcsbGenerator::new(&cfg(YcsbWorkload::E, 20_000)).unwrap();
    let (mut n, mut sum, mut min, mut max) = (0u64, 0u64, usize::MAX, 0usize);
    for _ in 0..100_000 {
        if let YcsbOp::Scan { start_key, len } = g.next_op() {
            assert!(id(&start_key) < g.key_count());
            assert!((1..=100).contains(&len), "{len}");
            (n, sum, min, max) = (n + 1, sum + len as u64, min.min(len), max.max(len));
        }
    }
    let mean = sum as f64 / n as f64;
    assert_eq!((min, max), (1, 100));
    assert!((mean - 50.5).abs() < 1.0, "{mean}");
    let mut short = YcsbGenerator::new(&YcsbConfig {
        max_scan_len: 3,
        ..cfg(YcsbWorkload::E, 100)
    })
    .unwrap();
    for op in short.by_ref().take(1000) {
        if let YcsbOp::Scan { len, .. } = op {
            assert!((1..=3).contains(&len));
        }
    }
}

#[test]
fn keys_sort_like_their_ids() {
    let g = YcsbGenerator::new(&cfg(YcsbWorkload::A, 3_000)).unwrap();
    let ids = [
        0u64,
        1,
        9,
        10,
        99,
        100,
        2_999,
        3_000,
        123_456_789,
        u64::MAX / 3,
        u64::MAX,
    ];
    for w in ids.windows(2) {
        assert!(g.key(w[0]) < g.key(w[1]), "{} vs {}", w[0], w[1]);
    }
    for &i in &ids {
        let k = g.key(i);
        assert_eq!(k.len(), 24);
        assert!(k.starts_with(b"user"));
        assert_eq!(key_id(&k), Some(i));
    }
    assert_eq!(g.key(42), b"user00000000000000000042");
    let loaded: Vec<Vec<u8>> = (0..3_000).map(|i| g.load_key(i)).collect();
    assert!(loaded.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(key_id(b"user12x"), None);
    assert_eq!(key_id(b"user"), None);
    assert_eq!(key_id(b"usr123"), None);
}

#[test]
fn hashed_load_is_a_permutation_of_the_records() {
    let n = 5_000u64;
    let g = YcsbGenerator::new(&YcsbConfig {
        load_order: LoadOrder::Hashed,
        ..cfg(YcsbWorkload::A, n)
    })
    .unwrap();
    let mut ids: Vec<u64> = (0..n).map(|i| id(&g.load_key(i))).collect();
    assert!(ids.windows(2).filter(|w| w[0] < w[1]).count() < (n as usize) * 3 / 4);
    ids.sort_unstable();
    assert_eq!(ids, (0..n).collect::<Vec<_>>());
    // A record's value does not depend on the load order.
    let ordered = YcsbGenerator::new(&cfg(YcsbWorkload::A, n)).unwrap();
    let i = 17;
    assert_eq!(g.load_value(i), ordered.load_value(g.load_id(i)));
    assert_eq!(g.load_records().count() as u64, n);
}

#[test]
fn loaded_pages_compress_to_the_configured_ratio() {
    for (value_bytes, target) in [
        (1000usize, DEFAULT_LZ4_RATIO),
        (100, DEFAULT_LZ4_RATIO),
        (500, 0.6),
    ] {
        let t = std::time::Instant::now();
        let g = YcsbGenerator::new(&YcsbConfig {
            value_bytes,
            compressibility: target,
            record_count: 100_000,
            ..YcsbConfig::default()
        })
        .unwrap();
        let setup = t.elapsed();
        let mut data = Vec::new();
        for (k, v) in g
            .load_records()
            .take(200 * PAGE_BYTES / (24 + value_bytes) + 1)
        {
            data.extend_from_slice(&k);
            data.extend_from_slice(&v);
        }
        data.truncate(200 * PAGE_BYTES);
        let r = page_lz4_ratio(&data);
        println!("{value_bytes} B values, target {target}: pages compress to {r:.4} ({setup:?})");
        assert!(
            (r - target).abs() <= 0.03,
            "{value_bytes} B: {r} vs {target}"
        );
    }
}

#[test]
fn workload_names_parse_case_insensitively() {
    for (s, w) in [
        ("a", YcsbWorkload::A),
        ("B", YcsbWorkload::B),
        (" c ", YcsbWorkload::C),
        ("workloadd", YcsbWorkload::D),
        ("YCSB-E", YcsbWorkload::E),
        ("f", YcsbWorkload::F),
        ("WO", YcsbWorkload::WO),
        ("wo", YcsbWorkload::WO),
    ] {
        assert_eq!(s.parse::<YcsbWorkload>().unwrap(), w, "{s}");
    }
    for w in YcsbWorkload::ALL {
        assert_eq!(w.to_string().parse::<YcsbWorkload>().unwrap(), w);
    }
    for bad in ["g", "", "ab", "w"] {
        let e = bad.parse::<YcsbWorkload>().unwrap_err();
        assert_eq!(e, YcsbError::UnknownWorkload(bad.to_string()));
        assert!(
            e.to_string().contains("expected a, b, c, d, e, f or wo"),
            "{e}"
        );
    }
}

#[test]
fn key_dists_parse_and_print() {
    assert_eq!("Uniform".parse::<KeyDist>().unwrap(), KeyDist::Uniform);
    assert_eq!("standard".parse::<KeyDist>().unwrap(), KeyDist::Standard);
    assert_eq!("latest".parse::<KeyDist>().unwrap(), KeyDist::Latest);
    assert_eq!(
        "zipf".parse::<KeyDist>().unwrap(),
        KeyDist::Zipf { theta: 0.99 }
    );
    assert_eq!(
        "zipfian:0.8".parse::<KeyDist>().unwrap(),
        KeyDist::Zipf { theta: 0.8 }
    );
    for d in [
        KeyDist::Uniform,
        KeyDist::Latest,
        KeyDist::Zipf { theta: 1.25 },
    ] {
        assert_eq!(d.to_string().parse::<KeyDist>().unwrap(), d);
    }
    for bad in ["zipf:x", "zipf:-1", "hotspot", "latest:3", "zipf:inf"] {
        let e = bad.parse::<KeyDist>().unwrap_err();
        assert!(matches!(e, YcsbError::BadDist { .. }), "{bad}: {e}");
    }
}

#[test]
fn config_round_trips_through_serde_and_rejects_typos() {
    let c = YcsbConfig {
        workload: YcsbWorkload::E,
        dist: KeyDist::Zipf { theta: 0.8 },
        load_order: LoadOrder::Hashed,
        ..YcsbConfig::default()
    };
    let json = serde_json::to_string(&c).unwrap();
    assert!(
        json.contains("\"workload\":\"e\"") && json.contains("\"zipf:0.8\""),
        "{json}"
    );
    assert_eq!(serde_json::from_str::<YcsbConfig>(&json).unwrap(), c);
    let partial: YcsbConfig =
        serde_json::from_str(r#"{"workload": "WO", "record_count": 10}"#).unwrap();
    assert_eq!(partial.workload, YcsbWorkload::WO);
    assert_eq!(partial.dist, KeyDist::Standard);
    assert_eq!(partial.key_dist(), KeyDist::Zipf { theta: 0.99 });
    let d: YcsbConfig = serde_json::from_str(r#"{"workload": "d"}"#).unwrap();
    assert_eq!(d.key_dist(), KeyDist::Latest);
    let d: YcsbConfig = serde_json::from_str(r#"{"workload": "d", "dist": "uniform"}"#).unwrap();
    assert_eq!(d.key_dist(), KeyDist::Uniform);
    assert_eq!((partial.key_bytes, partial.value_bytes), (24, 1000));
    assert!(serde_json::from_str::<YcsbConfig>(r#"{"workload": "z"}"#).is_err());
    assert!(serde_json::from_str::<YcsbConfig>(r#"{"records": 10}"#).is_err());
}

#[test]
fn bad_configs_are_errors() {
    let base = cfg(YcsbWorkload::A, 1000);
    let field = |c: YcsbConfig| match YcsbGenerator::new(&c) {
        Err(YcsbError::BadField { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        field(YcsbConfig {
            record_count: 0,
            ..base.clone()
        }),
        "record_count"
    );
    assert_eq!(
        field(YcsbConfig {
            key_bytes: 4,
            ..base.clone()
        }),
        "key_bytes"
    );
    assert_eq!(
        field(YcsbConfig {
            key_bytes: 6,
            ..base.clone()
        }),
        "record_count"
    );
    assert_eq!(
        field(YcsbConfig {
            value_bytes: 0,
            ..base.clone()
        }),
        "value_bytes"
    );
    assert_eq!(
        field(YcsbConfig {
            max_scan_len: 0,
            ..base.clone()
        }),
        "max_scan_len"
    );
    let e = YcsbGenerator::new(&YcsbConfig {
        dist: KeyDist::Zipf { theta: f64::NAN },
        ..base.clone()
    })
    .unwrap_err();
    assert!(matches!(e, YcsbError::BadDist { .. }), "{e}");
    let e = YcsbGenerator::new(&YcsbConfig {
        compressibility: 0.0,
        ..base
    })
    .unwrap_err();
    assert!(matches!(e, YcsbError::Value(_)), "{e}");
}

#[test]
fn a_full_key_space_turns_inserts_into_updates() {
    let mut g = YcsbGenerator::new(&YcsbConfig {
        key_bytes: 6,
        ..cfg(YcsbWorkload::D, 98)
    })
    .unwrap();
    let kinds: Vec<YcsbOpKind> = g.by_ref().take(5_000).map(|op| op.kind()).collect();
    assert_eq!(g.key_count(), 100);
    assert_eq!(
        kinds.iter().filter(|&&k| k == YcsbOpKind::Insert).count(),
        2
    );
    assert!(kinds.contains(&YcsbOpKind::Update));
}

#[test]
fn generation_speed() {
    let mut g = YcsbGenerator::new(&YcsbConfig {
        workload: YcsbWorkload::A,
        record_count: 10_000_000,
        ..YcsbConfig::default()
    })
    .unwrap();
    let n = 200_000;
    let t = std::time::Instant::now();
    let bytes: usize = g.by_ref().take(n).map(|op| op.key().len()).sum();
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    println!("workload A, 1000 B values: {ns:.0} ns per op");
    assert_eq!(bytes, n * 24);
    assert!(ns < 10_000.0, "{ns} ns per op");
}

/// FNV-1a over the operations and load records of a generator: a fingerprint of every byte it
/// hands out.
fn fingerprint(g: &mut YcsbGenerator, ops: usize, loads: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes.iter().chain(&(bytes.len() as u64).to_le_bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for i in 0..loads {
        eat(&g.load_key(i));
        eat(&g.load_value(i));
    }
    for op in g.take(ops) {
        eat(&[op.kind() as u8]);
        eat(op.key());
        eat(op.value().unwrap_or_default());
        if let YcsbOp::Scan { len, .. } = op {
            eat(&(len as u64).to_le_bytes());
        }
    }
    h
}

#[test]
fn fixed_value_sizes_hand_out_the_same_bytes_as_before_value_size_distributions() {
    // Taken from the generator before `value_sizes` existed: the default (fixed) sizes must
    // keep every existing result, so every workload yields the very same bytes.
    let mut got = Vec::new();
    for w in YcsbWorkload::ALL {
        for (value_bytes, load_order) in [(100, LoadOrder::Ordered), (1000, LoadOrder::Hashed)] {
            let c = YcsbConfig {
                value_bytes,
                load_order,
                ..cfg(w, 5_000)
            };
            let mut g = YcsbGenerator::new(&c).unwrap();
            got.push(fingerprint(&mut g, 3000, 200));
        }
    }
    let want: [u64; 14] = [
        0x47da625c94fa248b,
        0xc17860109a541c25,
        0xc319c8dacff5ed51,
        0x88dc2dfd628baed1,
        0x5a6d89dc836709ea,
        0x414c057962b9e587,
        0x4c73c946f9d8ee20,
        0xb57cfac676a76db0,
        0x412c542ac31b54a3,
        0x822c6912c737e00f,
        0x9a044b35d250857d,
        0x620ca41df476b19f,
        0x203282697459ed42,
        0x6afca9d5f148ca6a,
    ];
    assert_eq!(got, want);
}

#[test]
fn value_sizes_parse_print_and_refuse_nonsense() {
    let ok = [
        ("1000", ValueSizes::Mix(vec![1000])),
        (
            "128..4096",
            ValueSizes::Uniform {
                min: 128,
                max: 4096,
            },
        ),
        (
            "128..=4096",
            ValueSizes::Uniform {
                min: 128,
                max: 4096,
            },
        ),
        (" 128, 512,4096 ", ValueSizes::Mix(vec![128, 512, 4096])),
        ("MIX1", ValueSizes::Mix1),
        ("mix2", ValueSizes::Mix2),
        ("mix3", ValueSizes::Mix3),
        ("mix4", ValueSizes::Mix4),
        ("fixed", ValueSizes::Fixed),
    ];
    for (s, want) in ok {
        let v: ValueSizes = s.parse().unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(v, want, "{s}");
        assert_eq!(v.to_string().parse::<ValueSizes>().unwrap(), v, "{s}");
    }
    for bad in [
        "",
        "0",
        "4096..128",
        "128..",
        "a,b",
        "128,,256",
        "mix5",
        "16777217",
        "1..16777217",
        "-5",
    ] {
        let e = bad.parse::<ValueSizes>().unwrap_err().to_string();
        assert!(e.contains("value sizes"), "{bad}: {e}");
    }
    // The error lists the forms that parse.
    let e = "mix5".parse::<ValueSizes>().unwrap_err().to_string();
    assert!(
        e.contains("MIN..MAX") && e.contains("mix1") && e.contains("SIZE,SIZE"),
        "{e}"
    );
    assert!(ValueSizes::Mix(Vec::new()).validate(1000).is_err());
    assert!(ValueSizes::Fixed.validate(0).is_err());
}

#[test]
fn a_config_takes_value_sizes_as_a_string_and_refuses_bad_ones() {
    let c: YcsbConfig = serde_json::from_str(r#"{"value_sizes": "mix3"}"#).unwrap();
    assert_eq!(c.value_sizes, ValueSizes::Mix3);
    let c: YcsbConfig = serde_json::from_str(r#"{"value_sizes": "128..512"}"#).unwrap();
    assert_eq!(c.value_sizes, ValueSizes::Uniform { min: 128, max: 512 });
    assert_eq!(
        serde_json::from_str::<YcsbConfig>(&serde_json::to_string(&c).unwrap()).unwrap(),
        c
    );
    assert!(serde_json::from_str::<YcsbConfig>(r#"{"value_sizes": "512..128"}"#).is_err());
    assert!(serde_json::from_str::<YcsbConfig>(r#"{"value_size": "mix1"}"#).is_err());
    let bad = YcsbConfig {
        value_sizes: ValueSizes::Mix(vec![0, 100]),
        ..cfg(YcsbWorkload::A, 100)
    };
    assert!(matches!(
        YcsbGenerator::new(&bad),
        Err(YcsbError::BadValueSizes { .. })
    ));
    // One size is the fixed size it always was.
    let mut c = YcsbConfig::default();
    c.set_value_sizes("500".parse().unwrap());
    assert_eq!(
        (c.value_sizes.clone(), c.value_bytes),
        (ValueSizes::Fixed, 500)
    );
    c.set_value_sizes(ValueSizes::Mix2);
    assert_eq!(
        (c.value_sizes.clone(), c.value_bytes),
        (ValueSizes::Mix2, 500)
    );
    assert_eq!(
        c.describe_values(),
        "mix2 values (128..4096 B, mean 390.1 B)"
    );
}

#[test]
fn the_named_mixes_have_their_documented_means_and_realise_them() {
    let nominal = [1344.0, 24576.0 / 63.0, 174720.0 / 63.0, 2112.0];
    for (m, want) in ValueSizes::NAMED.iter().zip(nominal) {
        assert!((m.mean_bytes(1000) - want).abs() < 1e-9, "{m}");
        let s = m.sampler(1000, 42);
        let n = 200_000u64;
        let mut sum = 0.0;
        for id in 0..n {
            let x = s.size_of(id);
            assert!((128..=4096).contains(&x), "{m}: {x}");
            sum += x as f64;
        }
        let got = sum / n as f64;
        println!("{m}: mean {got:.1} B (nominal {want:.1} B)");
        assert!((got - want).abs() / want < 0.01, "{m}: {got} vs {want}");
    }
    let m = ValueSizes::Mix(vec![128, 128, 4096]);
    assert!((m.mean_bytes(1) - 1450.666).abs() < 0.01);
    let s = m.sampler(1, 1);
    let big = (0..30_000).filter(|&id| s.size_of(id) == 4096).count();
    assert!((9_500..10_500).contains(&big), "{big}");
}

fn sized_cfg(w: YcsbWorkload, sizes: ValueSizes) -> YcsbConfig {
    YcsbConfig {
        value_sizes: sizes,
        ..cfg(w, 2_000)
    }
}

#[test]
fn a_record_keeps_its_size_for_the_run_and_sizes_follow_the_seed() {
    let c = sized_cfg(YcsbWorkload::A, ValueSizes::Mix1);
    let g = YcsbGenerator::new(&c).unwrap();
    let sizes: Vec<usize> = (0..2000).map(|i| g.load_value(i).len()).collect();
    assert_eq!(
        sizes,
        (0..2000).map(|i| g.value_size(i)).collect::<Vec<_>>()
    );
    let again = YcsbGenerator::new(&c).unwrap();
    assert_eq!(
        sizes,
        (0..2000)
            .map(|i| again.load_value(i).len())
            .collect::<Vec<_>>()
    );
    let other = YcsbGenerator::new(&YcsbConfig {
        seed: 7,
        ..c.clone()
    })
    .unwrap();
    assert_ne!(
        sizes,
        (0..2000)
            .map(|i| other.load_value(i).len())
            .collect::<Vec<_>>()
    );
    // Every write of a key (load, update, read-modify-write, insert) has the key's size.
    for w in [
        YcsbWorkload::A,
        YcsbWorkload::F,
        YcsbWorkload::WO,
        YcsbWorkload::D,
    ] {
        let mut g = YcsbGenerator::new(&sized_cfg(w, ValueSizes::Mix4)).unwrap();
        let check = g.clone();
        let mut writes = 0;
        for op in g.by_ref().take(5000) {
            if let Some(v) = op.value() {
                assert_eq!(v.len(), check.value_size(id(op.key())), "{w}");
                writes += 1;
            }
        }
        assert!(writes > 0, "{w}");
        let a: Vec<YcsbOp> = YcsbGenerator::new(&sized_cfg(w, ValueSizes::Mix4))
            .unwrap()
            .take(5000)
            .collect();
        let b: Vec<YcsbOp> = YcsbGenerator::new(&sized_cfg(w, ValueSizes::Mix4))
            .unwrap()
            .take(5000)
            .collect();
        assert_eq!(a, b, "{w}");
    }
}

#[test]
fn sizes_do_not_change_which_keys_are_chosen() {
    // Sizes are hashed, not drawn: the operation stream has the same kinds and keys.
    let fixed = YcsbGenerator::new(&cfg(YcsbWorkload::A, 2_000)).unwrap();
    let mixed = YcsbGenerator::new(&sized_cfg(YcsbWorkload::A, ValueSizes::Mix2)).unwrap();
    for (a, b) in fixed.zip(mixed).take(3000) {
        assert_eq!((a.kind(), a.key().to_vec()), (b.kind(), b.key().to_vec()));
    }
}

#[test]
fn mixed_size_pages_compress_to_the_configured_ratio() {
    for (sizes, target) in [
        (ValueSizes::Mix1, DEFAULT_LZ4_RATIO),
        (ValueSizes::Mix2, DEFAULT_LZ4_RATIO),
        (ValueSizes::Mix3, DEFAULT_LZ4_RATIO),
        (ValueSizes::Mix4, 0.6),
        (
            ValueSizes::Uniform { min: 100, max: 300 },
            DEFAULT_LZ4_RATIO,
        ),
    ] {
        let g = YcsbGenerator::new(&YcsbConfig {
            value_sizes: sizes.clone(),
            compressibility: target,
            record_count: 100_000,
            ..YcsbConfig::default()
        })
        .unwrap();
        let mut data = Vec::new();
        for (k, v) in g.load_records() {
            data.extend_from_slice(&k);
            data.extend_from_slice(&v);
            if data.len() >= 400 * PAGE_BYTES {
                break;
            }
        }
        data.truncate(400 * PAGE_BYTES);
        let r = page_lz4_ratio(&data);
        println!("{sizes}: target {target}, pages compress to {r:.4}");
        assert!((r - target).abs() <= 0.03, "{sizes}: {r} vs {target}");
    }
}
