//! flashsim's hard-disk model as a [`BlockDevice`] in virtual time, for any device role on disk
//! (temp space, the log).

use flashsim::{Hdd, HddConfig, SimDevice as _};
use std::sync::Arc;
use wafer_engine::device::{
    check_io, BlockDevice, Capabilities, DeviceError, DeviceStats, VirtualClock,
};

/// A simulated hard disk ([`flashsim::Hdd`], contents kept) driven by a shared virtual clock:
/// each command starts at the clock's time and moves the clock to its completion, as the
/// engine's `SimDevice` does for an SSD. Trim is a no-op on the disk.
pub struct HddDevice {
    hdd: Hdd,
    clock: Arc<VirtualClock>,
}

impl HddDevice {
    /// A disk from `cfg` (with `keep_data` forced on, so reads return what was written).
    pub fn new(mut cfg: HddConfig, clock: Arc<VirtualClock>) -> Result<HddDevice, DeviceError> {
        cfg.keep_data = true;
        let hdd = Hdd::new(cfg).map_err(|e| DeviceError::Sim(e.to_string()))?;
        Ok(HddDevice { hdd, clock })
    }

    /// The disk model.
    pub fn hdd(&self) -> &Hdd {
        &self.hdd
    }
}

fn sim(e: flashsim::SimError) -> DeviceError {
    DeviceError::Sim(e.to_string())
}

impl BlockDevice for HddDevice {
    fn capacity_bytes(&self) -> u64 {
        self.hdd.capacity_bytes()
    }
    fn block_bytes(&self) -> u32 {
        self.hdd.block_bytes()
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        check_io(
            offset,
            buf.len() as u64,
            self.capacity_bytes(),
            self.block_bytes(),
        )?;
        let len = buf.len() as u64;
        let done = self
            .hdd
            .read(self.clock.now(), offset, len, Some(buf))
            .map_err(sim)?;
        self.clock.advance_to(done);
        Ok(())
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        check_io(
            offset,
            data.len() as u64,
            self.capacity_bytes(),
            self.block_bytes(),
        )?;
        let done = self
            .hdd
            .write(self.clock.now(), offset, data.len() as u64, Some(data))
            .map_err(sim)?;
        self.clock.advance_to(done);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), DeviceError> {
        let done = self.hdd.flush(self.clock.now()).map_err(sim)?;
        self.clock.advance_to(done);
        Ok(())
    }
    fn trim(&mut self, offset: u64, len: u64) -> Result<(), DeviceError> {
        check_io(offset, len, self.capacity_bytes(), self.block_bytes())?;
        let done = self.hdd.trim(self.clock.now(), offset, len).map_err(sim)?;
        self.clock.advance_to(done);
        Ok(())
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            mapping_unit_bytes: self.block_bytes(),
            ..Capabilities::default()
        }
    }
    fn stats(&self) -> DeviceStats {
        let c = self.hdd.counters();
        DeviceStats {
            read_bytes: c.host_read_bytes,
            write_bytes: c.host_write_bytes,
            reads: c.host_read_cmds,
            writes: c.host_write_cmds,
            flushes: 0,
            media_write_bytes: None,
        }
    }
}
