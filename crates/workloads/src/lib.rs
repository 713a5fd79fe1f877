//! Workload generators and drivers for wafer and flashsim.
//!
//! - [`synthetic`]: device-level synthetic workloads (uniform, zipf, hot/cold, sequential,
//!   streams), deterministic from a seed.
//! - [`simrun`]: drives a [`flashsim::Ssd`] with a synthetic workload in virtual time and reports
//!   write amplification, wear and latency per interval and at the end.
//! - [`zoned`]: the log-structured zone writer `simrun` uses on ZNS devices.

#![warn(missing_docs)]

pub mod simrun;
pub mod synthetic;
pub mod zoned;

pub use simrun::{
    run, run_on, IntervalRow, Phase, PhaseSummary, ProgressFn, Quiet, RunError, RunObserver,
    RunParams, RunSummary,
};
pub use synthetic::{Generator, Op, OpKind, Pattern, Workload, WorkloadError};
pub use zoned::ZoneWriter;
