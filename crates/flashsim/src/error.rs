//! Errors of simulated devices. Bad commands get a typed error; the device state is unchanged by a
//! rejected command.

use crate::config::ConfigError;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("I/O out of range: offset {offset} + length {len} exceeds capacity {capacity} bytes")]
    OutOfRange {
        offset: u64,
        len: u64,
        capacity: u64,
    },
    #[error("{what}: offset {offset} and length {len} must be multiples of {align} bytes")]
    Unaligned {
        what: &'static str,
        offset: u64,
        len: u64,
        align: u64,
    },
    #[error("data buffer of {got} bytes does not match the command length {expected}")]
    BufferSize { expected: u64, got: u64 },
    #[error("zone {zone}: write at byte {offset} is not at the write pointer {write_pointer} (zones must be written sequentially)")]
    NotSequential {
        zone: u32,
        offset: u64,
        write_pointer: u64,
    },
    #[error("zone {zone} is full")]
    ZoneFull { zone: u32 },
    #[error("write crosses the end of zone {zone}")]
    ZoneBoundary { zone: u32 },
    #[error("zone {zone} does not exist (the device has {zones} zones)")]
    NoSuchZone { zone: u32, zones: u32 },
    #[error("zone {zone}: {reason}")]
    ZoneState { zone: u32, reason: &'static str },
    #[error("too many open zones (limit {limit})")]
    TooManyOpenZones { limit: u32 },
    #[error("too many active zones (limit {limit})")]
    TooManyActiveZones { limit: u32 },
    #[error("placement id {pid} is not below the number of reclaim unit handles {handles}")]
    BadPlacementId { pid: u16, handles: u32 },
    #[error("{0} is not supported by this device mode")]
    Unsupported(&'static str),
    #[error("remap source and destination ranges overlap")]
    Overlap,
    #[error("device full: garbage collection found no reclaimable space in lane {lane}")]
    NoSpace { lane: u32 },
    #[error("backing store: {0}")]
    Backing(String),
}
