//! A device shared between the engine and its owner: the owner keeps a clone of the handle to
//! read the concrete device's own state (e.g. a simulated SSD's counters) while the engine uses it.

use super::{BlockDevice, Capabilities, CopyOp, DeviceError, DeviceStats, RemapOp, ZoneReport};
use std::sync::{Arc, Mutex, MutexGuard};

/// An `Arc<Mutex<D>>` that is itself a [`BlockDevice`].
pub struct Handle<D: BlockDevice>(Arc<Mutex<D>>);

impl<D: BlockDevice> Clone for Handle<D> {
    fn clone(&self) -> Self {
        Handle(self.0.clone())
    }
}

impl<D: BlockDevice> Handle<D> {
    pub fn new(dev: D) -> Handle<D> {
        Handle(Arc::new(Mutex::new(dev)))
    }

    /// The device itself (still usable if a thread panicked while holding it).
    pub fn lock(&self) -> MutexGuard<'_, D> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<D: BlockDevice> BlockDevice for Handle<D> {
    fn capacity_bytes(&self) -> u64 {
        self.lock().capacity_bytes()
    }
    fn block_bytes(&self) -> u32 {
        self.lock().block_bytes()
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        self.lock().read_at(offset, buf)
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.lock().write_at(offset, data)
    }
    fn flush(&mut self) -> Result<(), DeviceError> {
        self.lock().flush()
    }
    fn trim(&mut self, offset: u64, len: u64) -> Result<(), DeviceError> {
        self.lock().trim(offset, len)
    }
    fn capabilities(&self) -> Capabilities {
        self.lock().capabilities()
    }
    fn stats(&self) -> DeviceStats {
        self.lock().stats()
    }
    fn shared_reader(&self) -> Option<std::sync::Arc<dyn super::SharedRead>> {
        self.lock().shared_reader()
    }
    fn write_placed(&mut self, offset: u64, data: &[u8], pid: u16) -> Result<(), DeviceError> {
        self.lock().write_placed(offset, data, pid)
    }
    fn remap(&mut self, ops: &[RemapOp]) -> Result<(), DeviceError> {
        self.lock().remap(ops)
    }
    fn copy(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        self.lock().copy(ops)
    }
    fn copy_each(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        self.lock().copy_each(ops)
    }
    fn host_copy(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        self.lock().host_copy(ops)
    }
    fn write_rewrite(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.lock().write_rewrite(offset, data)
    }
    fn zone_append(&mut self, zone: u32, data: &[u8]) -> Result<u64, DeviceError> {
        self.lock().zone_append(zone, data)
    }
    fn zone_reset(&mut self, zone: u32) -> Result<(), DeviceError> {
        self.lock().zone_reset(zone)
    }
    fn zone_finish(&mut self, zone: u32) -> Result<(), DeviceError> {
        self.lock().zone_finish(zone)
    }
    fn zone_report(&mut self, zone: u32) -> Result<ZoneReport, DeviceError> {
        self.lock().zone_report(zone)
    }
}

/// A block device shared between owners (partitions, or a partition and a test inspecting the
/// device). Cloning shares the same device. It is itself a [`BlockDevice`] over the whole device.
pub type SharedDevice = Handle<Box<dyn BlockDevice>>;

impl Handle<Box<dyn BlockDevice>> {
    /// Shares `dev`.
    pub fn shared(dev: impl BlockDevice + 'static) -> SharedDevice {
        Handle::new(Box::new(dev) as Box<dyn BlockDevice>)
    }

    /// Shares an already boxed device.
    pub fn from_box(dev: Box<dyn BlockDevice>) -> SharedDevice {
        Handle::new(dev)
    }

    /// A partition of `len` bytes at byte `base` (both multiples of the block size).
    pub fn partition(&self, base: u64, len: u64) -> Result<super::Partition, DeviceError> {
        super::Partition::new(self.clone(), base, len)
    }

    /// Splits the device from offset 0 into consecutive partitions of the given lengths.
    pub fn split(&self, lens: &[u64]) -> Result<Vec<super::Partition>, DeviceError> {
        let mut base = 0u64;
        let mut parts = Vec::with_capacity(lens.len());
        for &len in lens {
            parts.push(self.partition(base, len)?);
            base += len;
        }
        Ok(parts)
    }

    /// The device back, if this is the last handle to it.
    pub fn try_into_inner(self) -> Result<Box<dyn BlockDevice>, SharedDevice> {
        match Arc::try_unwrap(self.0) {
            Ok(m) => Ok(m.into_inner().unwrap_or_else(|e| e.into_inner())),
            Err(arc) => Err(Handle(arc)),
        }
    }
}
