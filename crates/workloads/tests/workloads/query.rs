//! The temp-space query operators: external sort, Grace hash join and sort-merge join against
//! in-memory references, TempFull, trimming, and the counters on a simulated SSD and disk.

use proptest::prelude::*;
use std::sync::Arc;
use wafer_engine::device::{BlockDevice, MemDevice, SimDevice, VirtualClock};
use wafer_engine::WallClock;
use wafer_workloads::query::{
    grace_hash_join, min_budget_clusters, ok_rows, sort_merge_join, sort_to_vec, HddDevice,
    JoinRow, QueryError, Row, TempClock, TempSpace, TempTiming,
};

fn mem_temp(capacity: u64, cluster: usize) -> TempSpace {
    TempSpace::new(
        Box::new(MemDevice::new(capacity, 512)),
        cluster,
        Arc::new(WallClock::new()),
    )
    .unwrap()
}

/// Temp space on memory with read-ahead `ra` and write-behind `wb` (which change fan-in, fan-out
/// and the sort area, not the results).
fn timed_mem_temp(capacity: u64, cluster: usize, ra: usize, wb: usize) -> TempSpace {
    TempSpace::with_timing(
        Box::new(MemDevice::new(capacity, 512)),
        cluster,
        None,
        TempClock::Other(Arc::new(WallClock::new())),
        TempTiming {
            cpu_ns_per_row: 0,
            read_ahead: ra,
            write_behind: wb,
            queue_depth: 4,
        },
    )
    .unwrap()
}

fn row_strategy(keys: u16, max_value: usize) -> impl Strategy<Value = Row> {
    (
        0..keys,
        proptest::collection::vec(any::<u8>(), 0..max_value),
    )
        .prop_map(|(k, v)| (format!("k{k:05}").into_bytes(), v))
}

fn rows_strategy(keys: u16, max_rows: usize, max_value: usize) -> impl Strategy<Value = Vec<Row>> {
    proptest::collection::vec(row_strategy(keys, max_value), 0..max_rows)
}

/// The join by nested loops, sorted (a multiset to compare with).
fn reference_join(left: &[Row], right: &[Row]) -> Vec<JoinRow> {
    let mut out = Vec::new();
    for (lk, lv) in left {
        for (rk, rv) in right {
            if lk == rk {
                out.push((lk.clone(), lv.clone(), rv.clone()));
            }
        }
    }
    out.sort();
    out
}

const CLUSTERS: [usize; 3] = [2048, 4096, 8192];

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn external_sort_equals_in_memory_sort(
        rows in rows_strategy(200, 400, 300),
        ci in 0usize..3,
        extra_clusters in 0usize..7,
        ra in 0usize..3,
        wb in 0usize..3,
    ) {
        let cluster = CLUSTERS[ci];
        let mut temp = timed_mem_temp(8 << 20, cluster, ra, wb);
        let budget = (min_budget_clusters(&temp) + extra_clusters) * cluster;
        let (out, stats) = sort_to_vec(&mut temp, budget, ok_rows(rows.clone())).unwrap();
        let mut expect = rows;
        expect.sort();
        prop_assert_eq!(&out, &expect);
        prop_assert_eq!(stats.rows, expect.len() as u64);
        prop_assert_eq!(temp.clusters_in_use(), 0);
        let io = temp.io();
        prop_assert_eq!(io.bytes_trimmed, io.bytes_written);
        prop_assert_eq!(io.bytes_read, io.bytes_written);
    }

    #[test]
    fn joins_equal_nested_loop_join(
        left in rows_strategy(40, 150, 200),
        right in rows_strategy(40, 150, 200),
        ci in 0usize..2,
        extra_clusters in 0usize..5,
        ra in 0usize..2,
        wb in 0usize..2,
    ) {
        let cluster = CLUSTERS[ci];
        let mut temp = timed_mem_temp(8 << 20, cluster, ra, wb);
        let budget = (min_budget_clusters(&temp) + extra_clusters) * cluster;
        let expect = reference_join(&left, &right);
        let (mut hj, hs) = grace_hash_join(&mut temp, budget, ok_rows(left.clone()), ok_rows(right.clone())).unwrap();
        hj.sort();
        prop_assert_eq!(&hj, &expect);
        prop_assert_eq!(hs.output_rows, expect.len() as u64);
        prop_assert_eq!(temp.clusters_in_use(), 0);
        let (mut mj, ms) = sort_merge_join(&mut temp, 2 * budget, ok_rows(left), ok_rows(right)).unwrap();
        mj.sort();
        prop_assert_eq!(&mj, &expect);
        prop_assert_eq!(ms.output_rows, expect.len() as u64);
        prop_assert_eq!(temp.clusters_in_use(), 0);
    }
}

#[test]
fn sort_edge_cases() {
    let mut temp = mem_temp(1 << 20, 2048);
    let (out, stats) = sort_to_vec(&mut temp, 3 * 2048, ok_rows(Vec::new())).unwrap();
    assert!(out.is_empty());
    assert_eq!(temp.io().bytes_written, 0);
    assert_eq!(stats.rows, 0);
    // All duplicates, many runs, fan-in 2: several merge passes.
    let rows: Vec<Row> = (0..6000u32)
        .map(|i| (b"same".to_vec(), (i % 7).to_le_bytes().to_vec()))
        .collect();
    let (out, stats) = sort_to_vec(&mut temp, 3 * 2048, ok_rows(rows.clone())).unwrap();
    let mut expect = rows;
    expect.sort();
    assert_eq!(out, expect);
    assert_eq!(stats.fan_in, 2);
    assert!(stats.initial_run_bytes.len() > 4, "{stats:?}");
    assert!(stats.intermediate_merges >= 3, "{stats:?}");
    assert_eq!(temp.clusters_in_use(), 0);
    // A budget below three clusters is a configuration error.
    assert!(matches!(
        sort_to_vec(&mut temp, 2 * 2048, ok_rows(Vec::new())),
        Err(QueryError::Config(_))
    ));
}

#[test]
fn skew_forces_recursive_partitioning_and_chunks() {
    let cluster = 2048;
    let budget = 4 * cluster;
    // Many distinct keys: the first-level partitions are larger than the budget.
    let left: Vec<Row> = (0..3000u32)
        .map(|i| (format!("{:06}", i % 1500).into_bytes(), vec![1; 20]))
        .collect();
    let mut right: Vec<Row> = (0..1500u32)
        .map(|i| (format!("{:06}", i * 2).into_bytes(), vec![2; 10]))
        .collect();
    // One very hot key on both sides: no hash can split it, so it ends up joined in chunks.
    let hot: Vec<Row> = (0..400u32)
        .map(|i| (b"hot".to_vec(), i.to_le_bytes().to_vec()))
        .collect();
    let mut left = left;
    left.extend(hot.iter().cloned());
    right.extend(hot.iter().cloned());
    let expect = reference_join(&left, &right);
    let mut temp = mem_temp(16 << 20, cluster);
    let (mut out, stats) = grace_hash_join(
        &mut temp,
        budget,
        ok_rows(left.clone()),
        ok_rows(right.clone()),
    )
    .unwrap();
    out.sort();
    assert_eq!(out, expect);
    assert!(stats.recursive_partitionings > 0, "{stats:?}");
    assert!(stats.max_depth >= 1);
    assert!(stats.chunked_pairs > 0, "{stats:?}");
    assert_eq!(temp.clusters_in_use(), 0);
    let (mut out, _) =
        sort_merge_join(&mut temp, 2 * budget, ok_rows(left), ok_rows(right)).unwrap();
    out.sort();
    assert_eq!(out, expect);
}

#[test]
fn temp_full_is_an_error_and_space_is_trimmed_after() {
    let cluster = 2048;
    // 16 clusters of temp space; 100 KiB of input does not fit.
    let mut temp = mem_temp(16 * 2048, cluster);
    let big: Vec<Row> = (0..1000u32)
        .map(|i| (i.to_be_bytes().to_vec(), vec![7; 92]))
        .collect();
    let r = sort_to_vec(&mut temp, 3 * cluster, ok_rows(big.clone()));
    assert!(
        matches!(r, Err(QueryError::TempFull { clusters: 16, .. })),
        "{r:?}"
    );
    let r = grace_hash_join(
        &mut temp,
        3 * cluster,
        ok_rows(big.clone()),
        ok_rows(big.clone()),
    );
    assert!(matches!(r, Err(QueryError::TempFull { .. })), "{r:?}");
    let r = sort_merge_join(&mut temp, 6 * cluster, ok_rows(big.clone()), ok_rows(big));
    assert!(matches!(r, Err(QueryError::TempFull { .. })), "{r:?}");
    // The failed operators freed what they had written.
    assert_eq!(temp.clusters_in_use(), 0);
    // Input that needs 10 of the 16 clusters fits, again and again: each sort frees and trims
    // its runs.
    let fits: Vec<Row> = (0..100u32)
        .map(|i| ((1000 - i).to_be_bytes().to_vec(), vec![7; 92]))
        .collect();
    for _ in 0..5 {
        let before = temp.io();
        let (out, _) = sort_to_vec(&mut temp, 3 * cluster, ok_rows(fits.clone())).unwrap();
        assert_eq!(out.len(), 100);
        let io = temp.io().since(&before);
        assert!(io.bytes_written > 0);
        assert_eq!(io.bytes_trimmed, io.bytes_written);
        assert!(io.trims > 0);
        assert_eq!(temp.clusters_in_use(), 0);
    }
    assert!(temp.peak_clusters_in_use() <= 16);
}

/// Sorts the same input on a simulated SSD and on the disk model and checks that the counters
/// add up: run generation writes each run rounded up to whole clusters, one write per cluster;
/// one merge pass reads all of it back, a cluster per read; the device saw the same I/O; and
/// the virtual clock advanced in both phases.
#[test]
fn sort_counters_on_simulated_flash_and_disk() {
    let cluster = 8192;
    let budget = 16 * cluster;
    let rows: Vec<Row> = (0..4000u32)
        .map(|i| {
            (
                (i.wrapping_mul(2_654_435_761)).to_be_bytes().to_vec(),
                vec![i as u8; 120],
            )
        })
        .collect();
    let mut expect = rows.clone();
    expect.sort();
    let ssd_clock = VirtualClock::shared();
    let ssd = SimDevice::new(
        wafer_workloads::bench::bench_ssd(32 << 20, 0.1),
        ssd_clock.clone(),
    )
    .unwrap();
    let hdd_clock = VirtualClock::shared();
    let hdd = HddDevice::new(flashsim::HddConfig::new(64 << 20), hdd_clock.clone()).unwrap();
    let devices: Vec<(&str, Box<dyn BlockDevice>, Arc<VirtualClock>)> = vec![
        ("ssd", Box::new(ssd), ssd_clock),
        ("hdd", Box::new(hdd), hdd_clock),
    ];
    let mut times = Vec::new();
    for (name, dev, clock) in devices {
        let mut temp = TempSpace::new(dev, cluster, clock.clone()).unwrap();
        let (out, s) = sort_to_vec(&mut temp, budget, ok_rows(rows.clone())).unwrap();
        assert_eq!(out, expect, "{name}");
        assert_eq!(
            s.input_bytes,
            rows.iter()
                .map(|(k, v)| 8 + k.len() + v.len())
                .sum::<usize>() as u64
        );
        assert_eq!(s.initial_run_bytes.iter().sum::<u64>(), s.input_bytes);
        assert!(
            s.initial_run_bytes.len() > 1 && s.initial_run_bytes.len() <= s.fan_in,
            "{s:?}"
        );
        assert_eq!(s.intermediate_merges, 0);
        let rounded: u64 = s
            .initial_run_bytes
            .iter()
            .map(|b| b.div_ceil(cluster as u64) * cluster as u64)
            .sum();
        let rg = s.run_generation.io;
        assert_eq!(rg.bytes_written, rounded, "{name}");
        assert_eq!(rg.writes, rounded / cluster as u64);
        assert_eq!(rg.bytes_read, 0);
        let m = s.merge.io;
        assert_eq!(m.bytes_written, 0);
        assert_eq!(m.bytes_read, rounded, "{name}");
        assert_eq!(m.reads, rounded / cluster as u64);
        assert_eq!(m.bytes_trimmed, rounded);
        let ds = temp.device().stats();
        assert_eq!(ds.write_bytes, rounded, "{name}");
        assert_eq!(ds.read_bytes, rounded, "{name}");
        assert!(
            s.run_generation.time_ns > 0 && s.merge.time_ns > 0,
            "{name}: {s:?}"
        );
        assert_eq!(
            s.run_generation.time_ns + s.merge.time_ns,
            clock.now(),
            "{name}"
        );
        times.push((s.run_generation.time_ns, s.merge.time_ns));
    }
    // Reading runs back a cluster at a time, interleaved across runs, costs the disk seeks.
    assert!(times[1].1 > times[0].1, "{times:?}");
}

/// The operators take a tree scan through the engine's public cursor as it is.
#[test]
fn operators_read_engine_cursors() {
    use std::ops::Bound;
    use wafer_engine::{Db, DbConfig, Devices};
    let db = Db::open(
        Devices::new(
            Box::new(MemDevice::new(8 << 20, 4096)),
            Box::new(MemDevice::new(4 << 20, 4096)),
        )
        .with_temp(Box::new(MemDevice::new(1 << 20, 512))),
        DbConfig::default(),
    )
    .unwrap();
    let a = db.create_tree("a").unwrap();
    let b = db.create_tree("b").unwrap();
    let mut txn = db.begin().unwrap();
    for i in 0..600u32 {
        let v = format!("v{:05}", (i * 7919) % 600);
        txn.put(&a, format!("a{i:05}").as_bytes(), v.as_bytes())
            .unwrap();
        if i % 3 == 0 {
            txn.put(&b, v.as_bytes(), b"b").unwrap();
        }
    }
    txn.commit().unwrap();
    let all = (Bound::Unbounded, Bound::Unbounded);

    // Sort tree a by value: the scan's rows with key and value swapped, on the database's
    // temp role.
    let mut temp = TempSpace::new(
        db.temp_device().expect("opened with a temp device"),
        2048,
        Arc::new(WallClock::new()),
    )
    .unwrap();
    let mut txn = db.begin().unwrap();
    let by_value = txn
        .cursor(&a, all, false)
        .unwrap()
        .map(|r| r.map(|(k, v)| (v, k)));
    let (out, stats) = sort_to_vec(&mut temp, 3 * 2048, by_value).unwrap();
    assert_eq!(out.len(), 600);
    assert!(out.windows(2).all(|w| w[0] <= w[1]));
    assert!(stats.initial_run_bytes.len() > 1);

    // Join (value of a) with (key of b): every third value has a partner.
    let b_rows: Vec<Row> = txn
        .cursor(&b, all, false)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let a_by_value = txn
        .cursor(&a, all, false)
        .unwrap()
        .map(|r| r.map(|(k, v)| (v, k)));
    let (joined, _) = grace_hash_join(&mut temp, 4 * 2048, a_by_value, ok_rows(b_rows)).unwrap();
    assert_eq!(joined.len(), 200);
    txn.commit().unwrap();
    assert_eq!(temp.clusters_in_use(), 0);
    // The database reports the temp role's I/O.
    let stats = db.stats();
    let t = stats.temp_device.expect("temp role stats");
    assert_eq!(t.write_bytes, temp.io().bytes_written);
    assert!(t.read_bytes > 0);
}

/// The intermediate merges move the fewest bytes: what they write equals the internal nodes of
/// the optimal merge tree (Huffman's, with zero-size dummy runs so that every merge is full),
/// computed here independently of the sort's plan.
#[test]
fn intermediate_merges_follow_the_optimal_plan() {
    let cluster = 2048;
    for (rows_n, budget_clusters) in [(1300u32, 6usize), (3000, 5), (700, 4), (6000, 9)] {
        let rows: Vec<Row> = (0..rows_n)
            .map(|i| {
                (
                    i.wrapping_mul(2_654_435_761).to_be_bytes().to_vec(),
                    vec![3; 40 + (i % 50) as usize],
                )
            })
            .collect();
        let mut temp = mem_temp(16 << 20, cluster);
        let (out, s) = sort_to_vec(&mut temp, budget_clusters * cluster, ok_rows(rows)).unwrap();
        assert!(out.windows(2).all(|w| w[0] <= w[1]));
        let f = s.fan_in as u64;
        let mut sizes: Vec<u64> = s.initial_run_bytes.clone();
        assert!(sizes.len() as u64 > f, "{rows_n}: {s:?}");
        while !(sizes.len() as u64 - 1).is_multiple_of(f - 1) {
            sizes.push(0);
        }
        let mut heap: std::collections::BinaryHeap<std::cmp::Reverse<u64>> =
            sizes.into_iter().map(std::cmp::Reverse).collect();
        let mut internal = 0u64;
        while heap.len() > 1 {
            let merged: u64 = (0..f).map(|_| heap.pop().unwrap().0).sum();
            internal += merged;
            heap.push(std::cmp::Reverse(merged));
        }
        let root = heap.pop().unwrap().0;
        assert_eq!(s.intermediate_bytes, internal - root, "{rows_n}: {s:?}");
        assert_eq!(temp.clusters_in_use(), 0);
    }
}

/// The CPU cost is charged per row and step in virtual time, and overlapping I/O with it (read
/// ahead, write behind, queue depth) makes a sort on the disk model faster than waiting for
/// every command, though never faster than its CPU time.
#[test]
fn cpu_cost_and_overlap_in_virtual_time() {
    let cluster = 8192;
    let rows: Vec<Row> = (0..6000u32)
        .map(|i| {
            (
                i.wrapping_mul(2_654_435_761).to_be_bytes().to_vec(),
                vec![1; 92],
            )
        })
        .collect();
    let timing = |cpu, ra, wb, qd| TempTiming {
        cpu_ns_per_row: cpu,
        read_ahead: ra,
        write_behind: wb,
        queue_depth: qd,
    };
    // On memory the I/O takes no time: one run generation and one merge pass cost 2 x rows x CPU.
    let clock = VirtualClock::shared();
    let mut temp = TempSpace::with_timing(
        Box::new(MemDevice::new(16 << 20, 512)),
        cluster,
        None,
        TempClock::Virtual(clock.clone()),
        timing(1000, 1, 1, 8),
    )
    .unwrap();
    let (_, s) = sort_to_vec(&mut temp, 40 * cluster, ok_rows(rows.clone())).unwrap();
    assert_eq!(s.intermediate_merges, 0);
    assert_eq!(clock.now(), 2 * 6000 * 1000);
    assert_eq!(s.run_generation.time_ns, 6000 * 1000);

    let mut times = Vec::new();
    for t in [timing(20_000, 0, 0, 1), timing(20_000, 1, 1, 32)] {
        let clock = VirtualClock::shared();
        let hdd = HddDevice::new(flashsim::HddConfig::new(256 << 20), clock.clone()).unwrap();
        let mut temp = TempSpace::with_timing(
            Box::new(hdd),
            cluster,
            None,
            TempClock::Virtual(clock.clone()),
            t,
        )
        .unwrap();
        let (out, s) = sort_to_vec(&mut temp, 40 * cluster, ok_rows(rows.clone())).unwrap();
        assert_eq!(out.len(), 6000);
        assert_eq!(s.intermediate_merges, 0);
        assert_eq!(
            s.run_generation.time_ns + s.merge.time_ns,
            clock.now(),
            "{t:?}"
        );
        assert!(clock.now() >= 2 * 6000 * 20_000);
        times.push(clock.now());
    }
    assert!(times[1] < times[0], "{times:?}");
}

/// A reader with a deep read-ahead keeps many reads in flight: on the paper's SSD a run read
/// with 32 clusters ahead runs near the channels' bandwidth, far faster than one read at a time.
#[test]
fn deep_read_ahead_overlaps_reads_on_flash() {
    use wafer_workloads::query::{RunReader, RunWriter};
    let mut times = Vec::new();
    for depth in [1usize, 32] {
        let clock = VirtualClock::shared();
        let mut cfg = flashsim::Drive::Mcaqe32g.config(64 << 20, 0.1);
        cfg.data = flashsim::DataMode::Memory;
        let dev = SimDevice::new(cfg, clock.clone()).unwrap();
        let mut temp = TempSpace::with_timing(
            Box::new(dev),
            2048,
            None,
            TempClock::Virtual(clock.clone()),
            TempTiming {
                cpu_ns_per_row: 0,
                read_ahead: 0,
                write_behind: 8,
                queue_depth: 32,
            },
        )
        .unwrap();
        let mut w = RunWriter::new(&temp);
        for i in 0..2000u32 {
            w.push(&mut temp, &i.to_be_bytes(), &[5; 96]).unwrap();
        }
        let run = w.finish(&mut temp).unwrap();
        temp.sync();
        let t0 = clock.now();
        let mut r = RunReader::with_depth(run, depth);
        let mut n = 0;
        while r.next_row(&mut temp).unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 2000);
        times.push(clock.now() - t0);
        r.release(&mut temp).unwrap();
    }
    // ~100 clusters: ~0.2 ms each one at a time; in parallel bounded by 2 x 28 MB/s.
    assert!(times[1] * 3 < times[0], "{times:?}");
}
