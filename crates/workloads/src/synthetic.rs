//! Device-level synthetic workloads: a stream of reads and writes over a byte address space,
//! deterministic from a seed.
//!
//! The address space of `capacity_bytes` is cut into `units = capacity_bytes / write_size_bytes`
//! slots of the write size; every [`Op`] covers one slot, so offsets are aligned to the write size
//! and never cross the capacity (a tail smaller than one write is never touched).
//!
//! Address patterns ([`Pattern`]):
//! - `uniform`: every unit equally likely.
//! - `zipf:THETA`: unit rank `r` (1-based) is chosen with probability proportional to
//!   `1 / r^THETA` ([`rand_distr::Zipf`]); ranks are spread over the address space by a fixed
//!   bijective permutation ([`Scrambler`]), so the hot units are not adjacent.
//! - `hotcold:R:F`: a fraction `R` of accesses goes to the hot set, the first fraction `F` of the
//!   units (a contiguous range at the start of the space, not scrambled), the rest to the others;
//!   uniform within each set.
//! - `seq`: one cursor walking the space sequentially, wrapping at the end.
//! - `streams:K`: the space is cut into `K` equal regions, each with its own sequential cursor
//!   (wrapping within the region); each write goes to a stream chosen uniformly at random, as
//!   `K` concurrent zone-like writers would.
//!
//! Reads follow the pattern's popularity: uniform, zipf and hotcold reads draw from the same
//! distribution as writes; `seq` reads use their own sequential cursor; `streams` reads are uniform
//! over the whole space.

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::Range;
use std::str::FromStr;

/// The permutation that spreads zipf ranks (shared with [`crate::ycsb`]).
pub use crate::zipf::Scrambler;

/// Offsets and write sizes are multiples of this many bytes (one sector).
pub const SECTOR_BYTES: u64 = 512;

/// Errors in a workload description.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkloadError {
    /// A pattern string or value that cannot be used.
    #[error("bad pattern '{input}': {reason}")]
    BadPattern {
        /// The pattern as given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A workload field out of range.
    #[error("invalid workload: {field}: {reason}")]
    BadField {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

fn bad_field(field: &'static str, reason: impl Into<String>) -> WorkloadError {
    WorkloadError::BadField {
        field,
        reason: reason.into(),
    }
}

/// Where in the address space accesses go. See the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "PatternRepr", into = "TaggedPattern")]
pub enum Pattern {
    /// Every unit equally likely.
    Uniform,
    /// Zipfian popularity with exponent `theta` (>= 0; 0 is uniform, 0.99 is YCSB's default).
    Zipf {
        /// The exponent.
        theta: f64,
    },
    /// A fraction `r` of accesses to the first fraction `f` of the units.
    HotCold {
        /// Share of accesses that go to the hot set, in [0, 1].
        r: f64,
        /// Fraction of the units in the hot set, in (0, 1).
        f: f64,
    },
    /// One sequential cursor, wrapping at the end of the space.
    Sequential,
    /// `k` sequential streams, each in its own region of the space.
    Streams {
        /// Number of streams (>= 1).
        k: u32,
    },
}

/// The serialised form of a [`Pattern`]: an internally tagged table, e.g.
/// `{ kind = "zipf", theta = 0.99 }`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", deny_unknown_fields)]
enum TaggedPattern {
    Uniform,
    Zipf {
        theta: f64,
    },
    HotCold {
        r: f64,
        f: f64,
    },
    #[serde(alias = "seq")]
    Sequential,
    Streams {
        k: u32,
    },
}

/// A pattern is read either from the tagged table or from the CLI string form ("zipf:0.99").
#[derive(Deserialize)]
#[serde(untagged)]
enum PatternRepr {
    Str(String),
    Tagged(TaggedPattern),
}

impl TryFrom<PatternRepr> for Pattern {
    type Error = WorkloadError;
    fn try_from(r: PatternRepr) -> Result<Pattern, WorkloadError> {
        let p = match r {
            PatternRepr::Str(s) => return s.parse(),
            PatternRepr::Tagged(TaggedPattern::Uniform) => Pattern::Uniform,
            PatternRepr::Tagged(TaggedPattern::Zipf { theta }) => Pattern::Zipf { theta },
            PatternRepr::Tagged(TaggedPattern::HotCold { r, f }) => Pattern::HotCold { r, f },
            PatternRepr::Tagged(TaggedPattern::Sequential) => Pattern::Sequential,
            PatternRepr::Tagged(TaggedPattern::Streams { k }) => Pattern::Streams { k },
        };
        p.validate()?;
        Ok(p)
    }
}

impl From<Pattern> for TaggedPattern {
    fn from(p: Pattern) -> TaggedPattern {
        match p {
            Pattern::Uniform => TaggedPattern::Uniform,
            Pattern::Zipf { theta } => TaggedPattern::Zipf { theta },
            Pattern::HotCold { r, f } => TaggedPattern::HotCold { r, f },
            Pattern::Sequential => TaggedPattern::Sequential,
            Pattern::Streams { k } => TaggedPattern::Streams { k },
        }
    }
}

const PATTERN_FORMS: &str = "expected uniform, zipf:THETA, hotcold:R:F, seq or streams:K";

impl Pattern {
    /// Checks the pattern's parameters.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let err = |reason: String| WorkloadError::BadPattern {
            input: self.to_string(),
            reason,
        };
        match *self {
            Pattern::Zipf { theta } if !(theta.is_finite() && theta >= 0.0) => {
                Err(err(format!("theta {theta} must be a finite number >= 0")))
            }
            Pattern::HotCold { r, .. } if !(0.0..=1.0).contains(&r) => {
                Err(err(format!("hot access share r = {r} must be in [0, 1]")))
            }
            Pattern::HotCold { f, .. } if !(f > 0.0 && f < 1.0) => {
                Err(err(format!("hot space fraction f = {f} must be in (0, 1)")))
            }
            Pattern::Streams { k: 0 } => Err(err("need at least one stream".into())),
            _ => Ok(()),
        }
    }
}

impl FromStr for Pattern {
    type Err = WorkloadError;
    /// Parses "uniform", "zipf:0.99", "hotcold:0.9:0.1", "seq" (or "sequential"), "streams:8".
    fn from_str(s: &str) -> Result<Pattern, WorkloadError> {
        let input = s.trim().to_ascii_lowercase();
        let err = |reason: String| WorkloadError::BadPattern {
            input: s.to_string(),
            reason,
        };
        let parts: Vec<&str> = input.split(':').collect();
        let num = |i: usize, what: &str| -> Result<f64, WorkloadError> {
            let v = parts[i];
            v.parse::<f64>()
                .map_err(|_| err(format!("{what} '{v}' is not a number")))
        };
        let arity = |n: usize, form: &str| -> Result<(), WorkloadError> {
            if parts.len() == n {
                Ok(())
            } else {
                Err(err(format!("expected the form {form}")))
            }
        };
        let p = match parts[0] {
            "uniform" => {
                arity(1, "uniform")?;
                Pattern::Uniform
            }
            "zipf" => {
                arity(2, "zipf:THETA (e.g. zipf:0.99)")?;
                Pattern::Zipf {
                    theta: num(1, "theta")?,
                }
            }
            "hotcold" | "hot-cold" => {
                arity(3, "hotcold:R:F (e.g. hotcold:0.9:0.1)")?;
                Pattern::HotCold {
                    r: num(1, "R")?,
                    f: num(2, "F")?,
                }
            }
            "seq" | "sequential" => {
                arity(1, "seq")?;
                Pattern::Sequential
            }
            "streams" => {
                arity(2, "streams:K (e.g. streams:8)")?;
                let k = parts[1]
                    .parse::<u32>()
                    .map_err(|_| err(format!("K '{}' is not a positive integer", parts[1])))?;
                Pattern::Streams { k }
            }
            _ => return Err(err(format!("unknown pattern ({PATTERN_FORMS})"))),
        };
        p.validate().map_err(|e| match e {
            WorkloadError::BadPattern { reason, .. } => err(reason),
            e => e,
        })?;
        Ok(p)
    }
}

impl fmt::Display for Pattern {
    /// The CLI string form, which [`Pattern::from_str`] parses back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Uniform => write!(f, "uniform"),
            Pattern::Zipf { theta } => write!(f, "zipf:{theta}"),
            Pattern::HotCold { r, f: fr } => write!(f, "hotcold:{r}:{fr}"),
            Pattern::Sequential => write!(f, "seq"),
            Pattern::Streams { k } => write!(f, "streams:{k}"),
        }
    }
}

/// A synthetic workload: address pattern, request size, read mix and seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Workload {
    /// Where requests go.
    pub pattern: Pattern,
    /// Size of every request in bytes (a positive multiple of 512).
    pub write_size_bytes: u64,
    /// Fraction of requests that are reads, in [0, 1].
    pub read_share: f64,
    /// Seed of the generator's random choices.
    pub seed: u64,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            pattern: Pattern::Uniform,
            write_size_bytes: 4096,
            read_share: 0.0,
            seed: 42,
        }
    }
}

impl Workload {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        self.pattern.validate()?;
        if self.write_size_bytes == 0 || !self.write_size_bytes.is_multiple_of(SECTOR_BYTES) {
            return Err(bad_field(
                "write_size_bytes",
                format!(
                    "{} is not a positive multiple of {SECTOR_BYTES}",
                    self.write_size_bytes
                ),
            ));
        }
        if !(0.0..=1.0).contains(&self.read_share) {
            return Err(bad_field(
                "read_share",
                format!("{} is not in [0, 1]", self.read_share),
            ));
        }
        Ok(())
    }
}

/// Whether an operation reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpKind {
    /// A host read.
    Read,
    /// A host write.
    Write,
    /// A host trim (discard): only replayed traces issue them.
    Trim,
}

/// One device request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Op {
    /// Read or write.
    pub kind: OpKind,
    /// Byte address, a multiple of the request size.
    pub offset_bytes: u64,
    /// Length in bytes (the request size).
    pub len_bytes: u64,
}

/// Per-pattern sampling state.
enum Sampler {
    Uniform,
    Zipf {
        dist: Zipf<f64>,
        scramble: Scrambler,
    },
    HotCold {
        r: f64,
        hot_units: u64,
    },
    Sequential {
        write_at: u64,
        read_at: u64,
    },
    Streams {
        starts: Vec<u64>,
        cursors: Vec<u64>,
    },
}

/// Yields [`Op`]s of a [`Workload`] over a capacity; deterministic from the workload's seed.
pub struct Generator {
    rng: Pcg64Mcg,
    sampler: Sampler,
    units: u64,
    size_bytes: u64,
    read_share: f64,
}

impl Generator {
    /// A generator of `workload` over `capacity_bytes` of address space.
    pub fn new(workload: &Workload, capacity_bytes: u64) -> Result<Generator, WorkloadError> {
        workload.validate()?;
        let size = workload.write_size_bytes;
        let units = capacity_bytes / size;
        if units == 0 {
            return Err(bad_field(
                "write_size_bytes",
                format!("{size} exceeds the capacity of {capacity_bytes} bytes"),
            ));
        }
        let sampler = match workload.pattern {
            Pattern::Uniform => Sampler::Uniform,
            Pattern::Zipf { theta } => Sampler::Zipf {
                dist: Zipf::new(units as f64, theta).map_err(|e| WorkloadError::BadPattern {
                    input: workload.pattern.to_string(),
                    reason: e.to_string(),
                })?,
                scramble: Scrambler::new(units),
            },
            Pattern::HotCold { r, f } => {
                let hot = ((f * units as f64).round() as u64).clamp(1, units.max(2) - 1);
                Sampler::HotCold {
                    r,
                    hot_units: hot.min(units),
                }
            }
            Pattern::Sequential => Sampler::Sequential {
                write_at: 0,
                read_at: 0,
            },
            Pattern::Streams { k } => {
                if k as u64 > units {
                    return Err(WorkloadError::BadPattern {
                        input: workload.pattern.to_string(),
                        reason: format!(
                            "{k} streams need at least {k} writes of {size} bytes of space, the capacity holds {units}"
                        ),
                    });
                }
                let starts: Vec<u64> = (0..=k as u64).map(|i| i * units / k as u64).collect();
                let cursors = starts[..k as usize].to_vec();
                Sampler::Streams { starts, cursors }
            }
        };
        Ok(Generator {
            rng: Pcg64Mcg::seed_from_u64(workload.seed),
            sampler,
            units,
            size_bytes: size,
            read_share: workload.read_share,
        })
    }

    /// Number of request-sized slots in the address space.
    pub fn units(&self) -> u64 {
        self.units
    }

    /// The byte ranges of the streams of a `streams:K` pattern (empty for other patterns).
    pub fn stream_regions(&self) -> Vec<Range<u64>> {
        match &self.sampler {
            Sampler::Streams { starts, .. } => starts
                .windows(2)
                .map(|w| w[0] * self.size_bytes..w[1] * self.size_bytes)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The next request: a read with probability `read_share`, else a write.
    pub fn next_op(&mut self) -> Op {
        let read = self.read_share > 0.0 && self.rng.random::<f64>() < self.read_share;
        if read {
            self.next_read()
        } else {
            self.next_write()
        }
    }

    /// The next write, whatever the read share.
    pub fn next_write(&mut self) -> Op {
        let unit = self.pick(OpKind::Write);
        self.op(OpKind::Write, unit)
    }

    /// The next read, whatever the read share.
    pub fn next_read(&mut self) -> Op {
        let unit = self.pick(OpKind::Read);
        self.op(OpKind::Read, unit)
    }

    fn op(&self, kind: OpKind, unit: u64) -> Op {
        debug_assert!(unit < self.units);
        Op {
            kind,
            offset_bytes: unit * self.size_bytes,
            len_bytes: self.size_bytes,
        }
    }

    fn pick(&mut self, kind: OpKind) -> u64 {
        let units = self.units;
        let rng = &mut self.rng;
        match &mut self.sampler {
            Sampler::Uniform => rng.random_range(0..units),
            Sampler::Zipf { dist, scramble } => {
                let rank = (dist.sample(rng) as u64).clamp(1, units);
                scramble.apply(rank - 1)
            }
            Sampler::HotCold { r, hot_units } => {
                let hot = *hot_units;
                if hot >= units {
                    rng.random_range(0..units)
                } else if rng.random::<f64>() < *r {
                    rng.random_range(0..hot)
                } else {
                    rng.random_range(hot..units)
                }
            }
            Sampler::Sequential { write_at, read_at } => {
                let c = if kind == OpKind::Write {
                    write_at
                } else {
                    read_at
                };
                let u = *c;
                *c = (u + 1) % units;
                u
            }
            Sampler::Streams { starts, cursors } => {
                if kind == OpKind::Read {
                    return rng.random_range(0..units);
                }
                let s = rng.random_range(0..cursors.len());
                let u = cursors[s];
                cursors[s] = if u + 1 == starts[s + 1] {
                    starts[s]
                } else {
                    u + 1
                };
                u
            }
        }
    }
}

impl Iterator for Generator {
    type Item = Op;
    /// Never ends.
    fn next(&mut self) -> Option<Op> {
        Some(self.next_op())
    }
}

#[cfg(test)]
mod tests;
