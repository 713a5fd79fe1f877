//! Device rigs of the torture trials: a data and a log device of one kind, each behind a
//! [`FaultDevice`], in one power domain (one command count, one power switch), that the trial
//! keeps a handle on so it can crash and reopen them.

use flashsim::{FdpConfig, Geometry, Mode, SsdConfig, ZnsConfig};
use wafer_engine::device::{
    BlockDevice, CrashReport, FaultConfig, FaultDevice, FaultHandle, FileDevice, Handle, MemDevice,
    SimDevice, VirtualClock,
};
use wafer_engine::Devices;

/// The kind of device pair a trial runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// Two in-memory devices with this block size (512 lets a 4 KiB page tear).
    Mem {
        /// Block size in bytes.
        block: u32,
    },
    /// Two files in a temporary directory (4 KiB blocks, buffered I/O).
    File,
    /// A conventional simulated SSD for data, one for the log.
    SimConventional,
    /// A ZNS simulated SSD for data (out-of-place only), a conventional one for the log.
    SimZns,
    /// An FDP simulated SSD for data (out-of-place only), a conventional one for the log.
    SimFdp,
}

impl DeviceKind {
    /// A short name for reports.
    pub fn name(self) -> String {
        match self {
            DeviceKind::Mem { block } => format!("mem{block}"),
            DeviceKind::File => "file".into(),
            DeviceKind::SimConventional => "sim".into(),
            DeviceKind::SimZns => "zns".into(),
            DeviceKind::SimFdp => "fdp".into(),
        }
    }
}

/// A shared handle on a fault-injecting device.
pub type FaultDev = Handle<FaultDevice<Box<dyn BlockDevice>>>;

/// A data and a log device in one power domain.
pub struct Rig {
    /// The data device.
    pub data: FaultDev,
    /// The log device.
    pub log: FaultDev,
    /// The power domain's switch and counters.
    pub power: FaultHandle,
    /// Keeps the files of a `File` rig until the rig goes.
    _dir: Option<tempfile::TempDir>,
}

/// A simulated SSD in data mode without timing, with small erase units (2 channels x 1 die, 8
/// pages of 4 KiB per block: the GC unit, a ZNS zone and an FDP reclaim unit are 64 KiB).
pub fn small_ssd(logical_bytes: u64, mode: Mode) -> SsdConfig {
    let g = Geometry {
        channels: 2,
        dies_per_channel: 1,
        planes_per_die: 1,
        blocks_per_plane: 1,
        pages_per_block: 8,
        page_size_bytes: 4096,
    };
    SsdConfig::sized_untimed(g, logical_bytes, 0.12, mode)
}

fn sim(cfg: SsdConfig, clock: &std::sync::Arc<VirtualClock>) -> Box<dyn BlockDevice> {
    Box::new(SimDevice::new(cfg, clock.clone()).expect("a valid simulated SSD configuration"))
}

impl Rig {
    /// A rig of `kind` with `data_bytes` and `log_bytes`; `fault` applies to both devices (the
    /// log's with another seed).
    pub fn new(kind: DeviceKind, data_bytes: u64, log_bytes: u64, fault: FaultConfig) -> Rig {
        let mut dir = None;
        let (data, log): (Box<dyn BlockDevice>, Box<dyn BlockDevice>) = match kind {
            DeviceKind::Mem { block } => (
                Box::new(MemDevice::new(data_bytes, block)),
                Box::new(MemDevice::new(log_bytes, block)),
            ),
            DeviceKind::File => {
                let d = tempfile::Builder::new()
                    .prefix("wafer-torture-")
                    .tempdir()
                    .expect("a temporary directory");
                let open = |name: &str, bytes| {
                    Box::new(
                        FileDevice::open_buffered(d.path().join(name), Some(bytes), true)
                            .expect("a file device in the temporary directory"),
                    ) as Box<dyn BlockDevice>
                };
                let pair = (open("data.wafer", data_bytes), open("log.wafer", log_bytes));
                dir = Some(d);
                pair
            }
            DeviceKind::SimConventional | DeviceKind::SimZns | DeviceKind::SimFdp => {
                let clock = VirtualClock::shared();
                let mode = match kind {
                    DeviceKind::SimZns => Mode::Zns(ZnsConfig {
                        zone_eus: 1,
                        max_open_zones: 6,
                        max_active_zones: 6,
                    }),
                    DeviceKind::SimFdp => Mode::Fdp(FdpConfig { handles: 4 }),
                    _ => Mode::Conventional,
                };
                let mut log = SsdConfig::small(log_bytes, 0.2);
                log.timing.enabled = false;
                (sim(small_ssd(data_bytes, mode), &clock), sim(log, &clock))
            }
        };
        let data = FaultDevice::new(data, fault.clone());
        let power = data.handle();
        let log_fault = FaultConfig {
            seed: fault.seed ^ 0x9e37_79b9_7f4a_7c15,
            ..fault
        };
        let log = FaultDevice::in_power_domain(log, log_fault, &power);
        Rig {
            data: Handle::new(data),
            log: Handle::new(log),
            power,
            _dir: dir,
        }
    }

    /// The devices for `Db::open`.
    pub fn devices(&self) -> Devices {
        Devices::new(Box::new(self.data.clone()), Box::new(self.log.clone()))
    }

    /// Arms a power cut `n` commands from now (n >= 1).
    pub fn cut_in(&self, n: u64) {
        self.power
            .cut_power_at(Some(self.power.commands() + n.max(1)));
    }

    /// Disarms an armed cut.
    pub fn disarm(&self) {
        self.power.cut_power_at(None);
    }

    /// Whether power is off.
    pub fn is_powered_off(&self) -> bool {
        self.power.is_powered_off()
    }

    /// Cuts power (if still on), then crashes both devices: unflushed writes are lost or torn
    /// as configured, and power comes back. Returns the (data, log) reports.
    pub fn crash(&self) -> (CrashReport, CrashReport) {
        self.disarm();
        self.power.cut_power_now();
        let d = self.data.lock().crash();
        let l = self.log.lock().crash();
        (d, l)
    }
}
