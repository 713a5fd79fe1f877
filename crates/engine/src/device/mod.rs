//! The device layer: everything the engine knows about storage goes through [`BlockDevice`].
//!
//! Implementations: [`MemDevice`] (in memory, for tests), [`FileDevice`] (a regular file or block
//! device), `SimDevice` (a flashsim SSD in data mode, in virtual time; only with the cargo feature
//! `sim`, so embedders do not build the simulator), [`Partition`] (a byte range of a shared
//! device, so one device can hold several roles), and [`FaultDevice`] (fault injection: power cut
//! at the Nth command, lost unflushed writes, torn writes, I/O errors, misdirected writes, and
//! the same for zone commands and remaps).
//!
//! Semantics every implementation follows: a write is visible to later reads at once; it is
//! durable only after a later `flush` returns (a power cut may lose or tear unflushed writes). I/O
//! offsets and lengths should be multiples of `block_bytes()`; the write of one aligned block is
//! atomic on power loss unless the device says otherwise. Zone appends are writes (durable after
//! a flush); zone resets, zone finishes and remap batches take effect at once for later commands
//! and are durable after a flush too.

mod fault;
mod file;
mod handle;
mod mem;
mod partition;
#[cfg(feature = "sim")]
mod sim;

pub use fault::{
    CommandKind, CrashReport, FaultConfig, FaultDevice, FaultHandle, Misdirect, TornWrite,
};
pub use file::{FileDevice, FileRemapStats};
pub use handle::Handle;
pub use mem::MemDevice;
pub use partition::{Partition, SharedDevice};
#[cfg(feature = "sim")]
pub use sim::{SimDevice, VirtualClock};

use std::sync::Arc;

/// Errors of a device. An error poisons nothing by itself; the engine decides.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    #[error("I/O error: {0}")]
    Io(String),
    #[error("I/O out of range: offset {offset} + length {len} exceeds capacity {capacity}")]
    OutOfRange {
        offset: u64,
        len: u64,
        capacity: u64,
    },
    #[error(
        "I/O not aligned to the device block of {block} bytes (offset {offset}, length {len})"
    )]
    Unaligned { offset: u64, len: u64, block: u32 },
    #[error(
        "{path} is {found_bytes} bytes, expected {expected_bytes}: a truncated file, or one made \
         with another size"
    )]
    WrongSize {
        path: String,
        expected_bytes: u64,
        found_bytes: u64,
    },
    #[error("device lost power")]
    PowerCut,
    #[error("{0} is not supported by this device")]
    Unsupported(&'static str),
    #[error("simulated device: {0}")]
    Sim(String),
    #[error("remap operation {index}: source and destination ranges overlap")]
    RemapOverlap { index: usize },
    #[error(
        "{path} is in use: another open database holds its lock (in this process or another); \
         close that one first"
    )]
    Locked { path: String },
}

impl From<std::io::Error> for DeviceError {
    fn from(e: std::io::Error) -> Self {
        DeviceError::Io(e.to_string())
    }
}

/// What a device can do beyond read/write/flush.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// Discard of ranges.
    pub trim: bool,
    /// Trimming blocks one at a time, as each dies, is worth its cost: a trim is a command the
    /// device takes beside its other I/O (an SSD's deallocate, a simulated SSD's trim, the
    /// memory device's). False where each trim stalls the device's other I/O: a regular file's
    /// trim punches a hole, for which the filesystem stops every other read and write of the
    /// file (ext4 and XFS take the file's lock exclusive) and, with ext4's `discard` mount
    /// option, waits for the disk; and a punched block is allocated again when next written.
    /// Callers then trim only large ranges (a whole zone reclaimed).
    pub block_trims: bool,
    /// Number of FDP placement ids (0 = none).
    pub placement_ids: u32,
    /// Zoned: zone size in bytes (None = conventional).
    pub zone_bytes: Option<u64>,
    /// [`BlockDevice::remap`] batches (share or move ranges without copying the data).
    pub remap: bool,
    /// [`BlockDevice::copy`]: copies inside the device (NVMe Copy), no host transfer.
    pub copy: bool,
    /// The granularity of the device's own logical-to-physical mapping in bytes: an FTL's
    /// mapping unit on an SSD (remaps of ranges aligned to it move no data; smaller writes cost a
    /// read-modify-write inside the device), the block size on devices without one. 0 = unknown.
    pub mapping_unit_bytes: u32,
    /// The device's own GC unit in bytes, when known (superblock / reclaim unit).
    pub gc_unit_bytes: Option<u64>,
    /// Zoned: how many zones may be open at once.
    pub max_open_zones: Option<u32>,
    /// Zoned: how many zones may be active (open or closed: written in part) at once.
    pub max_active_zones: Option<u32>,
}

/// How a [`RemapOp`] treats its source range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RemapMode {
    /// Both ranges refer to the data afterwards (a copy by reference; the device counts the
    /// references and frees the data when the last one goes).
    Share,
    /// The destination gets the data and the source range becomes unmapped (reads as a trimmed
    /// range does).
    Move,
}

/// One operation of a [`BlockDevice::remap`] batch: make `[dst, dst+len)` hold what
/// `[src, src+len)` holds, without copying the data where the device can avoid it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RemapOp {
    /// Byte offset of the source range.
    pub src: u64,
    /// Byte offset of the destination range.
    pub dst: u64,
    /// Length of both ranges in bytes.
    pub len: u64,
    /// Share or move.
    pub mode: RemapMode,
}

/// One operation of a [`BlockDevice::copy`] command: copy `[src, src+len)` to
/// `[dst, dst+len)` inside the device (it reads and programs the media; no data crosses the host
/// interface).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CopyOp {
    /// Byte offset of the source range.
    pub src: u64,
    /// Byte offset of the destination range.
    pub dst: u64,
    /// Length of both ranges in bytes.
    pub len: u64,
}

/// [`BlockDevice::host_copy`] a range at a time: a read, then a rewrite.
pub fn host_copy_in_order<D: BlockDevice + ?Sized>(
    dev: &mut D,
    ops: &[CopyOp],
) -> Result<(), DeviceError> {
    let mut buf = Vec::new();
    for op in ops {
        buf.resize(op.len as usize, 0);
        dev.read_at(op.src, &mut buf)?;
        dev.write_rewrite(op.dst, &buf)?;
    }
    Ok(())
}

/// [`BlockDevice::copy_each`] one command after the other.
pub fn copy_each_in_order<D: BlockDevice + ?Sized>(
    dev: &mut D,
    ops: &[CopyOp],
) -> Result<(), DeviceError> {
    for op in ops {
        dev.copy(std::slice::from_ref(op))?;
    }
    Ok(())
}

/// Checks every operation of a copy command as [`check_remap`] checks a remap batch.
pub fn check_copy(ops: &[CopyOp], capacity: u64, block: u32) -> Result<(), DeviceError> {
    check_ranges(ops.iter().map(|o| (o.src, o.dst, o.len)), capacity, block)
}

/// Checks every operation of a remap batch against a capacity and a block size, and that no
/// operation's source and destination overlap. Nothing of a batch that fails this check may be
/// applied.
pub fn check_remap(ops: &[RemapOp], capacity: u64, block: u32) -> Result<(), DeviceError> {
    check_ranges(ops.iter().map(|o| (o.src, o.dst, o.len)), capacity, block)
}

/// The checks of [`check_remap`] and [`check_copy`] over (source, destination, length).
fn check_ranges(
    ops: impl Iterator<Item = (u64, u64, u64)>,
    capacity: u64,
    block: u32,
) -> Result<(), DeviceError> {
    for (index, (src, dst, len)) in ops.enumerate() {
        check_io(src, len, capacity, block)?;
        check_io(dst, len, capacity, block)?;
        if len > 0 && src < dst + len && dst < src + len {
            return Err(DeviceError::RemapOverlap { index });
        }
    }
    Ok(())
}

/// A zone's condition in a [`ZoneReport`] (the NVMe ZNS zone states, open ones merged).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ZoneCondition {
    /// Nothing written since the last reset.
    Empty,
    /// Open for writing (implicitly or explicitly).
    Open,
    /// Written to part of its capacity, holding active-zone resources but not open ones.
    Closed,
    /// Not writable until a reset (written to its capacity, or finished).
    Full,
}

/// One zone of a zoned device, as a zone report gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ZoneReport {
    /// Byte offset of the zone's first block.
    pub start_bytes: u64,
    /// Bytes the zone can hold.
    pub capacity_bytes: u64,
    /// Byte offset (absolute, like `start_bytes`) where the next append lands.
    pub write_pointer_bytes: u64,
    /// The zone's condition.
    pub condition: ZoneCondition,
}

/// Cumulative I/O statistics of a device as seen from the host (and the media, when known).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeviceStats {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    /// Bytes programmed into flash, for simulated SSDs (None elsewhere).
    pub media_write_bytes: Option<u64>,
}

/// A block device. `Send` so a device can move to a background thread.
pub trait BlockDevice: Send + Sync {
    /// Bytes addressable.
    fn capacity_bytes(&self) -> u64;
    /// Alignment unit of I/O and the unit of atomic writes (e.g. 512 or 4096).
    fn block_bytes(&self) -> u32;
    /// Reads `buf.len()` bytes at `offset`.
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError>;
    /// Writes `data` at `offset`.
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError>;
    /// Writes each `(offset, data)` of `writes` as [`BlockDevice::write_at`] would, one after
    /// the other (the default). A device may instead reorder writes that do not overlap and
    /// merge neighbours into one command: nothing orders writes that no flush separates. On an
    /// error some of them may have been written.
    fn write_many(&mut self, writes: &[(u64, &[u8])]) -> Result<(), DeviceError> {
        for &(offset, data) in writes {
            self.write_at(offset, data)?;
        }
        Ok(())
    }
    /// Makes every completed write durable.
    fn flush(&mut self) -> Result<(), DeviceError>;
    /// Discards a range (a no-op where unsupported).
    fn trim(&mut self, _offset: u64, _len: u64) -> Result<(), DeviceError> {
        Ok(())
    }
    /// Capability queries. The default: nothing beyond read/write/flush, mapped in blocks.
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            mapping_unit_bytes: self.block_bytes(),
            ..Capabilities::default()
        }
    }
    /// I/O statistics (reads through a [`BlockDevice::shared_reader`] included).
    fn stats(&self) -> DeviceStats;
    /// A reader of this device for other threads: any number of them read through it at once,
    /// beside each other and beside the owner's commands, with no lock, and a read sees every
    /// write that completed before it began. Keeping a read apart from a write of the same
    /// bytes in flight is the caller's business. Offered where reading needs nothing of the
    /// owner (files and block devices: `pread`; the memory device: a copy under its bytes'
    /// reader lock); `None`, the default, elsewhere: a simulated SSD's reads advance its model,
    /// and a fault injector's see its volatile cache.
    fn shared_reader(&self) -> Option<Arc<dyn SharedRead>> {
        None
    }
    /// A write carrying an FDP placement id (devices without FDP ignore it).
    fn write_placed(&mut self, offset: u64, data: &[u8], _pid: u16) -> Result<(), DeviceError> {
        self.write_at(offset, data)
    }
    /// Applies a batch of remaps as one command, in order (an operation sees the effect of the
    /// ones before it): each makes its destination hold what its source holds, sharing or moving
    /// the data instead of copying it where the ranges are aligned to the mapping unit. The
    /// whole batch is checked first ([`check_remap`]); a batch that fails the check changes
    /// nothing. Like a write, a remap is visible at once and durable after a later `flush`.
    /// Only devices whose capabilities say `remap` support it; the default returns
    /// [`DeviceError::Unsupported`].
    fn remap(&mut self, _ops: &[RemapOp]) -> Result<(), DeviceError> {
        Err(DeviceError::Unsupported("remap"))
    }
    /// Copies ranges inside the device as one command, in order (an operation sees the effect
    /// of the ones before it): one operation per call is the single-range form (ISC-A), several
    /// the batched form (ISC-B). The device reads and programs its media; nothing crosses the
    /// host interface. Checked whole first ([`check_copy`]); a command that fails the check
    /// changes nothing. Visible at once, durable after a later `flush`. Only devices whose
    /// capabilities say `copy` support it; the default returns [`DeviceError::Unsupported`].
    fn copy(&mut self, _ops: &[CopyOp]) -> Result<(), DeviceError> {
        Err(DeviceError::Unsupported("copy"))
    }
    /// Several single-range copy commands ([`BlockDevice::copy`] with one operation each, the
    /// ISC-A form) submitted together, as a host keeps several commands in a device's queue:
    /// the result is each one's, in order, and each counts as a command. The default sends them
    /// one after the other, each waited for (what every simulated device does); a device may
    /// overlap them (a file copies them as it copies one command of all the ranges) as long as
    /// the result is the same. On an error, the commands before the failing one are done.
    fn copy_each(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        copy_each_in_order(self, ops)
    }
    /// Copies each range through the host, in order: reads `op.len` bytes at `op.src` and
    /// writes them at `op.dst` with [`BlockDevice::write_rewrite`] (the journal's baseline
    /// move home). The default does exactly that, a range at a time; a device may overlap the
    /// reads and writes (a file reads ranges that follow each other together and writes side
    /// by side), as long as the result is the same as in order and the bytes count as the
    /// host's reads and writes.
    fn host_copy(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        host_copy_in_order(self, ops)
    }
    /// Writes `data` at `offset` like [`BlockDevice::write_at`], telling the device that the
    /// host wrote these bytes to it once already (a checkpoint's copy of a journal entry), so a
    /// device that counts redundant writes counts it. The default is `write_at`.
    fn write_rewrite(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.write_at(offset, data)
    }
    /// Zoned devices: writes `data` at the write pointer of `zone` and returns the byte offset
    /// it landed at.
    fn zone_append(&mut self, _zone: u32, _data: &[u8]) -> Result<u64, DeviceError> {
        Err(DeviceError::Unsupported("zone append"))
    }
    /// Zoned devices: empties `zone` (its write pointer goes back to the start).
    fn zone_reset(&mut self, _zone: u32) -> Result<(), DeviceError> {
        Err(DeviceError::Unsupported("zone reset"))
    }
    /// Zoned devices: moves `zone` to full (releases its open-zone resources).
    fn zone_finish(&mut self, _zone: u32) -> Result<(), DeviceError> {
        Err(DeviceError::Unsupported("zone finish"))
    }
    /// Zoned devices: the condition and write pointer of `zone`.
    fn zone_report(&mut self, _zone: u32) -> Result<ZoneReport, DeviceError> {
        Err(DeviceError::Unsupported("zone report"))
    }
}

/// Reads of a device shared between threads ([`BlockDevice::shared_reader`]).
pub trait SharedRead: Send + Sync {
    /// Reads `buf.len()` bytes at `offset`, as [`BlockDevice::read_at`] does.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError>;
}

/// Reads made through a device's [`SharedRead`], counted for its [`BlockDevice::stats`].
#[derive(Debug, Default)]
pub(crate) struct ReadCounts {
    reads: std::sync::atomic::AtomicU64,
    bytes: std::sync::atomic::AtomicU64,
}

impl ReadCounts {
    pub fn add(&self, bytes: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        self.reads.fetch_add(1, Relaxed);
        self.bytes.fetch_add(bytes as u64, Relaxed);
    }

    /// `s` with these reads added.
    pub fn added_to(&self, mut s: DeviceStats) -> DeviceStats {
        use std::sync::atomic::Ordering::Relaxed;
        s.reads += self.reads.load(Relaxed);
        s.read_bytes += self.bytes.load(Relaxed);
        s
    }
}

/// Checks an I/O against a capacity and a block size.
pub fn check_io(offset: u64, len: u64, capacity: u64, block: u32) -> Result<(), DeviceError> {
    if offset.checked_add(len).is_none_or(|e| e > capacity) {
        return Err(DeviceError::OutOfRange {
            offset,
            len,
            capacity,
        });
    }
    if !offset.is_multiple_of(block as u64) || !len.is_multiple_of(block as u64) {
        return Err(DeviceError::Unaligned { offset, len, block });
    }
    Ok(())
}

impl<T: BlockDevice + ?Sized> BlockDevice for Box<T> {
    fn capacity_bytes(&self) -> u64 {
        (**self).capacity_bytes()
    }
    fn block_bytes(&self) -> u32 {
        (**self).block_bytes()
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        (**self).read_at(offset, buf)
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        (**self).write_at(offset, data)
    }
    fn write_many(&mut self, writes: &[(u64, &[u8])]) -> Result<(), DeviceError> {
        (**self).write_many(writes)
    }
    fn flush(&mut self) -> Result<(), DeviceError> {
        (**self).flush()
    }
    fn trim(&mut self, offset: u64, len: u64) -> Result<(), DeviceError> {
        (**self).trim(offset, len)
    }
    fn capabilities(&self) -> Capabilities {
        (**self).capabilities()
    }
    fn stats(&self) -> DeviceStats {
        (**self).stats()
    }
    fn shared_reader(&self) -> Option<Arc<dyn SharedRead>> {
        (**self).shared_reader()
    }
    fn write_placed(&mut self, offset: u64, data: &[u8], pid: u16) -> Result<(), DeviceError> {
        (**self).write_placed(offset, data, pid)
    }
    fn remap(&mut self, ops: &[RemapOp]) -> Result<(), DeviceError> {
        (**self).remap(ops)
    }
    fn copy(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        (**self).copy(ops)
    }
    fn copy_each(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        (**self).copy_each(ops)
    }
    fn host_copy(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        (**self).host_copy(ops)
    }
    fn write_rewrite(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        (**self).write_rewrite(offset, data)
    }
    fn zone_append(&mut self, zone: u32, data: &[u8]) -> Result<u64, DeviceError> {
        (**self).zone_append(zone, data)
    }
    fn zone_reset(&mut self, zone: u32) -> Result<(), DeviceError> {
        (**self).zone_reset(zone)
    }
    fn zone_finish(&mut self, zone: u32) -> Result<(), DeviceError> {
        (**self).zone_finish(zone)
    }
    fn zone_report(&mut self, zone: u32) -> Result<ZoneReport, DeviceError> {
        (**self).zone_report(zone)
    }
}
