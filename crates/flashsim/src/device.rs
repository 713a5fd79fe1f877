//! The interface every simulated device offers (the flash SSD and the hard-disk model), so a
//! workload or an engine adapter can drive either. Times are virtual nanoseconds: a command is
//! submitted at `at_ns` and the call returns the time it completes.

use crate::error::SimError;
use crate::stats::Counters;

pub trait SimDevice {
    /// Bytes the host can address.
    fn capacity_bytes(&self) -> u64;
    /// The preferred I/O unit in bytes (SSD mapping unit, disk sector).
    fn block_bytes(&self) -> u32;
    /// Reads `len` bytes at `offset` into `buf` (zeros where nothing was written or no data is kept).
    fn read(
        &mut self,
        at_ns: u64,
        offset: u64,
        len: u64,
        buf: Option<&mut [u8]>,
    ) -> Result<u64, SimError>;
    /// Writes `len` bytes at `offset`; `data`, when given, must be `len` bytes long.
    fn write(
        &mut self,
        at_ns: u64,
        offset: u64,
        len: u64,
        data: Option<&[u8]>,
    ) -> Result<u64, SimError>;
    /// Discards a range (a no-op on devices that do not support it).
    fn trim(&mut self, at_ns: u64, offset: u64, len: u64) -> Result<u64, SimError>;
    /// Makes completed writes durable.
    fn flush(&mut self, at_ns: u64) -> Result<u64, SimError>;
    /// Device counters (host and media bytes etc.).
    fn counters(&self) -> &Counters;
}

impl SimDevice for crate::Ssd {
    fn capacity_bytes(&self) -> u64 {
        self.capacity().logical_bytes
    }
    fn block_bytes(&self) -> u32 {
        self.unit_bytes()
    }
    fn read(
        &mut self,
        at_ns: u64,
        offset: u64,
        len: u64,
        buf: Option<&mut [u8]>,
    ) -> Result<u64, SimError> {
        crate::Ssd::read(self, at_ns, offset, len, buf)
    }
    fn write(
        &mut self,
        at_ns: u64,
        offset: u64,
        len: u64,
        data: Option<&[u8]>,
    ) -> Result<u64, SimError> {
        crate::Ssd::write(self, at_ns, offset, len, 0, data)
    }
    fn trim(&mut self, at_ns: u64, offset: u64, len: u64) -> Result<u64, SimError> {
        crate::Ssd::trim(self, at_ns, offset, len)
    }
    fn flush(&mut self, at_ns: u64) -> Result<u64, SimError> {
        crate::Ssd::flush(self, at_ns)
    }
    fn counters(&self) -> &Counters {
        crate::Ssd::counters(self)
    }
}
