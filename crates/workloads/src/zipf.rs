//! Skewed key choice shared by the generators: a fixed permutation that spreads ranks over a
//! range ([`Scrambler`]) and YCSB's Zipfian rank generator ([`Zipfian`], [`ScrambledZipf`]).
//!
//! # Which Zipf sampler
//! [`synthetic`](crate::synthetic) keeps [`rand_distr::Zipf`] (rejection-inversion): O(1) setup,
//! exact, any exponent, but about 170-190 ns a sample at theta 0.8-0.99 (many rejections). YCSB
//! needs a key space that grows with every insert and many samples per second, so [`Zipfian`] is
//! YCSB's `ZipfianGenerator` (Gray et al., "Quickly generating billion-record synthetic
//! databases", SIGMOD 1994): one `powf` a sample (about 25 ns), with zeta(n) computed in O(1) by
//! Euler-Maclaurin summation (exact to ~1e-13 relative) and extended exactly, term by term, as
//! the space grows. Measured on this machine for n = 10^6 and 10^8 and 10^7 samples:
//!
//! | theta | rand_distr ns/sample | Gray ns/sample | top-1% share rand_distr / Gray |
//! |-------|----------------------|----------------|--------------------------------|
//! | 0.5   | 76-94                | 15-24          | 0.100 / 0.100                  |
//! | 0.8   | 186-193              | 23-25          | 0.362 / 0.365 (n = 10^6)       |
//! | 0.99  | 167-180              | 24-31          | 0.664 / 0.670 (n = 10^6)       |
//!
//! (Summing zeta(n) term by term, as YCSB does, would cost 1.2-1.7 s of setup at n = 10^8.)
//! Gray's closed form needs theta < 1; for theta >= 1 [`Zipfian`] falls back to
//! [`rand_distr::Zipf`].

use rand::Rng;
use rand_distr::{Distribution, Zipf};

/// A fixed bijection of `0..n` that spreads neighbouring inputs over the whole range: a
/// multiply-xorshift permutation of the enclosing power of two, with cycle walking to stay below
/// `n` (fewer than two rounds on average).
#[derive(Clone, Debug)]
pub struct Scrambler {
    n: u64,
    bits: u32,
    mask: u64,
    add: u64,
}

impl Scrambler {
    /// A permutation of `0..n` (`n >= 1`).
    pub fn new(n: u64) -> Scrambler {
        Scrambler::with_offset(n, 0x632B_E59B_D9B4_E019)
    }

    /// Another permutation of `0..n`, one per `seed` ([`Scrambler::new`] is one of them).
    pub fn seeded(n: u64, seed: u64) -> Scrambler {
        Scrambler::with_offset(n, 0x632B_E59B_D9B4_E019 ^ splitmix64(seed))
    }

    fn with_offset(n: u64, add: u64) -> Scrambler {
        let n = n.max(1);
        let bits = 64 - (n - 1).leading_zeros();
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        Scrambler { n, bits, mask, add }
    }

    /// A bijection of `0..2^bits`: every step (odd multiply, add, right xorshift) is invertible
    /// modulo a power of two.
    fn round(&self, mut x: u64) -> u64 {
        if self.bits == 0 {
            return 0;
        }
        let m = self.mask;
        x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(self.add) & m;
        x ^= x >> (self.bits / 2 + 1);
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9) & m;
        x ^= x >> (self.bits / 3 + 1);
        x = x.wrapping_mul(0x94D0_49BB_1331_11EB) & m;
        x
    }

    /// The image of `x` (`x < n`).
    pub fn apply(&self, x: u64) -> u64 {
        debug_assert!(x < self.n);
        let mut y = self.round(x);
        while y >= self.n {
            y = self.round(y);
        }
        y
    }
}

/// SplitMix64's finaliser: a well-mixed 64-bit hash of `x`.
pub(crate) fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Bad parameters for a Zipf distribution.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ZipfError {
    /// The exponent is negative, infinite or not a number.
    #[error("zipf theta {0} must be a finite number >= 0")]
    BadTheta(f64),
    /// An empty item set.
    #[error("a zipf distribution needs at least one item")]
    NoItems,
}

/// Below this many terms zeta(n) is summed exactly; above, Euler-Maclaurin takes over.
const ZETA_EXACT_TERMS: u64 = 64;
/// Growing the space by at most this many items adds the new terms one by one.
const ZETA_INCREMENTAL_MAX: u64 = 1 << 16;

/// zeta(n, theta) = sum of `1 / i^theta` for `i` in `1..=n`, in O(1): the first 63 terms
/// exactly, the tail by Euler-Maclaurin summation with corrections up to the fifth derivative
/// (the next term is below 1e-14 of the sum).
pub fn zeta(n: u64, theta: f64) -> f64 {
    let exact_to = n.min(ZETA_EXACT_TERMS - 1);
    let head: f64 = (1..=exact_to).map(|i| (i as f64).powf(-theta)).sum();
    if n < ZETA_EXACT_TERMS {
        return head;
    }
    // sum_{i=a}^{b} f(i) = int_a^b f + (f(a) + f(b)) / 2
    //   + sum_k B_2k / (2k)! (f^(2k-1)(b) - f^(2k-1)(a)), with f(x) = x^-theta.
    let (a, b, t) = (ZETA_EXACT_TERMS as f64, n as f64, theta);
    let f = |x: f64| x.powf(-t);
    let integral = if (t - 1.0).abs() < 1e-12 {
        (b / a).ln()
    } else {
        (b.powf(1.0 - t) - a.powf(1.0 - t)) / (1.0 - t)
    };
    let d1 = |x: f64| -t * x.powf(-t - 1.0);
    let d3 = |x: f64| -t * (t + 1.0) * (t + 2.0) * x.powf(-t - 3.0);
    let d5 = |x: f64| -t * (t + 1.0) * (t + 2.0) * (t + 3.0) * (t + 4.0) * x.powf(-t - 5.0);
    let tail = integral + (f(a) + f(b)) / 2.0 + (d1(b) - d1(a)) / 12.0 - (d3(b) - d3(a)) / 720.0
        + (d5(b) - d5(a)) / 30240.0;
    head + tail
}

#[derive(Clone, Debug)]
enum ZipfKind {
    /// Gray et al.'s closed form (theta < 1).
    Gray {
        zeta_n: f64,
        zeta_2: f64,
        alpha: f64,
        eta: f64,
        half_pow_theta: f64,
    },
    /// Rejection-inversion (theta >= 1).
    Exact(Zipf<f64>),
}

/// Zipf-distributed ranks over `0..n` (rank 0 the most popular): rank `r` with probability
/// proportional to `1 / (r + 1)^theta`. YCSB's `ZipfianGenerator`; see the module documentation.
#[derive(Clone, Debug)]
pub struct Zipfian {
    n: u64,
    theta: f64,
    kind: ZipfKind,
}

impl Zipfian {
    /// Ranks over `0..n` with exponent `theta` (0 is uniform, 0.99 YCSB's default).
    pub fn new(n: u64, theta: f64) -> Result<Zipfian, ZipfError> {
        if !(theta.is_finite() && theta >= 0.0) {
            return Err(ZipfError::BadTheta(theta));
        }
        if n == 0 {
            return Err(ZipfError::NoItems);
        }
        let kind = if theta < 1.0 {
            let zeta_2 = 1.0 + 0.5f64.powf(theta);
            ZipfKind::Gray {
                zeta_n: zeta(n, theta),
                zeta_2,
                alpha: 1.0 / (1.0 - theta),
                eta: 0.0,
                half_pow_theta: 0.5f64.powf(theta),
            }
        } else {
            ZipfKind::Exact(Zipf::new(n as f64, theta).map_err(|_| ZipfError::BadTheta(theta))?)
        };
        let mut z = Zipfian { n, theta, kind };
        z.update_eta();
        Ok(z)
    }

    fn update_eta(&mut self) {
        let (n, theta) = (self.n as f64, self.theta);
        if let ZipfKind::Gray {
            zeta_n,
            zeta_2,
            eta,
            ..
        } = &mut self.kind
        {
            *eta = if self.n <= 2 {
                0.0 // never used: ranks 0 and 1 are decided before eta
            } else {
                (1.0 - (2.0 / n).powf(1.0 - theta)) / (1.0 - *zeta_2 / *zeta_n)
            };
        }
    }

    /// Number of ranks.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The exponent.
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// Extends the ranks to `0..n` (no-op if `n` is not larger): O(1) for large jumps, exact term
    /// additions for small ones.
    pub fn grow_to(&mut self, n: u64) {
        if n <= self.n {
            return;
        }
        let (old, theta) = (self.n, self.theta);
        match &mut self.kind {
            ZipfKind::Gray { zeta_n, .. } => {
                if n - old <= ZETA_INCREMENTAL_MAX {
                    for i in old + 1..=n {
                        *zeta_n += (i as f64).powf(-theta);
                    }
                } else {
                    *zeta_n = zeta(n, theta);
                }
            }
            ZipfKind::Exact(z) => {
                *z = Zipf::new(n as f64, theta).expect("parameters were checked in new");
            }
        }
        self.n = n;
        self.update_eta();
    }

    /// A rank in `0..n`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match &self.kind {
            ZipfKind::Gray {
                zeta_n,
                alpha,
                eta,
                half_pow_theta,
                ..
            } => {
                let u: f64 = rng.random();
                let uz = u * zeta_n;
                if uz < 1.0 || self.n == 1 {
                    return 0;
                }
                if uz < 1.0 + half_pow_theta || self.n == 2 {
                    return 1;
                }
                let r = (self.n as f64 * (eta * u - eta + 1.0).powf(*alpha)) as u64;
                r.min(self.n - 1)
            }
            ZipfKind::Exact(z) => (z.sample(rng) as u64).clamp(1, self.n) - 1,
        }
    }
}

/// Zipfian popularity spread over the item space, like YCSB's `ScrambledZipfianGenerator`: the
/// first `scrambled` ranks go through a [`Scrambler`] of `0..scrambled`; ranks added later by
/// [`ScrambledZipf::grow_to`] (items inserted after the load) map to themselves, so the
/// popularity of the original items never changes as the space grows.
#[derive(Clone, Debug)]
pub struct ScrambledZipf {
    zipf: Zipfian,
    scramble: Scrambler,
    scrambled: u64,
}

impl ScrambledZipf {
    /// Items `0..n` with exponent `theta`.
    pub fn new(n: u64, theta: f64) -> Result<ScrambledZipf, ZipfError> {
        Ok(ScrambledZipf {
            zipf: Zipfian::new(n, theta)?,
            scramble: Scrambler::new(n),
            scrambled: n,
        })
    }

    /// Extends the items to `0..n`.
    pub fn grow_to(&mut self, n: u64) {
        self.zipf.grow_to(n);
    }

    /// An item in `0..n`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let rank = self.zipf.sample(rng);
        if rank < self.scrambled {
            self.scramble.apply(rank)
        } else {
            rank
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    fn exact_zeta(n: u64, theta: f64) -> f64 {
        (1..=n).map(|i| (i as f64).powf(-theta)).sum()
    }

    #[test]
    fn zeta_matches_the_exact_sum() {
        for theta in [0.0, 0.5, 0.8, 0.99, 1.0, 1.2] {
            for n in [1u64, 2, 63, 64, 65, 1000, 123_457, 2_000_000] {
                let (e, a) = (exact_zeta(n, theta), zeta(n, theta));
                assert!((e - a).abs() / e < 1e-12, "n {n} theta {theta}: {e} vs {a}");
            }
        }
    }

    #[test]
    fn growing_matches_a_fresh_generator() {
        for theta in [0.5, 0.99, 1.1] {
            let mut z = Zipfian::new(10, theta).unwrap();
            for n in [11u64, 500, 200_000, 200_001] {
                z.grow_to(n);
                let fresh = Zipfian::new(n, theta).unwrap();
                let (mut r1, mut r2) = (Pcg64Mcg::seed_from_u64(3), Pcg64Mcg::seed_from_u64(3));
                let a: Vec<u64> = (0..1000).map(|_| z.sample(&mut r1)).collect();
                let b: Vec<u64> = (0..1000).map(|_| fresh.sample(&mut r2)).collect();
                assert_eq!(a, b, "theta {theta} n {n}");
            }
        }
    }

    #[test]
    fn rank_frequencies_follow_zipf() {
        let mut rng = Pcg64Mcg::seed_from_u64(9);
        for theta in [0.0, 0.5, 0.99, 1.0, 1.5] {
            let n = 1000u64;
            let z = Zipfian::new(n, theta).unwrap();
            let mut counts = vec![0u64; n as usize];
            let draws = 400_000;
            for _ in 0..draws {
                counts[z.sample(&mut rng) as usize] += 1;
            }
            let zn = zeta(n, theta);
            // Ranks 0 and 1 are exact in both samplers; the top 10% is close.
            for r in [0usize, 1] {
                let p = ((r + 1) as f64).powf(-theta) / zn;
                let got = counts[r] as f64 / draws as f64;
                assert!(
                    (got - p).abs() < 0.01,
                    "theta {theta} rank {r}: {got} vs {p}"
                );
            }
            let top = counts[..100].iter().sum::<u64>() as f64 / draws as f64;
            let want = zeta(100, theta) / zn;
            assert!((top - want).abs() < 0.02, "theta {theta}: {top} vs {want}");
        }
    }

    #[test]
    fn tiny_spaces_and_bad_parameters() {
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        let one = Zipfian::new(1, 0.99).unwrap();
        assert!((0..100).all(|_| one.sample(&mut rng) == 0));
        let two = Zipfian::new(2, 0.99).unwrap();
        assert!((0..100).all(|_| two.sample(&mut rng) < 2));
        assert_eq!(Zipfian::new(0, 0.5).unwrap_err(), ZipfError::NoItems);
        assert!(Zipfian::new(5, -0.1).is_err());
        assert!(Zipfian::new(5, f64::NAN).is_err());
    }

    #[test]
    fn scrambled_keeps_old_items_and_adds_new_ones_at_the_tail() {
        let mut s = ScrambledZipf::new(1000, 0.99).unwrap();
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let hottest = (0..10_000).fold(vec![0u32; 1000], |mut c, _| {
            c[s.sample(&mut rng) as usize] += 1;
            c
        });
        let top = (0..1000).max_by_key(|&i| hottest[i]).unwrap() as u64;
        assert_eq!(top, Scrambler::new(1000).apply(0));
        s.grow_to(2000);
        let mut seen_new = false;
        for _ in 0..100_000 {
            let x = s.sample(&mut rng);
            assert!(x < 2000);
            seen_new |= x >= 1000;
        }
        assert!(seen_new);
    }

    #[test]
    fn seeded_scramblers_are_different_bijections() {
        let n = 1000u64;
        let (a, b) = (Scrambler::seeded(n, 1), Scrambler::seeded(n, 2));
        let mut seen = vec![false; n as usize];
        for x in 0..n {
            let y = a.apply(x) as usize;
            assert!(!seen[y]);
            seen[y] = true;
        }
        assert!((0..n).filter(|&x| a.apply(x) == b.apply(x)).count() < 20);
    }
}
