//! The five TPC-C transactions (clauses 2.4-2.8), each one wafer transaction: serializable,
//! no-wait locks (a conflict surfaces as `Error::Conflict`, the terminal retries).
//!
//! Access paths: point gets wherever the key is known (order lines by O_OL_CNT, stock by item);
//! range scans for the customer-by-last-name index (read-only after the load, so its tree lock
//! never conflicts), the newest order of a customer (reverse scan of the order-by-customer index)
//! and the oldest new-order of a district (Delivery). Stock-Level reads the last 20 orders and
//! their lines by point gets, so it takes no tree lock that would block New-Order's inserts.

use super::input::{CustomerSel, Input, LineIn};
use super::schema::{
    key, Customer, District, History, Item, Order, OrderLine, Row, Stock, Tables, Warehouse,
};
use super::{Counts, SizeMode, TpccError, TxnKind, DISTRICTS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::ops::Bound;
use wafer_engine::{Db, Tree, Txn};

/// What a transaction needs besides its input.
pub struct Ctx<'a> {
    /// The trees.
    pub tables: &'a Tables,
    /// Populations (item count, steady-size window).
    pub counts: Counts,
    /// Growing or steady-size database.
    pub mode: SizeMode,
    /// Snapshot isolation instead of strict two-phase locking.
    pub snapshot: bool,
    /// Called between a transaction's statements (after each row a New-Order line, Payment
    /// step or Delivery district writes): a driver that runs several terminals' transactions
    /// interleaved switches terminals here. [`no_pause`] elsewhere.
    pub pause: &'a dyn Fn(),
}

/// The pause of a driver that runs one transaction at a time.
pub fn no_pause() {}

/// The result of a transaction that ran to its end.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exec {
    /// A New-Order that met its unused item and rolled back (as the specification requires).
    pub rolled_back: bool,
    /// Rolled back by the terminal after doing its work (`TpccConfig::abort_fraction`).
    pub user_abort: bool,
    /// The order a committed New-Order entered: (warehouse, district, order id).
    pub new_order: Option<(u16, u8, u32)>,
    /// Districts a Delivery found without an undelivered order.
    pub skipped_districts: u8,
}

/// Transaction counts of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnCounts {
    /// Transactions that ran to their end, per type (index: [`TxnKind::index`]); New-Orders
    /// rolled back by their unused item count here, as in the specification's throughput.
    pub completed: [u64; 5],
    /// New-Orders rolled back by design (the 1%).
    pub rolled_back: u64,
    /// Transactions aborted by a lock conflict (and retried), per type.
    pub conflicts: [u64; 5],
    /// Delivery districts skipped because they had no undelivered order.
    pub skipped_deliveries: u64,
    /// Transactions the terminal rolled back after their work (`abort_fraction`); they are not
    /// among the completed ones (nor in tpmC).
    #[serde(default)]
    pub user_aborts: u64,
}

impl TxnCounts {
    /// Counts one step's outcome.
    pub fn record(&mut self, kind: TxnKind, exec: Option<&Exec>) {
        match exec {
            Some(e) if e.user_abort => self.user_aborts += 1,
            Some(e) => {
                self.completed[kind.index()] += 1;
                self.rolled_back += e.rolled_back as u64;
                self.skipped_deliveries += e.skipped_districts as u64;
            }
            None => self.conflicts[kind.index()] += 1,
        }
    }

    /// Adds another set of counts.
    pub fn add(&mut self, o: &TxnCounts) {
        for i in 0..5 {
            self.completed[i] += o.completed[i];
            self.conflicts[i] += o.conflicts[i];
        }
        self.rolled_back += o.rolled_back;
        self.user_aborts += o.user_aborts;
        self.skipped_deliveries += o.skipped_deliveries;
    }

    /// Completed transactions of every type.
    pub fn total(&self) -> u64 {
        self.completed.iter().sum()
    }

    /// New-Orders completed (including the rolled-back 1%): the tpmC numerator.
    pub fn new_orders(&self) -> u64 {
        self.completed[TxnKind::NewOrder.index()]
    }

    /// Share of each type among completed transactions, in percent.
    pub fn mix_percent(&self) -> [f64; 5] {
        let t = self.total().max(1) as f64;
        self.completed.map(|c| 100.0 * c as f64 / t)
    }
}

fn get_opt<R: Row>(tx: &mut Txn, tree: &Tree, k: &[u8]) -> Result<Option<R>, TpccError> {
    tx.get(tree, k)?.map(|v| R::decode(&v)).transpose()
}

fn get<R: Row>(tx: &mut Txn, tree: &Tree, k: &[u8]) -> Result<R, TpccError> {
    get_opt(tx, tree, k)?
        .ok_or_else(|| TpccError::Corrupt(format!("a {} row is missing (key {k:?})", R::TABLE)))
}

fn put<R: Row>(tx: &mut Txn, tree: &Tree, k: &[u8], row: &R) -> Result<(), TpccError> {
    tx.put(tree, k, &row.encode())?;
    Ok(())
}

/// Keys in `[lo, hi]` of `tree`, ascending or descending, at most `limit`.
fn keys_between(
    tx: &mut Txn,
    tree: &Tree,
    lo: &[u8],
    hi: &[u8],
    reverse: bool,
    limit: usize,
) -> Result<Vec<Vec<u8>>, TpccError> {
    let rows = tx.scan(
        tree,
        (Bound::Included(lo), Bound::Included(hi)),
        reverse,
        limit,
    )?;
    Ok(rows.into_iter().map(|(k, _)| k).collect())
}

/// Runs `input` as one transaction on `db` at date `now`. A lock conflict (or any error) rolls
/// it back and is returned.
pub fn execute(db: &Db, ctx: &Ctx<'_>, input: &Input, now: u64) -> Result<Exec, TpccError> {
    execute_as(db, ctx, input, now, End::Commit, &mut None).map(|(e, _)| e)
}

/// How [`execute_as`] ends a transaction that did its work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Commit and wait until it is durable.
    Commit,
    /// Append the commit record and return the pending commit (group commit in virtual time).
    Deferred,
    /// Roll it back (the terminal's `abort_fraction`).
    Abort,
}

/// [`execute`], ending the transaction as `end` says. Returns the pending commit with
/// [`End::Deferred`] (None if the transaction did not commit). `first_try`: None for new work
/// (set to the transaction's age), or the age of the first try of work retried after a
/// conflict, which the transaction keeps (`Db::begin_retry`: wait-die's order).
pub fn execute_as(
    db: &Db,
    ctx: &Ctx<'_>,
    input: &Input,
    now: u64,
    end: End,
    first_try: &mut Option<wafer_engine::TxnAge>,
) -> Result<(Exec, Option<wafer_engine::PendingCommit>), TpccError> {
    let mut tx = match (ctx.snapshot, *first_try) {
        (true, None) => db.begin_snapshot()?,
        (true, Some(age)) => db.begin_snapshot_retry(age)?,
        (false, None) => db.begin()?,
        (false, Some(age)) => db.begin_retry(age)?,
    };
    *first_try = Some(tx.age());
    let r = match input {
        Input::NewOrder { w, d, c, lines } => new_order(&mut tx, ctx, (*w, *d, *c), lines, now),
        Input::Payment {
            w,
            d,
            c_w,
            c_d,
            customer,
            amount,
        } => payment(&mut tx, ctx, (*w, *d), (*c_w, *c_d), customer, *amount, now),
        Input::OrderStatus { w, d, customer } => order_status(&mut tx, ctx, *w, *d, customer),
        Input::Delivery { w, carrier } => delivery(&mut tx, ctx, *w, *carrier, now),
        Input::StockLevel { w, d, threshold } => stock_level(&mut tx, ctx, *w, *d, *threshold),
    };
    match r {
        Ok(exec) if exec.rolled_back => {
            tx.abort()?;
            Ok((exec, None))
        }
        Ok(exec) => match end {
            End::Commit => {
                tx.commit()?;
                Ok((exec, None))
            }
            End::Deferred => {
                let p = tx.commit_deferred()?;
                Ok((exec, Some(p)))
            }
            End::Abort => {
                tx.abort()?;
                Ok((
                    Exec {
                        user_abort: true,
                        new_order: None,
                        ..exec
                    },
                    None,
                ))
            }
        },
        Err(e) => {
            // The error is what the caller needs; a failing rollback poisons the handle and
            // shows up on the next call.
            let _ = tx.abort();
            Err(e)
        }
    }
}

/// New-Order (clause 2.4.2).
fn new_order(
    tx: &mut Txn,
    ctx: &Ctx<'_>,
    (w, d, c): (u16, u8, u32),
    lines: &[LineIn],
    now: u64,
) -> Result<Exec, TpccError> {
    let t = ctx.tables;
    let wh: Warehouse = get(tx, &t.warehouse, &key::warehouse(w))?;
    let dk = key::district(w, d);
    let mut dist: District = get(tx, &t.district, &dk)?;
    let o = dist.next_o_id;
    dist.next_o_id += 1;
    put(tx, &t.district, &dk, &dist)?;
    (ctx.pause)();
    let cust: Customer = get(tx, &t.customer, &key::customer(w, d, c))?;
    let all_local = lines.iter().all(|l| l.supply_w == w);
    let order = Order {
        c_id: c,
        entry_d: now,
        carrier_id: 0,
        ol_cnt: lines.len() as u8,
        all_local: all_local as u8,
    };
    put(tx, &t.orders, &key::order(w, d, o), &order)?;
    tx.put(&t.new_order, &key::order(w, d, o), &[])?;
    tx.put(&t.order_customer, &key::order_customer(w, d, c, o), &[])?;
    let mut total = 0i64;
    for (n, line) in lines.iter().enumerate() {
        let Some(item) = get_opt::<Item>(tx, &t.item, &key::item(line.i_id))? else {
            // The unused item of the 1%: the whole transaction rolls back.
            return Ok(Exec {
                rolled_back: true,
                ..Exec::default()
            });
        };
        let sk = key::stock(line.supply_w, line.i_id);
        let mut s: Stock = get(tx, &t.stock, &sk)?;
        let q = line.quantity as u16;
        s.quantity = if s.quantity >= q + 10 {
            s.quantity - q
        } else {
            s.quantity + 91 - q
        };
        s.ytd += q as u32;
        s.order_cnt += 1;
        if line.supply_w != w {
            s.remote_cnt += 1;
        }
        put(tx, &t.stock, &sk, &s)?;
        let amount = line.quantity as i64 * item.price;
        total += amount;
        let dist_info = s.dist.get(d as usize - 1).cloned().unwrap_or_default();
        let ol = OrderLine {
            i_id: line.i_id,
            supply_w_id: line.supply_w,
            delivery_d: 0,
            quantity: line.quantity,
            amount,
            dist_info,
        };
        put(
            tx,
            &t.order_line,
            &key::order_line(w, d, o, n as u8 + 1),
            &ol,
        )?;
        (ctx.pause)();
    }
    // The terminal's output: total amount with discount and taxes (not stored).
    let _total = total * (10_000 - cust.discount as i64) / 10_000
        * (10_000 + (wh.tax + dist.tax) as i64)
        / 10_000;
    Ok(Exec {
        new_order: Some((w, d, o)),
        ..Exec::default()
    })
}

/// The customer id of `sel` in district (w, d): by id, or the middle of the customers with the
/// last name sorted by first name (position n/2 rounded up).
fn find_customer(
    tx: &mut Txn,
    t: &Tables,
    w: u16,
    d: u8,
    sel: &CustomerSel,
) -> Result<u32, TpccError> {
    match sel {
        CustomerSel::Id(c) => Ok(*c),
        CustomerSel::Last(last) => {
            let prefix = key::customer_name_prefix(w, d, last);
            let mut hi = prefix.to_vec();
            hi.extend_from_slice(&[0xFF; key::NAME_BYTES + 4]);
            let keys = keys_between(tx, &t.customer_name, &prefix, &hi, false, usize::MAX)?;
            if keys.is_empty() {
                return Err(TpccError::Corrupt(format!(
                    "no customer named {} in district {w}/{d}",
                    String::from_utf8_lossy(last)
                )));
            }
            let k = &keys[(keys.len() - 1) / 2];
            Ok(key::u32_at(k, 3 + 2 * key::NAME_BYTES))
        }
    }
}

/// Payment (clause 2.5.2).
fn payment(
    tx: &mut Txn,
    ctx: &Ctx<'_>,
    (w, d): (u16, u8),
    (c_w, c_d): (u16, u8),
    sel: &CustomerSel,
    amount: i64,
    now: u64,
) -> Result<Exec, TpccError> {
    let t = ctx.tables;
    let wk = key::warehouse(w);
    let mut wh: Warehouse = get(tx, &t.warehouse, &wk)?;
    wh.ytd += amount;
    put(tx, &t.warehouse, &wk, &wh)?;
    (ctx.pause)();
    let dk = key::district(w, d);
    let mut dist: District = get(tx, &t.district, &dk)?;
    dist.ytd += amount;
    let h = dist.next_h_id;
    dist.next_h_id += 1;
    put(tx, &t.district, &dk, &dist)?;
    (ctx.pause)();
    let c = find_customer(tx, t, c_w, c_d, sel)?;
    let ck = key::customer(c_w, c_d, c);
    let mut cust: Customer = get(tx, &t.customer, &ck)?;
    cust.balance -= amount;
    cust.ytd_payment += amount;
    cust.payment_cnt += 1;
    if cust.credit == b"BC" {
        let mut data = format!(
            "{c} {c_d} {c_w} {d} {w} {}.{:02}|",
            amount / 100,
            amount % 100
        )
        .into_bytes();
        data.extend_from_slice(&cust.data);
        data.truncate(500);
        cust.data = data;
    }
    put(tx, &t.customer, &ck, &cust)?;
    (ctx.pause)();
    let mut data = wh.name.clone();
    data.extend_from_slice(b"    ");
    data.extend_from_slice(&dist.name);
    let hist = History {
        c_id: c,
        c_d_id: c_d,
        c_w_id: c_w,
        d_id: d,
        w_id: w,
        date: now,
        amount,
        data,
    };
    put(tx, &t.history, &key::history(w, d, h), &hist)?;
    let window = ctx.counts.steady_window();
    if ctx.mode == SizeMode::Steady && h > window {
        tx.delete(&t.history, &key::history(w, d, h - window))?;
    }
    Ok(Exec::default())
}

/// The newest order of customer c of district (w, d), if any.
fn last_order(tx: &mut Txn, t: &Tables, w: u16, d: u8, c: u32) -> Result<Option<u32>, TpccError> {
    let lo = key::order_customer(w, d, c, 0);
    let hi = key::order_customer(w, d, c, u32::MAX);
    let keys = keys_between(tx, &t.order_customer, &lo, &hi, true, 1)?;
    Ok(keys.first().map(|k| key::u32_at(k, 7)))
}

/// Order-Status (clause 2.6.2): read-only.
fn order_status(
    tx: &mut Txn,
    ctx: &Ctx<'_>,
    w: u16,
    d: u8,
    sel: &CustomerSel,
) -> Result<Exec, TpccError> {
    let t = ctx.tables;
    let c = find_customer(tx, t, w, d, sel)?;
    let _cust: Customer = get(tx, &t.customer, &key::customer(w, d, c))?;
    // In the steady-size mode a customer's orders may all have been deleted.
    if let Some(o) = last_order(tx, t, w, d, c)? {
        let order: Order = get(tx, &t.orders, &key::order(w, d, o))?;
        for ol in 1..=order.ol_cnt {
            let _: OrderLine = get(tx, &t.order_line, &key::order_line(w, d, o, ol))?;
        }
    }
    Ok(Exec::default())
}

/// Deletes order `o` of district (w, d) with its lines and index entry, if it exists (the
/// steady-size mode).
fn purge_order(tx: &mut Txn, t: &Tables, w: u16, d: u8, o: u32) -> Result<(), TpccError> {
    let ok = key::order(w, d, o);
    let Some(order) = get_opt::<Order>(tx, &t.orders, &ok)? else {
        return Ok(());
    };
    for ol in 1..=order.ol_cnt {
        tx.delete(&t.order_line, &key::order_line(w, d, o, ol))?;
    }
    tx.delete(&t.orders, &ok)?;
    tx.delete(&t.order_customer, &key::order_customer(w, d, order.c_id, o))?;
    Ok(())
}

/// Delivery (clause 2.7.4): the oldest undelivered order of each district of the warehouse.
fn delivery(tx: &mut Txn, ctx: &Ctx<'_>, w: u16, carrier: u8, now: u64) -> Result<Exec, TpccError> {
    let t = ctx.tables;
    let mut exec = Exec::default();
    for d in 1..=DISTRICTS {
        let lo = key::order(w, d, 0);
        let hi = key::order(w, d, u32::MAX);
        let Some(nk) = keys_between(tx, &t.new_order, &lo, &hi, false, 1)?.pop() else {
            exec.skipped_districts += 1;
            continue;
        };
        let o = key::u32_at(&nk, 3);
        tx.delete(&t.new_order, &nk)?;
        let ok = key::order(w, d, o);
        let mut order: Order = get(tx, &t.orders, &ok)?;
        order.carrier_id = carrier;
        put(tx, &t.orders, &ok, &order)?;
        let mut sum = 0i64;
        for ol in 1..=order.ol_cnt {
            let lk = key::order_line(w, d, o, ol);
            let mut line: OrderLine = get(tx, &t.order_line, &lk)?;
            line.delivery_d = now.max(1);
            sum += line.amount;
            put(tx, &t.order_line, &lk, &line)?;
        }
        let ck = key::customer(w, d, order.c_id);
        let mut cust: Customer = get(tx, &t.customer, &ck)?;
        cust.balance += sum;
        cust.delivery_cnt += 1;
        put(tx, &t.customer, &ck, &cust)?;
        let window = ctx.counts.steady_window();
        if ctx.mode == SizeMode::Steady && o > window {
            purge_order(tx, t, w, d, o - window)?;
        }
        (ctx.pause)();
    }
    Ok(exec)
}

/// Stock-Level (clause 2.8.2): distinct items of the district's last 20 orders whose stock is
/// below the threshold. Read-only.
fn stock_level(
    tx: &mut Txn,
    ctx: &Ctx<'_>,
    w: u16,
    d: u8,
    threshold: u16,
) -> Result<Exec, TpccError> {
    let t = ctx.tables;
    let dist: District = get(tx, &t.district, &key::district(w, d))?;
    let next = dist.next_o_id;
    let mut items = BTreeSet::new();
    for o in next.saturating_sub(20).max(1)..next {
        let Some(order) = get_opt::<Order>(tx, &t.orders, &key::order(w, d, o))? else {
            continue;
        };
        for ol in 1..=order.ol_cnt {
            let line: OrderLine = get(tx, &t.order_line, &key::order_line(w, d, o, ol))?;
            items.insert(line.i_id);
        }
    }
    let mut _low = 0u32;
    for i in items {
        let s: Stock = get(tx, &t.stock, &key::stock(w, i))?;
        if s.quantity < threshold {
            _low += 1;
        }
    }
    Ok(Exec::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpcc::TpccConfig;

    fn loaded(mode: SizeMode) -> (Db, Tables, TpccConfig) {
        crate::tpcc::loaded_for_tests(2, mode)
    }

    fn district(db: &Db, t: &Tables, w: u16, d: u8) -> District {
        let mut tx = db.begin().unwrap();
        let r = get(&mut tx, &t.district, &key::district(w, d)).unwrap();
        tx.commit().unwrap();
        r
    }

    #[test]
    fn new_order_commits_or_rolls_back_whole() {
        let (db, t, cfg) = loaded(SizeMode::Growing);
        let ctx = Ctx {
            tables: &t,
            counts: cfg.counts(),
            mode: cfg.mode,
            snapshot: false,
            pause: &no_pause,
        };
        let line = |i_id, supply_w| LineIn {
            i_id,
            supply_w,
            quantity: 3,
        };
        let before = district(&db, &t, 1, 4).next_o_id;
        let ok = Input::NewOrder {
            w: 1,
            d: 4,
            c: 7,
            lines: vec![line(1, 1), line(2, 2), line(3, 1)],
        };
        let e = execute(&db, &ctx, &ok, 5).unwrap();
        assert_eq!(e.new_order, Some((1, 4, before)));
        assert_eq!(district(&db, &t, 1, 4).next_o_id, before + 1);
        let bad = Input::NewOrder {
            w: 1,
            d: 4,
            c: 7,
            lines: vec![line(1, 1), line(cfg.counts().items + 1, 1)],
        };
        let e = execute(&db, &ctx, &bad, 6).unwrap();
        assert!(e.rolled_back && e.new_order.is_none());
        assert_eq!(district(&db, &t, 1, 4).next_o_id, before + 1);
        let mut tx = db.begin().unwrap();
        let o: Order = get(&mut tx, &t.orders, &key::order(1, 4, before)).unwrap();
        assert_eq!((o.c_id, o.ol_cnt, o.all_local, o.carrier_id), (7, 3, 0, 0));
        let s: Stock = get(&mut tx, &t.stock, &key::stock(2, 2)).unwrap();
        assert_eq!((s.ytd, s.order_cnt, s.remote_cnt), (3, 1, 1));
        assert!(tx
            .get(&t.orders, &key::order(1, 4, before + 1))
            .unwrap()
            .is_none());
        tx.commit().unwrap();
    }

    #[test]
    fn customer_by_last_name_is_the_middle_one() {
        let (db, t, _) = loaded(SizeMode::Growing);
        let mut tx = db.begin().unwrap();
        // At this scale every customer c has last name number c - 1: one customer per name.
        let name = crate::tpcc::random::last_name(11);
        let c = find_customer(&mut tx, &t, 2, 3, &CustomerSel::Last(name.clone())).unwrap();
        assert_eq!(c, 12);
        // Add two more customers with that name to the index: the middle of three is chosen.
        for (first, id) in [(&b"!"[..], 900u32), (&b"~~"[..], 901)] {
            tx.put(
                &t.customer_name,
                &key::customer_name(2, 3, &name, first, id),
                &[],
            )
            .unwrap();
        }
        let c = find_customer(&mut tx, &t, 2, 3, &CustomerSel::Last(name)).unwrap();
        assert_eq!(c, 12);
        tx.abort().unwrap();
    }

    #[test]
    fn steady_delivery_deletes_orders_behind_the_window() {
        let (db, t, cfg) = loaded(SizeMode::Steady);
        let counts = cfg.counts();
        let ctx = Ctx {
            tables: &t,
            counts,
            mode: cfg.mode,
            snapshot: false,
            pause: &no_pause,
        };
        let window = counts.steady_window();
        let mut delivered = 0;
        // Enough New-Orders and Deliveries in district 1 of warehouse 1 to pass the window.
        for i in 0..(window + 5) {
            let no = Input::NewOrder {
                w: 1,
                d: 1,
                c: 1 + i % counts.customers,
                lines: vec![LineIn {
                    i_id: 1,
                    supply_w: 1,
                    quantity: 1,
                }],
            };
            execute(&db, &ctx, &no, 10 + i as u64).unwrap();
            let e = execute(&db, &ctx, &Input::Delivery { w: 1, carrier: 3 }, 11).unwrap();
            delivered += 10 - e.skipped_districts as u32;
        }
        assert!(delivered > 0);
        let mut tx = db.begin().unwrap();
        let next = get::<District>(&mut tx, &t.district, &key::district(1, 1))
            .unwrap()
            .next_o_id;
        let lo = key::order(1, 1, 0);
        let hi = key::order(1, 1, u32::MAX);
        let orders = keys_between(&mut tx, &t.orders, &lo, &hi, false, usize::MAX).unwrap();
        tx.commit().unwrap();
        let oldest = key::u32_at(&orders[0], 3);
        assert!(oldest > 1, "old orders are deleted");
        assert!(next - oldest <= window + counts.new_orders);
        assert!(crate::tpcc::check(&db, &t, &cfg).unwrap().passed());
    }
}
