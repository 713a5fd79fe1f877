//! Inserts and deletes of distinct keys by several threads among cursor scans.

use super::*;

pub const WRITERS: u64 = 4;
pub const SCANNERS: u64 = 2;

/// Data key `n` of writer `w`.
pub fn dkey(w: u64, n: u64) -> Vec<u8> {
    format!("d{w}-{n:06}").into_bytes()
}

/// The key holding how many data keys writer `w` has.
pub fn ckey(w: u64) -> Vec<u8> {
    format!("n{w}").into_bytes()
}

/// The value of a data key: derived from it, mostly short, one in 16 longer than a page.
pub fn dval(k: &[u8]) -> Vec<u8> {
    let h = k
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
        .max(1);
    let len = if h % 16 == 0 {
        4500 + (h >> 8) % 2000
    } else {
        8 + (h >> 8) % 120
    };
    crate::support::value(h, len as usize)
}

/// Parses a data key: (writer, n).
fn parse(k: &[u8]) -> Option<(u64, u64)> {
    let s = std::str::from_utf8(k).ok()?.strip_prefix('d')?;
    let (w, n) = s.split_once('-')?;
    Some((w.parse().ok()?, n.parse().ok()?))
}

/// A writer: transactions of one to four inserts of new keys or deletes of its live keys,
/// each also writing its count key; returns its committed keys.
pub fn writer(db: &Db, t: &Tree, w: u64, stop: &Stop) -> Result<(BTreeSet<u64>, u64, u64), String> {
    let mut rng = rng_for(seed(), 500 + w);
    let mut live = BTreeSet::new();
    let mut next = 0u64;
    let (mut commits, mut retries) = (0u64, 0u64);
    while commits < 1500 && !stop.now() {
        // The transaction's changes, decided before its first attempt.
        let mut staged = live.clone();
        let mut ops = Vec::new();
        for _ in 0..rng.random_range(1..=4) {
            if staged.is_empty() || rng.random_bool(0.7) {
                staged.insert(next);
                ops.push((next, true));
                next += 1;
            } else {
                let i = rng.random_range(0..staged.len());
                let n = *staged.iter().nth(i).unwrap();
                staged.remove(&n);
                ops.push((n, false));
            }
        }
        let count = staged.len() as u64;
        let r = retry(stop, &mut rng, &mut retries, |_| {
            run_txn(db.begin()?, |x| {
                for &(n, insert) in &ops {
                    let k = dkey(w, n);
                    let old = if insert {
                        x.put(t, &k, &dval(&k))?
                    } else {
                        x.delete(t, &k)?
                    };
                    if old.is_some() == insert {
                        return Err(Fail::Fatal(format!(
                            "{} of {} found {:?} before",
                            if insert { "insert" } else { "delete" },
                            String::from_utf8_lossy(&k),
                            old.map(|v| v.len())
                        )));
                    }
                }
                x.put(t, &ckey(w), &count.to_le_bytes())?;
                Ok(())
            })
        })
        .map_err(|e| format!("writer {w}: {e}"))?;
        match r {
            Some(()) => {
                live = staged;
                commits += 1;
            }
            None => break,
        }
    }
    if commits == 0 {
        return Err(format!("writer {w} committed nothing ({retries} retries)"));
    }
    Ok((live, commits, retries))
}

/// One cursor read in `x`: over all keys or a random range, either way. Checks the keys are
/// strictly ordered (so unique) and in the range, each data key has its value, and on a
/// full read that each writer's count key matches its data keys (the read is one state).
pub fn scan_once(x: &mut Txn, t: &Tree, rng: &mut Pcg64Mcg) -> Result<usize, Fail> {
    let reverse = rng.random_bool(0.5);
    let full = rng.random_bool(0.5);
    let (lo, hi) = {
        let w = rng.random_range(0..WRITERS);
        let a = rng.random_range(0..2000);
        (dkey(w, a), dkey(w, a + rng.random_range(0..400)))
    };
    let range = if full {
        ALL
    } else {
        (Bound::Included(&lo[..]), Bound::Excluded(&hi[..]))
    };
    let mut prev: Option<Vec<u8>> = None;
    let mut data = BTreeMap::<u64, u64>::new();
    let mut counts = BTreeMap::<u64, u64>::new();
    let mut n = 0;
    for kv in x.cursor(t, range, reverse)? {
        let (k, v) = kv?;
        let show = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
        if let Some(p) = &prev {
            let ordered = if reverse { k < *p } else { k > *p };
            if !ordered {
                return Err(Fail::Fatal(format!(
                    "cursor (reverse {reverse}): {} after {}",
                    show(&k),
                    show(p)
                )));
            }
        }
        if !full && (k < lo || k >= hi) {
            return Err(Fail::Fatal(format!(
                "cursor over [{}, {}) returned {}",
                show(&lo),
                show(&hi),
                show(&k)
            )));
        }
        if let Some((w, _)) = parse(&k) {
            if v != dval(&k) {
                return Err(Fail::Fatal(format!("{}: a wrong value", show(&k))));
            }
            *data.entry(w).or_default() += 1;
        } else if let Some(w) = k.strip_prefix(b"n") {
            let w: u64 = std::str::from_utf8(w)
                .ok()
                .and_then(|w| w.parse().ok())
                .ok_or_else(|| Fail::Fatal(format!("unexpected key {}", show(&k))))?;
            counts.insert(w, u64_of(&v, "count")?);
        } else {
            return Err(Fail::Fatal(format!("unexpected key {}", show(&k))));
        }
        prev = Some(k);
        n += 1;
    }
    if full {
        for (w, c) in &counts {
            let seen = data.get(w).copied().unwrap_or(0);
            if seen != *c {
                return Err(Fail::Fatal(format!(
                    "a full cursor read saw {seen} keys of writer {w}, whose count key \
                     says {c}: not one state"
                )));
            }
        }
    }
    Ok(n)
}

/// Every committed key of every writer, with its value and the count keys, and nothing else.
pub fn check_final(db: &Db, lives: &[BTreeSet<u64>], what: &str) -> Result<(), String> {
    let mut want = Vec::new();
    for (w, live) in lives.iter().enumerate() {
        for &n in live {
            let k = dkey(w as u64, n);
            let v = dval(&k);
            want.push((k, v));
        }
        want.push((ckey(w as u64), (live.len() as u64).to_le_bytes().to_vec()));
    }
    want.sort();
    let t = db.open_tree("mixed").map_err(|e| format!("{what}: {e}"))?;
    let mut x = db.begin().map_err(|e| format!("{what}: {e}"))?;
    let got = x
        .scan(&t, ALL, false, usize::MAX)
        .map_err(|e| format!("{what}: {e}"))?;
    x.commit().map_err(|e| format!("{what}: {e}"))?;
    if got != want {
        let g: BTreeSet<&Vec<u8>> = got.iter().map(|(k, _)| k).collect();
        let w: BTreeSet<&Vec<u8>> = want.iter().map(|(k, _)| k).collect();
        let show = |ks: Vec<&&Vec<u8>>| {
            ks.iter()
                .take(10)
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        };
        return Err(format!(
            "{what}: {} rows, {} committed; missing: {}; extra: {}",
            got.len(),
            want.len(),
            show(w.difference(&g).collect()),
            show(g.difference(&w).collect())
        ));
    }
    let counts = db.verify().map_err(|e| format!("{what}: verify: {e}"))?;
    if counts != vec![("mixed".to_string(), want.len() as u64)] {
        return Err(format!("{what}: verify counts {counts:?}"));
    }
    Ok(())
}
