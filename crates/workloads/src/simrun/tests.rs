use super::*;
use crate::synthetic::Pattern;
use flashsim::{FdpConfig, ZnsConfig};

const MIB: u64 = 1 << 20;

fn small(timing: bool) -> SsdConfig {
    let mut cfg = SsdConfig::small(32 * MIB, 0.15);
    cfg.timing.enabled = timing;
    cfg
}

fn wl(pattern: Pattern) -> Workload {
    Workload {
        pattern,
        ..Workload::default()
    }
}

fn params(multiple: f64) -> RunParams {
    RunParams {
        capacity_multiple: multiple,
        queue_depth: 8,
        ..RunParams::default()
    }
}

#[derive(Default)]
struct Record {
    phases: Vec<Phase>,
    progress: Vec<(u64, u64)>,
    rows: usize,
}

impl RunObserver for Record {
    fn phase(&mut self, phase: Phase) {
        self.phases.push(phase);
    }
    fn progress(&mut self, done: u64, total: u64) {
        self.progress.push((done, total));
    }
    fn row(&mut self, _row: &IntervalRow) {
        self.rows += 1;
    }
}

#[test]
fn uniform_run_amplifies_and_reports_every_interval() {
    let mut rec = Record::default();
    let s = run(small(false), &wl(Pattern::Uniform), &params(2.0), &mut rec).unwrap();
    assert_eq!(s.rows.len(), 8);
    assert_eq!(rec.rows, 8);
    assert_eq!(rec.phases, [Phase::Precondition, Phase::Run]);
    let cap = s.capacity.logical_bytes;
    assert_eq!(s.run.host_write_bytes, 2 * cap);
    assert_eq!(s.precondition.as_ref().unwrap().host_write_bytes, cap);
    assert!((s.precondition.as_ref().unwrap().waf - 1.0).abs() < 1e-9);
    assert!(s.waf_cumulative > 1.2, "{}", s.waf_cumulative);
    assert!(s.waf_steady >= s.rows[0].waf_interval * 0.9);
    assert!(s.counters.gc_runs > 0);
    assert_eq!(s.rows.last().unwrap().waf_cumulative, s.waf_cumulative);
    // Progress is monotone and ends at the total.
    assert!(rec.progress.windows(2).all(|w| w[0].0 <= w[1].0));
    assert_eq!(rec.progress.last().unwrap(), &(3 * cap, 3 * cap));
    assert!(s.rows.iter().all(|r| r.virtual_time_s.is_none()));
}

#[test]
fn runs_are_deterministic() {
    let mut w = wl(Pattern::Zipf { theta: 0.9 });
    w.read_share = 0.2;
    let a = run(small(true), &w, &params(1.0), &mut Quiet).unwrap();
    let b = run(small(true), &w, &params(1.0), &mut Quiet).unwrap();
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    w.seed += 1;
    let c = run(small(true), &w, &params(1.0), &mut Quiet).unwrap();
    assert_ne!(a.counters, c.counters);
}

#[test]
fn sequential_writes_do_not_amplify_and_skew_helps() {
    let seq = run(
        small(false),
        &wl(Pattern::Sequential),
        &params(2.0),
        &mut Quiet,
    )
    .unwrap();
    assert!(
        (seq.waf_cumulative - 1.0).abs() < 1e-9,
        "{}",
        seq.waf_cumulative
    );
    let uni = run(
        small(false),
        &wl(Pattern::Uniform),
        &params(2.0),
        &mut Quiet,
    )
    .unwrap();
    let hc = run(
        small(false),
        &wl(Pattern::HotCold { r: 0.95, f: 0.05 }),
        &params(2.0),
        &mut Quiet,
    )
    .unwrap();
    assert!(
        hc.waf_steady < uni.waf_steady,
        "{} vs {}",
        hc.waf_steady,
        uni.waf_steady
    );
}

#[test]
fn timing_gives_virtual_time_latency_and_throughput() {
    let mut w = wl(Pattern::Uniform);
    w.read_share = 0.3;
    let s = run(small(true), &w, &params(1.0), &mut Quiet).unwrap();
    assert!(s.run.virtual_elapsed_ns.unwrap() > 0);
    assert!(s.run.write_mb_s.unwrap() > 0.0);
    assert!(s.run.read_mb_s.unwrap() > 0.0);
    assert!(s.write_latency.count > 0 && s.read_latency.count > 0);
    assert!(s.write_latency.p99_ns >= s.write_latency.p50_ns);
    assert!(s.rows.iter().all(|r| r.virtual_time_s.is_some()));
    assert!(s.wear.elapsed_ns > 0);
    // Latency histograms cover the measured run only.
    assert_eq!(
        s.write_latency.count + s.read_latency.count,
        s.run.write_ops + s.run.read_ops
    );
}

#[test]
fn zns_runs_have_waf_one_and_reset_zones() {
    let mut cfg = small(true);
    cfg.mode = Mode::Zns(ZnsConfig {
        zone_eus: 2,
        max_open_zones: 4,
        max_active_zones: 4,
    });
    let mut w = wl(Pattern::Zipf { theta: 0.99 });
    w.read_share = 0.25;
    w.write_size_bytes = 12288;
    let s = run(cfg, &w, &params(2.0), &mut Quiet).unwrap();
    assert_eq!(s.mode, "zns");
    assert_eq!(s.waf_cumulative, 1.0);
    assert_eq!(s.waf_steady, 1.0);
    assert!(s.rows.iter().all(|r| r.waf_interval == 1.0));
    assert!(s.counters.zone_resets > 0);
    assert_eq!(s.counters.gc_runs, 0);
    assert_eq!(s.params.open_zones, Some(4));
    assert!(s.run.read_ops > 0);
}

#[test]
fn fdp_streams_use_every_handle() {
    let mut cfg = SsdConfig::small(32 * MIB, 0.25);
    cfg.timing.enabled = false;
    cfg.mode = Mode::Fdp(FdpConfig { handles: 4 });
    let s = run(
        cfg,
        &wl(Pattern::Streams { k: 4 }),
        &params(2.0),
        &mut Quiet,
    )
    .unwrap();
    assert_eq!(s.handles.len(), 4);
    assert!(s.handles.iter().all(|h| h.host_write_bytes > 0));
    // Each stream overwrites its own region in order, in its own reclaim units.
    assert!(s.waf_steady < 1.05, "{}", s.waf_steady);
}

#[test]
fn without_precondition_the_run_starts_empty() {
    let p = RunParams {
        precondition: false,
        capacity_multiple: 0.5,
        interval_capacity_fraction: 0.3,
        ..params(0.5)
    };
    let s = run(small(false), &wl(Pattern::Uniform), &p, &mut Quiet).unwrap();
    assert!(s.precondition.is_none());
    assert_eq!(
        s.rows.len(),
        2,
        "one full interval and the partial last one"
    );
    assert!(s.fill < 0.5);
}

#[test]
fn bad_parameters_are_errors() {
    let w = wl(Pattern::Uniform);
    let mut p = params(0.0);
    assert!(matches!(
        run(small(false), &w, &p, &mut Quiet),
        Err(RunError::BadParam {
            field: "capacity_multiple",
            ..
        })
    ));
    p = params(1.0);
    p.queue_depth = 0;
    assert!(run(small(false), &w, &p, &mut Quiet).is_err());
    let mut w2 = w.clone();
    w2.read_share = 1.0;
    let e = run(small(false), &w2, &params(1.0), &mut Quiet).unwrap_err();
    assert!(e.to_string().contains("never writes"), "{e}");
    let mut w3 = w.clone();
    w3.write_size_bytes = 2048;
    assert!(run(small(false), &w3, &params(1.0), &mut Quiet).is_err());
    let mut cfg = small(false);
    cfg.mapping_unit_bytes = 3000;
    assert!(matches!(
        run(cfg, &w, &params(1.0), &mut Quiet),
        Err(RunError::Sim(SimError::Config(_)))
    ));
}

#[test]
fn progress_fn_adapter_forwards() {
    let mut calls = 0u32;
    let mut last = (0, 0);
    let mut obs = ProgressFn(|d, t| {
        calls += 1;
        last = (d, t);
    });
    run(small(false), &wl(Pattern::Uniform), &params(0.5), &mut obs).unwrap();
    assert!(calls > 100);
    assert_eq!(last.0, last.1);
}

/// The steady WAF is the last full interval's: a run stopped a tenth of an interval past a
/// boundary does not report that tenth alone.
#[test]
fn steady_waf_merges_a_short_last_interval() {
    let row = |host: u64, waf: f64| IntervalRow {
        host_write_bytes: host,
        host_written_gib: 0.0,
        capacity_multiple: 0.0,
        waf_interval: waf,
        waf_cumulative: 0.0,
        gc_runs: 0,
        eu_erases: 0,
        free_eus: 0,
        virtual_time_s: None,
        write_mb_s: None,
        read_mb_s: None,
        ops_per_s: None,
    };
    let rows = [row(100, 3.0), row(200, 4.0), row(210, 9.0)];
    let w = steady_waf(&rows, 100).unwrap();
    assert!((w - (4.0 * 100.0 + 9.0 * 10.0) / 110.0).abs() < 1e-9, "{w}");
    assert_eq!(steady_waf(&rows[..2], 100), Some(4.0));
    assert_eq!(steady_waf(&[], 100), None);
    // A run of 0.6 capacity with quarter intervals ends with a 0.1 interval: merged.
    let s = run(
        small(false),
        &wl(Pattern::Uniform),
        &params(0.6),
        &mut Quiet,
    )
    .unwrap();
    let n = s.rows.len();
    assert_eq!(n, 3, "rows at 0.25, 0.5 and 0.6 of the capacity");
    assert_ne!(s.waf_steady, s.rows[2].waf_interval);
}
