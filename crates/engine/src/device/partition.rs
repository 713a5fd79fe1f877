//! One device, several roles: a [`SharedDevice`] is a device behind a mutex that several
//! [`Partition`]s (byte ranges of it) use at once, e.g. data and log on one SSD.

use super::{
    check_copy, check_io, check_remap, BlockDevice, Capabilities, CopyOp, DeviceError, DeviceStats,
    ReadCounts, RemapOp, SharedRead,
};

pub use super::handle::SharedDevice;

/// The byte range `[base, base+len)` of a shared device, addressed from 0.
///
/// I/O outside the range is rejected with [`DeviceError::OutOfRange`]. `flush` flushes the whole
/// underlying device. Statistics count only this partition's commands (no media bytes: those
/// cannot be attributed to a range). Capabilities are the device's, without zones (a partition
/// does not pass zone commands on); the mapping unit is the device's, so remaps in the partition
/// are whole mapping units on the device only if the partition's base is a multiple of it.
/// Remap batches are translated to device offsets and checked whole against the partition
/// before any is sent, so a batch never touches bytes outside the partition. Copy commands are
/// translated and checked the same way; rewrites are writes.
pub struct Partition {
    dev: SharedDevice,
    base: u64,
    len: u64,
    block: u32,
    stats: DeviceStats,
    /// Reads made through [`BlockDevice::shared_reader`]s of this partition.
    shared_reads: std::sync::Arc<ReadCounts>,
}

/// A partition's [`SharedRead`]: the device's, offsets moved by the partition's base.
struct PartitionReader {
    inner: std::sync::Arc<dyn SharedRead>,
    base: u64,
    len: u64,
    block: u32,
    counts: std::sync::Arc<ReadCounts>,
}

impl SharedRead for PartitionReader {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        check_io(offset, buf.len() as u64, self.len, self.block)?;
        self.inner.read_at(self.base + offset, buf)?;
        self.counts.add(buf.len());
        Ok(())
    }
}

impl Partition {
    /// A partition of `len` bytes at `base` on `dev`; both must be multiples of the block size
    /// and the range must lie within the device.
    pub fn new(dev: SharedDevice, base: u64, len: u64) -> Result<Partition, DeviceError> {
        let (capacity, block) = {
            let d = dev.lock();
            (d.capacity_bytes(), d.block_bytes())
        };
        check_io(base, len, capacity, block)?;
        Ok(Partition {
            dev,
            base,
            len,
            block,
            stats: DeviceStats::default(),
            shared_reads: Default::default(),
        })
    }

    /// Byte offset of the partition on the device.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Length of the partition in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the partition has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The shared device underneath.
    pub fn device(&self) -> &SharedDevice {
        &self.dev
    }

    /// `ops` checked against the partition and moved to the device's offsets.
    fn copies_on_device(&self, ops: &[CopyOp]) -> Result<Vec<CopyOp>, DeviceError> {
        check_copy(ops, self.len, self.block)?;
        Ok(ops
            .iter()
            .map(|op| CopyOp {
                src: self.base + op.src,
                dst: self.base + op.dst,
                len: op.len,
            })
            .collect())
    }

    fn check(&self, offset: u64, len: u64) -> Result<u64, DeviceError> {
        check_io(offset, len, self.len, self.block)?;
        Ok(self.base + offset)
    }
}

impl BlockDevice for Partition {
    fn capacity_bytes(&self) -> u64 {
        self.len
    }

    fn block_bytes(&self) -> u32 {
        self.block
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        let at = self.check(offset, buf.len() as u64)?;
        self.dev.lock().read_at(at, buf)?;
        self.stats.reads += 1;
        self.stats.read_bytes += buf.len() as u64;
        Ok(())
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        let at = self.check(offset, data.len() as u64)?;
        self.dev.lock().write_at(at, data)?;
        self.stats.writes += 1;
        self.stats.write_bytes += data.len() as u64;
        Ok(())
    }

    fn write_placed(&mut self, offset: u64, data: &[u8], pid: u16) -> Result<(), DeviceError> {
        let at = self.check(offset, data.len() as u64)?;
        self.dev.lock().write_placed(at, data, pid)?;
        self.stats.writes += 1;
        self.stats.write_bytes += data.len() as u64;
        Ok(())
    }

    fn write_rewrite(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        let at = self.check(offset, data.len() as u64)?;
        self.dev.lock().write_rewrite(at, data)?;
        self.stats.writes += 1;
        self.stats.write_bytes += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), DeviceError> {
        self.dev.lock().flush()?;
        self.stats.flushes += 1;
        Ok(())
    }

    fn trim(&mut self, offset: u64, len: u64) -> Result<(), DeviceError> {
        let at = self.check(offset, len)?;
        self.dev.lock().trim(at, len)
    }

    fn remap(&mut self, ops: &[RemapOp]) -> Result<(), DeviceError> {
        check_remap(ops, self.len, self.block)?;
        let on_device: Vec<RemapOp> = ops
            .iter()
            .map(|op| RemapOp {
                src: self.base + op.src,
                dst: self.base + op.dst,
                ..*op
            })
            .collect();
        self.dev.lock().remap(&on_device)
    }

    fn copy(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        let on_device = self.copies_on_device(ops)?;
        self.dev.lock().copy(&on_device)
    }

    /// The device's, where every command is inside the partition; else one at a time (the
    /// commands before a bad one are done, as the default does).
    fn copy_each(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        match self.copies_on_device(ops) {
            Ok(on_device) => self.dev.lock().copy_each(&on_device),
            Err(_) => crate::device::copy_each_in_order(self, ops),
        }
    }

    /// The device's, counted here as the partition's reads and writes (a command per range).
    fn host_copy(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        let on_device = self.copies_on_device(ops)?;
        self.dev.lock().host_copy(&on_device)?;
        let bytes: u64 = ops.iter().map(|op| op.len).sum();
        self.stats.reads += ops.len() as u64;
        self.stats.read_bytes += bytes;
        self.stats.writes += ops.len() as u64;
        self.stats.write_bytes += bytes;
        Ok(())
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            zone_bytes: None,
            max_open_zones: None,
            max_active_zones: None,
            ..self.dev.lock().capabilities()
        }
    }

    fn stats(&self) -> DeviceStats {
        self.shared_reads.added_to(self.stats.clone())
    }

    fn shared_reader(&self) -> Option<std::sync::Arc<dyn SharedRead>> {
        Some(std::sync::Arc::new(PartitionReader {
            inner: self.dev.lock().shared_reader()?,
            base: self.base,
            len: self.len,
            block: self.block,
            counts: self.shared_reads.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::MemDevice;

    #[test]
    fn partitions_isolate_ranges() {
        let shared = SharedDevice::shared(MemDevice::new(64 * 1024, 4096));
        let mut parts = shared.split(&[16 * 1024, 48 * 1024]).unwrap();
        let (mut a, mut b) = {
            let b = parts.pop().unwrap();
            (parts.pop().unwrap(), b)
        };
        assert_eq!((a.base(), a.len()), (0, 16 * 1024));
        assert_eq!((b.base(), b.capacity_bytes()), (16 * 1024, 48 * 1024));
        a.write_at(0, &[1u8; 4096]).unwrap();
        b.write_at(0, &[2u8; 4096]).unwrap();
        let mut buf = vec![0u8; 4096];
        a.read_at(0, &mut buf).unwrap();
        assert_eq!(buf, vec![1u8; 4096]);
        b.read_at(0, &mut buf).unwrap();
        assert_eq!(buf, vec![2u8; 4096]);
        // b's offset 0 is the device's offset 16 KiB.
        shared.lock().read_at(16 * 1024, &mut buf).unwrap();
        assert_eq!(buf, vec![2u8; 4096]);
        a.flush().unwrap();
        assert_eq!(a.stats().writes, 1);
        assert_eq!(a.stats().reads, 1);
        assert_eq!(a.stats().flushes, 1);
        assert_eq!(b.stats().write_bytes, 4096);
        assert_eq!(shared.lock().stats().writes, 2);
    }

    #[test]
    fn rejects_out_of_range_and_bad_geometry() {
        let shared = SharedDevice::shared(MemDevice::new(64 * 1024, 4096));
        let mut a = shared.partition(8192, 8192).unwrap();
        assert!(matches!(
            a.write_at(8192, &[0u8; 4096]),
            Err(DeviceError::OutOfRange { .. })
        ));
        assert!(matches!(
            a.write_at(4096, &[0u8; 8192]),
            Err(DeviceError::OutOfRange { .. })
        ));
        assert!(matches!(
            a.read_at(100, &mut [0u8; 4096]),
            Err(DeviceError::Unaligned { .. })
        ));
        assert!(matches!(
            shared.partition(60 * 1024, 8192),
            Err(DeviceError::OutOfRange { .. })
        ));
        assert!(matches!(
            shared.partition(512, 4096),
            Err(DeviceError::Unaligned { .. })
        ));
        let op = |src, dst, len| RemapOp {
            src,
            dst,
            len,
            mode: crate::device::RemapMode::Share,
        };
        assert_eq!(a.stats(), DeviceStats::default());
        // Offsets are translated: the partition's 0 is the device's 8 KiB.
        a.write_at(0, &[5u8; 4096]).unwrap();
        a.remap(&[op(0, 4096, 4096)]).unwrap();
        let mut buf = vec![0u8; 4096];
        shared.lock().read_at(8192 + 4096, &mut buf).unwrap();
        assert_eq!(buf, vec![5u8; 4096]);
        // Checked against the partition before the device sees it: nothing of a bad batch runs.
        a.write_at(0, &[6u8; 4096]).unwrap();
        assert!(matches!(
            a.remap(&[op(0, 4096, 4096), op(4096, 8192, 4096)]),
            Err(DeviceError::OutOfRange { .. })
        ));
        assert!(matches!(
            a.remap(&[op(0, 4096, 4096), op(4096, 4096, 4096)]),
            Err(DeviceError::RemapOverlap { index: 1 })
        ));
        shared.lock().read_at(8192 + 4096, &mut buf).unwrap();
        assert_eq!(buf, vec![5u8; 4096]);
        drop(a);
        assert!(shared.try_into_inner().is_ok());
    }
    #[test]
    fn copy_and_rewrite_are_translated_and_checked() {
        let shared = SharedDevice::shared(MemDevice::new(64 * 1024, 4096));
        let mut a = shared.partition(8192, 16384).unwrap();
        assert!(a.capabilities().copy);
        a.write_rewrite(0, &[3u8; 4096]).unwrap();
        assert_eq!(a.stats().write_bytes, 4096, "a rewrite is a write");
        let op = |src, dst| CopyOp {
            src,
            dst,
            len: 4096,
        };
        a.copy(&[op(0, 8192)]).unwrap();
        let mut buf = vec![0u8; 4096];
        shared.lock().read_at(8192 + 8192, &mut buf).unwrap();
        assert_eq!(buf, vec![3u8; 4096]);
        // Beyond the partition (though inside the device): rejected before anything runs.
        assert!(matches!(
            a.copy(&[op(0, 4096), op(0, 16384)]),
            Err(DeviceError::OutOfRange { .. })
        ));
        shared.lock().read_at(8192 + 4096, &mut buf).unwrap();
        assert_eq!(buf, vec![0u8; 4096]);
        assert!(matches!(
            a.copy(&[op(0, 2048)]),
            Err(DeviceError::Unaligned { .. })
        ));
    }
}
