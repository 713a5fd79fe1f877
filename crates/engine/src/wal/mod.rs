//! The write-ahead log (being built).
pub mod record;
