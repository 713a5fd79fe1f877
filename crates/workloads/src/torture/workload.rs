//! The random transaction workload of the cut and mutate trials: up to three transactions open
//! at once on one thread, puts (values around and far above the inline limit), deletes, gets
//! and scans checked against the oracle, commits, aborts, dropped transactions, explicit
//! checkpoints and maintenance steps. It keeps the committed state, and the write set of a
//! commit a fatal error interrupted (present or absent after recovery, but whole).

use super::oracle::{error_class, is_fatal, State, WriteSet};
use super::{FailureClass, TrialReport};
use rand::Rng;
use rand_pcg::Pcg64Mcg;
use std::ops::Bound;
use wafer_engine::device::FaultHandle;
use wafer_engine::{Db, Error, Tree, Txn};

/// The trees every trial database has.
pub const TREES: [&str; 2] = ["a", "b"];

/// The largest value a 4 KiB leaf keeps inline next to a short key: (4096 - 64) / 3 - 2 bytes
/// of cell less 7 bytes of cell overhead and the key (see the engine's `max_inline_value`).
pub const INLINE_LIMIT_APPROX: usize = 1335 - 12;

/// Key number `n` as bytes: "k" + five digits, padded to a length that depends on `n`.
pub fn key(n: u64) -> Vec<u8> {
    let mut k = format!("k{n:05}").into_bytes();
    k.resize(6 + (n.wrapping_mul(7) % 40) as usize, b'.');
    k
}

/// A random value: empty, small, around the inline limit, or overflowing up to tens of KiB;
/// half of every value is a run (so compression has something to do).
pub fn value(rng: &mut Pcg64Mcg) -> Vec<u8> {
    let len = match rng.random_range(0..100) {
        0..4 => 0,
        4..44 => rng.random_range(1..120),
        44..66 => rng.random_range(INLINE_LIMIT_APPROX - 40..INLINE_LIMIT_APPROX + 40),
        66..92 => rng.random_range(1400..9000),
        _ => rng.random_range(9000..40_000),
    };
    let b: u8 = rng.random();
    let step: u8 = rng.random_range(1..4);
    (0..len)
        .map(|i| {
            if i % 64 < 32 {
                b
            } else {
                b.wrapping_add((i as u8).wrapping_mul(step))
            }
        })
        .collect()
}

/// The state of a workload on one open database.
pub struct Workload {
    db: Db,
    trees: Vec<Tree>,
    /// The committed state.
    pub state: State,
    /// The write set of a commit interrupted by a fatal error.
    pub maybe: Option<WriteSet>,
    open: Vec<(Txn, WriteSet)>,
    keys: u64,
    /// A fatal error (power cut, poisoned handle) ended the workload.
    pub stopped: bool,
    power: Option<FaultHandle>,
    errors_in_a_row: u32,
}

impl Workload {
    /// A workload on `db` (whose trees `TREES` exist) with committed state `state`, choosing
    /// among `keys` key numbers; `power` tells it when the power is off.
    pub fn new(
        db: &Db,
        state: State,
        keys: u64,
        power: Option<FaultHandle>,
    ) -> Result<Self, Error> {
        let trees = TREES
            .iter()
            .map(|n| db.open_tree(n))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Workload {
            db: db.clone(),
            trees,
            state,
            maybe: None,
            open: Vec::new(),
            keys: keys.max(1),
            stopped: false,
            power,
            errors_in_a_row: 0,
        })
    }

    fn powered_off(&self) -> bool {
        self.power.as_ref().is_some_and(|p| p.is_powered_off())
    }

    /// Records an error; returns true if it ends the workload.
    fn error(&mut self, e: &Error, what: &str, report: &mut TrialReport) -> bool {
        if self.powered_off() {
            self.stopped = true;
            return true;
        }
        report.workload_errors.push(if what.is_empty() {
            error_class(e)
        } else {
            format!("{what}:{}", error_class(e))
        });
        self.errors_in_a_row += 1;
        if is_fatal(e) || self.errors_in_a_row > 40 {
            if !is_fatal(e) {
                report
                    .notes
                    .push("workload stuck (40 errors in a row)".into());
            }
            self.stopped = true;
        }
        self.stopped
    }

    /// Runs up to `ops` operations; stops early on a fatal error.
    pub fn run(&mut self, rng: &mut Pcg64Mcg, ops: u64, report: &mut TrialReport) {
        for _ in 0..ops {
            if self.stopped {
                break;
            }
            self.step(rng, report);
        }
    }

    /// One random operation.
    pub fn step(&mut self, rng: &mut Pcg64Mcg, report: &mut TrialReport) {
        let n = self.open.len();
        let begin = n == 0 || (n < 3 && rng.random_bool(if n == 1 { 0.06 } else { 0.03 }));
        if begin {
            match self.db.begin() {
                Ok(t) => self.open.push((t, WriteSet::new())),
                Err(e) => {
                    self.error(&e, "begin", report);
                }
            }
            return;
        }
        let i = rng.random_range(0..n);
        let t = rng.random_range(0..self.trees.len());
        let k = key(rng.random_range(0..self.keys));
        let r = match rng.random_range(0..1000) {
            0..450 => self.put(i, t, &k, rng),
            450..570 => self.delete(i, t, &k),
            570..750 => self.get(i, t, &k, report),
            750..800 => self.scan(i, t, rng, report),
            800..920 => return self.commit(i, report),
            920..950 => return self.abort(i, report),
            950..970 => {
                // Dropped: rolled back by the drop.
                drop(self.open.swap_remove(i));
                return;
            }
            970..985 => {
                if let Err(e) = self.db.checkpoint() {
                    self.error(&e, "checkpoint", report);
                }
                return;
            }
            _ => {
                if let Err(e) = self.db.maintenance() {
                    self.error(&e, "maintenance", report);
                }
                return;
            }
        };
        match r {
            Ok(()) => self.errors_in_a_row = 0,
            Err(e) => {
                // The transaction is given up: aborted (a conflict is retried as a new one).
                let fatal = self.error(&e, "", report);
                if !fatal {
                    self.abort(i, report);
                }
            }
        }
    }

    fn put(&mut self, i: usize, t: usize, k: &[u8], rng: &mut Pcg64Mcg) -> Result<(), Error> {
        let v = value(rng);
        let (txn, ws) = &mut self.open[i];
        txn.put(&self.trees[t], k, &v)?;
        ws.insert((TREES[t].to_string(), k.to_vec()), Some(v));
        Ok(())
    }

    fn delete(&mut self, i: usize, t: usize, k: &[u8]) -> Result<(), Error> {
        let (txn, ws) = &mut self.open[i];
        txn.delete(&self.trees[t], k)?;
        ws.insert((TREES[t].to_string(), k.to_vec()), None);
        Ok(())
    }

    fn get(&mut self, i: usize, t: usize, k: &[u8], report: &mut TrialReport) -> Result<(), Error> {
        let (txn, ws) = &mut self.open[i];
        let got = txn.get(&self.trees[t], k)?;
        let want = self.state.get(ws, TREES[t], k);
        if got != want {
            report.fail(
                FailureClass::WrongRead,
                format!(
                    "get {}/{}: got {} bytes, want {}",
                    TREES[t],
                    String::from_utf8_lossy(k),
                    got.map_or(-1, |v| v.len() as i64),
                    want.map_or(-1, |v| v.len() as i64)
                ),
            );
        }
        Ok(())
    }

    fn scan(
        &mut self,
        i: usize,
        t: usize,
        rng: &mut Pcg64Mcg,
        report: &mut TrialReport,
    ) -> Result<(), Error> {
        let lo = key(rng.random_range(0..self.keys));
        let hi = key(rng.random_range(0..self.keys));
        let range = (
            if rng.random_bool(0.2) {
                Bound::Unbounded
            } else {
                Bound::Included(&lo[..])
            },
            if rng.random_bool(0.2) {
                Bound::Unbounded
            } else {
                Bound::Excluded(&hi[..])
            },
        );
        let reverse = rng.random_bool(0.3);
        let limit = rng.random_range(1..50);
        let (txn, ws) = &mut self.open[i];
        let got = txn.scan(&self.trees[t], range, reverse, limit)?;
        let want = self.state.scan(ws, TREES[t], range, reverse, limit);
        if got != want {
            report.fail(
                FailureClass::WrongRead,
                format!(
                    "scan of {} (reverse {reverse}, limit {limit}): {} pairs, want {}",
                    TREES[t],
                    got.len(),
                    want.len()
                ),
            );
        }
        Ok(())
    }

    fn commit(&mut self, i: usize, report: &mut TrialReport) {
        let (txn, ws) = self.open.swap_remove(i);
        match txn.commit() {
            Ok(()) => {
                self.state.apply(&ws);
                self.errors_in_a_row = 0;
            }
            Err(e) => {
                if self.powered_off() || is_fatal(&e) {
                    // Interrupted: the commit may or may not be durable.
                    self.maybe = Some(ws);
                }
                self.error(&e, "commit", report);
            }
        }
    }

    fn abort(&mut self, i: usize, report: &mut TrialReport) {
        let (txn, _) = self.open.swap_remove(i);
        if let Err(e) = txn.abort() {
            self.error(&e, "abort", report);
        }
    }

    /// Commits (or, with `commit` false, rolls back) every open transaction, as a clean end.
    pub fn end_all(&mut self, commit: bool, report: &mut TrialReport) {
        while !self.open.is_empty() && !self.stopped {
            if commit {
                self.commit(0, report);
            } else {
                self.abort(0, report);
            }
        }
        self.open.clear();
    }

    /// Drops every open transaction (their rollbacks fail if the power is off).
    pub fn drop_open(&mut self) {
        self.open.clear();
    }
}
