//! Unit tests of the log: the circular log on a memory device (`log.rs`), power cuts on a device
//! with a volatile cache (`crash.rs`) and group commit across threads (`group.rs`), with shared
//! devices and record generators in `support.rs`.

mod crash;
mod group;
mod log;
mod support;
