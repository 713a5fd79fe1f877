//! The YCSB-shaped workloads and the driver that runs one of them on one engine.
//!
//! Keys are YCSB's: `user` followed by the record id in decimal, zero-padded to 24 bytes (so
//! keys sort as ids do and inserts append). Loaded ids are `0..records`; the request
//! distribution is wafer-workloads' scrambled Zipfian (theta 0.99) over the loaded ids, the same
//! stream for every engine given the seed and thread index. Inserts (workload e) take new ids
//! from a counter shared by the threads, so no two threads insert the same key.

use crate::engines::{Kv, Res};
use rand::{Rng, RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use wafer_workloads::ycsb::write_key;
use wafer_workloads::zipf::ScrambledZipf;

/// Key length in bytes (wafer-workloads' YCSB default).
pub const KEY_BYTES: usize = 24;
/// Zipf exponent of the request distribution.
pub const THETA: f64 = 0.99;
/// Longest scan of workload e (lengths are uniform in `1..=MAX_SCAN`).
pub const MAX_SCAN: usize = 100;

/// The workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// Bulk load of all records, sequential keys, `--batch` records a transaction (wafer:
    /// `Txn::load`; the other engines: a put per record).
    Load,
    /// YCSB C: 100% reads.
    C,
    /// YCSB A: 50% reads, 50% updates.
    A,
    /// YCSB E: 95% scans of 1..=100 records, 5% inserts.
    E,
}

impl Workload {
    /// The name used on the command line and in the output.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Load => "load",
            Workload::C => "c",
            Workload::A => "a",
            Workload::E => "e",
        }
    }
}

/// The key of record `id`.
pub fn key(id: u64) -> [u8; KEY_BYTES] {
    let mut k = [0u8; KEY_BYTES];
    write_key(id, &mut k);
    k
}

/// Incompressible bytes that values are cut from: a value is `value_bytes` of it at an offset
/// chosen by its record id (load) or by the writer's random stream (updates, inserts).
pub struct ValuePool {
    bytes: Vec<u8>,
    value_bytes: usize,
}

impl ValuePool {
    /// A pool of 1 MiB (or four values, if larger) from `seed`.
    pub fn new(seed: u64, value_bytes: usize) -> ValuePool {
        let mut bytes = vec![0u8; (1 << 20).max(4 * value_bytes)];
        Pcg64Mcg::seed_from_u64(seed ^ 0x005E_ED0F_BA55).fill_bytes(&mut bytes);
        ValuePool { bytes, value_bytes }
    }

    /// The value at offset choice `x` (any number).
    pub fn value(&self, x: u64) -> &[u8] {
        let span = (self.bytes.len() - self.value_bytes + 1) as u64;
        let at = (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) % span;
        &self.bytes[at as usize..at as usize + self.value_bytes]
    }
}

/// What one run (one engine, one workload, one thread count) measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Measured {
    /// Operations completed (records, for the load).
    pub ops: u64,
    /// Wall-clock seconds of the measured phase.
    pub seconds: f64,
    /// Transactions that aborted on a conflict and were retried (not counted in `ops`).
    pub retries: u64,
    /// Reads that found no record (should be 0: all read keys are loaded).
    pub read_misses: u64,
    /// Records returned by scans.
    pub scanned: u64,
    /// Seconds the load of the records took (every workload loads first).
    pub load_seconds: f64,
}

/// Loads records `0..records`, `batch` a transaction, and returns the seconds it took.
pub fn load(kv: &dyn Kv, records: u64, batch: u64, values: &ValuePool) -> Res<f64> {
    let started = Instant::now();
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(batch as usize);
    let mut id = 0;
    while id < records {
        pairs.clear();
        let end = (id + batch).min(records);
        for i in id..end {
            pairs.push((key(i).to_vec(), values.value(i).to_vec()));
        }
        kv.load_batch(&pairs)?;
        id = end;
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Per-thread counters.
#[derive(Default)]
struct Counts {
    ops: u64,
    retries: u64,
    read_misses: u64,
    scanned: u64,
}

/// Runs `workload` (not the load) with `threads` threads for `duration` on a loaded store.
pub fn run(
    kv: Arc<dyn Kv>,
    workload: Workload,
    records: u64,
    threads: u32,
    duration: Duration,
    seed: u64,
    values: Arc<ValuePool>,
) -> Res<Measured> {
    let stop = Arc::new(AtomicBool::new(false));
    let next_insert = Arc::new(AtomicU64::new(records));
    let start = Arc::new(Barrier::new(threads as usize + 1));
    let handles: Vec<_> = (0..threads)
        .map(|th| {
            let (kv, stop, next_insert, start, values) = (
                kv.clone(),
                stop.clone(),
                next_insert.clone(),
                start.clone(),
                values.clone(),
            );
            std::thread::spawn(move || -> Res<Counts> {
                let mut rng = Pcg64Mcg::seed_from_u64(
                    seed ^ (u64::from(th) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                );
                let zipf = ScrambledZipf::new(records, THETA).map_err(|e| e.to_string())?;
                let mut c = Counts::default();
                // The client's copy of each value read (see `Kv::read`), reused.
                let mut value = Vec::new();
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    let id = zipf.sample(&mut rng);
                    match workload {
                        Workload::C => {
                            c.read_misses += u64::from(!kv.read(&key(id), &mut value)?);
                        }
                        Workload::A => {
                            if rng.random_bool(0.5) {
                                c.read_misses += u64::from(!kv.read(&key(id), &mut value)?);
                            } else {
                                c.retries += kv.write(&key(id), values.value(rng.next_u64()))?;
                            }
                        }
                        Workload::E => {
                            if rng.random_range(0..100) < 95 {
                                let len = rng.random_range(1..=MAX_SCAN);
                                let (n, r) = kv.scan(&key(id), len)?;
                                c.scanned += n as u64;
                                c.retries += r;
                            } else {
                                let new = next_insert.fetch_add(1, Ordering::Relaxed);
                                c.retries += kv.write(&key(new), values.value(rng.next_u64()))?;
                            }
                        }
                        Workload::Load => unreachable!("the load is not a timed mix"),
                    }
                    c.ops += 1;
                }
                Ok(c)
            })
        })
        .collect();
    start.wait();
    let started = Instant::now();
    std::thread::sleep(duration);
    stop.store(true, Ordering::Relaxed);
    let mut m = Measured::default();
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(c)) => {
                m.ops += c.ops;
                m.retries += c.retries;
                m.read_misses += c.read_misses;
                m.scanned += c.scanned;
            }
            Ok(Err(e)) => first_err = first_err.or(Some(e)),
            Err(_) => first_err = first_err.or(Some("a benchmark thread panicked".into())),
        }
    }
    m.seconds = started.elapsed().as_secs_f64();
    match first_err {
        Some(e) => Err(e),
        None => Ok(m),
    }
}
