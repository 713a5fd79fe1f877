//! fio as a check of the mount path: 4 KiB random writes over the whole device (4 x its
//! capacity, `--norandommap`, psync) straight on the FUSE file, after the same sequential fill
//! `wafer sim` does; then the model alone (`wafer sim`'s run, uniform 4 KiB writes, the same
//! device and fill) in process. The two SSD WAFs must agree within [`AGREEMENT_PCT`] (they draw
//! different random offsets, so they agree within the randomness of a uniform pattern).

use super::{run_cmd, DbWrites, DevCounters, RealdbError, Recipe, Rig};
use std::process::Command;

/// How far the mount's SSD WAF may be from the model's, in percent.
pub const AGREEMENT_PCT: f64 = 2.0;

/// The fio recipe.
pub struct Fio {
    /// The device, for the model's run.
    pub cfg: flashsim::SsdConfig,
    /// Host bytes written, as a multiple of the capacity.
    pub capacity_multiple: u64,
}

impl Recipe for Fio {
    fn name(&self) -> &'static str {
        "fio"
    }

    fn tools(&self) -> Vec<(String, &'static str)> {
        vec![("fio".into(), "fio")]
    }

    fn needs_fs(&self) -> bool {
        false
    }

    fn settings(&self) -> Vec<String> {
        vec![
            "fio 4 KiB random writes through the mount".into(),
            "wafer sim: the model alone, same device".into(),
        ]
    }

    fn workload(&self) -> String {
        format!(
            "4 KiB uniform random writes, {} x the capacity, after a sequential fill; no file \
             system",
            self.capacity_multiple
        )
    }

    fn run(&self, i: usize, rig: &Rig) -> Result<(DbWrites, DevCounters, f64), RealdbError> {
        let cap = self.cfg.logical_bytes;
        let total = cap * self.capacity_multiple;
        let db = DbWrites {
            txns: total / 4096,
            bytes: total,
            source: "bytes fio (or the model's workload) wrote".into(),
            detail: Default::default(),
        };
        if i == 0 {
            let disk = rig.disk();
            let (_, dev, wall) = rig.measure(|| {
                run_cmd(
                    Command::new("fio")
                        .args(["--name=rand", "--rw=randwrite", "--bs=4k"])
                        .args(["--norandommap", "--randrepeat=1", "--ioengine=psync"])
                        .arg("--end_fsync=1")
                        .arg(format!("--filename={}", disk.display()))
                        .arg(format!("--size={cap}"))
                        .arg(format!("--io_size={total}")),
                    "fio",
                )
            })?;
            return Ok((db, dev, wall));
        }
        let t0 = std::time::Instant::now();
        let mut cfg = self.cfg.clone();
        cfg.data = flashsim::DataMode::WafOnly;
        let params = wafer_workloads::simrun::RunParams {
            capacity_multiple: self.capacity_multiple as f64,
            precondition: true,
            queue_depth: 1,
            ..Default::default()
        };
        let s = wafer_workloads::simrun::run(
            cfg,
            &wafer_workloads::synthetic::Workload::default(),
            &params,
            &mut wafer_workloads::simrun::Quiet,
        )
        .map_err(|e| RealdbError::Rig(format!("the model's run: {e}")))?;
        let (end, start) = (&s.counters, &s.counters_run_start);
        let dev = DevCounters {
            host_write_bytes: end.host_write_bytes - start.host_write_bytes,
            media_write_bytes: end.media_write_bytes - start.media_write_bytes,
            flushes: end.flushes - start.flushes,
            gc_runs: end.gc_runs - start.gc_runs,
            erases: end.block_erases - start.block_erases,
        };
        Ok((db, dev, t0.elapsed().as_secs_f64()))
    }
}
