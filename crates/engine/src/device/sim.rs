//! A simulated flash SSD as a [`BlockDevice`]: a [`flashsim::Ssd`] keeping data (in memory or in a
//! backing file) driven in virtual time through a shared [`VirtualClock`].
//!
//! Every I/O is synchronous in virtual time: it is submitted at `clock.now()` and the clock
//! advances to the completion time flashsim returns. Several devices (data, log, ...) may share
//! one clock, so the time spent waiting on each adds up as it would for a single-threaded client.
//!
//! Only built with the cargo feature `sim` (it is what pulls flashsim into the engine).
//!
//! Remap batches map onto flashsim's batched remap command: one command (one command overhead
//! in virtual time) for the whole batch, shared or moved per operation without programming flash
//! where the ranges are aligned to the mapping unit (the block size here), reference counted.
//!
//! Copy commands map onto flashsim's in-device copy ([`Ssd::copy`]): one command overhead per
//! call, the data read from flash and programmed at the destination with no host transfer.
//! Rewrites ([`BlockDevice::write_rewrite`]) are flashsim's [`Ssd::write_rewrite`]: host writes
//! in [`DeviceStats`], also counted in flashsim's `redundant_write_bytes`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flashsim::{DataMode, Mode, PowerCutReport, RemapKind, Ssd, SsdConfig, ZoneAction, ZoneState};

use super::{
    check_copy, check_io, check_remap, BlockDevice, Capabilities, CopyOp, DeviceError, DeviceStats,
    RemapMode, RemapOp, ZoneCondition, ZoneReport,
};

impl From<flashsim::SimError> for DeviceError {
    fn from(e: flashsim::SimError) -> Self {
        DeviceError::Sim(e.to_string())
    }
}

/// A shared virtual time in nanoseconds. Cheap to share through an `Arc`; all operations are
/// atomic, so it may be read from any thread.
#[derive(Debug, Default)]
pub struct VirtualClock {
    now_ns: AtomicU64,
}

impl VirtualClock {
    /// A clock at time 0.
    pub fn new() -> VirtualClock {
        VirtualClock::default()
    }

    /// A clock at time 0, already in an `Arc` for sharing between devices.
    pub fn shared() -> Arc<VirtualClock> {
        Arc::new(VirtualClock::new())
    }

    /// The current virtual time in ns.
    pub fn now(&self) -> u64 {
        self.now_ns.load(Ordering::Acquire)
    }

    /// Sets the time to `t_ns` (may move it backwards; a scheduler switching between clients
    /// uses this).
    pub fn set(&self, t_ns: u64) {
        self.now_ns.store(t_ns, Ordering::Release);
    }

    /// Moves the time forward to `t_ns` if it is later than now; returns the new time.
    pub fn advance_to(&self, t_ns: u64) -> u64 {
        self.now_ns.fetch_max(t_ns, Ordering::AcqRel).max(t_ns)
    }

    /// Moves the time forward by `d_ns`; returns the new time.
    pub fn advance_by(&self, d_ns: u64) -> u64 {
        self.now_ns.fetch_add(d_ns, Ordering::AcqRel) + d_ns
    }
}

impl crate::clock::Clock for VirtualClock {
    fn now_ns(&self) -> u64 {
        self.now()
    }
}

/// A flashsim SSD as a block device in virtual time.
///
/// The block size is the SSD's mapping unit, the capacity its logical capacity. Statistics come
/// from the flashsim counters, so `media_write_bytes` (NAND bytes programmed, including GC) is
/// known and SSD WAF = media / host bytes written.
pub struct SimDevice {
    ssd: Ssd,
    clock: Arc<VirtualClock>,
    /// The I/O block: the mapping unit, or a smaller sector ([`SimDevice::with_block_bytes`]).
    block: u32,
}

impl SimDevice {
    /// Builds an SSD from `cfg` driven by `clock`. A WAF-only configuration is switched to
    /// [`DataMode::Memory`], since an engine must read back what it wrote.
    pub fn new(mut cfg: SsdConfig, clock: Arc<VirtualClock>) -> Result<SimDevice, DeviceError> {
        if matches!(cfg.data, DataMode::WafOnly) {
            cfg.data = DataMode::Memory;
        }
        let ssd = Ssd::new(cfg)?;
        Ok(SimDevice::from_ssd(ssd, clock))
    }

    /// Accepts I/O in `block`-byte sectors instead of whole mapping units (`block` a power of
    /// two from 512 dividing the unit): a write of part of a unit costs the SSD a
    /// read-modify-write, as on a drive with 512-byte logical blocks and a 4 KiB FTL unit.
    pub fn with_block_bytes(mut self, block: u32) -> Result<SimDevice, DeviceError> {
        let unit = self.ssd.unit_bytes();
        if block < 512 || !block.is_power_of_two() || !unit.is_multiple_of(block) {
            return Err(DeviceError::Unsupported(
                "a sector size that is not a power of two from 512 dividing the mapping unit",
            ));
        }
        self.block = block;
        Ok(self)
    }

    /// Wraps an existing SSD as is (an SSD in WAF-only mode reads back zeros).
    pub fn from_ssd(ssd: Ssd, clock: Arc<VirtualClock>) -> SimDevice {
        let block = ssd.unit_bytes();
        SimDevice { ssd, clock, block }
    }

    /// The simulated SSD (counters, configuration, latency histograms, zone reports, ...).
    pub fn ssd(&self) -> &Ssd {
        &self.ssd
    }

    /// The simulated SSD, mutably (for commands the trait does not carry, e.g. zone management;
    /// such calls should be given `clock().now()` and advance the clock themselves).
    pub fn ssd_mut(&mut self) -> &mut Ssd {
        &mut self.ssd
    }

    /// The clock this device advances.
    pub fn clock(&self) -> &Arc<VirtualClock> {
        &self.clock
    }

    /// Unwraps the SSD.
    pub fn into_inner(self) -> Ssd {
        self.ssd
    }

    /// Cuts power to the SSD: its volatile write cache is destaged (power-loss protection) or
    /// lost. Returns flashsim's report.
    pub fn power_cut(&mut self) -> Result<PowerCutReport, DeviceError> {
        Ok(self.ssd.power_cut()?)
    }

    fn check(&self, offset: u64, len: u64) -> Result<(), DeviceError> {
        check_io(offset, len, self.capacity_bytes(), self.block_bytes())
    }

    fn zone_mgmt(&mut self, zone: u32, action: ZoneAction) -> Result<(), DeviceError> {
        if !self.is_zoned() {
            return Err(DeviceError::Unsupported(
                "zone management on a conventional device",
            ));
        }
        let done = self.ssd.zone_mgmt(self.clock.now(), zone, action)?;
        self.clock.advance_to(done);
        Ok(())
    }

    fn is_zoned(&self) -> bool {
        matches!(self.ssd.config().mode, Mode::Zns(_))
    }
}

impl BlockDevice for SimDevice {
    fn capacity_bytes(&self) -> u64 {
        self.ssd.capacity().logical_bytes
    }

    fn block_bytes(&self) -> u32 {
        self.block
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        self.check(offset, buf.len() as u64)?;
        let done = self
            .ssd
            .read(self.clock.now(), offset, buf.len() as u64, Some(buf))?;
        self.clock.advance_to(done);
        Ok(())
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.write_placed(offset, data, 0)
    }

    fn write_placed(&mut self, offset: u64, data: &[u8], pid: u16) -> Result<(), DeviceError> {
        self.check(offset, data.len() as u64)?;
        let done = self
            .ssd
            .write(self.clock.now(), offset, data.len() as u64, pid, Some(data))?;
        self.clock.advance_to(done);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), DeviceError> {
        let done = self.ssd.flush(self.clock.now())?;
        self.clock.advance_to(done);
        Ok(())
    }

    fn trim(&mut self, offset: u64, len: u64) -> Result<(), DeviceError> {
        self.check(offset, len)?;
        if self.is_zoned() {
            return Err(DeviceError::Unsupported("trim on a zoned device"));
        }
        let done = self.ssd.trim(self.clock.now(), offset, len)?;
        self.clock.advance_to(done);
        Ok(())
    }

    fn remap(&mut self, ops: &[RemapOp]) -> Result<(), DeviceError> {
        check_remap(ops, self.capacity_bytes(), self.block_bytes())?;
        if self.is_zoned() {
            return Err(DeviceError::Unsupported("remap on a zoned device"));
        }
        if ops.is_empty() {
            return Ok(());
        }
        let batch: Vec<flashsim::RemapOp> = ops
            .iter()
            .map(|op| flashsim::RemapOp {
                src: op.src,
                dst: op.dst,
                len: op.len,
                kind: match op.mode {
                    RemapMode::Share => RemapKind::Share,
                    RemapMode::Move => RemapKind::Move,
                },
            })
            .collect();
        let done = self.ssd.remap(self.clock.now(), &batch)?;
        self.clock.advance_to(done);
        Ok(())
    }

    fn copy(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        check_copy(ops, self.capacity_bytes(), self.block_bytes())?;
        if self.is_zoned() {
            return Err(DeviceError::Unsupported("copy on a zoned device"));
        }
        if ops.is_empty() {
            return Ok(());
        }
        let batch: Vec<flashsim::CopyOp> = ops
            .iter()
            .map(|op| flashsim::CopyOp {
                src: op.src,
                dst: op.dst,
                len: op.len,
            })
            .collect();
        let done = self.ssd.copy(self.clock.now(), &batch)?;
        self.clock.advance_to(done);
        Ok(())
    }

    fn write_rewrite(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.check(offset, data.len() as u64)?;
        let done =
            self.ssd
                .write_rewrite(self.clock.now(), offset, data.len() as u64, 0, Some(data))?;
        self.clock.advance_to(done);
        Ok(())
    }

    fn zone_append(&mut self, zone: u32, data: &[u8]) -> Result<u64, DeviceError> {
        if !self.is_zoned() {
            return Err(DeviceError::Unsupported(
                "zone append on a conventional device",
            ));
        }
        let (addr, done) =
            self.ssd
                .zone_append(self.clock.now(), zone, data.len() as u64, Some(data))?;
        self.clock.advance_to(done);
        Ok(addr)
    }

    fn zone_reset(&mut self, zone: u32) -> Result<(), DeviceError> {
        self.zone_mgmt(zone, ZoneAction::Reset)
    }

    fn zone_finish(&mut self, zone: u32) -> Result<(), DeviceError> {
        self.zone_mgmt(zone, ZoneAction::Finish)
    }

    /// Read from flashsim's zone report (no virtual time: the report is not timed there).
    fn zone_report(&mut self, zone: u32) -> Result<ZoneReport, DeviceError> {
        if !self.is_zoned() {
            return Err(DeviceError::Unsupported(
                "zone report on a conventional device",
            ));
        }
        let z = self
            .ssd
            .zone_info(zone)
            .ok_or(DeviceError::Sim(format!("no zone {zone}")))?;
        Ok(ZoneReport {
            start_bytes: z.start_bytes,
            capacity_bytes: z.capacity_bytes,
            write_pointer_bytes: z.write_pointer_bytes,
            condition: match z.state {
                ZoneState::Empty => ZoneCondition::Empty,
                ZoneState::ImplicitOpen | ZoneState::ExplicitOpen => ZoneCondition::Open,
                ZoneState::Closed => ZoneCondition::Closed,
                ZoneState::Full => ZoneCondition::Full,
            },
        })
    }

    fn capabilities(&self) -> Capabilities {
        let cfg = self.ssd.config();
        let zoned = self.is_zoned();
        Capabilities {
            trim: !zoned,
            block_trims: !zoned,
            placement_ids: match &cfg.mode {
                Mode::Fdp(f) => f.handles,
                _ => 0,
            },
            zone_bytes: zoned.then(|| self.ssd.zone_size_bytes()),
            remap: !zoned,
            copy: !zoned,
            mapping_unit_bytes: self.ssd.unit_bytes(),
            gc_unit_bytes: Some(cfg.eu_bytes()),
            max_open_zones: match &cfg.mode {
                Mode::Zns(z) => Some(z.max_open_zones),
                _ => None,
            },
            max_active_zones: match &cfg.mode {
                Mode::Zns(z) => Some(z.max_active_zones),
                _ => None,
            },
        }
    }

    fn stats(&self) -> DeviceStats {
        let c = self.ssd.counters();
        DeviceStats {
            read_bytes: c.host_read_bytes,
            write_bytes: c.host_write_bytes,
            reads: c.host_read_cmds,
            writes: c.host_write_cmds,
            flushes: c.flushes,
            media_write_bytes: Some(c.media_write_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flashsim::FdpConfig;

    fn cfg() -> SsdConfig {
        SsdConfig::small(8 << 20, 0.2)
    }

    #[test]
    fn clock_advances_only_forward() {
        let c = VirtualClock::new();
        assert_eq!(c.advance_to(100), 100);
        assert_eq!(c.advance_to(50), 100);
        assert_eq!(c.advance_by(5), 105);
        c.set(7);
        assert_eq!(c.now(), 7);
    }

    #[test]
    fn io_advances_clock_and_reads_back() {
        let clock = VirtualClock::shared();
        let mut d = SimDevice::new(cfg(), clock.clone()).unwrap();
        assert_eq!(d.block_bytes(), 4096);
        assert_eq!(d.capacity_bytes(), 8 << 20);
        let data: Vec<u8> = (0..8192).map(|i| (i % 251) as u8).collect();
        d.write_at(4096, &data).unwrap();
        let t1 = clock.now();
        assert!(t1 > 0, "a timed write takes virtual time");
        d.flush().unwrap();
        let mut back = vec![0u8; 8192];
        d.read_at(4096, &mut back).unwrap();
        assert!(clock.now() > t1);
        assert_eq!(back, data);
        let s = d.stats();
        assert_eq!(s.write_bytes, 8192);
        assert_eq!(s.read_bytes, 8192);
        assert_eq!(s.writes, 1);
        assert_eq!(s.flushes, 1);
        assert!(s.media_write_bytes.unwrap() >= 8192);
    }

    #[test]
    fn errors_and_capabilities() {
        let mut c = cfg();
        c.timing.enabled = false;
        let mut d = SimDevice::new(c, VirtualClock::shared()).unwrap();
        let cap = d.capacity_bytes();
        assert!(matches!(
            d.write_at(cap, &[0u8; 4096]),
            Err(DeviceError::OutOfRange { .. })
        ));
        assert!(matches!(
            d.write_at(100, &[0u8; 4096]),
            Err(DeviceError::Unaligned { .. })
        ));
        let caps = d.capabilities();
        assert!(caps.trim && caps.remap);
        assert_eq!(caps.placement_ids, 0);
        assert_eq!(caps.zone_bytes, None);
        assert_eq!(caps.gc_unit_bytes, Some(d.ssd().config().eu_bytes()));
        // Untimed: the clock stays put.
        d.write_at(0, &[1u8; 4096]).unwrap();
        assert_eq!(d.clock().now(), 0);
    }

    #[test]
    fn remap_and_trim() {
        let mut d = SimDevice::new(cfg(), VirtualClock::shared()).unwrap();
        d.write_at(0, &[7u8; 4096]).unwrap();
        d.write_at(4096, &[8u8; 4096]).unwrap();
        let media = d.stats().media_write_bytes;
        let op = |src, dst, mode| RemapOp {
            src,
            dst,
            len: 4096,
            mode,
        };
        // One batch: share block 0 to 2, move block 1 to 3, then share the moved block on to 4
        // (an operation sees the ones before it).
        d.remap(&[
            op(0, 8192, RemapMode::Share),
            op(4096, 12288, RemapMode::Move),
            op(12288, 16384, RemapMode::Share),
        ])
        .unwrap();
        assert_eq!(
            d.stats().media_write_bytes,
            media,
            "aligned remaps program nothing"
        );
        assert_eq!(d.ssd().counters().remap_units, 3);
        let mut b = vec![0u8; 4096];
        for (at, want) in [(0, 7u8), (8192, 7), (4096, 0), (12288, 8), (16384, 8)] {
            d.read_at(at, &mut b).unwrap();
            assert_eq!(b, vec![want; 4096], "offset {at}");
        }
        d.trim(0, 4096).unwrap();
        d.read_at(0, &mut b).unwrap();
        assert_eq!(b, vec![0u8; 4096]);
        d.read_at(8192, &mut b).unwrap();
        assert_eq!(
            b,
            vec![7u8; 4096],
            "the shared copy outlives the trim of the source"
        );
        // A bad batch changes nothing.
        assert_eq!(
            d.remap(&[op(8192, 0, RemapMode::Move), op(0, 2048, RemapMode::Share)]),
            Err(DeviceError::Unaligned {
                offset: 2048,
                len: 4096,
                block: 4096
            })
        );
        d.read_at(0, &mut b).unwrap();
        assert_eq!(b, vec![0u8; 4096]);
        assert_eq!(d.capabilities().mapping_unit_bytes, 4096);
    }

    #[test]
    fn remap_batch_is_one_command() {
        let clock = VirtualClock::shared();
        let mut d = SimDevice::new(cfg(), clock.clone()).unwrap();
        d.write_at(0, &[1u8; 8 * 4096]).unwrap();
        d.flush().unwrap();
        let op = |i: u64| RemapOp {
            src: i * 4096,
            dst: (64 + i) * 4096,
            len: 4096,
            mode: RemapMode::Share,
        };
        let t0 = clock.now();
        d.remap(&[op(0)]).unwrap();
        let one = clock.now() - t0;
        let t1 = clock.now();
        d.remap(&(1..8).map(op).collect::<Vec<_>>()).unwrap();
        assert!(one > 0);
        assert_eq!(clock.now() - t1, one, "a batch costs one command");
        assert_eq!(d.ssd().counters().remap_units, 8);
    }

    #[test]
    fn copy_commands_and_rewrites() {
        let clock = VirtualClock::shared();
        let mut d = SimDevice::new(cfg(), clock.clone()).unwrap();
        assert!(d.capabilities().copy);
        let data: Vec<u8> = (0..4 * 4096).map(|i| (i % 253) as u8).collect();
        d.write_at(0, &data).unwrap();
        d.flush().unwrap();
        let host = d.stats().write_bytes;
        let op = |i: u64| CopyOp {
            src: i * 4096,
            dst: (64 + i) * 4096,
            len: 4096,
        };
        // ISC-A: one range per command; ISC-B: the rest in one command.
        let t0 = clock.now();
        d.copy(&[op(0)]).unwrap();
        assert!(clock.now() > t0, "a copy takes virtual time");
        d.copy(&[op(1), op(2), op(3)]).unwrap();
        let mut back = vec![0u8; 4 * 4096];
        d.read_at(64 * 4096, &mut back).unwrap();
        assert_eq!(back, data);
        let c = d.ssd().counters();
        assert_eq!((c.copy_cmds, c.copy_ops, c.copy_bytes), (2, 4, 4 * 4096));
        assert_eq!(c.redundant_write_bytes, 4 * 4096);
        assert_eq!(d.stats().write_bytes, host, "copies are not host writes");
        // A rewrite is a host write, also counted as redundant.
        d.write_rewrite(128 * 4096, &data[..4096]).unwrap();
        assert_eq!(d.stats().write_bytes, host + 4096);
        assert_eq!(d.ssd().counters().redundant_write_bytes, 5 * 4096);
        d.read_at(128 * 4096, &mut back[..4096]).unwrap();
        assert_eq!(back[..4096], data[..4096]);
        // Checked whole first: a bad command changes nothing.
        assert!(matches!(
            d.copy(&[
                op(0),
                CopyOp {
                    src: 0,
                    dst: 100,
                    len: 4096
                }
            ]),
            Err(DeviceError::Unaligned { .. })
        ));
        assert_eq!(d.ssd().counters().copy_cmds, 2);
    }

    #[test]
    fn zns_zone_commands_and_report() {
        let mut c = cfg();
        c.mode = Mode::Zns(flashsim::ZnsConfig {
            zone_eus: 1,
            max_open_zones: 4,
            max_active_zones: 4,
        });
        c.fit_reserve();
        let mut d = SimDevice::new(c, VirtualClock::shared()).unwrap();
        let caps = d.capabilities();
        let zb = caps.zone_bytes.unwrap();
        assert!(!caps.remap && !caps.trim);
        assert_eq!(caps.mapping_unit_bytes, 4096);
        let r = d.zone_report(1).unwrap();
        assert_eq!((r.start_bytes, r.capacity_bytes), (zb, zb));
        assert_eq!(r.write_pointer_bytes, zb);
        assert_eq!(r.condition, ZoneCondition::Empty);
        assert_eq!(d.zone_append(1, &[5u8; 8192]).unwrap(), zb);
        let r = d.zone_report(1).unwrap();
        assert_eq!(r.write_pointer_bytes, zb + 8192);
        assert_eq!(r.condition, ZoneCondition::Open);
        d.zone_finish(1).unwrap();
        assert_eq!(d.zone_report(1).unwrap().condition, ZoneCondition::Full);
        d.zone_reset(1).unwrap();
        assert_eq!(d.zone_report(1).unwrap().write_pointer_bytes, zb);
        assert!(matches!(d.zone_report(10_000), Err(DeviceError::Sim(_))));
        let op = RemapOp {
            src: 0,
            dst: zb,
            len: 4096,
            mode: RemapMode::Move,
        };
        assert!(matches!(d.remap(&[op]), Err(DeviceError::Unsupported(_))));
        assert!(!caps.copy);
        let op = CopyOp {
            src: 0,
            dst: zb,
            len: 4096,
        };
        assert!(matches!(d.copy(&[op]), Err(DeviceError::Unsupported(_))));
    }

    #[test]
    fn fdp_placement_ids() {
        let mut c = cfg();
        c.mode = Mode::Fdp(FdpConfig { handles: 4 });
        c.fit_reserve();
        let mut d = SimDevice::new(c, VirtualClock::shared()).unwrap();
        assert_eq!(d.capabilities().placement_ids, 4);
        d.write_placed(0, &[1u8; 4096], 3).unwrap();
        assert!(matches!(
            d.write_placed(0, &[1u8; 4096], 4),
            Err(DeviceError::Sim(_))
        ));
        assert_eq!(d.ssd().handle_stats()[3].host_write_bytes, 4096);
    }

    #[test]
    fn power_cut_without_plp_loses_cache() {
        let mut c = cfg();
        c.write_cache_bytes = 64 * 4096;
        c.power_loss_protection = false;
        let mut d = SimDevice::new(c, VirtualClock::shared()).unwrap();
        d.write_at(0, &[1u8; 4096]).unwrap();
        d.flush().unwrap();
        d.write_at(0, &[2u8; 4096]).unwrap();
        let r = d.power_cut().unwrap();
        assert_eq!(r.lost_units, 1);
        let mut b = vec![0u8; 4096];
        d.read_at(0, &mut b).unwrap();
        assert_eq!(b, vec![1u8; 4096]);
    }
}
