//! A power cut at *every* device command of one engine action (a checkpoint, a stepped
//! checkpoint under maintenance, a rollback, a recovery), on separate data and log devices with
//! 512-byte blocks (so pages can tear). A deterministic scenario builds the state before the
//! action: committed rows, a checkpoint, more committed rows, a live transaction `T` with puts,
//! overflow values and deletes, and a committed transaction after it. After the crash the
//! database must reopen with exactly the committed rows.

use crate::support::{LinkedRig, Oracle};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use wafer_engine::{
    Db, DbConfig, FlushlessConfig, HomeMethod, JournalConfig, OopConfig, Tree, Txn,
};

const TREES: [&str; 2] = ["t", "u"];

fn config() -> DbConfig {
    DbConfig {
        buffer_pages: 48,
        log_space_bytes: Some(1536 << 10),
        checkpoint_log_fill: 0.5,
        checkpoint_batch_pages: 5,
        cleaner_clean_fraction: 0.4,
        doublewrite_pages: 6,
        ..DbConfig::default()
    }
}

/// [`config`] with a pool and a log buffer small enough that a rollback reads pages back,
/// evicts dirty ones (forcing the log past its compensation records first) and fills the log
/// buffer: so a power cut can fall in the middle of a rollback with part of it durable.
fn small_config(path: Path) -> DbConfig {
    let base = DbConfig {
        buffer_pages: 16,
        log_buffer_bytes: Some(8 << 10),
        ..config()
    };
    match path {
        Path::InPlace => base,
        Path::OutOfPlace => DbConfig {
            doublewrite: false,
            out_of_place: Some(OopConfig {
                zone_bytes: 16 << 10,
                max_open_zones: 2,
                batch_pages: 4,
                ..OopConfig::default()
            }),
            ..base
        },
        // A table that holds T's records (their overflow values too): its records stay there
        // until it ends.
        Path::Flushless => DbConfig {
            buffer_pages: 512,
            cleaner_clean_fraction: 0.0,
            flushless: Some(FlushlessConfig {
                min_del: 4,
                ..FlushlessConfig::default()
            }),
            ..base
        },
        Path::Journaled => DbConfig {
            doublewrite: false,
            journal: Some(JournalConfig {
                method: HomeMethod::Host,
                journal_bytes: 48 * 4096,
                checkpoint_fill: 0.3,
            }),
            ..base
        },
    }
}

/// The write path of a [`small_config`].
#[derive(Clone, Copy, Debug)]
enum Path {
    InPlace,
    OutOfPlace,
    Journaled,
    /// In place, in the flushless buffer mode (abort by discarding, no compensation records).
    Flushless,
}

fn val(rng: &mut Pcg64Mcg) -> Vec<u8> {
    let len = if rng.random_bool(0.05) {
        rng.random_range(1100..7000)
    } else {
        rng.random_range(1..160)
    };
    let b: u8 = rng.random();
    (0..len).map(|i| b.wrapping_add(i as u8)).collect()
}

fn key(n: u64) -> Vec<u8> {
    format!("key{n:05}").into_bytes()
}

/// Random ops on keys `lo..hi` in both trees, applied to `x` and `staged`.
fn ops(
    rng: &mut Pcg64Mcg,
    x: &mut Txn,
    trees: &[Tree],
    staged: &mut Oracle,
    n: usize,
    lo: u64,
    hi: u64,
) {
    for _ in 0..n {
        let t = &trees[rng.random_range(0..trees.len())];
        let k = key(rng.random_range(lo..hi));
        if rng.random_bool(0.25) {
            staged.delete(t.name(), &k);
            x.delete(t, &k).unwrap();
        } else {
            let v = val(rng);
            staged.put(t.name(), &k, &v);
            x.put(t, &k, &v).unwrap();
        }
    }
}

/// Which scenario: the first, or one whose `T` is long and whose pool and log buffer are
/// small ([`small_config`]), so that a rollback of `T` does device I/O itself; `beside`: a
/// committed read runs on a second thread first, so that the database runs its rollbacks (like
/// its splits) beside other threads from then on.
#[derive(Clone, Copy)]
enum Setup {
    Short,
    Long { beside: bool, path: Path },
}

/// Builds the scenario; returns the db, its trees, the committed state and the live `T`.
fn scenario(rig: &LinkedRig, seed: u64) -> (Db, Vec<Tree>, Oracle, Txn) {
    scenario_with(rig, seed, Setup::Short)
}

fn scenario_with(rig: &LinkedRig, seed: u64, setup: Setup) -> (Db, Vec<Tree>, Oracle, Txn) {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let db = Db::open(rig.devices(), config_of(setup)).unwrap();
    let trees: Vec<Tree> = TREES.iter().map(|n| db.create_tree(n).unwrap()).collect();
    if let Setup::Long { beside: true, .. } = setup {
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut x = db.begin().unwrap();
                x.get(&trees[0], b"none").unwrap();
                x.commit().unwrap();
            });
        });
    }
    let mut state = Oracle::new(&TREES);
    for i in 0..30 {
        let mut x = db.begin().unwrap();
        let mut staged = state.clone();
        ops(&mut rng, &mut x, &trees, &mut staged, 8, 0, 400);
        if i % 7 == 3 {
            x.abort().unwrap();
        } else {
            x.commit().unwrap();
            state = staged;
        }
        if i == 15 {
            db.checkpoint().unwrap();
        }
    }
    // T: uncommitted, on keys 0..200 (it also overwrites and deletes committed rows).
    let mut t = db.begin().unwrap();
    let mut t_staged = state.clone();
    // Long: enough changes that its rollback's records fill the small log buffer.
    let n = match setup {
        Setup::Short => 40,
        Setup::Long { .. } => 300,
    };
    ops(&mut rng, &mut t, &trees, &mut t_staged, n, 0, 200);
    // A committed transaction after T on disjoint keys.
    let mut x = db.begin().unwrap();
    let mut staged = state.clone();
    ops(&mut rng, &mut x, &trees, &mut staged, 10, 200, 400);
    x.commit().unwrap();
    state = staged;
    (db, trees, state, t)
}

fn config_of(setup: Setup) -> DbConfig {
    match setup {
        Setup::Short => config(),
        Setup::Long { path, .. } => small_config(path),
    }
}

fn reopen_and_check(rig: &LinkedRig, want: &Oracle, what: &str) -> Db {
    reopen_with(rig, want, what, config())
}

fn reopen_with(rig: &LinkedRig, want: &Oracle, what: &str, cfg: DbConfig) -> Db {
    let db = Db::open(rig.devices(), cfg).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
    want.check(&db, what);
    db
}

/// Counts the commands `action` sends when nothing fails.
fn commands_of(seed: u64, setup: Setup, action: impl Fn(&Db, Txn)) -> u64 {
    let rig = LinkedRig::new(seed, 4 << 20, 2 << 20, 512);
    let (db, _, _, t) = scenario_with(&rig, seed, setup);
    let before = rig.commands();
    action(&db, t);
    rig.commands() - before
}

fn every_point(seed: u64, name: &str, action: impl Fn(&Db, Txn)) {
    every_point_with(seed, Setup::Short, name, action)
}

fn every_point_with(seed: u64, setup: Setup, name: &str, action: impl Fn(&Db, Txn)) {
    let n = commands_of(seed, setup, &action);
    assert!(n > 0, "{name}: the action sent no command");
    eprintln!("{name}: seed {seed}: {n} commands");
    for cut in 1..=n + 1 {
        let rig = LinkedRig::new(seed * 1000 + cut, 4 << 20, 2 << 20, 512);
        let (db, _, state, t) = scenario_with(&rig, seed, setup);
        rig.cut_after(cut);
        action(&db, t);
        drop(db);
        rig.crash();
        let what = format!("{name}: seed {seed}, cut at command {cut} of {n}");
        let db = reopen_with(&rig, &state, &what, config_of(setup));
        // The recovered database keeps working and survives a clean reopen.
        let t = db.open_tree("t").unwrap();
        let mut x = db.begin().unwrap();
        x.put(&t, b"after", b"crash").unwrap();
        x.commit().unwrap();
        drop(db);
        let mut state = state.clone();
        state.put("t", b"after", b"crash");
        reopen_with(
            &rig,
            &state,
            &format!("{what}, clean reopen"),
            config_of(setup),
        );
    }
}

#[test]
fn power_cut_at_every_command_of_a_checkpoint() {
    for seed in [1u64, 2] {
        every_point(seed, "checkpoint", |db, t| {
            let _ = db.checkpoint();
            drop(t);
        });
    }
}

#[test]
fn power_cut_at_every_command_of_stepped_maintenance() {
    let seed = 3u64;
    every_point(seed, "maintenance", |db, t| {
        // Steps of background work (the page cleaner, then a stepped checkpoint once the log
        // fills) with committed and aborted work between the steps, while T continues.
        let tree = db.open_tree("u").unwrap();
        let mut t = t;
        for i in 0..24u64 {
            if db.maintenance().is_err() {
                break;
            }
            let Ok(mut x) = db.begin() else { break };
            let ok = x
                .put(&tree, format!("m{i}").as_bytes(), &[7u8; 2500])
                .is_ok()
                && x.put(&tree, format!("n{i}").as_bytes(), &[8u8; 2500])
                    .is_ok();
            // Uncommitted either way (T never commits here).
            if !ok
                || t.put(&tree, format!("key{:05}", i % 3).as_bytes(), b"T")
                    .is_err()
            {
                break;
            }
            if x.abort().is_err() {
                break;
            }
        }
        drop(t);
    });
}

#[test]
fn power_cut_at_every_command_of_a_rollback() {
    for seed in [5u64, 6] {
        every_point(seed, "rollback", |db, t| {
            // Make T's records durable first so a crash mid-rollback leaves a partial rollback.
            let _ = db.checkpoint();
            let _ = t.abort();
        });
    }
}

/// A rollback long enough to do device I/O itself (pages read back, dirty ones evicted after
/// the log is forced past its compensation records, the small log buffer filled), so that a cut
/// falls in the middle of it with part of it durable: on one thread (all exclusive), and with
/// two threads seen, where T's plain changes are undone with the core latch shared, newest
/// first, and the exclusive rollback goes on from the first that is not (an overflow value's);
/// in place, out of place, journaled and flushless (abort by discarding). Checked first, with
/// no cut: the rollback sent commands, and beside others both parts ran.
#[test]
fn power_cut_at_every_command_of_a_long_rollback() {
    let abort = |db: &Db, t: Txn| {
        let _ = db.checkpoint();
        let _ = t.abort();
    };
    let cases = [
        (5u64, false, Path::InPlace),
        (5, true, Path::InPlace),
        (9, true, Path::InPlace),
        (5, false, Path::OutOfPlace),
        (9, true, Path::OutOfPlace),
        (5, false, Path::Journaled),
        (9, true, Path::Journaled),
        (5, false, Path::Flushless),
        (9, true, Path::Flushless),
    ];
    for (seed, beside, path) in cases {
        let setup = Setup::Long { beside, path };
        let rig = LinkedRig::new(seed, 4 << 20, 2 << 20, 512);
        let (db, _, state, t) = scenario_with(&rig, seed, setup);
        db.checkpoint().unwrap();
        let (before, commands) = (db.stats().engine, rig.commands());
        t.abort().unwrap();
        let commands = rig.commands() - commands;
        let after = db.stats().engine;
        let shared = after.undone_beside - before.undone_beside;
        let took = after.exclusive_latches - before.exclusive_latches;
        eprintln!(
            "long rollback: seed {seed}, beside {beside}, {path:?}: {shared} undone beside, \
             {took} exclusive, {commands} commands"
        );
        assert!(
            commands > 0,
            "seed {seed}: the rollback sent no command to cut"
        );
        if beside && !matches!(path, Path::Flushless) {
            assert!(shared > 0, "seed {seed}: no undo ran beside others");
            // The second `stats`, and the exclusive rest of the rollback.
            assert!(took >= 2, "seed {seed}: nothing ran exclusive");
        }
        state.check(&db, "no cut");
        drop(db);
        every_point_with(seed, setup, "long rollback", abort);
    }
}

/// A checkpoint at every command with the long `T` live (its pages pinned dirty in a pool of
/// 16 frames), two threads seen, out of place, journaled (moves home and the journal's own
/// checkpoints) and flushless (compaction beside a live transaction's records).
#[test]
fn power_cut_at_every_command_of_a_checkpoint_on_every_path() {
    for (seed, path) in [
        (11u64, Path::OutOfPlace),
        (12, Path::Journaled),
        // (A seed whose transaction after T writes no page T changed: in the flushless mode
        // that is refused, one live transaction per page.)
        (9, Path::Flushless),
    ] {
        let setup = Setup::Long { beside: true, path };
        every_point_with(seed, setup, &format!("checkpoint {path:?}"), |db, t| {
            let _ = db.checkpoint();
            drop(t);
        });
    }
}

#[test]
fn power_cut_at_every_command_of_recovery() {
    for seed in [7u64, 8] {
        // Crash with T's records durable (a loser to undo) and dirty pages to redo.
        let prepare = |rig: &LinkedRig| -> Oracle {
            let (db, trees, state, t) = scenario(rig, seed);
            // More committed work after a checkpoint so redo has work too.
            db.checkpoint().unwrap();
            let mut x = db.begin().unwrap();
            x.put(&trees[1], b"late", b"row").unwrap();
            x.commit().unwrap();
            std::mem::forget(t);
            drop(db);
            rig.crash();
            let mut state = state;
            state.put("u", b"late", b"row");
            state
        };
        let n = {
            let rig = LinkedRig::new(seed, 4 << 20, 2 << 20, 512);
            let state = prepare(&rig);
            let before = rig.commands();
            reopen_and_check(&rig, &state, "plain recovery");
            rig.commands() - before
        };
        eprintln!("recovery: seed {seed}: {n} commands");
        for cut in 1..=n {
            let rig = LinkedRig::new(seed, 4 << 20, 2 << 20, 512);
            let state = prepare(&rig);
            rig.cut_after(cut);
            let _ = Db::open(rig.devices(), config());
            rig.crash();
            let what = format!("recovery: seed {seed}, cut at command {cut} of {n}");
            drop(reopen_and_check(&rig, &state, &what));
            reopen_and_check(&rig, &state, &format!("{what}, clean reopen"));
        }
    }
}
