//! Damage trials: a small database built by the random workload and closed cleanly (sometimes
//! with a copy of both images kept from an earlier clean close), then exactly one thing damaged:
//! a flipped bit, a block of random bytes or zeros in the data or log image, a truncated data or
//! log file, or the older copy of one image put back beside the newer other. The open must give
//! the committed contents (repaired or unaffected) or a typed error; an open that succeeds and
//! serves other contents without an error is silently wrong.

use super::oracle::{error_class, State};
use super::workload::{Workload, TREES};
use super::{FailureClass, TrialReport};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::path::Path;
use wafer_engine::device::{Handle, MemDevice};
use wafer_engine::{Codec, Db, DbConfig, Devices, Error, OopConfig, OpenMode};

const BLOCK: usize = 4096;

/// The one thing a trial damages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Damage {
    /// One bit flipped at a random offset.
    FlipBit,
    /// One block overwritten with random bytes.
    RandomBlock,
    /// One block zeroed.
    ZeroBlock,
    /// The file cut short (files only).
    Truncate,
    /// The image replaced by its copy from an earlier clean close.
    Stale,
}

/// Which image a damage hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The data device.
    Data,
    /// The log device.
    Log,
}

/// The two images of a closed database.
#[derive(Clone)]
struct Images {
    data: Vec<u8>,
    log: Vec<u8>,
}

/// Where the database lives.
enum Store {
    Mem {
        data: Handle<MemDevice>,
        log: Handle<MemDevice>,
    },
    File(tempfile::TempDir),
}

const DATA_BYTES: u64 = 3 << 20;
const LOG_BYTES: u64 = 2 << 20;

impl Store {
    fn devices(&self) -> Result<Devices, Error> {
        match self {
            Store::Mem { data, log } => {
                Ok(Devices::new(Box::new(data.clone()), Box::new(log.clone())))
            }
            Store::File(dir) => Devices::files(dir.path(), DATA_BYTES, LOG_BYTES),
        }
    }

    fn images(&self) -> Images {
        match self {
            Store::Mem { data, log } => Images {
                data: data.lock().bytes().to_vec(),
                log: log.lock().bytes().to_vec(),
            },
            Store::File(dir) => Images {
                data: std::fs::read(dir.path().join("data.wafer")).expect("read data image"),
                log: std::fs::read(dir.path().join("log.wafer")).expect("read log image"),
            },
        }
    }

    fn put(&self, target: Target, image: &[u8]) {
        match self {
            Store::Mem { data, log } => {
                let dev = if target == Target::Data { data } else { log };
                dev.lock().bytes_mut().copy_from_slice(image);
            }
            Store::File(dir) => {
                std::fs::write(file(dir.path(), target), image).expect("write image");
            }
        }
    }
}

fn file(dir: &Path, target: Target) -> std::path::PathBuf {
    dir.join(match target {
        Target::Data => "data.wafer",
        Target::Log => "log.wafer",
    })
}

/// A random block-aligned offset, of a block that is not all zero nine times in ten.
fn pick_block(rng: &mut Pcg64Mcg, image: &[u8]) -> usize {
    let blocks = image.len() / BLOCK;
    if rng.random_bool(0.9) {
        let used: Vec<usize> = (0..blocks)
            .filter(|&b| image[b * BLOCK..(b + 1) * BLOCK].iter().any(|&x| x != 0))
            .collect();
        if !used.is_empty() {
            return used[rng.random_range(0..used.len())] * BLOCK;
        }
    }
    rng.random_range(0..blocks) * BLOCK
}

fn config(rng: &mut Pcg64Mcg, seed: u64) -> DbConfig {
    let path = rng.random_range(0..3);
    let buffer_pages = [16, 32, 64, 256][rng.random_range(0..4)];
    DbConfig {
        open_mode: OpenMode::Create,
        buffer_pages,
        doublewrite: path == 0,
        doublewrite_pages: rng.random_range(1..33),
        // The default log space (the pool's size) is raised to the minimum for a small pool.
        log_space_bytes: match rng.random_range(0..3) {
            0 => None,
            1 => Some(512 << 10),
            _ => Some(LOG_BYTES),
        },
        checkpoint_batch_pages: rng.random_range(1..65),
        out_of_place: (path == 2).then(|| OopConfig {
            codec: [Codec::None, Codec::Lz4][rng.random_range(0..2)],
            gdt: rng.random_bool(0.3),
            zone_bytes: 32 << 10,
            max_open_zones: 2,
            batch_pages: rng.random_range(1..17),
            seed,
            ..OopConfig::default()
        }),
        ..DbConfig::default()
    }
}

/// Runs `ops` random operations and closes cleanly; None if that failed (recorded).
fn build_step(
    db: &Db,
    state: State,
    ops: u64,
    rng: &mut Pcg64Mcg,
    report: &mut TrialReport,
) -> Option<State> {
    let mut wl = Workload::new(db, state, 200, None).ok()?;
    wl.run(rng, ops, report);
    wl.end_all(true, report);
    if wl.stopped {
        report.notes.push("build stopped by an error".into());
        return None;
    }
    let state = wl.state.clone();
    drop(wl);
    if let Err(e) = db.close() {
        report
            .workload_errors
            .push(format!("close:{}", error_class(&e)));
        return None;
    }
    Some(state)
}

/// Runs the mutate trial of `seed`.
pub fn trial(seed: u64) -> TrialReport {
    let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x4d07);
    let on_files = rng.random_bool(0.25);
    let mut cfg = config(&mut rng, seed);
    super::cut::flushless_mode(&mut cfg, seed ^ 0xf1a5_4d07);
    super::cut::image_holes(&mut cfg, seed ^ 0x401e_4d07);
    super::cut::leaf_splits(&mut cfg, seed ^ 0x5b11_4d07);
    super::cut::log_buffer(&mut cfg, seed ^ 0x10b0_4d07);
    let store = if on_files {
        Store::File(
            tempfile::Builder::new()
                .prefix("wafer-torture-")
                .tempdir()
                .expect("a temporary directory"),
        )
    } else {
        Store::Mem {
            data: Handle::new(MemDevice::new(DATA_BYTES, BLOCK as u32)),
            log: Handle::new(MemDevice::new(LOG_BYTES, BLOCK as u32)),
        }
    };
    let keep_old = rng.random_bool(0.4);
    let mut report = TrialReport::default();
    let path = match &cfg.out_of_place {
        Some(o) => format!("oop(codec {:?}, gdt {})", o.codec, o.gdt),
        None if cfg.doublewrite => "in-place+dw".into(),
        None => "in-place".into(),
    };
    let describe = |d: &str| {
        format!(
            "{} {path}, {}, pool {}, log space {:?}, damage {d}",
            if on_files { "file" } else { "mem" },
            super::cut::describe_mode(&cfg),
            cfg.buffer_pages,
            cfg.log_space_bytes
        )
    };
    report.config = describe("(none yet)");
    let db = match store.devices().and_then(|d| Db::open(d, cfg.clone())) {
        Ok(db) => db,
        Err(e) => {
            report
                .notes
                .push(format!("create refused: {}", error_class(&e)));
            return report;
        }
    };
    for t in TREES {
        if db.create_tree(t).is_err() {
            report.notes.push("create tree refused".into());
            return report;
        }
    }
    let mut state = State::new(&TREES);
    let mut old = None;
    if keep_old {
        let ops = rng.random_range(20..120);
        let Some(s) = build_step(&db, state, ops, &mut rng, &mut report) else {
            return report;
        };
        old = Some((store.images(), s.clone()));
        state = s;
    }
    let ops = rng.random_range(20..150);
    let Some(state) = build_step(&db, state, ops, &mut rng, &mut report) else {
        return report;
    };
    drop(db);
    let images = store.images();

    let mut choices = vec![Damage::FlipBit, Damage::RandomBlock, Damage::ZeroBlock];
    if on_files {
        choices.push(Damage::Truncate);
    }
    if old.is_some() {
        choices.extend([Damage::Stale, Damage::Stale]);
    }
    let damage = choices[rng.random_range(0..choices.len())];
    let target = if rng.random_bool(0.5) {
        Target::Data
    } else {
        Target::Log
    };
    let mut image = match target {
        Target::Data => images.data.clone(),
        Target::Log => images.log.clone(),
    };
    let what = match damage {
        Damage::FlipBit => {
            let at = pick_block(&mut rng, &image) + rng.random_range(0..BLOCK);
            let bit = rng.random_range(0..8);
            image[at] ^= 1 << bit;
            format!("flip bit {bit} of byte {at}")
        }
        Damage::RandomBlock => {
            let at = pick_block(&mut rng, &image);
            rng.fill(&mut image[at..at + BLOCK]);
            format!("random block at {at}")
        }
        Damage::ZeroBlock => {
            let at = pick_block(&mut rng, &image);
            image[at..at + BLOCK].fill(0);
            format!("zero block at {at}")
        }
        Damage::Truncate => {
            let len = rng.random_range(0..image.len() as u64);
            let len = if rng.random_bool(0.5) {
                len & !4095
            } else {
                len
            };
            image.truncate(len as usize);
            format!("truncate to {len} bytes")
        }
        Damage::Stale => {
            let (o, _) = old.as_ref().expect("an older copy");
            image = match target {
                Target::Data => o.data.clone(),
                Target::Log => o.log.clone(),
            };
            "stale older copy".to_string()
        }
    };
    report.config = describe(&format!("{damage:?} {target:?}: {what}"));
    store.put(target, &image);
    let reopen = DbConfig {
        open_mode: OpenMode::Open,
        ..cfg.clone()
    };
    let db = match store.devices().and_then(|d| Db::open(d, reopen)) {
        Ok(db) => db,
        Err(e) => {
            report.typed_rejections.push(error_class(&e));
            return report;
        }
    };
    judge(&db, &state, old.as_ref().map(|o| &o.1), &mut report);
    report
}

/// Classifies a database opened after the damage.
fn judge(db: &Db, want: &State, older: Option<&State>, report: &mut TrialReport) {
    let got = match State::read(db) {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            report
                .typed_rejections
                .push(format!("read:{}", error_class(&e)));
            return;
        }
        Err(text) => {
            report.fail(FailureClass::SilentlyWrong, text);
            return;
        }
    };
    if got != *want {
        let (lost, extra, lines) = want.diff(&got);
        let older = if older == Some(&got) {
            "the contents of the older copy, "
        } else {
            ""
        };
        report.fail(
            FailureClass::SilentlyWrong,
            format!(
                "opened and served {older}{lost} rows lost or wrong, {extra} extra: {}",
                lines.join(", ")
            ),
        );
        return;
    }
    if let Err(e) = db.verify() {
        report
            .typed_rejections
            .push(format!("verify:{}", error_class(&e)));
        return;
    }
    match db.check_pages() {
        Ok(v) if v.is_empty() => report.notes.push("repaired or unaffected".into()),
        // The contents are right and the damage (a free page, most often) is what the
        // structural check reports: detected, not silent.
        Ok(_) => report
            .typed_rejections
            .push("check_pages: violations found".into()),
        Err(e) => report
            .typed_rejections
            .push(format!("check_pages:{}", error_class(&e))),
    }
}
