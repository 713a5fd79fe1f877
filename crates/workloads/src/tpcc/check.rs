//! Consistency conditions of the TPC-C specification (clause 3.3.2), checked in one read-only
//! transaction (run it while no terminal runs: it takes shared locks on whole trees).
//!
//! | id | condition |
//! |---|---|
//! | 1 | W_YTD = sum(D_YTD) of its districts |
//! | 2 | D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) of the district |
//! | 3 | max(NO_O_ID) - min(NO_O_ID) + 1 = number of NEW-ORDER rows of the district |
//! | 4 | sum(O_OL_CNT) = number of ORDER-LINE rows of the district |
//! | 5 | O_CARRIER_ID is null if and only if the order has a NEW-ORDER row |
//! | 6 | O_OL_CNT = number of ORDER-LINE rows of the order |
//! | 7 | OL_DELIVERY_D is null if and only if its order's O_CARRIER_ID is null |
//! | 8 | W_YTD = sum(H_AMOUNT) of its history (growing mode only) |
//! | 9 | D_YTD = sum(H_AMOUNT) of its history (growing mode only) |
//! | 101 | the order-by-customer index holds exactly one entry per order, with its customer |

use super::schema::{key, District, History, Order, OrderLine, Row, Tables, Warehouse};
use super::{SizeMode, TpccConfig, TpccError, DISTRICTS};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use wafer_engine::{Db, Tree, Txn};

/// The result of one condition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Condition {
    /// Number in the specification (101: an index check of this implementation).
    pub id: u32,
    /// What it states.
    pub name: String,
    /// Instances checked (warehouses, districts, orders or lines).
    pub checked: u64,
    /// Instances that failed.
    pub violations: u64,
    /// The first failure, described.
    pub first_violation: Option<String>,
}

impl Condition {
    fn new(id: u32, name: &str) -> Condition {
        Condition {
            id,
            name: name.to_string(),
            ..Condition::default()
        }
    }

    fn expect(&mut self, ok: bool, what: impl FnOnce() -> String) {
        self.checked += 1;
        if !ok {
            self.violations += 1;
            if self.first_violation.is_none() {
                self.first_violation = Some(what());
            }
        }
    }
}

/// Every condition checked.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckReport {
    /// In the order of the table in the module docs.
    pub conditions: Vec<Condition>,
}

impl CheckReport {
    /// Whether every condition holds.
    pub fn passed(&self) -> bool {
        self.conditions.iter().all(|c| c.violations == 0)
    }

    /// One line: "conditions 1-9, 101 hold" or the failures.
    pub fn describe(&self) -> String {
        let ids: Vec<String> = self.conditions.iter().map(|c| c.id.to_string()).collect();
        if self.passed() {
            return format!("consistency conditions {} hold", ids.join(", "));
        }
        let failed: Vec<String> = self
            .conditions
            .iter()
            .filter(|c| c.violations > 0)
            .map(|c| {
                format!(
                    "condition {} ({}) fails {} of {} times, first: {}",
                    c.id,
                    c.name,
                    c.violations,
                    c.checked,
                    c.first_violation.as_deref().unwrap_or("?")
                )
            })
            .collect();
        failed.join("; ")
    }
}

/// Key-value pairs of one tree.
type Rows = Vec<(Vec<u8>, Vec<u8>)>;

fn rows_in(tx: &mut Txn, tree: &Tree, w: u16, d: u8) -> Result<Rows, TpccError> {
    let lo = key::district(w, d);
    let hi = key::prefix_end(&lo).expect("a district prefix is never all 0xFF");
    Ok(tx.scan(
        tree,
        (Bound::Included(&lo[..]), Bound::Excluded(&hi[..])),
        false,
        usize::MAX,
    )?)
}

fn row<R: Row>(tx: &mut Txn, tree: &Tree, k: &[u8]) -> Result<R, TpccError> {
    let v = tx
        .get(tree, k)?
        .ok_or_else(|| TpccError::Corrupt(format!("a {} row is missing", R::TABLE)))?;
    R::decode(&v)
}

/// Checks the conditions on the database of `cfg` (history sums only in the growing mode).
pub fn check(db: &Db, t: &Tables, cfg: &TpccConfig) -> Result<CheckReport, TpccError> {
    let mut c1 = Condition::new(1, "W_YTD = sum(D_YTD)");
    let mut c2 = Condition::new(2, "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)");
    let mut c3 = Condition::new(3, "max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW-ORDER)");
    let mut c4 = Condition::new(4, "sum(O_OL_CNT) = count(ORDER-LINE)");
    let mut c5 = Condition::new(5, "O_CARRIER_ID null <=> NEW-ORDER row");
    let mut c6 = Condition::new(6, "O_OL_CNT = lines of the order");
    let mut c7 = Condition::new(7, "OL_DELIVERY_D null <=> O_CARRIER_ID null");
    let mut c8 = Condition::new(8, "W_YTD = sum(H_AMOUNT)");
    let mut c9 = Condition::new(9, "D_YTD = sum(H_AMOUNT)");
    let mut c101 = Condition::new(101, "order-by-customer index = ORDER");
    let growing = cfg.mode == SizeMode::Growing;
    let mut tx = db.begin()?;
    for w in 1..=cfg.warehouses as u16 {
        let wh: Warehouse = row(&mut tx, &t.warehouse, &key::warehouse(w))?;
        let (mut d_ytd_sum, mut w_hist_sum) = (0i64, 0i64);
        for d in 1..=DISTRICTS {
            let dist: District = row(&mut tx, &t.district, &key::district(w, d))?;
            d_ytd_sum += dist.ytd;
            let mut orders = BTreeMap::new();
            for (k, v) in rows_in(&mut tx, &t.orders, w, d)? {
                orders.insert(key::u32_at(&k, 3), Order::decode(&v)?);
            }
            let new_orders: BTreeSet<u32> = rows_in(&mut tx, &t.new_order, w, d)?
                .iter()
                .map(|(k, _)| key::u32_at(k, 3))
                .collect();
            let max_o = orders.keys().next_back().copied().unwrap_or(0);
            let at = format!("district {w}/{d}");
            c2.expect(dist.next_o_id - 1 == max_o, || {
                format!("{at}: next_o_id {} but max(O_ID) {max_o}", dist.next_o_id)
            });
            if let (Some(&lo), Some(&hi)) = (new_orders.first(), new_orders.last()) {
                c2.expect(hi == max_o, || {
                    format!("{at}: max(NO_O_ID) {hi} but max(O_ID) {max_o}")
                });
                c3.expect(hi - lo + 1 == new_orders.len() as u32, || {
                    format!("{at}: new-orders {lo}..={hi} but {} rows", new_orders.len())
                });
            }
            let mut lines_per_order: BTreeMap<u32, u32> = BTreeMap::new();
            let mut line_count = 0u64;
            for (k, v) in rows_in(&mut tx, &t.order_line, w, d)? {
                let o = key::u32_at(&k, 3);
                let line = OrderLine::decode(&v)?;
                line_count += 1;
                *lines_per_order.entry(o).or_default() += 1;
                let undelivered = orders.get(&o).map(|x| x.carrier_id == 0);
                c7.expect(undelivered == Some(line.delivery_d == 0), || {
                    format!("{at}: line {o}/{} delivery {}", k[7], line.delivery_d)
                });
            }
            let ol_sum: u64 = orders.values().map(|o| o.ol_cnt as u64).sum();
            c4.expect(ol_sum == line_count, || {
                format!("{at}: sum(O_OL_CNT) {ol_sum} but {line_count} lines")
            });
            for (o, order) in &orders {
                c5.expect((order.carrier_id == 0) == new_orders.contains(o), || {
                    format!("{at}: order {o} carrier {}", order.carrier_id)
                });
                let n = lines_per_order.get(o).copied().unwrap_or(0);
                c6.expect(n == order.ol_cnt as u32, || {
                    format!("{at}: order {o} O_OL_CNT {} but {n} lines", order.ol_cnt)
                });
            }
            let index: BTreeSet<(u32, u32)> = rows_in(&mut tx, &t.order_customer, w, d)?
                .iter()
                .map(|(k, _)| (key::u32_at(k, 7), key::u32_at(k, 3)))
                .collect();
            let expected: BTreeSet<(u32, u32)> = orders.iter().map(|(o, x)| (*o, x.c_id)).collect();
            c101.expect(index == expected, || {
                format!(
                    "{at}: {} index entries for {} orders",
                    index.len(),
                    orders.len()
                )
            });
            if growing {
                let mut sum = 0i64;
                for (_, v) in rows_in(&mut tx, &t.history, w, d)? {
                    sum += History::decode(&v)?.amount;
                }
                w_hist_sum += sum;
                c9.expect(sum == dist.ytd, || {
                    format!("{at}: D_YTD {} but history sums to {sum}", dist.ytd)
                });
            }
        }
        c1.expect(wh.ytd == d_ytd_sum, || {
            format!(
                "warehouse {w}: W_YTD {} but districts sum to {d_ytd_sum}",
                wh.ytd
            )
        });
        if growing {
            c8.expect(wh.ytd == w_hist_sum, || {
                format!(
                    "warehouse {w}: W_YTD {} but history sums to {w_hist_sum}",
                    wh.ytd
                )
            });
        }
    }
    tx.commit()?;
    let mut conditions = vec![c1, c2, c3, c4, c5, c6, c7];
    if growing {
        conditions.extend([c8, c9]);
    }
    conditions.push(c101);
    Ok(CheckReport { conditions })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded() -> (Db, Tables, TpccConfig) {
        crate::tpcc::loaded_for_tests(1, crate::tpcc::SizeMode::Growing)
    }

    fn failing(r: &CheckReport) -> Vec<u32> {
        r.conditions
            .iter()
            .filter(|c| c.violations > 0)
            .map(|c| c.id)
            .collect()
    }

    #[test]
    fn a_loaded_database_is_consistent_and_tampering_is_caught() {
        let (db, t, cfg) = loaded();
        let r = check(&db, &t, &cfg).unwrap();
        assert!(r.passed(), "{}", r.describe());
        assert_eq!(r.conditions.len(), 10);

        let mut tx = db.begin().unwrap();
        let wk = key::warehouse(1);
        let mut wh: Warehouse = row(&mut tx, &t.warehouse, &wk).unwrap();
        wh.ytd += 1;
        tx.put(&t.warehouse, &wk, &wh.encode()).unwrap();
        tx.commit().unwrap();
        assert_eq!(failing(&check(&db, &t, &cfg).unwrap()), vec![1, 8]);

        // Undo that; drop a NEW-ORDER row in the middle of district 3's range.
        let mut tx = db.begin().unwrap();
        wh.ytd -= 1;
        tx.put(&t.warehouse, &wk, &wh.encode()).unwrap();
        let mid = cfg.counts().first_new_order() + 2;
        tx.delete(&t.new_order, &key::order(1, 3, mid)).unwrap();
        tx.commit().unwrap();
        let r = check(&db, &t, &cfg).unwrap();
        assert_eq!(failing(&r), vec![3, 5], "{}", r.describe());

        // And an order line of district 5.
        let mut tx = db.begin().unwrap();
        tx.delete(&t.order_line, &key::order_line(1, 5, 4, 2))
            .unwrap();
        tx.commit().unwrap();
        let r = check(&db, &t, &cfg).unwrap();
        assert_eq!(failing(&r), vec![3, 4, 5, 6], "{}", r.describe());
        assert!(r.describe().contains("district 1/5"));
    }
}
