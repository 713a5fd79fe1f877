//! Value bytes with a tunable LZ4 compressibility.
//!
//! The engine compresses whole 4 KiB pages with LZ4, so what matters is the compressed size of a
//! page full of records. [`ValueGen`] makes values whose pages compress to a chosen ratio
//! (compressed / original): a value is cut into segments of [`SEGMENT_BYTES`]; each segment
//! starts with a run of random bytes from a 64-character printable alphabet (YCSB's values are
//! random characters from such an alphabet) and repeats that run until the segment ends, so LZ4
//! sees a literal run followed by one long match (db_bench's "compressible string" per segment).
//! The share of literal bytes is not derived from a formula: [`ValueGen::for_records`] measures
//! it. It bisects the literal share until [`PAGES_CALIBRATED`] pages of records (a YCSB key, then
//! a value, repeated and cut at 4096 bytes, keys of consecutive ids as in a B-tree leaf) compress
//! with `lz4_flex` to the target ratio. The calibration uses its own fixed seed, so the share
//! depends only on the sizes and the target. A target of 1.0 means incompressible: uniformly
//! random bytes.
//!
//! LZ4 has no entropy stage and only sees the repeats; an entropy coder also gains from the 6-bit
//! characters, as on the paper's data: at the default target, 256 such pages compressed one by
//! one with the `zstd -3` command came to 0.323 of their size (paper 002: ZSTD 34.4 % on YCSB).

use crate::ycsb::write_key;
use crate::zipf::splitmix64;
use rand::{Rng, RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// The LZ4 compressed size of YCSB data as a fraction of the original: 41.2 %, from paper 002
/// (section 3.1, "Page-Wise Compression", table "Comp. Ratio (%)": LZ4 on YCSB-A, 100 GB, loaded
/// into LeanStore; ZSTD 34.4 %).
pub const DEFAULT_LZ4_RATIO: f64 = 0.412;
/// The page the engine compresses, and the unit the calibration measures.
pub const PAGE_BYTES: usize = 4096;
/// Key length the calibration assumes when none is given (YCSB's "user" + 20 digits).
pub const DEFAULT_KEY_BYTES: usize = 24;
/// Length of the segments a value is made of (one literal run + its repeats each).
pub const SEGMENT_BYTES: usize = 256;
/// Pages the calibration compresses at each step.
pub const PAGES_CALIBRATED: usize = 16;
/// Pages the calibration compresses at each step when value sizes vary.
pub const MIXED_PAGES_CALIBRATED: usize = 64;
/// Calibrated ratios may miss the target by this much before it counts as unreachable.
pub const RATIO_TOLERANCE: f64 = 0.02;
/// Largest value [`ValueGen`] accepts.
pub const MAX_VALUE_BYTES: usize = 16 << 20;

const CALIBRATION_SEED: u64 = 0x5EED_CA11_B4A7_E000;
const BISECTION_STEPS: usize = 18;
const STREAM_SALT: u64 = 0xA5A5_0F0F_3C3C_9696;

/// A value generator that cannot be built as asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    /// The target ratio is not in (0, 1].
    #[error("compressibility {0} must be in (0, 1] (compressed / original size; 1 = random)")]
    BadRatio(f64),
    /// The value size is 0 or too large.
    #[error("value size {0} bytes must be in 1..={MAX_VALUE_BYTES}")]
    BadSize(usize),
    /// The target is outside the page ratios these record sizes can reach.
    #[error(
        "compressibility {target} is out of reach for {value_bytes}-byte values with \
         {key_bytes}-byte keys: their pages compress to {lowest:.3}..={highest:.3} \
         (or use 1 for random values)"
    )]
    Unreachable {
        /// The target ratio.
        target: f64,
        /// Value size in bytes.
        value_bytes: usize,
        /// Key size in bytes.
        key_bytes: usize,
        /// The page ratio of the most compressible values.
        lowest: f64,
        /// The page ratio of values without repeats.
        highest: f64,
    },
}

/// Makes values of a fixed size whose 4 KiB pages LZ4-compress to a target ratio; see the module
/// documentation. Deterministic from its seed.
#[derive(Clone, Debug)]
pub struct ValueGen {
    value_bytes: usize,
    target_ratio: f64,
    /// Share of each segment that is a fresh literal run; `None` for uniformly random bytes.
    literal_share: Option<f64>,
    calibrated_ratio: f64,
    seed: u64,
    rng: Pcg64Mcg,
}

impl ValueGen {
    /// Values of `value_bytes` whose pages, with [`DEFAULT_KEY_BYTES`]-byte keys, compress to
    /// `target_ratio` (use [`DEFAULT_LZ4_RATIO`] for the paper's YCSB data).
    pub fn new(value_bytes: usize, target_ratio: f64, seed: u64) -> Result<ValueGen, ValueError> {
        ValueGen::for_records(value_bytes, DEFAULT_KEY_BYTES, target_ratio, seed)
    }

    /// Values of `value_bytes`, calibrated for pages of records with `key_bytes`-byte YCSB keys.
    pub fn for_records(
        value_bytes: usize,
        key_bytes: usize,
        target_ratio: f64,
        seed: u64,
    ) -> Result<ValueGen, ValueError> {
        let sizes = RecordSizes {
            size: &|_| value_bytes,
            pages: PAGES_CALIBRATED,
        };
        ValueGen::calibrated(value_bytes, key_bytes, target_ratio, seed, sizes)
    }

    /// Values whose sizes vary by record: record `id` has `size(id)` bytes (each in
    /// `1..=MAX_VALUE_BYTES`), calibrated for pages of such records (with [`MIXED_PAGES_CALIBRATED`]
    /// pages, as a page holds only a few large ones). [`ValueGen::value_bytes`] is `nominal`
    /// (e.g. the mean size); callers make values of a record's size with [`ValueGen::fill`] and
    /// [`ValueGen::fill_at`].
    pub fn for_sized_records(
        nominal: usize,
        key_bytes: usize,
        target_ratio: f64,
        seed: u64,
        size: &dyn Fn(u64) -> usize,
    ) -> Result<ValueGen, ValueError> {
        let sizes = RecordSizes {
            size,
            pages: MIXED_PAGES_CALIBRATED,
        };
        ValueGen::calibrated(nominal, key_bytes, target_ratio, seed, sizes)
    }

    fn calibrated(
        value_bytes: usize,
        key_bytes: usize,
        target_ratio: f64,
        seed: u64,
        sizes: RecordSizes<'_>,
    ) -> Result<ValueGen, ValueError> {
        if !(target_ratio > 0.0 && target_ratio <= 1.0) {
            return Err(ValueError::BadRatio(target_ratio));
        }
        if value_bytes == 0 || value_bytes > MAX_VALUE_BYTES {
            return Err(ValueError::BadSize(value_bytes));
        }
        let (literal_share, calibrated_ratio) = if target_ratio >= 1.0 {
            (None, page_ratio(None, key_bytes, &sizes))
        } else {
            let lowest = page_ratio(Some(0.0), key_bytes, &sizes);
            let highest = page_ratio(Some(1.0), key_bytes, &sizes);
            if target_ratio < lowest - RATIO_TOLERANCE || target_ratio > highest + RATIO_TOLERANCE {
                return Err(ValueError::Unreachable {
                    target: target_ratio,
                    value_bytes,
                    key_bytes,
                    lowest,
                    highest,
                });
            }
            let (share, got) = calibrate(target_ratio, key_bytes, &sizes, highest);
            (Some(share), got)
        };
        Ok(ValueGen {
            value_bytes,
            target_ratio,
            literal_share,
            calibrated_ratio,
            seed,
            rng: Pcg64Mcg::seed_from_u64(splitmix64(seed ^ STREAM_SALT)),
        })
    }

    /// Size of every value ([`ValueGen::next_value`], [`ValueGen::value_at`]).
    pub fn value_bytes(&self) -> usize {
        self.value_bytes
    }

    /// The ratio asked for.
    pub fn target_ratio(&self) -> f64 {
        self.target_ratio
    }

    /// The page ratio the calibration measured for the chosen literal share.
    pub fn calibrated_ratio(&self) -> f64 {
        self.calibrated_ratio
    }

    /// Share of each segment made of fresh random characters (1.0 for random bytes).
    pub fn literal_share(&self) -> f64 {
        self.literal_share.unwrap_or(1.0)
    }

    /// The next value of this generator's stream.
    pub fn next_value(&mut self) -> Vec<u8> {
        let mut v = vec![0u8; self.value_bytes];
        self.fill(&mut v);
        v
    }

    /// Fills `out` (any length) with the next bytes of this generator's stream.
    pub fn fill(&mut self, out: &mut [u8]) {
        fill_value(self.literal_share, &mut self.rng, out);
    }

    /// Value number `index`: depends only on the seed and `index`, not on other calls (for
    /// loaders, which may run in any order).
    pub fn value_at(&self, index: u64) -> Vec<u8> {
        let mut v = vec![0u8; self.value_bytes];
        self.fill_at(index, &mut v);
        v
    }

    /// Fills `out` with the bytes of value number `index` (see [`ValueGen::value_at`]).
    pub fn fill_at(&self, index: u64, out: &mut [u8]) {
        let mut rng = Pcg64Mcg::seed_from_u64(splitmix64(self.seed ^ splitmix64(index)));
        fill_value(self.literal_share, &mut rng, out);
    }
}

/// Fills `out` segment by segment: a literal run of about `share` of the segment, repeated to
/// the segment's end; uniformly random bytes for `None`.
fn fill_value(share: Option<f64>, rng: &mut Pcg64Mcg, out: &mut [u8]) {
    let Some(share) = share else {
        rng.fill_bytes(out);
        return;
    };
    for seg in out.chunks_mut(SEGMENT_BYTES) {
        // Stochastic rounding keeps the mean literal length at share * len exactly.
        let want = share * seg.len() as f64 + rng.random::<f64>();
        let lit = (want as usize).clamp(1, seg.len());
        fill_alphabet(rng, &mut seg[..lit]);
        let mut filled = lit;
        while filled < seg.len() {
            let n = filled.min(seg.len() - filled);
            seg.copy_within(0..n, filled);
            filled += n;
        }
    }
}

/// Random characters from the 64 printable ASCII characters `' '..='_'`, eight at a time.
fn fill_alphabet(rng: &mut Pcg64Mcg, out: &mut [u8]) {
    const LOW6: u64 = 0x3F3F_3F3F_3F3F_3F3F;
    const SPACE: u64 = 0x2020_2020_2020_2020;
    let mut chunks = out.chunks_exact_mut(8);
    for chunk in &mut chunks {
        // Each byte is at most 63 + 32, so the addition never carries into the next byte.
        chunk.copy_from_slice(&((rng.next_u64() & LOW6) + SPACE).to_le_bytes());
    }
    let tail = chunks.into_remainder();
    if !tail.is_empty() {
        let r = ((rng.next_u64() & LOW6) + SPACE).to_le_bytes();
        tail.copy_from_slice(&r[..tail.len()]);
    }
}

/// LZ4 (block format, `lz4_flex`) compressed size of `data` over its size.
pub fn lz4_ratio(data: &[u8]) -> f64 {
    if data.is_empty() {
        return 1.0;
    }
    lz4_flex::block::compress(data).len() as f64 / data.len() as f64
}

/// Compresses `data` page by page ([`PAGE_BYTES`] each, as the engine does) and returns the
/// total compressed size over the total size.
pub fn page_lz4_ratio(data: &[u8]) -> f64 {
    if data.is_empty() {
        return 1.0;
    }
    let mut out = vec![0u8; lz4_flex::block::get_maximum_output_size(PAGE_BYTES)];
    let compressed: usize = data
        .chunks(PAGE_BYTES)
        .map(|page| lz4_flex::block::compress_into(page, &mut out).expect("output is large enough"))
        .sum();
    compressed as f64 / data.len() as f64
}

/// `pages` pages of records as a B-tree leaf holds them: a `key_bytes` YCSB key of consecutive
/// ids from `first_id`, then a value from `fill`, repeated until the page is full (the last
/// record cut at the page end).
pub fn record_pages(
    pages: usize,
    key_bytes: usize,
    value_bytes: usize,
    first_id: u64,
    fill: impl FnMut(&mut [u8]),
) -> Vec<u8> {
    sized_record_pages(pages, key_bytes, &|_| value_bytes, first_id, fill)
}

/// [`record_pages`] with values of `size(id)` bytes for record `id`.
pub fn sized_record_pages(
    pages: usize,
    key_bytes: usize,
    size: &dyn Fn(u64) -> usize,
    first_id: u64,
    mut fill: impl FnMut(&mut [u8]),
) -> Vec<u8> {
    let mut buf = vec![0u8; pages * PAGE_BYTES];
    let mut record = Vec::new();
    let mut id = first_id;
    for page in buf.chunks_mut(PAGE_BYTES) {
        let mut at = 0;
        while at < page.len() {
            record.resize(key_bytes + size(id), 0);
            write_key(id, &mut record[..key_bytes]);
            fill(&mut record[key_bytes..]);
            id += 1;
            let n = record.len().min(page.len() - at);
            page[at..at + n].copy_from_slice(&record[..n]);
            at += n;
        }
    }
    buf
}

/// The value sizes a calibration measures: `size(id)` per record, over `pages` pages.
struct RecordSizes<'a> {
    size: &'a dyn Fn(u64) -> usize,
    pages: usize,
}

/// The page ratio of records with values of the given literal share (`None`: random bytes),
/// from the fixed calibration seed.
fn page_ratio(share: Option<f64>, key_bytes: usize, sizes: &RecordSizes<'_>) -> f64 {
    let mut rng = Pcg64Mcg::seed_from_u64(CALIBRATION_SEED);
    // Values longer than the calibration needs are generated only as far as they are used.
    let cap = sizes.pages * PAGE_BYTES;
    let size = |id| (sizes.size)(id).min(cap);
    let pages = sized_record_pages(sizes.pages, key_bytes, &size, 1_000_000, |out| {
        fill_value(share, &mut rng, out)
    });
    page_lz4_ratio(&pages)
}

/// Bisects the literal share whose pages compress to `target`; returns the share and the ratio
/// measured for it (the closest one seen; `highest` is the ratio of share 1).
fn calibrate(target: f64, key_bytes: usize, sizes: &RecordSizes<'_>, highest: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    let mut best = (1.0, highest);
    for _ in 0..BISECTION_STEPS {
        let mid = (lo + hi) / 2.0;
        let r = page_ratio(Some(mid), key_bytes, sizes);
        if (r - target).abs() < (best.1 - target).abs() {
            best = (mid, r);
        }
        if r < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    best
}

#[cfg(test)]
mod tests;
