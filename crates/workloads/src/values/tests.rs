use super::*;

/// Page ratio of `pages` pages of records whose values come from `g`'s stream.
fn measured(g: &mut ValueGen, key_bytes: usize, pages: usize) -> f64 {
    let v = g.value_bytes();
    let data = record_pages(pages, key_bytes, v, 7_777_777, |out| g.fill(out));
    page_lz4_ratio(&data)
}

#[test]
fn default_target_reproduces_the_papers_ycsb_ratio() {
    let mut g = ValueGen::new(1000, DEFAULT_LZ4_RATIO, 1).unwrap();
    let r = measured(&mut g, DEFAULT_KEY_BYTES, 256);
    println!(
        "target {DEFAULT_LZ4_RATIO}: literal share {:.4}, calibrated {:.4}, measured {r:.4}",
        g.literal_share(),
        g.calibrated_ratio()
    );
    assert!((r - 0.41).abs() <= 0.03, "{r}");
    assert!((r - DEFAULT_LZ4_RATIO).abs() <= 0.01, "{r}");
}

#[test]
fn ratios_track_targets_and_are_monotonic() {
    for (value_bytes, targets) in [
        (100usize, &[0.2, 0.41, 0.5, 0.8][..]),
        (1000, &[0.2, 0.41, 0.5, 0.9]),
        (4000, &[0.2, 0.41, 0.5, 0.9]),
    ] {
        let mut last = 0.0;
        for &target in targets {
            let mut g = ValueGen::new(value_bytes, target, 99).unwrap();
            let r = measured(&mut g, DEFAULT_KEY_BYTES, 128);
            println!("value {value_bytes} B target {target}: measured {r:.4}");
            assert!(
                (r - target).abs() <= 0.03,
                "value {value_bytes} target {target}: {r}"
            );
            assert!(
                r > last,
                "value {value_bytes} target {target}: {r} <= {last}"
            );
            last = r;
        }
    }
}

#[test]
fn full_ratio_is_incompressible() {
    let mut g = ValueGen::new(1000, 1.0, 3).unwrap();
    let r = measured(&mut g, DEFAULT_KEY_BYTES, 64);
    assert!(r > 0.99, "{r}");
    let v = g.next_value();
    assert!(lz4_ratio(&v) > 1.0);
}

#[test]
fn values_are_deterministic_and_indexed_values_are_order_free() {
    let mut a = ValueGen::new(1000, 0.41, 5).unwrap();
    let mut b = ValueGen::new(1000, 0.41, 5).unwrap();
    let mut c = ValueGen::new(1000, 0.41, 6).unwrap();
    for _ in 0..10 {
        let (va, vb, vc) = (a.next_value(), b.next_value(), c.next_value());
        assert_eq!(va.len(), 1000);
        assert_eq!(va, vb);
        assert_ne!(va, vc);
    }
    let v7 = a.value_at(7);
    let _ = a.value_at(3);
    assert_eq!(a.value_at(7), v7);
    assert_eq!(b.value_at(7), v7);
    assert_ne!(a.value_at(8), v7);
}

#[test]
fn compressible_values_are_printable() {
    let mut g = ValueGen::new(300, 0.5, 2).unwrap();
    for _ in 0..20 {
        assert!(g.next_value().iter().all(|&b| (b' '..=b'_').contains(&b)));
    }
}

#[test]
fn bad_inputs_are_errors() {
    for r in [0.0, -0.1, 1.01, f64::NAN] {
        assert!(matches!(
            ValueGen::new(1000, r, 1),
            Err(ValueError::BadRatio(_))
        ));
    }
    assert_eq!(
        ValueGen::new(0, 0.5, 1).unwrap_err(),
        ValueError::BadSize(0)
    );
    for (value_bytes, target) in [(8, 0.05), (100, 0.95)] {
        let e = ValueGen::new(value_bytes, target, 1).unwrap_err();
        assert!(matches!(e, ValueError::Unreachable { .. }), "{e}");
        assert!(e.to_string().contains("out of reach"), "{e}");
    }
    // Random values are always possible, whatever the keys make of the page ratio.
    assert!(ValueGen::new(100, 1.0, 1).is_ok());
}

#[test]
fn value_generation_is_fast() {
    let mut g = ValueGen::new(1000, DEFAULT_LZ4_RATIO, 1).unwrap();
    let mut buf = vec![0u8; 1000];
    let t = std::time::Instant::now();
    let n = 20_000;
    for _ in 0..n {
        g.fill(&mut buf);
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    println!("fill of a 1000 B value: {ns:.0} ns");
    assert!(ns < 5_000.0, "{ns} ns per value");
}
