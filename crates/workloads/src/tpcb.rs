//! TPC-B on the engine (paper 003 section 4.2 uses it to stress the log): branches, tellers,
//! accounts and history, scaled by branches, and the one transaction type, run by the
//! virtual-time driver's closed loop with group commit.
//!
//! Per branch (TPC-B clause 4.2): 10 tellers and 100,000 accounts (`accounts_per_branch` scales
//! this down for quick runs). Records are 100 bytes: a balance (i64) and filler. The transaction
//! (clause 1.2): a random teller, its branch; an account of that branch (85%) or of another branch
//! (15%, when there are several); a delta in [-999,999, +999,999]; the account, teller and branch
//! balances change by the delta, the account's new balance is read back, and a history record
//! (account, teller, branch, delta, time; 50 bytes) is inserted. Balances start at 0, so after any
//! run the sums of branch, teller and account balances and of the history deltas are all equal
//! ([`check`]).

use crate::bench::vtime::{BenchError, ClientWork, Rig, Step};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use wafer_engine::{Db, Error, Tree, Txn};

/// Bytes of a branch, teller or account record.
const RECORD_BYTES: usize = 100;
/// Bytes of a history record.
const HISTORY_BYTES: usize = 50;

/// Size and seed of a TPC-B database.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TpcbConfig {
    /// Branches (the scale factor).
    pub branches: u32,
    /// Tellers per branch (TPC-B: 10).
    pub tellers_per_branch: u32,
    /// Accounts per branch (TPC-B: 100,000).
    pub accounts_per_branch: u32,
    /// Seed of the clients' choices.
    pub seed: u64,
}

impl Default for TpcbConfig {
    fn default() -> Self {
        TpcbConfig {
            branches: 1,
            tellers_per_branch: 10,
            accounts_per_branch: 100_000,
            seed: 42,
        }
    }
}

impl TpcbConfig {
    /// Checks the sizes.
    pub fn validate(&self) -> Result<(), String> {
        if self.branches == 0 || self.tellers_per_branch == 0 || self.accounts_per_branch == 0 {
            return Err("branches, tellers and accounts per branch must be positive".into());
        }
        let accounts = self.branches as u64 * self.accounts_per_branch as u64;
        if accounts > u32::MAX as u64 {
            return Err(format!("{accounts} accounts exceed the 32-bit account ids"));
        }
        Ok(())
    }

    /// Bytes of the loaded records.
    pub fn load_bytes(&self) -> u64 {
        let b = self.branches as u64;
        (b + b * self.tellers_per_branch as u64 + b * self.accounts_per_branch as u64)
            * RECORD_BYTES as u64
    }
}

/// The four tables.
#[derive(Clone)]
#[allow(missing_docs)]
pub struct Tables {
    pub branch: Tree,
    pub teller: Tree,
    pub account: Tree,
    pub history: Tree,
}

fn key(id: u32) -> [u8; 4] {
    id.to_be_bytes()
}

fn record(balance: i64) -> Vec<u8> {
    let mut v = vec![b'x'; RECORD_BYTES];
    v[..8].copy_from_slice(&balance.to_le_bytes());
    v
}

fn balance(v: &[u8]) -> Result<i64, String> {
    v.get(..8)
        .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
        .ok_or_else(|| format!("record of {} bytes has no balance", v.len()))
}

/// Creates and loads the tables (balances 0), in transactions of 1,000 records.
pub fn load(db: &Db, cfg: &TpcbConfig) -> Result<Tables, BenchError> {
    cfg.validate().map_err(BenchError::Config)?;
    let t = Tables {
        branch: db.create_tree("branch")?,
        teller: db.create_tree("teller")?,
        account: db.create_tree("account")?,
        history: db.create_tree("history")?,
    };
    let sizes = [
        (&t.branch, cfg.branches),
        (&t.teller, cfg.branches * cfg.tellers_per_branch),
        (&t.account, cfg.branches * cfg.accounts_per_branch),
    ];
    let zero = record(0);
    for (tree, n) in sizes {
        let mut id = 0;
        while id < n {
            let mut txn = db.begin()?;
            for _ in 0..1000.min(n - id) {
                txn.put(tree, &key(id), &zero)?;
                id += 1;
            }
            txn.commit()?;
        }
    }
    db.checkpoint()?;
    Ok(t)
}

/// The sums a consistent database agrees on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct TpcbCheck {
    pub branch_sum: i64,
    pub teller_sum: i64,
    pub account_sum: i64,
    pub history_sum: i64,
    pub history_rows: u64,
}

impl TpcbCheck {
    /// Whether the four sums agree.
    pub fn passed(&self) -> bool {
        self.branch_sum == self.teller_sum
            && self.teller_sum == self.account_sum
            && self.account_sum == self.history_sum
    }
}

/// Sums the balances and the history deltas in one transaction.
pub fn check(db: &Db, t: &Tables) -> Result<TpcbCheck, BenchError> {
    use std::ops::Bound::Unbounded;
    let mut txn = db.begin()?;
    let sum = |txn: &mut Txn, tree: &Tree, at: usize| -> Result<(i64, u64), BenchError> {
        let (mut s, mut n) = (0i64, 0u64);
        for row in txn.cursor(tree, (Unbounded, Unbounded), false)? {
            let (_, v) = row?;
            let b = balance(v.get(at..).unwrap_or(&[])).map_err(BenchError::Config)?;
            s += b;
            n += 1;
        }
        Ok((s, n))
    };
    let (branch_sum, _) = sum(&mut txn, &t.branch, 0)?;
    let (teller_sum, _) = sum(&mut txn, &t.teller, 0)?;
    let (account_sum, _) = sum(&mut txn, &t.account, 0)?;
    // A history record: account u32, teller u32, branch u32, delta i64 at byte 12, time, filler.
    let (history_sum, history_rows) = sum(&mut txn, &t.history, 12)?;
    txn.commit()?;
    Ok(TpcbCheck {
        branch_sum,
        teller_sum,
        account_sum,
        history_sum,
        history_rows,
    })
}

/// One transaction's choices.
#[derive(Clone, Copy, Debug)]
struct Input {
    account: u32,
    teller: u32,
    branch: u32,
    delta: i64,
}

/// The clients of a TPC-B run.
pub struct TpcbWork {
    cfg: TpcbConfig,
    tables: Tables,
    rngs: Vec<rand::rngs::StdRng>,
    /// History keys: client << 40 | its sequence number.
    seq: Vec<u64>,
    /// Transactions that aborted on a conflict (retried with new input).
    pub conflicts: u64,
}

impl TpcbWork {
    /// `clients` clients over loaded `tables`.
    pub fn new(cfg: &TpcbConfig, tables: Tables, clients: u32) -> TpcbWork {
        TpcbWork {
            cfg: cfg.clone(),
            tables,
            rngs: (0..clients as u64)
                .map(|c| {
                    rand::rngs::StdRng::seed_from_u64(
                        cfg.seed ^ (c + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                    )
                })
                .collect(),
            seq: vec![0; clients as usize],
            conflicts: 0,
        }
    }

    fn input(&mut self, client: u32) -> Input {
        let c = &self.cfg;
        let rng = &mut self.rngs[client as usize];
        let teller = rng.random_range(0..c.branches * c.tellers_per_branch);
        let branch = teller / c.tellers_per_branch;
        let account_branch = if c.branches > 1 && rng.random_range(0..100) >= 85 {
            // Another branch than the teller's.
            let other = rng.random_range(0..c.branches - 1);
            if other >= branch {
                other + 1
            } else {
                other
            }
        } else {
            branch
        };
        let account =
            account_branch * c.accounts_per_branch + rng.random_range(0..c.accounts_per_branch);
        let delta = rng.random_range(-999_999i64..=999_999);
        Input {
            account,
            teller,
            branch,
            delta,
        }
    }

    /// The transaction's reads and writes.
    fn apply(&self, txn: &mut Txn, i: &Input, hkey: u64, now: u64) -> Result<(), Error> {
        let t = &self.tables;
        // The branch first: it is the hot record, so a conflict is met before any other work.
        for (tree, id) in [
            (&t.branch, i.branch),
            (&t.teller, i.teller),
            (&t.account, i.account),
        ] {
            let old = txn.get(tree, &key(id))?.unwrap_or_else(|| record(0));
            let b = balance(&old).unwrap_or(0) + i.delta;
            txn.put(tree, &key(id), &record(b))?;
        }
        // The account's balance is read back (the transaction's result).
        let _ = txn.get(&t.account, &key(i.account))?;
        let mut h = vec![b'h'; HISTORY_BYTES];
        h[0..4].copy_from_slice(&i.account.to_le_bytes());
        h[4..8].copy_from_slice(&i.teller.to_le_bytes());
        h[8..12].copy_from_slice(&i.branch.to_le_bytes());
        h[12..20].copy_from_slice(&i.delta.to_le_bytes());
        h[20..28].copy_from_slice(&now.to_le_bytes());
        txn.put(&t.history, &hkey.to_be_bytes(), &h)?;
        Ok(())
    }

    fn run(&mut self, client: u32, rig: &Rig, deferred: bool) -> Result<Step, BenchError> {
        let input = self.input(client);
        let seq = &mut self.seq[client as usize];
        let hkey = (client as u64) << 40 | *seq;
        let mut txn = rig.db.begin()?;
        match self.apply(&mut txn, &input, hkey, rig.clock.now()) {
            Ok(()) => {
                self.seq[client as usize] += 1;
                if deferred {
                    Ok(Step::Pending(txn.commit_deferred()?))
                } else {
                    txn.commit()?;
                    Ok(Step::Committed)
                }
            }
            Err(Error::Conflict { .. }) => {
                txn.abort()?;
                self.conflicts += 1;
                Ok(Step::Aborted)
            }
            Err(e) => Err(e.into()),
        }
    }
}

impl ClientWork for TpcbWork {
    fn step(&mut self, client: u32, rig: &Rig) -> Result<bool, BenchError> {
        Ok(matches!(self.run(client, rig, false)?, Step::Committed))
    }

    fn step_deferred(&mut self, client: u32, rig: &Rig) -> Result<Step, BenchError> {
        self.run(client, rig, true)
    }
}

/// One TPC-B run in virtual time.
#[derive(Clone, Debug, PartialEq)]
pub struct TpcbBenchConfig {
    /// The database.
    pub tpcb: TpcbConfig,
    /// The log device.
    pub log: crate::bench::vtime::LogDevice,
    /// The data SSD.
    pub data_ssd: flashsim::SsdConfig,
    /// The engine (its buffer pool is sized to cache the whole database).
    pub engine: wafer_engine::DbConfig,
    /// Clients, cores, CPU per transaction, stop rule, group commit.
    pub run: crate::bench::LoopConfig,
}

impl TpcbBenchConfig {
    /// A run of `tpcb` with `clients` clients on 2 cores with `cpu_ns` of CPU a transaction,
    /// stopping after `txns` transactions, group commit on an idle log, the log on `log`.
    pub fn new(
        tpcb: TpcbConfig,
        log: crate::bench::vtime::LogDevice,
        clients: u32,
        txns: u64,
        cpu_ns: u64,
    ) -> TpcbBenchConfig {
        let data_bytes = (tpcb.load_bytes() * 4)
            .max(64 << 20)
            .next_multiple_of(1 << 20);
        let engine = wafer_engine::DbConfig {
            buffer_pages: (data_bytes / 4096) as usize,
            ..wafer_engine::DbConfig::default()
        };
        TpcbBenchConfig {
            tpcb,
            log,
            data_ssd: crate::bench::bench_ssd(data_bytes, 0.1),
            engine,
            run: crate::bench::LoopConfig {
                clients,
                cores: 2,
                cpu_ns_per_op: cpu_ns,
                capacity_multiple: 1e9,
                max_ops: Some(txns),
                group_commit_on_idle: true,
                // A conflict is met at the first lock (the branch's, taken first) and waits
                // for the flush that releases it.
                abort_cpu_ns: Some(cpu_ns / 10),
                ..crate::bench::LoopConfig::default()
            },
        }
    }
}

/// What a TPC-B run measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TpcbSummary {
    /// "flash" or "disk".
    pub log_device: String,
    /// Clients.
    pub clients: u32,
    /// Simulated cores.
    pub cores: u32,
    /// CPU per transaction, ns.
    pub cpu_ns_per_txn: u64,
    /// Committed transactions.
    pub txns: u64,
    /// Transactions aborted on a lock conflict (the client goes on with new input).
    pub conflicts: u64,
    /// Virtual seconds of the run.
    pub virtual_s: f64,
    /// Committed transactions per virtual second.
    pub tps: f64,
    /// Share of the cores' time spent on transactions (committed and aborted).
    pub cpu_utilization: f64,
    /// Log device writes during the run.
    pub log_writes: u64,
    /// Their mean size in 512-byte sectors.
    pub log_write_sectors: f64,
    /// The mean time of a forced write (write + flush), ms.
    pub log_write_ms: f64,
    /// Transactions per log write.
    pub txns_per_log_write: f64,
    /// Transaction latency (begin to durable commit), virtual ns.
    pub latency: flashsim::LatencySummary,
    /// The consistency check after the run.
    pub check: TpcbCheck,
}

/// Loads the database and runs the clients; checks consistency after the run.
pub fn run_vtime(cfg: &TpcbBenchConfig) -> Result<TpcbSummary, BenchError> {
    use crate::bench::vtime::{closed_loop, LogDevice, Silent};
    let rig = Rig::open_devices(&cfg.data_ssd, &cfg.log, cfg.engine.clone())?;
    let tables = load(&rig.db, &cfg.tpcb)?;
    let mut work = TpcbWork::new(&cfg.tpcb, tables.clone(), cfg.run.clients);
    let before = *rig.log_timing.lock().expect("timing lock");
    let r = closed_loop(&rig, &cfg.run, cfg.engine.page_size, &mut work, &mut Silent)?;
    let log = rig.log_timing.lock().expect("timing lock").since(&before);
    let check = check(&rig.db, &tables)?;
    if !check.passed() || check.history_rows != r.txns {
        return Err(BenchError::Config(format!(
            "TPC-B consistency check failed after {} transactions: {check:?}",
            r.txns
        )));
    }
    let t = (r.end.t_ns - r.start.t_ns).max(1);
    let virtual_s = t as f64 / 1e9;
    let abort_cpu = cfg.run.abort_cpu_ns.unwrap_or(cfg.run.cpu_ns_per_op);
    let cpu_ns = r.txns * cfg.run.cpu_ns_per_op + r.aborts * abort_cpu;
    Ok(TpcbSummary {
        log_device: match cfg.log {
            LogDevice::Ssd(_) => "flash".into(),
            LogDevice::Disk(_) => "disk".into(),
        },
        clients: cfg.run.clients,
        cores: cfg.run.cores,
        cpu_ns_per_txn: cfg.run.cpu_ns_per_op,
        txns: r.txns,
        conflicts: work.conflicts,
        virtual_s,
        tps: r.txns as f64 / virtual_s,
        cpu_utilization: cpu_ns as f64 / (cfg.run.cores as f64 * t as f64),
        log_writes: log.writes,
        log_write_sectors: log.mean_write_bytes() / 512.0,
        log_write_ms: log.mean_forced_write_ns() / 1e6,
        txns_per_log_write: r.txns as f64 / log.writes.max(1) as f64,
        latency: r.latency.summary(),
        check,
    })
}
