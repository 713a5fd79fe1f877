//! An in-memory device: a byte vector. Writes are durable at once (flush is a no-op); wrap it in a
//! `FaultDevice` to model volatile caches and power cuts. Other threads read it through a
//! [`SharedRead`] (`BlockDevice::shared_reader`) beside each other and beside its owner's commands:
//! the bytes are behind a reader-writer lock, taken for each copy. Trim zeroes (and gives the
//! memory of whole pages back to the kernel); remap copies (a move also zeroes the source), mapped
//! in blocks; a copy command is a memcpy per operation (not counted as host I/O in the statistics).

use super::{
    check_copy, check_io, check_remap, BlockDevice, Capabilities, CopyOp, DeviceError, DeviceStats,
    ReadCounts, RemapMode, RemapOp, SharedRead,
};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub struct MemDevice {
    data: Arc<RwLock<Vec<u8>>>,
    capacity: u64,
    block: u32,
    stats: DeviceStats,
    /// Reads made through [`BlockDevice::shared_reader`]s.
    shared_reads: Arc<ReadCounts>,
}

impl MemDevice {
    /// A zeroed device of `capacity_bytes` (a multiple of `block_bytes`).
    pub fn new(capacity_bytes: u64, block_bytes: u32) -> MemDevice {
        MemDevice {
            data: Arc::new(RwLock::new(vec![0; capacity_bytes as usize])),
            capacity: capacity_bytes,
            block: block_bytes,
            stats: DeviceStats::default(),
            shared_reads: Default::default(),
        }
    }

    /// The raw contents (for tests that corrupt or inspect them).
    pub fn bytes(&self) -> RwLockReadGuard<'_, Vec<u8>> {
        self.data.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The raw contents, to change (for tests that corrupt them).
    pub fn bytes_mut(&mut self) -> RwLockWriteGuard<'_, Vec<u8>> {
        self.data.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// Reads of a [`MemDevice`] from other threads.
struct MemReader {
    data: Arc<RwLock<Vec<u8>>>,
    capacity: u64,
    block: u32,
    counts: Arc<ReadCounts>,
}

impl SharedRead for MemReader {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        check_io(offset, buf.len() as u64, self.capacity, self.block)?;
        let data = self.data.read().unwrap_or_else(|p| p.into_inner());
        buf.copy_from_slice(&data[offset as usize..offset as usize + buf.len()]);
        drop(data);
        self.counts.add(buf.len());
        Ok(())
    }
}

impl BlockDevice for MemDevice {
    fn capacity_bytes(&self) -> u64 {
        self.capacity
    }
    fn block_bytes(&self) -> u32 {
        self.block
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        check_io(offset, buf.len() as u64, self.capacity_bytes(), self.block)?;
        buf.copy_from_slice(&self.bytes()[offset as usize..offset as usize + buf.len()]);
        self.stats.reads += 1;
        self.stats.read_bytes += buf.len() as u64;
        Ok(())
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        check_io(offset, data.len() as u64, self.capacity_bytes(), self.block)?;
        self.bytes_mut()[offset as usize..offset as usize + data.len()].copy_from_slice(data);
        self.stats.writes += 1;
        self.stats.write_bytes += data.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> Result<(), DeviceError> {
        self.stats.flushes += 1;
        Ok(())
    }
    /// Trimmed blocks read as zeros.
    fn trim(&mut self, offset: u64, len: u64) -> Result<(), DeviceError> {
        check_io(offset, len, self.capacity_bytes(), self.block)?;
        // Trimmed memory is given back, as an SSD's trimmed blocks are.
        crate::memadvise::zero(&mut self.bytes_mut()[offset as usize..(offset + len) as usize]);
        Ok(())
    }
    /// Copies each source range to its destination, in order; a move then zeroes the source.
    fn remap(&mut self, ops: &[RemapOp]) -> Result<(), DeviceError> {
        check_remap(ops, self.capacity_bytes(), self.block)?;
        let mut data = self.bytes_mut();
        for op in ops {
            let (s, d, n) = (op.src as usize, op.dst as usize, op.len as usize);
            data.copy_within(s..s + n, d);
            if op.mode == RemapMode::Move {
                crate::memadvise::zero(&mut data[s..s + n]);
            }
        }
        Ok(())
    }
    /// Copies each source range to its destination, in order.
    fn copy(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        check_copy(ops, self.capacity_bytes(), self.block)?;
        let mut data = self.bytes_mut();
        for op in ops {
            let (s, d, n) = (op.src as usize, op.dst as usize, op.len as usize);
            data.copy_within(s..s + n, d);
        }
        Ok(())
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            trim: true,
            block_trims: true,
            remap: true,
            copy: true,
            mapping_unit_bytes: self.block,
            ..Capabilities::default()
        }
    }
    fn stats(&self) -> DeviceStats {
        self.shared_reads.added_to(self.stats.clone())
    }
    /// A reader sharing the bytes, under their lock.
    fn shared_reader(&self) -> Option<Arc<dyn SharedRead>> {
        Some(Arc::new(MemReader {
            data: self.data.clone(),
            capacity: self.capacity,
            block: self.block,
            counts: self.shared_reads.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_is_a_checked_memcpy_in_order() {
        let mut d = MemDevice::new(16 * 512, 512);
        assert!(d.capabilities().copy);
        d.write_at(0, &[1u8; 512]).unwrap();
        d.write_at(512, &[2u8; 512]).unwrap();
        let op = |src: u64, dst: u64| CopyOp {
            src: src * 512,
            dst: dst * 512,
            len: 512,
        };
        // The second operation sees the first.
        d.copy(&[op(0, 4), op(4, 5), op(1, 6)]).unwrap();
        let mut b = [0u8; 512];
        for (blk, want) in [(0, 1u8), (1, 2), (4, 1), (5, 1), (6, 2)] {
            d.read_at(blk * 512, &mut b).unwrap();
            assert_eq!(b, [want; 512], "block {blk}");
        }
        assert_eq!(d.stats().writes, 2, "copies are not host writes");
        // A bad command changes nothing.
        assert_eq!(
            d.copy(&[
                op(1, 7),
                CopyOp {
                    src: 0,
                    dst: 256,
                    len: 512
                }
            ]),
            Err(DeviceError::Unaligned {
                offset: 256,
                len: 512,
                block: 512
            })
        );
        d.read_at(7 * 512, &mut b).unwrap();
        assert_eq!(b, [0u8; 512]);
    }
}
