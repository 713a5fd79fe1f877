//! Engine benchmarks: YCSB on the wafer engine over simulated SSDs, in virtual time
//! ([`vtime`]) or on real threads ([`wall`]), with the metrics of DESIGN.md computed from the raw
//! engine and device counters ([`metrics`]).
//!
//! A run loads the database to a target fill of the data device, then runs the workload until the
//! DB-issued writes reach a multiple of the data device's capacity (steady state), recording a
//! series of interval rows and a final summary. Everything a run depends on is in its
//! [`BenchConfig`], which the summary carries; the same config gives the same summary.

pub mod ckptwatch;
pub mod metrics;
pub mod vtime;
pub mod wall;

use crate::ycsb::YcsbConfig;
use flashsim::{Geometry, SsdConfig};
use serde::{Deserialize, Serialize};

/// A write-path configuration of the engine: the rows of paper 002 Table 1 (each adds one
/// optimization to the row before), plus the ZNS and FDP devices of its Tables 2 and 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// In-place writes with the doublewrite buffer (the baseline of every paper here).
    InPlace,
    /// In-place writes without the doublewrite buffer (torn pages are only detected).
    InPlaceNoDw,
    /// Out-of-place writes: random placement into 16 open zones, greedy DB GC.
    Oop,
    /// + per-page LZ4 compression and 4 KiB page packing.
    OopComp,
    /// + grouping by deathtime (placement and GC).
    OopGdt,
    /// + the NoWA pattern (zones opened together, compensation writes), zones not aligned.
    OopNowa,
    /// + zone size x open zones = the SSD's GC unit: every optimization.
    OopAll,
    /// Every optimization but compression.
    OopAllNoComp,
    /// Compression + GDT on a ZNS SSD (DB zones are device zones; no device GC).
    Zns,
    /// Compression + GDT on an FDP SSD: zone = reclaim unit, one placement id per open zone,
    /// no NoWA.
    Fdp,
    /// In-place writes with the doublewrite buffer, in the flushless buffer mode of paper 001
    /// (flushing-less eviction, on-the-fly redo, no-steal, redo-only log): paper 001's
    /// "Proposed" next to `in-place`, its "Original".
    Flushless,
    /// Every optimization of paper 002 (`oop-all`) in the flushless buffer mode.
    OopAllFlushless,
    /// Fixed homes behind a journal; checkpoints move the journal's images home by host read
    /// and write (paper 004's baseline).
    Baseline,
    /// The journal moved home by one in-device copy command per image (paper 004's ISC-A).
    IscA,
    /// The journal moved home by one copy command per checkpoint (ISC-B).
    IscB,
    /// The journal moved home by one remap command per checkpoint; images a sector off the 4 KiB
    /// mapping unit are copied by the device (ISC-C).
    IscC,
    /// Remap with sector-aligned journaling on an SSD mapping 512-byte sectors (Check-In).
    CheckIn,
}

impl Preset {
    /// Every configuration, in the order of paper 002 Table 1, then ZNS and FDP.
    pub const ALL: [Preset; 17] = [
        Preset::InPlace,
        Preset::InPlaceNoDw,
        Preset::Oop,
        Preset::OopComp,
        Preset::OopGdt,
        Preset::OopNowa,
        Preset::OopAll,
        Preset::OopAllNoComp,
        Preset::Zns,
        Preset::Fdp,
        Preset::Flushless,
        Preset::OopAllFlushless,
        Preset::Baseline,
        Preset::IscA,
        Preset::IscB,
        Preset::IscC,
        Preset::CheckIn,
    ];

    /// Paper 004's ladder, in its order.
    pub const LADDER: [Preset; 5] = [
        Preset::Baseline,
        Preset::IscA,
        Preset::IscB,
        Preset::IscC,
        Preset::CheckIn,
    ];

    /// The configuration's name on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Preset::InPlace => "in-place",
            Preset::InPlaceNoDw => "in-place-nodw",
            Preset::Oop => "oop",
            Preset::OopComp => "oop+comp",
            Preset::OopGdt => "oop+gdt",
            Preset::OopNowa => "oop+nowa",
            Preset::OopAll => "oop-all",
            Preset::OopAllNoComp => "oop-all-nocomp",
            Preset::Zns => "zns",
            Preset::Fdp => "fdp",
            Preset::Flushless => "flushless",
            Preset::OopAllFlushless => "oop-all+flushless",
            Preset::Baseline => "baseline",
            Preset::IscA => "isc-a",
            Preset::IscB => "isc-b",
            Preset::IscC => "isc-c",
            Preset::CheckIn => "check-in",
        }
    }

    /// One line describing it.
    pub fn describe(self) -> &'static str {
        match self {
            Preset::InPlace => "fixed homes, doublewrite buffer",
            Preset::InPlaceNoDw => "fixed homes, no doublewrite",
            Preset::Oop => "out-of-place, random placement, greedy DB GC",
            Preset::OopComp => "+ LZ4 compression and 4 KiB page packing",
            Preset::OopGdt => "+ grouping by deathtime",
            Preset::OopNowa => "+ NoWA pattern (zones not aligned)",
            Preset::OopAll => "+ zone x open zones = SSD GC unit (all optimizations)",
            Preset::OopAllNoComp => "all optimizations but compression",
            Preset::Zns => "compression + GDT on a ZNS SSD",
            Preset::Fdp => "compression + GDT on an FDP SSD, placement id per zone",
            Preset::Flushless => {
                "in-place + flushless eviction, no-steal, redo-only log (paper 001)"
            }
            Preset::OopAllFlushless => {
                "all optimizations of paper 002 + flushless mode (paper 001)"
            }
            Preset::Baseline => "journal + checkpoints by host read and write (paper 004)",
            Preset::IscA => "journal + checkpoints by one copy command an image (ISC-A)",
            Preset::IscB => "journal + checkpoints by one batched copy command (ISC-B)",
            Preset::IscC => "journal + checkpoints by remap, 4 KiB mapping (ISC-C)",
            Preset::CheckIn => "remap + sector-aligned journaling, 512 B mapping (Check-In)",
        }
    }

    /// Whether the engine runs with the doublewrite buffer.
    pub fn doublewrite(self) -> bool {
        matches!(self, Preset::InPlace | Preset::Flushless)
    }

    /// Whether the engine runs in the flushless buffer mode (paper 001).
    pub fn flushless(self) -> bool {
        matches!(self, Preset::Flushless | Preset::OopAllFlushless)
    }

    /// The journal write path's settings (None: not journaled): `engine.journal`'s sizes with
    /// this preset's method when set, else the defaults.
    pub fn journal(self, engine: &DbConfig) -> Option<wafer_engine::JournalConfig> {
        use wafer_engine::HomeMethod;
        let method = match self {
            Preset::Baseline => HomeMethod::Host,
            Preset::IscA => HomeMethod::IscA,
            Preset::IscB => HomeMethod::IscB,
            Preset::IscC => HomeMethod::IscC,
            Preset::CheckIn => HomeMethod::CheckIn,
            _ => return None,
        };
        Some(match &engine.journal {
            Some(j) => wafer_engine::JournalConfig {
                method,
                ..j.clone()
            },
            None => wafer_engine::JournalConfig::new(method),
        })
    }

    /// `engine` with this preset's write path and buffer mode and `buffer_pages` pages of
    /// memory: the doublewrite switch, for an out-of-place preset `engine.out_of_place` if set,
    /// else the preset's own, and for a flushless preset `engine.flushless` if set, else the
    /// defaults (the other presets run the ARIES mode whatever `engine.flushless` says).
    pub fn engine_config(self, engine: &DbConfig, buffer_pages: usize) -> DbConfig {
        DbConfig {
            buffer_pages,
            doublewrite: self.doublewrite(),
            out_of_place: self
                .out_of_place()
                .map(|p| engine.out_of_place.clone().unwrap_or(p)),
            flushless: self
                .flushless()
                .then(|| engine.flushless.clone().unwrap_or_default()),
            journal: self.journal(engine),
            ..engine.clone()
        }
    }

    /// The out-of-place settings (None: in place).
    pub fn out_of_place(self) -> Option<wafer_engine::OopConfig> {
        use wafer_engine::Codec;
        use wafer_engine::OopConfig;
        let plain = OopConfig::default();
        let comp = OopConfig {
            codec: Codec::Lz4,
            ..plain.clone()
        };
        let gdt = OopConfig {
            gdt: true,
            ..comp.clone()
        };
        let nowa = OopConfig {
            nowa: true,
            ..gdt.clone()
        };
        let all = OopConfig {
            aligned: true,
            ..nowa.clone()
        };
        Some(match self {
            Preset::InPlace
            | Preset::InPlaceNoDw
            | Preset::Flushless
            | Preset::Baseline
            | Preset::IscA
            | Preset::IscB
            | Preset::IscC
            | Preset::CheckIn => return None,
            Preset::Oop => plain,
            Preset::OopComp => comp,
            Preset::OopGdt | Preset::Zns | Preset::Fdp => gdt,
            Preset::OopNowa => nowa,
            Preset::OopAll | Preset::OopAllFlushless => all,
            Preset::OopAllNoComp => OopConfig {
                codec: Codec::None,
                ..all
            },
        })
    }

    /// The data SSD this configuration runs on, made from the conventional `base`: the same
    /// flash, as a ZNS device (all of it addressable, no device over-provisioning), with FDP, or
    /// for Check-In mapping `check_in_unit_bytes` (the Check-In SSD maps 512-byte sectors).
    pub fn data_ssd(self, base: &SsdConfig, check_in_unit_bytes: u32) -> SsdConfig {
        let mut c = base.clone();
        match self {
            Preset::CheckIn => c.mapping_unit_bytes = check_in_unit_bytes,
            Preset::Zns => {
                c.mode = flashsim::Mode::Zns(flashsim::ZnsConfig {
                    zone_eus: 1,
                    max_open_zones: 9,
                    max_active_zones: 9,
                });
            }
            Preset::Fdp => {
                c.mode = flashsim::Mode::Fdp(flashsim::FdpConfig { handles: 8 });
                c.fit_reserve();
            }
            _ => {}
        }
        c
    }
}

impl std::str::FromStr for Preset {
    type Err = String;
    fn from_str(s: &str) -> Result<Preset, String> {
        Preset::ALL
            .iter()
            .copied()
            .find(|p| p.name() == s.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
                format!("unknown configuration '{s}' (known: {})", names.join(", "))
            })
    }
}

/// How the closed loop of clients runs and when it stops (shared by every engine workload).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopConfig {
    /// Closed-loop clients (each runs one transaction at a time).
    pub clients: u32,
    /// Simulated CPU cores shared by the clients.
    pub cores: u32,
    /// CPU time of one transaction, virtual ns.
    pub cpu_ns_per_op: u64,
    /// Stop when DB-issued writes since the load reach this multiple of the data capacity.
    pub capacity_multiple: f64,
    /// Or stop after this many transactions (whichever comes first).
    pub max_ops: Option<u64>,
    /// Or after this much virtual time of the run phase, in seconds.
    #[serde(default)]
    pub max_virtual_s: Option<f64>,
    /// A series row each time DB-issued writes grow by this fraction of the data capacity.
    pub interval_fraction: f64,
    /// Background maintenance (checkpointer, page cleaner) runs every this many virtual us.
    pub maintenance_every_us: u64,
    /// Group commit in virtual time: a commit waits up to this long for others to share its
    /// log flush (0 with `group_commit_min_batch` 1: every commit flushes alone).
    #[serde(default)]
    pub group_commit_delay_us: u64,
    /// ... and the flush happens as soon as this many commits wait.
    #[serde(default = "one")]
    pub group_commit_min_batch: u32,
    /// ... or, when above 0, as soon as the log's unflushed bytes fill this fraction of the
    /// log buffer (paper 001 section 5.1: 0.8 was best); it replaces `group_commit_min_batch`.
    #[serde(default)]
    pub group_commit_min_fill: f64,
    /// Group commit as a log writer does it: a commit finding the log idle flushes at once; the
    /// commits that arrive while a flush runs share the next one, which starts when it ends.
    /// Replaces the delay and batch rules.
    #[serde(default)]
    pub group_commit_on_idle: bool,
    /// CPU time of a transaction that aborts on a lock conflict, virtual ns (None: a whole
    /// `cpu_ns_per_op`). With `group_commit_on_idle`, such a client tries again when the running
    /// log flush ends (the commits holding the locks it met end with it), as a lock wait would.
    #[serde(default)]
    pub abort_cpu_ns: Option<u64>,
}

fn one() -> u32 {
    1
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            clients: 16,
            cores: 8,
            cpu_ns_per_op: 5_000,
            capacity_multiple: 4.0,
            max_ops: None,
            max_virtual_s: None,
            interval_fraction: 0.25,
            maintenance_every_us: 1_000,
            group_commit_delay_us: 0,
            group_commit_min_batch: 1,
            group_commit_min_fill: 0.0,
            group_commit_on_idle: false,
            abort_cpu_ns: None,
        }
    }
}

impl LoopConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), String> {
        if self.clients == 0 || self.cores == 0 {
            return Err("clients and cores must be at least 1".into());
        }
        let cm = self.capacity_multiple;
        if !(cm.is_finite() && cm > 0.0 && cm <= crate::simrun::MAX_CAPACITY_MULTIPLE) {
            return Err(format!(
                "capacity_multiple {cm} must be a positive number of at most {}",
                crate::simrun::MAX_CAPACITY_MULTIPLE
            ));
        }
        if self.interval_fraction.is_nan() || self.interval_fraction <= 0.0 {
            return Err("interval_fraction must be positive".into());
        }
        if let Some(s) = self.max_virtual_s {
            if !(s.is_finite() && s > 0.0) {
                return Err(format!(
                    "max_virtual_s {s} must be a positive number of seconds"
                ));
            }
        }
        if self.max_ops == Some(0) {
            return Err("max_ops must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.group_commit_min_fill) {
            return Err("group_commit_min_fill must be in [0, 1]".into());
        }
        if self.group_commit_min_fill > 0.0 && self.group_commit_delay_us == 0 {
            return Err(
                "group_commit_min_fill needs group_commit_delay_us > 0 (the longest a commit \
                 waits for the buffer to fill)"
                    .into(),
            );
        }
        Ok(())
    }
}

/// Everything a YCSB benchmark run depends on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchConfig {
    /// The write-path configuration.
    pub preset: Preset,
    /// The data SSD (flashsim, data mode). Its logical capacity is the data device.
    pub data_ssd: SsdConfig,
    /// The log SSD (a separate device, as in every paper here).
    pub log_ssd: SsdConfig,
    /// Engine settings (page size, checkpoints, hot-page-aware count, log space, group commit,
    /// out-of-place settings); the run sets the buffer pool size from `buffer_fraction`, and the
    /// preset sets the write path (an out-of-place preset takes `engine.out_of_place` when it is
    /// set, so a config file can change e.g. the zone size or the codec of a preset).
    pub engine: DbConfig,
    /// Fraction of the data device the load fills (paper 002: 0.9).
    pub fill: f64,
    /// Buffer pool size as a fraction of the loaded data (paper 002's OOM setting: 0.1).
    pub buffer_fraction: f64,
    /// The workload (its record count is set by the load).
    pub ycsb: YcsbConfig,
    /// The workload in a few words when it is not YCSB (e.g. TPC-C); reports show it instead
    /// of the YCSB settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_label: Option<String>,
    /// The mapping unit of the data SSD of the `check-in` preset (the other presets use
    /// `data_ssd`'s): 512, the paper's sector mapping; paper 004 Figure 13 varies it.
    #[serde(default = "check_in_unit")]
    pub check_in_unit_bytes: u32,
    /// Clients, CPU model and stop rule.
    #[serde(flatten)]
    pub run: LoopConfig,
}

fn check_in_unit() -> u32 {
    512
}

impl BenchConfig {
    /// The paper 002 setting, scaled down: a `data_bytes` data SSD with `spare_factor`, 90% fill,
    /// buffer pool of 10% of the data, YCSB as given.
    pub fn new(preset: Preset, data_bytes: u64, spare_factor: f64, ycsb: YcsbConfig) -> Self {
        BenchConfig {
            preset,
            data_ssd: bench_ssd(data_bytes, spare_factor),
            log_ssd: bench_ssd((data_bytes / 8).max(32 << 20), 0.2),
            engine: DbConfig::default(),
            fill: 0.9,
            buffer_fraction: 0.1,
            ycsb,
            workload_label: None,
            check_in_unit_bytes: check_in_unit(),
            run: LoopConfig::default(),
        }
    }

    /// The data SSD of this run (the preset's form of `data_ssd`).
    pub fn run_data_ssd(&self) -> SsdConfig {
        self.preset
            .data_ssd(&self.data_ssd, self.check_in_unit_bytes)
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), String> {
        self.data_ssd.validate().map_err(|e| e.to_string())?;
        self.log_ssd.validate().map_err(|e| e.to_string())?;
        if !(0.05..=0.98).contains(&self.fill) {
            return Err("fill must be in [0.05, 0.98]".into());
        }
        if !(0.001..=2.0).contains(&self.buffer_fraction) {
            return Err("buffer_fraction must be in [0.001, 2]".into());
        }
        self.engine_config(1024)
            .validate()
            .map_err(|e| e.to_string())?;
        let u = self.check_in_unit_bytes;
        if !u.is_power_of_two() || !(512..=self.engine.page_size).contains(&u) {
            return Err(format!(
                "check_in_unit_bytes {u} must be a power of two from 512 to the page size"
            ));
        }
        self.run_data_ssd().validate().map_err(|e| e.to_string())?;
        self.run.validate()
    }

    /// The engine configuration of a run with `buffer_pages` frames.
    pub fn engine_config(&self, buffer_pages: usize) -> DbConfig {
        self.preset.engine_config(&self.engine, buffer_pages)
    }

    /// Buffer pool pages for this configuration.
    pub fn buffer_pages(&self) -> usize {
        let data_bytes = self.data_ssd.logical_bytes as f64;
        ((self.buffer_fraction * self.fill * data_bytes) / self.engine.page_size as f64) as usize
    }
}

/// A simulated SSD for engine benchmarks: 8 channels x 4 dies (the parallelism of a datacenter
/// drive), 16 KiB pages, 8 pages per block, so a superblock is 4 MiB and small devices still have
/// dozens of GC units; data kept in memory; default TLC timing.
pub fn bench_ssd(logical_bytes: u64, spare_factor: f64) -> SsdConfig {
    let g = Geometry {
        channels: 8,
        dies_per_channel: 4,
        planes_per_die: 1,
        blocks_per_plane: 1,
        pages_per_block: 8,
        page_size_bytes: 16 * 1024,
    };
    let mut cfg = SsdConfig::sized(g, logical_bytes, spare_factor);
    cfg.data = flashsim::DataMode::Memory;
    cfg
}

pub use metrics::{
    BenchReport, BenchSummary, Breakdown, LatencyInterval, LatencyLog, SeriesRow, SteadyState,
    Window,
};
/// The out-of-place settings a preset chooses (and a config file's `[engine.out_of_place]`).
pub use wafer_engine::{DbConfig, FlushlessConfig, HomeMethod, LeafSplits, OopConfig};

#[cfg(test)]
mod config_tests {
    use super::*;

    fn sample() -> BenchConfig {
        let mut c = BenchConfig::new(Preset::OopAll, 64 << 20, 0.1, YcsbConfig::default());
        c.engine.out_of_place = Preset::OopAll.out_of_place();
        c
    }

    #[test]
    fn toml_round_trips() {
        let c = sample();
        let text = toml::to_string(&c).unwrap();
        let back: BenchConfig = toml::from_str(&text).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn unknown_keys_are_refused_in_every_table() {
        let text = toml::to_string(&sample()).unwrap();
        for (from, to) in [
            ("fill = ", "fil = "),
            ("group_commit_delay_us = ", "group_commit_delay = "),
            ("codec = ", "codek = "),
            ("read_ns = ", "readns = "),
            ("max_delay_us = ", "max_delay = "),
            ("seed = ", "sed = "),
        ] {
            let bad = text.replacen(from, to, 1);
            assert_ne!(bad, text, "{from}");
            let err = toml::from_str::<BenchConfig>(&bad).unwrap_err().to_string();
            let key = to.trim_end_matches(" = ");
            assert!(err.contains(key), "{key}: {err}");
        }
    }
}
