//! Shared helpers of the engine's integration tests: devices the test keeps a handle on (so it
//! can reopen or crash them after the engine lets go), and a committed-state oracle.

#![allow(dead_code)]

use std::collections::BTreeMap;
use wafer_engine::device::{
    FaultConfig, FaultDevice, MemDevice, SharedDevice, SimDevice, VirtualClock,
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
