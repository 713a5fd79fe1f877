//! TPC-C on the engine at small scale: consistency after the load and after a run of every
//! write-path configuration, the transaction mix, determinism, the steady-size mode, a power cut
//! in the middle of a run (recovery keeps every committed New-Order and the conditions hold), and
//! the wall-clock driver.

use std::collections::BTreeSet;
use wafer_engine::device::{
    FaultConfig, FaultDevice, FaultHandle, Handle, SharedDevice, SimDevice, VirtualClock,
};
use wafer_engine::{Db, DbConfig, Devices, OpenMode};
use wafer_workloads::bench::vtime::Silent;
use wafer_workloads::bench::Preset;
use wafer_workloads::tpcc::schema::{key, Order, Row};
use wafer_workloads::tpcc::{
    check, load, run_vtime, run_wall, SizeMode, Tables, Terminal, TpccBenchConfig, TpccConfig,
    TpccSummary, TpccWallConfig, TxnKind,
};

fn small(preset: Preset, warehouses: u32, scale: f64, mode: SizeMode, ops: u64) -> TpccBenchConfig {
    let tpcc = TpccConfig {
        warehouses,
        scale,
        mode,
        seed: 11,
        abort_fraction: 0.0,
    };
    let mut cfg = TpccBenchConfig::new(preset, tpcc, 64 << 20, 0.1);
    cfg.run.max_ops = Some(ops);
    cfg.run.capacity_multiple = 1000.0;
    cfg.run.clients = 8;
    cfg
}

fn assert_checks(s: &TpccSummary) {
    for (when, r) in [("load", &s.check_after_load), ("run", &s.check_after_run)] {
        let r = r.as_ref().expect("checks on");
        assert!(
            r.passed(),
            "{} after {when}: {}",
            s.bench.name,
            r.describe()
        );
        assert!(r.conditions.iter().take(4).all(|c| c.checked > 0));
    }
}

#[test]
fn the_mix_matches_the_specification() {
    let s = run_vtime(
        "mix",
        &small(Preset::InPlaceNoDw, 2, 0.02, SizeMode::Growing, 6000),
        &mut Silent,
    )
    .unwrap();
    assert_checks(&s);
    assert!(s.txns.total() >= 5000, "{}", s.txns.total());
    for (i, k) in TxnKind::ALL.iter().enumerate() {
        let want = TxnKind::MIX_PERCENT[i] as f64;
        assert!(
            (s.mix_percent[i] - want).abs() <= 1.0,
            "{} is {:.2}%, want {want}%",
            k.name(),
            s.mix_percent[i]
        );
    }
    eprintln!(
        "mix over {} transactions: {:?}",
        s.txns.total(),
        s.mix_percent
    );
    assert!(s.txns.rolled_back > 0, "1% of New-Orders roll back");
    assert!(s.tpmc > 0.0 && s.new_orders == s.txns.completed[0]);
    assert!(s.series.len() >= 2 && s.media_bytes_per_new_order > 0.0);
}

#[test]
fn every_configuration_keeps_consistency() {
    // The write paths (in place with and without doublewrite, out of place plain and with every
    // optimization, on ZNS and FDP), with plain and hot-page-aware checkpoints, in both size
    // modes.
    for preset in [
        Preset::InPlace,
        Preset::InPlaceNoDw,
        Preset::Oop,
        Preset::OopAll,
        Preset::Zns,
        Preset::Fdp,
        Preset::Flushless,
        Preset::OopAllFlushless,
    ] {
        for (mode, max_checkpoint_count) in [
            (SizeMode::Growing, 0),
            (SizeMode::Growing, 2),
            (SizeMode::Steady, 0),
        ] {
            // Hot-page-aware checkpoints are an ARIES-mode policy.
            if preset.flushless() && max_checkpoint_count > 0 {
                continue;
            }
            let mut cfg = small(preset, 2, 0.02, mode, 1500);
            // The run's log space is its buffer pool (1 MiB here): checkpoints, and their
            // deferrals, happen during the run.
            cfg.engine.max_checkpoint_count = max_checkpoint_count;
            let s = run_vtime(preset.name(), &cfg, &mut Silent).unwrap();
            assert_checks(&s);
            if preset.out_of_place().is_none() {
                let dw = if preset.doublewrite() { 2.0 } else { 1.0 };
                // Pages give exactly `dw`; each checkpoint adds one 4 KiB header block (the
                // checkpoint stamp of the database identity). The flushless mode logs a
                // checkpoint after every compaction (Figure 4), so it stamps more often.
                let waf = s.bench.run.db_waf;
                let stamps = if preset.flushless() { 0.1 } else { 0.02 };
                assert!(
                    waf >= dw - 1e-9 && waf < dw + stamps,
                    "DB WAF {waf}, pages give {dw}"
                );
            }
            eprintln!(
                "{} {mode:?} max_checkpoint_count {max_checkpoint_count}: {} txns, checkpoint share {:.2}, {}",
                preset.name(),
                s.txns.total(),
                s.bench.run.checkpoint_flush_share,
                s.check_after_run.as_ref().unwrap().describe()
            );
        }
    }
}

#[test]
fn same_seed_same_summary() {
    let cfg = small(Preset::InPlace, 1, 0.02, SizeMode::Growing, 1500);
    let a = serde_json::to_string(&run_vtime("a", &cfg, &mut Silent).unwrap()).unwrap();
    let b = serde_json::to_string(&run_vtime("a", &cfg, &mut Silent).unwrap()).unwrap();
    assert_eq!(a, b);
    let mut other = cfg.clone();
    other.tpcc.seed += 1;
    let c = serde_json::to_string(&run_vtime("a", &other, &mut Silent).unwrap()).unwrap();
    assert_ne!(a, c);
}

#[test]
fn steady_mode_bounds_the_database() {
    let ops = 24_000;
    let steady = run_vtime(
        "steady",
        &small(Preset::InPlaceNoDw, 1, 0.02, SizeMode::Steady, ops),
        &mut Silent,
    )
    .unwrap();
    let growing = run_vtime(
        "growing",
        &small(Preset::InPlaceNoDw, 1, 0.02, SizeMode::Growing, ops),
        &mut Silent,
    )
    .unwrap();
    assert_checks(&steady);
    assert_checks(&growing);
    // The steady-size deck is 44.5/43/4/4.5/4: still within a point of the standard mix.
    for (i, want) in TxnKind::MIX_PERCENT.iter().enumerate() {
        assert!((steady.mix_percent[i] - *want as f64).abs() <= 1.0);
    }
    let pages = |s: &TpccSummary| -> Vec<u64> { s.series.iter().map(|p| p.pages_used).collect() };
    let (sp, gp) = (pages(&steady), pages(&growing));
    eprintln!(
        "pages after load {}: steady {sp:?}, growing {gp:?}",
        steady.pages_after_load
    );
    let half = sp[sp.len() / 2];
    let end = *sp.last().unwrap();
    assert!(
        end as f64 <= half as f64 * 1.05,
        "steady mode keeps growing: {half} pages at mid-run, {end} at the end"
    );
    assert!(
        growing.pages_at_end as f64 > 1.5 * steady.pages_at_end as f64,
        "growing {} vs steady {}",
        growing.pages_at_end,
        steady.pages_at_end
    );
}

/// One simulated SSD behind a fault injector, split into a data and a log device.
struct CrashRig {
    fault: Handle<FaultDevice<SimDevice>>,
    power: FaultHandle,
    shared: SharedDevice,
}

const DATA_BYTES: u64 = 48 << 20;
const LOG_BYTES: u64 = 8 << 20;

impl CrashRig {
    fn new(seed: u64, torn: bool) -> CrashRig {
        let mut ssd = flashsim::SsdConfig::small(DATA_BYTES + LOG_BYTES, 0.2);
        ssd.timing.enabled = false;
        let sim = SimDevice::new(ssd, VirtualClock::shared()).unwrap();
        let dev = FaultDevice::new(
            sim,
            FaultConfig {
                seed,
                torn_writes: torn,
                lose_unflushed: true,
                ..FaultConfig::default()
            },
        );
        let power = dev.handle();
        let fault = Handle::new(dev);
        let shared = SharedDevice::shared(fault.clone());
        CrashRig {
            fault,
            power,
            shared,
        }
    }

    fn devices(&self) -> Devices {
        let mut p = self.shared.split(&[DATA_BYTES, LOG_BYTES]).unwrap();
        let log = p.pop().unwrap();
        let data = p.pop().unwrap();
        Devices::new(Box::new(data), Box::new(log))
    }
}

fn crash_db_config(preset: Preset, mode: OpenMode) -> DbConfig {
    DbConfig {
        open_mode: mode,
        buffer_pages: 96,
        doublewrite: preset.doublewrite(),
        log_space_bytes: Some(2 << 20),
        checkpoint_log_fill: 0.3,
        flushless: preset.flushless().then(Default::default),
        ..DbConfig::default()
    }
}

fn crash_once(preset: Preset, seed: u64, cut_after: u64) {
    let tpcc = TpccConfig {
        warehouses: 2,
        scale: 0.01,
        mode: SizeMode::Growing,
        seed,
        abort_fraction: 0.0,
    };
    let rig = CrashRig::new(seed, preset.doublewrite());
    let db = Db::open(
        rig.devices(),
        crash_db_config(preset, OpenMode::OpenOrCreate),
    )
    .unwrap();
    let (tables, _) = load(&db, &tpcc, &mut |_| {}).unwrap();
    db.checkpoint().unwrap();
    let mut terms: Vec<Terminal> = (0..4).map(|i| Terminal::new(&tpcc, i)).collect();
    let mut committed = BTreeSet::new();
    let mut steps = 0u64;
    let mut armed_at = None;
    let mut after_arm = 0;
    'run: loop {
        for term in terms.iter_mut() {
            steps += 1;
            if steps == 300 {
                let now = rig.power.commands();
                rig.power.cut_power_at(Some(now + cut_after));
                armed_at = Some(steps);
            }
            if steps.is_multiple_of(25) && db.maintenance().is_err() {
                break 'run;
            }
            match term.step(&db, &tables, steps) {
                Ok(out) => {
                    if let Some(no) = out.exec.and_then(|e| e.new_order) {
                        committed.insert(no);
                        after_arm += armed_at.is_some() as u32;
                    }
                }
                Err(_) => break 'run,
            }
            assert!(steps < 200_000, "the power was never cut");
        }
    }
    drop(tables);
    drop(db);
    assert!(rig.power.is_powered_off());
    let report = rig.fault.lock().crash();
    let db = Db::open(rig.devices(), crash_db_config(preset, OpenMode::Open)).unwrap_or_else(|e| {
        panic!(
            "{} seed {seed}: reopen failed: {e} ({report:?})",
            preset.name()
        )
    });
    db.verify().unwrap();
    let tables = Tables::open(&db).unwrap();
    let r = check(&db, &tables, &tpcc).unwrap();
    assert!(
        r.passed(),
        "{} seed {seed} cut {cut_after}: {}",
        preset.name(),
        r.describe()
    );
    let mut t = db.begin().unwrap();
    for &(w, d, o) in &committed {
        let v = t.get(&tables.orders, &key::order(w, d, o)).unwrap();
        assert!(
            v.is_some_and(|v| Order::decode(&v).is_ok()),
            "{} seed {seed}: committed order {w}/{d}/{o} lost",
            preset.name()
        );
    }
    t.commit().unwrap();
    eprintln!(
        "{} seed {seed} cut {cut_after}: {steps} steps, {} committed New-Orders ({after_arm} after arming), unflushed {} lost {} torn {}",
        preset.name(),
        committed.len(),
        report.unflushed,
        report.lost,
        report.torn.is_some()
    );
    // The recovered database runs on.
    let mut term = Terminal::new(&tpcc, 9);
    for i in 0..200 {
        term.step(&db, &tables, 1_000_000 + i).unwrap();
    }
    assert!(check(&db, &tables, &tpcc).unwrap().passed());
}

#[test]
fn power_cut_in_the_middle_of_a_run_recovers_consistently() {
    for preset in Preset::ALL {
        for (seed, cut) in [(1u64, 40u64), (2, 700), (3, 2500), (4, 9000)] {
            crash_once(preset, seed, cut);
        }
    }
}

#[test]
fn wall_clock_driver_runs_consistently() {
    let r = run_wall(&TpccWallConfig {
        tpcc: TpccConfig {
            warehouses: 2,
            scale: 0.01,
            ..TpccConfig::default()
        },
        threads: 3,
        duration_ms: 300,
        engine: wafer_engine::DbConfig {
            doublewrite: true,
            ..wafer_engine::DbConfig::default()
        },
    })
    .unwrap();
    assert!(r.check.passed(), "{}", r.check.describe());
    assert!(r.txns.new_orders() > 0 && r.tpmc > 0.0);
    eprintln!(
        "wall: {:.0} tpmC, {:.0} txn/s, mix {:?}, conflicts {:?}",
        r.tpmc, r.txns_per_s, r.mix_percent, r.txns.conflicts
    );
}

/// The knobs of paper 001's experiments: terminals roll back `abort_fraction` of their
/// transactions after doing the work (the database stays consistent, and the rolled-back
/// New-Orders are not counted), and group commit by log-buffer fill shares log flushes in both
/// buffer modes without changing what commits.
#[test]
fn abort_fraction_and_group_commit_by_buffer_fill() {
    for preset in [Preset::InPlace, Preset::Flushless] {
        let mut cfg = small(preset, 1, 0.02, SizeMode::Growing, 2000);
        cfg.tpcc.abort_fraction = 0.2;
        let s = run_vtime(preset.name(), &cfg, &mut Silent).unwrap();
        assert_checks(&s);
        let share = s.txns.user_aborts as f64 / (s.txns.total() + s.txns.user_aborts) as f64;
        assert!((0.15..0.25).contains(&share), "{preset:?}: {share}");
        if let Some(f) = &s.flushless {
            assert!(f.aborts >= s.txns.user_aborts, "{f:?}");
        }

        let mut cfg = small(preset, 1, 0.02, SizeMode::Growing, 2000);
        let immediate = run_vtime(preset.name(), &cfg, &mut Silent).unwrap();
        cfg.run.group_commit_delay_us = 1000;
        cfg.run.group_commit_min_fill = 0.5;
        let grouped = run_vtime(preset.name(), &cfg, &mut Silent).unwrap();
        assert_checks(&grouped);
        // The stop rule is checked every 64 steps and counts commits as their group finishes.
        let (g, i) = (grouped.txns.total(), immediate.txns.total());
        assert!(
            g.abs_diff(i) < 100,
            "{preset:?}: {g} transactions grouped, {i} immediate"
        );
        let flushes = |s: &TpccSummary| {
            let log = s.bench.devices.iter().find(|d| d.role == "log").unwrap();
            log.flushes
        };
        // (Fewer, not a fraction: the ARIES mode also forces the log before writing a page whose
        // changes are not durable, which deferred commits make more frequent.)
        assert!(
            flushes(&grouped) < flushes(&immediate),
            "{preset:?}: {} log flushes grouped, {} immediate",
            flushes(&grouped),
            flushes(&immediate)
        );
    }
}

/// The log role on flashsim's disk model: the run stays consistent and recovers after a crash,
/// and its commits wait for the platter, so it is far slower than with the log SSD.
#[test]
fn log_on_the_disk_model() {
    let mut flash = small(Preset::InPlaceNoDw, 1, 0.02, SizeMode::Growing, 1500);
    flash.crash_at_end = true;
    let mut disk = flash.clone();
    disk.log_disk = Some(flashsim::HddConfig::barracuda_7200_10().with_write_cache(0));
    let f = run_vtime("flash log", &flash, &mut Silent).unwrap();
    let d = run_vtime("disk log", &disk, &mut Silent).unwrap();
    for s in [&f, &d] {
        // With --crash-at-end the run's check is made on the recovered database.
        assert_checks(s);
        assert!(s.recovery.is_some(), "{}", s.bench.name);
    }
    assert!(d.tpmc * 3.0 < f.tpmc, "disk {} vs flash {}", d.tpmc, f.tpmc);
}
