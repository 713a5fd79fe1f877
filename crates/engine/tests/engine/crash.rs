//! Crash tests on the simulated SSD: a random transactional workload runs until the power is cut
//! at the Nth device command (unflushed writes may be lost, the last one torn); the database is
//! reopened, recovered, and must hold exactly the committed transactions, with every page valid
//! and every tree well formed. Also: with the doublewrite buffer off, a torn page is detected by
//! its checksum and reopen fails with a clear error instead of returning wrong data; corrupted or
//! foreign devices give typed errors.

use crate::support::{key, small_eu_ssd, value, CrashRig, DualRig, MemPair, Oracle};
use flashsim::{FdpConfig, Mode, ZnsConfig};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::BTreeMap;
use wafer_engine::device::{BlockDevice, CommandKind, FaultConfig};
use wafer_engine::Codec;
use wafer_engine::OopConfig;
use wafer_engine::{Db, DbConfig, DbStats, Error, Tree};

pub(crate) const TREES: [&str; 2] = ["orders", "stock"];

pub(crate) fn config(doublewrite: bool) -> DbConfig {
    config_with(doublewrite, 0)
}

fn config_with(doublewrite: bool, max_checkpoint_count: u32) -> DbConfig {
    DbConfig {
        buffer_pages: 32,
        doublewrite,
        max_checkpoint_count,
        checkpoint_log_fill: 0.3,
        log_space_bytes: Some(1 << 20),
        ..DbConfig::default()
    }
}

/// Runs transactions until an operation fails (the power cut). Returns the committed state and
/// the possibly-committed state of the transaction whose commit was interrupted.
fn workload(db: &Db, seed: u64, oracle: &mut Oracle) -> Option<Oracle> {
    let trees: Vec<Tree> = TREES.iter().map(|n| db.open_tree(n).unwrap()).collect();
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    for i in 0..100_000u64 {
        let mut staged = oracle.clone();
        let Ok(mut t) = db.begin() else { return None };
        let n = rng.random_range(1..8);
        let mut aborted = false;
        for _ in 0..n {
            let tree = &trees[rng.random_range(0..trees.len())];
            let k = key(rng.random_range(0..300), 16);
            let r = if rng.random_bool(0.75) {
                let len = if rng.random_bool(0.03) {
                    5000
                } else {
                    rng.random_range(10..150)
                };
                let v = value(rng.random(), len);
                staged.put(tree.name(), &k, &v);
                t.put(tree, &k, &v).map(|_| ())
            } else {
                staged.delete(tree.name(), &k);
                t.delete(tree, &k).map(|_| ())
            };
            match r {
                Ok(()) => {}
                // The flushless mode's log table holds a transaction's changes until it ends: a
                // large one may not fit (nothing was changed; it aborts).
                Err(Error::TableFull(_)) => {
                    aborted = true;
                    break;
                }
                Err(e) => {
                    if !matches!(e, Error::Device(_) | Error::Poisoned(_)) {
                        panic!(
                            "the workload failed without a power cut: {e}\n{:#?}\n{:#?}",
                            db.stats().writes,
                            db.stats().flushless
                        );
                    }
                    return None;
                }
            }
        }
        if aborted || rng.random_bool(0.15) {
            if t.abort().is_err() {
                return None;
            }
            continue;
        }
        match t.commit() {
            Ok(()) => *oracle = staged,
            // The commit record may or may not have reached the log.
            Err(_) => return Some(staged),
        }
        if i % 40 == 39 && db.maintenance().is_err() {
            return None;
        }
    }
    panic!("the power was never cut");
}

fn state(db: &Db) -> Oracle {
    Oracle::read(db, &TREES)
}

fn crash_once(seed: u64, cut_after: u64, doublewrite: bool) {
    crash_once_with(seed, cut_after, config(doublewrite));
}

const OOP_DATA_BYTES: u64 = 640 << 10;

pub(crate) fn oop_config(o: OopConfig) -> DbConfig {
    DbConfig {
        doublewrite: false,
        out_of_place: Some(OopConfig {
            zone_bytes: 16 * 1024,
            max_open_zones: 2,
            batch_pages: 8,
            ..o
        }),
        ..config(false)
    }
}

/// The crash test of the engine core on the out-of-place path: plain, with compression and
/// GDT, and with NoWA (whose compensation writes run on this small device). Power cuts land
/// during page batches, DB GC and compensation writes; the committed state must come back.
#[test]
fn power_cut_out_of_place_recovers_committed_state() {
    let variants = [
        OopConfig::default(),
        OopConfig {
            codec: Codec::Lz4,
            gdt: true,
            ..OopConfig::default()
        },
        OopConfig {
            codec: Codec::Lz4,
            gdt: true,
            nowa: true,
            ..OopConfig::default()
        },
    ];
    let (mut gc, mut comp, mut reclaimed) = (0u64, 0u64, 0u64);
    for (v, o) in variants.iter().enumerate() {
        for seed in 0..6u64 {
            for cut in [40u64, 300, 1200, 4000] {
                let s = crash_once_with(
                    seed * 5 + v as u64 * 101 + 2,
                    cut + seed * 19,
                    oop_config(o.clone()),
                );
                if let Some(s) = s {
                    gc += s.writes.gc_rounds;
                    reclaimed += s.writes.zones_reclaimed;
                    comp += s.writes.compensation_rounds;
                }
            }
        }
    }
    eprintln!(
        "before the cuts: GC rounds {gc}, compensation rounds {comp}, zones reclaimed {reclaimed}"
    );
    assert!(gc > 0, "power cuts never met DB GC");
}

fn crash_once_with(seed: u64, cut_after: u64, cfg: DbConfig) -> Option<DbStats> {
    // Out of place, a small data device makes DB GC (and NoWA compensation) run often, so power
    // cuts land in the middle of it.
    let data_bytes = if cfg.out_of_place.is_some() {
        OOP_DATA_BYTES
    } else {
        crate::support::DATA_BYTES
    };
    let rig = CrashRig::sized(
        FaultConfig {
            seed,
            power_cut_after: None,
            torn_writes: true,
            lose_unflushed: true,
            ..FaultConfig::default()
        },
        data_bytes,
    );
    let db = Db::open(rig.devices(), cfg.clone()).unwrap();
    for n in TREES {
        db.create_tree(n).unwrap();
    }
    let mut oracle = Oracle::new(&TREES);
    {
        let f = rig.fault.lock();
        f.handle().cut_power_at(Some(f.commands() + cut_after));
    }
    let maybe = workload(&db, seed, &mut oracle);
    let before = db.stats();
    drop(db);
    let report = rig.fault.lock().crash();
    assert!(report.was_powered_off);
    let db = match Db::open(rig.devices(), cfg) {
        Ok(db) => db,
        Err(e) => panic!("seed {seed} cut {cut_after}: reopen failed: {e} ({report:?})"),
    };
    db.verify().unwrap();
    let rec = db.stats().recovery.expect("recovery ran");
    eprintln!(
        "seed {seed} cut {cut_after}: committed rows {}, unflushed {}, lost {}, torn {}, redo {} applied {}, undo txns {}",
        oracle.row_count(),
        report.unflushed,
        report.lost,
        report.torn.is_some(),
        rec.redo_records,
        rec.redo_applied,
        rec.undo_txns
    );
    let got = state(&db);
    let ok = got == oracle || maybe.as_ref().is_some_and(|m| *m == got);
    assert!(
        ok,
        "seed {seed} cut {cut_after}: recovered state is not the committed state"
    );
    // The recovered database keeps working.
    let t = db.open_tree(TREES[0]).unwrap();
    let mut x = db.begin().unwrap();
    x.put(&t, b"after", b"crash").unwrap();
    x.commit().unwrap();
    // The counters before the cut, with the report of the recovery after it.
    Some(DbStats {
        recovery: Some(rec),
        ..before
    })
}

/// Where a crash test cuts power: at the Nth device command from the start of the workload, or
/// at the Nth command of one kind from then.
#[derive(Clone, Copy, Debug)]
enum Cut {
    After(u64),
    Nth(CommandKind, u64),
}

/// What one crash test on a data SSD did, for the totals that show the cuts met what they
/// are meant to meet.
#[derive(Default)]
struct Tally {
    /// "data:Kind" / "log:Kind" -> cuts that landed on such a command.
    landed: BTreeMap<String, u32>,
    gc_rounds: u64,
    zones_reclaimed: u64,
    zones_rebuilt: u64,
    torn: u64,
    lost: u64,
}

impl Tally {
    fn landed(&self, key: &str) -> u32 {
        self.landed.get(key).copied().unwrap_or(0)
    }
}

/// The out-of-place crash test on a data SSD of any mode (`ssd`; the log on its own SSD in the
/// same power domain): the workload runs until the cut, both devices crash, and the reopened
/// database holds the committed state.
fn crash_on_device(
    seed: u64,
    cut: Cut,
    ssd: flashsim::SsdConfig,
    cfg: DbConfig,
    tally: &mut Tally,
) {
    let rig = DualRig::new(
        FaultConfig {
            seed,
            torn_writes: true,
            lose_unflushed: true,
            ..FaultConfig::default()
        },
        ssd,
    );
    let db = Db::open(rig.devices(), cfg.clone()).unwrap();
    for n in TREES {
        db.create_tree(n).unwrap();
    }
    let mut oracle = Oracle::new(&TREES);
    let power = rig.power();
    match cut {
        Cut::After(n) => power.cut_power_at(Some(power.commands() + n)),
        Cut::Nth(kind, n) => power.cut_power_at_nth(kind, Some(power.commands_of(kind) + n)),
    }
    let maybe = workload(&db, seed, &mut oracle);
    let before = db.stats();
    drop(db);
    let (data, log) = rig.crash();
    let landed = match (data.cut_command, log.cut_command) {
        (Some(k), _) => format!("data:{k:?}"),
        (None, Some(k)) => format!("log:{k:?}"),
        (None, None) => panic!("seed {seed} {cut:?}: the armed cut never fired"),
    };
    assert!(data.was_powered_off);
    assert!(
        data.restore_error.is_none() && log.restore_error.is_none(),
        "seed {seed} {cut:?}: the crash could not restore the devices: {data:?} {log:?}"
    );
    let db = match Db::open(rig.devices(), cfg) {
        Ok(db) => db,
        Err(e) => panic!("seed {seed} {cut:?} (on {landed}): reopen failed: {e} ({data:?})"),
    };
    db.verify().unwrap();
    let got = state(&db);
    let ok = got == oracle || maybe.as_ref().is_some_and(|m| *m == got);
    assert!(
        ok,
        "seed {seed} {cut:?} (on {landed}): recovered state is not the committed state"
    );
    eprintln!(
        "seed {seed} {cut:?}: on {landed}, data unflushed {} lost {} torn {} zones rebuilt {}",
        data.unflushed,
        data.lost,
        data.torn.is_some(),
        data.zones_rebuilt
    );
    let t = db.open_tree(TREES[0]).unwrap();
    let mut x = db.begin().unwrap();
    x.put(&t, b"after", b"crash").unwrap();
    x.commit().unwrap();
    *tally.landed.entry(landed).or_default() += 1;
    tally.gc_rounds += before.writes.gc_rounds;
    tally.zones_reclaimed += before.writes.zones_reclaimed;
    tally.zones_rebuilt += data.zones_rebuilt;
    tally.torn += data.torn.is_some() as u64;
    tally.lost += data.lost;
}

/// Cuts for the zoned and FDP runs: the conventional test's command numbers, and cuts aimed at
/// the `n`th command of each of `kinds` (so they cannot all miss the commands under test).
fn cuts(seed: u64, kinds: &[CommandKind]) -> Vec<Cut> {
    let mut c: Vec<Cut> = [40u64, 300, 1200, 4000]
        .iter()
        .map(|&n| Cut::After(n + seed * 19))
        .collect();
    for &k in kinds {
        for n in [1u64, 4, 25] {
            c.push(Cut::Nth(k, n + seed * 3));
        }
    }
    c
}

/// Plain, compression + GDT, and NoWA (as in the conventional out-of-place crash test).
fn oop_variants() -> [OopConfig; 3] {
    [
        OopConfig::default(),
        OopConfig {
            codec: Codec::Lz4,
            gdt: true,
            ..OopConfig::default()
        },
        OopConfig {
            codec: Codec::Lz4,
            gdt: true,
            nowa: true,
            ..OopConfig::default()
        },
    ]
}

/// Runs the crash test over both variants, 5 seeds and `cuts` on data SSDs from `ssd`.
fn crash_matrix(
    ssd: impl Fn() -> flashsim::SsdConfig,
    kinds: &[CommandKind],
    seed_base: u64,
) -> Tally {
    let mut tally = Tally::default();
    for (v, o) in oop_variants().iter().enumerate() {
        for seed in 0..5u64 {
            for cut in cuts(seed, kinds) {
                crash_on_device(
                    seed * 5 + v as u64 * 101 + seed_base,
                    cut,
                    ssd(),
                    oop_config(o.clone()),
                    &mut tally,
                );
            }
        }
    }
    eprintln!(
        "cuts landed on {:?}; before the cuts: GC rounds {}, zones reclaimed {}; at the crashes: \
         zones rebuilt {}, torn {}, lost {}",
        tally.landed,
        tally.gc_rounds,
        tally.zones_reclaimed,
        tally.zones_rebuilt,
        tally.torn,
        tally.lost
    );
    assert!(tally.gc_rounds > 0, "power cuts never met DB GC");
    tally
}

/// The out-of-place crash test on a ZNS SSD (64 KiB zones): power cuts land in zone appends of
/// page batches, GC copies and map snapshots, and in zone resets (GC reclaim, snapshot slots);
/// unflushed appends are lost or torn and zones roll back to what survived.
#[test]
fn power_cut_out_of_place_on_zns_recovers_committed_state() {
    let mode = Mode::Zns(ZnsConfig {
        zone_eus: 1,
        max_open_zones: 6,
        max_active_zones: 6,
    });
    let t = crash_matrix(
        || small_eu_ssd(1 << 20, mode.clone()),
        &[CommandKind::ZoneAppend, CommandKind::ZoneReset],
        2,
    );
    assert!(t.landed("data:ZoneAppend") >= 20, "{:?}", t.landed);
    assert!(t.landed("data:ZoneReset") >= 20, "{:?}", t.landed);
    assert!(t.zones_rebuilt > 0 && t.torn > 0, "zones never rolled back");
}

/// The out-of-place crash test on an FDP SSD (64 KiB reclaim units, 4 placement ids): power
/// cuts land in placed writes and in trims of reclaimed zones.
#[test]
fn power_cut_out_of_place_on_fdp_recovers_committed_state() {
    let mode = Mode::Fdp(FdpConfig { handles: 4 });
    let t = crash_matrix(
        || small_eu_ssd(OOP_DATA_BYTES, mode.clone()),
        &[CommandKind::Write, CommandKind::Trim],
        1,
    );
    assert!(t.landed("data:Write") >= 10, "{:?}", t.landed);
    assert!(t.landed("data:Trim") >= 10, "{:?}", t.landed);
}

#[test]
fn power_cut_at_many_points_recovers_committed_state() {
    for seed in 0..12u64 {
        for cut in [5u64, 37, 150, 420, 999, 2500] {
            crash_once(seed * 7 + 1, cut + seed * 13, true);
        }
    }
}

/// The log format of earlier builds, whole page images and no page operations
/// (`log_image_holes` and `log_page_ops` off): recovery rebuilds the same pages, with and
/// without doublewrite and out of place. (The other tests run with both on, the default.)
#[test]
fn power_cut_with_whole_page_images_recovers_committed_state() {
    for seed in 0..6u64 {
        for cut in [37u64, 420, 2500] {
            let whole = |c: DbConfig| DbConfig {
                log_image_holes: false,
                log_page_ops: false,
                ..c
            };
            crash_once_with(seed * 5 + 3, cut + seed * 11, whole(config(seed % 2 == 0)));
            crash_once_with(seed * 5 + 4, cut, whole(oop_config(OopConfig::default())));
        }
    }
}

/// Leaf splits made beside other threads (`LeafSplits::Beside`: on this one thread every split a
/// plain put meets is made so) under power cuts amid merges and overflow values, in place (with and without doublewrite, page
/// operations and whole images) and out of place: a cut between a split and the posting of its
/// separator leaves a flagged leaf that recovery finds in the log and posts; the committed state
/// must come back and every tree verify.
#[test]
fn power_cut_with_leaf_splits_beside_recovers_committed_state() {
    let beside = |c: DbConfig| DbConfig {
        leaf_splits: wafer_engine::LeafSplits::Beside,
        ..c
    };
    let (mut splits, mut posted) = (0, 0);
    for seed in 0..6u64 {
        for cut in [37u64, 150, 420, 999, 2500] {
            let whole = DbConfig {
                log_image_holes: false,
                log_page_ops: false,
                ..config(true)
            };
            for cfg in [
                config(seed % 2 == 0),
                whole,
                oop_config(OopConfig::default()),
            ] {
                let s = crash_once_with(seed * 9 + 2, cut + seed * 17, beside(cfg));
                splits += s.as_ref().map_or(0, |s| s.engine.splits_beside);
                posted += s.and_then(|s| s.recovery).map_or(0, |r| r.splits_posted);
            }
        }
    }
    assert!(splits > 50, "only {splits} splits were made beside others");
    // With pools this small (a stock of two frames) and this many exclusive changes (merges,
    // overflow values), few splits are pending at a cut; `crash_sequential.rs` cuts long
    // chains of them.
    eprintln!("{splits} splits beside others, {posted} posted by recovery");
}

/// The flushless mode (paper 001) under power cuts, on both write paths: dirty pages are
/// dropped without a write, commits write only redo, aborts discard, and checkpoints compact the
/// log table; after a cut the restart reloads the committed records (no undo, no page writes)
/// and the lazy redo must give back exactly the committed state.
#[test]
fn power_cut_in_the_flushless_mode_recovers_committed_state() {
    let flushless = |cfg: DbConfig| DbConfig {
        buffer_pages: 64,
        flushless: Some(wafer_engine::FlushlessConfig {
            min_del: 4,
            ..wafer_engine::FlushlessConfig::default()
        }),
        ..cfg
    };
    let mut restarted = 0;
    for seed in 0..8u64 {
        for cut in [30u64, 250, 900, 2200] {
            for cfg in [
                config(true),
                oop_config(OopConfig::default()),
                oop_config(oop_variants()[2].clone()),
            ] {
                if crash_once_with(seed * 13 + 5, cut + seed * 11, flushless(cfg)).is_some() {
                    restarted += 1;
                }
            }
        }
    }
    assert_eq!(restarted, 8 * 4 * 3);
}

#[test]
fn power_cut_with_hot_page_aware_checkpointing_recovers_committed_state() {
    for seed in 0..8u64 {
        for cut in [60u64, 400, 1500] {
            crash_once_with(seed * 11 + 3, cut + seed * 17, config_with(true, 8));
        }
    }
}

#[test]
fn power_cut_without_doublewrite_recovers_or_reports_a_torn_page() {
    // Without the doublewrite buffer a torn page cannot be repaired: recovery must either
    // succeed (no page was torn) or fail with a CorruptPage error — never return wrong data.
    let mut detected = 0;
    for seed in 0..20u64 {
        let rig = CrashRig::new(FaultConfig {
            seed,
            torn_writes: true,
            lose_unflushed: true,
            ..FaultConfig::default()
        });
        let db = Db::open(rig.devices(), config(false)).unwrap();
        for n in TREES {
            db.create_tree(n).unwrap();
        }
        let mut oracle = Oracle::new(&TREES);
        {
            let f = rig.fault.lock();
            f.handle()
                .cut_power_at(Some(f.commands() + 300 + seed * 41));
        }
        let maybe = workload(&db, seed, &mut oracle);
        drop(db);
        rig.fault.lock().crash();
        match Db::open(rig.devices(), config(false)) {
            Ok(db) => {
                db.verify().unwrap();
                let got = state(&db);
                assert!(got == oracle || maybe.as_ref().is_some_and(|m| *m == got));
            }
            Err(Error::CorruptPage { .. }) => detected += 1,
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
    eprintln!("torn pages detected at reopen: {detected} of 20");
}

#[test]
fn torn_page_without_doublewrite_fails_reopen_with_a_clear_error() {
    let pair = MemPair::new();
    let cfg = DbConfig {
        doublewrite: false,
        buffer_pages: 16,
        log_space_bytes: Some(4 << 20),
        ..DbConfig::default()
    };
    let db = Db::open(pair.devices(), cfg.clone()).unwrap();
    let t = db.create_tree("t").unwrap();
    db.checkpoint().unwrap();
    // Changes after the checkpoint; the small pool evicts (writes) pages whose changes recovery
    // will have to redo.
    for c in 0..20u64 {
        let mut x = db.begin().unwrap();
        for i in c * 60..(c + 1) * 60 {
            x.put(&t, &key(i, 16), &value(i, 100)).unwrap();
        }
        x.commit().unwrap();
    }
    let written = db.stats().writes.eviction_writes;
    assert!(written > 0, "the test needs evicted pages");
    drop(db);
    // Tear every page home written so far (the second half keeps older bytes: zeros here).
    {
        let mut dev = pair.shared.lock();
        let ps = 4096u64;
        let mut buf = vec![0u8; ps as usize];
        for pid in 1..400u64 {
            let home = (1 + 64 + pid) * ps;
            dev.read_at(home, &mut buf).unwrap();
            if buf.iter().all(|&b| b == 0) {
                continue;
            }
            buf[2048..].fill(0);
            dev.write_at(home, &buf).unwrap();
        }
    }
    match Db::open(pair.devices(), cfg) {
        Err(Error::CorruptPage { reason, .. }) => {
            assert!(reason.contains("checksum"), "{reason}")
        }
        Err(e) => panic!("a torn page must be reported as corrupt, got {e}"),
        Ok(_) => panic!("reopen must fail on a torn page it has to redo"),
    }
}

#[test]
fn foreign_and_corrupted_devices_give_typed_errors() {
    // A device full of garbage is not a database.
    let pair = MemPair::new();
    {
        let mut dev = pair.shared.lock();
        let junk: Vec<u8> = (0..8192u32).map(|i| (i * 31 % 251) as u8).collect();
        dev.write_at(0, &junk).unwrap();
    }
    let open = DbConfig {
        open_mode: wafer_engine::OpenMode::OpenOrCreate,
        ..DbConfig::default()
    };
    assert!(matches!(
        Db::open(pair.devices(), open.clone()),
        Err(Error::NotADatabase(_))
    ));
    // A blank device with OpenMode::Open is not a database either.
    let blank = MemPair::new();
    let only_open = DbConfig {
        open_mode: wafer_engine::OpenMode::Open,
        ..DbConfig::default()
    };
    assert!(Db::open(blank.devices(), only_open).is_err());
    // Flipped bits in the log master blocks: both copies bad -> typed error.
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    db.create_tree("t").unwrap();
    drop(db);
    {
        let mut dev = pair.shared.lock();
        let log = crate::support::DATA_BYTES;
        for off in [log, log + 4096] {
            let mut b = vec![0u8; 4096];
            dev.read_at(off, &mut b).unwrap();
            b[20] ^= 0xff;
            dev.write_at(off, &b).unwrap();
        }
    }
    match Db::open(pair.devices(), DbConfig::default()) {
        Err(Error::NotADatabase(_)) | Err(Error::CorruptLog { .. }) => {}
        Err(e) => panic!("unexpected error kind: {e}"),
        Ok(_) => panic!("a log with both masters corrupt must not open"),
    }
}

/// A journal-path configuration for the crash tests: a journal of 64 pages (4 x the 32 frames'
/// worth of... kept small so checkpoints, and so moves home, come often).
fn journal_config(method: wafer_engine::HomeMethod) -> DbConfig {
    DbConfig {
        doublewrite: false,
        journal: Some(wafer_engine::JournalConfig {
            method,
            journal_bytes: 32 * 4 * 8192,
            checkpoint_fill: 0.3,
        }),
        ..config(false)
    }
}

/// The journal write path (paper 004) under power cuts, for every rung of the ladder: cuts land
/// in journal appends, in the moves home (host rewrites, copy commands, remap commands), in the
/// trims that empty the journal and in header writes; the committed state must come back
/// (recovery rebuilds the journal map from the location records after the last checkpoint).
#[test]
fn power_cut_on_the_journal_path_recovers_committed_state() {
    use wafer_engine::HomeMethod;
    let mut tally = Tally::default();
    let mut moved = 0;
    for (m, method) in HomeMethod::ALL.into_iter().enumerate() {
        let kinds: &[CommandKind] = match method {
            HomeMethod::Host => &[CommandKind::Write],
            HomeMethod::IscA | HomeMethod::IscB => &[CommandKind::Copy],
            _ => &[CommandKind::Remap, CommandKind::Trim],
        };
        for seed in 0..3u64 {
            for cut in cuts(seed, kinds) {
                let mut ssd = small_eu_ssd(4 << 20, flashsim::Mode::Conventional);
                if method == HomeMethod::CheckIn {
                    // Sector-aligned journaling pairs with a sector mapping unit.
                    ssd.mapping_unit_bytes = 512;
                }
                crash_on_device(
                    seed * 7 + m as u64 * 131 + 5,
                    cut,
                    ssd,
                    journal_config(method),
                    &mut tally,
                );
            }
        }
        moved += 1;
    }
    eprintln!("journal cuts landed on {:?}", tally.landed);
    assert_eq!(moved, 5);
    assert!(tally.landed("data:Copy") >= 6, "{:?}", tally.landed);
    assert!(tally.landed("data:Remap") >= 6, "{:?}", tally.landed);
    assert!(tally.landed("data:Write") >= 10, "{:?}", tally.landed);
}
