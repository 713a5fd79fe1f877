//! The TPC-C schema on wafer trees: one tree per table plus two secondary indexes, keys as
//! big-endian fixed-width integers (so the tree's byte order is the key order), rows in a compact
//! little-endian layout written by a tiny codec ([`Enc`], [`Dec`]).
//!
//! | tree | key | value |
//! |---|---|---|
//! | `warehouse` | w u16 | [`Warehouse`] |
//! | `district` | w u16, d u8 | [`District`] |
//! | `customer` | w u16, d u8, c u32 | [`Customer`] |
//! | `customer_name` (index) | w u16, d u8, last 16 B, first 16 B (zero padded), c u32 | empty |
//! | `history` | w u16, d u8, h u32 (per-district sequence) | [`History`] |
//! | `new_order` | w u16, d u8, o u32 | empty |
//! | `orders` | w u16, d u8, o u32 | [`Order`] |
//! | `order_customer` (index) | w u16, d u8, c u32, o u32 | empty |
//! | `order_line` | w u16, d u8, o u32, ol u8 | [`OrderLine`] |
//! | `item` | i u32 | [`Item`] |
//! | `stock` | w u16, i u32 | [`Stock`] |
//!
//! HISTORY has no primary key in the specification; its key here is the district of the payment
//! and a sequence number the district row hands out (`District::next_h_id`, an implementation
//! column). Strings are length-prefixed (one byte) bytes; money is integer cents (i64); rates
//! (tax, discount) are integer ten-thousandths (u16); dates are u64 (0 = null); ids are
//! little-endian integers. Nulls: carrier id 0, delivery date 0.

pub use super::codec::{Dec, Enc, Row};
use wafer_engine::{Db, Tree};

/// Street, city, state and zip of a warehouse, district or customer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Address {
    pub street1: Vec<u8>,
    pub street2: Vec<u8>,
    pub city: Vec<u8>,
    pub state: Vec<u8>,
    pub zip: Vec<u8>,
}

impl Address {
    fn put(&self, e: &mut Enc) {
        e.str(&self.street1)
            .str(&self.street2)
            .str(&self.city)
            .str(&self.state)
            .str(&self.zip);
    }
    fn get(d: &mut Dec<'_>) -> Option<Address> {
        Some(Address {
            street1: d.str()?,
            street2: d.str()?,
            city: d.str()?,
            state: d.str()?,
            zip: d.str()?,
        })
    }
}

/// A WAREHOUSE row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Warehouse {
    pub name: Vec<u8>,
    pub address: Address,
    /// W_TAX in ten-thousandths.
    pub tax: u16,
    /// W_YTD in cents.
    pub ytd: i64,
}

impl Row for Warehouse {
    const TABLE: &'static str = "warehouse";
    fn put(&self, e: &mut Enc) {
        e.str(&self.name);
        self.address.put(e);
        e.u16(self.tax).i64(self.ytd);
    }
    fn get(d: &mut Dec<'_>) -> Option<Self> {
        Some(Warehouse {
            name: d.str()?,
            address: Address::get(d)?,
            tax: d.u16()?,
            ytd: d.i64()?,
        })
    }
}

/// A DISTRICT row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct District {
    pub name: Vec<u8>,
    pub address: Address,
    pub tax: u16,
    pub ytd: i64,
    pub next_o_id: u32,
    /// The next HISTORY sequence number of the district (implementation column).
    pub next_h_id: u32,
}

impl Row for District {
    const TABLE: &'static str = "district";
    fn put(&self, e: &mut Enc) {
        e.str(&self.name);
        self.address.put(e);
        e.u16(self.tax)
            .i64(self.ytd)
            .u32(self.next_o_id)
            .u32(self.next_h_id);
    }
    fn get(d: &mut Dec<'_>) -> Option<Self> {
        Some(District {
            name: d.str()?,
            address: Address::get(d)?,
            tax: d.u16()?,
            ytd: d.i64()?,
            next_o_id: d.u32()?,
            next_h_id: d.u32()?,
        })
    }
}

/// A CUSTOMER row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Customer {
    pub first: Vec<u8>,
    pub middle: Vec<u8>,
    pub last: Vec<u8>,
    pub address: Address,
    pub phone: Vec<u8>,
    pub since: u64,
    /// "GC" or "BC".
    pub credit: Vec<u8>,
    pub credit_lim: i64,
    /// C_DISCOUNT in ten-thousandths.
    pub discount: u16,
    pub balance: i64,
    pub ytd_payment: i64,
    pub payment_cnt: u32,
    pub delivery_cnt: u32,
    pub data: Vec<u8>,
}

impl Row for Customer {
    const TABLE: &'static str = "customer";
    fn put(&self, e: &mut Enc) {
        e.str(&self.first).str(&self.middle).str(&self.last);
        self.address.put(e);
        e.str(&self.phone)
            .u64(self.since)
            .str(&self.credit)
            .i64(self.credit_lim)
            .u16(self.discount)
            .i64(self.balance)
            .i64(self.ytd_payment)
            .u32(self.payment_cnt)
            .u32(self.delivery_cnt)
            .long_str(&self.data);
    }
    fn get(d: &mut Dec<'_>) -> Option<Self> {
        Some(Customer {
            first: d.str()?,
            middle: d.str()?,
            last: d.str()?,
            address: Address::get(d)?,
            phone: d.str()?,
            since: d.u64()?,
            credit: d.str()?,
            credit_lim: d.i64()?,
            discount: d.u16()?,
            balance: d.i64()?,
            ytd_payment: d.i64()?,
            payment_cnt: d.u32()?,
            delivery_cnt: d.u32()?,
            data: d.long_str()?,
        })
    }
}

/// A HISTORY row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct History {
    pub c_id: u32,
    pub c_d_id: u8,
    pub c_w_id: u16,
    pub d_id: u8,
    pub w_id: u16,
    pub date: u64,
    pub amount: i64,
    pub data: Vec<u8>,
}

impl Row for History {
    const TABLE: &'static str = "history";
    fn put(&self, e: &mut Enc) {
        e.u32(self.c_id)
            .u8(self.c_d_id)
            .u16(self.c_w_id)
            .u8(self.d_id)
            .u16(self.w_id)
            .u64(self.date)
            .i64(self.amount)
            .str(&self.data);
    }
    fn get(d: &mut Dec<'_>) -> Option<Self> {
        Some(History {
            c_id: d.u32()?,
            c_d_id: d.u8()?,
            c_w_id: d.u16()?,
            d_id: d.u8()?,
            w_id: d.u16()?,
            date: d.u64()?,
            amount: d.i64()?,
            data: d.str()?,
        })
    }
}

/// An ORDER row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Order {
    pub c_id: u32,
    pub entry_d: u64,
    /// O_CARRIER_ID; 0 is null (not delivered).
    pub carrier_id: u8,
    pub ol_cnt: u8,
    pub all_local: u8,
}

impl Row for Order {
    const TABLE: &'static str = "orders";
    fn put(&self, e: &mut Enc) {
        e.u32(self.c_id)
            .u64(self.entry_d)
            .u8(self.carrier_id)
            .u8(self.ol_cnt)
            .u8(self.all_local);
    }
    fn get(d: &mut Dec<'_>) -> Option<Self> {
        Some(Order {
            c_id: d.u32()?,
            entry_d: d.u64()?,
            carrier_id: d.u8()?,
            ol_cnt: d.u8()?,
            all_local: d.u8()?,
        })
    }
}

/// An ORDER-LINE row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct OrderLine {
    pub i_id: u32,
    pub supply_w_id: u16,
    /// OL_DELIVERY_D; 0 is null.
    pub delivery_d: u64,
    pub quantity: u8,
    pub amount: i64,
    pub dist_info: Vec<u8>,
}

impl Row for OrderLine {
    const TABLE: &'static str = "order_line";
    fn put(&self, e: &mut Enc) {
        e.u32(self.i_id)
            .u16(self.supply_w_id)
            .u64(self.delivery_d)
            .u8(self.quantity)
            .i64(self.amount)
            .str(&self.dist_info);
    }
    fn get(d: &mut Dec<'_>) -> Option<Self> {
        Some(OrderLine {
            i_id: d.u32()?,
            supply_w_id: d.u16()?,
            delivery_d: d.u64()?,
            quantity: d.u8()?,
            amount: d.i64()?,
            dist_info: d.str()?,
        })
    }
}

/// An ITEM row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Item {
    pub im_id: u32,
    pub name: Vec<u8>,
    /// I_PRICE in cents.
    pub price: i64,
    pub data: Vec<u8>,
}

impl Row for Item {
    const TABLE: &'static str = "item";
    fn put(&self, e: &mut Enc) {
        e.u32(self.im_id)
            .str(&self.name)
            .i64(self.price)
            .str(&self.data);
    }
    fn get(d: &mut Dec<'_>) -> Option<Self> {
        Some(Item {
            im_id: d.u32()?,
            name: d.str()?,
            price: d.i64()?,
            data: d.str()?,
        })
    }
}

/// A STOCK row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Stock {
    pub quantity: u16,
    /// S_DIST_01 .. S_DIST_10, 24 characters each.
    pub dist: Vec<Vec<u8>>,
    pub ytd: u32,
    pub order_cnt: u32,
    pub remote_cnt: u32,
    pub data: Vec<u8>,
}

impl Row for Stock {
    const TABLE: &'static str = "stock";
    fn put(&self, e: &mut Enc) {
        e.u16(self.quantity).u8(self.dist.len() as u8);
        for d in &self.dist {
            e.str(d);
        }
        e.u32(self.ytd)
            .u32(self.order_cnt)
            .u32(self.remote_cnt)
            .str(&self.data);
    }
    fn get(d: &mut Dec<'_>) -> Option<Self> {
        let quantity = d.u16()?;
        let n = d.u8()?;
        let dist = (0..n).map(|_| d.str()).collect::<Option<Vec<_>>>()?;
        Some(Stock {
            quantity,
            dist,
            ytd: d.u32()?,
            order_cnt: d.u32()?,
            remote_cnt: d.u32()?,
            data: d.str()?,
        })
    }
}

/// Key encodings (big-endian, fixed width).
pub mod key {
    /// Bytes of a name in the customer-name index.
    pub const NAME_BYTES: usize = 16;

    /// WAREHOUSE key.
    pub fn warehouse(w: u16) -> [u8; 2] {
        w.to_be_bytes()
    }
    /// DISTRICT key; also the prefix of every per-district key.
    pub fn district(w: u16, d: u8) -> [u8; 3] {
        let w = w.to_be_bytes();
        [w[0], w[1], d]
    }
    fn wd_u32(w: u16, d: u8, x: u32) -> [u8; 7] {
        let mut k = [0u8; 7];
        k[..3].copy_from_slice(&district(w, d));
        k[3..].copy_from_slice(&x.to_be_bytes());
        k
    }
    /// CUSTOMER key.
    pub fn customer(w: u16, d: u8, c: u32) -> [u8; 7] {
        wd_u32(w, d, c)
    }
    /// ORDER and NEW-ORDER key.
    pub fn order(w: u16, d: u8, o: u32) -> [u8; 7] {
        wd_u32(w, d, o)
    }
    /// HISTORY key.
    pub fn history(w: u16, d: u8, h: u32) -> [u8; 7] {
        wd_u32(w, d, h)
    }
    /// ORDER-LINE key.
    pub fn order_line(w: u16, d: u8, o: u32, ol: u8) -> [u8; 8] {
        let mut k = [0u8; 8];
        k[..7].copy_from_slice(&order(w, d, o));
        k[7] = ol;
        k
    }
    /// Order-by-customer index key.
    pub fn order_customer(w: u16, d: u8, c: u32, o: u32) -> [u8; 11] {
        let mut k = [0u8; 11];
        k[..7].copy_from_slice(&customer(w, d, c));
        k[7..].copy_from_slice(&o.to_be_bytes());
        k
    }
    /// ITEM key.
    pub fn item(i: u32) -> [u8; 4] {
        i.to_be_bytes()
    }
    /// STOCK key.
    pub fn stock(w: u16, i: u32) -> [u8; 6] {
        let mut k = [0u8; 6];
        k[..2].copy_from_slice(&w.to_be_bytes());
        k[2..].copy_from_slice(&i.to_be_bytes());
        k
    }
    fn padded(name: &[u8]) -> [u8; NAME_BYTES] {
        let mut p = [0u8; NAME_BYTES];
        let n = name.len().min(NAME_BYTES);
        p[..n].copy_from_slice(&name[..n]);
        p
    }
    /// The customer-name index prefix of one last name in a district.
    pub fn customer_name_prefix(w: u16, d: u8, last: &[u8]) -> [u8; 3 + NAME_BYTES] {
        let mut k = [0u8; 3 + NAME_BYTES];
        k[..3].copy_from_slice(&district(w, d));
        k[3..].copy_from_slice(&padded(last));
        k
    }
    /// Customer-name index key: the prefix, the first name, the customer id.
    pub fn customer_name(w: u16, d: u8, last: &[u8], first: &[u8], c: u32) -> Vec<u8> {
        let mut k = customer_name_prefix(w, d, last).to_vec();
        k.extend_from_slice(&padded(first));
        k.extend_from_slice(&c.to_be_bytes());
        k
    }
    /// The big-endian u32 at `at` of a key (0 if the key is too short).
    pub fn u32_at(k: &[u8], at: usize) -> u32 {
        k.get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_be_bytes)
    }
    /// The byte just after a prefix range: `prefix` with its last byte incremented (carrying).
    /// None if the prefix is all 0xFF (the range is unbounded above).
    pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
        let mut p = prefix.to_vec();
        while let Some(last) = p.pop() {
            if last < 0xFF {
                p.push(last + 1);
                return Some(p);
            }
        }
        None
    }
}

/// The trees of one TPC-C database.
#[derive(Clone)]
#[allow(missing_docs)]
pub struct Tables {
    pub warehouse: Tree,
    pub district: Tree,
    pub customer: Tree,
    pub customer_name: Tree,
    pub history: Tree,
    pub new_order: Tree,
    pub orders: Tree,
    pub order_customer: Tree,
    pub order_line: Tree,
    pub item: Tree,
    pub stock: Tree,
}

/// Tree names, in the order of [`Tables`]' fields.
pub const TREE_NAMES: [&str; 11] = [
    "warehouse",
    "district",
    "customer",
    "customer_name",
    "history",
    "new_order",
    "orders",
    "order_customer",
    "order_line",
    "item",
    "stock",
];

impl Tables {
    fn with(mut f: impl FnMut(&str) -> wafer_engine::Result<Tree>) -> wafer_engine::Result<Self> {
        Ok(Tables {
            warehouse: f(TREE_NAMES[0])?,
            district: f(TREE_NAMES[1])?,
            customer: f(TREE_NAMES[2])?,
            customer_name: f(TREE_NAMES[3])?,
            history: f(TREE_NAMES[4])?,
            new_order: f(TREE_NAMES[5])?,
            orders: f(TREE_NAMES[6])?,
            order_customer: f(TREE_NAMES[7])?,
            order_line: f(TREE_NAMES[8])?,
            item: f(TREE_NAMES[9])?,
            stock: f(TREE_NAMES[10])?,
        })
    }

    /// Creates the trees (an error if any exists).
    pub fn create(db: &Db) -> wafer_engine::Result<Tables> {
        Tables::with(|n| db.create_tree(n))
    }

    /// Opens the trees of an existing TPC-C database.
    pub fn open(db: &Db) -> wafer_engine::Result<Tables> {
        Tables::with(|n| db.open_tree(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip() {
        let c = Customer {
            first: b"abcdefgh".to_vec(),
            middle: b"OE".to_vec(),
            last: b"BARBARBAR".to_vec(),
            credit: b"GC".to_vec(),
            balance: -1000,
            data: vec![b'x'; 500],
            ..Customer::default()
        };
        assert_eq!(Customer::decode(&c.encode()).unwrap(), c);
        let s = Stock {
            quantity: 42,
            dist: vec![vec![b'd'; 24]; 10],
            data: b"ORIGINAL".to_vec(),
            ..Stock::default()
        };
        assert_eq!(Stock::decode(&s.encode()).unwrap(), s);
        let o = Order {
            c_id: 7,
            ol_cnt: 12,
            ..Order::default()
        };
        assert_eq!(Order::decode(&o.encode()).unwrap(), o);
        let mut bytes = o.encode();
        bytes.push(0);
        assert!(Order::decode(&bytes).is_err());
        assert!(Order::decode(&bytes[..5]).is_err());
    }

    #[test]
    fn keys_sort_as_their_fields() {
        assert!(key::order(1, 2, 255) < key::order(1, 2, 256));
        assert!(key::order(1, 10, 1) > key::order(1, 9, 999_999));
        assert!(key::order(2, 1, 1) > key::order(1, 10, 999_999));
        assert!(key::order_line(1, 1, 5, 15) < key::order_line(1, 1, 6, 1));
        assert!(key::stock(1, 100_000) < key::stock(2, 1));
        assert!(
            key::customer_name(1, 1, b"ABLE", b"zz", 9)
                < key::customer_name(1, 1, b"ABLEX", b"a", 1)
        );
        assert_eq!(key::u32_at(&key::order(3, 4, 77), 3), 77);
        assert_eq!(key::prefix_end(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(key::prefix_end(&[0xFF]), None);
    }
}
