//! One simulated SSD as a FUSE file system: `disk` is the device's logical space as a file,
//! `stats.json` its live report, `control` takes `cut` (a power cut, after which the device runs
//! on), `off` (a power cut that leaves it off: every I/O of `disk` fails with EIO, as a dead
//! drive's do) and `on`. Every read, write, fsync and punch-hole of `disk` becomes a command of
//! the flashsim model, in the sizes the application issued (the files are opened
//! with direct I/O, so the kernel's page cache neither absorbs nor splits them).

use flashsim::Ssd;
use fuser::{
    BsdFileFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use std::ffi::OsStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

const ROOT: u64 = 1;
const DISK: u64 = 2;
const STATS: u64 = 3;
const CONTROL: u64 = 4;
/// `fallocate` mode bits (linux/falloc.h).
const FALLOC_FL_KEEP_SIZE: i32 = 0x01;
const FALLOC_FL_PUNCH_HOLE: i32 = 0x02;

/// The device behind the mount, with its virtual clock.
pub struct Device {
    /// The model.
    pub ssd: Ssd,
    /// Virtual time: every command is submitted when the previous one completed (one at a time,
    /// in the order FUSE delivers them).
    pub now_ns: u64,
    /// Commands that were not aligned to the mapping unit and needed a read of the unit first.
    pub partial_units: u64,
    /// `--timing delay`: the wall time the mount started; each command is then submitted no
    /// earlier than the wall time since (an idle device's clock catches up) and its reply waits
    /// until the wall clock reaches its simulated completion.
    pub delay_from: Option<std::time::Instant>,
    /// Power cuts so far (`cut` written to `control`) and the units they lost.
    pub power_cuts: u64,
    /// Mapping units lost by power cuts (cached, unflushed writes without power-loss protection).
    pub lost_units: u64,
    /// Off since a power cut that left it off: every I/O of `disk` fails until `on`.
    pub off: bool,
    /// Armed cut: the power goes off right after this many more writes have completed (the
    /// last of them acknowledged, and lost with the write cache unless flushed).
    pub cut_after_writes: Option<u64>,
}

impl Device {
    /// A device for `ssd` at virtual time 0; `delay_from` as [`Device::delay_from`].
    pub fn new(ssd: Ssd, delay_from: Option<std::time::Instant>) -> Device {
        Device {
            ssd,
            now_ns: 0,
            partial_units: 0,
            delay_from,
            power_cuts: 0,
            lost_units: 0,
            off: false,
            cut_after_writes: None,
        }
    }

    /// The device's report with the mount's own counters, as `stats.json` shows it.
    pub fn stats_json(&self) -> String {
        let v = serde_json::json!({
            "virtual_ns": self.now_ns,
            "partial_unit_commands": self.partial_units,
            "power_cuts": self.power_cuts,
            "lost_units": self.lost_units,
            "powered": !self.off,
            "report": self.ssd.report(),
        });
        serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
    }

    fn unit(&self) -> u64 {
        u64::from(self.ssd.unit_bytes())
    }

    /// With `--timing delay`: moves the clock to the wall time if the device was idle.
    fn submit_now(&mut self) {
        if let Some(t0) = self.delay_from {
            self.now_ns = self.now_ns.max(t0.elapsed().as_nanos() as u64);
        }
    }

    /// With `--timing delay`: waits until the wall clock reaches the last command's completion.
    fn wait_completion(&self) {
        if let Some(t0) = self.delay_from {
            let wall = t0.elapsed().as_nanos() as u64;
            if self.now_ns > wall {
                std::thread::sleep(Duration::from_nanos(self.now_ns - wall));
            }
        }
    }

    /// Runs one host request on the device (submitted and completed per `--timing`).
    fn request<T>(&mut self, f: impl FnOnce(&mut Device) -> Result<T, Errno>) -> Result<T, Errno> {
        if self.off {
            return Err(Errno::EIO);
        }
        self.submit_now();
        let r = f(self);
        self.wait_completion();
        r
    }

    /// Reads `len` bytes at `offset` (any alignment): the covering units, in one command.
    fn read(&mut self, offset: u64, len: u64) -> Result<Vec<u8>, Errno> {
        let u = self.unit();
        let start = offset / u * u;
        let end = (offset + len).div_ceil(u) * u;
        let mut buf = vec![0; (end - start) as usize];
        self.now_ns = self
            .ssd
            .read(self.now_ns, start, end - start, Some(&mut buf))
            .map_err(|_| Errno::EIO)?;
        let from = (offset - start) as usize;
        Ok(buf[from..from + len as usize].to_vec())
    }

    /// Writes `data` at `offset`: whole units in one command; a unit only partly covered is read
    /// first and written whole (a read-modify-write, counted).
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), Errno> {
        let u = self.unit();
        let start = offset / u * u;
        let end = (offset + data.len() as u64).div_ceil(u) * u;
        let buf = if start == offset && end == offset + data.len() as u64 {
            data.to_vec()
        } else {
            self.partial_units += 1;
            let mut b = self.read(start, end - start)?;
            let from = (offset - start) as usize;
            b[from..from + data.len()].copy_from_slice(data);
            b
        };
        self.now_ns = self
            .ssd
            .write(self.now_ns, start, end - start, 0, Some(&buf))
            .map_err(|_| Errno::EIO)?;
        if let Some(n) = self.cut_after_writes {
            if n <= 1 {
                self.cut_after_writes = None;
                self.power_cut()?;
                self.off = true;
            } else {
                self.cut_after_writes = Some(n - 1);
            }
        }
        Ok(())
    }

    /// Trims the whole units inside `[offset, offset + len)`.
    fn trim(&mut self, offset: u64, len: u64) -> Result<(), Errno> {
        let u = self.unit();
        let start = offset.div_ceil(u) * u;
        let end = (offset + len) / u * u;
        if end > start {
            self.now_ns = self
                .ssd
                .trim(self.now_ns, start, end - start)
                .map_err(|_| Errno::EIO)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Errno> {
        self.now_ns = self.ssd.flush(self.now_ns).map_err(|_| Errno::EIO)?;
        Ok(())
    }

    /// Cuts the power: the write cache is destaged with power-loss protection and lost
    /// without; the device then runs on with what survived.
    pub fn power_cut(&mut self) -> Result<(), Errno> {
        let r = self.ssd.power_cut().map_err(|_| Errno::EIO)?;
        self.power_cuts += 1;
        self.lost_units += r.lost_units;
        Ok(())
    }

    /// Executes a word written to `control`: `cut`, `off` or `on`.
    fn control(&mut self, word: &str) -> Result<(), Errno> {
        match word {
            "cut" => self.power_cut(),
            "off" => {
                if !self.off {
                    self.power_cut()?;
                    self.off = true;
                }
                Ok(())
            }
            "on" => {
                self.off = false;
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        }
    }
}

/// The file system.
pub struct SsdFs {
    dev: Arc<Mutex<Device>>,
    uid: u32,
    gid: u32,
    mounted: SystemTime,
}

impl SsdFs {
    /// A file system over `dev`; files belong to `uid`:`gid`.
    pub fn new(dev: Arc<Mutex<Device>>, uid: u32, gid: u32) -> SsdFs {
        SsdFs {
            dev,
            uid,
            gid,
            mounted: SystemTime::now(),
        }
    }

    fn dev(&self) -> std::sync::MutexGuard<'_, Device> {
        self.dev.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn attr(&self, ino: u64) -> Option<FileAttr> {
        let (kind, perm, size) = match ino {
            ROOT => (FileType::Directory, 0o755, 0),
            DISK => (
                FileType::RegularFile,
                0o660,
                self.dev().ssd.capacity().logical_bytes,
            ),
            STATS => (
                FileType::RegularFile,
                0o444,
                self.dev().stats_json().len() as u64,
            ),
            CONTROL => (FileType::RegularFile, 0o200, 0),
            _ => return None,
        };
        Some(FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: self.mounted,
            mtime: self.mounted,
            ctime: self.mounted,
            crtime: self.mounted,
            kind,
            perm,
            nlink: if ino == ROOT { 2 } else { 1 },
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            flags: 0,
            blksize: 4096,
        })
    }
}

impl Filesystem for SsdFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let ino = match (u64::from(parent), name.to_str()) {
            (ROOT, Some("disk")) => DISK,
            (ROOT, Some("stats.json")) => STATS,
            (ROOT, Some("control")) => CONTROL,
            _ => return reply.error(Errno::ENOENT),
        };
        match self.attr(ino) {
            // No caching of attributes: stats.json changes size all the time.
            Some(a) => reply.entry(&Duration::ZERO, &a, Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(u64::from(ino)) {
            Some(a) => reply.attr(&Duration::ZERO, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    /// Attributes do not change: like a block device, `disk` keeps its size (an `O_TRUNC` open
    /// or a truncate is ignored) and its owner and mode.
    #[allow(clippy::too_many_arguments)]
    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        match self.attr(u64::from(ino)) {
            Some(a) => reply.attr(&Duration::ZERO, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match u64::from(ino) {
            DISK | STATS | CONTROL => reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO),
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match u64::from(ino) {
            DISK => {
                let mut d = self.dev();
                let cap = d.ssd.capacity().logical_bytes;
                let len = u64::from(size).min(cap.saturating_sub(offset));
                if len == 0 {
                    return reply.data(&[]);
                }
                match d.request(|d| d.read(offset, len)) {
                    Ok(b) => reply.data(&b),
                    Err(e) => reply.error(e),
                }
            }
            STATS => {
                let text = self.dev().stats_json();
                let b = text.as_bytes();
                let from = (offset as usize).min(b.len());
                let to = (from + size as usize).min(b.len());
                reply.data(&b[from..to]);
            }
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if u64::from(ino) == CONTROL {
            // `cut`, `off`, `on`: the device's power.
            let word = std::str::from_utf8(data).map(str::trim).unwrap_or("");
            return match self.dev().control(word) {
                Ok(()) => reply.written(data.len() as u32),
                Err(e) => reply.error(e),
            };
        }
        if u64::from(ino) != DISK {
            return reply.error(Errno::EACCES);
        }
        let mut d = self.dev();
        let cap = d.ssd.capacity().logical_bytes;
        if offset + data.len() as u64 > cap {
            // The device ends here, as a block device does.
            return reply.error(Errno::ENOSPC);
        }
        match d.request(|d| d.write(offset, data)) {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // close(): nothing to do (the device's cache is flushed by fsync).
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        if u64::from(ino) != DISK {
            return reply.ok();
        }
        match self.dev().request(|d| d.flush()) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if u64::from(ino) != DISK {
            return reply.error(Errno::EACCES);
        }
        let mut d = self.dev();
        let cap = d.ssd.capacity().logical_bytes;
        if mode == FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE {
            let len = length.min(cap.saturating_sub(offset));
            return match d.request(|d| d.trim(offset, len)) {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            };
        }
        if mode == 0 && offset + length <= cap {
            // Preallocation inside the device: the space is there already.
            return reply.ok();
        }
        reply.error(Errno::EOPNOTSUPP);
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if u64::from(ino) != ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (ROOT, FileType::Directory, "."),
            (ROOT, FileType::Directory, ".."),
            (DISK, FileType::RegularFile, "disk"),
            (STATS, FileType::RegularFile, "stats.json"),
            (CONTROL, FileType::RegularFile, "control"),
        ];
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(ino), (i + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok();
    }
}
