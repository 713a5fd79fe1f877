//! A regular file or a block device as a [`BlockDevice`].
//!
//! The file is opened with `O_DIRECT` (bypassing the page cache, as a database should) when the
//! filesystem accepts it, and with buffered I/O otherwise (tmpfs, some overlay and network
//! filesystems refuse `O_DIRECT` with `EINVAL`); [`FileDevice::direct_io`] says which. `O_DIRECT`
//! needs aligned memory: callers' buffers that are not 4096-byte aligned go through an internal
//! aligned bounce buffer. `flush` is `fdatasync`; `trim` punches a hole in a regular file.
//!
//! **Remap** (regular files): the filesystem's copy by reference, the `FICLONERANGE` ioctl
//! (reflink, on XFS with `reflink=1`, Btrfs, bcachefs, OCFS2). [`RemapMode::Share`] clones the
//! source range onto the destination within the file; [`RemapMode::Move`] clones, then punches
//! a hole at the source (`fallocate(PUNCH_HOLE | KEEP_SIZE)`, as `trim` does). Where the clone
//! fails because the filesystem cannot do it (`EOPNOTSUPP`, `ENOTTY`, `EXDEV`, or `EINVAL` for a
//! range not aligned to the filesystem block) the operation falls back to a copy (read +
//! write; on a filesystem that cannot clone at all, a batch's ranges whose sources follow each
//! other share one read: `runs`). Remap is therefore always offered on regular files;
//! [`FileDevice::reflink`] says whether a probe clone at open succeeded, and then the
//! capabilities' `mapping_unit_bytes` is
//! the filesystem block size (otherwise the 4096-byte I/O block). [`FileDevice::remap_stats`]
//! counts the bytes cloned and the bytes copied. Block devices do not offer remap.
//!
//! **Copy** commands are a write per operation after a read of its source, operations whose
//! sources follow each other sharing one read (`runs`; deliberately not `copy_file_range`,
//! which may itself share extents on a reflink filesystem: a copy command programs new data),
//! counted in [`FileRemapStats::copy_bytes`]. Neither the fallback copies nor copy commands count
//! in [`DeviceStats`], which counts what the host asked for.

use std::alloc::{self, Layout};
use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use super::{
    check_copy, check_io, check_remap, BlockDevice, Capabilities, CopyOp, DeviceError, DeviceStats,
    ReadCounts, RemapMode, RemapOp, SharedRead,
};

mod many;
mod runs;
mod shared_read;
mod zeroed;

/// The I/O block and the alignment of memory used for direct I/O.
const BLOCK_BYTES: u32 = 4096;
const ALIGN: usize = 4096;
/// Largest bounce buffer; larger unaligned I/Os are split into chunks of this size.
const BOUNCE_MAX_BYTES: usize = 1 << 20;

/// A heap buffer aligned to [`ALIGN`] bytes.
struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: AlignedBuf exclusively owns its allocation (like a Box<[u8]>), so it may move between
// threads, and shared references to it only read the bytes (mutation needs `&mut`), so they may
// be shared between threads.
unsafe impl Send for AlignedBuf {}
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (`len` > 0, a multiple of ALIGN).
    fn new(len: usize) -> AlignedBuf {
        debug_assert!(len > 0 && len.is_multiple_of(ALIGN));
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, len }
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len, ALIGN).expect("bounce buffer layout")
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr points to `len` initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr points to `len` initialised (zeroed at allocation) bytes owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with exactly this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) }
    }
}

/// What a [`FileDevice`]'s remaps and copy commands did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileRemapStats {
    /// Bytes remapped by reference (`FICLONERANGE`): no data written.
    pub remap_cloned_bytes: u64,
    /// Bytes remapped by the fallback copy (read + write) where the clone was refused.
    pub remap_copied_bytes: u64,
    /// Bytes copied by copy commands ([`BlockDevice::copy`]).
    pub copy_bytes: u64,
}

/// A regular file or block device as a block device with 4096-byte blocks.
pub struct FileDevice {
    file: File,
    path: PathBuf,
    capacity: u64,
    direct: bool,
    block_device: bool,
    /// Hole punching works (cleared the first time the filesystem says EOPNOTSUPP).
    punch_hole: bool,
    bounce: Option<AlignedBuf>,
    stats: DeviceStats,
    /// `FICLONERANGE` works on this file (a probe clone at open succeeded); cleared if the
    /// filesystem later refuses it for good.
    reflink: bool,
    /// The filesystem's block size (the unit clones must be aligned to).
    fs_block: u32,
    remap_stats: FileRemapStats,
    /// Reads made through [`BlockDevice::shared_reader`]s of this device.
    shared_reads: std::sync::Arc<ReadCounts>,
    /// Something may have changed the file since the last successful flush (a write, trim,
    /// remap or copy; set at open too). A flush with nothing changed since the last returns at
    /// once: `fdatasync` would make no new data durable, and it costs a device cache flush.
    unsynced: bool,
}

/// Errors of `FICLONERANGE` that mean "the filesystem cannot share this range": fall back to a
/// copy. EINVAL is per range (alignment); the others hold for the whole file.
fn clone_refused(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EOPNOTSUPP | libc::EINVAL | libc::EXDEV | libc::ENOTTY)
    )
}

/// Clones `len` bytes at `src_off` of `src` onto `dst_off` of `dst` (the filesystem's copy by
/// reference).
#[cfg(target_os = "linux")]
fn clone_range(src: &File, src_off: u64, dst: &File, dst_off: u64, len: u64) -> io::Result<()> {
    let arg = libc::file_clone_range {
        src_fd: src.as_raw_fd() as i64,
        src_offset: src_off,
        src_length: len,
        dest_offset: dst_off,
    };
    // SAFETY: FICLONERANGE reads a `file_clone_range` we own for the duration of the call; both
    // descriptors are open files we own.
    let rc = unsafe { libc::ioctl(dst.as_raw_fd(), libc::FICLONERANGE, &arg) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn clone_range(_: &File, _: u64, _: &File, _: u64, _: u64) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
}

/// The filesystem block size of the file system holding `file` (4096 if unknown).
fn fs_block_size(file: &File) -> u32 {
    // SAFETY: fstatvfs fills the struct we pass; the descriptor is open.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::fstatvfs(file.as_raw_fd(), &mut st) == 0 && st.f_bsize > 0 {
            st.f_bsize as u32
        } else {
            BLOCK_BYTES
        }
    }
}

/// Whether the filesystem holding `file` (in directory `dir`) clones ranges: one block of the
/// file is cloned into an unnamed temporary file next to it (`O_TMPFILE`), which leaves the file
/// itself untouched.
fn probe_reflink(file: &File, dir: &Path, fs_block: u32, capacity: u64) -> bool {
    if capacity < fs_block as u64 {
        return false;
    }
    let tmp = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .open(dir);
    match tmp {
        Ok(tmp) => clone_range(file, 0, &tmp, 0, fs_block as u64).is_ok(),
        Err(_) => false,
    }
}

fn io_err(path: &Path, what: &str, e: io::Error) -> DeviceError {
    DeviceError::Io(format!("{}: {what}: {e}", path.display()))
}

fn is_einval(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EINVAL)
}

fn open_file(path: &Path, create: bool, direct: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true).create(create);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
}

impl FileDevice {
    /// Opens (or, with `create`, creates) the file or block device at `path`.
    ///
    /// The capacity is `capacity_bytes` when given (a multiple of 4096; a shorter regular file is
    /// extended with `set_len`, a block device must be at least that large) and otherwise the
    /// file's length rounded down to 4096 bytes.
    pub fn open(
        path: impl AsRef<Path>,
        capacity_bytes: Option<u64>,
        create: bool,
    ) -> Result<FileDevice, DeviceError> {
        Self::open_with(path.as_ref(), capacity_bytes, create, true)
    }

    /// Like [`FileDevice::open`], but never tries `O_DIRECT`: I/O goes through the page cache
    /// (for tests and tools where that is wanted; `flush` still makes writes durable).
    pub fn open_buffered(
        path: impl AsRef<Path>,
        capacity_bytes: Option<u64>,
        create: bool,
    ) -> Result<FileDevice, DeviceError> {
        Self::open_with(path.as_ref(), capacity_bytes, create, false)
    }

    /// Takes an exclusive advisory lock (`flock`) on the file for as long as this device is
    /// open, or fails with [`DeviceError::Locked`] if another open file description holds it (a
    /// database open on the same file, in this process or another). The kernel drops the lock
    /// when the device is dropped or its process dies, so a killed process leaves no stale lock.
    /// On a filesystem that has no locks (`ENOLCK`, `EOPNOTSUPP`) the file stays unlocked.
    pub fn lock_exclusive(&self) -> Result<(), DeviceError> {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a file descriptor this device owns; it touches no memory.
        let r = unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => Err(DeviceError::Locked {
                path: self.path.display().to_string(),
            }),
            // A filesystem without locks (NFS without its lock daemon, some FUSE ones): the
            // file opens unlocked, as it did before there was a lock.
            Some(libc::ENOLCK) | Some(libc::EOPNOTSUPP) => Ok(()),
            _ => Err(io_err(&self.path, "lock", e)),
        }
    }

    fn open_with(
        path: &Path,
        capacity_bytes: Option<u64>,
        create: bool,
        try_direct: bool,
    ) -> Result<FileDevice, DeviceError> {
        let path = path.to_path_buf();
        if let Some(c) = capacity_bytes {
            if !c.is_multiple_of(BLOCK_BYTES as u64) {
                return Err(DeviceError::Unaligned {
                    offset: 0,
                    len: c,
                    block: BLOCK_BYTES,
                });
            }
        }
        let first = if try_direct {
            open_file(&path, create, true)
        } else {
            Err(io::Error::from_raw_os_error(libc::EINVAL))
        };
        let (file, direct) = match first {
            Ok(f) => (f, true),
            Err(e) if is_einval(&e) => (
                open_file(&path, create, false).map_err(|e| io_err(&path, "open", e))?,
                false,
            ),
            Err(e) => return Err(io_err(&path, "open", e)),
        };
        let meta = file.metadata().map_err(|e| io_err(&path, "stat", e))?;
        let block_device = meta.file_type().is_block_device();
        let size = if block_device {
            (&file)
                .seek(SeekFrom::End(0))
                .map_err(|e| io_err(&path, "size", e))?
        } else {
            meta.len()
        };
        let capacity = match capacity_bytes {
            Some(c) if c > size && block_device => {
                return Err(DeviceError::OutOfRange {
                    offset: 0,
                    len: c,
                    capacity: size,
                });
            }
            // A new (empty) file gets the size asked for.
            Some(c) if size == 0 => {
                file.set_len(c).map_err(|e| io_err(&path, "set_len", e))?;
                c
            }
            // An existing file shorter than asked for was truncated: zero-extending it would
            // hide the loss. (A longer one may serve its prefix.)
            Some(c) if !block_device && c > size => {
                return Err(DeviceError::WrongSize {
                    path: path.display().to_string(),
                    expected_bytes: c,
                    found_bytes: size,
                });
            }
            Some(c) => c,
            None => size - size % BLOCK_BYTES as u64,
        };
        let mut dev = FileDevice {
            file,
            path,
            capacity,
            direct,
            block_device,
            punch_hole: !block_device,
            bounce: None,
            stats: DeviceStats::default(),
            reflink: false,
            fs_block: BLOCK_BYTES,
            remap_stats: FileRemapStats::default(),
            shared_reads: Default::default(),
            // The file may have been created or extended, and writes of another process (or
            // of an earlier handle) may not be durable yet: the first flush syncs.
            unsynced: true,
        };
        if !block_device {
            dev.fs_block = fs_block_size(&dev.file);
            let dir = match dev.path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            dev.reflink = probe_reflink(&dev.file, &dir, dev.fs_block, dev.capacity);
        }
        if dev.direct && dev.capacity > 0 {
            // Some filesystems accept O_DIRECT at open and refuse the I/O: probe with one read.
            let mut probe = AlignedBuf::new(BLOCK_BYTES as usize);
            if let Err(e) = dev.file.read_exact_at(probe.as_mut_slice(), 0) {
                if is_einval(&e) {
                    dev.reopen_buffered()?;
                } else {
                    return Err(io_err(&dev.path, "read", e));
                }
            }
        }
        Ok(dev)
    }

    /// Whether I/O bypasses the page cache (`O_DIRECT` was accepted).
    pub fn direct_io(&self) -> bool {
        self.direct
    }

    /// Whether remaps share data by reference (`FICLONERANGE` works on this file's filesystem);
    /// without it they fall back to copies.
    pub fn reflink(&self) -> bool {
        self.reflink
    }

    /// Bytes remapped by clone and by copy, and bytes copied by copy commands, so far.
    pub fn remap_stats(&self) -> &FileRemapStats {
        &self.remap_stats
    }

    /// Whether the device is a block device (rather than a regular file).
    pub fn is_block_device(&self) -> bool {
        self.block_device
    }

    /// The path the device was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Drops `O_DIRECT` (after the filesystem refused a direct I/O with EINVAL), on the same
    /// file descriptor: a lock taken by [`FileDevice::lock_exclusive`] stays held.
    fn reopen_buffered(&mut self) -> Result<(), DeviceError> {
        use std::os::fd::AsRawFd;
        let fd = self.file.as_raw_fd();
        // SAFETY: fcntl on a file descriptor this device owns; it touches no memory.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0
            // SAFETY: as above.
            || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_DIRECT) } < 0
        {
            return Err(io_err(
                &self.path,
                "clear O_DIRECT",
                io::Error::last_os_error(),
            ));
        }
        self.direct = false;
        self.bounce = None;
        Ok(())
    }

    /// Takes the bounce buffer out of `self`, at least `len` bytes (len <= BOUNCE_MAX_BYTES);
    /// give it back with `self.bounce = Some(..)`.
    fn take_bounce(&mut self, len: usize) -> AlignedBuf {
        match self.bounce.take() {
            Some(b) if b.len >= len => b,
            _ => AlignedBuf::new(len.next_power_of_two().clamp(ALIGN, BOUNCE_MAX_BYTES)),
        }
    }

    fn needs_bounce(&self, ptr: *const u8) -> bool {
        self.direct && !(ptr as usize).is_multiple_of(ALIGN)
    }

    fn read_raw(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        if !self.needs_bounce(buf.as_ptr()) {
            return self.file.read_exact_at(buf, offset);
        }
        let mut bounce = self.take_bounce(buf.len().min(BOUNCE_MAX_BYTES));
        let mut r = Ok(());
        for (i, chunk) in buf.chunks_mut(BOUNCE_MAX_BYTES).enumerate() {
            let at = offset + (i * BOUNCE_MAX_BYTES) as u64;
            let b = &mut bounce.as_mut_slice()[..chunk.len()];
            r = self.file.read_exact_at(b, at);
            if r.is_err() {
                break;
            }
            chunk.copy_from_slice(b);
        }
        self.bounce = Some(bounce);
        r
    }

    /// Copies `len` bytes from `src` to `dst` through memory (read + write, in chunks).
    fn copy_through(&mut self, src: u64, dst: u64, len: u64) -> Result<(), DeviceError> {
        let mut buf = AlignedBuf::new((len as usize).clamp(ALIGN, BOUNCE_MAX_BYTES));
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(buf.len as u64) as usize;
            let b = &mut buf.as_mut_slice()[..n];
            self.file
                .read_exact_at(b, src + done)
                .map_err(|e| io_err(&self.path, "read", e))?;
            self.file
                .write_all_at(b, dst + done)
                .map_err(|e| io_err(&self.path, "write", e))?;
            done += n as u64;
        }
        Ok(())
    }

    /// Punches a hole (what `trim` does); nothing if the filesystem cannot.
    fn punch(&mut self, offset: u64, len: u64) -> Result<(), DeviceError> {
        if !self.punch_hole || len == 0 {
            return Ok(());
        }
        let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
            return Err(DeviceError::OutOfRange {
                offset,
                len,
                capacity: self.capacity,
            });
        };
        // SAFETY: fallocate on a file descriptor we own; no memory is passed.
        let rc = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                off,
                n,
            )
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
                self.punch_hole = false;
                return Ok(());
            }
            return Err(io_err(&self.path, "punch hole", e));
        }
        Ok(())
    }

    /// One remap operation: clone (or copy, where the filesystem refuses), then for a move punch
    /// the source.
    fn remap_one(&mut self, op: &RemapOp) -> Result<(), DeviceError> {
        if op.len == 0 {
            return Ok(());
        }
        let mut cloned = false;
        if self.reflink {
            match clone_range(&self.file, op.src, &self.file, op.dst, op.len) {
                Ok(()) => cloned = true,
                Err(e) if clone_refused(&e) => {
                    if e.raw_os_error() != Some(libc::EINVAL) {
                        // The filesystem cannot clone at all: stop trying.
                        self.reflink = false;
                    }
                }
                Err(e) => return Err(io_err(&self.path, "clone range", e)),
            }
        }
        if cloned {
            self.remap_stats.remap_cloned_bytes += op.len;
        } else {
            self.copy_through(op.src, op.dst, op.len)?;
            self.remap_stats.remap_copied_bytes += op.len;
        }
        if op.mode == RemapMode::Move {
            self.punch(op.src, op.len)?;
        }
        Ok(())
    }

    fn write_raw(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        if !self.needs_bounce(data.as_ptr()) {
            return self.file.write_all_at(data, offset);
        }
        let mut bounce = self.take_bounce(data.len().min(BOUNCE_MAX_BYTES));
        let mut r = Ok(());
        for (i, chunk) in data.chunks(BOUNCE_MAX_BYTES).enumerate() {
            let at = offset + (i * BOUNCE_MAX_BYTES) as u64;
            let b = &mut bounce.as_mut_slice()[..chunk.len()];
            b.copy_from_slice(chunk);
            r = self.file.write_all_at(b, at);
            if r.is_err() {
                break;
            }
        }
        self.bounce = Some(bounce);
        r
    }
}

impl BlockDevice for FileDevice {
    fn capacity_bytes(&self) -> u64 {
        self.capacity
    }

    fn block_bytes(&self) -> u32 {
        BLOCK_BYTES
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        check_io(offset, buf.len() as u64, self.capacity, BLOCK_BYTES)?;
        let mut r = self.read_raw(offset, buf);
        if matches!(&r, Err(e) if self.direct && is_einval(e)) {
            self.reopen_buffered()?;
            r = self.read_raw(offset, buf);
        }
        r.map_err(|e| io_err(&self.path, "read", e))?;
        self.stats.reads += 1;
        self.stats.read_bytes += buf.len() as u64;
        Ok(())
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        check_io(offset, data.len() as u64, self.capacity, BLOCK_BYTES)?;
        self.unsynced = true;
        let mut r = self.write_raw(offset, data);
        if matches!(&r, Err(e) if self.direct && is_einval(e)) {
            self.reopen_buffered()?;
            r = self.write_raw(offset, data);
        }
        r.map_err(|e| io_err(&self.path, "write", e))?;
        self.stats.writes += 1;
        self.stats.write_bytes += data.len() as u64;
        Ok(())
    }

    /// See `many.rs`: runs of neighbours merged, runs written side by side.
    fn write_many(&mut self, writes: &[(u64, &[u8])]) -> Result<(), DeviceError> {
        self.write_runs(writes)
    }

    fn flush(&mut self) -> Result<(), DeviceError> {
        if !self.unsynced {
            return Ok(());
        }
        self.file
            .sync_data()
            .map_err(|e| io_err(&self.path, "fdatasync", e))?;
        self.unsynced = false;
        self.stats.flushes += 1;
        Ok(())
    }

    fn trim(&mut self, offset: u64, len: u64) -> Result<(), DeviceError> {
        check_io(offset, len, self.capacity, BLOCK_BYTES)?;
        self.unsynced = true;
        self.punch(offset, len)
    }

    /// Clones each range by reference, in order, falling back to a copy where the filesystem
    /// refuses (see the module documentation). Checked whole first. A move punches the source.
    fn remap(&mut self, ops: &[RemapOp]) -> Result<(), DeviceError> {
        if self.block_device {
            return Err(DeviceError::Unsupported("remap on a block device"));
        }
        check_remap(ops, self.capacity, BLOCK_BYTES)?;
        self.unsynced = true;
        if !self.reflink {
            // Copies, sources that follow each other read together (`runs`).
            let pieces: Vec<runs::Piece> = ops.iter().map(runs::Piece::from).collect();
            let mut copied = 0;
            let r = self.copy_pieces(&pieces, &mut copied);
            self.remap_stats.remap_copied_bytes += copied;
            return r;
        }
        for op in ops {
            self.remap_one(op)?;
        }
        Ok(())
    }

    /// Copies each range (read + write; sources that follow each other read together), in
    /// order. Checked whole first.
    fn copy(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        check_copy(ops, self.capacity, BLOCK_BYTES)?;
        self.unsynced = true;
        let pieces: Vec<runs::Piece> = ops.iter().map(runs::Piece::from).collect();
        let mut copied = 0;
        let r = self.copy_pieces(&pieces, &mut copied);
        self.remap_stats.copy_bytes += copied;
        r
    }

    /// Side by side: as one command of all the ranges ([`FileDevice::copy`]: in order, sources
    /// that follow each other read together, a run's writes side by side), which gives what
    /// the commands give one after the other. Where a command is bad (the whole is checked
    /// first), one at a time, so that those before it are done.
    fn copy_each(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        if check_copy(ops, self.capacity, BLOCK_BYTES).is_err() {
            return crate::device::copy_each_in_order(self, ops);
        }
        self.copy(ops)
    }

    /// Through memory as [`FileDevice::copy`] goes (sources that follow each other read
    /// together, a run's writes side by side), counted as the host's reads and writes (a
    /// command per range: the bytes are exact, the commands fewer).
    fn host_copy(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        if check_copy(ops, self.capacity, BLOCK_BYTES).is_err() {
            // A range onto itself (or a bad one, which the reads and writes report): a range
            // at a time, as the default.
            return crate::device::host_copy_in_order(self, ops);
        }
        self.unsynced = true;
        let pieces: Vec<runs::Piece> = ops.iter().map(runs::Piece::from).collect();
        let mut copied = 0;
        let r = self.copy_pieces(&pieces, &mut copied);
        self.stats.read_bytes += copied;
        self.stats.write_bytes += copied;
        if r.is_ok() {
            self.stats.reads += ops.len() as u64;
            self.stats.writes += ops.len() as u64;
        }
        r
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            trim: self.punch_hole,
            // A punch per dead block stalls the file's other I/O (see `Capabilities`).
            block_trims: false,
            remap: !self.block_device,
            copy: true,
            mapping_unit_bytes: if self.reflink {
                self.fs_block.max(BLOCK_BYTES)
            } else {
                BLOCK_BYTES
            },
            ..Capabilities::default()
        }
    }

    fn stats(&self) -> DeviceStats {
        self.shared_reads.added_to(self.stats.clone())
    }

    /// A `pread` on a duplicate of the file descriptor, which shares the open file (a later
    /// switch to buffered I/O applies to both). `None` if the descriptor cannot be duplicated.
    fn shared_reader(&self) -> Option<std::sync::Arc<dyn SharedRead>> {
        let file = self.file.try_clone().ok()?;
        Some(std::sync::Arc::new(shared_read::FileReader {
            file,
            path: self.path.clone(),
            capacity: self.capacity,
            counts: self.shared_reads.clone(),
        }))
    }
}

#[cfg(test)]
mod tests;
