//! Shared helpers of the engine's integration tests: devices the test keeps a handle on (so it
//! can reopen or crash them after the engine lets go), and a committed-state oracle.

#![allow(dead_code)]

use std::collections::BTreeMap;
use wafer_engine::device::{
    CrashReport, FaultConfig, FaultDevice, FaultHandle, MemDevice, SharedDevice, SimDevice,
    VirtualClock,
};
use wafer_engine::Devices;

/// A device the test shares with the engine (the engine's own `Handle`).
pub type Held<D> = wafer_engine::device::Handle<D>;

pub const DATA_BYTES: u64 = 32 << 20;
pub const LOG_BYTES: u64 = 8 << 20;

/// One in-memory device split into data and log, reopenable.
pub struct MemPair {
    pub shared: SharedDevice,
}

impl MemPair {
    pub fn new() -> MemPair {
        MemPair {
            shared: SharedDevice::shared(MemDevice::new(DATA_BYTES + LOG_BYTES, 4096)),
        }
    }
    pub fn devices(&self) -> Devices {
        let mut p = self.shared.split(&[DATA_BYTES, LOG_BYTES]).unwrap();
        let log = p.pop().unwrap();
        let data = p.pop().unwrap();
        Devices::new(Box::new(data), Box::new(log))
    }
}

/// A simulated SSD (data mode) behind a fault injector, split into data and log.
pub struct CrashRig {
    pub fault: Held<FaultDevice<SimDevice>>,
    pub shared: SharedDevice,
    pub data_bytes: u64,
}

impl CrashRig {
    pub fn new(cfg: FaultConfig) -> CrashRig {
        CrashRig::sized(cfg, DATA_BYTES)
    }
    /// A rig whose data part is `data_bytes` (a small one makes DB GC run often).
    pub fn sized(cfg: FaultConfig, data_bytes: u64) -> CrashRig {
        let mut ssd = flashsim::SsdConfig::small(DATA_BYTES + LOG_BYTES, 0.2);
        ssd.timing.enabled = false;
        let sim = SimDevice::new(ssd, VirtualClock::shared()).unwrap();
        let fault = Held::new(FaultDevice::new(sim, cfg));
        let shared = SharedDevice::shared(fault.clone());
        CrashRig {
            fault,
            shared,
            data_bytes,
        }
    }
    pub fn devices(&self) -> Devices {
        let mut p = self.shared.split(&[self.data_bytes, LOG_BYTES]).unwrap();
        let log = p.pop().unwrap();
        let data = p.pop().unwrap();
        Devices::new(Box::new(data), Box::new(log))
    }
}

/// An untimed SSD in data mode with small erase units: 2 channels x 1 die, 8 pages of 4 KiB per
/// block, so a superblock (the GC unit, a ZNS zone, an FDP reclaim unit) is 64 KiB.
pub fn small_eu_ssd(logical_bytes: u64, mode: flashsim::Mode) -> flashsim::SsdConfig {
    let g = flashsim::Geometry {
        channels: 2,
        dies_per_channel: 1,
        planes_per_die: 1,
        blocks_per_plane: 1,
        pages_per_block: 8,
        page_size_bytes: 4096,
    };
    let mut c = flashsim::SsdConfig::sized(g, logical_bytes, 0.12);
    c.data = flashsim::DataMode::Memory;
    c.timing.enabled = false;
    c.mode = mode;
    c.fit_reserve();
    c
}

/// A data device and a log device, each a simulated SSD behind its own fault injector, in one
/// power domain (one command count, one power switch). The data device is a whole device, not a
/// partition, so a zoned SSD keeps its zones.
pub struct DualRig {
    pub data: Held<FaultDevice<SimDevice>>,
    pub log: Held<FaultDevice<SimDevice>>,
}

impl DualRig {
    /// `data` for the data role; the log is a conventional SSD of `LOG_BYTES`. The log's
    /// faults are `cfg`'s with another seed.
    pub fn new(cfg: FaultConfig, data: flashsim::SsdConfig) -> DualRig {
        let clock = VirtualClock::shared();
        let data = SimDevice::new(data, clock.clone()).unwrap();
        let data = Held::new(FaultDevice::new(data, cfg.clone()));
        let mut log_ssd = flashsim::SsdConfig::small(LOG_BYTES, 0.2);
        log_ssd.timing.enabled = false;
        let log = SimDevice::new(log_ssd, clock).unwrap();
        let power = data.lock().handle();
        let log_cfg = FaultConfig {
            seed: cfg.seed ^ 0x9e37_79b9,
            ..cfg
        };
        let log = Held::new(FaultDevice::in_power_domain(log, log_cfg, &power));
        DualRig { data, log }
    }
    pub fn devices(&self) -> Devices {
        Devices::new(Box::new(self.data.clone()), Box::new(self.log.clone()))
    }
    /// The power domain's switch and counters.
    pub fn power(&self) -> FaultHandle {
        self.data.lock().handle()
    }
    /// The crash of both devices: (data, log) reports.
    pub fn crash(&self) -> (CrashReport, CrashReport) {
        let d = self.data.lock().crash();
        let l = self.log.lock().crash();
        (d, l)
    }
}

/// Committed state: tree name -> key -> value.
pub type Oracle = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

/// A key of `len` bytes derived from `n`.
pub fn key(n: u64, len: usize) -> Vec<u8> {
    let mut k = format!("k{n:08}").into_bytes();
    k.resize(len.max(9), b'.');
    k
}

/// A value of `len` bytes derived from `seed`.
pub fn value(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 26) as u8 + b'a'
        })
        .collect()
}
