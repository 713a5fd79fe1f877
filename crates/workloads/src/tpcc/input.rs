//! Terminals: each has a home warehouse (terminal id mod W, plus 1), a district for Stock-Level
//! (the next ten terminals of a warehouse take districts 1..10), its own RNG derived from the
//! seed and its id, and a deck of 100 cards holding the standard mix (45 New-Order, 43 Payment,
//! 4 each Order-Status, Delivery, Stock-Level), reshuffled when used up, so every 100
//! transactions of a terminal hold exactly the mix (the steady-size mode uses 44.5/43/4/4.5/4,
//! see [`deck`]). Inputs follow clause 2.4.1-2.8.1: NURand
//! customers and items, 5-15 order lines, 1% New-Orders with an unused item (rolled back), 1%
//! remote supply warehouses per line, 15% remote Payment customers, 60% of Payment and
//! Order-Status customers by last name. Keying and think times are zero.
//!
//! A transaction that fails with a lock conflict is aborted and the same input is retried on the
//! terminal's next step.

use super::random::{nurand, uniform, NuConstants};
use super::schema::Tables;
use super::txns::{self, Ctx, Exec};
use super::{mix_seed, Counts, SizeMode, TpccConfig, TpccError, TxnKind, DISTRICTS};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use wafer_engine::Db;

/// The cards of one deck per type. Growing mode: 45/43/4/4/4 of 100. Steady-size mode: 89/86/8/9/8
/// of 200 (44.5% New-Order, 4.5% Delivery): ten districts delivered per Delivery then outpace
/// the New-Orders slightly, so the undelivered backlog cannot grow without bound (with 45/4 it
/// grows by one order per 20 transactions). Clause 5.2.3 sets minimums for the four others and
/// gives New-Order the rest, so both decks are valid mixes.
pub fn deck(mode: SizeMode) -> [u32; 5] {
    match mode {
        SizeMode::Growing => TxnKind::MIX_PERCENT,
        SizeMode::Steady => [89, 86, 8, 9, 8],
    }
}

/// A warehouse other than `w` (uniform), or `w` itself if it is the only one.
fn other_warehouse(rng: &mut Pcg64Mcg, w: u16, warehouses: u32) -> u16 {
    if warehouses == 1 {
        return w;
    }
    let r = uniform(rng, 1, warehouses - 1) as u16;
    if r >= w {
        r + 1
    } else {
        r
    }
}

/// One order line of a New-Order.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct LineIn {
    pub i_id: u32,
    pub supply_w: u16,
    pub quantity: u8,
}

/// How Payment and Order-Status pick their customer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CustomerSel {
    /// By C_ID.
    Id(u32),
    /// By C_LAST: the middle one (rounded up) of the customers with this name, by C_FIRST.
    Last(Vec<u8>),
}

/// The input of one transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Input {
    NewOrder {
        w: u16,
        d: u8,
        c: u32,
        lines: Vec<LineIn>,
    },
    Payment {
        w: u16,
        d: u8,
        c_w: u16,
        c_d: u8,
        customer: CustomerSel,
        /// H_AMOUNT in cents.
        amount: i64,
    },
    OrderStatus {
        w: u16,
        d: u8,
        customer: CustomerSel,
    },
    Delivery {
        w: u16,
        carrier: u8,
    },
    StockLevel {
        w: u16,
        d: u8,
        threshold: u16,
    },
}

impl Input {
    /// The transaction type.
    pub fn kind(&self) -> TxnKind {
        match self {
            Input::NewOrder { .. } => TxnKind::NewOrder,
            Input::Payment { .. } => TxnKind::Payment,
            Input::OrderStatus { .. } => TxnKind::OrderStatus,
            Input::Delivery { .. } => TxnKind::Delivery,
            Input::StockLevel { .. } => TxnKind::StockLevel,
        }
    }
}

/// What one step of a terminal did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepOutcome {
    /// The transaction type.
    pub kind: TxnKind,
    /// What it did; None if it hit a lock conflict (aborted; retried on the next step).
    pub exec: Option<Exec>,
}

/// A TPC-C terminal (a client of the drivers).
pub struct Terminal {
    id: u32,
    w: u16,
    stock_level_d: u8,
    warehouses: u32,
    counts: Counts,
    mode: SizeMode,
    nu: NuConstants,
    rng: Pcg64Mcg,
    deck: Vec<TxnKind>,
    /// Work to retry after a conflict: its input, whether to roll it back, and its first
    /// try's age (kept by the retry: `Db::begin_retry`).
    pending: Option<(Input, bool, Option<wafer_engine::TxnAge>)>,
    /// `abort_fraction`, and its own random stream (the inputs do not depend on it).
    abort_fraction: f64,
    abort_rng: Pcg64Mcg,
    /// Run its transactions under snapshot isolation.
    snapshot: bool,
}

impl Terminal {
    /// Runs its transactions under snapshot isolation (the database needs an undo device).
    pub fn with_snapshot_isolation(mut self, on: bool) -> Terminal {
        self.snapshot = on;
        self
    }

    /// Terminal `id` of a run of `cfg`.
    pub fn new(cfg: &TpccConfig, id: u32) -> Terminal {
        let counts = cfg.counts();
        let w = cfg.warehouses.max(1);
        Terminal {
            id,
            w: (id % w + 1) as u16,
            stock_level_d: ((id / w) % DISTRICTS as u32 + 1) as u8,
            warehouses: w,
            counts,
            mode: cfg.mode,
            nu: NuConstants::new(cfg.seed, &counts),
            rng: Pcg64Mcg::seed_from_u64(mix_seed(cfg.seed, id as u64)),
            deck: Vec::new(),
            pending: None,
            abort_fraction: cfg.abort_fraction,
            abort_rng: Pcg64Mcg::seed_from_u64(mix_seed(cfg.seed ^ 0xab07, id as u64)),
            snapshot: false,
        }
    }

    /// The terminal's id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The home warehouse.
    pub fn warehouse(&self) -> u16 {
        self.w
    }

    fn next_kind(&mut self) -> TxnKind {
        if self.deck.is_empty() {
            for (k, n) in TxnKind::ALL.iter().zip(deck(self.mode)) {
                self.deck.extend(std::iter::repeat_n(*k, n as usize));
            }
            self.deck.shuffle(&mut self.rng);
        }
        self.deck.pop().expect("a full deck")
    }

    fn customer_sel(&mut self) -> CustomerSel {
        let c = &self.counts;
        if uniform(&mut self.rng, 1, 100) <= 60 {
            let n = nurand(
                &mut self.rng,
                c.a_last,
                self.nu.c_last_run,
                0,
                c.last_names - 1,
            );
            CustomerSel::Last(super::random::last_name(n))
        } else {
            CustomerSel::Id(nurand(&mut self.rng, c.a_cid, self.nu.c_id, 1, c.customers))
        }
    }

    /// The next transaction's input: the one to retry after a conflict, or a new one.
    pub fn next_input(&mut self) -> Input {
        self.next_work().0
    }

    /// The next input, whether the terminal rolls it back after its work, and, for a retry,
    /// its first try's age.
    fn next_work(&mut self) -> (Input, bool, Option<wafer_engine::TxnAge>) {
        if let Some(w) = self.pending.take() {
            return w;
        }
        let kind = self.next_kind();
        let input = self.generate(kind);
        let abort = self.abort_fraction > 0.0
            && rand::Rng::random_bool(&mut self.abort_rng, self.abort_fraction);
        (input, abort, None)
    }

    /// A new input of `kind`.
    pub fn generate(&mut self, kind: TxnKind) -> Input {
        let w = self.w;
        let c = self.counts;
        let rng = &mut self.rng;
        match kind {
            TxnKind::NewOrder => {
                let d = uniform(rng, 1, DISTRICTS as u32) as u8;
                let cust = nurand(rng, c.a_cid, self.nu.c_id, 1, c.customers);
                let n = uniform(rng, 5, 15);
                let rollback = uniform(rng, 1, 100) == 1;
                let mut lines = Vec::with_capacity(n as usize);
                for i in 0..n {
                    let i_id = if rollback && i == n - 1 {
                        c.items + 1
                    } else {
                        nurand(rng, c.a_item, self.nu.c_item, 1, c.items)
                    };
                    let supply_w = if uniform(rng, 1, 100) == 1 {
                        other_warehouse(rng, w, self.warehouses)
                    } else {
                        w
                    };
                    lines.push(LineIn {
                        i_id,
                        supply_w,
                        quantity: uniform(rng, 1, 10) as u8,
                    });
                }
                Input::NewOrder {
                    w,
                    d,
                    c: cust,
                    lines,
                }
            }
            TxnKind::Payment => {
                let d = uniform(rng, 1, DISTRICTS as u32) as u8;
                let local = uniform(rng, 1, 100) <= 85;
                let amount = uniform(rng, 100, 500_000) as i64;
                let (c_w, c_d) = if local {
                    (w, d)
                } else {
                    let c_d = uniform(rng, 1, DISTRICTS as u32) as u8;
                    (other_warehouse(rng, w, self.warehouses), c_d)
                };
                Input::Payment {
                    w,
                    d,
                    c_w,
                    c_d,
                    customer: self.customer_sel(),
                    amount,
                }
            }
            TxnKind::OrderStatus => {
                let d = uniform(rng, 1, DISTRICTS as u32) as u8;
                Input::OrderStatus {
                    w,
                    d,
                    customer: self.customer_sel(),
                }
            }
            TxnKind::Delivery => Input::Delivery {
                w,
                carrier: uniform(rng, 1, 10) as u8,
            },
            TxnKind::StockLevel => Input::StockLevel {
                w,
                d: self.stock_level_d,
                threshold: uniform(rng, 10, 20) as u16,
            },
        }
    }

    /// Runs the terminal's next transaction on `db`. A lock conflict aborts it and keeps its
    /// input for the next step; any other error is returned.
    pub fn step(&mut self, db: &Db, tables: &Tables, now: u64) -> Result<StepOutcome, TpccError> {
        self.step_as(db, tables, now, false).map(|(o, _)| o)
    }

    /// [`Terminal::step`]; with `deferred`, a commit returns its pending commit (group commit
    /// in virtual time) instead of waiting for the log.
    pub fn step_as(
        &mut self,
        db: &Db,
        tables: &Tables,
        now: u64,
        deferred: bool,
    ) -> Result<(StepOutcome, Option<wafer_engine::PendingCommit>), TpccError> {
        self.step_paused(db, tables, now, deferred, &txns::no_pause)
    }

    /// [`Terminal::step_as`], calling `pause` between the transaction's statements (a driver
    /// that interleaves terminals switches there).
    pub fn step_paused(
        &mut self,
        db: &Db,
        tables: &Tables,
        now: u64,
        deferred: bool,
        pause: &dyn Fn(),
    ) -> Result<(StepOutcome, Option<wafer_engine::PendingCommit>), TpccError> {
        let (input, abort, mut first_try) = self.next_work();
        let ctx = Ctx {
            tables,
            counts: self.counts,
            mode: self.mode,
            snapshot: self.snapshot,
            pause,
        };
        let kind = input.kind();
        let end = match (abort, deferred) {
            (true, _) => txns::End::Abort,
            (false, true) => txns::End::Deferred,
            (false, false) => txns::End::Commit,
        };
        match txns::execute_as(db, &ctx, &input, now, end, &mut first_try) {
            Ok((exec, pending)) => Ok((
                StepOutcome {
                    kind,
                    exec: Some(exec),
                },
                pending,
            )),
            Err(e) if e.is_conflict() => {
                self.pending = Some((input, abort, first_try));
                Ok((StepOutcome { kind, exec: None }, None))
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hundred_inputs_hold_the_mix() {
        let cfg = TpccConfig {
            warehouses: 3,
            scale: 0.1,
            ..TpccConfig::default()
        };
        let mut t = Terminal::new(&cfg, 4);
        assert_eq!(t.warehouse(), 2);
        let mut n = [0u32; 5];
        let (mut lines, mut remote_lines, mut rollbacks, mut remote_pay) = (0, 0, 0, 0);
        for _ in 0..10_000 {
            let i = t.next_input();
            n[i.kind().index()] += 1;
            match i {
                Input::NewOrder { w, lines: l, .. } => {
                    assert!((5..=15).contains(&l.len()));
                    lines += l.len();
                    remote_lines += l.iter().filter(|x| x.supply_w != w).count();
                    if l.last().unwrap().i_id > cfg.counts().items {
                        rollbacks += 1;
                    }
                }
                Input::Payment { w, c_w, .. } if c_w != w => remote_pay += 1,
                _ => {}
            }
        }
        assert_eq!(n, [4500, 4300, 400, 400, 400]);
        let rb = rollbacks as f64 / 4500.0;
        assert!((0.005..0.02).contains(&rb), "rollbacks {rb}");
        let rl = remote_lines as f64 / lines as f64;
        assert!((0.005..0.015).contains(&rl), "remote lines {rl}");
        let rp = remote_pay as f64 / 4300.0;
        assert!((0.12..0.18).contains(&rp), "remote payments {rp}");
    }
}
