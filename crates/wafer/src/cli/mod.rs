//! The `wafer` command line: argument definitions and one module per subcommand.

pub mod bench;
pub mod checkin;
pub mod csv;
pub mod demo;
pub mod device;
pub mod flushless;
pub mod hdr;
pub mod human;
pub mod ladder;
pub mod mvcc;
pub mod query;
pub mod realdb;
pub mod report;
pub mod sim;
pub mod size;
pub mod ssd;
pub mod torture;
pub mod tpcb;
pub mod tpcc;

use clap::{Parser, Subcommand};
use flashsim::SsdConfig;
use wafer_workloads::bench::{OopConfig, Preset};

/// Reads a TOML configuration file into `T`; an unreadable or malformed file, or one with a key
/// no table knows, is a usage error naming the file (and the key).
pub fn read_toml<T: serde::de::DeserializeOwned>(path: &std::path::Path) -> Result<T, CliError> {
    Ok(read_config(path)?.config)
}

/// A configuration file as read: the typed configuration and its `[engine.out_of_place]` table
/// as written (the keys it sets, merged over a preset's own settings).
pub struct ConfigFile<T> {
    pub path: std::path::PathBuf,
    pub config: T,
    pub out_of_place: Option<toml::Table>,
}

/// Reads a configuration file (see [`ConfigFile`]).
pub fn read_config<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
) -> Result<ConfigFile<T>, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))?;
    let bad = |e: toml::de::Error| {
        CliError::Usage(format!(
            "bad config file {}: {}",
            path.display(),
            e.to_string().trim_end()
        ))
    };
    let config = toml::from_str(&text).map_err(bad)?;
    let table: toml::Table = text.parse().map_err(bad)?;
    let out_of_place = table
        .get("engine")
        .and_then(|e| e.get("out_of_place"))
        .and_then(|o| o.as_table())
        .cloned();
    Ok(ConfigFile {
        path: path.to_path_buf(),
        config,
        out_of_place,
    })
}

/// The buffer mode of `preset` in `engine`: a flushless preset runs with the `[engine.flushless]`
/// settings given (or the defaults), which `--dump-config` then shows; any other preset runs the
/// ARIES mode, and settings given for it are dropped with a warning.
pub fn settle_flushless(preset: Preset, engine: &mut wafer_workloads::bench::DbConfig) {
    if preset.flushless() {
        engine.flushless = Some(engine.flushless.take().unwrap_or_default());
    } else if engine.flushless.take().is_some() {
        eprintln!(
            "warning: {}: the [engine.flushless] settings apply to the flushless configurations \
             only; this one runs the ARIES mode",
            preset.name()
        );
    }
}

/// The out-of-place settings of `preset` with the keys of a file's `[engine.out_of_place]`
/// table over them (only the keys the table names change); None for an in-place preset. A key
/// that changes one of the switches that name the preset (codec, gdt, nowa, aligned) gets a
/// warning: the run keeps the preset's name.
pub fn merge_out_of_place(
    preset: Preset,
    file: Option<(&std::path::Path, &toml::Table)>,
) -> Result<Option<OopConfig>, CliError> {
    let Some(base) = preset.out_of_place() else {
        if let Some((path, keys)) = file.filter(|(_, k)| !k.is_empty()) {
            eprintln!(
                "warning: {}: the [engine.out_of_place] table of {} does not apply to this \
                 in-place configuration ({} keys ignored)",
                preset.name(),
                path.display(),
                keys.len()
            );
        }
        return Ok(None);
    };
    let Some((path, keys)) = file else {
        return Ok(Some(base));
    };
    let bad = |e: String| {
        CliError::Usage(format!(
            "bad config file {}: [engine.out_of_place]: {e}",
            path.display()
        ))
    };
    let mut table = toml::Table::try_from(&base).map_err(|e| bad(e.to_string()))?;
    for (k, v) in keys {
        if ["codec", "gdt", "nowa", "aligned"].contains(&k.as_str())
            && table.get(k).is_some_and(|old| old != v)
        {
            eprintln!(
                "warning: {}: {} sets out_of_place.{k} = {v} where the preset has {}; the run is still labelled {}",
                preset.name(),
                path.display(),
                table[k],
                preset.name()
            );
        }
        table.insert(k.clone(), v.clone());
    }
    let merged: OopConfig = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| bad(e.to_string().trim_end().to_string()))?;
    Ok(Some(merged))
}

/// Sets `dst` to the value of a flag when the flag was given.
pub fn set<T>(dst: &mut T, flag: Option<T>) {
    if let Some(v) = flag {
        *dst = v;
    }
}

/// `--configs` naming one configuration twice is a usage error.
pub fn check_distinct(presets: &[Preset]) -> Result<(), CliError> {
    for (i, p) in presets.iter().enumerate() {
        if presets[..i].contains(p) {
            return Err(CliError::Usage(format!(
                "--configs names {} twice (each configuration runs once)",
                p.name()
            )));
        }
    }
    if presets.is_empty() {
        return Err(CliError::Usage("--configs names no configuration".into()));
    }
    Ok(())
}

/// Fails (usage error) unless `path` can be written, before a run spends its time: creates the
/// parent directory, opens an existing file without truncating it, or creates and removes a
/// new one.
/// `--dump-config`: prints the first of a run's configurations as TOML (what `--config` reads).
pub fn print_first_config<T: serde::Serialize>(cfgs: Vec<T>) -> Result<(), CliError> {
    let Some(cfg) = cfgs.into_iter().next() else {
        return Err(CliError::Usage("--configs names no configuration".into()));
    };
    let text = toml::to_string(&cfg).map_err(|e| CliError::Run(e.to_string()))?;
    human::print_stdout(text.trim_end());
    Ok(())
}

pub fn check_writable(flag: &str, path: &std::path::Path) -> Result<(), CliError> {
    let err = |e: std::io::Error| {
        CliError::Usage(format!(
            "{flag} {}: cannot write there: {e}",
            path.display()
        ))
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    if path.is_dir() {
        return Err(CliError::Usage(format!(
            "{flag} {} is a directory",
            path.display()
        )));
    }
    if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(err)?;
    } else {
        std::fs::File::create_new(path).map_err(err)?;
        std::fs::remove_file(path).map_err(err)?;
    }
    Ok(())
}

/// A flag value that must be a finite number >= 0.
pub fn parse_non_negative(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a finite number >= 0")),
    }
}

/// A flag value that must be a finite number > 0.
pub fn parse_positive(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a finite number > 0")),
    }
}

/// Parses the page cleaner's fraction of clean frames: the engine takes [0, 0.9).
pub fn parse_clean_fraction(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..0.9).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}' is not a fraction in [0, 0.9) (cleaner_clean_fraction)"
        )),
    }
}

/// Parses a journal method by its name (`HomeMethod::name`: baseline, isc-a, ..., check-in).
pub fn parse_home_method(s: &str) -> Result<wafer_workloads::bench::HomeMethod, String> {
    let all = wafer_workloads::bench::HomeMethod::ALL;
    all.into_iter()
        .find(|m| m.name() == s.trim())
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|m| m.name()).collect();
            format!("'{s}' is not a journal method ({})", names.join(", "))
        })
}

/// Operations below which a run's WAF is noise.
pub const MIN_MEANINGFUL_OPS: u64 = 10_000;

/// Warns (stderr) when a run is too short for its write amplification to mean anything: fewer
/// than [`MIN_MEANINGFUL_OPS`] operations, or less than one device capacity written.
pub fn warn_short_run(name: &str, what: &str, ops: u64, written: u64, capacity: u64) {
    if ops < MIN_MEANINGFUL_OPS {
        eprintln!(
            "warning: {name}: short run: WAF over {ops} {what} is not meaningful (run at least {MIN_MEANINGFUL_OPS})"
        );
    } else if written < capacity {
        eprintln!(
            "warning: {name}: short run: WAF over {ops} {what} is not meaningful: the engine wrote {}, less than one device capacity ({})",
            size::format_bytes(written),
            size::format_bytes(capacity)
        );
    }
}

/// The data SSD of a configuration file resized by `--data-size` / `--sf` (the file's spare
/// factor when only the size is given); unchanged when neither changes anything.
pub fn resize_ssd(ssd: &SsdConfig, bytes: Option<u64>, sf: Option<f64>) -> SsdConfig {
    let cap = bytes.unwrap_or(ssd.logical_bytes);
    if cap == ssd.logical_bytes && sf.is_none() {
        return ssd.clone();
    }
    let sf = sf.unwrap_or(ssd.capacity().spare_factor);
    let sized = SsdConfig::sized(ssd.geometry.clone(), cap, sf);
    SsdConfig {
        geometry: sized.geometry,
        logical_bytes: cap,
        ..ssd.clone()
    }
}

/// Output and configuration-file options shared by the engine benchmarks.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RunOutput {
    /// Print the summaries as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write the benchmark report (input of `wafer report`) here.
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// A TOML file holding a full benchmark configuration (`--dump-config` prints one). Flags
    /// given explicitly override it; the preset of each run comes from --configs, and an
    /// `[engine.out_of_place]` table changes only the keys it names of the preset's settings.
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// Print the configuration of the first run as TOML and exit.
    #[arg(long)]
    pub dump_config: bool,
}

impl RunOutput {
    /// The file of `--config`, if given, read once.
    pub fn config_file<T: serde::de::DeserializeOwned>(
        &self,
    ) -> Result<Option<ConfigFile<T>>, CliError> {
        self.config.as_deref().map(read_config).transpose()
    }
}

/// Errors of a subcommand, by exit code.
#[derive(Debug)]
pub enum CliError {
    /// Bad arguments or configuration (exit code 2).
    Usage(String),
    /// The run itself failed (exit code 1).
    Run(String),
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Run(_) => 1,
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Run(m) => f.write_str(m),
        }
    }
}

/// wafer: a flash-aware storage engine and flash SSD simulator.
#[derive(Parser, Debug)]
#[command(name = "wafer", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Compare every write path of the engine on YCSB-A over a simulated SSD (about two minutes)
    Demo(demo::DemoArgs),
    /// Benchmarks: YCSB and TPC-C on the engine (virtual time), wall-clock engine throughput, device-only
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Run a synthetic workload on a simulated flash SSD (flashsim) and report write
    /// amplification, GC, latency and wear
    Sim(Box<sim::SimArgs>),
    /// Render result files (the JSON of `wafer bench ycsb/tpcc/device/query`, `wafer demo` and
    /// `wafer sim`) as one self-contained HTML page with comparison tables and charts
    Report(report::ReportArgs),
    /// The engine's randomized torture suite: power cuts (also during recovery), damaged
    /// databases and concurrent transfers, checked against an oracle; deterministic by seed
    Torture(torture::TortureArgs),
    /// A simulated SSD under unmodified programs: `wafer ssd mount MOUNTPOINT` exposes one
    /// through FUSE as MOUNTPOINT/disk with a live MOUNTPOINT/stats.json
    #[command(subcommand)]
    Ssd(ssd::SsdCommand),
    /// An unmodified database on the simulated SSD (FUSE, a loop device and a real file
    /// system): what it writes, what reaches the device, what the flash programs
    Realdb(Box<realdb::RealdbArgs>),
}

/// Runs the parsed command line.
pub fn dispatch(cli: &Cli) -> Result<(), CliError> {
    match &cli.command {
        Command::Sim(args) => sim::main(args),
        Command::Demo(args) => demo::main(args),
        Command::Report(args) => report::main(args),
        Command::Bench(cmd) => bench::main(cmd),
        Command::Torture(args) => torture::main(args),
        Command::Ssd(cmd) => ssd::main(cmd),
        Command::Realdb(args) => realdb::main(args),
    }
}
