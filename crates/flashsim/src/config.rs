//! Configuration of a simulated SSD: geometry, FTL, GC, interface mode, timing, wear and data mode.
//!
//! Every knob lives in one typed struct, [`SsdConfig`], passed to [`crate::Ssd::new`]. Units are in
//! the field names (`_bytes`, `_ns`, `_mb_s`). [`SsdConfig::validate`] rejects inconsistent settings
//! with a [`ConfigError`] that names the field.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Physical layout of the flash array.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Geometry {
    pub channels: u32,
    pub dies_per_channel: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    /// Size of one physical (NAND) page in bytes; default 16 KiB.
    pub page_size_bytes: u32,
}

/// Bounds of each geometry field (a larger value is a typo or an overflow waiting to happen:
/// the model keeps per-die and per-block state in memory).
pub const MAX_CHANNELS: u32 = 1024;
pub const MAX_DIES_PER_CHANNEL: u32 = 1024;
pub const MAX_PLANES_PER_DIE: u32 = 16;
pub const MAX_PAGES_PER_BLOCK: u32 = 1 << 16;
pub const MAX_BLOCKS_PER_PLANE: u32 = 1 << 24;
/// Most dies a device may have in all.
pub const MAX_DIES: u32 = 1 << 16;

impl Geometry {
    /// Checks every field and that the derived sizes fit their types, before any arithmetic on
    /// them (the other methods assume a checked geometry).
    pub fn check(&self) -> Result<(), ConfigError> {
        for (name, v, max) in [
            ("geometry.channels", self.channels, MAX_CHANNELS),
            (
                "geometry.dies_per_channel",
                self.dies_per_channel,
                MAX_DIES_PER_CHANNEL,
            ),
            (
                "geometry.planes_per_die",
                self.planes_per_die,
                MAX_PLANES_PER_DIE,
            ),
            (
                "geometry.blocks_per_plane",
                self.blocks_per_plane,
                MAX_BLOCKS_PER_PLANE,
            ),
            (
                "geometry.pages_per_block",
                self.pages_per_block,
                MAX_PAGES_PER_BLOCK,
            ),
        ] {
            if v == 0 || v > max {
                return Err(bad(name, format!("{v} is not in 1..={max}")));
            }
        }
        if !self.page_size_bytes.is_power_of_two() || !(512..=65536).contains(&self.page_size_bytes)
        {
            return Err(bad(
                "geometry.page_size_bytes",
                format!(
                    "{} is not a power of two in 512..=65536",
                    self.page_size_bytes
                ),
            ));
        }
        let dies = self.channels as u64 * self.dies_per_channel as u64;
        if dies > MAX_DIES as u64 {
            return Err(bad(
                "geometry",
                format!("{dies} dies (channels x dies per channel) exceed {MAX_DIES}"),
            ));
        }
        // Every product below fits u64 with these bounds: dies x planes x blocks x pages x page
        // size <= 2^16 * 2^4 * 2^24 * 2^16 * 2^16 = 2^76 would not, so check the last steps.
        let sb = (dies * self.planes_per_die as u64)
            .checked_mul(self.pages_per_block as u64 * self.page_size_bytes as u64);
        let phys = sb.and_then(|sb| sb.checked_mul(self.blocks_per_plane as u64));
        if phys.is_none() {
            return Err(bad("geometry", "the raw capacity overflows 64 bits"));
        }
        Ok(())
    }

    /// Number of dies in the device.
    pub fn dies(&self) -> u32 {
        self.channels * self.dies_per_channel
    }
    /// Number of (die, plane) pairs: the parallel units a superblock spans.
    pub fn die_planes(&self) -> u32 {
        self.dies() * self.planes_per_die
    }
    /// Bytes in one physical block.
    pub fn block_bytes(&self) -> u64 {
        self.pages_per_block as u64 * self.page_size_bytes as u64
    }
    /// Bytes in one superblock (one block from every plane of every die).
    pub fn superblock_bytes(&self) -> u64 {
        self.block_bytes() * self.die_planes() as u64
    }
    /// Raw flash capacity in bytes.
    pub fn physical_bytes(&self) -> u64 {
        self.superblock_bytes() * self.blocks_per_plane as u64
    }
}

/// Victim selection policy of the FTL garbage collector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum GcPolicy {
    /// Fewest valid units first.
    Greedy,
    /// Rosenblum/Ousterhout cost-benefit: maximise age * (1 - u) / (2u).
    CostBenefit,
    /// Oldest sealed erase unit first.
    Fifo,
    /// A uniformly random sealed erase unit.
    Random,
    /// The best (fewest valid) of `d` random sealed erase units.
    DChoices { d: u32 },
}

impl std::str::FromStr for GcPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim().to_ascii_lowercase();
        match s.as_str() {
            "greedy" => Ok(GcPolicy::Greedy),
            "cost-benefit" | "costbenefit" | "cb" => Ok(GcPolicy::CostBenefit),
            "fifo" => Ok(GcPolicy::Fifo),
            "random" => Ok(GcPolicy::Random),
            _ => {
                if let Some(d) = s
                    .strip_prefix("d-choices(")
                    .or_else(|| s.strip_prefix("dchoices("))
                    .and_then(|r| r.strip_suffix(')'))
                {
                    let d: u32 = d.parse().map_err(|_| format!("bad d in '{s}'"))?;
                    return Ok(GcPolicy::DChoices { d });
                }
                Err(format!(
                    "unknown GC policy '{s}' (expected greedy, cost-benefit, fifo, random or d-choices(D))"
                ))
            }
        }
    }
}

impl std::fmt::Display for GcPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GcPolicy::Greedy => write!(f, "greedy"),
            GcPolicy::CostBenefit => write!(f, "cost-benefit"),
            GcPolicy::Fifo => write!(f, "fifo"),
            GcPolicy::Random => write!(f, "random"),
            GcPolicy::DChoices { d } => write!(f, "d-choices({d})"),
        }
    }
}

/// The unit the FTL appends to and garbage-collects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GcUnit {
    /// One block from every plane of every die (default; how most SSDs work).
    Superblock,
    /// A single block; writes still stripe over all (die, plane) pairs, one open block each.
    Block,
}

/// Garbage-collection settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GcConfig {
    pub policy: GcPolicy,
    pub unit: GcUnit,
    /// Foreground GC runs while fewer than this many erase units are free (per lane in block mode).
    pub free_eus_min: u32,
    /// Background GC (only while the device is idle) runs while fewer than this many are free.
    pub free_eus_background: u32,
    /// Write GC-relocated data to its own frontier instead of mixing it with host writes.
    pub separate_gc_frontier: bool,
}

/// Zoned Namespace settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZnsConfig {
    /// Erase units (superblocks by default) per zone.
    pub zone_eus: u32,
    pub max_open_zones: u32,
    pub max_active_zones: u32,
}

/// Flexible Data Placement settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FdpConfig {
    /// Number of reclaim unit handles; a write's placement id must be below this.
    pub handles: u32,
}

/// Host interface of the device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Mode {
    /// A conventional block device with an internal FTL and GC.
    Conventional,
    /// Zoned Namespace: sequential-write zones, host-managed GC, no device over-provisioning.
    Zns(ZnsConfig),
    /// Conventional plus FDP placement ids: reclaim unit = GC unit, one frontier per handle.
    Fdp(FdpConfig),
}

/// NAND and interface latencies; defaults describe a modern TLC datacenter SSD (see docs/flashsim.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingConfig {
    /// When false, every command completes at its submit time and no busy time is tracked
    /// (fastest; for WAF-only sweeps).
    pub enabled: bool,
    pub read_ns: u64,
    pub program_ns: u64,
    pub erase_ns: u64,
    /// NAND channel (ONFI/Toggle) transfer rate per channel.
    pub channel_mb_s: u64,
    /// Fixed controller + host interface overhead added to every command.
    pub command_overhead_ns: u64,
    /// Pages of program work a die may have queued before host writes to it wait (the
    /// controller's write buffer); host writes are acknowledged once buffered.
    pub write_buffer_pages_per_die: u32,
}

/// NAND cell types with typical per-operation latencies and endurance. SLC, MLC and TLC figures
/// from HP's white paper "Solid State Drive Technology: Differences between SLC, MLC and TLC
/// NAND" (Table 1); where it gives a range the midpoint is used. QLC has no such table: its
/// figures come from several sources, named in docs/flashsim.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cell {
    /// 1 bit per cell: read 25 us, program 200-300 us, erase 1.5-2 ms, 100,000 P/E cycles.
    Slc,
    /// 2 bits per cell: read 50 us, program 600-900 us, erase 3 ms, 3,000 P/E cycles.
    Mlc,
    /// 3 bits per cell: read ~75 us, program ~900-1350 us, erase ~4.5 ms, 1,000 P/E cycles.
    Tlc,
    /// 4 bits per cell: read 120 us (mean over the four page types of a 96-layer QLC part),
    /// program 2 ms per 16 KiB page, erase 10 ms (assumed), 1,000 P/E cycles.
    Qlc,
}

impl Cell {
    /// (read, program, erase) latencies in ns and the P/E limit of this cell type.
    pub fn figures(self) -> (u64, u64, u64, u32) {
        match self {
            Cell::Slc => (25_000, 250_000, 1_750_000, 100_000),
            Cell::Mlc => (50_000, 750_000, 3_000_000, 3_000),
            Cell::Tlc => (75_000, 1_125_000, 4_500_000, 1_000),
            Cell::Qlc => (120_000, 2_000_000, 10_000_000, 1_000),
        }
    }
}

impl SsdConfig {
    /// Sets the NAND timing and endurance of `cell` (other timing fields stay).
    pub fn set_cell(&mut self, cell: Cell) {
        let (r, p, e, pe) = cell.figures();
        self.timing.read_ns = r;
        self.timing.program_ns = p;
        self.timing.erase_ns = e;
        self.wear.pe_limit = pe;
    }
}

/// Wear model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WearConfig {
    /// Rated program/erase cycles per block.
    pub pe_limit: u32,
}

/// Whether and where the device keeps the contents written to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum DataMode {
    /// No contents kept: reads return zeros. Fastest; for WAF and timing sweeps.
    WafOnly,
    /// Contents kept in memory (physical capacity is allocated lazily per erase unit).
    Memory,
    /// Contents kept in a sparse backing file of physical size.
    File { path: PathBuf },
}

/// The complete configuration of one simulated SSD.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsdConfig {
    pub geometry: Geometry,
    /// Logical capacity exported to the host. In ZNS mode this is ignored: all zones are exported.
    pub logical_bytes: u64,
    /// FTL mapping unit in bytes (512 B .. 16 KiB, a power of two, at most the page size).
    pub mapping_unit_bytes: u32,
    pub gc: GcConfig,
    pub mode: Mode,
    pub timing: TimingConfig,
    pub wear: WearConfig,
    pub data: DataMode,
    /// Volatile write cache in bytes (0 = write-through: a completed write is on flash).
    pub write_cache_bytes: u64,
    /// Power-loss protection: on a power cut the write cache is destaged instead of lost.
    pub power_loss_protection: bool,
    /// Seed for every random choice the device makes (random / d-choices GC).
    pub seed: u64,
}

/// Errors in a configuration, naming the offending field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid flashsim config: {field}: {reason}")]
pub struct ConfigError {
    pub field: &'static str,
    pub reason: String,
}

fn bad(field: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        field,
        reason: reason.into(),
    }
}

impl Default for TimingConfig {
    fn default() -> Self {
        // Figures of a current TLC datacenter drive: tR ~ 50 us, tPROG ~ 600 us (16 KiB page,
        // multi-plane amortised), tBERS ~ 3.5 ms, 1200 MT/s channels.
        TimingConfig {
            enabled: true,
            read_ns: 50_000,
            program_ns: 600_000,
            erase_ns: 3_500_000,
            channel_mb_s: 1200,
            command_overhead_ns: 2_000,
            write_buffer_pages_per_die: 4,
        }
    }
}

impl Default for GcConfig {
    fn default() -> Self {
        GcConfig {
            policy: GcPolicy::Greedy,
            unit: GcUnit::Superblock,
            free_eus_min: 2,
            free_eus_background: 4,
            separate_gc_frontier: false,
        }
    }
}

impl SsdConfig {
    /// A datacenter-style TLC SSD: 8 channels x 4 dies x 2 planes, 16 KiB pages, 384 pages per
    /// block, blocks per plane sized so the physical capacity is at least `logical_bytes / (1 - sf)`.
    /// The superblock (GC unit) is 64 x 6 MiB = 384 MiB.
    pub fn datacenter(logical_bytes: u64, spare_factor: f64) -> SsdConfig {
        let geometry = Geometry {
            channels: 8,
            dies_per_channel: 4,
            planes_per_die: 2,
            blocks_per_plane: 1,
            pages_per_block: 384,
            page_size_bytes: 16 * 1024,
        };
        Self::sized(geometry, logical_bytes, spare_factor)
    }

    /// A small device for tests and crash experiments: 2 channels x 2 dies x 1 plane, 4 KiB
    /// pages, 64 pages per block (1 MiB superblocks).
    pub fn small(logical_bytes: u64, spare_factor: f64) -> SsdConfig {
        let geometry = Geometry {
            channels: 2,
            dies_per_channel: 2,
            planes_per_die: 1,
            blocks_per_plane: 1,
            pages_per_block: 64,
            page_size_bytes: 4096,
        };
        Self::sized(geometry, logical_bytes, spare_factor)
    }

    /// Chooses `blocks_per_plane` so that the spare factor (physical - logical) / physical is at
    /// least `spare_factor` (the erase units GC keeps free count as spare), and at least the GC
    /// reserve plus one erase unit of spare (see [`SsdConfig::fit_reserve`]).
    ///
    /// A geometry that fails [`Geometry::check`] is kept as given (nothing is sized), so that
    /// [`SsdConfig::validate`] reports what is wrong with it.
    pub fn sized(mut geometry: Geometry, logical_bytes: u64, spare_factor: f64) -> SsdConfig {
        let sized = Geometry {
            blocks_per_plane: 1,
            ..geometry
        };
        if sized.check().is_ok() {
            let sb = geometry.superblock_bytes();
            let sf = if spare_factor.is_nan() {
                0.0
            } else {
                spare_factor.clamp(0.0, 0.95)
            };
            let physical_min = (logical_bytes as f64 / (1.0 - sf)).ceil() as u64;
            let blocks = physical_min.div_ceil(sb).max(8);
            geometry.blocks_per_plane = blocks.min(MAX_BLOCKS_PER_PLANE as u64 + 1) as u32;
        }
        let mut cfg = SsdConfig {
            geometry,
            logical_bytes,
            mapping_unit_bytes: 4096,
            gc: GcConfig::default(),
            mode: Mode::Conventional,
            timing: TimingConfig::default(),
            wear: WearConfig { pe_limit: 3000 },
            data: DataMode::WafOnly,
            write_cache_bytes: 0,
            power_loss_protection: true,
            seed: 42,
        };
        cfg.fit_reserve();
        cfg
    }

    /// [`SsdConfig::sized`], in `mode`, keeping data in memory and with timing off: the device
    /// tests run an engine on when they count bytes rather than time.
    pub fn sized_untimed(
        geometry: Geometry,
        logical_bytes: u64,
        spare_factor: f64,
        mode: Mode,
    ) -> SsdConfig {
        let mut c = SsdConfig::sized(geometry, logical_bytes, spare_factor);
        c.data = DataMode::Memory;
        c.timing.enabled = false;
        c.mode = mode;
        c.fit_reserve();
        c
    }

    /// Erase units per lane that GC needs beyond the logical data: the foreground threshold,
    /// one open unit per frontier, and one unit of slack so GC can make progress.
    pub fn reserve_eus_per_lane(&self) -> u32 {
        self.gc.free_eus_min + self.frontier_count() + 1
    }

    /// Grows `blocks_per_plane` if the logical capacity plus the GC reserve (which depends on the
    /// GC settings and the number of FDP handles) would not fit. Call it after changing those.
    pub fn fit_reserve(&mut self) {
        if matches!(self.mode, Mode::Zns(_))
            || self.geometry.check().is_err()
            || self.mapping_unit_bytes == 0
            || self.mapping_unit_bytes > self.geometry.page_size_bytes
        {
            return;
        }
        let per_lane_units = self.eu_units() as u64;
        let lanes = self.lanes() as u64;
        let logical_units = self.logical_bytes.div_ceil(self.mapping_unit_bytes as u64);
        let data_eus_per_lane = logical_units.div_ceil(per_lane_units * lanes);
        let need = data_eus_per_lane + self.reserve_eus_per_lane() as u64;
        if (self.geometry.blocks_per_plane as u64) < need {
            self.geometry.blocks_per_plane = need.min(MAX_BLOCKS_PER_PLANE as u64 + 1) as u32;
        }
    }

    /// Sets the logical capacity from a spare factor over the current geometry, rounded down to
    /// the mapping unit.
    pub fn with_spare_factor(mut self, spare_factor: f64) -> SsdConfig {
        let phys = self.geometry.physical_bytes() as f64;
        let mu = self.mapping_unit_bytes as u64;
        self.logical_bytes = ((phys * (1.0 - spare_factor)) as u64 / mu) * mu;
        self
    }

    /// Checks every field; a config that passes can be simulated.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let g = &self.geometry;
        g.check()?;
        let mu = self.mapping_unit_bytes;
        if !mu.is_power_of_two() || !(512..=16384).contains(&mu) {
            return Err(bad(
                "mapping_unit_bytes",
                format!("{mu} is not a power of two in 512..=16384"),
            ));
        }
        if mu > g.page_size_bytes {
            return Err(bad(
                "mapping_unit_bytes",
                format!("{mu} exceeds the page size {}", g.page_size_bytes),
            ));
        }
        let phys_units = g.physical_bytes() / mu as u64;
        if phys_units >= u32::MAX as u64 {
            return Err(bad(
                "geometry",
                format!("{phys_units} mapping units exceed the simulator's 2^32-1 limit; use a larger mapping unit"),
            ));
        }
        let eus = self.erase_units();
        let lanes = self.lanes();
        let eus_per_lane = eus / lanes;
        match &self.mode {
            Mode::Zns(z) => {
                if z.zone_eus == 0 || z.zone_eus > eus {
                    return Err(bad("mode.zone_eus", "must be in 1..=erase units"));
                }
                if self.gc.unit != GcUnit::Superblock {
                    return Err(bad("gc.unit", "ZNS zones are built from superblocks"));
                }
                if z.max_open_zones == 0 || z.max_active_zones < z.max_open_zones {
                    return Err(bad(
                        "mode.max_open_zones",
                        "need 1 <= max_open_zones <= max_active_zones",
                    ));
                }
            }
            Mode::Fdp(f) => {
                if f.handles == 0 || f.handles > 256 {
                    return Err(bad("mode.handles", "must be in 1..=256"));
                }
            }
            Mode::Conventional => {}
        }
        if !matches!(self.mode, Mode::Zns(_)) {
            if self.logical_bytes == 0 || !self.logical_bytes.is_multiple_of(mu as u64) {
                return Err(bad(
                    "logical_bytes",
                    "must be a positive multiple of the mapping unit",
                ));
            }
            let reserve = self.reserve_eus_per_lane() as u64 * lanes as u64;
            let usable = (eus as u64).saturating_sub(reserve) * self.eu_units() as u64;
            if self.logical_bytes / mu as u64 > usable {
                return Err(bad(
                    "logical_bytes",
                    format!(
                        "{} B logical does not fit: {} B of flash remain after the GC reserve of {} erase units",
                        self.logical_bytes,
                        usable * mu as u64,
                        reserve
                    ),
                ));
            }
            if self.gc.free_eus_min == 0 {
                return Err(bad("gc.free_eus_min", "must be at least 1"));
            }
            if self.gc.free_eus_background < self.gc.free_eus_min {
                return Err(bad(
                    "gc.free_eus_background",
                    "must be at least gc.free_eus_min",
                ));
            }
            if self.reserve_eus_per_lane() > eus_per_lane {
                return Err(bad(
                    "geometry.blocks_per_plane",
                    "too few erase units for GC",
                ));
            }
            if let GcPolicy::DChoices { d } = self.gc.policy {
                if d == 0 {
                    return Err(bad("gc.policy", "d-choices needs d >= 1"));
                }
            }
        }
        if self.timing.enabled && self.timing.channel_mb_s == 0 {
            return Err(bad("timing.channel_mb_s", "must be positive"));
        }
        if self.wear.pe_limit == 0 {
            return Err(bad("wear.pe_limit", "must be positive"));
        }
        if !self.write_cache_bytes.is_multiple_of(mu as u64) {
            return Err(bad(
                "write_cache_bytes",
                "must be a multiple of the mapping unit",
            ));
        }
        Ok(())
    }

    /// Mapping units per physical page.
    pub fn units_per_page(&self) -> u32 {
        self.geometry.page_size_bytes / self.mapping_unit_bytes
    }

    /// Independent append lanes: 1 with superblock GC units, one per (die, plane) with block units.
    pub fn lanes(&self) -> u32 {
        match self.gc.unit {
            GcUnit::Superblock => 1,
            GcUnit::Block => self.geometry.die_planes(),
        }
    }

    /// Mapping units per erase unit (GC unit).
    pub fn eu_units(&self) -> u32 {
        let per_block = self.geometry.pages_per_block * self.units_per_page();
        match self.gc.unit {
            GcUnit::Superblock => per_block * self.geometry.die_planes(),
            GcUnit::Block => per_block,
        }
    }

    /// Number of erase units (GC units) in the device.
    pub fn erase_units(&self) -> u32 {
        self.geometry.blocks_per_plane * self.lanes()
    }

    /// Bytes in one erase unit (the GC unit; the FDP reclaim unit).
    pub fn eu_bytes(&self) -> u64 {
        self.eu_units() as u64 * self.mapping_unit_bytes as u64
    }

    /// Write frontiers per lane: one per FDP handle (1 otherwise), doubled by a separate GC frontier.
    pub fn frontier_count(&self) -> u32 {
        let handles = match &self.mode {
            Mode::Fdp(f) => f.handles,
            _ => 1,
        };
        if self.gc.separate_gc_frontier {
            handles * 2
        } else {
            handles
        }
    }

    /// Capacity figures as the device reports them.
    pub fn capacity(&self) -> Capacity {
        let physical_bytes = self.geometry.physical_bytes();
        let logical_bytes = match &self.mode {
            Mode::Zns(z) => {
                (self.erase_units() / z.zone_eus) as u64 * z.zone_eus as u64 * self.eu_bytes()
            }
            _ => self.logical_bytes,
        };
        let op = (physical_bytes as f64 - logical_bytes as f64) / logical_bytes.max(1) as f64;
        let spare_factor =
            (physical_bytes as f64 - logical_bytes as f64) / physical_bytes.max(1) as f64;
        Capacity {
            logical_bytes,
            physical_bytes,
            op,
            spare_factor,
            eu_bytes: self.eu_bytes(),
            erase_units: self.erase_units(),
        }
    }
}

/// Capacity of a device: over-provisioning `op = (physical - logical) / logical`,
/// spare factor `sf = (physical - logical) / physical`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    pub logical_bytes: u64,
    pub physical_bytes: u64,
    pub op: f64,
    pub spare_factor: f64,
    pub eu_bytes: u64,
    pub erase_units: u32,
}

#[cfg(test)]
mod geometry_checks {
    use super::*;

    fn g(channels: u32, dies: u32, page: u32) -> Geometry {
        Geometry {
            channels,
            dies_per_channel: dies,
            planes_per_die: 1,
            blocks_per_plane: 1,
            pages_per_block: 64,
            page_size_bytes: page,
        }
    }

    /// Bad geometries (zero, tiny or huge fields, products that overflow) are config errors from
    /// `sized` + `validate`, never a panic or a silent wrap-around.
    #[test]
    fn bad_geometries_are_errors_not_panics() {
        for (geo, field) in [
            (g(8, 4, 0), "geometry.page_size_bytes"),
            (g(8, 4, 1), "geometry.page_size_bytes"),
            (g(8, 4, 3000), "geometry.page_size_bytes"),
            (g(0, 4, 16384), "geometry.channels"),
            (g(65536, 65536, 16384), "geometry.channels"),
            (g(1024, 1024, 16384), "geometry"),
            (g(8, u32::MAX, 16384), "geometry.dies_per_channel"),
        ] {
            let cfg = SsdConfig::sized(geo.clone(), 64 << 20, 0.1);
            let e = cfg.validate().expect_err("must be refused");
            assert_eq!(e.field, field, "{geo:?}: {e}");
        }
        let ok = SsdConfig::sized(g(8, 4, 16384), 64 << 20, f64::NAN);
        ok.validate().unwrap();
    }
}
