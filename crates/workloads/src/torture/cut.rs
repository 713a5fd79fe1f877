//! Power-cut trials: a random configuration, a random workload, a power cut at a random device
//! command (data and log in one power domain; torn and lost unflushed writes at random), a
//! reopen that may itself be cut at a random command of the recovery, sometimes another cut a
//! few operations after the reopen. After every reopen the database must hold exactly the
//! committed state (an interrupted commit: whole or not at all) and pass its structural checks.

use super::oracle::{error_class, State, WriteSet};
use super::rig::{DeviceKind, Rig};
use super::workload::{Workload, TREES};
use super::{FailureClass, TrialReport};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use wafer_engine::device::{CrashReport, FaultConfig};
use wafer_engine::{Codec, Db, DbConfig, Error, FlushlessConfig, OopConfig, OpenMode};

/// The configuration of one cut trial, drawn from its seed.
#[derive(Clone, Debug)]
pub struct CutConfig {
    /// The device pair.
    pub dev: DeviceKind,
    /// Bytes of the data device.
    pub data_bytes: u64,
    /// Bytes of the log device.
    pub log_bytes: u64,
    /// The engine configuration.
    pub db: DbConfig,
    /// Faults at the crash.
    pub fault: FaultConfig,
    /// Operations before the end of the workload.
    pub ops: u64,
    /// Key numbers the workload chooses among.
    pub keys: u64,
    /// The power cut: this many device commands into the workload (None: at its end).
    pub cut_after: Option<u64>,
}

/// A number in `[lo, hi]`, log-uniform.
pub fn log_uniform(rng: &mut Pcg64Mcg, lo: u64, hi: u64) -> u64 {
    let (a, b) = ((lo.max(1) as f64).ln(), (hi.max(lo + 1) as f64).ln());
    (rng.random_range(a..b).exp() as u64).clamp(lo, hi)
}

impl CutConfig {
    /// Draws a configuration.
    pub fn random(rng: &mut Pcg64Mcg, seed: u64) -> CutConfig {
        let dev = match rng.random_range(0..100) {
            0..22 => DeviceKind::Mem { block: 512 },
            22..40 => DeviceKind::Mem { block: 4096 },
            40..46 => DeviceKind::File,
            46..70 => DeviceKind::SimConventional,
            70..85 => DeviceKind::SimZns,
            _ => DeviceKind::SimFdp,
        };
        let zoned = matches!(dev, DeviceKind::SimZns | DeviceKind::SimFdp);
        let path = if zoned { 2 } else { rng.random_range(0..3) };
        let buffer_pages = match rng.random_range(0..10) {
            0..2 => 16,
            2..7 => rng.random_range(17..96),
            7..9 => 256,
            _ => 4096,
        };
        let log_bytes = [2u64 << 20, 4 << 20][rng.random_range(0..2)];
        let data_bytes = match dev {
            DeviceKind::SimZns | DeviceKind::SimFdp => {
                [2u64 << 20, 4 << 20][rng.random_range(0..2)]
            }
            _ => [3u64 << 20, 6 << 20][rng.random_range(0..2)],
        };
        // The default log space is the pool's size; the engine refuses one too small for an
        // update beside its reserves (about 144 KiB with 4 KiB pages): one trial in ten asks for
        // a log around that limit, and must be refused with `Config` or work.
        let log_space_bytes = match rng.random_range(0..10) {
            // The default (the pool's size) is raised to the minimum for a small pool.
            0..3 => None,
            3..7 => Some(log_uniform(rng, 160 << 10, 1 << 20)),
            7 => Some(log_uniform(rng, 64 << 10, 256 << 10)),
            _ => Some(log_bytes),
        };
        let out_of_place = (path == 2).then(|| OopConfig {
            codec: [
                Codec::None,
                Codec::None,
                Codec::Lz4,
                Codec::Zstd { level: 1 },
            ][rng.random_range(0..4)],
            gdt: rng.random_bool(0.4),
            nowa: dev == DeviceKind::SimConventional && rng.random_bool(0.3),
            zone_bytes: [16u64 << 10, 32 << 10, 64 << 10][rng.random_range(0..3)],
            max_open_zones: rng.random_range(2..4),
            batch_pages: rng.random_range(1..17),
            seed,
            ..OopConfig::default()
        });
        let db = DbConfig {
            open_mode: OpenMode::Create,
            buffer_pages,
            doublewrite: path == 0,
            doublewrite_pages: rng.random_range(1..65),
            log_space_bytes,
            checkpoint_log_fill: rng.random_range(0.2..0.8),
            checkpoint_batch_pages: rng.random_range(1..65),
            cleaner_clean_fraction: if rng.random_bool(0.5) {
                0.0
            } else {
                rng.random_range(0.1..0.5)
            },
            max_checkpoint_count: if rng.random_bool(0.8) {
                0
            } else {
                rng.random_range(1..7)
            },
            out_of_place,
            ..DbConfig::default()
        };
        let fault = FaultConfig {
            seed,
            torn_writes: rng.random_bool(0.6),
            lose_unflushed: rng.random_bool(0.6),
            ..FaultConfig::default()
        };
        let ops = rng.random_range(40..400);
        // One trial in six on a nearly full data device (the engine's Full paths: rollback,
        // checkpoint, DB GC with no room), drawn apart so the other choices stay the same.
        let mut small = Pcg64Mcg::seed_from_u64(seed ^ 0xf011);
        let data_bytes = if small.random_bool(1.0 / 6.0) {
            match dev {
                DeviceKind::SimZns | DeviceKind::SimFdp => 1 << 20,
                _ => [256u64 << 10, 512 << 10, 1 << 20][small.random_range(0..3)],
            }
        } else {
            data_bytes
        };
        // One trial in three in the flushless mode, drawn apart too.
        let mut db = db;
        flushless_mode(&mut db, seed ^ 0x0f1a_5c07);
        journal_mode(&mut db, dev, data_bytes, seed ^ 0x004c_4e4a);
        image_holes(&mut db, seed ^ 0x401e_0b1e);
        leaf_splits(&mut db, seed ^ 0x5b11_0b1e);
        log_buffer(&mut db, seed ^ 0x10b0_0b1e);
        CutConfig {
            dev,
            data_bytes,
            log_bytes,
            db,
            fault,
            ops,
            keys: log_uniform(rng, 10, 300),
            cut_after: rng.random_bool(0.9).then(|| log_uniform(rng, 1, 4000)),
        }
    }

    /// One line describing the configuration.
    pub fn describe(&self) -> String {
        let path = match &self.db.out_of_place {
            None if self.db.journal.is_some() => {
                let j = self.db.journal.as_ref().expect("journal");
                format!(
                    "journal({}, {} KiB, fill {:.2})",
                    j.method.name(),
                    j.journal_bytes >> 10,
                    j.checkpoint_fill
                )
            }
            Some(o) => format!(
                "oop(codec {:?}, gdt {}, nowa {}, zone {} KiB, open {}, batch {})",
                o.codec,
                o.gdt,
                o.nowa,
                o.zone_bytes >> 10,
                o.max_open_zones,
                o.batch_pages
            ),
            None if self.db.doublewrite => {
                format!("in-place+dw{}", self.db.doublewrite_pages)
            }
            None => "in-place".into(),
        };
        format!(
            "{} data {} KiB log {} KiB, {path}, {}, pool {}, log space {:?}, ckpt fill {:.2} batch \
             {}, cleaner {:.2}, hot {}, holes {}, page ops {}, splits {:?}, log buffer {:?}, torn {}, lose {}, ops {}, keys {}, cut {:?}",
            self.dev.name(),
            self.data_bytes >> 10,
            self.log_bytes >> 10,
            describe_mode(&self.db),
            self.db.buffer_pages,
            self.db.log_space_bytes,
            self.db.checkpoint_log_fill,
            self.db.checkpoint_batch_pages,
            self.db.cleaner_clean_fraction,
            self.db.max_checkpoint_count,
            self.db.log_image_holes,
            self.db.log_page_ops,
            self.db.leaf_splits,
            self.db.log_buffer_bytes,
            self.fault.torn_writes,
            self.fault.lose_unflushed,
            self.ops,
            self.keys,
            self.cut_after
        )
    }

    /// Whether a torn page may be unrepairable by design (in place without doublewrite, on
    /// blocks smaller than a page).
    fn torn_pages_unrepairable(&self) -> bool {
        self.db.out_of_place.is_none()
            && self.db.journal.is_none()
            && !self.db.doublewrite
            && self.dev == DeviceKind::Mem { block: 512 }
    }
}

/// A log buffer of 4, 8 or 16 KiB in one trial of three (else the default, a sixteenth of the
/// log space), drawn from a stream of its own: records longer than the buffer, and flushes
/// written in several chunks that start inside records, so that power cuts tear the log there.
pub fn log_buffer(db: &mut DbConfig, stream: u64) {
    let mut rng = Pcg64Mcg::seed_from_u64(stream);
    if rng.random_bool(1.0 / 3.0) {
        db.log_buffer_bytes = Some([4u64 << 10, 8 << 10, 16 << 10][rng.random_range(0..3)]);
    }
}

/// The log format, drawn from a stream of its own: half the trials log page images without
/// their holes (`DbConfig::log_image_holes`), and independently half log structure changes as
/// page operations where they can (`DbConfig::log_page_ops`).
pub fn image_holes(db: &mut DbConfig, stream: u64) {
    let mut rng = Pcg64Mcg::seed_from_u64(stream);
    db.log_image_holes = rng.random_bool(0.5);
    db.log_page_ops = rng.random_bool(0.5);
}

/// Where leaves split, drawn from a stream of its own: half the trials split every leaf they
/// can beside other threads (`LeafSplits::Beside`, so splits are pending when the power goes),
/// the others as the default does (`Auto`: beside only with several threads).
pub fn leaf_splits(db: &mut DbConfig, stream: u64) {
    let mut rng = Pcg64Mcg::seed_from_u64(stream);
    db.leaf_splits = if rng.random_bool(0.5) {
        wafer_engine::LeafSplits::Beside
    } else {
        wafer_engine::LeafSplits::Auto
    };
}

/// Puts `db` in the flushless mode in one trial of three, by draws of its own from `stream` (a
/// trial passes its seed with a constant of its own, so its other choices stay the same): a
/// random log table share and compaction settings, no page cleaner and no hot-page-aware
/// checkpoints (the mode refuses both), and a pool large enough for 16 frames and a table of
/// 4 pages.
pub fn flushless_mode(db: &mut DbConfig, stream: u64) {
    let mut rng = Pcg64Mcg::seed_from_u64(stream);
    if !rng.random_bool(1.0 / 3.0) {
        return;
    }
    let f = FlushlessConfig {
        table_fraction: rng.random_range(0.1..0.6),
        checkpoint_free: rng.random_range(0.02..0.3),
        min_del: log_uniform(&mut rng, 1, 64) as u32,
        max_age_ms: [0, 1, 20, 500, 10_000, 1_000_000][rng.random_range(0..6)],
    };
    // frames = buffer_pages x (1 - table_fraction), rounded down, at least 16 (17 leaves room
    // for the rounding); the table gets the rest, at least 4 pages.
    let frames = (17.0 / (1.0 - f.table_fraction)).ceil() as usize;
    let table = (4.5 / f.table_fraction).ceil() as usize;
    db.buffer_pages = db.buffer_pages.max(frames).max(table);
    db.cleaner_clean_fraction = 0.0;
    db.max_checkpoint_count = 0;
    db.flushless = Some(f);
}

/// The buffer mode of `db` for a trial's description.
pub fn describe_mode(db: &DbConfig) -> String {
    match &db.flushless {
        Some(f) => format!(
            "flushless(table {:.2}, free {:.2}, min_del {}, age {} ms)",
            f.table_fraction, f.checkpoint_free, f.min_del, f.max_age_ms
        ),
        None => "aries".into(),
    }
}

/// Puts `db` on the journal write path (paper 004) in one trial of four that is in place and
/// not flushless, on a device with copy and remap commands (not ZNS), by draws of its own from
/// `stream`: a random rung of the ladder, a journal of an eighth of the device (at least 64
/// KiB) and a random checkpoint fill, so journal checkpoints come often on these small devices.
pub fn journal_mode(db: &mut DbConfig, dev: DeviceKind, data_bytes: u64, stream: u64) {
    let mut rng = Pcg64Mcg::seed_from_u64(stream);
    if db.flushless.is_some()
        || db.out_of_place.is_some()
        || dev == DeviceKind::SimZns
        || !rng.random_bool(0.25)
    {
        return;
    }
    let method = wafer_engine::HomeMethod::ALL[rng.random_range(0..5)];
    db.journal = Some(wafer_engine::JournalConfig {
        method,
        journal_bytes: (data_bytes / 8 / 4096 * 4096).max(64 << 10),
        checkpoint_fill: rng.random_range(0.3..0.9),
    });
}

/// Runs the cut trial of `seed`.
pub fn trial(seed: u64) -> TrialReport {
    let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0xc07);
    let cfg = CutConfig::random(&mut rng, seed);
    let mut report = TrialReport {
        config: cfg.describe(),
        ..TrialReport::default()
    };
    let rig = Rig::new(cfg.dev, cfg.data_bytes, cfg.log_bytes, cfg.fault.clone());
    let db = match Db::open(rig.devices(), cfg.db.clone()) {
        Ok(db) => db,
        Err(e) => {
            report
                .notes
                .push(format!("create refused: {}", error_class(&e)));
            return report;
        }
    };
    for t in TREES {
        if let Err(e) = db.create_tree(t) {
            report
                .notes
                .push(format!("create tree refused: {}", error_class(&e)));
            return report;
        }
    }
    let reopen_cfg = DbConfig {
        open_mode: OpenMode::Open,
        ..cfg.db.clone()
    };
    let mut state = State::new(&TREES);
    // Round 0: the workload and its cut; round 1 (sometimes): a few operations after the
    // reopen and another cut.
    let mut db = Some(db);
    for round in 0..2 {
        let Some(d) = db.take() else { break };
        let (ops, cut) = if round == 0 {
            (cfg.ops, cfg.cut_after)
        } else {
            (rng.random_range(3..60), Some(log_uniform(&mut rng, 1, 600)))
        };
        if let Some(n) = cut {
            rig.cut_in(n);
        }
        let mut wl = match Workload::new(&d, state.clone(), cfg.keys, Some(rig.power.clone())) {
            Ok(w) => w,
            Err(e) => {
                report.fail(
                    FailureClass::CheckFailed,
                    format!("trees after reopen: {e}"),
                );
                return report;
            }
        };
        wl.run(&mut rng, ops, &mut report);
        let maybe = wl.maybe.take();
        let committed = wl.state.clone();
        // The power goes (if the armed cut has not fired yet, now), then the handles.
        rig.disarm();
        rig.power.cut_power_now();
        wl.drop_open();
        drop(wl);
        drop(d);
        let mut torn = crash(&rig, &mut report);
        let Some(reopened) = reopen(&rig, &reopen_cfg, &cfg, &mut rng, &mut report, &mut torn)
        else {
            return report;
        };
        // The flushless restart reads no page: a torn page that cannot be repaired is found by
        // the first read instead of the open.
        let torn_read_ok = torn && cfg.torn_pages_unrepairable() && cfg.db.flushless.is_some();
        match check(
            &reopened,
            &committed,
            maybe.as_ref(),
            torn_read_ok,
            &mut report,
        ) {
            Some(s) => state = s,
            None => return report,
        }
        if round == 0 && rng.random_bool(0.35) {
            db = Some(reopened);
        } else {
            // The recovered database keeps working.
            after_recovery(&reopened, &mut report);
        }
    }
    report
}

/// Crashes the rig; returns whether a data write was torn.
fn crash(rig: &Rig, report: &mut TrialReport) -> bool {
    let (d, l): (CrashReport, CrashReport) = rig.crash();
    report.cut_points += 1;
    for r in [&d, &l] {
        if let Some(e) = &r.restore_error {
            report.notes.push(format!("rig restore error: {e}"));
        }
    }
    d.torn.is_some()
}

/// Reopens after a crash, sometimes cutting power again during the recovery (then crashing
/// and reopening once more). None: the database did not open (recorded).
fn reopen(
    rig: &Rig,
    cfg: &DbConfig,
    trial: &CutConfig,
    rng: &mut Pcg64Mcg,
    report: &mut TrialReport,
    torn: &mut bool,
) -> Option<Db> {
    let mut cut_recovery = rng.random_bool(0.3);
    loop {
        if cut_recovery {
            rig.cut_in(log_uniform(rng, 1, 3000));
        }
        let r = Db::open(rig.devices(), cfg.clone());
        let fired = rig.is_powered_off();
        rig.disarm();
        match r {
            Ok(db) if !fired => return Some(db),
            Ok(db) => {
                // The cut fired, yet the open said Ok: crash anyway and open again.
                report
                    .notes
                    .push("open returned Ok after a power cut during it".into());
                drop(db);
            }
            Err(_) if fired => {}
            Err(e) => {
                if *torn
                    && trial.torn_pages_unrepairable()
                    && matches!(e, Error::CorruptPage { .. })
                {
                    // By design: in place without doublewrite a torn page cannot be repaired;
                    // the engine must say so (it did, with a typed error).
                    report
                        .typed_rejections
                        .push("CorruptPage (torn page, no doublewrite)".into());
                } else {
                    report.fail(
                        FailureClass::Unopenable,
                        format!("reopen after a power cut: {} ({e})", error_class(&e)),
                    );
                }
                return None;
            }
        }
        if fired {
            report.recovery_cuts += 1;
        }
        *torn |= crash(rig, report);
        cut_recovery = false;
    }
}

/// Compares the reopened database with the committed state (plus the interrupted commit) and
/// runs the structural checks. Returns the state it holds, if it is an acceptable one. With
/// `torn_read_ok`, a `CorruptPage` from a read is the torn page the design cannot repair (the
/// trial ends there, typed).
fn check(
    db: &Db,
    committed: &State,
    maybe: Option<&WriteSet>,
    torn_read_ok: bool,
    report: &mut TrialReport,
) -> Option<State> {
    let torn_page = |e: &Error, report: &mut TrialReport| {
        let by_design = torn_read_ok && matches!(e, Error::CorruptPage { .. });
        if by_design {
            report
                .typed_rejections
                .push("CorruptPage (torn page, no doublewrite, found by a read)".into());
        }
        by_design
    };
    let got = match State::read(db) {
        Err(text) => {
            report.fail(FailureClass::CheckFailed, text);
            return None;
        }
        Ok(Err(e)) if torn_page(&e, report) => return None,
        Ok(Err(e)) => {
            report.fail(
                FailureClass::CheckFailed,
                format!("read after recovery: {} ({e})", error_class(&e)),
            );
            return None;
        }
        Ok(Ok(s)) => s,
    };
    let with_maybe = maybe.map(|ws| {
        let mut s = committed.clone();
        s.apply(ws);
        s
    });
    let ok = if got == *committed {
        if maybe.is_some() {
            report.notes.push("interrupted commit absent".into());
        }
        true
    } else if with_maybe.as_ref() == Some(&got) {
        report.notes.push("interrupted commit present".into());
        true
    } else {
        false
    };
    if !ok {
        let (lost, extra, lines) = committed.diff(&got);
        // Lost rows that the interrupted commit does not explain are lost commits.
        let unexplained = committed
            .trees
            .iter()
            .flat_map(|(t, rows)| rows.iter().map(move |(k, v)| (t, k, v)))
            .filter(|(t, k, v)| {
                got.trees.get(*t).and_then(|r| r.get(*k)) != Some(*v)
                    && !maybe.is_some_and(|ws| ws.contains_key(&((*t).clone(), (*k).clone())))
            })
            .count();
        let class = if unexplained > 0 {
            FailureClass::LostCommit
        } else {
            FailureClass::UncommittedVisible
        };
        report.fail(
            class,
            format!(
                "recovered state differs: {lost} committed rows lost or wrong ({unexplained} \
                 not explained by the interrupted commit), {extra} extra; interrupted commit: \
                 {}; e.g. {}",
                maybe.map_or("none".into(), |w| format!("{} writes", w.len())),
                lines.join(", ")
            ),
        );
        return None;
    }
    let mut names = db.tree_names();
    names.sort();
    if names != TREES {
        report.fail(
            FailureClass::CheckFailed,
            format!("trees after recovery: {names:?}"),
        );
        return None;
    }
    match db.verify() {
        Ok(_) => {}
        Err(e) if torn_page(&e, report) => return None,
        Err(e) => {
            report.fail(FailureClass::CheckFailed, format!("verify: {e}"));
            return None;
        }
    }
    match db.check_pages() {
        Ok(v) if v.is_empty() => {}
        Err(e) if torn_page(&e, report) => return None,
        Ok(v) => {
            report.fail(
                FailureClass::CheckFailed,
                format!(
                    "check_pages: {} violations: {}",
                    v.len(),
                    v[..v.len().min(3)].join("; ")
                ),
            );
            return None;
        }
        Err(e) => {
            report.fail(FailureClass::CheckFailed, format!("check_pages: {e}"));
            return None;
        }
    }
    Some(got)
}

/// A write and a commit on the recovered database; an error is recorded by class.
fn after_recovery(db: &Db, report: &mut TrialReport) {
    let r = (|| {
        let t = db.open_tree(TREES[0])?;
        let mut x = db.begin()?;
        x.put(&t, b"after-recovery", b"works")?;
        x.commit()
    })();
    if let Err(e) = r {
        report
            .workload_errors
            .push(format!("after-recovery:{}", error_class(&e)));
    }
}
