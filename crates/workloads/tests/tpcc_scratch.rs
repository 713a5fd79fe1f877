use wafer_workloads::bench::vtime::Silent;
use wafer_workloads::bench::Preset;
use wafer_workloads::tpcc::*;

#[test]
fn scratch() {
    for (w, scale) in [(2u32, 0.02f64), (1, 0.1)] {
        let tpcc = TpccConfig { warehouses: w, scale, seed: 7, ..TpccConfig::default() };
        let est = driver::estimate_load_bytes(&tpcc);
        let mut cfg = TpccBenchConfig::new(Preset::InPlace, tpcc, 128 << 20, 0.1);
        cfg.run.max_ops = Some(5000);
        let t0 = std::time::Instant::now();
        let s = run_vtime("x", &cfg, &mut Silent).unwrap();
        eprintln!("w {w} scale {scale}: est {} MB, pages after load {} ({} MB), end {}, rows {}, {:?}",
            est / 1000000, s.pages_after_load, s.pages_after_load * 4096 / 1000000, s.pages_at_end, s.load.rows, t0.elapsed());
        eprintln!("  mix {:?} tpmc {:.0} txns {:?}", s.mix_percent, s.tpmc, s.txns);
        eprintln!("  check load {} / run {}", s.check_after_load.as_ref().unwrap().describe(), s.check_after_run.as_ref().unwrap().describe());
        eprintln!("  run waf db {:.2} ssd {:.2} media B/NO {:.0} hit {:.3}", s.bench.run.db_waf, s.bench.run.ssd_waf, s.media_bytes_per_new_order, s.bench.run.hit_ratio);
    }
}
