//! Crash experiments (`wafer realdb ... --crash`): a client inserts numbered rows, one committed
//! transaction each, and prints each number once its commit returned. After a given number of
//! acknowledged commits the device's power is cut and left off (its write cache is lost without
//! power-loss protection; every later I/O fails, as on a dead drive), the database and its
//! client are killed, the file system and loop device are dropped with whatever they still held
//! (as a machine's power cut drops its page cache), the device is powered on, the file system
//! mounted again (its journal replays) and the database opened: it must recover by itself, hold
//! every acknowledged row, no gap, and pass its own integrity check.

use super::postgres::{numbers, Server};
use super::{run_cmd, RealdbError, Reaped, Rig};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// One crash and recovery.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CrashResult {
    /// The database's setting (e.g. `journal_mode=WAL`).
    pub setting: String,
    /// Commits the client saw return before the cut.
    pub acknowledged: u64,
    /// Rows present after recovery.
    pub found: u64,
    /// Mapping units of the device's write cache the cut lost.
    pub lost_units: u64,
    /// The device's flushes before the cut (the database's and file system's cache flushes).
    pub flushes_before_cut: u64,
    /// Whether the database promises, in this setting, that a commit that returned survives a
    /// power cut (SQLite's DELETE journal with synchronous=FULL does not: the journal's
    /// deletion, its commit point, is not synced).
    pub durable_promised: bool,
    /// Whether the database opened, passed its check, holds no gap, and holds every
    /// acknowledged row where it promises to.
    pub recovered: bool,
    /// What the check said.
    pub check: String,
}

/// A database setting that a crash experiment runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// SQLite with a journal mode and a `synchronous` level.
    Sqlite(&'static str, &'static str),
    /// PostgreSQL with full-page writes on or off.
    Postgres(bool),
}

impl Setting {
    /// SQLite's: the rollback journal with synchronous=FULL (which does not promise the last
    /// commit) and EXTRA, and the WAL with FULL.
    pub fn sqlite() -> Vec<Setting> {
        vec![
            Setting::Sqlite("DELETE", "FULL"),
            Setting::Sqlite("DELETE", "EXTRA"),
            Setting::Sqlite("WAL", "FULL"),
        ]
    }

    /// PostgreSQL's: full-page writes on (off promises nothing on a device whose atomic unit is
    /// smaller than its 8 KiB page).
    pub fn postgres() -> Vec<Setting> {
        vec![Setting::Postgres(true)]
    }

    /// Runs the experiment on a fresh rig, cutting after `after` acknowledged commits.
    pub fn run(self, rig: &mut Rig, after: u64) -> Result<CrashResult, RealdbError> {
        match self {
            Setting::Sqlite(mode, sync) => sqlite(rig, mode, sync, after),
            Setting::Postgres(fpw) => postgres(rig, fpw, after),
        }
    }
}

/// Writes the device completes between the `after`-th acknowledgement and the cut: 1 to 16,
/// varied with `after` so that repeated crashes land at different points of a transaction
/// (or of a checkpoint).
fn writes_before_cut(after: u64) -> u64 {
    1 + after.wrapping_mul(2_654_435_761) % 16
}

/// Rows each writer's script holds (it is killed long before the end).
const SCRIPT_ROWS: u64 = 1_000_000;

/// Reads acknowledged row numbers from `child`'s stdout until `want` of them came; cuts the
/// power right after the device's next `writes` writes; returns the highest number
/// acknowledged before the cut and the units lost.
fn cut_after(
    child: &mut Reaped,
    rig: &Rig,
    want: u64,
    writes: u64,
) -> Result<(u64, u64), RealdbError> {
    let out = child
        .0
        .stdout
        .take()
        .ok_or_else(|| RealdbError::Rig("the writer has no stdout".into()))?;
    let (tx, rx) = mpsc::channel::<u64>();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if let Ok(n) = line.trim().parse::<u64>() {
                if tx.send(n).is_err() {
                    break;
                }
            }
        }
    });
    let mut acked = 0;
    while acked < want {
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(n) => acked = acked.max(n),
            Err(_) => {
                return Err(RealdbError::Rig(format!(
                    "the writer stopped after {acked} of {want} commits before the cut"
                )))
            }
        }
    }
    let lost = rig.power_off_after(writes, Duration::from_secs(5));
    // Commits acknowledged between `want` and the cut were made durable before it (their
    // flushes completed before the cut): the count is taken now, from what has arrived.
    while let Ok(n) = rx.try_recv() {
        acked = acked.max(n);
    }
    Ok((acked, lost))
}

/// The result of a crash: (acknowledged, units lost, flushes before the cut), (rows found,
/// highest row), (the check's words, whether it passed).
fn result(
    (setting, durable_promised): (&str, bool),
    (acked, lost, flushes): (u64, u64, u64),
    (found, max): (u64, u64),
    (check, check_ok): (String, bool),
) -> CrashResult {
    let recovered = check_ok && found == max && (found >= acked || !durable_promised);
    CrashResult {
        setting: setting.to_string(),
        durable_promised,
        acknowledged: acked,
        found,
        lost_units: lost,
        flushes_before_cut: flushes,
        recovered,
        check: format!("{check}; {found} rows, highest {max}, {acked} acknowledged"),
    }
}

/// SQLite: the sqlite3 CLI inserts rows `1..` (autocommit) in journal `mode` with
/// `synchronous` and prints each number after its insert; after the cut and restart,
/// `PRAGMA integrity_check` and the rows are checked.
pub fn sqlite(
    rig: &mut Rig,
    mode: &str,
    synchronous: &str,
    after: u64,
) -> Result<CrashResult, RealdbError> {
    let db = rig.dir().join("c.db");
    let script = rig.run_dir().join("crash.sql");
    let mut sql = format!(
        "PRAGMA journal_mode={mode};\nPRAGMA synchronous={synchronous};\nCREATE TABLE c(id INTEGER \
         PRIMARY KEY, v BLOB);\n"
    );
    for i in 1..=SCRIPT_ROWS.min(after * 4 + 1000) {
        let _ = writeln!(
            sql,
            "INSERT INTO c VALUES({i}, randomblob(300));\nSELECT {i};"
        );
    }
    std::fs::write(&script, sql).map_err(|e| RealdbError::Rig(e.to_string()))?;
    let before = rig.counters()?;
    let mut child = Reaped(
        Command::new("stdbuf")
            .args(["-oL", "sqlite3", "-bail"])
            .arg(&db)
            .arg(format!(".read {}", script.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| RealdbError::Command {
                what: "sqlite3".into(),
                detail: e.to_string(),
            })?,
    );
    let (acked, lost) = cut_after(&mut child, rig, after, writes_before_cut(after))?;
    let flushes = rig_flushes(rig).saturating_sub(before.flushes);
    drop(child);
    rig.restart()?;
    let out = run_cmd(
        Command::new("sqlite3")
            .arg(&db)
            .arg("PRAGMA integrity_check; SELECT count(*) || ' ' || coalesce(max(id), 0) FROM c;"),
        "sqlite3 after the crash",
    )?;
    let mut lines = out.lines();
    let check = lines.next().unwrap_or("").trim().to_string();
    let (found, max) = lines
        .next()
        .and_then(|l| l.split_once(' '))
        .and_then(|(a, b)| Some((a.parse().ok()?, b.trim().parse().ok()?)))
        .ok_or_else(|| RealdbError::Parse {
            what: "the row count after the crash".into(),
            output: out.clone(),
        })?;
    let ok = check == "ok";
    // SQLite's documentation: in DELETE mode only EXTRA syncs the directory after the journal's
    // unlink, which is the commit.
    let promised = mode != "DELETE" || synchronous == "EXTRA";
    Ok(result(
        (
            &format!("journal_mode={mode}, synchronous={synchronous}"),
            promised,
        ),
        (acked, lost, flushes),
        (found, max),
        (format!("integrity_check: {check}"), ok),
    ))
}

/// The device's flushes so far (no sync: the device may be off).
fn rig_flushes(rig: &Rig) -> u64 {
    let d = rig.device().lock().unwrap_or_else(|p| p.into_inner());
    d.ssd.counters().flushes
}

/// PostgreSQL: psql inserts rows `1..` (autocommit), with a `CHECKPOINT` every 250 rows so
/// cuts also land inside checkpoints, and echoes each number after its insert; after the cut
/// and restart the server recovers from its WAL, and amcheck's `bt_index_check` (with every
/// heap tuple looked up in the index) and the rows are checked.
pub fn postgres(
    rig: &mut Rig,
    full_page_writes: bool,
    after: u64,
) -> Result<CrashResult, RealdbError> {
    let data = rig.dir().join("pg");
    let settings = super::postgres::Postgres::server_settings(full_page_writes);
    let server = Server::start(rig, &data, &settings)?;
    server.sql("CREATE TABLE c(id int PRIMARY KEY, v text)")?;
    server.sql("CHECKPOINT")?;
    let mut script = String::new();
    for i in 1..=SCRIPT_ROWS.min(after * 4 + 1000) {
        let _ = writeln!(
            script,
            "INSERT INTO c VALUES ({i}, repeat(md5('{i}'), 10));\n\\echo {i}"
        );
        if i % 250 == 0 {
            script.push_str("CHECKPOINT;\n");
        }
    }
    let file = rig.run_dir().join("crash.sql");
    std::fs::write(&file, script).map_err(|e| RealdbError::Rig(e.to_string()))?;
    let before = rig.counters()?;
    let psql = server.psql();
    let mut c = Command::new("stdbuf");
    c.arg("-oL")
        .arg(psql.get_program())
        .args(psql.get_args())
        .arg("-q")
        .arg("-f")
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = Reaped(c.spawn().map_err(|e| RealdbError::Command {
        what: "psql".into(),
        detail: e.to_string(),
    })?);
    let (acked, lost) = cut_after(&mut child, rig, after, writes_before_cut(after))?;
    let flushes = rig_flushes(rig).saturating_sub(before.flushes);
    server.abandon();
    drop(child);
    rig.restart()?;
    let server = Server::start(rig, &data, &settings)?;
    let v = numbers(&server.sql("SELECT count(*), coalesce(max(id), 0) FROM c")?)?;
    let check = server
        .sql("CREATE EXTENSION IF NOT EXISTS amcheck")
        .and_then(|_| server.sql("SELECT bt_index_check('c_pkey', true)"));
    let (check, ok) = match check {
        Ok(_) => (
            "amcheck bt_index_check(heapallindexed): ok".to_string(),
            true,
        ),
        Err(e) => (format!("amcheck: {e}"), false),
    };
    drop(server);
    Ok(result(
        (
            &format!(
                "full_page_writes={}",
                if full_page_writes { "on" } else { "off" }
            ),
            true,
        ),
        (acked, lost, flushes),
        (v[0], v[1]),
        (check, ok),
    ))
}
