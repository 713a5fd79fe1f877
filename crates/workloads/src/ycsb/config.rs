//! YCSB descriptions: the workloads and their mixes, key distributions, load order, the
//! configuration and its errors.

use super::{key_capacity, ValueSizes, KEY_PREFIX};
use crate::values::{ValueError, DEFAULT_LZ4_RATIO, MAX_VALUE_BYTES};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Shortest key: the prefix and one digit.
pub const MIN_KEY_BYTES: usize = KEY_PREFIX.len() + 1;
/// Longest key accepted.
pub const MAX_KEY_BYTES: usize = 1024;
/// Exponent of the `latest` distribution (YCSB's `ZIPFIAN_CONSTANT`).
pub const LATEST_THETA: f64 = 0.99;
/// YCSB's default zipf exponent.
pub const DEFAULT_THETA: f64 = 0.99;

/// Errors in a YCSB description.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum YcsbError {
    /// A workload name that is not one of the core workloads.
    #[error("unknown YCSB workload '{0}' (expected a, b, c, d, e, f or wo)")]
    UnknownWorkload(String),
    /// A key distribution that cannot be used.
    #[error("bad key distribution '{input}': {reason}")]
    BadDist {
        /// The distribution as given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A configuration field out of range.
    #[error("invalid YCSB config: {field}: {reason}")]
    BadField {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A value-size distribution that cannot be used.
    #[error("bad value sizes '{input}': {reason}")]
    BadValueSizes {
        /// The sizes as given.
        input: String,
        /// What is wrong with them.
        reason: String,
    },
    /// The value generator cannot be built.
    #[error("invalid YCSB config: compressibility: {0}")]
    Value(#[from] ValueError),
}

/// A YCSB core workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum YcsbWorkload {
    /// Update heavy: 50% read, 50% update.
    A,
    /// Read mostly: 95% read, 5% update.
    B,
    /// Read only.
    C,
    /// Read latest: 95% read, 5% insert, `latest` key choice.
    D,
    /// Short ranges: 95% scan, 5% insert.
    E,
    /// Read-modify-write: 50% read, 50% read-modify-write.
    F,
    /// Write only: 100% update.
    WO,
}

/// Shares of each operation kind in a workload (they sum to 1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpMix {
    /// Point reads.
    pub read: f64,
    /// Overwrites of an existing record.
    pub update: f64,
    /// New records.
    pub insert: f64,
    /// Range scans.
    pub scan: f64,
    /// Read then overwrite of one record.
    pub read_modify_write: f64,
}

impl YcsbWorkload {
    /// Every workload, in order.
    pub const ALL: [YcsbWorkload; 7] = [
        YcsbWorkload::A,
        YcsbWorkload::B,
        YcsbWorkload::C,
        YcsbWorkload::D,
        YcsbWorkload::E,
        YcsbWorkload::F,
        YcsbWorkload::WO,
    ];

    /// The operation mix.
    pub fn mix(self) -> OpMix {
        let m = |read, update, insert, scan, read_modify_write| OpMix {
            read,
            update,
            insert,
            scan,
            read_modify_write,
        };
        match self {
            YcsbWorkload::A => m(0.5, 0.5, 0.0, 0.0, 0.0),
            YcsbWorkload::B => m(0.95, 0.05, 0.0, 0.0, 0.0),
            YcsbWorkload::C => m(1.0, 0.0, 0.0, 0.0, 0.0),
            YcsbWorkload::D => m(0.95, 0.0, 0.05, 0.0, 0.0),
            YcsbWorkload::E => m(0.0, 0.0, 0.05, 0.95, 0.0),
            YcsbWorkload::F => m(0.5, 0.0, 0.0, 0.0, 0.5),
            YcsbWorkload::WO => m(0.0, 1.0, 0.0, 0.0, 0.0),
        }
    }

    /// The key distribution YCSB uses for it: `latest` for D, `zipf:0.99` otherwise.
    pub fn standard_dist(self) -> KeyDist {
        match self {
            YcsbWorkload::D => KeyDist::Latest,
            _ => KeyDist::Zipf {
                theta: DEFAULT_THETA,
            },
        }
    }

    /// The short name ("a" .. "f", "wo").
    pub fn name(self) -> &'static str {
        ["a", "b", "c", "d", "e", "f", "wo"][self as usize]
    }
}

impl FromStr for YcsbWorkload {
    type Err = YcsbError;
    /// Parses "a" .. "f" and "wo", in any case, optionally prefixed by "workload" or "ycsb-".
    fn from_str(s: &str) -> Result<YcsbWorkload, YcsbError> {
        let lower = s.trim().to_ascii_lowercase();
        let name = ["workload", "ycsb-", "ycsb"]
            .iter()
            .find_map(|p| lower.strip_prefix(p))
            .unwrap_or(&lower);
        YcsbWorkload::ALL
            .into_iter()
            .find(|w| w.name() == name)
            .ok_or_else(|| YcsbError::UnknownWorkload(s.to_string()))
    }
}

impl fmt::Display for YcsbWorkload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl TryFrom<String> for YcsbWorkload {
    type Error = YcsbError;
    fn try_from(s: String) -> Result<YcsbWorkload, YcsbError> {
        s.parse()
    }
}

impl From<YcsbWorkload> for String {
    fn from(w: YcsbWorkload) -> String {
        w.name().to_string()
    }
}

/// How keys are chosen for reads, updates, scans and read-modify-writes. See the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum KeyDist {
    /// The workload's standard choice (the default): `latest` for D, `zipf:0.99` otherwise.
    Standard,
    /// Every existing key equally likely.
    Uniform,
    /// Scrambled Zipfian popularity with exponent `theta` (>= 0).
    Zipf {
        /// The exponent.
        theta: f64,
    },
    /// The most recently inserted keys are the most popular.
    Latest,
}

impl KeyDist {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), YcsbError> {
        match *self {
            KeyDist::Zipf { theta } if !(theta.is_finite() && theta >= 0.0) => {
                Err(YcsbError::BadDist {
                    input: self.to_string(),
                    reason: format!("theta {theta} must be a finite number >= 0"),
                })
            }
            _ => Ok(()),
        }
    }
}

impl FromStr for KeyDist {
    type Err = YcsbError;
    /// Parses "standard", "uniform", "zipf" (theta 0.99), "zipf:THETA", "zipfian:THETA" and
    /// "latest".
    fn from_str(s: &str) -> Result<KeyDist, YcsbError> {
        let lower = s.trim().to_ascii_lowercase();
        let err = |reason: String| YcsbError::BadDist {
            input: s.to_string(),
            reason,
        };
        let (kind, arg) = match lower.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (lower.as_str(), None),
        };
        let d = match (kind, arg) {
            ("standard" | "default", None) => KeyDist::Standard,
            ("uniform", None) => KeyDist::Uniform,
            ("latest", None) => KeyDist::Latest,
            ("zipf" | "zipfian", None) => KeyDist::Zipf {
                theta: DEFAULT_THETA,
            },
            ("zipf" | "zipfian", Some(t)) => KeyDist::Zipf {
                theta: t
                    .parse()
                    .map_err(|_| err(format!("theta '{t}' is not a number")))?,
            },
            _ => {
                return Err(err(
                    "expected standard, uniform, zipf:THETA or latest".into()
                ))
            }
        };
        d.validate().map_err(|e| match e {
            YcsbError::BadDist { reason, .. } => err(reason),
            e => e,
        })?;
        Ok(d)
    }
}

impl fmt::Display for KeyDist {
    /// The string form [`KeyDist::from_str`] parses back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyDist::Standard => write!(f, "standard"),
            KeyDist::Uniform => write!(f, "uniform"),
            KeyDist::Zipf { theta } => write!(f, "zipf:{theta}"),
            KeyDist::Latest => write!(f, "latest"),
        }
    }
}

impl TryFrom<String> for KeyDist {
    type Error = YcsbError;
    fn try_from(s: String) -> Result<KeyDist, YcsbError> {
        s.parse()
    }
}

impl From<KeyDist> for String {
    fn from(d: KeyDist) -> String {
        d.to_string()
    }
}

/// The order in which the loader inserts the records `0..record_count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadOrder {
    /// Ascending key order (ids 0, 1, 2, ...).
    Ordered,
    /// A fixed pseudo-random permutation of the ids, from the seed (like YCSB's hashed inserts).
    Hashed,
}

/// A YCSB run: workload, data set shape, key choice, value compressibility and seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct YcsbConfig {
    /// Which core workload.
    pub workload: YcsbWorkload,
    /// Records loaded before the run (ids `0..record_count`).
    pub record_count: u64,
    /// Length of every key: "user" + zero-padded decimal id (default 24).
    pub key_bytes: usize,
    /// Length of every value when `value_sizes` is [`ValueSizes::Fixed`] (default 1000: YCSB's 10
    /// fields of 100 bytes); not used by the other distributions.
    pub value_bytes: usize,
    /// How value sizes vary between records (default [`ValueSizes::Fixed`]: all `value_bytes`).
    /// A record keeps its size for the whole run; see [`ValueSizes`].
    pub value_sizes: ValueSizes,
    /// Key choice (default [`KeyDist::Standard`]: `latest` for D, `zipf:0.99` otherwise).
    pub dist: KeyDist,
    /// LZ4 compressed / original size of 4 KiB pages of records, in (0, 1]; 1 is random data.
    /// Default 0.412, paper 002's figure for YCSB.
    pub compressibility: f64,
    /// Longest scan of workload E (lengths are uniform in `1..=max_scan_len`; default 100).
    pub max_scan_len: usize,
    /// The loader's insertion order.
    pub load_order: LoadOrder,
    /// Seed of every random choice.
    pub seed: u64,
}

impl Default for YcsbConfig {
    fn default() -> Self {
        YcsbConfig {
            workload: YcsbWorkload::A,
            record_count: 1_000_000,
            key_bytes: 24,
            value_bytes: 1000,
            value_sizes: ValueSizes::Fixed,
            dist: KeyDist::Standard,
            compressibility: DEFAULT_LZ4_RATIO,
            max_scan_len: 100,
            load_order: LoadOrder::Ordered,
            seed: 42,
        }
    }
}

fn bad_field(field: &'static str, reason: impl Into<String>) -> YcsbError {
    YcsbError::BadField {
        field,
        reason: reason.into(),
    }
}

impl YcsbConfig {
    /// The key distribution in force: `dist`, with [`KeyDist::Standard`] resolved (so never
    /// `Standard`).
    pub fn key_dist(&self) -> KeyDist {
        match self.dist {
            KeyDist::Standard => self.workload.standard_dist(),
            d => d,
        }
    }

    /// Sets the value sizes; a distribution of one size becomes [`ValueSizes::Fixed`] with that
    /// `value_bytes` (so `--value-size 1000` is the fixed size it always was).
    pub fn set_value_sizes(&mut self, sizes: ValueSizes) {
        match sizes.single_size(self.value_bytes) {
            Some(n) => {
                self.value_bytes = n;
                self.value_sizes = ValueSizes::Fixed;
            }
            None => self.value_sizes = sizes,
        }
    }

    /// Mean value size in bytes.
    pub fn mean_value_bytes(&self) -> f64 {
        self.value_sizes.mean_bytes(self.value_bytes)
    }

    /// The value sizes in a few words, e.g. "1000 B values" or "mix1 values (128..4096 B, mean
    /// 1344 B)".
    pub fn describe_values(&self) -> String {
        self.value_sizes.describe(self.value_bytes)
    }

    /// Checks every field except the compressibility, which
    /// [`YcsbGenerator::new`](super::YcsbGenerator::new) calibrates.
    pub fn validate(&self) -> Result<(), YcsbError> {
        self.key_dist().validate()?;
        if !(MIN_KEY_BYTES..=MAX_KEY_BYTES).contains(&self.key_bytes) {
            return Err(bad_field(
                "key_bytes",
                format!(
                    "{} is not in {MIN_KEY_BYTES}..={MAX_KEY_BYTES}",
                    self.key_bytes
                ),
            ));
        }
        let cap = key_capacity(self.key_bytes);
        if self.record_count == 0 || self.record_count > cap {
            return Err(bad_field(
                "record_count",
                format!(
                    "{} is not in 1..={cap} ({}-byte keys hold {cap} distinct ids)",
                    self.record_count, self.key_bytes
                ),
            ));
        }
        if self.value_bytes == 0 || self.value_bytes > MAX_VALUE_BYTES {
            return Err(bad_field(
                "value_bytes",
                format!("{} is not in 1..={MAX_VALUE_BYTES}", self.value_bytes),
            ));
        }
        self.value_sizes.validate(self.value_bytes)?;
        if self.max_scan_len == 0 {
            return Err(bad_field("max_scan_len", "must be at least 1"));
        }
        Ok(())
    }
}
