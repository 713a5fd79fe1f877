//! RocksDB's `db_bench` (Debian's rocksdb-tools): `fillrandom` loads the keys (not measured),
//! then `overwrite` rewrites random keys (measured), with leveled and with universal
//! compaction. Small memtables and levels (4 MiB write buffer and files, 16 MiB level base) make
//! a database of a few hundred MiB go through several levels, as a large one does; no
//! compression; the WAL on, not synced per write; seeds fixed. The load ends with a memtable
//! flush and a full compaction (`flush,compact`), so every run's measured phase starts from the
//! same compacted database; the measured phase ends with a flush (db_bench's
//! `waitforcompaction` does not return under universal compaction, so compactions still
//! running at the end are cut short by the close, the main source of run-to-run spread).
//! The database's bytes:
//! `rocksdb.wal.bytes` + `rocksdb.flush.write.bytes` + `rocksdb.compact.write.bytes` of its
//! `--statistics`.

use super::{parse_pairs, run_cmd, DbWrites, DevCounters, RealdbError, Recipe, Rig};
use std::process::Command;

/// The RocksDB recipe.
pub struct Rocksdb {
    /// Keys loaded by fillrandom (and the key space of overwrite).
    pub keys: u64,
    /// Writes of the measured overwrite.
    pub writes: u64,
    /// Value size in bytes.
    pub value_bytes: u64,
}

const STYLES: [(&str, &str); 2] = [("leveled", "0"), ("universal", "1")];

const KEYS: [&str; 3] = [
    "rocksdb.wal.bytes",
    "rocksdb.flush.write.bytes",
    "rocksdb.compact.write.bytes",
];

impl Rocksdb {
    fn db_bench(&self, rig: &Rig, style: &str) -> Command {
        let mut c = Command::new("db_bench");
        c.arg(format!("--db={}", rig.dir().join("rocksdb").display()))
            .arg(format!("--num={}", self.keys))
            .arg(format!("--value_size={}", self.value_bytes))
            .arg(format!("--compaction_style={style}"))
            .args([
                "--compression_type=none",
                "--write_buffer_size=4194304",
                "--target_file_size_base=4194304",
                "--max_bytes_for_level_base=16777216",
                "--threads=1",
                "--seed=1",
                "--statistics",
                "--stats_per_interval=0",
            ]);
        c
    }
}

impl Recipe for Rocksdb {
    fn name(&self) -> &'static str {
        "rocksdb"
    }

    fn tools(&self) -> Vec<(String, &'static str)> {
        vec![("db_bench".into(), "rocksdb-tools")]
    }

    fn settings(&self) -> Vec<String> {
        STYLES
            .iter()
            .map(|(s, _)| format!("{s} compaction"))
            .collect()
    }

    fn workload(&self) -> String {
        format!(
            "db_bench fillrandom of {} keys ({} B values), then {} overwrites measured",
            self.keys, self.value_bytes, self.writes
        )
    }

    fn run(&self, i: usize, rig: &Rig) -> Result<(DbWrites, DevCounters, f64), RealdbError> {
        let style = STYLES[i].1;
        run_cmd(
            self.db_bench(rig, style)
                .arg("--benchmarks=fillrandom,flush,compact"),
            "db_bench fillrandom",
        )?;
        let (out, dev, wall) = rig.measure(|| {
            run_cmd(
                self.db_bench(rig, style)
                    .args(["--benchmarks=overwrite,flush", "--use_existing_db=1"])
                    .arg(format!("--writes={}", self.writes)),
                "db_bench overwrite",
            )
        })?;
        let v = parse_pairs(&out.replace(" COUNT : ", "="), '=', &KEYS)?;
        let detail = ["wal_bytes", "flush_bytes", "compaction_bytes"]
            .iter()
            .map(|k| k.to_string())
            .zip(v.iter().copied())
            .collect();
        Ok((
            DbWrites {
                txns: self.writes,
                bytes: v.iter().sum(),
                source:
                    "rocksdb.wal.bytes + flush.write.bytes + compact.write.bytes (--statistics)"
                        .into(),
                detail,
            },
            dev,
            wall,
        ))
    }
}
