//! `wafer ssd mount` / `wafer ssd umount`: one simulated SSD exposed through FUSE as the file
//! `MOUNTPOINT/disk`, with its live report in `MOUNTPOINT/stats.json`, so unmodified programs
//! (fio, a loop device with a file system, a database) can run on the model.

use super::sim::SimArgs;
use super::CliError;
use crate::ssd::fs::{Device, SsdFs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `wafer ssd` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum SsdCommand {
    /// Mount a simulated SSD through FUSE: MOUNTPOINT/disk is its logical space (read, write,
    /// fsync, fallocate punch-hole as trim), MOUNTPOINT/stats.json its live report (host and
    /// media bytes, SSD WAF, GC, erases, wear, latency). Runs until Ctrl-C or `wafer ssd umount`,
    /// then writes the final report (--out). Needs /dev/fuse and root (or FUSE permissions).
    Mount(Box<MountArgs>),
    /// Unmount a mount of `wafer ssd mount` (it then writes its final report and exits).
    Umount(UmountArgs),
    /// Cut the power of a mounted device: its write cache (--write-cache) is lost unless it has
    /// power-loss protection; the device then runs on with what survived (as after a restart),
    /// or, with --stay-off, stays off (every I/O fails) until `wafer ssd power-on`. Programs
    /// above it keep their own caches: unmount them first, or use --stay-off so that what they
    /// write after the cut is refused, as a dead drive refuses it.
    Cut(CutArgs),
    /// Power a device left off by `wafer ssd cut --stay-off` back on.
    PowerOn(UmountArgs),
}

/// Options of `wafer ssd cut`.
#[derive(clap::Args, Debug)]
pub struct CutArgs {
    /// The mount point.
    pub mountpoint: PathBuf,
    /// Leave the device off after the cut: reads, writes and flushes of `disk` fail with EIO
    /// until `wafer ssd power-on`.
    #[arg(long)]
    pub stay_off: bool,
}

/// Options of `wafer ssd mount`: the device flags and `--config` of `wafer sim` (its workload
/// and run flags do not apply and are refused).
#[derive(clap::Args, Debug)]
pub struct MountArgs {
    /// Where to mount (an existing, empty directory).
    pub mountpoint: PathBuf,
    /// Keep the device's contents in this sparse file of physical size instead of in memory.
    #[arg(long, value_name = "FILE")]
    pub backing_file: Option<PathBuf>,
    /// Volatile write cache of the device (0: every write is on flash when acknowledged);
    /// flushed by fsync (see --no-plp for power cuts).
    #[arg(long, value_name = "SIZE", value_parser = super::size::parse_size)]
    pub write_cache: Option<u64>,
    /// No power-loss protection: a power cut (`wafer ssd cut`) loses the write cache's contents
    /// (with it, the default, the cache is destaged).
    #[arg(long)]
    pub no_plp: bool,
    /// `delay`: each request waits in wall time for its simulated completion (the program sees
    /// the model's latency and throughput; needs the timing model, on by default); `off` (the
    /// default): requests return as fast as the model computes them.
    #[arg(long = "timing-mode", value_enum, default_value = "off")]
    pub timing_mode: TimingMode,
    /// The device (same flags and TOML `[ssd]` as `wafer sim`).
    #[command(flatten)]
    pub sim: SimArgs,
}

/// How requests relate to wall time.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimingMode {
    /// Requests return as soon as the model has computed them.
    Off,
    /// Each request waits in wall time until its simulated completion.
    Delay,
}

/// Options of `wafer ssd umount`.
#[derive(clap::Args, Debug)]
pub struct UmountArgs {
    /// The mount point.
    pub mountpoint: PathBuf,
}

/// Runs `wafer ssd ...`.
pub fn main(cmd: &SsdCommand) -> Result<(), CliError> {
    match cmd {
        SsdCommand::Mount(a) => mount(a),
        SsdCommand::Umount(a) => umount(&a.mountpoint),
        SsdCommand::Cut(a) => control(&a.mountpoint, if a.stay_off { "off" } else { "cut" }),
        SsdCommand::PowerOn(a) => control(&a.mountpoint, "on"),
    }
}

/// Set by SIGINT / SIGTERM.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Whether `path` is a mount point now (from /proc/self/mountinfo). The path is resolved
/// through its parent, so a mount whose process died ("transport endpoint is not connected")
/// is still found and can be unmounted.
fn is_mounted(path: &Path) -> bool {
    let abs = match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => {
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            match parent.canonicalize() {
                Ok(p) => p.join(name),
                Err(_) => return false,
            }
        }
        _ => match path.canonicalize() {
            Ok(p) => p,
            Err(_) => return false,
        },
    };
    let target = abs.to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| {
            t.lines()
                .any(|l| l.split(' ').nth(4).is_some_and(|m| m == target))
        })
        .unwrap_or(false)
}

/// Refuses the workload and run flags of `wafer sim`, which a mount does not use.
pub(crate) fn refuse_workload_flags(s: &SimArgs) -> Result<(), CliError> {
    let given = [
        ("--pattern", s.pattern.is_some()),
        ("--trace", s.trace.is_some()),
        ("--write-size", s.write_size.is_some()),
        ("--read-share", s.read_share.is_some()),
        ("--capacity-multiple", s.capacity_multiple.is_some()),
        ("--interval", s.interval.is_some()),
        ("--no-precondition", s.no_precondition),
        ("--qd", s.qd.is_some()),
        ("--csv", s.csv.is_some()),
        ("--dump-config", s.dump_config),
    ];
    let used: Vec<&str> = given.iter().filter(|g| g.1).map(|g| g.0).collect();
    if used.is_empty() {
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "{} set(s) a workload of `wafer sim`; `wafer ssd mount` takes only device flags (the \
             workload is whatever runs on the mount)",
            used.join(", ")
        )))
    }
}

fn mount(a: &MountArgs) -> Result<(), CliError> {
    refuse_workload_flags(&a.sim)?;
    let mut cfg = a.sim.plan()?.ssd;
    if matches!(cfg.mode, flashsim::Mode::Zns(_)) {
        return Err(CliError::Usage(
            "a zoned device cannot be a file: mount a conventional or FDP device".into(),
        ));
    }
    if let Some(w) = a.write_cache {
        cfg.write_cache_bytes = w;
    }
    if a.no_plp {
        cfg.power_loss_protection = false;
    }
    cfg.validate().map_err(|e| CliError::Usage(e.to_string()))?;
    cfg.data = match &a.backing_file {
        Some(p) => flashsim::DataMode::File { path: p.clone() },
        None => flashsim::DataMode::Memory,
    };
    if !a.mountpoint.is_dir() {
        return Err(CliError::Usage(format!(
            "{} is not a directory",
            a.mountpoint.display()
        )));
    }
    if !Path::new("/dev/fuse").exists() {
        return Err(CliError::Run(
            "/dev/fuse is missing: this machine cannot mount FUSE file systems".into(),
        ));
    }
    let ssd = flashsim::Ssd::new(cfg.clone()).map_err(|e| CliError::Run(e.to_string()))?;
    let logical = ssd.capacity().logical_bytes;
    if a.timing_mode == TimingMode::Delay && !cfg.timing.enabled {
        return Err(CliError::Usage(
            "--timing-mode delay needs the timing model (drop --no-timing)".into(),
        ));
    }
    let dev = Arc::new(Mutex::new(Device::new(
        ssd,
        (a.timing_mode == TimingMode::Delay).then(std::time::Instant::now),
    )));
    // SAFETY: getuid/getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let fs = SsdFs::new(dev.clone(), uid, gid);
    let mut fcfg = fuser::Config::default();
    fcfg.mount_options
        .push(fuser::MountOption::FSName("wafer-ssd".into()));
    fcfg.mount_options
        .push(fuser::MountOption::DefaultPermissions);
    let session = fuser::spawn_mount2(fs, &a.mountpoint, &fcfg)
        .map_err(|e| CliError::Run(format!("mounting on {}: {e}", a.mountpoint.display())))?;
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    eprintln!(
        "mounted: {}/disk ({} bytes, mapping unit {} B); live report {}/stats.json; Ctrl-C or \
         `wafer ssd umount {}` unmounts",
        a.mountpoint.display(),
        logical,
        cfg.mapping_unit_bytes,
        a.mountpoint.display(),
        a.mountpoint.display()
    );
    loop {
        std::thread::sleep(Duration::from_millis(100));
        if STOP.load(Ordering::SeqCst) {
            session
                .umount_and_join()
                .map_err(|e| CliError::Run(format!("unmounting: {e}")))?;
            break;
        }
        if !is_mounted(&a.mountpoint) {
            session
                .join()
                .map_err(|e| CliError::Run(format!("after the unmount: {e}")))?;
            break;
        }
    }
    let d = dev.lock().unwrap_or_else(|p| p.into_inner());
    let r = d.ssd.report();
    eprintln!(
        "unmounted: host wrote {} B, flash programmed {} B, SSD WAF {:.3}, {} GC runs, {} erases",
        r.counters.host_write_bytes,
        r.counters.media_write_bytes,
        r.waf,
        r.counters.gc_runs,
        r.counters.block_erases
    );
    if let Some(out) = &a.sim.out {
        std::fs::write(out, d.stats_json())
            .map_err(|e| CliError::Run(format!("writing {}: {e}", out.display())))?;
        eprintln!("wrote {}", out.display());
    }
    Ok(())
}

/// Writes `word` (`cut`, `off`, `on`) to the mount's control file.
fn control(path: &Path, word: &str) -> Result<(), CliError> {
    if !is_mounted(path) {
        return Err(CliError::Usage(format!(
            "{} is not mounted",
            path.display()
        )));
    }
    std::fs::write(path.join("control"), format!("{word}\n")).map_err(|e| {
        CliError::Run(format!(
            "switching the power of {} ({word}): {e}",
            path.display()
        ))
    })?;
    Ok(())
}

fn umount(path: &Path) -> Result<(), CliError> {
    if !is_mounted(path) {
        return Err(CliError::Usage(format!(
            "{} is not mounted",
            path.display()
        )));
    }
    let st = std::process::Command::new("umount")
        .arg(path)
        .status()
        .map_err(|e| CliError::Run(format!("running umount: {e}")))?;
    if !st.success() {
        return Err(CliError::Run(format!(
            "umount {} failed (is a file on it still open?)",
            path.display()
        )));
    }
    Ok(())
}
