//! `wafer sim`: run a synthetic workload on a simulated SSD and report write amplification,
//! GC, latency and wear.
//!
//! Configuration comes from three layers, later ones winning: built-in defaults, an optional TOML
//! file (`--config`, with `[ssd]` = a complete `flashsim::SsdConfig`, `[workload]` and `[run]`),
//! then flags. `--dump-config` prints the merged configuration in that TOML form.

use super::human::HumanOutput;
use super::size::parse_size;
use super::CliError;
use clap::{Args, ValueEnum};
use flashsim::{FdpConfig, GcPolicy, GcUnit, Geometry, Mode, SsdConfig, ZnsConfig};
use serde::{Deserialize, Serialize};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;
use wafer_workloads::{run, Pattern, Quiet, RunError, RunParams, Workload};

/// Default logical capacity.
const DEFAULT_CAPACITY_BYTES: u64 = 16 << 30;
/// Default spare factor.
const DEFAULT_SF: f64 = 0.10;
/// Default zone size, open zones and reclaim unit handles for `--mode zns|fdp`.
const DEFAULT_ZONE_EUS: u32 = 1;
const DEFAULT_MAX_OPEN_ZONES: u32 = 8;
const DEFAULT_HANDLES: u32 = 4;

/// Geometry presets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Preset {
    /// 8 channels x 4 dies x 2 planes, 384 pages of 16 KiB per block (384 MiB superblocks).
    Datacenter,
    /// 2 channels x 2 dies x 1 plane, 64 pages of 4 KiB per block (1 MiB superblocks).
    Small,
}

/// Host interface modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Block device with an internal FTL and GC.
    Conventional,
    /// Zoned Namespace: zone append + reset, no device GC (exports every zone).
    Zns,
    /// Flexible Data Placement: placement id = address-space slice of the write.
    Fdp,
}

/// GC units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GcUnitArg {
    /// One block from every plane of every die.
    Superblock,
    /// A single block per (die, plane) lane.
    Block,
}

/// Options of `wafer sim`.
#[derive(Args, Debug, Default, Clone)]
pub struct SimArgs {
    /// Logical capacity exported to the host: a number with an optional suffix K/M/G/T or
    /// KiB/MiB/GiB/TiB (powers of 1024) or KB/MB/GB/TB (powers of 1000) [default: 16GiB]
    #[arg(long, value_name = "SIZE", value_parser = parse_size, help_heading = "Device")]
    pub capacity: Option<u64>,
    /// Spare factor (physical - logical) / physical, in [0, 0.95); the physical size is rounded
    /// up to whole erase units [default: 0.10]
    #[arg(long, value_name = "FRACTION", value_parser = parse_sf, conflicts_with = "op", help_heading = "Device")]
    pub sf: Option<f64>,
    /// Over-provisioning (physical - logical) / logical, instead of --sf (e.g. 0.28)
    #[arg(long, value_name = "FRACTION", value_parser = parse_op, help_heading = "Device")]
    pub op: Option<f64>,
    /// NAND cell type: sets read/program/erase latencies and the P/E limit (slc, mlc, tlc, qlc;
    /// figures and sources in docs/flashsim.md); overrides a --drive's [default: the preset's:
    /// read 50 us, program 600 us, erase 3.5 ms, 3,000 P/E]
    #[arg(long, value_name = "CELL", help_heading = "Device")]
    pub cell: Option<CellArg>,
    /// Geometry preset [default: datacenter]
    #[arg(long, value_enum, value_name = "PRESET", help_heading = "Device")]
    pub geometry: Option<Preset>,
    /// A named drive's shape (channels, dies, planes, pages per block, page size), NAND timing
    /// and interface, instead of a --geometry preset; --capacity still sets the size, and the
    /// other device flags still override (sources and assumed values in docs/flashsim.md):
    /// pm9a3 (Samsung PM9A3 class datacenter TLC), zn540 (WD Ultrastar DC ZN540 class ZNS, 1077
    /// MiB zones), p3-plus (Crucial P3 Plus class consumer QLC), mcaqe32g (Samsung
    /// MCAQE32G8APP class 2008 PATA SLC, paper 003's drive; 2 KiB mapping unit)
    #[arg(long, value_name = "NAME", value_parser = parse_drive, conflicts_with = "geometry", help_heading = "Device")]
    pub drive: Option<flashsim::Drive>,
    /// Override: NAND channels
    #[arg(long, value_name = "N", help_heading = "Device")]
    pub channels: Option<u32>,
    /// Override: dies per channel
    #[arg(long, value_name = "N", help_heading = "Device")]
    pub dies: Option<u32>,
    /// Override: planes per die
    #[arg(long, value_name = "N", help_heading = "Device")]
    pub planes: Option<u32>,
    /// Override: pages per block
    #[arg(long, value_name = "N", help_heading = "Device")]
    pub pages_per_block: Option<u32>,
    /// Override: NAND page size (e.g. 16KiB)
    #[arg(long, value_name = "SIZE", value_parser = parse_size, help_heading = "Device")]
    pub page_size: Option<u64>,
    /// FTL mapping unit, a power of two in 512 B..16 KiB, at most the page size [default: 4KiB]
    #[arg(long, value_name = "SIZE", value_parser = parse_size, help_heading = "Device")]
    pub mapping_unit: Option<u64>,
    /// GC victim policy: greedy, cost-benefit, fifo, random or d-choices(N) (also written
    /// d-choices:N) [default: greedy]
    #[arg(long, value_name = "POLICY", value_parser = parse_gc, help_heading = "Device")]
    pub gc: Option<GcPolicy>,
    /// GC (and append) unit [default: superblock]
    #[arg(long, value_enum, value_name = "UNIT", help_heading = "Device")]
    pub gc_unit: Option<GcUnitArg>,
    /// Write GC-relocated data to its own frontier instead of mixing it with host writes
    #[arg(long, help_heading = "Device")]
    pub separate_gc_frontier: bool,
    /// Host interface [default: conventional]
    #[arg(long, value_enum, value_name = "MODE", help_heading = "Device")]
    pub mode: Option<ModeArg>,
    /// FDP: reclaim unit handles, 1..=256 [default: 4]
    #[arg(long, value_name = "N", help_heading = "Device")]
    pub handles: Option<u32>,
    /// ZNS: erase units (superblocks) per zone [default: 1]
    #[arg(long, value_name = "N", help_heading = "Device")]
    pub zone_eus: Option<u32>,
    /// ZNS: open (and active) zone limit of the device [default: 8]
    #[arg(long, value_name = "N", help_heading = "Device")]
    pub max_open_zones: Option<u32>,
    /// ZNS: zones the host appends to round-robin [default: --max-open-zones]
    #[arg(long, value_name = "N", help_heading = "Device")]
    pub open_zones: Option<u32>,

    /// Address pattern: uniform, zipf:THETA, hotcold:R:F (share R of writes to the first
    /// fraction F of the space), seq, streams:K [default: uniform]
    #[arg(long, value_name = "PATTERN", help_heading = "Workload")]
    pub pattern: Option<Pattern>,
    /// Replay this block trace instead of a synthetic pattern: fio iolog v2/v3, blkparse text
    /// output or MQSim ASCII (detected, or --trace-format). Offsets wrap at the device's
    /// capacity and align to its mapping unit; the trace repeats until --capacity-multiple of the
    /// capacity is written (after the usual preconditioning fill)
    #[arg(long, value_name = "FILE", help_heading = "Workload", conflicts_with_all = ["pattern", "write_size", "read_share"])]
    pub trace: Option<PathBuf>,
    /// Format of --trace: fio-v2, fio-v3, blkparse, mqsim [default: detected]
    #[arg(
        long,
        value_name = "FORMAT",
        help_heading = "Workload",
        requires = "trace"
    )]
    pub trace_format: Option<wafer_workloads::trace::TraceFormat>,
    /// Size of every request (a multiple of 4 KiB or of the mapping unit) [default: 4KiB]
    #[arg(long, value_name = "SIZE", value_parser = parse_size, help_heading = "Workload")]
    pub write_size: Option<u64>,
    /// Fraction of requests that are reads, in [0, 1) [default: 0]
    #[arg(long, value_name = "FRACTION", value_parser = parse_read_share, help_heading = "Workload")]
    pub read_share: Option<f64>,
    /// Host bytes to write after preconditioning, as a multiple of the logical capacity
    /// [default: 4]
    #[arg(long, value_name = "X", value_parser = parse_positive, help_heading = "Workload")]
    pub capacity_multiple: Option<f64>,
    /// Print a report row every this fraction of the capacity written [default: 0.25]
    #[arg(long, value_name = "X", value_parser = parse_positive, help_heading = "Workload")]
    pub interval: Option<f64>,
    /// Skip the sequential fill of the logical space before the measured run
    #[arg(long, help_heading = "Workload")]
    pub no_precondition: bool,
    /// Simulate time: latencies, throughput, device busy time (default)
    #[arg(long, overrides_with = "no_timing", help_heading = "Workload")]
    pub timing: bool,
    /// Count only (no virtual time): faster, for WAF sweeps
    #[arg(long, overrides_with = "timing", help_heading = "Workload")]
    pub no_timing: bool,
    /// Outstanding commands (closed-loop clients) [default: 32]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=65536), help_heading = "Workload")]
    pub qd: Option<u32>,
    /// Seed of the workload and of the device's random choices [default: 42]
    #[arg(long, value_name = "N", help_heading = "Workload")]
    pub seed: Option<u64>,

    /// Print the summary as JSON on stdout instead of the table (deterministic: no wall-clock)
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Also write the JSON summary to FILE
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub out: Option<PathBuf>,
    /// Also write the interval rows (the table's rows: WAF per interval and cumulative, GC
    /// runs, erases, rates) as CSV here, one row per interval
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    /// Read the device, workload and run settings from a TOML file ([ssd], [workload], [run]);
    /// flags override it
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub config: Option<PathBuf>,
    /// Print the merged configuration as TOML (usable with --config) and exit
    #[arg(long, help_heading = "Output")]
    pub dump_config: bool,
}

fn parse_f64(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("'{s}' is not a number"))
}

fn parse_sf(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    if (0.0..0.95).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "spare factor {v} is outside [0, 0.95) (it is (physical - logical) / physical)"
        ))
    }
}

fn parse_op(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    if (0.0..19.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "over-provisioning {v} is outside [0, 19) (it is (physical - logical) / logical)"
        ))
    }
}

fn parse_read_share(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    if (0.0..1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "read share {v} is outside [0, 1) (runs are measured in bytes written)"
        ))
    }
}

/// flashsim's policy names, plus "d-choices:N" (no shell quoting needed) for "d-choices(N)".
fn parse_gc(s: &str) -> Result<GcPolicy, String> {
    let t = s.trim().to_ascii_lowercase();
    match t
        .strip_prefix("d-choices:")
        .or_else(|| t.strip_prefix("dchoices:"))
    {
        Some(d) => format!("d-choices({d})").parse(),
        None => t.parse(),
    }
}

fn parse_positive(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    if v > 0.0 {
        Ok(v)
    } else {
        Err(format!("{v} must be positive"))
    }
}

/// The TOML configuration file.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// A complete device configuration.
    pub ssd: Option<SsdConfig>,
    pub workload: Option<Workload>,
    pub run: Option<RunParams>,
}

/// `--cell`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CellArg {
    Slc,
    Mlc,
    Tlc,
    Qlc,
}

/// A `--drive` name.
pub(crate) fn parse_drive(s: &str) -> Result<flashsim::Drive, String> {
    s.parse()
}

/// A fully resolved simulation.
#[derive(Debug, Clone)]
pub struct Plan {
    pub ssd: SsdConfig,
    pub workload: Workload,
    pub params: RunParams,
    /// The named drive the device was built after, if any.
    pub drive: Option<flashsim::Drive>,
}

fn usage(msg: impl Into<String>) -> CliError {
    CliError::Usage(msg.into())
}

fn to_u32(v: u64, flag: &str) -> Result<u32, CliError> {
    u32::try_from(v).map_err(|_| usage(format!("{flag} {v} is too large")))
}

impl SimArgs {
    fn sizing_flags_given(&self) -> bool {
        self.capacity.is_some()
            || self.sf.is_some()
            || self.op.is_some()
            || self.geometry.is_some()
            || self.drive.is_some()
            || self.channels.is_some()
            || self.dies.is_some()
            || self.planes.is_some()
            || self.pages_per_block.is_some()
            || self.page_size.is_some()
    }

    fn spare_factor(&self) -> Option<f64> {
        self.sf.or(self.op.map(|op| op / (1.0 + op)))
    }

    fn geometry(&self, base: Geometry) -> Result<Geometry, CliError> {
        let mut g = match (self.drive, self.geometry) {
            (Some(d), _) => d.geometry(),
            (None, Some(Preset::Datacenter)) => SsdConfig::datacenter(0, DEFAULT_SF).geometry,
            (None, Some(Preset::Small)) => SsdConfig::small(0, DEFAULT_SF).geometry,
            (None, None) => base,
        };
        if let Some(v) = self.channels {
            g.channels = v;
        }
        if let Some(v) = self.dies {
            g.dies_per_channel = v;
        }
        if let Some(v) = self.planes {
            g.planes_per_die = v;
        }
        if let Some(v) = self.pages_per_block {
            g.pages_per_block = v;
        }
        if let Some(v) = self.page_size {
            g.page_size_bytes = to_u32(v, "--page-size")?;
        }
        for (name, v) in [
            ("--channels", g.channels),
            ("--dies", g.dies_per_channel),
            ("--planes", g.planes_per_die),
            ("--pages-per-block", g.pages_per_block),
        ] {
            if v == 0 {
                return Err(usage(format!("{name} must be at least 1")));
            }
        }
        Ok(g)
    }

    /// The device: a file's `[ssd]` or a preset, resized when sizing flags are given, then the
    /// other overrides.
    fn device(&self, file: Option<SsdConfig>) -> Result<SsdConfig, CliError> {
        let sized = file.is_none() || self.sizing_flags_given();
        let unit = match self.mapping_unit {
            Some(mu) => to_u32(mu, "--mapping-unit")?,
            None => file.as_ref().map_or(4096, |f| f.mapping_unit_bytes),
        };
        let capacity = match self.capacity {
            Some(c) => {
                Some(super::size::round_to_unit(c, unit as u64, "--capacity").map_err(usage)?)
            }
            None => None,
        };
        let mut cfg = match file {
            Some(f) if !self.sizing_flags_given() => f,
            Some(f) => {
                let cap = capacity.unwrap_or(f.logical_bytes);
                let sf = self.spare_factor().unwrap_or(match f.mode {
                    Mode::Zns(_) => DEFAULT_SF,
                    _ => f.capacity().spare_factor,
                });
                let sized = SsdConfig::sized(self.geometry(f.geometry.clone())?, cap, sf);
                SsdConfig {
                    geometry: sized.geometry,
                    logical_bytes: cap,
                    ..f
                }
            }
            None => {
                let base = SsdConfig::datacenter(0, DEFAULT_SF).geometry;
                SsdConfig::sized(
                    self.geometry(base)?,
                    capacity.unwrap_or(DEFAULT_CAPACITY_BYTES),
                    self.spare_factor().unwrap_or(DEFAULT_SF),
                )
            }
        };
        // Pages smaller than the 4 KiB default (a drive's 2 KiB pages) are mapped a page each.
        cfg.mapping_unit_bytes = cfg.mapping_unit_bytes.min(cfg.geometry.page_size_bytes);
        if let Some(mu) = self.mapping_unit {
            cfg.mapping_unit_bytes = to_u32(mu, "--mapping-unit")?;
        }
        if let Some(p) = self.gc {
            cfg.gc.policy = p;
        }
        if let Some(u) = self.gc_unit {
            cfg.gc.unit = match u {
                GcUnitArg::Superblock => GcUnit::Superblock,
                GcUnitArg::Block => GcUnit::Block,
            };
        }
        if self.separate_gc_frontier {
            cfg.gc.separate_gc_frontier = true;
        }
        if let Some(d) = self.drive {
            // The drive's timing and interface; the flags below (--mode, --cell, ...) override.
            d.apply_media(&mut cfg);
        }
        self.apply_mode(&mut cfg)?;
        if self.timing {
            cfg.timing.enabled = true;
        }
        if self.no_timing {
            cfg.timing.enabled = false;
        }
        if let Some(s) = self.seed {
            cfg.seed = s;
        }
        if let Some(c) = self.cell {
            cfg.set_cell(match c {
                CellArg::Slc => flashsim::Cell::Slc,
                CellArg::Mlc => flashsim::Cell::Mlc,
                CellArg::Tlc => flashsim::Cell::Tlc,
                CellArg::Qlc => flashsim::Cell::Qlc,
            });
        }
        if sized {
            // The GC reserve depends on the mode (FDP handles) and GC settings set above.
            cfg.fit_reserve();
            let asked = self.spare_factor().unwrap_or(DEFAULT_SF);
            let c = cfg.capacity();
            if !matches!(cfg.mode, Mode::Zns(_)) && c.spare_factor > asked * 1.05 + 0.001 {
                eprintln!(
                    "warning: the simulated device has spare factor {:.3}, not the {asked:.3} \
                     asked: its {} of flash come in erase units of {} (and GC keeps {} of them \
                     per lane), so the flash rounds up; for the spare factor asked use a larger \
                     --capacity, --geometry small or smaller erase units (--pages-per-block, \
                     --channels, --dies)",
                    c.spare_factor,
                    super::size::format_bytes(c.physical_bytes),
                    super::size::format_bytes(c.eu_bytes),
                    cfg.reserve_eus_per_lane()
                );
            }
        }
        Ok(cfg)
    }

    fn apply_mode(&self, cfg: &mut SsdConfig) -> Result<(), CliError> {
        let target = self.mode.unwrap_or(match cfg.mode {
            Mode::Conventional => ModeArg::Conventional,
            Mode::Zns(_) => ModeArg::Zns,
            Mode::Fdp(_) => ModeArg::Fdp,
        });
        let zone_flag = [
            ("--zone-eus", self.zone_eus.is_some()),
            ("--max-open-zones", self.max_open_zones.is_some()),
            ("--open-zones", self.open_zones.is_some()),
        ]
        .into_iter()
        .find(|(_, given)| *given);
        if let (Some((flag, _)), false) = (zone_flag, target == ModeArg::Zns) {
            return Err(usage(format!("{flag} only applies to --mode zns")));
        }
        if self.handles.is_some() && target != ModeArg::Fdp {
            return Err(usage("--handles only applies to --mode fdp"));
        }
        cfg.mode = match target {
            ModeArg::Conventional => Mode::Conventional,
            ModeArg::Zns => {
                let mut z = match &cfg.mode {
                    Mode::Zns(z) => z.clone(),
                    _ => ZnsConfig {
                        zone_eus: DEFAULT_ZONE_EUS,
                        max_open_zones: DEFAULT_MAX_OPEN_ZONES,
                        max_active_zones: DEFAULT_MAX_OPEN_ZONES,
                    },
                };
                if let Some(v) = self.zone_eus {
                    z.zone_eus = v;
                }
                if let Some(v) = self.max_open_zones {
                    z.max_open_zones = v;
                    z.max_active_zones = z.max_active_zones.max(v);
                }
                Mode::Zns(z)
            }
            ModeArg::Fdp => {
                let mut f = match &cfg.mode {
                    Mode::Fdp(f) => f.clone(),
                    _ => FdpConfig {
                        handles: DEFAULT_HANDLES,
                    },
                };
                if let Some(h) = self.handles {
                    f.handles = h;
                }
                Mode::Fdp(f)
            }
        };
        Ok(())
    }

    /// Merges defaults, the `--config` file and the flags, and validates the result.
    pub fn plan(&self) -> Result<Plan, CliError> {
        let file: FileConfig = match &self.config {
            Some(path) => super::read_toml(path)?,
            None => FileConfig::default(),
        };
        let ssd = self.device(file.ssd)?;
        let mut workload = file.workload.unwrap_or_default();
        if let Some(p) = self.pattern {
            workload.pattern = p;
        }
        if let Some(w) = self.write_size {
            workload.write_size_bytes = w;
        }
        if let Some(r) = self.read_share {
            workload.read_share = r;
        }
        if let Some(s) = self.seed {
            workload.seed = s;
        }
        let mut params = file.run.unwrap_or_default();
        if let Some(m) = self.capacity_multiple {
            params.capacity_multiple = m;
        }
        if let Some(i) = self.interval {
            params.interval_capacity_fraction = i;
        }
        if self.no_precondition {
            params.precondition = false;
        }
        if let Some(q) = self.qd {
            params.queue_depth = q;
        }
        if self.open_zones.is_some() {
            params.open_zones = self.open_zones;
        }
        ssd.validate().map_err(|e| {
            let hint = if e.field == "logical_bytes" {
                " (the spare area must also hold the GC reserve and one open erase unit per \
                 frontier: raise --sf, or use a larger --capacity or smaller erase units)"
            } else {
                ""
            };
            usage(format!("{e}{hint}"))
        })?;
        workload.validate().map_err(|e| usage(e.to_string()))?;
        params.validate().map_err(|e| usage(e.to_string()))?;
        Ok(Plan {
            ssd,
            workload,
            params,
            drive: self.drive,
        })
    }
}

/// Runs `wafer sim`.
pub fn main(args: &SimArgs) -> Result<(), CliError> {
    let plan = args.plan()?;
    if args.dump_config {
        let file = FileConfig {
            ssd: Some(plan.ssd),
            workload: Some(plan.workload),
            run: Some(plan.params),
        };
        let text = toml::to_string(&file).map_err(|e| CliError::Run(e.to_string()))?;
        let text = match plan.drive {
            // The drive resolves to the [ssd] values below; the comment says where they came
            // from (reading the file back gives the same device without --drive).
            Some(d) => format!("# [ssd]: --drive {d} ({})\n{text}", d.description()),
            None => text,
        };
        super::human::print_stdout(text.trim_end());
        return Ok(());
    }
    if let Some(p) = &args.csv {
        super::check_writable("--csv", p)?;
    }
    let started = Instant::now();
    let trace = match &args.trace {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| usage(format!("cannot read trace {}: {e}", path.display())))?;
            let t = wafer_workloads::trace::parse(&text, args.trace_format)
                .map_err(|e| usage(format!("{}: {e}", path.display())))?;
            Some((t, path.display().to_string()))
        }
        None => None,
    };
    let summary = if let Some((t, path)) = &trace {
        let i = t.info(path);
        if !args.json {
            eprintln!(
                "trace {path}: {:?}, {} commands per pass ({} writes of {} in all, {} reads, {} \
                 trims)",
                t.format,
                i.commands,
                i.writes,
                super::size::format_bytes(i.write_bytes),
                i.reads,
                i.trims
            );
        }
        wafer_workloads::simrun::run_trace(plan.ssd, t, path, &plan.params, &mut Quiet)
    } else if args.json {
        run(plan.ssd, &plan.workload, &plan.params, &mut Quiet)
    } else {
        let show_bar = std::io::stderr().is_terminal();
        let mut out = HumanOutput::new(&plan, show_bar);
        out.header();
        let s = run(plan.ssd.clone(), &plan.workload, &plan.params, &mut out);
        out.finish();
        s
    }
    .map_err(|e| match e {
        RunError::Sim(e) => CliError::Run(e.to_string()),
        e => CliError::Usage(e.to_string()),
    })?;
    let json = serde_json::to_string_pretty(&summary).map_err(|e| CliError::Run(e.to_string()))?;
    if let Some(path) = &args.out {
        std::fs::write(path, format!("{json}\n"))
            .map_err(|e| CliError::Run(format!("cannot write {}: {e}", path.display())))?;
    }
    if let Some(path) = &args.csv {
        let rows: Vec<(Vec<String>, &wafer_workloads::IntervalRow)> = summary
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (vec![i.to_string()], r))
            .collect();
        std::fs::write(path, super::csv::table(&["interval"], &rows))
            .map_err(|e| CliError::Run(format!("cannot write {}: {e}", path.display())))?;
    }
    if args.json {
        super::human::print_stdout(&json);
    } else {
        super::human::result(&summary, started.elapsed());
    }
    Ok(())
}
