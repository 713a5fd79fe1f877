//! [`Devices`]: the devices a database is opened on, one per role.

use crate::clock::{Clock, WallClock};
use crate::device::{BlockDevice, FileDevice, MemDevice, SharedDevice};
use crate::error::{Error, Result};
use std::sync::Arc;

/// The devices of a database, one per role (DESIGN.md): `data` (pages) and `log` (the WAL), and
/// optionally `undo` (version store) and `temp` (sort and hash spill) for the components that use
/// them; plus the clock the devices' time runs on (wall time, or a simulation's virtual time).
pub struct Devices {
    pub data: Box<dyn BlockDevice>,
    pub log: Box<dyn BlockDevice>,
    pub undo: Option<Box<dyn BlockDevice>>,
    pub temp: Option<Box<dyn BlockDevice>>,
    pub clock: Arc<dyn Clock>,
}

impl Devices {
    /// A data and a log device, on the wall clock.
    pub fn new(data: Box<dyn BlockDevice>, log: Box<dyn BlockDevice>) -> Devices {
        Devices {
            data,
            log,
            undo: None,
            temp: None,
            clock: WallClock::shared(),
        }
    }

    /// The same devices measured on `clock` (simulated devices: their shared virtual clock).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Devices {
        self.clock = clock;
        self
    }

    /// Adds a device for the `undo` role.
    pub fn with_undo(mut self, undo: Box<dyn BlockDevice>) -> Devices {
        self.undo = Some(undo);
        self
    }

    /// Adds a device for the `temp` role.
    pub fn with_temp(mut self, temp: Box<dyn BlockDevice>) -> Devices {
        self.temp = Some(temp);
        self
    }

    /// Two in-memory devices (tests, examples).
    pub fn memory(data_bytes: u64, log_bytes: u64) -> Devices {
        Devices::new(
            Box::new(MemDevice::new(data_bytes, 4096)),
            Box::new(MemDevice::new(log_bytes, 4096)),
        )
    }

    /// A data SSD simulated by flashsim (conventional, 4 KiB pages on 1 MiB erase units, spare
    /// factor 0.10, the timing model on, data kept in memory) of `data_bytes` logical bytes, and
    /// an in-memory log of `log_bytes`, with the database on the device's virtual clock: what an
    /// embedder needs to measure SSD WAF and virtual time without depending on flashsim itself.
    /// The data device's counters are in [`Db::stats`] (`data_device`).
    ///
    /// ```
    /// use wafer_engine::{Db, DbConfig, Devices};
    /// let db = Db::open(Devices::simulated(16 << 20, 4 << 20).unwrap(), DbConfig::default()).unwrap();
    /// let t = db.create_tree("t").unwrap();
    /// for i in 0..2000u32 {
    ///     let mut x = db.begin().unwrap();
    ///     x.put(&t, &(i % 500).to_le_bytes(), &[7u8; 1000]).unwrap();
    ///     x.commit().unwrap();
    /// }
    /// db.checkpoint().unwrap();
    /// let s = db.stats();
    /// assert!(s.data_device.write_bytes > 0);
    /// ```
    #[cfg(feature = "sim")]
    pub fn simulated(data_bytes: u64, log_bytes: u64) -> Result<Devices> {
        let mut cfg = flashsim::SsdConfig::small(data_bytes, 0.10);
        cfg.data = flashsim::DataMode::Memory;
        cfg.timing.enabled = true;
        cfg.validate()
            .map_err(|e| Error::Config(format!("simulated data device: {e}")))?;
        let clock = crate::device::VirtualClock::shared();
        let data = crate::device::SimDevice::new(cfg, clock.clone())?;
        Ok(
            Devices::new(Box::new(data), Box::new(MemDevice::new(log_bytes, 4096)))
                .with_clock(clock),
        )
    }

    /// Data and log on one device: the log takes its last `log_bytes`.
    pub fn one_device(dev: Box<dyn BlockDevice>, log_bytes: u64) -> Result<Devices> {
        let cap = dev.capacity_bytes();
        if log_bytes == 0 || log_bytes >= cap {
            return Err(Error::Config(format!(
                "log of {log_bytes} bytes does not fit a device of {cap} bytes"
            )));
        }
        let shared = SharedDevice::from_box(dev);
        let data = shared.partition(0, cap - log_bytes)?;
        let log = shared.partition(cap - log_bytes, log_bytes)?;
        Ok(Devices::new(Box::new(data), Box::new(log)))
    }

    /// Files `data.wafer` and `log.wafer` in `dir`, created with the given sizes if missing (the
    /// data file sparse, the log file with every block written: see
    /// [`FileDevice::create_zeroed`]); an existing file must have exactly its size (a truncated file, or sizes that disagree with
    /// the ones the database was made with, are refused with `DeviceError::WrongSize`). Both
    /// files are locked (`flock`) while the database is open: a second open of the same files,
    /// in this process or another, fails with `DeviceError::Locked` (a process that dies drops
    /// its locks).
    pub fn files(dir: &std::path::Path, data_bytes: u64, log_bytes: u64) -> Result<Devices> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Config(format!("cannot create {}: {e}", dir.display())))?;
        for (name, want) in [("data.wafer", data_bytes), ("log.wafer", log_bytes)] {
            let path = dir.join(name);
            if let Ok(m) = std::fs::metadata(&path) {
                if m.is_file() && m.len() != 0 && m.len() != want {
                    return Err(Error::Device(crate::device::DeviceError::WrongSize {
                        path: path.display().to_string(),
                        expected_bytes: want,
                        found_bytes: m.len(),
                    }));
                }
            }
        }
        let data = FileDevice::open(dir.join("data.wafer"), Some(data_bytes), true)?;
        // The log is flushed at every durable commit: written through at creation, so that
        // no flush allocates (device/file/zeroed.rs). The data file stays sparse.
        FileDevice::create_zeroed(&dir.join("log.wafer"), log_bytes)?;
        let log = FileDevice::open(dir.join("log.wafer"), Some(log_bytes), true)?;
        // One open database per pair of files: a second open would corrupt both.
        data.lock_exclusive()?;
        log.lock_exclusive()?;
        Ok(Devices::new(Box::new(data), Box::new(log)))
    }
}
