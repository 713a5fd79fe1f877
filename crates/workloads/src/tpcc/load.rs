//! The initial database (clause 4.3.3.1) for W warehouses at a scale: ITEM, then per warehouse
//! its row, its STOCK, and per district its row, CUSTOMER (with the last-name index and one
//! HISTORY row each), ORDER (one per customer, customers in a random permutation) with 5-15
//! ORDER-LINEs each, and NEW-ORDER for the newest 30% of the orders. Rows go in key order per
//! table, in transactions of [`BATCH_ROWS`] rows, with the engine's background step between them.
//! Deterministic: every warehouse draws from its own RNG derived from the seed.

use super::random::{self, astring, nstring, uniform, NuConstants};
use super::schema::{
    key, Address, Customer, District, History, Item, Order, OrderLine, Row, Stock, Tables,
    Warehouse,
};
use super::{mix_seed, Counts, TpccConfig, TpccError, DISTRICTS};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};
use wafer_engine::{Db, Tree, Txn};

/// Rows per load transaction.
pub const BATCH_ROWS: usize = 256;

/// The date of every row the load writes (dates are opaque u64 values; 0 means null).
pub const LOAD_DATE: u64 = 1;

/// What the load wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadStats {
    /// Rows written, index entries included.
    pub rows: u64,
    /// Load transactions committed.
    pub txns: u64,
}

/// Puts rows in transactions of [`BATCH_ROWS`] rows.
struct Batch<'a> {
    db: &'a Db,
    txn: Option<Txn>,
    pending: usize,
    stats: LoadStats,
}

impl<'a> Batch<'a> {
    fn put(&mut self, tree: &Tree, k: &[u8], v: &[u8]) -> Result<(), TpccError> {
        let t = match &mut self.txn {
            Some(t) => t,
            None => self.txn.insert(self.db.begin()?),
        };
        match t.put(tree, k, v) {
            Ok(_) => {}
            // The flushless mode's log table holds a transaction's changes until it commits: a
            // batch that outgrows it commits early and the row goes into the next one.
            Err(wafer_engine::Error::TableFull(_)) if self.pending > 0 => {
                self.commit()?;
                return self.put(tree, k, v);
            }
            Err(e) => return Err(e.into()),
        }
        self.pending += 1;
        self.stats.rows += 1;
        if self.pending >= BATCH_ROWS {
            self.commit()?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), TpccError> {
        if let Some(t) = self.txn.take() {
            t.commit()?;
            self.stats.txns += 1;
            self.pending = 0;
            self.db.maintenance()?;
        }
        Ok(())
    }
}

fn address(rng: &mut Pcg64Mcg) -> Address {
    Address {
        street1: astring(rng, 10, 20),
        street2: astring(rng, 10, 20),
        city: astring(rng, 10, 20),
        state: astring(rng, 2, 2),
        zip: random::zip(rng),
    }
}

/// Creates the trees on `db` and loads the initial population of `cfg`. `progress` gets the
/// fraction done (by warehouses).
pub fn load(
    db: &Db,
    cfg: &TpccConfig,
    progress: &mut dyn FnMut(f64),
) -> Result<(Tables, LoadStats), TpccError> {
    cfg.validate()?;
    let tables = Tables::create(db)?;
    let counts = cfg.counts();
    let nu = NuConstants::new(cfg.seed, &counts);
    let mut b = Batch {
        db,
        txn: None,
        pending: 0,
        stats: LoadStats::default(),
    };
    let mut rng = Pcg64Mcg::seed_from_u64(mix_seed(cfg.seed, 1 << 40));
    for i in 1..=counts.items {
        let item = Item {
            im_id: uniform(&mut rng, 1, 10_000),
            name: astring(&mut rng, 14, 24),
            price: uniform(&mut rng, 100, 10_000) as i64,
            data: random::data_field(&mut rng),
        };
        b.put(&tables.item, &key::item(i), &item.encode())?;
    }
    for w in 1..=cfg.warehouses as u16 {
        let mut rng = Pcg64Mcg::seed_from_u64(mix_seed(cfg.seed, (1 << 32) + w as u64));
        load_warehouse(&mut b, &tables, &counts, &nu, w, &mut rng)?;
        progress(w as f64 / cfg.warehouses as f64);
    }
    b.commit()?;
    Ok((tables, b.stats))
}

fn load_warehouse(
    b: &mut Batch<'_>,
    t: &Tables,
    counts: &Counts,
    nu: &NuConstants,
    w: u16,
    rng: &mut Pcg64Mcg,
) -> Result<(), TpccError> {
    let history_cents = 1000i64;
    let wh = Warehouse {
        name: astring(rng, 6, 10),
        address: address(rng),
        tax: uniform(rng, 0, 2000) as u16,
        ytd: history_cents * counts.customers as i64 * DISTRICTS as i64,
    };
    b.put(&t.warehouse, &key::warehouse(w), &wh.encode())?;
    for i in 1..=counts.items {
        let s = Stock {
            quantity: uniform(rng, 10, 100) as u16,
            dist: (0..DISTRICTS).map(|_| astring(rng, 24, 24)).collect(),
            ytd: 0,
            order_cnt: 0,
            remote_cnt: 0,
            data: random::data_field(rng),
        };
        b.put(&t.stock, &key::stock(w, i), &s.encode())?;
    }
    for d in 1..=DISTRICTS {
        let dist = District {
            name: astring(rng, 6, 10),
            address: address(rng),
            tax: uniform(rng, 0, 2000) as u16,
            ytd: history_cents * counts.customers as i64,
            next_o_id: counts.orders + 1,
            next_h_id: counts.customers + 1,
        };
        b.put(&t.district, &key::district(w, d), &dist.encode())?;
        for c in 1..=counts.customers {
            let last_no = if c <= counts.last_names {
                c - 1
            } else {
                random::nurand(rng, counts.a_last, nu.c_last_load, 0, counts.last_names - 1)
            };
            let cust = Customer {
                first: astring(rng, 8, 16),
                middle: b"OE".to_vec(),
                last: random::last_name(last_no),
                address: address(rng),
                phone: nstring(rng, 16),
                since: LOAD_DATE,
                credit: if rng.random_range(0..10) == 0 {
                    b"BC".to_vec()
                } else {
                    b"GC".to_vec()
                },
                credit_lim: 5_000_000,
                discount: uniform(rng, 0, 5000) as u16,
                balance: -history_cents,
                ytd_payment: history_cents,
                payment_cnt: 1,
                delivery_cnt: 0,
                data: astring(rng, 300, 500),
            };
            b.put(&t.customer, &key::customer(w, d, c), &cust.encode())?;
            let name_key = key::customer_name(w, d, &cust.last, &cust.first, c);
            b.put(&t.customer_name, &name_key, &[])?;
            let h = History {
                c_id: c,
                c_d_id: d,
                c_w_id: w,
                d_id: d,
                w_id: w,
                date: LOAD_DATE,
                amount: history_cents,
                data: astring(rng, 12, 24),
            };
            b.put(&t.history, &key::history(w, d, c), &h.encode())?;
        }
        let perm = random::permutation(rng, counts.customers);
        let first_new = counts.first_new_order();
        for o in 1..=counts.orders {
            let c = perm[(o - 1) as usize];
            let delivered = o < first_new;
            let order = Order {
                c_id: c,
                entry_d: LOAD_DATE,
                carrier_id: if delivered {
                    uniform(rng, 1, 10) as u8
                } else {
                    0
                },
                ol_cnt: uniform(rng, 5, 15) as u8,
                all_local: 1,
            };
            b.put(&t.orders, &key::order(w, d, o), &order.encode())?;
            b.put(&t.order_customer, &key::order_customer(w, d, c, o), &[])?;
            for ol in 1..=order.ol_cnt {
                let line = OrderLine {
                    i_id: uniform(rng, 1, counts.items),
                    supply_w_id: w,
                    delivery_d: if delivered { LOAD_DATE } else { 0 },
                    quantity: 5,
                    amount: if delivered {
                        0
                    } else {
                        uniform(rng, 1, 999_999) as i64
                    },
                    dist_info: astring(rng, 24, 24),
                };
                b.put(&t.order_line, &key::order_line(w, d, o, ol), &line.encode())?;
            }
            if !delivered {
                b.put(&t.new_order, &key::order(w, d, o), &[])?;
            }
        }
    }
    Ok(())
}
