//! The YCSB core workloads (Cooper et al., SoCC 2010) as an engine-independent stream of key-value
//! operations, deterministic from a seed. A driver elsewhere applies them to a database.
//!
//! | workload | mix | key choice (standard) |
//! |---|---|---|
//! | A | 50% read, 50% update | zipf 0.99 |
//! | B | 95% read, 5% update | zipf 0.99 |
//! | C | 100% read | zipf 0.99 |
//! | D | 95% read, 5% insert | latest |
//! | E | 95% scan (length uniform in 1..=100), 5% insert | zipf 0.99 |
//! | F | 50% read, 50% read-modify-write | zipf 0.99 |
//! | WO | 100% update (write-only) | zipf 0.99 |
//!
//! The key choice defaults to [`KeyDist::Standard`], the one in this table; any workload can
//! take any other.
//!
//! Records have ids `0..key_count`: `0..record_count` are loaded, later ones are inserted in
//! order. The key of id `i` is `"user"` followed by `i` in decimal, zero-padded to fill
//! `key_bytes`, so keys sort as their ids do and inserts append at the end of the key space (YCSB's
//! `insertorder=ordered`). Key choice ([`KeyDist`]):
//! - `uniform`: every existing id equally likely.
//! - `zipf:THETA`: Zipfian ranks ([`crate::zipf::Zipfian`], YCSB's generator) over the ids that
//!   exist; the loaded ids are ranked through a fixed permutation ([`crate::zipf::Scrambler`]) so
//!   the hot keys are spread over the key space (YCSB's `ScrambledZipfianGenerator`); ids inserted
//!   later take the next ranks, so inserts never change the popularity of loaded records.
//! - `latest`: Zipfian (theta 0.99) over recency, the newest insert the most popular (YCSB's
//!   `SkewedLatestGenerator`).
//!
//! Values come from a [`ValueGen`] whose 4 KiB pages LZ4-compress to `compressibility`. Their
//! sizes follow [`ValueSizes`]: all `value_bytes` (the default), or a distribution in which each
//! record id has its own size for good (a hash of the seed and the id), so an update or
//! read-modify-write rewrites a record at its own size and an insert takes its new id's size.
//!
//! One generator hands out insert ids in order; a driver that runs several clients from one
//! generator should expect a read of a just-inserted key (common under `latest`) to find nothing
//! if that insert has not been applied yet.

mod config;
mod sizes;

pub use sizes::{SizeSampler, ValueSizes, MIX_MAX_BYTES, MIX_MIN_BYTES};

pub use config::{
    KeyDist, LoadOrder, OpMix, YcsbConfig, YcsbError, YcsbWorkload, DEFAULT_THETA, LATEST_THETA,
    MAX_KEY_BYTES, MIN_KEY_BYTES,
};

use crate::values::ValueGen;
use crate::zipf::{ScrambledZipf, Scrambler, Zipfian};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

/// Every key starts with this.
pub const KEY_PREFIX: &[u8] = b"user";

/// How many distinct ids keys of `key_bytes` hold: 10^(digits), saturating at `u64::MAX`.
pub fn key_capacity(key_bytes: usize) -> u64 {
    let digits = key_bytes.saturating_sub(KEY_PREFIX.len()) as u32;
    10u64.checked_pow(digits).unwrap_or(u64::MAX)
}

/// Writes the key of `id` into `out`: [`KEY_PREFIX`] then `id` in decimal, zero-padded to fill
/// `out` (an `id` too large for the space keeps its low digits; a too short `out` gets a prefix
/// only).
pub fn write_key(id: u64, out: &mut [u8]) {
    let p = KEY_PREFIX.len().min(out.len());
    out[..p].copy_from_slice(&KEY_PREFIX[..p]);
    let mut x = id;
    for d in out[p..].iter_mut().rev() {
        *d = b'0' + (x % 10) as u8;
        x /= 10;
    }
}

/// The id of a key made by [`write_key`], if it is one.
pub fn key_id(key: &[u8]) -> Option<u64> {
    let digits = key.strip_prefix(KEY_PREFIX)?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, d| {
        acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

/// Which kind an operation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum YcsbOpKind {
    /// [`YcsbOp::Read`].
    Read,
    /// [`YcsbOp::Update`].
    Update,
    /// [`YcsbOp::Insert`].
    Insert,
    /// [`YcsbOp::Scan`].
    Scan,
    /// [`YcsbOp::ReadModifyWrite`].
    ReadModifyWrite,
}

/// One key-value operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum YcsbOp {
    /// Read the record of `key`.
    Read {
        /// An existing key.
        key: Vec<u8>,
    },
    /// Overwrite the record of `key` with `value`.
    Update {
        /// An existing key.
        key: Vec<u8>,
        /// The new value.
        value: Vec<u8>,
    },
    /// Add a new record.
    Insert {
        /// A key that does not exist yet (the next id).
        key: Vec<u8>,
        /// Its value.
        value: Vec<u8>,
    },
    /// Read `len` records in key order from `start_key` (fewer at the end of the key space).
    Scan {
        /// An existing key.
        start_key: Vec<u8>,
        /// Number of records, in `1..=max_scan_len`.
        len: usize,
    },
    /// Read the record of `key`, then overwrite it with `value`.
    ReadModifyWrite {
        /// An existing key.
        key: Vec<u8>,
        /// The new value.
        value: Vec<u8>,
    },
}

impl YcsbOp {
    /// The kind of operation.
    pub fn kind(&self) -> YcsbOpKind {
        match self {
            YcsbOp::Read { .. } => YcsbOpKind::Read,
            YcsbOp::Update { .. } => YcsbOpKind::Update,
            YcsbOp::Insert { .. } => YcsbOpKind::Insert,
            YcsbOp::Scan { .. } => YcsbOpKind::Scan,
            YcsbOp::ReadModifyWrite { .. } => YcsbOpKind::ReadModifyWrite,
        }
    }

    /// The key the operation is about (the start key of a scan).
    pub fn key(&self) -> &[u8] {
        match self {
            YcsbOp::Read { key }
            | YcsbOp::Update { key, .. }
            | YcsbOp::Insert { key, .. }
            | YcsbOp::ReadModifyWrite { key, .. } => key,
            YcsbOp::Scan { start_key, .. } => start_key,
        }
    }

    /// The value written, if any.
    pub fn value(&self) -> Option<&[u8]> {
        match self {
            YcsbOp::Update { value, .. }
            | YcsbOp::Insert { value, .. }
            | YcsbOp::ReadModifyWrite { value, .. } => Some(value),
            YcsbOp::Read { .. } | YcsbOp::Scan { .. } => None,
        }
    }
}

/// Per-distribution key choice state.
#[derive(Clone, Debug)]
enum Chooser {
    Uniform,
    Zipf(ScrambledZipf),
    Latest(Zipfian),
}

/// Yields the [`YcsbOp`]s of a [`YcsbConfig`] and the records its loader inserts.
#[derive(Clone, Debug)]
pub struct YcsbGenerator {
    cfg: YcsbConfig,
    /// Cumulative shares and kinds, zero shares left out.
    thresholds: Vec<(f64, YcsbOpKind)>,
    chooser: Chooser,
    rng: Pcg64Mcg,
    values: ValueGen,
    sizes: SizeSampler,
    load_perm: Scrambler,
    inserted: u64,
    key_capacity: u64,
}

impl YcsbGenerator {
    /// A generator for `cfg`; errors on any bad field, or a compressibility these key and value
    /// sizes cannot reach.
    pub fn new(cfg: &YcsbConfig) -> Result<YcsbGenerator, YcsbError> {
        cfg.validate()?;
        let dist = cfg.key_dist();
        let n = cfg.record_count;
        let bad_dist = |e: crate::zipf::ZipfError| YcsbError::BadDist {
            input: dist.to_string(),
            reason: e.to_string(),
        };
        let chooser = match dist {
            KeyDist::Uniform => Chooser::Uniform,
            KeyDist::Zipf { theta } => {
                Chooser::Zipf(ScrambledZipf::new(n, theta).map_err(bad_dist)?)
            }
            KeyDist::Standard => {
                Chooser::Zipf(ScrambledZipf::new(n, DEFAULT_THETA).map_err(bad_dist)?)
            }
            KeyDist::Latest => Chooser::Latest(Zipfian::new(n, LATEST_THETA).map_err(bad_dist)?),
        };
        let m = cfg.workload.mix();
        let mut thresholds = Vec::new();
        let mut sum = 0.0;
        for (share, kind) in [
            (m.read, YcsbOpKind::Read),
            (m.update, YcsbOpKind::Update),
            (m.insert, YcsbOpKind::Insert),
            (m.scan, YcsbOpKind::Scan),
            (m.read_modify_write, YcsbOpKind::ReadModifyWrite),
        ] {
            if share > 0.0 {
                sum += share;
                thresholds.push((sum, kind));
            }
        }
        let sizes = cfg.value_sizes.sampler(cfg.value_bytes, cfg.seed);
        let values = match sizes.constant() {
            Some(n) => ValueGen::for_records(n, cfg.key_bytes, cfg.compressibility, cfg.seed)?,
            None => {
                // Calibrated on sizes of a seed of its own, as the fixed-size calibration does
                // not depend on the seed either.
                let calibration = cfg.value_sizes.sampler(cfg.value_bytes, 0);
                ValueGen::for_sized_records(
                    sizes.mean_bytes().round() as usize,
                    cfg.key_bytes,
                    cfg.compressibility,
                    cfg.seed,
                    &|id| calibration.size_of(id),
                )?
            }
        };
        Ok(YcsbGenerator {
            cfg: cfg.clone(),
            thresholds,
            chooser,
            rng: Pcg64Mcg::seed_from_u64(cfg.seed),
            values,
            sizes,
            load_perm: Scrambler::seeded(n, cfg.seed),
            inserted: 0,
            key_capacity: key_capacity(cfg.key_bytes),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &YcsbConfig {
        &self.cfg
    }

    /// The value generator (its calibrated ratio, for reports).
    pub fn values(&self) -> &ValueGen {
        &self.values
    }

    /// The value size of record `id` (its size in the load and in every later write).
    pub fn value_size(&self, id: u64) -> usize {
        self.sizes.size_of(id)
    }

    /// Records that exist now: the loaded ones plus those inserted so far.
    pub fn key_count(&self) -> u64 {
        self.cfg.record_count + self.inserted
    }

    /// Inserts issued so far.
    pub fn inserted(&self) -> u64 {
        self.inserted
    }

    /// The key of record `id`.
    pub fn key(&self, id: u64) -> Vec<u8> {
        let mut k = vec![0u8; self.cfg.key_bytes];
        write_key(id, &mut k);
        k
    }

    /// The id of the `i`-th record the loader inserts (`i < record_count`): `i` itself in
    /// [`LoadOrder::Ordered`], a permutation of `0..record_count` in [`LoadOrder::Hashed`].
    ///
    /// # Panics
    /// If `i >= record_count`, as a slice index out of bounds would.
    pub fn load_id(&self, i: u64) -> u64 {
        let n = self.cfg.record_count;
        assert!(
            i < n,
            "load index {i} out of range: the load has {n} records"
        );
        match self.cfg.load_order {
            LoadOrder::Ordered => i,
            LoadOrder::Hashed => self.load_perm.apply(i),
        }
    }

    /// The key of the `i`-th record the loader inserts.
    pub fn load_key(&self, i: u64) -> Vec<u8> {
        self.key(self.load_id(i))
    }

    /// The value of the `i`-th record the loader inserts: depends only on the seed and the
    /// record, so loaders may build records in any order or in parallel.
    pub fn load_value(&self, i: u64) -> Vec<u8> {
        let id = self.load_id(i);
        match self.sizes.constant() {
            Some(_) => self.values.value_at(id),
            None => {
                let mut v = vec![0u8; self.sizes.size_of(id)];
                self.values.fill_at(id, &mut v);
                v
            }
        }
    }

    /// The next value of the stream, of record `id`'s size.
    fn next_value(&mut self, id: u64) -> Vec<u8> {
        match self.sizes.constant() {
            // Exactly what the generator did before value sizes could vary.
            Some(_) => self.values.next_value(),
            None => {
                let mut v = vec![0u8; self.sizes.size_of(id)];
                self.values.fill(&mut v);
                v
            }
        }
    }

    /// All records of the load, in load order.
    pub fn load_records(&self) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> + '_ {
        (0..self.cfg.record_count).map(|i| (self.load_key(i), self.load_value(i)))
    }

    fn choose_id(&mut self) -> u64 {
        let n = self.key_count();
        match &self.chooser {
            Chooser::Uniform => self.rng.random_range(0..n),
            Chooser::Zipf(z) => z.sample(&mut self.rng),
            Chooser::Latest(z) => n - 1 - z.sample(&mut self.rng),
        }
    }

    fn chosen_key(&mut self) -> Vec<u8> {
        let id = self.choose_id();
        self.key(id)
    }

    /// A chosen key and a new value for it (key first, then value, from the one stream).
    fn chosen_write(&mut self) -> (Vec<u8>, Vec<u8>) {
        let id = self.choose_id();
        (self.key(id), self.next_value(id))
    }

    /// The next operation. An insert once the key space is full (never with 24-byte keys)
    /// becomes an update.
    pub fn next_op(&mut self) -> YcsbOp {
        let u: f64 = self.rng.random();
        let kind = self
            .thresholds
            .iter()
            .find(|(t, _)| u < *t)
            .or(self.thresholds.last())
            .map_or(YcsbOpKind::Read, |&(_, k)| k);
        match kind {
            YcsbOpKind::Read => YcsbOp::Read {
                key: self.chosen_key(),
            },
            YcsbOpKind::Update => {
                let (key, value) = self.chosen_write();
                YcsbOp::Update { key, value }
            }
            YcsbOpKind::Insert if self.key_count() < self.key_capacity => {
                let id = self.key_count();
                let key = self.key(id);
                self.inserted += 1;
                let n = self.key_count();
                match &mut self.chooser {
                    Chooser::Uniform => {}
                    Chooser::Zipf(z) => z.grow_to(n),
                    Chooser::Latest(z) => z.grow_to(n),
                }
                YcsbOp::Insert {
                    key,
                    value: self.next_value(id),
                }
            }
            YcsbOpKind::Insert => {
                let (key, value) = self.chosen_write();
                YcsbOp::Update { key, value }
            }
            YcsbOpKind::Scan => {
                let start_key = self.chosen_key();
                let len = self.rng.random_range(1..=self.cfg.max_scan_len);
                YcsbOp::Scan { start_key, len }
            }
            YcsbOpKind::ReadModifyWrite => {
                let (key, value) = self.chosen_write();
                YcsbOp::ReadModifyWrite { key, value }
            }
        }
    }
}

impl Iterator for YcsbGenerator {
    type Item = YcsbOp;
    /// Never ends.
    fn next(&mut self) -> Option<YcsbOp> {
        Some(self.next_op())
    }
}

#[cfg(test)]
mod tests;
