//! Review: serializability under threads. Transfers between accounts (read two balances, write
//! both) from several threads, auditors scanning the whole table (the total must never change),
//! a background maintenance thread, then a power cut on separate data and log devices. After
//! recovery every balance must equal the initial one plus the committed transfers (plus any
//! subset of the transfers whose commit was interrupted), and the total must be unchanged.

mod review_support;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use review_support::Rig;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use wafer_engine::{Db, DbConfig, Error, GroupCommitConfig, Tree};

const ACCOUNTS: u64 = 40;
const INITIAL: i64 = 1000;

fn config() -> DbConfig {
    DbConfig {
        buffer_pages: 24,
        log_space_bytes: Some(256 << 10),
        checkpoint_log_fill: 0.3,
        checkpoint_batch_pages: 4,
        cleaner_clean_fraction: 0.3,
        doublewrite_pages: 4,
        group_commit: GroupCommitConfig {
            max_delay_us: 100,
            min_batch: 2,
        },
        ..DbConfig::default()
    }
}

fn acct(i: u64) -> Vec<u8> {
    // Padded so the table spans several leaves.
    let mut k = format!("acct{i:03}").into_bytes();
    k.resize(300, b'.');
    k
}

fn bal(v: Option<Vec<u8>>) -> i64 {
    i64::from_le_bytes(v.expect("account exists").try_into().unwrap())
}

type Transfer = (u64, u64, i64);

#[derive(Default)]
struct Outcome {
    committed: Vec<Transfer>,
    maybe: Option<Transfer>,
    audits: u64,
}

fn transfer(db: &Db, t: &Tree, (a, b, amt): Transfer) -> Result<(), (Error, bool)> {
    let mut x = db.begin().map_err(|e| (e, false))?;
    let r = (|| {
        let va = bal(x.get(t, &acct(a))?);
        let vb = bal(x.get(t, &acct(b))?);
        x.put(t, &acct(a), &(va - amt).to_le_bytes())?;
        x.put(t, &acct(b), &(vb + amt).to_le_bytes())?;
        Ok::<(), Error>(())
    })();
    if let Err(e) = r {
        let _ = x.abort();
        return Err((e, false));
    }
    x.commit().map_err(|e| (e, true))
}

fn audit(db: &Db, t: &Tree) -> Result<i64, Error> {
    let mut x = db.begin()?;
    let rows = x.scan(t, (Bound::Unbounded, Bound::Unbounded), false, usize::MAX)?;
    x.commit()?;
    assert_eq!(rows.len() as u64, ACCOUNTS, "an account went missing");
    Ok(rows
        .into_iter()
        .map(|(_, v)| i64::from_le_bytes(v.try_into().unwrap()))
        .sum())
}

fn worker(db: Db, t: Tree, id: u64, seed: u64, stop: Arc<AtomicBool>) -> Outcome {
    let mut rng = Pcg64Mcg::seed_from_u64(seed * 100 + id);
    let mut out = Outcome::default();
    for _ in 0..4000 {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if id == 0 {
            // The auditor.
            match audit(&db, &t) {
                Ok(sum) => {
                    assert_eq!(
                        sum,
                        ACCOUNTS as i64 * INITIAL,
                        "an audit saw a partial transfer"
                    );
                    out.audits += 1;
                }
                Err(Error::Conflict { .. }) => {}
                Err(_) => break,
            }
            continue;
        }
        let a = rng.random_range(0..ACCOUNTS);
        let b = (a + rng.random_range(1..ACCOUNTS)) % ACCOUNTS;
        let tr = (a, b, rng.random_range(1..50));
        match transfer(&db, &t, tr) {
            Ok(()) => out.committed.push(tr),
            Err((Error::Conflict { .. }, false)) => {}
            Err((_, true)) => {
                out.maybe = Some(tr);
                break;
            }
            Err(_) => break,
        }
    }
    out
}

fn round(seed: u64, cut: u64) {
    let rig = Rig::new(seed, 4 << 20, 1 << 20, 512);
    let db = Db::open(rig.devices(), config()).unwrap();
    let t = db.create_tree("bank").unwrap();
    let mut x = db.begin().unwrap();
    for i in 0..ACCOUNTS {
        x.put(&t, &acct(i), &INITIAL.to_le_bytes()).unwrap();
    }
    x.commit().unwrap();
    rig.cut_after(cut);
    let stop = Arc::new(AtomicBool::new(false));
    let bg = db.start_background(std::time::Duration::from_micros(200));
    let hs: Vec<_> = (0..5u64)
        .map(|id| {
            let (db, t, stop) = (db.clone(), t.clone(), stop.clone());
            std::thread::spawn(move || worker(db, t, id, seed, stop))
        })
        .collect();
    let outs: Vec<Outcome> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    stop.store(true, Ordering::Relaxed);
    let _ = bg.stop();
    drop(db);
    rig.crash();
    let what = format!("seed {seed} cut {cut}");
    let db = Db::open(rig.devices(), config()).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
    db.verify().unwrap();
    let t = db.open_tree("bank").unwrap();
    let mut x = db.begin().unwrap();
    let got: Vec<i64> = (0..ACCOUNTS)
        .map(|i| bal(x.get(&t, &acct(i)).unwrap()))
        .collect();
    x.commit().unwrap();
    assert_eq!(
        got.iter().sum::<i64>(),
        ACCOUNTS as i64 * INITIAL,
        "{what}: total changed"
    );
    let mut base = vec![INITIAL; ACCOUNTS as usize];
    for o in &outs {
        for &(a, b, amt) in &o.committed {
            base[a as usize] -= amt;
            base[b as usize] += amt;
        }
    }
    let maybes: Vec<Transfer> = outs.iter().filter_map(|o| o.maybe).collect();
    let ok = (0..1u32 << maybes.len()).any(|mask| {
        let mut m = base.clone();
        for (i, &(a, b, amt)) in maybes.iter().enumerate() {
            if mask & (1 << i) != 0 {
                m[a as usize] -= amt;
                m[b as usize] += amt;
            }
        }
        m == got
    });
    assert!(ok, "{what}: balances differ from the committed transfers");
    eprintln!(
        "{what}: transfers committed {}, audits {}",
        outs.iter().map(|o| o.committed.len()).sum::<usize>(),
        outs[0].audits
    );
}

#[test]
fn review_transfers_and_audits_with_a_power_cut() {
    // REVIEW_ROUNDS=n runs more rounds (a longer hunt); the default keeps the test fast.
    let rounds = std::env::var("REVIEW_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6u64);
    for seed in 0..rounds {
        round(seed, 500 + seed * 1711 % 5000);
    }
}
