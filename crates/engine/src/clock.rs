//! Time as the engine sees it: checkpoint intervals and recovery phase times are measured on a
//! [`Clock`] (the threads' group-commit delay in `wal/group.rs` is real waiting, on the wall
//! clock). Real devices run on [`WallClock`]; simulated devices bring their
//! own virtual clock (the `sim` adapter's `VirtualClock` implements this trait), so a run in
//! virtual time gives the same numbers every time.

use std::sync::Arc;
use std::time::Instant;

/// A monotonic source of nanoseconds. Shared between threads.
pub trait Clock: Send + Sync {
    /// Nanoseconds since an arbitrary, fixed origin.
    fn now_ns(&self) -> u64;
}

/// Wall time since the clock was made.
#[derive(Debug)]
pub struct WallClock {
    origin: Instant,
}

impl WallClock {
    pub fn new() -> WallClock {
        WallClock {
            origin: Instant::now(),
        }
    }

    /// A new wall clock, shared.
    pub fn shared() -> Arc<dyn Clock> {
        Arc::new(WallClock::new())
    }
}

impl Default for WallClock {
    fn default() -> Self {
        WallClock::new()
    }
}

impl Clock for WallClock {
    fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }
}
