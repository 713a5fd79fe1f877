//! TPC-C on the wafer engine: the nine tables and two secondary indexes as wafer trees, a loader
//! following the specification's population rules, the five transactions with the standard mix,
//! consistency checks, and drivers in virtual time (over simulated SSDs, for write amplification)
//! and on the wall clock (real threads, in memory).
//!
//! * [`schema`]: keys (big-endian fixed-width integers, so tree order = key order) and rows, in
//!   the tiny little-endian codec of [`codec`];
//! * [`random`]: the specification's random functions (NURand, a-strings, last names);
//! * [`load`](mod@load): the initial population of W warehouses;
//! * [`input`]: each terminal's transaction inputs (the 45/43/4/4/4 deck), from its own RNG;
//! * [`txns`]: the five transactions, each one wafer transaction;
//! * [`check`](mod@check): the consistency conditions of specification clause 3.3.2;
//! * [`driver`]: `run_vtime` (one run per write-path configuration, the metrics of DESIGN.md plus
//!   tpmC); [`wall`]: `run_wall` (threads on in-memory devices).
//!
//! # Scale
//! [`TpccConfig::scale`] shrinks the per-warehouse populations for fast tests: items
//! (100,000 x scale), customers per district (3,000 x scale), initial orders per district (= the
//! customers), initial new-orders (the last 30% of those orders, 900 at scale 1), stock per
//! warehouse (= items). Ten districts per warehouse always. Last names come from the numbers
//! `0..min(1000, customers)`, and the NURand constants A (255, 1023, 8191) shrink with the range
//! they draw from (the largest `2^k - 1` close to `A x range / standard range`), so the skew keeps
//! its shape. Money columns are integer cents; warehouse and district YTD start at the sum of the
//! initial history amounts (300,000.00 and 30,000.00 at scale 1).
//!
//! # Size modes
//! [`SizeMode::Growing`] is the standard: orders, order lines and history grow without bound.
//! [`SizeMode::Steady`] keeps the database size bounded on long runs: when Delivery delivers
//! order `o` of a district it deletes order `o - window` of that district (its ORDER, ORDER-LINE
//! and order-by-customer index rows; its NEW-ORDER row went at its own delivery), and when
//! Payment adds history row `h` of a district it deletes row `h - window`; `window` is the initial
//! order count of a district (3,000 at scale 1). With the 45/4 mix the undelivered backlog grows
//! by one order per 20 transactions (ten districts per Delivery do not quite keep up with the
//! New-Orders), so the steady mode deals 44.5% New-Order and 4.5% Delivery instead (still a valid
//! mix: clause 5.2.3 gives New-Order what the minimums of the others leave; see
//! [`input::deck`]). Consistency conditions 1-7 still hold (the conditions on history sums, 8-9,
//! are checked in the growing mode only).

pub mod check;
pub mod codec;
pub mod driver;
pub mod input;
pub mod interleaved;
pub mod load;
pub mod random;
pub mod schema;
pub mod txns;
pub mod wall;

pub use check::{check, CheckReport, Condition};
pub use driver::{
    run_vtime, run_vtime_logged, run_wall, RecoveryOutcome, TpccBenchConfig, TpccFigures,
    TpccSeriesPoint, TpccSummary, TpccWallConfig, TpccWallResult, UndoDeviceConfig, UndoReport,
};
pub use input::Terminal;
pub use load::{load, LoadStats};
pub use schema::Tables;
pub use txns::{Exec, TxnCounts};
/// What recovery did, phase by phase (in [`RecoveryOutcome`]).
pub use wafer_engine::RecoveryReport;

use serde::{Deserialize, Serialize};

/// Districts per warehouse (fixed by the specification).
pub const DISTRICTS: u8 = 10;

/// Why a TPC-C run failed.
#[derive(Debug, thiserror::Error)]
pub enum TpccError {
    /// The configuration is inconsistent.
    #[error("invalid TPC-C configuration: {0}")]
    Config(String),
    /// The engine failed (a conflict is retried by the drivers and never surfaces here).
    #[error("engine: {0}")]
    Engine(#[from] wafer_engine::Error),
    /// The benchmark harness failed.
    #[error("{0}")]
    Bench(#[from] crate::bench::vtime::BenchError),
    /// A row that must exist is missing or does not decode.
    #[error("corrupt TPC-C data: {0}")]
    Corrupt(String),
}

impl TpccError {
    /// Whether this is a lock conflict (the transaction is retried).
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            TpccError::Engine(wafer_engine::Error::Conflict { .. })
        )
    }
}

/// Whether old orders and history are deleted behind delivery (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SizeMode {
    /// The standard: the database grows with every New-Order and Payment.
    #[default]
    Growing,
    /// Old delivered orders and old history rows are deleted: the size stays bounded.
    Steady,
}

impl std::str::FromStr for SizeMode {
    type Err = String;
    fn from_str(s: &str) -> Result<SizeMode, String> {
        match s.trim() {
            "growing" => Ok(SizeMode::Growing),
            "steady" => Ok(SizeMode::Steady),
            o => Err(format!("unknown size mode '{o}' (known: growing, steady)")),
        }
    }
}

/// The database and workload of a TPC-C run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TpccConfig {
    /// Warehouses (W).
    pub warehouses: u32,
    /// Population scale: 1.0 is the specification; smaller values shrink items, customers,
    /// orders and stock per warehouse (see the module docs).
    pub scale: f64,
    /// Growing (standard) or steady-size database.
    pub mode: SizeMode,
    /// Seed of the load and of every terminal's random choices.
    pub seed: u64,
    /// Fraction of transactions the terminal rolls back after doing all their work, besides
    /// the specification's 1% of New-Orders (paper 001 Figure 10 varies it from 0 to 0.2). Drawn
    /// from a random stream of its own, so the transactions themselves are the same at every
    /// fraction.
    #[serde(default)]
    pub abort_fraction: f64,
}

impl Default for TpccConfig {
    fn default() -> Self {
        TpccConfig {
            warehouses: 1,
            scale: 1.0,
            mode: SizeMode::Growing,
            seed: 42,
            abort_fraction: 0.0,
        }
    }
}

impl TpccConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), TpccError> {
        if self.warehouses == 0 || self.warehouses > u16::MAX as u32 {
            return Err(TpccError::Config(format!(
                "warehouses must be in 1..={}",
                u16::MAX
            )));
        }
        if !(self.scale > 0.0 && self.scale <= 1.0) {
            return Err(TpccError::Config("scale must be in (0, 1]".into()));
        }
        if !(0.0..=0.9).contains(&self.abort_fraction) {
            return Err(TpccError::Config(
                "abort_fraction must be in [0, 0.9]".into(),
            ));
        }
        Ok(())
    }

    /// The populations and NURand constants at this scale.
    pub fn counts(&self) -> Counts {
        Counts::new(self.scale)
    }
}

/// Population sizes and NURand range constants at one scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Rows of ITEM (and of STOCK per warehouse): 100,000 at scale 1.
    pub items: u32,
    /// Customers per district: 3,000 at scale 1.
    pub customers: u32,
    /// Initial orders per district (one per customer): 3,000 at scale 1.
    pub orders: u32,
    /// Initial new-orders per district (the newest orders): 900 at scale 1.
    pub new_orders: u32,
    /// Distinct last names (numbers `0..last_names`): 1,000 at scale 1.
    pub last_names: u32,
    /// NURand A for C_LAST (255 at scale 1).
    pub a_last: u32,
    /// NURand A for C_ID (1023 at scale 1).
    pub a_cid: u32,
    /// NURand A for OL_I_ID (8191 at scale 1).
    pub a_item: u32,
}

/// The NURand A for a range of `range` values where the specification uses `a_std` for
/// `range_std` values.
fn scaled_a(a_std: u32, range_std: u32, range: u32) -> u32 {
    if range >= range_std {
        return a_std;
    }
    let t = (a_std as f64 + 1.0) * range as f64 / range_std as f64;
    (t.round().max(1.0) as u32).next_power_of_two() - 1
}

impl Counts {
    /// The counts at `scale` (1.0 = the specification).
    pub fn new(scale: f64) -> Counts {
        let items = ((100_000.0 * scale).round() as u32).max(100);
        let customers = ((3_000.0 * scale).round() as u32).max(30);
        let new_orders = (customers * 3).div_ceil(10);
        let last_names = customers.min(1000);
        Counts {
            items,
            customers,
            orders: customers,
            new_orders,
            last_names,
            a_last: scaled_a(255, 1000, last_names),
            a_cid: scaled_a(1023, 3000, customers),
            a_item: scaled_a(8191, 100_000, items),
        }
    }

    /// The first order id that is still undelivered after the load (2101 at scale 1).
    pub fn first_new_order(&self) -> u32 {
        self.orders - self.new_orders + 1
    }

    /// Orders (and history rows) per district kept behind delivery in the steady-size mode.
    pub fn steady_window(&self) -> u32 {
        self.orders
    }
}

/// The five transaction types, in the order of the specification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TxnKind {
    /// New-Order (45%).
    NewOrder,
    /// Payment (43%).
    Payment,
    /// Order-Status (4%).
    OrderStatus,
    /// Delivery (4%).
    Delivery,
    /// Stock-Level (4%).
    StockLevel,
}

impl TxnKind {
    /// Every kind, in specification order (the index into per-kind arrays).
    pub const ALL: [TxnKind; 5] = [
        TxnKind::NewOrder,
        TxnKind::Payment,
        TxnKind::OrderStatus,
        TxnKind::Delivery,
        TxnKind::StockLevel,
    ];

    /// The standard mix in percent (clause 5.2.3 minimums with New-Order taking the rest).
    pub const MIX_PERCENT: [u32; 5] = [45, 43, 4, 4, 4];

    /// Index into per-kind arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Name in tables.
    pub fn name(self) -> &'static str {
        match self {
            TxnKind::NewOrder => "new-order",
            TxnKind::Payment => "payment",
            TxnKind::OrderStatus => "order-status",
            TxnKind::Delivery => "delivery",
            TxnKind::StockLevel => "stock-level",
        }
    }
}

/// SplitMix64: derives independent seeds (a terminal's RNG from the run seed and its id).
pub fn mix_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed
        .wrapping_add(stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A small loaded database for the module's unit tests: `warehouses` at scale 0.01, in memory.
#[cfg(test)]
pub(crate) fn loaded_for_tests(
    warehouses: u32,
    mode: SizeMode,
) -> (wafer_engine::Db, Tables, TpccConfig) {
    let cfg = TpccConfig {
        warehouses,
        scale: 0.01,
        mode,
        ..TpccConfig::default()
    };
    let db = wafer_engine::Db::open(
        wafer_engine::Devices::memory(32 << 20, 8 << 20),
        wafer_engine::DbConfig {
            buffer_pages: 2048,
            ..wafer_engine::DbConfig::default()
        },
    )
    .expect("in-memory database opens");
    let (t, _) = load(&db, &cfg, &mut |_| {}).expect("load");
    (db, t, cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_at_scale_one_are_the_specification() {
        let c = Counts::new(1.0);
        assert_eq!(
            (c.items, c.customers, c.orders, c.new_orders, c.last_names),
            (100_000, 3000, 3000, 900, 1000)
        );
        assert_eq!((c.a_last, c.a_cid, c.a_item), (255, 1023, 8191));
        assert_eq!(c.first_new_order(), 2101);
    }

    #[test]
    fn counts_scale_down() {
        let c = Counts::new(0.01);
        assert_eq!((c.items, c.customers, c.new_orders), (1000, 30, 9));
        assert_eq!(c.last_names, 30);
        assert!(c.a_cid < 30 && c.a_item < 1000 && c.a_last < 30);
        assert!(TpccConfig {
            scale: 0.0,
            ..TpccConfig::default()
        }
        .validate()
        .is_err());
    }
}
