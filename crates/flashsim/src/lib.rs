//! flashsim: a fast, deterministic model of a flash SSD.
//!
//! It models geometry (channels x dies x planes x blocks x pages), a page-level FTL at a
//! configurable mapping unit with read-modify-write, write frontiers, garbage collection with
//! several victim policies, trim, remap (reference-counted sharing of physical pages), ZNS and FDP
//! interfaces, a die/channel timing model with latency histograms, wear, and OCP-style counters.
//! A hard-disk model ([`Hdd`]) offers the same [`SimDevice`] interface.
//!
//! flashsim knows nothing of the wafer engine. Same configuration + seed = same numbers.
//!
//! ```
//! use flashsim::{Ssd, SsdConfig};
//! let mut cfg = SsdConfig::small(8 << 20, 0.2);
//! cfg.timing.enabled = false;
//! let mut ssd = Ssd::new(cfg).unwrap();
//! for i in 0..10_000u64 {
//!     let lba = (i * 7919) % 2048;
//!     ssd.write(0, lba * 4096, 4096, 0, None).unwrap();
//! }
//! assert!(ssd.counters().waf() >= 1.0);
//! ```

mod batch;
mod cache;
pub mod config;
mod copy;
mod device;
mod direct;
mod divide;
pub mod drives;
#[cfg(test)]
mod equivalence;
mod error;
mod gc;
pub mod hdd;
mod remap;
mod report;
mod ssd;
mod stats;
mod store;
mod timing;
mod units;
mod victim;
mod zns;

pub use config::{
    Capacity, Cell, ConfigError, DataMode, FdpConfig, GcConfig, GcPolicy, GcUnit, Geometry, Mode,
    SsdConfig, TimingConfig, WearConfig, ZnsConfig,
};
pub use device::SimDevice;
pub use drives::{Drive, DriveMedia};
pub use error::SimError;
pub use hdd::{Hdd, HddConfig};
pub use ssd::{CopyOp, PowerCutReport, RemapKind, RemapOp, Ssd, MAP_ENTRY_BYTES};
pub use stats::{Counters, HandleStats, Report, WearReport};
pub use timing::{LatencyHistogram, LatencySummary};
pub use zns::{ZoneAction, ZoneInfo, ZoneState};
