//! `wafer ssd mount` and `wafer realdb`: the simulated SSD under unmodified programs (fio,
//! file systems, SQLite). They need root and /dev/fuse and skip, saying why, without.

use super::{json, stderr, wafer};
use serde_json::Value;
use std::process::Command;

/// Whether this process may mount FUSE file systems (root and /dev/fuse); prints why not.
fn can_mount() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let fuse = std::path::Path::new("/dev/fuse").exists();
    if !(root && fuse) {
        eprintln!("skipped: `wafer ssd mount` needs root and /dev/fuse (root {root}, fuse {fuse})");
    }
    root && fuse
}

/// A `wafer ssd mount` child on a fresh directory; unmounted (and reaped) on drop.
struct Mount {
    dir: tempfile::TempDir,
    child: std::process::Child,
    out: std::path::PathBuf,
}

impl Mount {
    fn new(device: &[&str]) -> Mount {
        let dir = tempfile::tempdir().unwrap();
        let mp = dir.path().join("mnt");
        std::fs::create_dir(&mp).unwrap();
        let out = dir.path().join("final.json");
        let mut args = vec![
            "ssd",
            "mount",
            mp.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(device);
        let child = Command::new(env!("CARGO_BIN_EXE_wafer"))
            .args(&args)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let m = Mount { dir, child, out };
        for _ in 0..100 {
            if m.path("stats.json").exists() {
                return m;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the mount did not come up");
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join("mnt").join(name)
    }

    fn stats(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.path("stats.json")).unwrap()).unwrap()
    }

    /// `wafer ssd umount`, then the mount's final report.
    fn finish(mut self) -> Value {
        let mp = self.dir.path().join("mnt");
        let o = wafer(&["ssd", "umount", mp.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let st = self.child.wait().unwrap();
        assert!(st.success());
        serde_json::from_str(&std::fs::read_to_string(&self.out).unwrap()).unwrap()
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = Command::new("umount")
                .arg(self.dir.path().join("mnt"))
                .status();
            let _ = self.child.wait();
        }
    }
}

fn counter(v: &Value, name: &str) -> u64 {
    v["report"]["counters"][name].as_u64().unwrap()
}

/// Data written through the FUSE file, at any offset and size, reads back; fsync reaches the
/// device; punch-hole trims whole units; the live report counts what the device saw; the
/// unmount writes the final report; workload flags are refused.
#[test]
fn ssd_mount_reads_back_what_was_written() {
    if !can_mount() {
        return;
    }
    use std::os::unix::fs::FileExt;
    let m = Mount::new(&["--capacity", "32MiB", "--geometry", "small"]);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(m.path("disk"))
        .unwrap();
    assert_eq!(f.metadata().unwrap().len(), 32 << 20);
    let mut state = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // Disjoint slots of 80 KiB, each written once at an odd offset and length.
    let mut written = Vec::new();
    for slot in 0..200u64 {
        let off = slot * 80 * 1024 + next() % 4096;
        let len = 1 + (next() % (64 * 1024)) as usize;
        let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        f.write_all_at(&data, off).unwrap();
        written.push((off, data));
    }
    f.sync_all().unwrap();
    for (off, data) in &written {
        let mut back = vec![0; data.len()];
        f.read_exact_at(&mut back, *off).unwrap();
        assert!(back == *data, "mismatch at {off}");
    }
    let s = m.stats();
    let host: u64 = counter(&s, "host_write_bytes");
    let payload: u64 = written.iter().map(|(_, d)| d.len() as u64).sum();
    assert!(host >= payload, "{host} < {payload}");
    assert!(s["partial_unit_commands"].as_u64().unwrap() > 0);
    assert!(counter(&s, "flushes") >= 1);
    // A hole of 1 MiB at 1 MiB trims 256 units of 4 KiB; they read back as zeros.
    // SAFETY: a valid descriptor and range.
    let r = unsafe {
        libc::fallocate(
            std::os::unix::io::AsRawFd::as_raw_fd(&f),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            1 << 20,
            1 << 20,
        )
    };
    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
    let mut hole = vec![1u8; 4096];
    f.read_exact_at(&mut hole, 1 << 20).unwrap();
    assert!(hole.iter().all(|&b| b == 0));
    assert_eq!(counter(&m.stats(), "trim_bytes"), 1 << 20);
    drop(f);
    let last = m.finish();
    assert_eq!(counter(&last, "trim_bytes"), 1 << 20);
    assert!(counter(&last, "host_write_bytes") >= host);
    // Like a block device, the file keeps its size when opened for truncation.
    let m = Mount::new(&["--capacity", "16MiB", "--geometry", "small"]);
    std::fs::write(m.path("disk"), b"abc").unwrap();
    assert_eq!(std::fs::metadata(m.path("disk")).unwrap().len(), 16 << 20);
    m.finish();
    // --timing-mode delay: requests take their simulated time in wall time. 8 MiB on the
    // paper 003 SSD (32 MB/s of writes) takes at least 0.2 s.
    let m = Mount::new(&[
        "--drive",
        "mcaqe32g",
        "--capacity",
        "64MiB",
        "--timing-mode",
        "delay",
    ]);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(m.path("disk"))
        .unwrap();
    let t0 = std::time::Instant::now();
    for i in 0..64u64 {
        f.write_all_at(&[7u8; 128 << 10], i << 17).unwrap();
    }
    f.sync_all().unwrap();
    let wall = t0.elapsed().as_secs_f64();
    assert!(wall > 0.2, "{wall} s");
    drop(f);
    m.finish();
    // A power cut loses what sat unflushed in a volatile write cache, and keeps what fsync
    // flushed; with power-loss protection the cache is destaged instead.
    for plp in [false, true] {
        let mut dev = vec![
            "--capacity",
            "16MiB",
            "--geometry",
            "small",
            "--write-cache",
            "1MiB",
        ];
        if !plp {
            dev.push("--no-plp");
        }
        let m = Mount::new(&dev);
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(m.path("disk"))
            .unwrap();
        f.write_all_at(&[b'a'; 65536], 0).unwrap();
        f.sync_all().unwrap();
        f.write_all_at(&[b'b'; 65536], 1 << 20).unwrap();
        let mp = m.path("");
        let o = wafer(&["ssd", "cut", mp.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let mut back = vec![0u8; 65536];
        f.read_exact_at(&mut back, 0).unwrap();
        assert!(back.iter().all(|&b| b == b'a'));
        f.read_exact_at(&mut back, 1 << 20).unwrap();
        let kept = back.iter().all(|&b| b == b'b');
        let lost = back.iter().all(|&b| b == 0);
        assert!(if plp { kept } else { lost }, "plp {plp}");
        let s = m.stats();
        assert_eq!(s["power_cuts"], 1);
        assert_eq!(s["lost_units"].as_u64().unwrap() > 0, !plp);
        drop(f);
        m.finish();
    }
    // A mount whose process was killed is still found and unmounted by `wafer ssd umount`.
    let mut m = Mount::new(&["--capacity", "16MiB", "--geometry", "small"]);
    m.child.kill().unwrap();
    m.child.wait().unwrap();
    let mp = m.path("");
    let o = wafer(&["ssd", "umount", mp.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = wafer(&["ssd", "umount", mp.to_str().unwrap()]);
    assert!(!o.status.success() && stderr(&o).contains("not mounted"));
    drop(m);
    // Workload flags of `wafer sim` are refused before mounting.
    let o = wafer(&["ssd", "mount", "/nonexistent", "--pattern", "seq"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--pattern"));
}

/// fio's 4 KiB random writes through the mount, after a sequential fill, give the SSD WAF that
/// `wafer sim` gives for the same device and pattern (within 2%). Installs fio with apt-get if
/// it is missing; skips when it cannot.
#[test]
fn fio_through_the_mount_matches_wafer_sim() {
    if !can_mount() {
        return;
    }
    let have_fio = || Command::new("fio").arg("--version").output().is_ok();
    if !have_fio() {
        let _ = Command::new("apt-get")
            .args(["install", "-y", "-q", "fio"])
            .output();
    }
    if !have_fio() {
        eprintln!("skipped: fio is not installed and apt-get could not install it");
        return;
    }
    let dev = ["--capacity", "64MiB", "--geometry", "small", "--no-timing"];
    let m = Mount::new(&dev);
    let disk = m.path("disk");
    let fio = |args: &[&str]| {
        let o = Command::new("fio")
            .args(args)
            .arg(format!("--filename={}", disk.display()))
            .args(["--ioengine=psync", "--end_fsync=1", "--size=64M"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    fio(&["--name=fill", "--rw=write", "--bs=128k"]);
    let before = m.stats();
    fio(&[
        "--name=rand",
        "--rw=randwrite",
        "--bs=4k",
        "--io_size=256M",
        "--norandommap",
        "--randrepeat=1",
    ]);
    let after = m.stats();
    let host = counter(&after, "host_write_bytes") - counter(&before, "host_write_bytes");
    let media = counter(&after, "media_write_bytes") - counter(&before, "media_write_bytes");
    let mount_waf = media as f64 / host as f64;
    m.finish();
    let (sim, _) = json(&[
        "--pattern",
        "uniform",
        "--write-size",
        "4KiB",
        "--capacity-multiple",
        "4",
        "--no-timing",
    ]);
    let sim_waf = sim["waf_cumulative"].as_f64().unwrap();
    assert!(
        (mount_waf / sim_waf - 1.0).abs() < 0.02,
        "mount {mount_waf:.3} vs sim {sim_waf:.3}"
    );
}

/// `wafer realdb sqlite` at a small size: SQLite on ext4 on a loop device on the mounted
/// simulated SSD, rollback journal against WAL. Skips (with the reason) where root, /dev/fuse,
/// losetup, mkfs.ext4 or sqlite3 are missing (installs sqlite3 with apt-get first).
#[test]
fn realdb_sqlite_journal_against_wal() {
    if !can_mount() {
        return;
    }
    let has = |t: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("sqlite3") {
        let _ = Command::new("apt-get")
            .args(["install", "-y", "-q", "sqlite3"])
            .output();
    }
    if let Some(t) = ["losetup", "mkfs.ext4", "sqlite3"]
        .into_iter()
        .find(|t| !has(t))
    {
        eprintln!("skipped: {t} is missing");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("realdb.json");
    let o = wafer(&[
        "realdb",
        "sqlite",
        "--txns",
        "300",
        "--rows",
        "2000",
        "--capacity",
        "128MiB",
        "--geometry",
        "small",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("journal_mode=WAL"));
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(result["kind"], "realdb");
    let runs = result["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let f = |r: &Value, k: &str| r[k].as_f64().unwrap();
    let dev = |r: &Value, k: &str| r["device"][k].as_f64().unwrap();
    let (delete, wal) = (&runs[0], &runs[1]);
    for r in runs {
        // Every commit reaches the device with at least one flush; the file system and the
        // device add to what the database wrote.
        assert!(
            dev(r, "flushes") >= r["db"]["txns"].as_f64().unwrap(),
            "{r}"
        );
        assert!(
            dev(r, "host_write_bytes") >= r["db"]["bytes"].as_f64().unwrap(),
            "{r}"
        );
        assert!(
            dev(r, "media_write_bytes") >= dev(r, "host_write_bytes"),
            "{r}"
        );
    }
    // The rollback journal writes each page twice and its journal file's metadata: more than
    // the write-ahead log's appends.
    assert!(
        f(delete, "db_bytes_per_txn") > f(wal, "db_bytes_per_txn"),
        "{delete} vs {wal}"
    );
    assert!(f(delete, "host_bytes_per_txn") > f(wal, "host_bytes_per_txn"));
    // The result makes a report page.
    let html = dir.path().join("realdb.html");
    let o = wafer(&[
        "report",
        out.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("journal_mode=DELETE") && page.contains("<svg"),
        "{page}"
    );

    // Power cuts of the device (write cache lost, left off) while SQLite commits, twice per
    // setting; after the restart SQLite recovers every commit its setting promises, with no
    // gap and a clean integrity check (the command fails otherwise).
    let crash = dir.path().join("crash.json");
    let o = wafer(&[
        "realdb",
        "sqlite",
        "--crash",
        "--crash-after",
        "100",
        "--crashes",
        "2",
        "--capacity",
        "128MiB",
        "--out",
        crash.to_str().unwrap(),
    ]);
    assert!(
        o.status.success(),
        "{}{}",
        stderr(&o),
        String::from_utf8_lossy(&o.stdout)
    );
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&crash).unwrap()).unwrap();
    let crashes = result["crashes"].as_array().unwrap();
    assert_eq!(crashes.len(), 6);
    for c in crashes {
        assert_eq!(c["recovered"], true, "{c}");
        assert!(c["acknowledged"].as_u64().unwrap() >= 100, "{c}");
        if c["durable_promised"] == true {
            assert!(c["found"].as_u64() >= c["acknowledged"].as_u64(), "{c}");
        }
    }
    // The cuts landed with writes in the device's cache: some were lost.
    assert!(
        crashes
            .iter()
            .map(|c| c["lost_units"].as_u64().unwrap())
            .sum::<u64>()
            > 0,
        "{crashes:?}"
    );
}
