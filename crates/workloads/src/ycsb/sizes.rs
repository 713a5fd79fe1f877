//! Value sizes of YCSB records: one fixed size (YCSB's default), or a distribution over sizes.
//!
//! A record's size is a function of the seed and the record's id alone (a hash, no draw from the
//! generator's random stream): the loader and every later update or read-modify-write of a key
//! write values of that key's own size, as a key-value store with a fixed schema per record does,
//! and an insert's size is that of its new id. So the size of a record never changes, a run
//! rewrites the same bytes per key as the load, and the default ([`ValueSizes::Fixed`]) draws
//! exactly the random numbers it drew before distributions existed.
//!
//! The four named mixes are this project's reading of paper 004's "four different patterns of the
//! key-value store that randomly mix various record sizes from 128 to 4096 bytes" (section IV.A;
//! the paper does not define them):
//!
//! | name | sizes (bytes) | weights | mean |
//! |---|---|---|---|
//! | `mix1` | 128, 256, 512, 1024, 2048, 4096 | equal | 1344 B |
//! | `mix2` | 128, 256, 512, 1024, 2048, 4096 | 32, 16, 8, 4, 2, 1 (small-heavy: every class the same bytes) | 390.1 B |
//! | `mix3` | 128, 256, 512, 1024, 2048, 4096 | 1, 2, 4, 8, 16, 32 (large-heavy) | 2773.3 B |
//! | `mix4` | every size in 128..=4096 | equal (uniform in bytes) | 2112 B |

use super::YcsbError;
use crate::values::MAX_VALUE_BYTES;
use crate::zipf::splitmix64;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Smallest size of the named mixes.
pub const MIX_MIN_BYTES: u32 = 128;
/// Largest size of the named mixes.
pub const MIX_MAX_BYTES: u32 = 4096;
/// The size classes of `mix1` .. `mix3`.
const MIX_CLASSES: [u32; 6] = [128, 256, 512, 1024, 2048, 4096];
/// Keeps record sizes independent of the value bytes, which are seeded from the same ids.
const SIZE_SALT: u64 = 0x517E_5C0F_FEE0_D1CE;

/// How large the value of each record is. Parses from (and prints as) `fixed`, `BYTES` (a mix of
/// one size), `MIN..MAX` (uniform, both ends included), `SIZE,SIZE,...` (each listed size equally
/// likely; a size listed twice is twice as likely) and `mix1` .. `mix4` (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(try_from = "String", into = "String")]
pub enum ValueSizes {
    /// Every value has the config's `value_bytes` (the default).
    #[default]
    Fixed,
    /// Uniform in bytes over `min..=max`.
    Uniform {
        /// Smallest size.
        min: u32,
        /// Largest size (included).
        max: u32,
    },
    /// Each record's size is one of these, each entry equally likely.
    Mix(Vec<u32>),
    /// 128, 256, .. 4096 B, equally likely (mean 1344 B).
    Mix1,
    /// 128, 256, .. 4096 B, each class half as likely as the one below (mean 390.1 B).
    Mix2,
    /// 128, 256, .. 4096 B, each class twice as likely as the one below (mean 2773.3 B).
    Mix3,
    /// Uniform in bytes over 128..=4096 (mean 2112 B).
    Mix4,
}

impl ValueSizes {
    /// The named mixes, in order.
    pub const NAMED: [ValueSizes; 4] = [
        ValueSizes::Mix1,
        ValueSizes::Mix2,
        ValueSizes::Mix3,
        ValueSizes::Mix4,
    ];

    /// The one size every record has (`value_bytes` for [`ValueSizes::Fixed`]), if there is one.
    pub fn single_size(&self, value_bytes: usize) -> Option<usize> {
        match self {
            ValueSizes::Fixed => Some(value_bytes),
            ValueSizes::Uniform { min, max } if min == max => Some(*min as usize),
            ValueSizes::Mix(s) if !s.is_empty() && s.iter().all(|&x| x == s[0]) => {
                Some(s[0] as usize)
            }
            _ => None,
        }
    }

    /// Checks the sizes (each in `1..=MAX_VALUE_BYTES`, a uniform range not reversed, a mix not
    /// empty); `value_bytes` is the config's fixed size.
    pub fn validate(&self, value_bytes: usize) -> Result<(), YcsbError> {
        let err = |reason: String| YcsbError::BadValueSizes {
            input: self.to_string(),
            reason,
        };
        let in_range = |s: usize| (1..=MAX_VALUE_BYTES).contains(&s);
        match self {
            ValueSizes::Fixed if !in_range(value_bytes) => Err(YcsbError::BadField {
                field: "value_bytes",
                reason: format!("{value_bytes} is not in 1..={MAX_VALUE_BYTES}"),
            }),
            ValueSizes::Uniform { min, max } if min > max => Err(err(format!(
                "the smallest size {min} exceeds the largest {max}"
            ))),
            ValueSizes::Mix(s) if s.is_empty() => Err(err("the mix lists no size".into())),
            _ => match self.sizes().into_iter().find(|&s| !in_range(s as usize)) {
                Some(s) => Err(err(format!(
                    "size {s} is not in 1..={MAX_VALUE_BYTES} bytes"
                ))),
                None => Ok(()),
            },
        }
    }

    /// The sizes named (the ends of a uniform range; none for `Fixed`).
    fn sizes(&self) -> Vec<u32> {
        match self {
            ValueSizes::Fixed => Vec::new(),
            ValueSizes::Uniform { min, max } => vec![*min, *max],
            ValueSizes::Mix(s) => s.clone(),
            ValueSizes::Mix1 | ValueSizes::Mix2 | ValueSizes::Mix3 => MIX_CLASSES.to_vec(),
            ValueSizes::Mix4 => vec![MIX_MIN_BYTES, MIX_MAX_BYTES],
        }
    }

    /// The sampler of these sizes for records of `seed` (`value_bytes` is the fixed size).
    /// Assumes [`ValueSizes::validate`] passed.
    pub fn sampler(&self, value_bytes: usize, seed: u64) -> SizeSampler {
        let table = |weights: &[u64]| {
            let mut sum = 0;
            let cum = weights
                .iter()
                .map(|w| {
                    sum += w;
                    sum
                })
                .collect();
            Dist::Table {
                sizes: MIX_CLASSES.to_vec(),
                cum,
            }
        };
        let dist = match self.single_size(value_bytes) {
            Some(n) => Dist::Const(n),
            None => match self {
                ValueSizes::Uniform { min, max } => Dist::Uniform {
                    min: *min as usize,
                    span: u64::from(max - min) + 1,
                },
                ValueSizes::Mix4 => Dist::Uniform {
                    min: MIX_MIN_BYTES as usize,
                    span: u64::from(MIX_MAX_BYTES - MIX_MIN_BYTES) + 1,
                },
                ValueSizes::Mix(s) => Dist::Table {
                    sizes: s.clone(),
                    cum: (1..=s.len() as u64).collect(),
                },
                ValueSizes::Mix1 => table(&[1; 6]),
                ValueSizes::Mix2 => table(&[32, 16, 8, 4, 2, 1]),
                ValueSizes::Mix3 => table(&[1, 2, 4, 8, 16, 32]),
                ValueSizes::Fixed => unreachable!("a fixed size is a single size"),
            },
        };
        SizeSampler {
            dist,
            key: splitmix64(seed ^ SIZE_SALT),
        }
    }

    /// Mean value size in bytes (`value_bytes` is the fixed size).
    pub fn mean_bytes(&self, value_bytes: usize) -> f64 {
        self.sampler(value_bytes, 0).mean_bytes()
    }

    /// The sizes in a few words for titles and reports, e.g. "1000 B values" or "mix1 values
    /// (128..4096 B, mean 1344 B)".
    pub fn describe(&self, value_bytes: usize) -> String {
        if let ValueSizes::Fixed = self {
            return format!("{value_bytes} B values");
        }
        let s = self.sampler(value_bytes, 0);
        let mean = s.mean_bytes();
        let mean = if mean.fract() == 0.0 {
            format!("{mean:.0}")
        } else {
            format!("{mean:.1}")
        };
        match self {
            ValueSizes::Uniform { .. } => format!("values uniform in {self} B (mean {mean} B)"),
            ValueSizes::Mix(_) => format!("values of {self} B (mean {mean} B)"),
            _ => format!(
                "{self} values ({}..{} B, mean {mean} B)",
                s.min_bytes(),
                s.max_bytes()
            ),
        }
    }
}

/// Why a value-size string does not parse, and the forms that do.
const FORMS: &str = "expected BYTES (a fixed size, e.g. 1000), MIN..MAX (uniform in bytes, both \
                     ends included, e.g. 128..4096), SIZE,SIZE,... (each listed size equally \
                     likely, e.g. 128,512,4096), mix1, mix2, mix3, mix4 or fixed";

impl FromStr for ValueSizes {
    type Err = YcsbError;
    fn from_str(s: &str) -> Result<ValueSizes, YcsbError> {
        let err = |reason: String| YcsbError::BadValueSizes {
            input: s.to_string(),
            reason,
        };
        let lower = s.trim().to_ascii_lowercase();
        let num = |t: &str| -> Result<u32, YcsbError> {
            let t = t.trim();
            t.parse()
                .map_err(|_| err(format!("'{t}' is not a size in bytes; {FORMS}")))
        };
        let v = match lower.as_str() {
            "fixed" => ValueSizes::Fixed,
            "mix1" => ValueSizes::Mix1,
            "mix2" => ValueSizes::Mix2,
            "mix3" => ValueSizes::Mix3,
            "mix4" => ValueSizes::Mix4,
            "" => return Err(err(format!("empty; {FORMS}"))),
            l => {
                if let Some((a, b)) = l.split_once("..") {
                    let b = b.strip_prefix('=').unwrap_or(b);
                    ValueSizes::Uniform {
                        min: num(a)?,
                        max: num(b)?,
                    }
                } else {
                    ValueSizes::Mix(l.split(',').map(num).collect::<Result<_, _>>()?)
                }
            }
        };
        // Range checks only: `Fixed` takes its size from the config.
        v.validate(1).map_err(|e| match e {
            YcsbError::BadValueSizes { reason, .. } => err(reason),
            e => e,
        })?;
        Ok(v)
    }
}

impl fmt::Display for ValueSizes {
    /// The string form [`ValueSizes::from_str`] parses back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueSizes::Fixed => write!(f, "fixed"),
            ValueSizes::Uniform { min, max } => write!(f, "{min}..{max}"),
            ValueSizes::Mix(s) => {
                let parts: Vec<String> = s.iter().map(u32::to_string).collect();
                write!(f, "{}", parts.join(","))
            }
            ValueSizes::Mix1 => write!(f, "mix1"),
            ValueSizes::Mix2 => write!(f, "mix2"),
            ValueSizes::Mix3 => write!(f, "mix3"),
            ValueSizes::Mix4 => write!(f, "mix4"),
        }
    }
}

impl TryFrom<String> for ValueSizes {
    type Error = YcsbError;
    fn try_from(s: String) -> Result<ValueSizes, YcsbError> {
        s.parse()
    }
}

impl From<ValueSizes> for String {
    fn from(v: ValueSizes) -> String {
        v.to_string()
    }
}

#[derive(Clone, Debug)]
enum Dist {
    Const(usize),
    Uniform {
        min: usize,
        span: u64,
    },
    /// `sizes[i]` with weight `cum[i] - cum[i - 1]`.
    Table {
        sizes: Vec<u32>,
        cum: Vec<u64>,
    },
}

/// The value size of every record id, from [`ValueSizes::sampler`].
#[derive(Clone, Debug)]
pub struct SizeSampler {
    dist: Dist,
    key: u64,
}

/// `x * n / 2^64`: a 64-bit hash mapped onto `0..n` without modulo bias worth mentioning.
fn scale(x: u64, n: u64) -> u64 {
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

impl SizeSampler {
    /// The value size of record `id`: a function of the seed and `id` only.
    pub fn size_of(&self, id: u64) -> usize {
        let h = || splitmix64(self.key ^ splitmix64(id));
        match &self.dist {
            Dist::Const(n) => *n,
            Dist::Uniform { min, span } => min + scale(h(), *span) as usize,
            Dist::Table { sizes, cum } => {
                let total = *cum.last().expect("a mix is never empty");
                let r = scale(h(), total);
                sizes[cum.partition_point(|&c| c <= r)] as usize
            }
        }
    }

    /// The one size of every record, if all are the same.
    pub fn constant(&self) -> Option<usize> {
        match self.dist {
            Dist::Const(n) => Some(n),
            _ => None,
        }
    }

    /// Mean size in bytes.
    pub fn mean_bytes(&self) -> f64 {
        match &self.dist {
            Dist::Const(n) => *n as f64,
            Dist::Uniform { min, span } => *min as f64 + (*span - 1) as f64 / 2.0,
            Dist::Table { sizes, cum } => {
                let mut prev = 0;
                let mut sum = 0.0;
                for (&s, &c) in sizes.iter().zip(cum) {
                    sum += f64::from(s) * (c - prev) as f64;
                    prev = c;
                }
                sum / prev as f64
            }
        }
    }

    /// Smallest size.
    pub fn min_bytes(&self) -> usize {
        match &self.dist {
            Dist::Const(n) => *n,
            Dist::Uniform { min, .. } => *min,
            Dist::Table { sizes, .. } => sizes.iter().copied().min().unwrap_or(0) as usize,
        }
    }

    /// Largest size.
    pub fn max_bytes(&self) -> usize {
        match &self.dist {
            Dist::Const(n) => *n,
            Dist::Uniform { min, span } => min + (*span - 1) as usize,
            Dist::Table { sizes, .. } => sizes.iter().copied().max().unwrap_or(0) as usize,
        }
    }
}
