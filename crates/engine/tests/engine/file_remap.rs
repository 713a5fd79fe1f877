//! FileDevice remap through the filesystem's copy by reference (`FICLONERANGE`): on a real XFS
//! image with reflink (needs root, `mkfs.xfs` and loop mounts; skipped with a message otherwise),
//! and the counted fallback copy on a filesystem without reflink.

use std::path::{Path, PathBuf};
use std::process::Command;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use wafer_engine::device::{BlockDevice, CopyOp, FileDevice, RemapMode, RemapOp};

const BLOCK: usize = 4096;
const BLOCKS: u64 = 256;

fn block(seed: u64) -> Vec<u8> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    (0..BLOCK).map(|_| rng.random()).collect()
}

/// Writes random blocks, remaps (share and move) and copies ranges, checking every block
/// against a model after each step; returns the model.
fn exercise(d: &mut FileDevice) -> Vec<Vec<u8>> {
    let mut model = vec![vec![0u8; BLOCK]; BLOCKS as usize];
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    for b in 0..64u64 {
        let data = block(b + 1);
        d.write_at(b * BLOCK as u64, &data).unwrap();
        model[b as usize] = data;
    }
    let mut next = 1000u64;
    for step in 0..40 {
        let len = rng.random_range(1..=8u64);
        let (src, dst) = loop {
            let s = rng.random_range(0..BLOCKS - len);
            let t = rng.random_range(0..BLOCKS - len);
            if s + len <= t || t + len <= s {
                break (s, t);
            }
        };
        let at = |b: u64| b * BLOCK as u64;
        match step % 4 {
            0 | 1 => {
                let mode = if step % 4 == 0 {
                    RemapMode::Share
                } else {
                    RemapMode::Move
                };
                d.remap(&[RemapOp {
                    src: at(src),
                    dst: at(dst),
                    len: at(len),
                    mode,
                }])
                .unwrap();
                for i in 0..len as usize {
                    model[dst as usize + i] = model[src as usize + i].clone();
                }
                if mode == RemapMode::Move && d.capabilities().trim {
                    for i in 0..len as usize {
                        model[src as usize + i] = vec![0u8; BLOCK];
                    }
                }
            }
            2 => {
                d.copy(&[CopyOp {
                    src: at(src),
                    dst: at(dst),
                    len: at(len),
                }])
                .unwrap();
                for i in 0..len as usize {
                    model[dst as usize + i] = model[src as usize + i].clone();
                }
            }
            _ => {
                // Overwrite a shared block: the other reference keeps the old data.
                next += 1;
                let data = block(next);
                d.write_at(at(dst), &data).unwrap();
                model[dst as usize] = data;
            }
        }
        check(d, &model);
    }
    model
}

fn check(d: &mut FileDevice, model: &[Vec<u8>]) {
    let mut buf = vec![0u8; BLOCK];
    for (b, want) in model.iter().enumerate() {
        d.read_at((b * BLOCK) as u64, &mut buf).unwrap();
        assert!(buf == *want, "block {b} differs");
    }
}

/// Unmounts and removes the mount point when dropped (also when a test fails).
struct Mounted {
    dir: PathBuf,
    image: PathBuf,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
        let _ = std::fs::remove_dir(&self.dir);
        let _ = std::fs::remove_file(&self.image);
    }
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A 512 MiB XFS image with reflink, loop-mounted under `tmp`; None (with the reason printed)
/// where that cannot be done here.
fn mount_xfs(tmp: &Path) -> Option<Mounted> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: the XFS reflink test needs root (loop mount)");
        return None;
    }
    if !have("mkfs.xfs") {
        eprintln!("skipped: mkfs.xfs is not installed (xfsprogs)");
        return None;
    }
    let image = tmp.join("xfs.img");
    let f = std::fs::File::create(&image).ok()?;
    f.set_len(512 << 20).ok()?;
    drop(f);
    let mkfs = Command::new("mkfs.xfs")
        .args(["-q", "-f", "-m", "reflink=1"])
        .arg(&image)
        .output()
        .ok()?;
    if !mkfs.status.success() {
        eprintln!(
            "skipped: mkfs.xfs failed: {}",
            String::from_utf8_lossy(&mkfs.stderr)
        );
        return None;
    }
    let dir = tmp.join("mnt");
    std::fs::create_dir(&dir).ok()?;
    let mount = Command::new("mount")
        .args(["-o", "loop"])
        .arg(&image)
        .arg(&dir)
        .output()
        .ok()?;
    if !mount.status.success() {
        eprintln!(
            "skipped: loop mount failed: {}",
            String::from_utf8_lossy(&mount.stderr)
        );
        let _ = std::fs::remove_dir(&dir);
        return None;
    }
    Some(Mounted { dir, image })
}

#[test]
fn remap_clones_on_xfs_with_reflink() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(m) = mount_xfs(tmp.path()) else {
        return;
    };
    let path = m.dir.join("dev");
    let model = {
        let mut d = FileDevice::open(&path, Some(BLOCKS * BLOCK as u64), true).unwrap();
        assert!(d.reflink(), "a probe clone works on XFS with reflink=1");
        let caps = d.capabilities();
        assert!(caps.remap && caps.copy);
        assert_eq!(caps.mapping_unit_bytes, 4096, "the XFS block");
        let model = exercise(&mut d);
        d.flush().unwrap();
        let s = d.remap_stats().clone();
        assert!(s.remap_cloned_bytes > 0);
        assert_eq!(s.remap_copied_bytes, 0, "cloned, not copied");
        assert!(s.copy_bytes > 0);
        model
    };
    // Reopened, the clones are still there.
    let mut d = FileDevice::open(&path, None, false).unwrap();
    check(&mut d, &model);
    drop(d);
    drop(m);
}

#[test]
fn remap_falls_back_to_a_counted_copy_without_reflink() {
    // tmpfs (no clone support) where there is one, else the temporary directory's filesystem.
    let shm = Path::new("/dev/shm");
    let tmp = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let path = tmp.path().join("dev");
    let mut d = FileDevice::open(&path, Some(BLOCKS * BLOCK as u64), true).unwrap();
    assert!(
        d.capabilities().remap,
        "remap is offered, with the fallback"
    );
    let model = exercise(&mut d);
    d.flush().unwrap();
    let s = d.remap_stats().clone();
    if d.reflink() {
        eprintln!(
            "note: {} clones ranges; the fallback is not exercised",
            tmp.path().display()
        );
        assert!(s.remap_cloned_bytes > 0);
    } else {
        assert_eq!(s.remap_cloned_bytes, 0);
        assert!(s.remap_copied_bytes > 0, "the fallback copies and counts");
        assert_eq!(d.capabilities().mapping_unit_bytes, 4096);
    }
    drop(d);
    let mut d = FileDevice::open(&path, None, false).unwrap();
    check(&mut d, &model);
}

/// The engine's journal path with ISC-C on a real XFS image: checkpoints move the journal's
/// images home by `FICLONERANGE` (cloned, not copied), and the database reads back the same
/// after a reopen.
#[test]
fn the_journal_path_remaps_home_by_reflink_on_xfs_and_keeps_data_across_reopen() {
    use crate::support::{key, value, Held};
    use wafer_engine::{Db, DbConfig, Devices, HomeMethod, JournalConfig};
    let tmp = tempfile::tempdir().unwrap();
    let Some(m) = mount_xfs(tmp.path()) else {
        return;
    };
    let (data_path, log_path) = (m.dir.join("data"), m.dir.join("log"));
    let cfg = DbConfig {
        buffer_pages: 64,
        doublewrite: false,
        log_space_bytes: Some(8 << 20),
        journal: Some(JournalConfig {
            method: HomeMethod::IscC,
            journal_bytes: 4 << 20,
            checkpoint_fill: 0.5,
        }),
        ..DbConfig::default()
    };
    let rows: Vec<(Vec<u8>, Vec<u8>)> = (0..3000u64)
        .map(|i| (key(i, 16), value(i * 7 + 1, 200)))
        .collect();
    {
        let data = Held::new(FileDevice::open(&data_path, Some(64 << 20), true).unwrap());
        let log = FileDevice::open(&log_path, Some(16 << 20), true).unwrap();
        let db = Db::open(
            Devices::new(Box::new(data.clone()), Box::new(log)),
            cfg.clone(),
        )
        .unwrap();
        let t = db.create_tree("t").unwrap();
        for chunk in rows.chunks(100) {
            let mut x = db.begin().unwrap();
            for (k, v) in chunk {
                x.put(&t, k, v).unwrap();
            }
            x.commit().unwrap();
        }
        db.checkpoint().unwrap();
        let j = db.stats().journal.unwrap();
        assert!(j.images_moved > 0 && j.remap_commands > 0, "{j:?}");
        let s = data.lock().remap_stats().clone();
        assert!(s.remap_cloned_bytes > 0, "{s:?}");
        assert_eq!(
            s.remap_copied_bytes, 0,
            "4 KiB blocks: every image aligned, cloned"
        );
    }
    let data = FileDevice::open(&data_path, None, false).unwrap();
    let log = FileDevice::open(&log_path, None, false).unwrap();
    let db = Db::open(Devices::new(Box::new(data), Box::new(log)), cfg).unwrap();
    let t = db.open_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    for (k, v) in &rows {
        assert_eq!(x.get(&t, k).unwrap().as_deref(), Some(&v[..]));
    }
    x.commit().unwrap();
    db.verify().unwrap();
    drop(db);
    drop(m);
}
