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
pub mod rocksdb;
pub mod sqlite;

use crate::ssd::fs::{Device, SsdFs};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// Runs a command to completion; its stdout, or a [`RealdbError::Command`] with its stderr.
pub fn run_cmd(cmd: &mut Command, what: &str) -> Result<String, RealdbError> {
    let o = cmd.output().map_err(|e| RealdbError::Command {
        what: what.to_string(),
        detail: e.to_string(),
    })?;
    if !o.status.success() {
        let mut detail = String::from_utf8_lossy(&o.stderr).trim().to_string();
        if detail.is_empty() {
            detail = String::from_utf8_lossy(&o.stdout).trim().to_string();
        }
        // The first lines say what went wrong (a usage text may follow).
        let tail: String = detail.lines().take(4).collect::<Vec<_>>().join("\n");
        return Err(RealdbError::Command {
            what: what.to_string(),
            detail: format!("{} ({})", tail, o.status),
        });
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Whether `tool` is a command here (on PATH, or an absolute path that exists).
pub fn have(tool: &str) -> bool {
    if tool.starts_with('/') {
        return Path::new(tool).exists();
    }
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Installs the packages of the missing tools with apt-get (as root), once with the package
/// lists as they are and once more after `apt-get update`. Errs naming what is still missing.
pub fn ensure_tools(tools: &[(String, &str)]) -> Result<(), RealdbError> {
    let missing = |tools: &[(String, &str)]| -> Vec<(String, String)> {
        tools
            .iter()
            .filter(|(t, _)| !have(t))
            .map(|(t, p)| (t.to_string(), p.to_string()))
            .collect()
    };
    let mut m = missing(tools);
    if m.is_empty() {
        return Ok(());
    }
    let mut pkgs: Vec<String> = m.iter().map(|(_, p)| p.clone()).collect();
    pkgs.dedup();
    if is_root() && have("apt-get") {
        for update in [false, true] {
            if update {
                let _ = Command::new("apt-get")
                    .args(["update", "-q"])
                    .stdout(Stdio::null())
                    .status();
            }
            eprintln!("installing {} with apt-get", pkgs.join(" "));
            let _ = Command::new("apt-get")
                .args(["install", "-y", "-q"])
                .args(&pkgs)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .stdout(Stdio::null())
                .status();
            m = missing(tools);
            if m.is_empty() {
                return Ok(());
            }
        }
    }
    Err(RealdbError::Missing(format!(
        "{} (Debian package {}; install it as root with apt-get)",
        m.iter()
            .map(|(t, _)| format!("`{t}`"))
            .collect::<Vec<_>>()
            .join(", "),
        pkgs.join(" ")
    )))
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// What this machine lacks for any recipe: root, /dev/fuse, loop devices, `losetup`.
pub fn missing_basics() -> Option<String> {
    if !is_root() {
        return Some("root (for the loop device and the mounts)".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse".into());
    }
    if !Path::new("/dev/loop-control").exists() {
        return Some("loop devices (/dev/loop-control)".into());
    }
    if !have("losetup") {
        return Some("the `losetup` command (package mount)".into());
    }
    None
}

/// The user id and group id of a system user.
pub fn user_ids(name: &str) -> Result<(u32, u32), RealdbError> {
    let c = std::ffi::CString::new(name).map_err(|e| RealdbError::Rig(e.to_string()))?;
    // SAFETY: getpwnam takes a NUL-terminated name; the record it returns is read at once,
    // before any other call could reuse its storage (this thread makes none in between).
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        return Err(RealdbError::Missing(format!("the system user `{name}`")));
    }
    // SAFETY: pw is non-null and points to a valid passwd record (see above).
    Ok(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

/// Makes `cmd` run as system user `name` (its uid, gid and HOME of /tmp).
pub fn as_user(cmd: &mut Command, name: &str) -> Result<(), RealdbError> {
    use std::os::unix::process::CommandExt;
    let (uid, gid) = user_ids(name)?;
    cmd.uid(uid).gid(gid).env("HOME", "/tmp");
    Ok(())
}

/// Creates `dir` (and parents) owned by system user `name`.
pub fn dir_for(dir: &Path, name: &str) -> Result<(), RealdbError> {
    let (uid, gid) = user_ids(name)?;
    std::fs::create_dir_all(dir)
        .and_then(|_| std::os::unix::fs::chown(dir, Some(uid), Some(gid)))
        .map_err(|e| RealdbError::Rig(format!("creating {}: {e}", dir.display())))
}

/// Waits until `ready()` or `secs` pass.
pub fn wait_for(secs: u64, mut ready: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    ready()
}

/// The last lines of a log file (for error messages).
pub fn log_tail(path: &Path) -> String {
    let t = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = t.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// A child process killed (SIGKILL) and reaped when dropped, unless it exited.
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// File systems a rig can lay out.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FsKind {
    /// ext4 (mkfs.ext4).
    Ext4,
    /// XFS (mkfs.xfs, from xfsprogs).
    Xfs,
}

impl FsKind {
    /// Its mkfs command and the Debian package that has it.
    pub fn mkfs(self) -> (&'static str, &'static str) {
        match self {
            FsKind::Ext4 => ("mkfs.ext4", "e2fsprogs"),
            FsKind::Xfs => ("mkfs.xfs", "xfsprogs"),
        }
    }

    /// Its name as mount(8) knows it.
    pub fn name(self) -> &'static str {
        match self {
            FsKind::Ext4 => "ext4",
            FsKind::Xfs => "xfs",
        }
    }
}

/// A simulated SSD mounted through FUSE, a loop device on its `disk` and a file system on that,
/// mounted at [`Rig::dir`]. Everything is torn down on drop (stop the databases first).
pub struct Rig {
    dev: Arc<Mutex<Device>>,
    session: Option<fuser::BackgroundSession>,
    work: tempfile::TempDir,
    loopdev: Option<String>,
    fs: Option<FsKind>,
}

impl Rig {
    /// Mounts a fresh device of `cfg` (data kept in memory) and, given `fs`, makes a file
    /// system on it. With `precondition`, the device's logical space is written once,
    /// sequentially, first (an aged drive, as `wafer sim` starts from), and mkfs does not
    /// discard it.
    pub fn new(
        cfg: &flashsim::SsdConfig,
        fs: Option<FsKind>,
        precondition: bool,
    ) -> Result<Rig, RealdbError> {
        let rig_err = |e: std::io::Error| RealdbError::Rig(e.to_string());
        // Daemons that detach from their starter (pg_ctl's postmaster) become this process's
        // children, so that they are reaped here when they die: a database refuses to start
        // while its predecessor's pid exists, and a zombie's does.
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes an integer flag and nothing else.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        let work = tempfile::Builder::new()
            .prefix("wafer-realdb")
            .tempdir()
            .map_err(rig_err)?;
        // Databases that run as their own users must reach the mount point.
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o755))
                .map_err(rig_err)?;
        }
        for d in ["ssd", "fs", "run"] {
            std::fs::create_dir(work.path().join(d)).map_err(rig_err)?;
        }
        let mut cfg = cfg.clone();
        cfg.data = flashsim::DataMode::Memory;
        let mut ssd = flashsim::Ssd::new(cfg).map_err(|e| RealdbError::Rig(e.to_string()))?;
        let mut now = 0;
        if precondition {
            let logical = ssd.capacity().logical_bytes;
            let chunk = (1u64 << 20).min(logical);
            let zeros = vec![0u8; chunk as usize];
            let mut off = 0;
            while off < logical {
                let n = chunk.min(logical - off);
                now = ssd
                    .write(now, off, n, 0, Some(&zeros[..n as usize]))
                    .and_then(|t| ssd.flush(t))
                    .map_err(|e| RealdbError::Rig(format!("preconditioning: {e}")))?;
                off += n;
            }
        }
        let mut device = Device::new(ssd, None);
        device.now_ns = now;
        let dev = Arc::new(Mutex::new(device));
        let mut fcfg = fuser::Config::default();
        fcfg.mount_options
            .push(fuser::MountOption::FSName("wafer-ssd".into()));
        let session = fuser::spawn_mount2(
            SsdFs::new(dev.clone(), 0, 0),
            work.path().join("ssd"),
            &fcfg,
        )
        .map_err(|e| RealdbError::Rig(format!("FUSE mount: {e}")))?;
        let mut rig = Rig {
            dev,
            session: Some(session),
            work,
            loopdev: None,
            fs,
        };
        let Some(fs) = fs else {
            return Ok(rig);
        };
        rig.attach()?;
        let loopdev = rig.loopdev.clone().unwrap_or_default();
        let mut mkfs = Command::new(fs.mkfs().0);
        match fs {
            FsKind::Ext4 => mkfs.args(["-q", "-F"]),
            FsKind::Xfs => mkfs.args(["-q", "-f"]),
        };
        if precondition {
            match fs {
                FsKind::Ext4 => mkfs.args(["-E", "nodiscard"]),
                FsKind::Xfs => mkfs.arg("-K"),
            };
        }
        run_cmd(mkfs.arg(&loopdev), "mkfs")?;
        rig.mount_fs()?;
        Ok(rig)
    }

    /// Where the file system is mounted.
    pub fn dir(&self) -> PathBuf {
        self.work.path().join("fs")
    }

    /// The device's logical space as a file (the FUSE mount's `disk`).
    pub fn disk(&self) -> PathBuf {
        self.work.path().join("ssd").join("disk")
    }

    /// A directory outside the device for sockets, logs and scripts (world-readable).
    pub fn run_dir(&self) -> PathBuf {
        self.work.path().join("run")
    }

    /// The device (for the crash experiments).
    pub fn device(&self) -> &Arc<Mutex<Device>> {
        &self.dev
    }

    fn attach(&mut self) -> Result<(), RealdbError> {
        let disk = self.disk();
        let l = run_cmd(
            Command::new("losetup").args(["-f", "--show"]).arg(&disk),
            "losetup",
        )?;
        self.loopdev = Some(l.trim().to_string());
        Ok(())
    }

    fn mount_fs(&self) -> Result<(), RealdbError> {
        let l = self.loopdev.as_deref().unwrap_or_default();
        let fs = self.fs.map(FsKind::name).unwrap_or("auto");
        run_cmd(
            Command::new("mount")
                .args(["-t", fs])
                .arg(l)
                .arg(self.dir()),
            "mount",
        )
        .map(|_| ())
    }

    /// Unmounts the file system and detaches the loop device, tolerating a dead device (the
    /// file system's last writes then fail, as on a drive that lost power).
    fn detach(&mut self) {
        let dir = self.dir();
        let unmounted = wait_for(20, || {
            Command::new("umount")
                .arg(&dir)
                .stderr(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false)
                || !is_mountpoint(&dir)
        });
        if !unmounted {
            let _ = Command::new("umount").arg("-l").arg(&dir).status();
        }
        if let Some(l) = self.loopdev.take() {
            let _ = Command::new("losetup").args(["-d", &l]).status();
        }
    }

    /// The device's counters after `sync` (everything the file system holds reaches it).
    pub fn counters(&self) -> Result<DevCounters, RealdbError> {
        run_cmd(&mut Command::new("sync"), "sync")?;
        let d = self.dev.lock().unwrap_or_else(|p| p.into_inner());
        let c = d.ssd.counters();
        Ok(DevCounters {
            host_write_bytes: c.host_write_bytes,
            media_write_bytes: c.media_write_bytes,
            flushes: c.flushes,
            gc_runs: c.gc_runs,
            erases: c.block_erases,
        })
    }

    /// Runs `load` between two readings of the counters; returns its result, the deltas and
    /// the wall seconds it took.
    pub fn measure<T>(
        &self,
        load: impl FnOnce() -> Result<T, RealdbError>,
    ) -> Result<(T, DevCounters, f64), RealdbError> {
        let before = self.counters()?;
        let t0 = Instant::now();
        let out = load()?;
        let wall = t0.elapsed().as_secs_f64();
        let after = self.counters()?;
        Ok((out, after.since(&before), wall))
    }

    /// Cuts the device's power right after its next `writes` writes complete (or after
    /// `wait` if fewer come) and leaves it off: its unflushed write cache is lost without
    /// power-loss protection. Returns the mapping units lost.
    pub fn power_off_after(&self, writes: u64, wait: Duration) -> u64 {
        let lock = || self.dev.lock().unwrap_or_else(|p| p.into_inner());
        let before = {
            let mut d = lock();
            d.cut_after_writes = Some(writes.max(1));
            d.lost_units
        };
        wait_for(wait.as_secs().max(1), || lock().off);
        let mut d = lock();
        d.cut_after_writes = None;
        if !d.off {
            let _ = d.power_cut();
            d.off = true;
        }
        d.lost_units - before
    }

    /// After [`Rig::power_off_after`]: kills every process that uses the file system, drops the
    /// file system and loop device (what they still held is lost, as in a machine's power
    /// cut), powers the device on and mounts the file system again (its journal replays).
    pub fn restart(&mut self) -> Result<(), RealdbError> {
        let left = kill_users_of(&self.dir());
        if left > 0 {
            return Err(RealdbError::Rig(format!(
                "{left} process(es) on the file system survived SIGKILL for 30 s"
            )));
        }
        self.detach();
        self.dev.lock().unwrap_or_else(|p| p.into_inner()).off = false;
        self.attach()?;
        self.mount_fs()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        // Whatever still runs there (a database left behind by an error) would keep the file
        // system busy.
        kill_users_of(&self.dir());
        self.detach();
        if let Some(s) = self.session.take() {
            let _ = s.umount_and_join();
        }
    }
}

/// The processes whose working directory or an open file is under `dir`.
fn users_of(dir: &Path) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            let base = PathBuf::from(format!("/proc/{pid}"));
            let under = |p: &Path| std::fs::read_link(p).is_ok_and(|t| t.starts_with(dir));
            under(&base.join("cwd"))
                || std::fs::read_dir(base.join("fd"))
                    .map(|fds| fds.filter_map(|f| f.ok()).any(|f| under(&f.path())))
                    .unwrap_or(false)
        })
        .collect()
}

/// Kills (SIGKILL) every process that uses `dir`, until none is left and every one killed is
/// gone (reaped: a database checks whether its predecessor's pid is alive, and a zombie's is)
/// or 30 s pass; returns how many are left.
pub fn kill_users_of(dir: &Path) -> usize {
    let mut killed: Vec<i32> = Vec::new();
    let mut left = 0;
    wait_for(30, || {
        // Reap whatever died (this process is a subreaper, see `Rig::new`).
        // SAFETY: waitpid with a null status pointer and WNOHANG only reaps a dead child.
        while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
        let pids = users_of(dir);
        for &pid in &pids {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            if !killed.contains(&pid) {
                killed.push(pid);
            }
        }
        killed.retain(|pid| Path::new(&format!("/proc/{pid}")).exists());
        left = pids.len().max(killed.len());
        left == 0
    });
    left
}

/// Whether `dir` is a mount point (from /proc/self/mountinfo).
fn is_mountpoint(dir: &Path) -> bool {
    let target = dir.to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| {
            t.lines()
                .any(|l| l.split(' ').nth(4).is_some_and(|m| m == target))
        })
        .unwrap_or(false)
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
