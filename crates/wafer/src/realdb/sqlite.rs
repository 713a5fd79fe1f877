//! SQLite 3 (the `sqlite3` command): one-row upserts of 100-byte values, each its own
//! transaction with `synchronous=FULL`, under the rollback journal (`journal_mode=DELETE`) and
//! the write-ahead log (`journal_mode=WAL`). SQLite keeps no write statistics of its own; the
//! database's bytes are what the sqlite3 process passed to write() (`wchar` of /proc/PID/io).

use super::{run_cmd, DbWrites, DevCounters, RealdbError, Recipe, Rig};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// The journal modes compared.
const MODES: [&str; 2] = ["DELETE", "WAL"];

/// The SQLite recipe.
pub struct Sqlite {
    /// Rows the table is filled with first (the upserts pick among them).
    pub rows: u64,
    /// Transactions of the measured load.
    pub txns: u64,
}

/// Runs an SQL script with the sqlite3 CLI on `dir/t.db`; returns its output.
pub fn sqlite(dir: &Path, script_dir: &Path, name: &str, sql: &str) -> Result<String, RealdbError> {
    let script = script_dir.join(name);
    std::fs::write(&script, sql)
        .map_err(|e| RealdbError::Rig(format!("writing {}: {e}", script.display())))?;
    run_cmd(
        Command::new("sqlite3")
            .arg(dir.join("t.db"))
            .arg(format!(".read {}", script.display())),
        "sqlite3",
    )
}

impl Sqlite {
    /// Creates the table in `mode` and fills it in one transaction.
    fn setup(&self, rig: &Rig, mode: &str) -> Result<(), RealdbError> {
        let sql = format!(
            "PRAGMA journal_mode={mode};\nCREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB);\nBEGIN;\n\
             WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {}) \
             INSERT INTO t SELECT i, randomblob(100) FROM n;\nCOMMIT;\n",
            self.rows
        );
        sqlite(&rig.dir(), &rig.run_dir(), "setup.sql", &sql).map(|_| ())
    }

    /// The measured upserts; returns the bytes the sqlite3 process passed to write().
    fn load(&self, rig: &Rig) -> Result<u64, RealdbError> {
        let mut sql = String::from("PRAGMA synchronous=FULL;\n");
        for _ in 0..self.txns {
            let _ = writeln!(
                sql,
                "BEGIN; INSERT OR REPLACE INTO t VALUES(abs(random()) % {}, randomblob(100)); \
                 COMMIT;",
                self.rows
            );
        }
        sql.push_str(".shell grep wchar /proc/$PPID/io\n");
        let out = sqlite(&rig.dir(), &rig.run_dir(), "load.sql", &sql)?;
        out.lines()
            .filter_map(|l| l.strip_prefix("wchar:"))
            .find_map(|v| v.trim().parse().ok())
            .ok_or_else(|| RealdbError::Parse {
                what: "sqlite3's write counters".into(),
                output: out.chars().take(400).collect(),
            })
    }
}

impl Recipe for Sqlite {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn tools(&self) -> Vec<(String, &'static str)> {
        vec![("sqlite3".into(), "sqlite3")]
    }

    fn settings(&self) -> Vec<String> {
        MODES.iter().map(|m| format!("journal_mode={m}")).collect()
    }

    fn workload(&self) -> String {
        format!(
            "one-row upserts of 100 B into {} rows, one per transaction, synchronous=FULL",
            self.rows
        )
    }

    fn run(&self, i: usize, rig: &Rig) -> Result<(DbWrites, DevCounters, f64), RealdbError> {
        self.setup(rig, MODES[i])?;
        let (bytes, dev, wall) = rig.measure(|| self.load(rig))?;
        let db = DbWrites {
            txns: self.txns,
            bytes,
            source: "write() bytes of the sqlite3 process (/proc/PID/io wchar)".into(),
            detail: [("write_bytes".to_string(), bytes)].into_iter().collect(),
        };
        Ok((db, dev, wall))
    }
}
