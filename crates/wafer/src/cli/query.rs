//! `wafer bench query`: paper 003's temp-space experiments (sections 6-7, Figures 6-8): external
//! sort, Grace hash join and sort-merge join of two tables stored in the engine, with temp space
//! on the simulated disk or the simulated flash SSD, in virtual time.

use super::size::{format_bytes, parse_size};
use super::CliError;
use std::fmt::Write as _;
use std::path::PathBuf;
use wafer_workloads::query::bench::{
    self as qb, Experiment, Operator, QueryBenchConfig, QueryBenchResult, QueryRun, TempDevice,
};
use wafer_workloads::query::TempTiming;

/// Which experiments.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExperimentArg {
    /// Figure 7(a): the sort at each cluster size (--clusters), disk and flash.
    Cluster,
    /// Figure 7(b): the sort at each memory size (--memory-fractions), each device at its
    /// cluster (--disk-cluster, --flash-cluster).
    Memory,
    /// Figure 8: hash join and sort-merge join, disk and flash, with their I/O scatter.
    Joins,
    /// Figure 6: the sort's run generation and merge, disk and flash, with the I/O scatter.
    Phases,
    /// All four.
    All,
}

/// Devices for temp space.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceArg {
    /// The paper's 7200 rpm disk (Seagate Barracuda 7200.10: 110 MB/s, 8 MB write-back cache).
    Disk,
    /// The flash SSD of --flash-drive.
    Flash,
}

/// Options of `wafer bench query`.
#[derive(clap::Args, Debug, Clone)]
pub struct QueryArgs {
    /// Which experiments to run.
    #[arg(long, value_enum, default_value = "all")]
    pub experiment: ExperimentArg,
    /// Rows per table (the paper: two million rows, about 200 MB per table).
    #[arg(long, default_value_t = 2_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub rows: u64,
    /// Bytes a row takes in temp space, with its 8-byte header; at least 24.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(24..=65536))]
    pub row_bytes: u64,
    /// Memory of an operator in the cluster sweep, the joins and the phases (the paper: 2 MB).
    #[arg(long, default_value = "2MiB", value_parser = parse_size)]
    pub memory: u64,
    /// Cluster sizes of the sweep (powers of two, 2 KiB to 256 KiB), comma separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_size,
          default_value = "2KiB,4KiB,8KiB,16KiB,32KiB,64KiB,128KiB")]
    pub clusters: Vec<u64>,
    /// Memory sizes of the memory sweep, as fractions of one table, comma separated.
    #[arg(long, value_delimiter = ',', value_parser = super::parse_positive,
          default_value = "0.01,0.02,0.05,0.1,0.2,0.5")]
    pub memory_fractions: Vec<f64>,
    /// The disk's cluster outside the sweep (the paper: 64 KB, its best).
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    pub disk_cluster: u64,
    /// The flash SSD's cluster outside the sweep (the paper: 2 KB, its best).
    #[arg(long, default_value = "2KiB", value_parser = parse_size)]
    pub flash_cluster: u64,
    /// The temp role's devices to compare, comma separated (`--temp-device` is the same flag,
    /// named like `--log-device` and `--undo-device` of the other benches).
    #[arg(
        long,
        visible_alias = "temp-device",
        value_enum,
        value_delimiter = ',',
        default_value = "disk,flash"
    )]
    pub devices: Vec<DeviceArg>,
    /// The flash SSD: a drive preset of `wafer sim --drive` (mcaqe32g: the paper's 2008 SATA
    /// SLC SSD; the NVMe presets map 4 KiB, so their smallest cluster is 4 KiB).
    #[arg(long, default_value = "mcaqe32g", value_parser = super::sim::parse_drive)]
    pub flash_drive: flashsim::Drive,
    /// CPU time per row and operator step (sort into a run, merge, partition, build, probe), in
    /// virtual ns. 3000 makes run generation take about as long on the disk as on the paper's
    /// SSD (Figure 6), whose 32 MB/s of writes would otherwise make it 3.5x slower; 0 measures
    /// the I/O alone.
    #[arg(long, default_value_t = 3000)]
    pub cpu_ns_per_row: u64,
    /// Clusters each run reader reads ahead (1: double buffering; 0: read when needed).
    #[arg(long, default_value_t = 1)]
    pub read_ahead: usize,
    /// Cluster buffers of writes in flight behind the writers (0: every write waits). 4 keeps
    /// the paper's SSD writing at its 32 MB/s with 2 KiB clusters; one write at a time would
    /// halve that.
    #[arg(long, default_value_t = 4)]
    pub write_behind: usize,
    /// Most temp commands in flight at once (NCQ's 32).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub queue_depth: u64,
    /// Temp space on each device [default: three tables' bytes, at least 256 MiB].
    #[arg(long, value_parser = parse_size)]
    pub temp_space: Option<u64>,
    /// Most points of each recorded I/O scatter.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(2..))]
    pub trace_points: u64,
    /// Seed of the tables.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Operator runs at once [default: the machine's cores].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub threads: Option<u64>,
    /// Write every run (phases, I/O counters, operator statistics, scatters) here as JSON, for
    /// `wafer report`.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn usage(m: String) -> CliError {
    CliError::Usage(m)
}

impl QueryArgs {
    fn config(&self) -> Result<QueryBenchConfig, CliError> {
        let cluster = |b: u64, flag: &str| -> Result<usize, CliError> {
            let ok = b.is_power_of_two() && (2048..=256 << 10).contains(&b);
            if !ok {
                return Err(usage(format!(
                    "{flag}: cluster {} must be a power of two from 2 KiB to 256 KiB",
                    format_bytes(b)
                )));
            }
            Ok(b as usize)
        };
        let clusters = self
            .clusters
            .iter()
            .map(|&c| cluster(c, "--clusters"))
            .collect::<Result<Vec<_>, _>>()?;
        let table = self.rows * self.row_bytes;
        let temp = self
            .temp_space
            .unwrap_or_else(|| (3 * table).max(256 << 20).div_ceil(64 << 20) * (64 << 20));
        let mut devices = Vec::new();
        for d in &self.devices {
            let d = match d {
                DeviceArg::Disk => TempDevice::Disk,
                DeviceArg::Flash => TempDevice::Flash,
            };
            if !devices.contains(&d) {
                devices.push(d);
            }
        }
        let threads = self.threads.map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get()),
            |t| t as usize,
        );
        Ok(QueryBenchConfig {
            rows: self.rows,
            row_bytes: self.row_bytes as usize,
            memory_bytes: self.memory,
            clusters,
            memory_fractions: self.memory_fractions.clone(),
            disk_cluster: cluster(self.disk_cluster, "--disk-cluster")?,
            flash_cluster: cluster(self.flash_cluster, "--flash-cluster")?,
            devices,
            flash_drive: self.flash_drive,
            timing: TempTiming {
                cpu_ns_per_row: self.cpu_ns_per_row,
                read_ahead: self.read_ahead,
                write_behind: self.write_behind,
                queue_depth: self.queue_depth as usize,
            },
            temp_bytes: temp,
            trace_points: self.trace_points as usize,
            seed: self.seed,
            threads,
        })
    }

    fn experiments(&self) -> Vec<Experiment> {
        match self.experiment {
            ExperimentArg::Cluster => vec![Experiment::Cluster],
            ExperimentArg::Memory => vec![Experiment::Memory],
            ExperimentArg::Joins => vec![Experiment::Joins],
            ExperimentArg::Phases => vec![Experiment::Phases],
            ExperimentArg::All => Experiment::ALL.to_vec(),
        }
    }
}

/// Runs `wafer bench query`.
pub fn main(args: &QueryArgs) -> Result<(), CliError> {
    let cfg = args.config()?;
    let experiments = args.experiments();
    eprintln!(
        "query: {} rows x 2 tables ({} each), memory {}, CPU {} ns/row, read-ahead {}, \
         write-behind {}, queue depth {}, temp space {}, {} thread(s); loading the tables...",
        cfg.rows,
        format_bytes(cfg.table_bytes()),
        format_bytes(cfg.memory_bytes),
        cfg.timing.cpu_ns_per_row,
        cfg.timing.read_ahead,
        cfg.timing.write_behind,
        cfg.timing.queue_depth,
        format_bytes(cfg.temp_bytes),
        cfg.threads
    );
    let started = std::time::Instant::now();
    let progress = |n: usize, total: usize, r: &QueryRun| {
        eprintln!(
            "[{:>4.0}s] {n:>3}/{total} {:<8} {:<16} {:<5} cluster {:>7} memory {:>9}: \
             {:>9.2} virtual s (wall {:.1} s)",
            started.elapsed().as_secs_f64(),
            r.experiment.name(),
            r.operator.name(),
            r.device.name(),
            format_bytes(r.cluster_bytes as u64),
            format_bytes(r.memory_bytes),
            r.time_ns as f64 / 1e9,
            r.wall_ms as f64 / 1e3
        );
    };
    let result =
        qb::run(&cfg, &experiments, &progress).map_err(|e| CliError::Run(e.to_string()))?;
    super::human::print_stdout(&tables(&result));
    if let Some(path) = &args.out {
        let text = serde_json::to_string(&result)
            .map_err(|e| CliError::Run(format!("encoding the results: {e}")))?;
        std::fs::write(path, text)
            .map_err(|e| CliError::Run(format!("writing {}: {e}", path.display())))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn phase_s(r: &QueryRun, name: &str) -> f64 {
    r.phases
        .iter()
        .find(|p| p.name == name)
        .map_or(0.0, |p| secs(p.stats.time_ns))
}

fn find(
    runs: &[QueryRun],
    e: Experiment,
    d: TempDevice,
    op: Operator,
    pick: impl Fn(&QueryRun) -> bool,
) -> Option<&QueryRun> {
    runs.iter()
        .find(|r| r.experiment == e && r.device == d && r.operator == op && pick(r))
}

/// The experiments' tables (markdown).
pub fn tables(res: &QueryBenchResult) -> String {
    let cfg = &res.config;
    let runs = &res.runs;
    let mut out = String::new();
    let devs = &cfg.devices;
    let cell = |r: Option<&QueryRun>| match r {
        Some(r) => format!(
            "{:.1} ({:.1} + {:.1}; fan-in {}, {} extra merges)",
            secs(r.time_ns),
            phase_s(r, "run-generation"),
            phase_s(r, "merge"),
            r.fan,
            r.extra_passes
        ),
        None => "-".into(),
    };
    if res.experiments.contains(&Experiment::Cluster) {
        let _ = writeln!(
            out,
            "\n## Sort by cluster size (Figure 7a): memory {}, virtual s (run generation + merge)\n",
            format_bytes(cfg.memory_bytes)
        );
        let _ = write!(out, "| cluster |");
        for d in devs {
            let _ = write!(out, " {} |", d.name());
        }
        let _ = writeln!(out, "\n|---|{}", "---|".repeat(devs.len()));
        for &c in &cfg.clusters {
            let _ = write!(out, "| {} |", format_bytes(c as u64));
            for &d in devs {
                let r = find(runs, Experiment::Cluster, d, Operator::Sort, |r| {
                    r.cluster_bytes == c
                });
                let _ = write!(out, " {} |", cell(r));
            }
            let _ = writeln!(out);
        }
    }
    if res.experiments.contains(&Experiment::Memory) {
        let _ = writeln!(
            out,
            "\n## Sort by memory size (Figure 7b): disk cluster {}, flash cluster {}, virtual s\n",
            format_bytes(cfg.disk_cluster as u64),
            format_bytes(cfg.flash_cluster as u64)
        );
        let _ = write!(out, "| memory | share of the table |");
        for d in devs {
            let _ = write!(out, " {} |", d.name());
        }
        let both = devs.len() == 2;
        if both {
            let _ = write!(out, " disk / flash |");
        }
        let cols = devs.len() + 2 + usize::from(both);
        let _ = writeln!(out, "\n|{}", "---|".repeat(cols));
        for &f in &cfg.memory_fractions {
            let pick = |d: TempDevice| {
                find(runs, Experiment::Memory, d, Operator::Sort, |r| {
                    r.memory_fraction == f
                })
            };
            let mems: Vec<String> = devs
                .iter()
                .filter_map(|&d| pick(d).map(|r| format_bytes(r.memory_bytes)))
                .collect();
            let mut mems_shown = mems.clone();
            mems_shown.dedup();
            let _ = write!(out, "| {} | {:.0}% |", mems_shown.join(" / "), f * 100.0);
            for &d in devs {
                let _ = write!(out, " {} |", cell(pick(d)));
            }
            if both {
                match (pick(TempDevice::Disk), pick(TempDevice::Flash)) {
                    (Some(a), Some(b)) if b.time_ns > 0 => {
                        let _ = write!(out, " {:.2} |", a.time_ns as f64 / b.time_ns as f64);
                    }
                    _ => out.push_str(" - |"),
                }
            }
            let _ = writeln!(out);
        }
    }
    if res.experiments.contains(&Experiment::Joins) {
        let _ = writeln!(
            out,
            "\n## Joins (Figure 8): memory {}, virtual s by phase; temp MB written / read, reads\n",
            format_bytes(cfg.memory_bytes)
        );
        let _ = writeln!(
            out,
            "| join | device | cluster | time s | phases s | MB written | MB read | reads | \
             fan | extra passes |\n|---|---|---|---|---|---|---|---|---|---|"
        );
        for op in [Operator::HashJoin, Operator::SortMergeJoin] {
            for &d in devs {
                if let Some(r) = find(runs, Experiment::Joins, d, op, |_| true) {
                    let phases: Vec<String> = r
                        .phases
                        .iter()
                        .map(|p| format!("{} {:.1}", p.name, secs(p.stats.time_ns)))
                        .collect();
                    let _ = writeln!(
                        out,
                        "| {} | {} | {} | {:.1} | {} | {:.0} | {:.0} | {} | {} | {} |",
                        op.name(),
                        d.name(),
                        format_bytes(r.cluster_bytes as u64),
                        secs(r.time_ns),
                        phases.join(", "),
                        r.io.bytes_written as f64 / 1e6,
                        r.io.bytes_read as f64 / 1e6,
                        r.io.reads,
                        r.fan,
                        r.extra_passes
                    );
                }
            }
        }
    }
    if res.experiments.contains(&Experiment::Phases) {
        let _ = writeln!(
            out,
            "\n## Sort phases (Figure 6): memory {}, virtual s\n\n| device | cluster | run \
             generation | merge | merge / run generation |\n|---|---|---|---|---|",
            format_bytes(cfg.memory_bytes)
        );
        for &d in devs {
            if let Some(r) = find(runs, Experiment::Phases, d, Operator::Sort, |_| true) {
                let (g, m) = (phase_s(r, "run-generation"), phase_s(r, "merge"));
                let _ = writeln!(
                    out,
                    "| {} | {} | {:.1} | {:.1} | {:.1} |",
                    d.name(),
                    format_bytes(r.cluster_bytes as u64),
                    g,
                    m,
                    m / g.max(1e-9)
                );
            }
        }
    }
    out
}
