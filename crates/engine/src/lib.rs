//! wafer-engine: the embeddable transactional key-value store (devices, pages, buffer pool,
//! B+tree, WAL, transactions, checkpoints, recovery and the write paths of docs/DESIGN).
//!
//! The engine is being built; today this crate only reserves its place in the workspace so the
//! layering (flashsim below, workloads and the CLI above) is fixed from the start.
