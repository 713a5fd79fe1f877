//! `wafer bench mvcc`: paper 003's MVCC read test (Table 4): a snapshot scan after three
//! transactions updated every row reads three old versions of each from the rollback segments,
//! on the paper's disk and on its flash SSD.

use super::CliError;
use std::fmt::Write as _;
use wafer_workloads::mvcc::{
    run, run_writes, MvccReadConfig, MvccReadRun, MvccWriteConfig, MvccWriteRun, UndoDevice,
    UndoWriteDevice, WriteWorkload,
};

/// The experiments.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Experiment {
    /// Table 4 and Figure 5: a snapshot scan reading three old versions of every row.
    Reads,
    /// Figure 4: concurrent snapshot transactions appending to their rollback segments.
    Writes,
    /// Both.
    All,
}

/// The writes experiment's workloads.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadArg {
    /// TPC-C under snapshot isolation.
    Tpcc,
    /// Updates of random rows.
    Updates,
}

/// Options of `wafer bench mvcc`.
#[derive(clap::Args, Debug, Clone)]
pub struct MvccArgs {
    /// Rows of the table (8-byte keys). 250,000 rows of 400 B: the paper's 100 MB table
    /// (12,500 pages of 8 KiB; 25,000 of 4 KiB here).
    #[arg(long, default_value_t = 250_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub rows: u64,
    /// Value bytes of a row.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub value_size: u64,
    /// Transactions that each update every row between the two scans (paper: 3).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub updaters: u32,
    /// Which experiment.
    #[arg(long, value_enum, default_value = "all")]
    pub experiment: Experiment,
    /// Writes experiment: what the transactions do: `tpcc` (the paper's: TPC-C's five
    /// transactions, the terminals' statements interleaved) or `updates` (10 updates of random
    /// rows of one table each, interleaved update by update).
    #[arg(long, value_enum, default_value = "tpcc")]
    pub workload: WorkloadArg,
    /// Writes experiment, TPC-C: warehouses. 16, one a terminal: the engine's first updater
    /// wins and the others retry where the paper's server made them wait for the row lock, so
    /// with 8 terminals a warehouse most turns go to retried Payments (5 conflicts for every
    /// transaction completed, at 2 warehouses).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub warehouses: u32,
    /// Writes experiment, TPC-C: population scale (1 = the specification's).
    #[arg(long, default_value_t = 0.05)]
    pub tpcc_scale: f64,
    /// Writes experiment: concurrent snapshot transactions (each its own rollback segment).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub clients: u32,
    /// Writes experiment: transactions to complete.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub txns: u64,
    /// Write the runs as JSON (with the time x address scatters) here.
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
}

/// Runs `wafer bench mvcc`.
pub fn main(a: &MvccArgs) -> Result<(), CliError> {
    let cfg = MvccReadConfig {
        rows: a.rows,
        value_bytes: a.value_size as usize,
        updaters: a.updaters,
        // Room for every version: the updaters' images and the extents' slack.
        undo_bytes: ((a.rows * (a.value_size + 64) * (a.updaters as u64 + 1)) * 2)
            .next_power_of_two()
            .max(64 << 20),
        ..MvccReadConfig::default()
    };
    let reads = matches!(a.experiment, Experiment::Reads | Experiment::All);
    let writes = matches!(a.experiment, Experiment::Writes | Experiment::All);
    let wcfg = MvccWriteConfig {
        workload: match a.workload {
            WorkloadArg::Tpcc => WriteWorkload::Tpcc,
            WorkloadArg::Updates => WriteWorkload::Updates,
        },
        tpcc: wafer_workloads::tpcc::TpccConfig {
            warehouses: a.warehouses,
            scale: a.tpcc_scale,
            ..MvccWriteConfig::default().tpcc
        },
        clients: a.clients,
        txns: a.txns,
        ..MvccWriteConfig::default()
    };
    if wcfg.workload == WriteWorkload::Tpcc {
        wcfg.tpcc
            .validate()
            .map_err(|e| CliError::Usage(format!("--warehouses/--tpcc-scale: {e}")))?;
    }
    // The devices run on their own threads (each on its own virtual clock).
    let write_runs: Vec<Result<MvccWriteRun, String>> = if !writes {
        Vec::new()
    } else {
        std::thread::scope(|s| {
            let hs: Vec<_> = [
                UndoWriteDevice::DiskCached,
                UndoWriteDevice::DiskWriteThrough,
                UndoWriteDevice::Flash,
            ]
            .into_iter()
            .map(|d| {
                let cfg = &wcfg;
                s.spawn(move || run_writes(cfg, d).map_err(|e| e.to_string()))
            })
            .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("a run panicked".into())))
                .collect()
        })
    };
    let write_runs: Vec<MvccWriteRun> = write_runs
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(CliError::Run)?;
    if let Some(r) = write_runs
        .iter()
        .find(|r| r.tpcc.as_ref().is_some_and(|(_, passed)| !passed))
    {
        return Err(CliError::Run(format!(
            "TPC-C consistency checks failed after the interleaved run on {:?}",
            r.device
        )));
    }
    let runs: Vec<Result<MvccReadRun, String>> = if !reads {
        Vec::new()
    } else {
        std::thread::scope(|s| {
            let hs: Vec<_> = [UndoDevice::Disk, UndoDevice::Flash]
                .into_iter()
                .map(|d| {
                    let cfg = &cfg;
                    s.spawn(move || run(cfg, d).map_err(|e| e.to_string()))
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("a run panicked".into())))
                .collect()
        })
    };
    let runs: Vec<MvccReadRun> = runs
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(CliError::Run)?;
    let mut out = String::new();
    if !write_runs.is_empty() {
        let _ = writeln!(
            out,
            "\n#### Rollback-segment writes (paper 003 Figure 4): {} concurrent snapshot \
             transactions, {}, {} completed\n\n| undo device | writes | mean write \
             (KiB) | time per 4 KiB block (ms) | mean distance between writes (MB) | segments \
             | conflicts |\n|---|---|---|---|---|---|---|",
            wcfg.clients,
            match wcfg.workload {
                WriteWorkload::Tpcc => format!(
                    "TPC-C ({} warehouses at scale {}), statements interleaved",
                    wcfg.tpcc.warehouses, wcfg.tpcc.scale
                ),
                WriteWorkload::Updates => format!("{} updates each", wcfg.updates_per_txn),
            },
            wcfg.txns
        );
        for r in &write_runs {
            let _ = writeln!(
                out,
                "| {} | {} | {:.1} | {:.3} | {:.2} | {} | {} |",
                match r.device {
                    UndoWriteDevice::DiskCached => "disk, 8 MB write cache",
                    UndoWriteDevice::DiskWriteThrough => "disk, write-through",
                    UndoWriteDevice::Flash => "flash (mcaqe32g)",
                },
                r.timing.writes,
                r.timing.mean_write_bytes() / 1024.0,
                r.write_ns_per_block / 1e6,
                r.mean_write_distance / 1e6,
                r.segments,
                r.conflicts
            );
        }
    }
    if !runs.is_empty() {
        let _ = writeln!(
            out,
            "\n#### MVCC reads from rollback segments (paper 003 Table 4): {} rows of {} B ({} \
         table pages of 4 KiB), {} updaters\n\n| rollback segments on | undo pages read | \
         pages / table pages | read time (s) | per page (ms) | images followed |\n\
         |---|---|---|---|---|---|",
            a.rows, a.value_size, runs[0].table_pages, a.updaters
        );
        for r in &runs {
            let _ = writeln!(
                out,
                "| {} | {} | {:.2} | {:.2} | {:.3} | {} |",
                match r.device {
                    UndoDevice::Disk => "disk (Barracuda 7200.10)",
                    UndoDevice::Flash => "flash (mcaqe32g)",
                },
                r.undo_pages_read,
                r.undo_pages_read as f64 / r.table_pages.max(1) as f64,
                r.read_ns as f64 / 1e9,
                r.read_ns_per_page / 1e6,
                r.chain_reads
            );
        }
        let _ = writeln!(
            out,
            "\nRead time disk / flash: {:.1}x (paper: 328 s / 21 s = 15.6x).",
            runs[0].read_ns as f64 / runs[1].read_ns.max(1) as f64
        );
    }
    super::human::print_stdout(&out);
    if let Some(p) = &a.out {
        let result = wafer_workloads::mvcc::MvccBenchResult {
            kind: "mvcc".into(),
            config: cfg.clone(),
            runs,
            write_config: writes.then(|| wcfg.clone()),
            writes: write_runs,
        };
        let text = serde_json::to_string_pretty(&result)
            .map_err(|e| CliError::Run(format!("encoding: {e}")))?;
        std::fs::write(p, text)
            .map_err(|e| CliError::Run(format!("writing {}: {e}", p.display())))?;
    }
    Ok(())
}
