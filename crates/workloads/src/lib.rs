//! Workload generators and drivers for wafer and flashsim.
//!
//! - [`synthetic`]: device-level synthetic workloads (uniform, zipf, hot/cold, sequential,
//!   streams), deterministic from a seed.
//! - [`simrun`]: drives a [`flashsim::Ssd`] with a synthetic workload in virtual time and reports
//!   write amplification, wear and latency per interval and at the end.
//! - [`zoned`]: the log-structured zone writer `simrun` uses on ZNS devices.
//! - [`ycsb`]: the YCSB core workloads (A-F, write-only) as a stream of key-value operations.
//! - [`values`]: value bytes whose 4 KiB pages LZ4-compress to a chosen ratio.
//! - [`zipf`]: scrambled Zipfian key choice shared by `synthetic` and `ycsb`.
//! - [`tpcc`]: TPC-C on the engine: schema, loader, the five transactions, consistency checks,
//!   virtual-time and wall-clock drivers.
//! - [`query`]: operators on temp space (paper 003): external merge sort, Grace hash join,
//!   sort-merge join, with temp I/O and time counters per phase.
//! - [`torture`]: the randomized torture suite (power cuts, damaged databases, concurrent
//!   transfers) over the engine's public API.

#![warn(missing_docs)]

pub mod bench;
pub mod hdd;
pub mod iotrace;
pub mod mvcc;
pub mod query;
pub mod simrun;
pub mod synthetic;
pub mod torture;
pub mod tpcb;
pub mod tpcc;
pub mod trace;
pub mod values;
pub mod ycsb;
pub mod zipf;
pub mod zoned;

pub use simrun::{
    run, run_on, IntervalRow, Phase, PhaseSummary, ProgressFn, Quiet, RunError, RunObserver,
    RunParams, RunSummary,
};
pub use synthetic::{Generator, Op, OpKind, Pattern, Workload, WorkloadError};
pub use values::ValueGen;
pub use ycsb::{
    KeyDist, LoadOrder, OpMix, YcsbConfig, YcsbError, YcsbGenerator, YcsbOp, YcsbOpKind,
    YcsbWorkload,
};
pub use zoned::ZoneWriter;
