//! The workloads' integration tests in one binary (fewer test binaries link faster): TPC-C on
//! the engine, TPC-B with the log on disk and flash, the temp-space query operators, and a fixed
//! seed range of the randomized torture suite.

mod query;
mod torture;
mod tpcb;
mod tpcc;
