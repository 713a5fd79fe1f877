//! The random functions of the TPC-C specification (clause 2.1.6 and 4.3.2): uniform integers,
//! NURand, random a-strings and n-strings, last names from syllables, zip codes, and data fields
//! that hold "ORIGINAL" 10% of the time.

use super::Counts;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

/// The ten syllables of C_LAST (clause 4.3.2.3).
pub const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// A uniform integer in `lo..=hi`.
pub fn uniform(rng: &mut Pcg64Mcg, lo: u32, hi: u32) -> u32 {
    rng.random_range(lo..=hi)
}

/// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
pub fn nurand(rng: &mut Pcg64Mcg, a: u32, c: u32, x: u32, y: u32) -> u32 {
    let r = rng.random_range(0..=a) | rng.random_range(x..=y);
    ((r.wrapping_add(c)) % (y - x + 1)) + x
}

/// A random a-string (alphanumeric) of length `lo..=hi`.
pub fn astring(rng: &mut Pcg64Mcg, lo: usize, hi: usize) -> Vec<u8> {
    let n = rng.random_range(lo..=hi);
    (0..n)
        .map(|_| ALNUM[rng.random_range(0..ALNUM.len())])
        .collect()
}

/// A random n-string (digits) of length `n`.
pub fn nstring(rng: &mut Pcg64Mcg, n: usize) -> Vec<u8> {
    (0..n).map(|_| b'0' + rng.random_range(0..10u8)).collect()
}

/// The last name of number `n` (0..=999): the syllables of its three digits.
pub fn last_name(n: u32) -> Vec<u8> {
    let mut s = String::with_capacity(15);
    for d in [n / 100 % 10, n / 10 % 10, n % 10] {
        s.push_str(SYLLABLES[d as usize]);
    }
    s.into_bytes()
}

/// A zip code: four random digits then "11111".
pub fn zip(rng: &mut Pcg64Mcg) -> Vec<u8> {
    let mut z = nstring(rng, 4);
    z.extend_from_slice(b"11111");
    z
}

/// I_DATA / S_DATA: an a-string of 26..=50 characters, 10% of them holding "ORIGINAL" at a
/// random position.
pub fn data_field(rng: &mut Pcg64Mcg) -> Vec<u8> {
    let mut d = astring(rng, 26, 50);
    if rng.random_range(0..10) == 0 {
        let at = rng.random_range(0..=d.len() - 8);
        d[at..at + 8].copy_from_slice(b"ORIGINAL");
    }
    d
}

/// A random permutation of `1..=n`.
pub fn permutation(rng: &mut Pcg64Mcg, n: u32) -> Vec<u32> {
    let mut v: Vec<u32> = (1..=n).collect();
    v.shuffle(rng);
    v
}

/// The run-time constants C of NURand (clause 2.1.6.1): one for C_LAST at load time, one for
/// C_LAST at run time (differing by the allowed delta), one for C_ID and one for OL_I_ID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NuConstants {
    /// C for C_LAST in the load.
    pub c_last_load: u32,
    /// C for C_LAST in the run.
    pub c_last_run: u32,
    /// C for C_ID.
    pub c_id: u32,
    /// C for OL_I_ID.
    pub c_item: u32,
}

impl NuConstants {
    /// The constants for a run with `seed` at the scale of `counts`.
    pub fn new(seed: u64, counts: &Counts) -> NuConstants {
        let mut rng = Pcg64Mcg::seed_from_u64(super::mix_seed(seed, u64::MAX));
        let c_last_load = rng.random_range(0..=counts.a_last);
        let c_last_run = if counts.a_last == 255 {
            // Clause 2.1.6.1: 65 <= |C_run - C_load| <= 119, and not 96 or 112.
            loop {
                let c = rng.random_range(0..=255u32);
                let delta = c.abs_diff(c_last_load);
                if (65..=119).contains(&delta) && delta != 96 && delta != 112 {
                    break c;
                }
            }
        } else {
            rng.random_range(0..=counts.a_last)
        };
        NuConstants {
            c_last_load,
            c_last_run,
            c_id: rng.random_range(0..=counts.a_cid),
            c_item: rng.random_range(0..=counts.a_item),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_names_from_syllables() {
        assert_eq!(last_name(0), b"BARBARBAR");
        assert_eq!(last_name(371), b"PRICALLYOUGHT");
        assert_eq!(last_name(999), b"EINGEINGEING");
    }

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        let mut hist = vec![0u32; 3001];
        for _ in 0..200_000 {
            let v = nurand(&mut rng, 1023, 77, 1, 3000);
            assert!((1..=3000).contains(&v));
            hist[v as usize] += 1;
        }
        let max = *hist.iter().max().unwrap() as f64;
        let mean = 200_000.0 / 3000.0;
        assert!(
            max > 2.0 * mean,
            "NURand should be skewed: max {max}, mean {mean}"
        );
    }

    #[test]
    fn run_constant_differs_by_an_allowed_delta() {
        for seed in 0..50 {
            let c = NuConstants::new(seed, &Counts::new(1.0));
            let d = c.c_last_run.abs_diff(c.c_last_load);
            assert!((65..=119).contains(&d) && d != 96 && d != 112);
        }
    }

    #[test]
    fn data_fields() {
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        let mut original = 0;
        for _ in 0..2000 {
            let d = data_field(&mut rng);
            assert!((26..=50).contains(&d.len()));
            if d.windows(8).any(|w| w == b"ORIGINAL") {
                original += 1;
            }
        }
        assert!((120..=280).contains(&original), "{original}");
        assert_eq!(zip(&mut rng).len(), 9);
    }
}
