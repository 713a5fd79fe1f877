//! DB WAF of the in-place write path, measured from the engine's counters and cross-checked with
//! the data device's own byte counts: 2.0 with the doublewrite buffer, 1.0 without.

use crate::support::{key, value, MemPair};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use wafer_engine::{Db, DbConfig};

fn measure(doublewrite: bool) -> (f64, u64, u64) {
    let pair = MemPair::new();
    let cfg = DbConfig {
        buffer_pages: 64,
        doublewrite,
        ..DbConfig::default()
    };
    let db = Db::open(pair.devices(), cfg).unwrap();
    let t = db.create_tree("usertable").unwrap();
    let n = 3000u64;
    // Transactions of 25 rows: a transaction is bounded by the log (the pool's size here).
    for chunk in 0..(n / 25) {
        let mut x = db.begin().unwrap();
        for i in chunk * 25..(chunk + 1) * 25 {
            x.put(&t, &key(i, 24), &value(i, 100)).unwrap();
        }
        x.commit().unwrap();
    }
    db.checkpoint().unwrap();
    let before = db.stats();
    // A YCSB-like update workload: one update per transaction, zipf-ish skew by squaring.
    let mut rng = Pcg64Mcg::seed_from_u64(5);
    for _ in 0..4000 {
        let r: f64 = rng.random();
        let i = ((r * r) * n as f64) as u64;
        let mut x = db.begin().unwrap();
        x.put(&t, &key(i, 24), &value(rng.random(), 100)).unwrap();
        x.commit().unwrap();
        if rng.random_bool(0.01) {
            db.maintenance().unwrap();
        }
    }
    db.checkpoint().unwrap();
    let after = db.stats();
    let user = after.writes.user_write_bytes - before.writes.user_write_bytes;
    let issued = after.writes.db_write_bytes - before.writes.db_write_bytes;
    let device = after.data_device.write_bytes - before.data_device.write_bytes;
    // The database header (one block) is rewritten by each checkpoint to stamp it: metadata,
    // not page writes.
    let meta = after.writes.metadata_bytes - before.writes.metadata_bytes;
    let checkpoints = after.engine.checkpoints - before.engine.checkpoints;
    assert_eq!(meta, 4096 * checkpoints);
    assert!(user > 0);
    ((issued - meta) as f64 / user as f64, issued, device)
}

#[test]
fn doublewrite_makes_db_waf_two_and_plain_in_place_one() {
    let (waf_dw, issued_dw, dev_dw) = measure(true);
    let (waf_plain, issued_plain, dev_plain) = measure(false);
    assert_eq!(waf_dw, 2.0);
    assert_eq!(waf_plain, 1.0);
    // The engine's count of DB-issued bytes is what the data device saw.
    assert_eq!(issued_dw, dev_dw);
    assert_eq!(issued_plain, dev_plain);
}
