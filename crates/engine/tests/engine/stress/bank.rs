//! Bank transfers: accounts with u64 balances, threads moving money between two of them.

use super::*;

pub const ACCOUNTS: u64 = 64;
pub const INITIAL: u64 = 1000;
pub const TOTAL: u64 = ACCOUNTS * INITIAL;

/// A transfer that committed: from, to, amount.
pub type Transfer = (u64, u64, u64);

pub fn acct(i: u64) -> Vec<u8> {
    // Padded so the accounts span several leaves.
    let mut k = format!("acct{i:03}").into_bytes();
    k.resize(200, b'.');
    k
}

/// Creates the bank tree with every account at `INITIAL`.
pub fn setup(db: &Db) -> Result<Tree, String> {
    let t = db.create_tree("bank").map_err(|e| e.to_string())?;
    let mut x = db.begin().map_err(|e| e.to_string())?;
    for i in 0..ACCOUNTS {
        x.put(&t, &acct(i), &INITIAL.to_le_bytes())
            .map_err(|e| e.to_string())?;
    }
    x.commit().map_err(|e| e.to_string())?;
    Ok(t)
}

pub fn balance(v: Option<Vec<u8>>, i: u64) -> Result<u64, Fail> {
    let v = v.ok_or_else(|| Fail::Fatal(format!("account {i} is missing")))?;
    u64_of(&v, &format!("account {i}"))
}

/// One transfer attempt in `x`: reads both balances and moves `amount` if the source has
/// it. Returns the transfer made, if any.
pub fn transfer(x: &mut Txn, t: &Tree, (a, b, amount): Transfer) -> Result<Option<Transfer>, Fail> {
    let va = balance(x.get(t, &acct(a))?, a)?;
    let vb = balance(x.get(t, &acct(b))?, b)?;
    if va < amount {
        return Ok(None);
    }
    x.put(t, &acct(a), &(va - amount).to_le_bytes())?;
    x.put(t, &acct(b), &(vb + amount).to_le_bytes())?;
    Ok(Some((a, b, amount)))
}

/// What a transfer thread did.
#[derive(Default)]
pub struct Transfers {
    pub made: Vec<Transfer>,
    /// Committed transactions (transfers made, and reads that found too little money).
    pub commits: u64,
    pub retries: u64,
}

/// A transfer thread: random transfers until `target` commits or `stop`; a snapshot
/// transaction (`snapshot`) or a serializable one.
pub fn transfer_thread(
    db: &Db,
    t: &Tree,
    id: u64,
    target: u64,
    snapshot: bool,
    stop: &Stop,
) -> Result<Transfers, String> {
    let mut rng = rng_for(seed(), id);
    let mut out = Transfers::default();
    while out.commits < target && !stop.now() {
        let a = rng.random_range(0..ACCOUNTS);
        let b = (a + rng.random_range(1..ACCOUNTS)) % ACCOUNTS;
        let tr = (a, b, rng.random_range(1..=300));
        let r = retry(stop, &mut rng, &mut out.retries, |_| {
            let x = if snapshot {
                db.begin_snapshot()?
            } else {
                db.begin()?
            };
            run_txn(x, |x| transfer(x, t, tr))
        })
        .map_err(|e| format!("transfer thread {id}: {e}"))?;
        match r {
            Some(made) => {
                out.commits += 1;
                out.made.extend(made);
            }
            None => break,
        }
    }
    Ok(out)
}

/// The balances a full read of the tree in one transaction finds: a scan (`how` 0), a
/// cursor (1), a reverse cursor (2) or one get per account (3). Checks that it finds every
/// account, once each, in key order, and that they add up to `TOTAL`.
pub fn audit(x: &mut Txn, t: &Tree, how: u32) -> Result<Vec<u64>, Fail> {
    let rows: Vec<(Vec<u8>, Vec<u8>)> = match how {
        0 => x.scan(t, ALL, false, usize::MAX)?,
        1 => x.cursor(t, ALL, false)?.collect::<Result<_, _>>()?,
        2 => {
            let mut r: Vec<_> = x.cursor(t, ALL, true)?.collect::<Result<_, _>>()?;
            r.reverse();
            r
        }
        _ => {
            let mut r = Vec::new();
            for i in 0..ACCOUNTS {
                if let Some(v) = x.get(t, &acct(i))? {
                    r.push((acct(i), v));
                }
                if i % 8 == 7 {
                    // A slow reader: other threads commit meanwhile.
                    std::thread::yield_now();
                }
            }
            r
        }
    };
    let keys: Vec<Vec<u8>> = rows.iter().map(|(k, _)| k.clone()).collect();
    let want: Vec<Vec<u8>> = (0..ACCOUNTS).map(acct).collect();
    if keys != want {
        return Err(Fail::Fatal(format!(
            "audit ({how}): {} rows that are not the {ACCOUNTS} accounts in order",
            rows.len()
        )));
    }
    let mut balances = Vec::with_capacity(rows.len());
    for (i, (_, v)) in rows.iter().enumerate() {
        balances.push(u64_of(v, &format!("account {i}"))?);
    }
    let sum: u64 = balances.iter().sum();
    if sum != TOTAL {
        return Err(Fail::Fatal(format!(
            "audit ({how}): the balances add up to {sum}, not {TOTAL}"
        )));
    }
    Ok(balances)
}

/// The balances the committed transfers give.
pub fn expected(outs: &[Transfers]) -> Vec<u64> {
    let mut m = vec![INITIAL as i64; ACCOUNTS as usize];
    for &(a, b, amount) in outs.iter().flat_map(|o| &o.made) {
        m[a as usize] -= amount as i64;
        m[b as usize] += amount as i64;
    }
    m.into_iter().map(|v| v as u64).collect()
}

/// Reads every balance in one transaction (an audit) and compares with `want`.
pub fn check_final(db: &Db, want: &[u64], what: &str) -> Result<(), String> {
    let t = db
        .open_tree("bank")
        .map_err(|e| format!("{what}: open tree: {e}"))?;
    let x = db.begin().map_err(|e| format!("{what}: {e}"))?;
    let got = run_txn(x, |x| audit(x, &t, 0)).map_err(|e| format!("{what}: {e}"))?;
    if got != want {
        let diff: Vec<String> = (0..want.len())
            .filter(|&i| got[i] != want[i])
            .map(|i| format!("account {i}: {} (committed: {})", got[i], want[i]))
            .collect();
        return Err(format!(
            "{what}: balances differ from the committed transfers: {}",
            diff.join(", ")
        ));
    }
    let counts = db.verify().map_err(|e| format!("{what}: verify: {e}"))?;
    if counts != vec![("bank".to_string(), ACCOUNTS)] {
        return Err(format!("{what}: verify counts {counts:?}"));
    }
    Ok(())
}
