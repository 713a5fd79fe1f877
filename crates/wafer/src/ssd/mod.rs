//! The simulated SSD as a file for unmodified programs (`wafer ssd mount`).

pub mod fs;
