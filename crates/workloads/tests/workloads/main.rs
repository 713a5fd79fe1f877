//! The workloads' integration tests in one binary (fewer test binaries link faster): TPC-C on
//! the engine, and a fixed seed range of the randomized torture suite.

mod torture;
mod tpcc;
