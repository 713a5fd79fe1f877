//! An in-memory device: a byte vector. Writes are durable at once (flush is a no-op); wrap it in a
//! `FaultDevice` to model volatile caches and power cuts. Trim zeroes; remap copies (a move also
//! zeroes the source), mapped in blocks.

use super::{
    check_io, check_remap, BlockDevice, Capabilities, DeviceError, DeviceStats, RemapMode, RemapOp,
};

pub struct MemDevice {
    data: Vec<u8>,
    block: u32,
    stats: DeviceStats,
}

impl MemDevice {
    /// A zeroed device of `capacity_bytes` (a multiple of `block_bytes`).
    pub fn new(capacity_bytes: u64, block_bytes: u32) -> MemDevice {
        MemDevice {
            data: vec![0; capacity_bytes as usize],
            block: block_bytes,
            stats: DeviceStats::default(),
        }
    }

    /// The raw contents (for tests that corrupt or inspect them).
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }
}

impl BlockDevice for MemDevice {
    fn capacity_bytes(&self) -> u64 {
        self.data.len() as u64
    }
    fn block_bytes(&self) -> u32 {
        self.block
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        check_io(offset, buf.len() as u64, self.capacity_bytes(), self.block)?;
        buf.copy_from_slice(&self.data[offset as usize..offset as usize + buf.len()]);
        self.stats.reads += 1;
        self.stats.read_bytes += buf.len() as u64;
        Ok(())
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        check_io(offset, data.len() as u64, self.capacity_bytes(), self.block)?;
        self.data[offset as usize..offset as usize + data.len()].copy_from_slice(data);
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
        self.data[offset as usize..(offset + len) as usize].fill(0);
        Ok(())
    }
    /// Copies each source range to its destination, in order; a move then zeroes the source.
    fn remap(&mut self, ops: &[RemapOp]) -> Result<(), DeviceError> {
        check_remap(ops, self.capacity_bytes(), self.block)?;
        for op in ops {
            let (s, d, n) = (op.src as usize, op.dst as usize, op.len as usize);
            self.data.copy_within(s..s + n, d);
            if op.mode == RemapMode::Move {
                self.data[s..s + n].fill(0);
            }
        }
        Ok(())
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            trim: true,
            remap: true,
            mapping_unit_bytes: self.block,
            ..Capabilities::default()
        }
    }
    fn stats(&self) -> DeviceStats {
        self.stats.clone()
    }
}
