//! The rig: a simulated SSD mounted through FUSE, a loop device and a file system on it.

use super::process::{run_cmd, wait_for};
use super::{DevCounters, RealdbError};
use crate::ssd::fs::{Device, SsdFs};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
