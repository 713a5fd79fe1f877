//! The write path: how pages get to and from the data device. One trait, several strategies
//! (in-place with an optional doublewrite buffer today; out-of-place and journal + remap later).
//!
//! Counters follow DESIGN.md: *user writes* are pages written because of eviction or checkpointing,
//! counted uncompressed (one page each); *DB-issued writes* are every byte the engine writes to the
//! data device (user writes as stored, doublewrite copies, GC copies, padding).

mod inplace;
pub mod pack;

pub use inplace::{InPlace, InPlaceLayout};

use crate::error::Result;
use crate::page::PageId;
use serde::{Deserialize, Serialize};

/// Why a page is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteReason {
    /// The buffer pool evicts a dirty page (or the page cleaner prepares a clean frame).
    Eviction,
    /// The checkpointer writes a page to advance the checkpoint.
    Checkpoint,
    /// Shutdown or an explicit flush of everything.
    Shutdown,
}

/// Counters of a write path. DB WAF = `db_write_bytes / user_write_bytes`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteCounters {
    /// Page-size bytes of pages written for eviction, checkpoint or shutdown.
    pub user_write_bytes: u64,
    pub eviction_writes: u64,
    pub checkpoint_writes: u64,
    pub shutdown_writes: u64,
    /// Every byte written to the data device.
    pub db_write_bytes: u64,
    /// Bytes of doublewrite copies.
    pub doublewrite_bytes: u64,
    /// Pages read from the data device.
    pub page_reads: u64,
    pub read_bytes: u64,
    /// Torn or stale pages repaired from the doublewrite buffer at startup.
    pub pages_repaired: u64,
}

impl WriteCounters {
    /// DB write amplification (1.0 before any write).
    pub fn db_waf(&self) -> f64 {
        if self.user_write_bytes == 0 {
            1.0
        } else {
            self.db_write_bytes as f64 / self.user_write_bytes as f64
        }
    }
}

/// A strategy for storing pages on the data device.
pub trait WritePath: Send {
    /// Reads page `pid` into `buf` and verifies it; a page never written reads as zeros (Ok).
    fn read_page(&mut self, pid: PageId, buf: &mut [u8]) -> Result<()>;
    /// Writes a batch of sealed pages. They are durable after the next `sync`.
    fn write_pages(&mut self, pages: &[(PageId, &[u8])], reason: WriteReason) -> Result<()>;
    /// Makes every page written so far durable.
    fn sync(&mut self) -> Result<()>;
    /// Completes the formatting of a new data device once the rest of the new database (log,
    /// meta page, first checkpoint) is durable: until then the device opens as blank.
    fn finish_format(&mut self) -> Result<()> {
        Ok(())
    }
    /// Number of page ids the data device can hold.
    fn page_capacity(&self) -> u64;
    fn counters(&self) -> &WriteCounters;
    /// Statistics of the data device underneath.
    fn device_stats(&self) -> crate::device::DeviceStats;
}
