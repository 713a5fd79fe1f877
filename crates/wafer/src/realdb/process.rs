//! Running the databases' commands: as their own users, with the tools installed, waiting for
//! them, and killing what is left.

use super::RealdbError;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
