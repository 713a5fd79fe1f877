//! MariaDB (Debian's server package) with sysbench's `oltp_write_only`: InnoDB's doublewrite
//! buffer on and off (paper 002's in-place baseline). The server runs as the `mysql` user with a
//! buffer pool smaller than the tables (pages are written back during the load, as in paper
//! 002's setting), O_DIRECT data files, a durable commit (`innodb_flush_log_at_trx_commit=1`),
//! and sysbench's seed fixed. At the end of the load every dirty page is written
//! (`innodb_max_dirty_pages_pct=0`, waiting for none to be left), so each run does the same
//! work. The database's bytes: `Innodb_data_written` (data files and doublewrite buffer) plus
//! `Innodb_os_log_written` (the redo log).

use super::{
    dir_for, log_tail, parse_pairs, run_cmd, wait_for, DbWrites, DevCounters, RealdbError, Reaped,
    Recipe, Rig,
};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The MariaDB recipe.
pub struct Mariadb {
    /// sysbench tables.
    pub tables: u64,
    /// Rows per table.
    pub rows: u64,
    /// Transactions of the measured load.
    pub txns: u64,
    /// sysbench threads.
    pub clients: u64,
    /// InnoDB's buffer pool, MiB.
    pub buffer_pool_mib: u64,
}

/// A running server; shut down (or killed) when dropped.
struct Server {
    child: Reaped,
    sock: PathBuf,
}

impl Server {
    fn start(rig: &Rig, doublewrite: bool, pool_mib: u64) -> Result<Server, RealdbError> {
        let data = rig.dir().join("mysql");
        let run = rig.run_dir().join("mysql");
        dir_for(&data, "mysql")?;
        dir_for(&run, "mysql")?;
        run_cmd(
            Command::new("mariadb-install-db")
                .args(["--no-defaults", "--user=mysql", "--skip-test-db"])
                .arg(format!("--datadir={}", data.display()))
                .arg("--auth-root-authentication-method=normal"),
            "mariadb-install-db",
        )?;
        let sock = run.join("mysqld.sock");
        let log = run.join("error.log");
        let child = Command::new("mariadbd")
            .args(["--no-defaults", "--user=mysql", "--skip-networking"])
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", sock.display()))
            .arg(format!("--pid-file={}", run.join("mysqld.pid").display()))
            .arg(format!("--log-error={}", log.display()))
            .arg(format!("--innodb-buffer-pool-size={pool_mib}M"))
            .args([
                "--innodb-log-file-size=256M",
                "--innodb-flush-log-at-trx-commit=1",
                "--innodb-flush-method=O_DIRECT",
                "--innodb-stats-persistent=0",
                "--skip-log-bin",
            ])
            .arg(format!(
                "--innodb-doublewrite={}",
                if doublewrite { "ON" } else { "OFF" }
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| RealdbError::Command {
                what: "mariadbd".into(),
                detail: e.to_string(),
            })?;
        let s = Server {
            child: Reaped(child),
            sock,
        };
        if !wait_for(60, || s.sql("SELECT 1").is_ok()) {
            return Err(RealdbError::Timeout("MariaDB", 60, log_tail(&log)));
        }
        Ok(s)
    }

    fn sql(&self, sql: &str) -> Result<String, RealdbError> {
        run_cmd(
            Command::new("mariadb")
                .arg(format!("--socket={}", self.sock.display()))
                .args(["-uroot", "-N", "-B", "-e", sql]),
            "mariadb",
        )
    }

    fn sysbench(&self, m: &Mariadb) -> Command {
        let mut c = Command::new("sysbench");
        c.arg("oltp_write_only")
            .args(["--db-driver=mysql", "--mysql-user=root", "--rand-seed=1"])
            .arg(format!("--mysql-socket={}", self.sock.display()))
            .arg(format!("--tables={}", m.tables))
            .arg(format!("--table-size={}", m.rows));
        c
    }

    /// Status counters by name.
    fn status(&self, keys: &[&str]) -> Result<Vec<u64>, RealdbError> {
        let out = self.sql("SHOW GLOBAL STATUS LIKE 'Innodb%'")?;
        parse_pairs(&out, '\t', keys)
    }

    /// Writes back every dirty page and waits until none is left (at most 10 minutes).
    fn write_back_all(&self) -> Result<(), RealdbError> {
        self.sql("SET GLOBAL innodb_max_dirty_pages_pct_lwm=0")?;
        self.sql("SET GLOBAL innodb_max_dirty_pages_pct=0")?;
        let clean = wait_for(600, || {
            self.status(&["Innodb_buffer_pool_pages_dirty"])
                .map(|v| v[0] == 0)
                .unwrap_or(false)
        });
        self.sql("SET GLOBAL innodb_max_dirty_pages_pct=90")?;
        if clean {
            Ok(())
        } else {
            Err(RealdbError::Rig(
                "InnoDB did not write back its dirty pages within 10 minutes".into(),
            ))
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("mariadb-admin")
            .arg(format!("--socket={}", self.sock.display()))
            .args(["-uroot", "shutdown"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        wait_for(60, || matches!(self.child.0.try_wait(), Ok(Some(_))));
    }
}

/// Transactions sysbench reports.
fn transactions(out: &str) -> Result<u64, RealdbError> {
    out.lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("transactions:")
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
        })
        .ok_or_else(|| RealdbError::Parse {
            what: "sysbench's transaction count".into(),
            output: out.chars().take(400).collect(),
        })
}

const KEYS: [&str; 4] = [
    "Innodb_data_written",
    "Innodb_os_log_written",
    "Innodb_dblwr_pages_written",
    "Innodb_pages_written",
];

impl Recipe for Mariadb {
    fn name(&self) -> &'static str {
        "mariadb"
    }

    fn tools(&self) -> Vec<(String, &'static str)> {
        vec![
            ("mariadbd".into(), "mariadb-server"),
            ("mariadb-install-db".into(), "mariadb-server"),
            ("mariadb".into(), "mariadb-client"),
            ("sysbench".into(), "sysbench"),
        ]
    }

    fn settings(&self) -> Vec<String> {
        vec![
            "innodb_doublewrite=ON".into(),
            "innodb_doublewrite=OFF".into(),
        ]
    }

    fn workload(&self) -> String {
        format!(
            "sysbench oltp_write_only, {} tables x {} rows, {} threads, {} transactions, {} MiB \
             buffer pool",
            self.tables, self.rows, self.clients, self.txns, self.buffer_pool_mib
        )
    }

    fn run(&self, i: usize, rig: &Rig) -> Result<(DbWrites, DevCounters, f64), RealdbError> {
        let server = Server::start(rig, i == 0, self.buffer_pool_mib)?;
        server.sql("CREATE DATABASE sbtest")?;
        run_cmd(
            server
                .sysbench(self)
                .arg(format!("--threads={}", self.clients.clamp(1, self.tables)))
                .arg("prepare"),
            "sysbench prepare",
        )?;
        server.write_back_all()?;
        let before = server.status(&KEYS)?;
        let (txns, dev, wall) = rig.measure(|| {
            let out = run_cmd(
                server
                    .sysbench(self)
                    .arg(format!("--threads={}", self.clients.max(1)))
                    .arg(format!("--events={}", self.txns))
                    .args(["--time=0", "run"]),
                "sysbench run",
            )?;
            server.write_back_all()?;
            transactions(&out)
        })?;
        let after = server.status(&KEYS)?;
        let d: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        drop(server);
        let detail = [
            ("data_bytes", d[0]),
            ("log_bytes", d[1]),
            ("doublewrite_pages", d[2]),
            ("pages_written", d[3]),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        Ok((
            DbWrites {
                txns,
                bytes: d[0] + d[1],
                source: "Innodb_data_written (data files + doublewrite) + Innodb_os_log_written"
                    .into(),
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
    fn sysbench_count() {
        let out = "SQL statistics:\n    transactions:                        4000   (863.10 \
                   per sec.)\n";
        assert_eq!(transactions(out).unwrap(), 4000);
        assert!(transactions("none").is_err());
    }
}
