//! PostgreSQL (Debian's server package) with pgbench's TPC-B-like transaction: full-page
//! writes on and off, and checkpoints every N transactions (two spacings). The server runs as
//! the `postgres` user with autovacuum and the background writer off (so that, run twice, it
//! writes the same pages), `shared_buffers` large enough to cache the database (pages then reach
//! the device only at checkpoints, as in paper 000's setting), no time- or size-triggered
//! checkpoints (`CHECKPOINT` is issued between chunks of the load and once at its end).
//! The database's bytes: `pg_stat_wal.wal_bytes` plus 8 KiB per buffer written
//! (`pg_stat_bgwriter`: by checkpoints, the cleaner and backends).

use super::{
    as_user, dir_for, log_tail, run_cmd, wait_for, DbWrites, DevCounters, RealdbError, Recipe, Rig,
};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The port of the server's socket (only a Unix socket in the run directory is opened).
const PORT: &str = "55432";

/// The PostgreSQL recipe.
pub struct Postgres {
    /// pgbench's scale factor (100,000 accounts each, about 15 MiB).
    pub scale: u64,
    /// Transactions of the measured load.
    pub txns: u64,
    /// pgbench clients (and threads).
    pub clients: u64,
    /// The checkpoint spacings compared, in transactions.
    pub checkpoint_every: Vec<u64>,
}

/// The newest installed server's bin directory (/usr/lib/postgresql/N/bin).
pub fn bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, b)| b)
}

/// A running server on a data directory; stopped (fast) when dropped.
pub struct Server {
    bin: PathBuf,
    data: PathBuf,
    sock: PathBuf,
}

impl Server {
    /// Initialises `data` (not synced: the load is measured after a `sync`) when it is new and
    /// starts a server on it with `settings` (`name=value`).
    pub fn start(rig: &Rig, data: &Path, settings: &[String]) -> Result<Server, RealdbError> {
        let bin = bin_dir().ok_or_else(|| {
            RealdbError::Missing("a PostgreSQL server (apt-get install postgresql)".into())
        })?;
        let sock = rig.run_dir().join("pg");
        dir_for(&sock, "postgres")?;
        if !data.join("PG_VERSION").exists() {
            dir_for(data, "postgres")?;
            let mut c = Command::new(bin.join("initdb"));
            c.args(["--no-sync", "-A", "trust", "-U", "postgres", "-D"])
                .arg(data);
            as_user(&mut c, "postgres")?;
            run_cmd(&mut c, "initdb")?;
        }
        let log = sock.join("server.log");
        let mut opts = format!("-k {} -p {PORT} -c listen_addresses=''", sock.display());
        for s in settings {
            opts.push_str(&format!(" -c {s}"));
        }
        let mut c = Command::new(bin.join("pg_ctl"));
        c.args(["-w", "-t", "120", "-D"])
            .arg(data)
            .arg("-l")
            .arg(&log)
            .args(["-o", &opts, "start"]);
        as_user(&mut c, "postgres")?;
        run_cmd(&mut c, "starting PostgreSQL").map_err(|e| RealdbError::Command {
            what: "starting PostgreSQL".into(),
            detail: format!("{e}; server log: {}", log_tail(&log)),
        })?;
        let s = Server {
            bin,
            data: data.to_path_buf(),
            sock,
        };
        if !wait_for(60, || s.sql("SELECT 1").is_ok()) {
            return Err(RealdbError::Timeout("PostgreSQL", 60, log_tail(&log)));
        }
        Ok(s)
    }

    /// Runs SQL with psql (unaligned, tuples only); its output.
    pub fn sql(&self, sql: &str) -> Result<String, RealdbError> {
        run_cmd(
            Command::new("psql")
                .args([
                    "-X",
                    "-A",
                    "-t",
                    "-q",
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-U",
                    "postgres",
                ])
                .arg("-h")
                .arg(&self.sock)
                .args(["-p", PORT, "-d", "postgres", "-c", sql]),
            "psql",
        )
    }

    /// A psql command on the server (for a script on stdin).
    pub fn psql(&self) -> Command {
        let mut c = Command::new("psql");
        c.args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-U", "postgres"])
            .arg("-h")
            .arg(&self.sock)
            .args(["-p", PORT, "-d", "postgres"]);
        c
    }

    /// A pgbench command on the server.
    fn pgbench(&self) -> Command {
        let mut c = Command::new("pgbench");
        c.args(["-U", "postgres"])
            .arg("-h")
            .arg(&self.sock)
            .args(["-p", PORT, "-d", "postgres"]);
        c
    }

    /// Forgets the server without stopping it (after a power cut: [`Rig::restart`] kills
    /// it with everything else that uses the file system).
    pub fn abandon(self) {
        std::mem::forget(self);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let mut c = Command::new(self.bin.join("pg_ctl"));
        c.args(["-w", "-m", "fast", "-D"])
            .arg(&self.data)
            .arg("stop");
        if as_user(&mut c, "postgres").is_ok() {
            let _ = run_cmd(&mut c, "stopping PostgreSQL");
        }
    }
}

impl Postgres {
    /// The settings of run `i`: full-page writes, then the spacing.
    fn setting(&self, i: usize) -> (bool, u64) {
        let n = self.checkpoint_every.len();
        (i / n == 0, self.checkpoint_every[i % n])
    }

    /// The server settings of a run.
    pub fn server_settings(full_page_writes: bool) -> Vec<String> {
        [
            format!(
                "full_page_writes={}",
                if full_page_writes { "on" } else { "off" }
            ),
            "shared_buffers=512MB".into(),
            "checkpoint_timeout=1d".into(),
            "max_wal_size=64GB".into(),
            "autovacuum=off".into(),
            "bgwriter_lru_maxpages=0".into(),
            "synchronous_commit=on".into(),
            "wal_compression=off".into(),
        ]
        .to_vec()
    }
}

/// The numbers of one row of psql's unaligned output (`a|b|c`).
pub fn numbers(out: &str) -> Result<Vec<u64>, RealdbError> {
    out.trim()
        .split('|')
        .map(|v| {
            v.trim().parse().map_err(|_| RealdbError::Parse {
                what: "a number".into(),
                output: out.chars().take(400).collect(),
            })
        })
        .collect()
}

/// Transactions pgbench reports it processed.
fn processed(out: &str) -> Result<u64, RealdbError> {
    out.lines()
        .find_map(|l| {
            l.strip_prefix("number of transactions actually processed:")
                .and_then(|v| v.trim().split('/').next())
                .and_then(|v| v.trim().parse().ok())
        })
        .ok_or_else(|| RealdbError::Parse {
            what: "pgbench's transaction count".into(),
            output: out.chars().take(400).collect(),
        })
}

impl Recipe for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn tools(&self) -> Vec<(String, &'static str)> {
        let server = bin_dir()
            .map(|b| b.join("postgres").to_string_lossy().into_owned())
            .unwrap_or_else(|| "/usr/lib/postgresql/15/bin/postgres".into());
        vec![
            (server, "postgresql"),
            ("pgbench".into(), "postgresql-contrib"),
            ("psql".into(), "postgresql-client"),
        ]
    }

    fn settings(&self) -> Vec<String> {
        (0..2 * self.checkpoint_every.len())
            .map(|i| {
                let (fpw, every) = self.setting(i);
                format!(
                    "full_page_writes={}, checkpoint every {every} txns",
                    if fpw { "on" } else { "off" }
                )
            })
            .collect()
    }

    fn workload(&self) -> String {
        format!(
            "pgbench TPC-B-like, scale {} ({} accounts), {} clients, {} transactions",
            self.scale,
            self.scale * 100_000,
            self.clients,
            self.txns
        )
    }

    fn run(&self, i: usize, rig: &Rig) -> Result<(DbWrites, DevCounters, f64), RealdbError> {
        let (fpw, every) = self.setting(i);
        let data = rig.dir().join("pg");
        let server = Server::start(rig, &data, &Self::server_settings(fpw))?;
        run_cmd(
            server
                .pgbench()
                .args(["-i", "-q", "-s", &self.scale.to_string()]),
            "pgbench -i",
        )?;
        server.sql("CHECKPOINT")?;
        server.sql("SELECT pg_stat_reset_shared('wal'), pg_stat_reset_shared('bgwriter')")?;
        let clients = self.clients.max(1);
        let (txns, dev, wall) = rig.measure(|| {
            let mut done = 0;
            while done < self.txns {
                let chunk = every.min(self.txns - done);
                let per_client = chunk.div_ceil(clients);
                let out = run_cmd(
                    server.pgbench().args([
                        "-n",
                        "-c",
                        &clients.to_string(),
                        "-j",
                        &clients.to_string(),
                        "-t",
                        &per_client.to_string(),
                    ]),
                    "pgbench",
                )?;
                done += processed(&out)?;
                server.sql("CHECKPOINT")?;
            }
            Ok(done)
        })?;
        let wal = numbers(&server.sql("SELECT wal_bytes, wal_fpi, wal_records FROM pg_stat_wal")?)?;
        let bg = numbers(&server.sql(
            "SELECT buffers_checkpoint + buffers_clean + buffers_backend FROM pg_stat_bgwriter",
        )?)?;
        let keys = ["wal_bytes", "wal_fpi", "wal_records", "buffers_written"];
        let v: Vec<u64> = wal.iter().chain(&bg).copied().collect();
        if v.len() != keys.len() {
            return Err(RealdbError::Parse {
                what: "the WAL and buffer statistics".into(),
                output: format!("{v:?}"),
            });
        }
        let bytes = v[0] + 8192 * v[3];
        let mut detail: std::collections::BTreeMap<String, u64> =
            keys.iter().map(|k| k.to_string()).zip(v).collect();
        detail.insert("page_bytes".into(), bytes - detail["wal_bytes"]);
        drop(server);
        Ok((
            DbWrites {
                txns,
                bytes,
                source: "pg_stat_wal.wal_bytes + 8 KiB x buffers written (pg_stat_bgwriter)".into(),
                detail,
            },
            dev,
            wall,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_count() {
        let out = "transaction type: <builtin: TPC-B (sort of)>\nnumber of transactions \
                   actually processed: 4000/4000\ntps = 1.0";
        assert_eq!(processed(out).unwrap(), 4000);
        assert!(processed("nothing").is_err());
    }

    #[test]
    fn settings_cross_full_page_writes_with_spacing() {
        let p = Postgres {
            scale: 1,
            txns: 10,
            clients: 1,
            checkpoint_every: vec![5, 10],
        };
        let s = p.settings();
        assert_eq!(s.len(), 4);
        assert_eq!(s[0], "full_page_writes=on, checkpoint every 5 txns");
        assert_eq!(s[3], "full_page_writes=off, checkpoint every 10 txns");
    }
}
