//! Division of 32-bit values by a divisor fixed when the device is built (units per erase unit,
//! per page, ...), by one multiplication instead of a hardware divide, which costs tens of cycles
//! on the hot paths. Method of Lemire, Kaser and Kurz, "Faster Remainder by Direct Computation"
//! (2019): with `c = ceil(2^64 / d)`, `n / d = (c * n) >> 64` for every 32-bit `n` and `d >= 2`.

#[derive(Clone, Copy, Debug)]
pub(crate) struct Divisor {
    /// `ceil(2^64 / d)`, or 0 when `d == 1`.
    c: u64,
    d: u32,
}

impl Divisor {
    pub fn new(d: u32) -> Self {
        assert!(d > 0, "division by zero");
        Divisor {
            c: if d == 1 { 0 } else { u64::MAX / d as u64 + 1 },
            d,
        }
    }

    /// `n / d`.
    #[inline(always)]
    pub fn div(self, n: u32) -> u32 {
        if self.d == 1 {
            return n;
        }
        ((self.c as u128 * n as u128) >> 64) as u32
    }

    /// `(n / d, n % d)`.
    #[inline(always)]
    pub fn div_rem(self, n: u32) -> (u32, u32) {
        let q = self.div(n);
        (q, n - q * self.d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn agrees_with_hardware_division() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
        let mut divisors: Vec<u32> = vec![1, 2, 3, 4, 5, 7, 64, 384, 98_304, 196_608, 65_535];
        divisors.extend([u32::MAX, u32::MAX - 1, 1 << 31, (1 << 31) + 1]);
        divisors.extend((0..200).map(|_| rng.random_range(1..=u32::MAX)));
        divisors.extend((0..200).map(|_| rng.random_range(1..100_000)));
        for &d in &divisors {
            let div = Divisor::new(d);
            let mut ns: Vec<u32> = vec![0, 1, d - 1, d, d.wrapping_add(1), u32::MAX, u32::MAX - 1];
            ns.extend((0..2000).map(|_| rng.random::<u32>()));
            ns.extend((0..200).map(|_| rng.random_range(0..=d)));
            for n in ns {
                assert_eq!(div.div(n), n / d, "{n} / {d}");
                assert_eq!(div.div_rem(n), (n / d, n % d), "{n} % {d}");
            }
        }
    }
}
