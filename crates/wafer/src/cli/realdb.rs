//! `wafer realdb`: an unmodified database on the simulated SSD. The device is mounted through
//! FUSE (as `wafer ssd mount` does), a loop device puts a real file system on it, the database
//! runs a fixed load there, and the run reports what the database wrote (its `write()` bytes),
//! what reached the device (host) and what the flash programmed (media). One recipe so far:
//! SQLite with its rollback journal against its write-ahead log.

use super::sim::SimArgs;
use super::ssd::refuse_workload_flags;
use super::CliError;
use crate::ssd::fs::{Device, SsdFs};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

/// The device's logical capacity when no `--capacity` is given.
const DEFAULT_CAPACITY: u64 = 256 << 20;

/// The recipes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Recipe {
    /// SQLite 3 (the sqlite3 CLI): one-row upserts, each its own transaction, with
    /// `journal_mode=DELETE` and `journal_mode=WAL` (synchronous=FULL).
    Sqlite,
}

/// Options of `wafer realdb`. The table is created and filled first (not measured); the load's
/// bytes are counted from then on, on both sides.
#[derive(clap::Args, Debug)]
pub struct RealdbArgs {
    /// The database and its load.
    #[arg(value_enum)]
    pub recipe: Recipe,
    /// Transactions of the measured load.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    pub txns: u64,
    /// Rows the table is filled with first (the upserts pick among them).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub rows: u64,
    /// File system put on the device.
    #[arg(long, value_enum, default_value = "ext4")]
    pub fs: FsKind,
    /// The device (same flags and TOML `[ssd]` as `wafer sim`; --capacity defaults to 256 MiB
    /// here) and `--out FILE` for the runs as JSON.
    #[command(flatten)]
    pub sim: SimArgs,
}

/// File systems.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FsKind {
    /// ext4 (mkfs.ext4).
    Ext4,
    /// XFS (mkfs.xfs, from xfsprogs).
    Xfs,
}

/// One setting's run.
#[derive(Debug, Serialize)]
#[allow(missing_docs)]
pub struct RealdbRun {
    pub recipe: Recipe,
    pub setting: String,
    pub txns: u64,
    /// Bytes the database process passed to write() during the load.
    pub db_write_bytes: u64,
    /// Bytes the device received during the load (the file system's writes).
    pub host_write_bytes: u64,
    /// Bytes the flash programmed during the load.
    pub media_write_bytes: u64,
    /// Device flushes during the load.
    pub flushes: u64,
    pub db_bytes_per_txn: f64,
    pub host_bytes_per_txn: f64,
    pub media_bytes_per_txn: f64,
    /// host / db: the file system's amplification.
    pub fs_waf: f64,
    /// media / host.
    pub ssd_waf: f64,
    /// media / db.
    pub total_waf: f64,
}

fn run_cmd(cmd: &mut Command, what: &str) -> Result<String, CliError> {
    let o = cmd
        .output()
        .map_err(|e| CliError::Run(format!("{what}: {e}")))?;
    if !o.status.success() {
        return Err(CliError::Run(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// What this machine lacks for a recipe (root, /dev/fuse, losetup, mkfs, the database).
pub fn missing(recipe: Recipe, fs: FsKind) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("root (for the loop device and mounts)".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse".into());
    }
    let mkfs = match fs {
        FsKind::Ext4 => "mkfs.ext4",
        FsKind::Xfs => "mkfs.xfs",
    };
    let tool = match recipe {
        Recipe::Sqlite => "sqlite3",
    };
    ["losetup", mkfs, tool]
        .into_iter()
        .find(|t| {
            Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .output()
                .map(|o| !o.status.success())
                .unwrap_or(true)
        })
        .map(|t| format!("the `{t}` command"))
}

/// Device counters: host bytes written, media bytes written, flushes.
fn counters(dev: &Arc<Mutex<Device>>) -> (u64, u64, u64) {
    let d = dev.lock().unwrap_or_else(|p| p.into_inner());
    let c = d.ssd.counters();
    (c.host_write_bytes, c.media_write_bytes, c.flushes)
}

/// Mounts, lays out the file system, runs `setup` (not measured) and `load` in it, tears down;
/// returns the device deltas of the load and what `load` returned.
fn with_fs<T>(
    cfg: &flashsim::SsdConfig,
    fs: FsKind,
    setup: impl FnOnce(&Path) -> Result<(), CliError>,
    load: impl FnOnce(&Path) -> Result<T, CliError>,
) -> Result<(T, (u64, u64, u64)), CliError> {
    let work = tempfile::tempdir().map_err(|e| CliError::Run(e.to_string()))?;
    let fuse_dir = work.path().join("ssd");
    let fs_dir = work.path().join("fs");
    std::fs::create_dir(&fuse_dir)
        .and_then(|_| std::fs::create_dir(&fs_dir))
        .map_err(|e| CliError::Run(e.to_string()))?;
    let ssd = flashsim::Ssd::new(cfg.clone()).map_err(|e| CliError::Run(e.to_string()))?;
    let dev = Arc::new(Mutex::new(Device {
        ssd,
        now_ns: 0,
        partial_units: 0,
        delay_from: None,
        power_cuts: 0,
        lost_units: 0,
    }));
    let mut fcfg = fuser::Config::default();
    fcfg.mount_options
        .push(fuser::MountOption::FSName("wafer-ssd".into()));
    let session = fuser::spawn_mount2(SsdFs::new(dev.clone(), 0, 0), &fuse_dir, &fcfg)
        .map_err(|e| CliError::Run(format!("FUSE mount: {e}")))?;
    let disk = fuse_dir.join("disk");
    let loopdev = run_cmd(
        Command::new("losetup").args(["-f", "--show"]).arg(&disk),
        "losetup",
    )?
    .trim()
    .to_string();
    let result = (|| {
        let mut mkfs = match fs {
            FsKind::Ext4 => {
                let mut c = Command::new("mkfs.ext4");
                c.args(["-q", "-F"]);
                c
            }
            FsKind::Xfs => {
                let mut c = Command::new("mkfs.xfs");
                c.args(["-q", "-f"]);
                c
            }
        };
        run_cmd(mkfs.arg(&loopdev), "mkfs")?;
        run_cmd(Command::new("mount").arg(&loopdev).arg(&fs_dir), "mount")?;
        let r = (|| {
            setup(&fs_dir)?;
            run_cmd(&mut Command::new("sync"), "sync")?;
            let before = counters(&dev);
            let out = load(&fs_dir)?;
            run_cmd(&mut Command::new("sync"), "sync")?;
            let after = counters(&dev);
            Ok((
                out,
                (after.0 - before.0, after.1 - before.1, after.2 - before.2),
            ))
        })();
        let _ = Command::new("umount").arg(&fs_dir).status();
        r
    })();
    let _ = Command::new("losetup").args(["-d", &loopdev]).status();
    let _ = session.umount_and_join();
    result
}

/// Runs an SQL script with the sqlite3 CLI on `dir/t.db`; returns its output.
fn sqlite(dir: &Path, name: &str, sql: &str) -> Result<String, CliError> {
    let script = dir.join(name);
    std::fs::write(&script, sql).map_err(|e| CliError::Run(e.to_string()))?;
    run_cmd(
        Command::new("sqlite3")
            .arg(dir.join("t.db"))
            .arg(format!(".read {}", script.display())),
        "sqlite3",
    )
}

/// The SQLite setup (not measured): the journal mode and the table filled with `rows` rows in
/// one transaction.
fn sqlite_setup(dir: &Path, mode: &str, rows: u64) -> Result<(), CliError> {
    let sql = format!(
        "PRAGMA journal_mode={mode};\nCREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB);\nBEGIN;\n\
         WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {rows}) \
         INSERT INTO t SELECT i, randomblob(100) FROM n;\nCOMMIT;\n"
    );
    sqlite(dir, "setup.sql", &sql).map(|_| ())
}

/// The SQLite load: `txns` one-row upserts of 100-byte values, each committed with
/// synchronous=FULL; returns the bytes the sqlite3 process passed to write() (its
/// /proc/PID/io, read by a shell it starts at the end).
fn sqlite_load(dir: &Path, rows: u64, txns: u64) -> Result<u64, CliError> {
    let mut sql = String::from("PRAGMA synchronous=FULL;\n");
    for _ in 0..txns {
        let _ = writeln!(
            sql,
            "BEGIN; INSERT OR REPLACE INTO t VALUES(abs(random()) % {rows}, randomblob(100)); \
             COMMIT;"
        );
    }
    sql.push_str(".shell grep wchar /proc/$PPID/io\n");
    let out = sqlite(dir, "load.sql", &sql)?;
    out.lines()
        .filter_map(|l| l.strip_prefix("wchar:"))
        .find_map(|v| v.trim().parse().ok())
        .ok_or_else(|| {
            CliError::Run(format!(
                "could not read sqlite3's write counters from: {out}"
            ))
        })
}

/// Runs `wafer realdb`.
pub fn main(a: &RealdbArgs) -> Result<(), CliError> {
    refuse_workload_flags(&a.sim)?;
    if let Some(what) = missing(a.recipe, a.fs) {
        return Err(CliError::Run(format!(
            "this machine lacks {what}; install it (as root, with apt-get: sqlite3, xfsprogs for \
             mkfs.xfs, mount for losetup) or run elsewhere"
        )));
    }
    let mut cfg = a.sim.plan()?.ssd;
    if a.sim.capacity.is_none() && a.sim.config.is_none() {
        cfg = super::resize_ssd(&cfg, Some(DEFAULT_CAPACITY), None);
    }
    if matches!(cfg.mode, flashsim::Mode::Zns(_)) {
        return Err(CliError::Usage(
            "a zoned device cannot hold a file system: use a conventional or FDP device".into(),
        ));
    }
    cfg.data = flashsim::DataMode::Memory;
    let mut runs = Vec::new();
    for mode in ["DELETE", "WAL"] {
        let (db, (host, media, flushes)) = with_fs(
            &cfg,
            a.fs,
            |dir| sqlite_setup(dir, mode, a.rows),
            |dir| sqlite_load(dir, a.rows, a.txns),
        )?;
        let t = a.txns as f64;
        let r = RealdbRun {
            recipe: a.recipe,
            setting: format!("journal_mode={mode}"),
            txns: a.txns,
            db_write_bytes: db,
            host_write_bytes: host,
            media_write_bytes: media,
            flushes,
            db_bytes_per_txn: db as f64 / t,
            host_bytes_per_txn: host as f64 / t,
            media_bytes_per_txn: media as f64 / t,
            fs_waf: host as f64 / db.max(1) as f64,
            ssd_waf: media as f64 / host.max(1) as f64,
            total_waf: media as f64 / db.max(1) as f64,
        };
        eprintln!(
            "sqlite {}: {:.0} DB B/txn, {:.0} host B/txn, {:.0} flash B/txn, SSD WAF {:.2}",
            r.setting, r.db_bytes_per_txn, r.host_bytes_per_txn, r.media_bytes_per_txn, r.ssd_waf
        );
        runs.push(r);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n## SQLite on the simulated SSD ({:?} on a loop device, {} rows, {} transactions)\n\n\
         | setting | DB B/txn | host B/txn | flash B/txn | flushes/txn | FS WAF | SSD WAF | total \
         WAF |\n|---|---|---|---|---|---|---|---|",
        a.fs, a.rows, a.txns
    );
    for r in &runs {
        let _ = writeln!(
            out,
            "| {} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} |",
            r.setting,
            r.db_bytes_per_txn,
            r.host_bytes_per_txn,
            r.media_bytes_per_txn,
            r.flushes as f64 / r.txns as f64,
            r.fs_waf,
            r.ssd_waf,
            r.total_waf
        );
    }
    super::human::print_stdout(&out);
    if let Some(p) = &a.sim.out {
        let text = serde_json::to_string_pretty(&runs)
            .map_err(|e| CliError::Run(format!("encoding: {e}")))?;
        std::fs::write(p, text)
            .map_err(|e| CliError::Run(format!("writing {}: {e}", p.display())))?;
    }
    Ok(())
}
