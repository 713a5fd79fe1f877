//! `wafer realdb`: an unmodified database on the simulated SSD (see [`crate::realdb`]): the
//! arguments, the defaults of each recipe, and the tables printed.

use super::sim::{Preset, SimArgs};
use super::ssd::refuse_workload_flags;
use super::CliError;
use crate::realdb::{
    self, crash, ensure_tools, fio::Fio, mariadb::Mariadb, missing_basics, postgres::Postgres,
    rocksdb::Rocksdb, sqlite::Sqlite, FsKind, RealdbError, RealdbResult, RealdbRun, Recipe, Rig,
};
use std::fmt::Write as _;

/// The device's logical capacity when no `--capacity` is given: SQLite's small database fits
/// 256 MiB (512 MiB under XFS, see [`XFS_MIN_BYTES`]); the servers get 1 GiB.
fn default_capacity(r: RecipeArg, fs: FsKind) -> u64 {
    match (r, fs) {
        (RecipeArg::Sqlite, FsKind::Ext4) => 256 << 20,
        (RecipeArg::Sqlite, FsKind::Xfs) => 512 << 20,
        _ => 1 << 30,
    }
}

/// The smallest device mkfs.xfs accepts (xfsprogs 5.19 and later: 300 MiB).
const XFS_MIN_BYTES: u64 = 300 << 20;

/// The recipes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecipeArg {
    /// SQLite 3 (the sqlite3 CLI): one-row upserts, each its own transaction, with
    /// journal_mode=DELETE and WAL (synchronous=FULL). Default 2,000 transactions on 10,000
    /// rows.
    Sqlite,
    /// PostgreSQL with pgbench (TPC-B-like): full_page_writes on and off, each with a
    /// checkpoint every N transactions for each N of --checkpoint-every. Default scale 10, 4
    /// clients, 20,000 transactions, checkpoints every 2,000 and 20,000.
    Postgres,
    /// MariaDB (InnoDB) with sysbench oltp_write_only: innodb_doublewrite ON and OFF. Default 4
    /// tables of 100,000 rows, 32 MiB buffer pool, 4 threads, 10,000 transactions.
    Mariadb,
    /// RocksDB db_bench: fillrandom (not measured), then overwrite, with leveled and universal
    /// compaction. Default 500,000 keys of 400 B, 1,000,000 overwrites.
    Rocksdb,
    /// fio: 4 KiB random writes over the whole device (4 x its capacity) through the mount,
    /// no file system, against the model alone on the same device (`wafer sim`): their SSD WAFs
    /// must agree within 2% (the command fails otherwise).
    Fio,
}

/// Options of `wafer realdb`. Each setting runs on a fresh device and file system; the
/// database is set up and loaded first (not measured), then the counted load runs, and every
/// byte counts from then on, on both sides.
#[derive(clap::Args, Debug)]
pub struct RealdbArgs {
    /// The database and its load.
    #[arg(value_enum)]
    pub recipe: RecipeArg,
    /// Transactions of the measured load (RocksDB: overwrites) [default: per recipe, above].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub txns: Option<u64>,
    /// SQLite: rows of the table; MariaDB: rows per table; RocksDB: keys [default: per
    /// recipe].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub rows: Option<u64>,
    /// PostgreSQL: pgbench's scale factor (100,000 accounts each).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub scale: u64,
    /// Concurrent clients (PostgreSQL, MariaDB).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub clients: u64,
    /// PostgreSQL: the checkpoint spacings compared, in transactions (comma-separated)
    /// [default: a tenth of --txns, and --txns].
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..))]
    pub checkpoint_every: Vec<u64>,
    /// Run every setting this many times (each on a fresh device) and report how far the
    /// flash counts agree.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub repeat: u32,
    /// Instead of the measured load, crash the database: cut the device's power after
    /// --crash-after acknowledged commits (its write cache lost), restart, and check that the
    /// database recovers with every acknowledged commit (SQLite and PostgreSQL).
    #[arg(long)]
    pub crash: bool,
    /// With --crash: acknowledged commits before the (first) cut.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    pub crash_after: u64,
    /// With --crash: cuts per setting, after --crash-after x 1, 2, ... commits.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=50))]
    pub crashes: u64,
    /// The device's volatile write cache, lost by a power cut [default: 8 MiB with --crash
    /// (without power-loss protection), else none].
    #[arg(long, value_name = "SIZE", value_parser = super::size::parse_size)]
    pub write_cache: Option<u64>,
    /// File system put on the device.
    #[arg(long, value_enum, default_value = "ext4")]
    pub fs: FsKind,
    /// The device (same flags and TOML `[ssd]` as `wafer sim`; --capacity defaults to 256 MiB
    /// for SQLite (512 MiB with --fs xfs, which needs more than 300 MiB) and 1 GiB for the others, --geometry to small so that the spare factor is
    /// what is asked), `--out FILE` for the result as JSON (input of `wafer report`), and
    /// `--no-precondition` for a fresh device (by default its logical space is written once
    /// first, as an aged drive's is, and mkfs does not discard it).
    #[command(flatten)]
    pub sim: SimArgs,
}

impl RealdbArgs {
    fn recipe(&self, cfg: &flashsim::SsdConfig) -> Box<dyn Recipe> {
        match self.recipe {
            RecipeArg::Sqlite => Box::new(Sqlite {
                rows: self.rows.unwrap_or(10_000),
                txns: self.txns.unwrap_or(2000),
            }),
            RecipeArg::Postgres => {
                let txns = self.txns.unwrap_or(20_000);
                let every = if self.checkpoint_every.is_empty() {
                    vec![(txns / 10).max(1), txns]
                } else {
                    self.checkpoint_every.clone()
                };
                Box::new(Postgres {
                    scale: self.scale,
                    txns,
                    clients: self.clients,
                    checkpoint_every: every,
                })
            }
            RecipeArg::Mariadb => Box::new(Mariadb {
                tables: 4,
                rows: self.rows.unwrap_or(100_000),
                txns: self.txns.unwrap_or(10_000),
                clients: self.clients,
                buffer_pool_mib: 32,
            }),
            RecipeArg::Rocksdb => Box::new(Rocksdb {
                keys: self.rows.unwrap_or(500_000),
                writes: self.txns.unwrap_or(1_000_000),
                value_bytes: 400,
            }),
            RecipeArg::Fio => Box::new(Fio {
                cfg: cfg.clone(),
                capacity_multiple: 4,
            }),
        }
    }

    /// The device: the flags over the defaults of this command.
    fn device(&self) -> Result<flashsim::SsdConfig, CliError> {
        let mut sim = self.sim.clone();
        if sim.geometry.is_none() && sim.drive.is_none() && sim.config.is_none() {
            sim.geometry = Some(Preset::Small);
        }
        let mut cfg = sim.plan()?.ssd;
        if self.sim.capacity.is_none() && self.sim.config.is_none() {
            cfg = super::resize_ssd(&cfg, Some(default_capacity(self.recipe, self.fs)), None);
        }
        if self.fs == FsKind::Xfs
            && self.recipe != RecipeArg::Fio
            && cfg.logical_bytes <= XFS_MIN_BYTES
        {
            return Err(CliError::Usage(format!(
                "mkfs.xfs needs a device larger than 300 MiB; this one has {} MiB (--capacity)",
                cfg.logical_bytes >> 20
            )));
        }
        if matches!(cfg.mode, flashsim::Mode::Zns(_)) {
            return Err(CliError::Usage(
                "a zoned device cannot hold a file system: use a conventional or FDP device".into(),
            ));
        }
        match (self.write_cache, self.crash) {
            (Some(w), _) => cfg.write_cache_bytes = w,
            (None, true) => cfg.write_cache_bytes = 8 << 20,
            (None, false) => {}
        }
        if self.crash {
            cfg.power_loss_protection = false;
        }
        cfg.validate().map_err(|e| CliError::Usage(e.to_string()))?;
        Ok(cfg)
    }
}

fn run_err(e: RealdbError) -> CliError {
    CliError::Run(e.to_string())
}

/// Runs `wafer realdb`.
pub fn main(a: &RealdbArgs) -> Result<(), CliError> {
    let mut flags = a.sim.clone();
    flags.no_precondition = false;
    refuse_workload_flags(&flags)?;
    let precondition = !a.sim.no_precondition;
    if a.crash && !matches!(a.recipe, RecipeArg::Sqlite | RecipeArg::Postgres) {
        return Err(CliError::Usage(
            "--crash is built for the sqlite and postgres recipes".into(),
        ));
    }
    if !a.checkpoint_every.is_empty() && a.recipe != RecipeArg::Postgres {
        return Err(CliError::Usage(
            "--checkpoint-every applies to the postgres recipe only".into(),
        ));
    }
    let cfg = a.device()?;
    if let Some(what) = missing_basics() {
        return Err(CliError::Run(format!(
            "this machine lacks {what}, which `wafer realdb` needs"
        )));
    }
    let recipe = a.recipe(&cfg);
    if a.recipe == RecipeArg::Fio && a.sim.no_precondition {
        return Err(CliError::Usage(
            "the fio check compares with the model after its sequential fill: drop \
             --no-precondition"
                .into(),
        ));
    }
    let mut tools = recipe.tools();
    if recipe.needs_fs() {
        let (mkfs, pkg) = a.fs.mkfs();
        tools.push((mkfs.to_string(), pkg));
    }
    if a.crash {
        tools.push(("stdbuf".into(), "coreutils"));
    }
    ensure_tools(&tools).map_err(run_err)?;
    let mut result = RealdbResult {
        kind: "realdb".into(),
        recipe: recipe.name().into(),
        workload: recipe.workload(),
        fs: if recipe.needs_fs() {
            a.fs.name().into()
        } else {
            "no file system".into()
        },
        device: realdb::DeviceShape::of(&cfg, precondition),
        runs: Vec::new(),
        spread: Vec::new(),
        crashes: Vec::new(),
    };
    if a.crash {
        result.workload = format!(
            "numbered one-row inserts, one per transaction; power cut after {} acknowledged \
             commits ({} cut(s) per setting)",
            a.crash_after, a.crashes
        );
        for j in 0..a.crashes {
            let after = a.crash_after * (j + 1);
            let settings = match a.recipe {
                RecipeArg::Sqlite => crash::Setting::sqlite(),
                _ => crash::Setting::postgres(),
            };
            for setting in settings {
                let mut rig = Rig::new(&cfg, Some(a.fs), precondition).map_err(run_err)?;
                let c = setting.run(&mut rig, after).map_err(run_err)?;
                drop(rig);
                eprintln!(
                    "{} {}: cut after {} commits ({} cached units lost): {}",
                    recipe.name(),
                    c.setting,
                    c.acknowledged,
                    c.lost_units,
                    if c.recovered && c.found >= c.acknowledged {
                        "recovered, nothing acknowledged lost".to_string()
                    } else if c.recovered {
                        format!(
                            "recovered consistent, {} acknowledged commit(s) lost (the setting \
                             does not promise them)",
                            c.acknowledged - c.found
                        )
                    } else {
                        format!("NOT RECOVERED: {}", c.check)
                    }
                );
                result.crashes.push(c);
            }
        }
    } else {
        result.runs = realdb::run_all(recipe.as_ref(), &cfg, a.fs, precondition, a.repeat)
            .map_err(run_err)?;
        result.spread = realdb::spreads(&result.runs);
    }
    let disagree = if a.recipe == RecipeArg::Fio {
        fio_agreement(&mut result)
    } else {
        None
    };
    super::human::print_stdout(&tables(&result));
    if let Some(p) = &a.sim.out {
        let text = serde_json::to_string_pretty(&result)
            .map_err(|e| CliError::Run(format!("encoding: {e}")))?;
        std::fs::write(p, text)
            .map_err(|e| CliError::Run(format!("writing {}: {e}", p.display())))?;
    }
    if let Some(e) = disagree {
        return Err(CliError::Run(e));
    }
    if result.crashes.iter().any(|c| !c.recovered) {
        return Err(CliError::Run(
            "a database did not recover everything it acknowledged (see the table)".into(),
        ));
    }
    Ok(())
}

/// The fio check: the SSD WAF through the mount against the model's, per repetition, added to
/// the workload line; the first disagreement beyond the bound, if any.
fn fio_agreement(result: &mut RealdbResult) -> Option<String> {
    let mut bad = None;
    let mut words = Vec::new();
    for pair in result.runs.chunks(2) {
        if let [mount, model] = pair {
            let diff = 100.0 * (mount.ssd_waf / model.ssd_waf - 1.0);
            words.push(format!(
                "SSD WAF through the mount {:.3}, model {:.3} ({diff:+.2}%)",
                mount.ssd_waf, model.ssd_waf
            ));
            if diff.abs() > realdb::fio::AGREEMENT_PCT && bad.is_none() {
                bad = Some(format!(
                    "the mount's SSD WAF {:.3} is {diff:+.2}% from the model's {:.3} (bound \
                     {}%)",
                    mount.ssd_waf,
                    model.ssd_waf,
                    realdb::fio::AGREEMENT_PCT
                ));
            }
        }
    }
    result.workload = format!("{}; {}", result.workload, words.join("; "));
    bad
}

/// A run's database counters per transaction, in words.
fn detail(r: &RealdbRun) -> String {
    let t = r.db.txns.max(1) as f64;
    r.db.detail
        .iter()
        .map(|(k, v)| {
            if k.ends_with("bytes") {
                format!("{k} {:.0} B", *v as f64 / t)
            } else {
                format!("{k} {:.2}", *v as f64 / t)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The Markdown tables of a result.
pub fn tables(r: &RealdbResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n## {} on the simulated SSD ({} on a loop device; {})\n\n{}\n",
        r.recipe,
        r.fs,
        r.workload,
        device_line(r)
    );
    if !r.runs.is_empty() {
        let _ = writeln!(
            out,
            "| setting | txns | DB B/txn | host B/txn | flash B/txn | flushes/txn | FS WAF | SSD \
             WAF | total WAF | DB counters per txn |\n|---|---|---|---|---|---|---|---|---|---|"
        );
        for x in &r.runs {
            let _ = writeln!(
                out,
                "| {} | {} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {} |",
                x.setting,
                x.db.txns,
                x.db_bytes_per_txn,
                x.host_bytes_per_txn,
                x.media_bytes_per_txn,
                x.device.flushes as f64 / x.db.txns.max(1) as f64,
                x.fs_waf,
                x.ssd_waf,
                x.total_waf,
                detail(x)
            );
        }
    }
    if !r.spread.is_empty() {
        let _ = writeln!(
            out,
            "\nRepeatability ((max - min) / mean over the runs of a setting):\n\n| setting | runs \
             | DB bytes | host bytes | flash bytes |\n|---|---|---|---|---|"
        );
        for s in &r.spread {
            let _ = writeln!(
                out,
                "| {} | {} | {:.2}% | {:.2}% | {:.2}% |",
                s.setting, s.runs, s.db_bytes_pct, s.host_bytes_pct, s.media_bytes_pct
            );
        }
    }
    if !r.crashes.is_empty() {
        let _ = writeln!(
            out,
            "| setting | acknowledged | found after recovery | cache units lost | flushes before \
             the cut | durability promised | recovered | check |\n|---|---|---|---|---|---|---|---|"
        );
        for c in &r.crashes {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                c.setting,
                c.acknowledged,
                c.found,
                c.lost_units,
                c.flushes_before_cut,
                if c.durable_promised { "yes" } else { "no" },
                if c.recovered { "yes" } else { "NO" },
                c.check
            );
        }
    }
    out
}

/// The device in one line.
pub fn device_line(r: &RealdbResult) -> String {
    let d = &r.device;
    format!(
        "Device: {} MiB logical, spare factor {:.2}, mapping unit {} B, {}, write cache {} KiB, \
         {}.",
        d.logical_bytes >> 20,
        d.spare_factor,
        d.mapping_unit_bytes,
        d.geometry,
        d.write_cache_bytes >> 10,
        if d.preconditioned {
            "its logical space written once first (aged)"
        } else {
            "fresh"
        }
    )
}
