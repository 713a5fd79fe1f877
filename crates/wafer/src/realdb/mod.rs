//! Unmodified databases on the simulated SSD (`wafer realdb`). A [`Rig`] mounts one flashsim
//! device through FUSE (as `wafer ssd mount` does), attaches a loop device to its `disk` file and
//! puts a real file system on it; a [`Recipe`] starts a database there, loads it (not measured),
//! runs a fixed amount of work between two readings of the device's counters, and reports what
//! the database says it wrote. The device's counters then give the file system's share (host
//! bytes) and the flash's (media bytes).
//!
//! Every recipe runs its database as the database's own system user where it has one
//! (PostgreSQL as `postgres`, MariaDB as `mysql`), with settings fixed for repeatability
//! (no autovacuum, fixed seeds); docs/realdb.md lists them.

pub mod crash;
pub mod fio;
pub mod mariadb;
pub mod postgres;
mod process;
mod rig;
pub mod rocksdb;
pub mod sqlite;

pub use process::{
    as_user, dir_for, ensure_tools, log_tail, missing_basics, run_cmd, wait_for, Reaped,
};
pub use rig::{FsKind, Rig};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Why a real-database run failed.
#[derive(Debug, thiserror::Error)]
pub enum RealdbError {
    /// This machine lacks something the recipe needs (and it could not be installed).
    #[error("this machine lacks {0}")]
    Missing(String),
    /// A command failed.
    #[error("{what} failed: {detail}")]
    Command { what: String, detail: String },
    /// Setting up or tearing down the device, the loop device or the file system failed.
    #[error("{0}")]
    Rig(String),
    /// The database's output did not hold what the recipe reads from it.
    #[error("could not read {what} from: {output}")]
    Parse { what: String, output: String },
    /// A database did not come up in time.
    #[error("{0} did not start within {1} s (its log: {2})")]
    Timeout(&'static str, u64, String),
}

/// Counters of the device, read after a `sync` of everything above it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DevCounters {
    /// Bytes the host (the file system) wrote to the device.
    pub host_write_bytes: u64,
    /// Bytes the flash programmed.
    pub media_write_bytes: u64,
    /// Flushes (fsync of `disk`, from the file system's cache flushes).
    pub flushes: u64,
    /// GC runs of the device.
    pub gc_runs: u64,
    /// Block erases.
    pub erases: u64,
}

impl DevCounters {
    /// What happened between `before` and `self`.
    pub fn since(&self, before: &DevCounters) -> DevCounters {
        DevCounters {
            host_write_bytes: self.host_write_bytes - before.host_write_bytes,
            media_write_bytes: self.media_write_bytes - before.media_write_bytes,
            flushes: self.flushes - before.flushes,
            gc_runs: self.gc_runs - before.gc_runs,
            erases: self.erases - before.erases,
        }
    }
}

/// What the database says it wrote during the measured load.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DbWrites {
    /// Transactions (or operations) the load completed.
    pub txns: u64,
    /// Bytes the database wrote (its own statistics, see `source`).
    pub bytes: u64,
    /// Where `bytes` comes from.
    pub source: String,
    /// The database's own counters behind `bytes` (names as the database calls them).
    pub detail: BTreeMap<String, u64>,
}

/// One measured run of one setting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RealdbRun {
    /// The setting, as the recipe names it (e.g. `journal_mode=WAL`).
    pub setting: String,
    /// Which repetition of the setting (0-based).
    pub repeat: u32,
    pub db: DbWrites,
    /// Device counters over the load.
    pub device: DevCounters,
    pub db_bytes_per_txn: f64,
    pub host_bytes_per_txn: f64,
    pub media_bytes_per_txn: f64,
    /// host / DB bytes: what the file system adds (its journal, metadata, rounding to blocks).
    pub fs_waf: f64,
    /// media / host bytes: the SSD's own amplification.
    pub ssd_waf: f64,
    /// media / DB bytes.
    pub total_waf: f64,
    /// Wall-clock seconds of the load (the device answers as fast as the model computes).
    pub wall_s: f64,
}

impl RealdbRun {
    /// A run from its counters.
    pub fn new(setting: &str, repeat: u32, db: DbWrites, device: DevCounters, wall_s: f64) -> Self {
        let t = db.txns.max(1) as f64;
        let ratio = |a: u64, b: u64| a as f64 / b.max(1) as f64;
        RealdbRun {
            setting: setting.to_string(),
            repeat,
            db_bytes_per_txn: db.bytes as f64 / t,
            host_bytes_per_txn: device.host_write_bytes as f64 / t,
            media_bytes_per_txn: device.media_write_bytes as f64 / t,
            fs_waf: ratio(device.host_write_bytes, db.bytes),
            ssd_waf: ratio(device.media_write_bytes, device.host_write_bytes),
            total_waf: ratio(device.media_write_bytes, db.bytes),
            db,
            device,
            wall_s,
        }
    }
}

/// How far repeated runs of one setting agree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub setting: String,
    pub runs: u32,
    /// (max - min) / mean of the flash bytes programmed, in percent.
    pub media_bytes_pct: f64,
    /// The same for the host bytes.
    pub host_bytes_pct: f64,
    /// The same for the database's own bytes.
    pub db_bytes_pct: f64,
}

/// Spread of each setting that ran more than once.
pub fn spreads(runs: &[RealdbRun]) -> Vec<Spread> {
    let mut settings: Vec<&str> = Vec::new();
    for r in runs {
        if !settings.contains(&r.setting.as_str()) {
            settings.push(&r.setting);
        }
    }
    let pct = |v: &[u64]| {
        let max = *v.iter().max().unwrap_or(&0) as f64;
        let min = *v.iter().min().unwrap_or(&0) as f64;
        let mean = v.iter().sum::<u64>() as f64 / v.len().max(1) as f64;
        if mean > 0.0 {
            100.0 * (max - min) / mean
        } else {
            0.0
        }
    };
    settings
        .into_iter()
        .filter_map(|s| {
            let of: Vec<&RealdbRun> = runs.iter().filter(|r| r.setting == s).collect();
            (of.len() > 1).then(|| Spread {
                setting: s.to_string(),
                runs: of.len() as u32,
                media_bytes_pct: pct(&of
                    .iter()
                    .map(|r| r.device.media_write_bytes)
                    .collect::<Vec<_>>()),
                host_bytes_pct: pct(&of
                    .iter()
                    .map(|r| r.device.host_write_bytes)
                    .collect::<Vec<_>>()),
                db_bytes_pct: pct(&of.iter().map(|r| r.db.bytes).collect::<Vec<_>>()),
            })
        })
        .collect()
}

/// The device a run used, as the report shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceShape {
    pub logical_bytes: u64,
    pub spare_factor: f64,
    pub mapping_unit_bytes: u32,
    pub geometry: String,
    pub write_cache_bytes: u64,
    /// Whether the logical space was written once before the file system was made.
    pub preconditioned: bool,
}

impl DeviceShape {
    /// The shape of `cfg`.
    pub fn of(cfg: &flashsim::SsdConfig, preconditioned: bool) -> DeviceShape {
        let g = &cfg.geometry;
        DeviceShape {
            logical_bytes: cfg.logical_bytes,
            spare_factor: cfg.capacity().spare_factor,
            mapping_unit_bytes: cfg.mapping_unit_bytes,
            geometry: format!(
                "{} ch x {} dies x {} planes x {} blocks x {} pages of {} KiB",
                g.channels,
                g.dies_per_channel,
                g.planes_per_die,
                g.blocks_per_plane,
                g.pages_per_block,
                g.page_size_bytes / 1024
            ),
            write_cache_bytes: cfg.write_cache_bytes,
            preconditioned,
        }
    }
}

/// The whole result of `wafer realdb` (the input of `wafer report`; `kind` is `"realdb"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RealdbResult {
    pub kind: String,
    /// The recipe (`sqlite`, `postgres`, `mariadb`, `rocksdb`).
    pub recipe: String,
    /// What the recipe ran, in words.
    pub workload: String,
    /// The file system on the device.
    pub fs: String,
    pub device: DeviceShape,
    pub runs: Vec<RealdbRun>,
    /// How far repetitions agree (settings run more than once).
    pub spread: Vec<Spread>,
    /// Crash experiments (`--crash`).
    pub crashes: Vec<crash::CrashResult>,
}

/// A database recipe: how to set a database up on a file system, load it and measure it.
pub trait Recipe {
    /// Its name on the command line.
    fn name(&self) -> &'static str;
    /// The commands it needs and the Debian package of each.
    fn tools(&self) -> Vec<(String, &'static str)>;
    /// Whether it runs on a file system (else on the device's file itself, [`Rig::disk`]).
    fn needs_fs(&self) -> bool {
        true
    }
    /// The settings it compares, in order.
    fn settings(&self) -> Vec<String>;
    /// What it runs, in words (for the table's heading).
    fn workload(&self) -> String;
    /// Sets setting `i` up on the fresh file system `rig.dir()` (not measured), then measures
    /// its load with [`Rig::measure`]; returns the database's writes and the device's deltas.
    fn run(&self, i: usize, rig: &Rig) -> Result<(DbWrites, DevCounters, f64), RealdbError>;
}

/// Runs every setting of `recipe` `repeat` times, each on a fresh device and file system.
pub fn run_all(
    recipe: &dyn Recipe,
    cfg: &flashsim::SsdConfig,
    fs: FsKind,
    precondition: bool,
    repeat: u32,
) -> Result<Vec<RealdbRun>, RealdbError> {
    let settings = recipe.settings();
    let mut runs = Vec::new();
    for rep in 0..repeat {
        for (i, s) in settings.iter().enumerate() {
            let rig = Rig::new(cfg, recipe.needs_fs().then_some(fs), precondition)?;
            let (db, dev, wall) = recipe.run(i, &rig)?;
            drop(rig);
            let r = RealdbRun::new(s, rep, db, dev, wall);
            eprintln!(
                "{} {}{}: {} txns, {:.0} DB B/txn, {:.0} host B/txn, {:.0} flash B/txn, SSD WAF \
                 {:.2}, {:.1} s",
                recipe.name(),
                s,
                if repeat > 1 {
                    format!(" (run {})", rep + 1)
                } else {
                    String::new()
                },
                r.db.txns,
                r.db_bytes_per_txn,
                r.host_bytes_per_txn,
                r.media_bytes_per_txn,
                r.ssd_waf,
                r.wall_s
            );
            runs.push(r);
        }
    }
    Ok(runs)
}

/// Parses `key value`-per-line output (`sep` between) into numbers, for the keys asked.
pub fn parse_pairs(out: &str, sep: char, keys: &[&str]) -> Result<Vec<u64>, RealdbError> {
    keys.iter()
        .map(|k| {
            out.lines()
                .filter_map(|l| l.split_once(sep))
                .find(|(a, _)| a.trim() == *k)
                .and_then(|(_, v)| v.trim().parse().ok())
                .ok_or_else(|| RealdbError::Parse {
                    what: k.to_string(),
                    output: out.chars().take(400).collect(),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(setting: &str, media: u64) -> RealdbRun {
        let db = DbWrites {
            txns: 10,
            bytes: 1000,
            ..DbWrites::default()
        };
        let dev = DevCounters {
            host_write_bytes: 2000,
            media_write_bytes: media,
            ..DevCounters::default()
        };
        RealdbRun::new(setting, 0, db, dev, 1.0)
    }

    #[test]
    fn ratios_and_spread() {
        let r = run("a", 3000);
        assert_eq!(r.db_bytes_per_txn, 100.0);
        assert_eq!(r.fs_waf, 2.0);
        assert_eq!(r.ssd_waf, 1.5);
        assert_eq!(r.total_waf, 3.0);
        let s = spreads(&[run("a", 3000), run("b", 1), run("a", 3300)]);
        assert_eq!(s.len(), 1, "only settings that ran twice have a spread");
        assert!((s[0].media_bytes_pct - 100.0 * 300.0 / 3150.0).abs() < 1e-9);
        assert_eq!(s[0].host_bytes_pct, 0.0);
    }

    #[test]
    fn pairs_parse_and_name_what_is_missing() {
        let out = "a: 1\nb : 22\nc: x\n";
        assert_eq!(parse_pairs(out, ':', &["b", "a"]).unwrap(), vec![22, 1]);
        let e = parse_pairs(out, ':', &["c"]).unwrap_err().to_string();
        assert!(e.contains("could not read c"), "{e}");
    }
}
