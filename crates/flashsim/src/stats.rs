//! Device counters in the spirit of the OCP SMART / FDP statistics logs, wear, and reports.

use crate::config::Capacity;
use crate::timing::LatencySummary;
use serde::{Deserialize, Serialize};

/// Cumulative device counters. SSD WAF = `media_write_bytes / host_write_bytes`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counters {
    /// Bytes the host asked to write (write and zone-append commands).
    pub host_write_bytes: u64,
    /// Bytes the host asked to read.
    pub host_read_bytes: u64,
    pub host_write_cmds: u64,
    pub host_read_cmds: u64,
    /// Bytes programmed into NAND: host data + GC relocation + read-modify-write + remap copies.
    pub media_write_bytes: u64,
    /// Bytes read from NAND: host reads, GC reads, read-modify-write reads.
    pub media_read_bytes: u64,
    /// Bytes programmed by GC relocation.
    pub gc_write_bytes: u64,
    /// Victims collected by GC (foreground + background).
    pub gc_runs: u64,
    pub gc_runs_background: u64,
    /// Mapping units relocated by GC.
    pub gc_units_moved: u64,
    /// Host writes smaller than the mapping unit that needed a read-modify-write.
    pub rmw_units: u64,
    /// Bytes read for read-modify-write.
    pub rmw_read_bytes: u64,
    /// Physical blocks erased (a superblock erase counts every block in it).
    pub block_erases: u64,
    /// Erase units (GC units) erased.
    pub eu_erases: u64,
    pub trim_bytes: u64,
    /// Mapping units remapped without programming.
    pub remap_units: u64,
    /// Bytes copied (read + programmed) by remap commands because they were not aligned.
    pub remap_copy_bytes: u64,
    /// Copy commands ([`crate::Ssd::copy`]), one per call whatever its number of ranges.
    pub copy_cmds: u64,
    /// Ranges copied by copy commands (non-empty operations).
    pub copy_ops: u64,
    /// Bytes programmed by copy commands: whole mapping units, read-modify-written ones included.
    pub copy_bytes: u64,
    /// Bytes programmed for data the host had already written to the device once: programs of
    /// copy commands, of remap's unaligned fallback copies, and of host writes issued as
    /// rewrites ([`crate::Ssd::write_rewrite`]), in whole mapping units (read-modify-writes
    /// included). GC relocation is not counted here (see `gc_write_bytes`).
    pub redundant_write_bytes: u64,
    pub zone_resets: u64,
    pub flushes: u64,
    /// Cached writes dropped by a power cut without power-loss protection.
    pub power_cut_lost_bytes: u64,
}

impl Counters {
    /// SSD write amplification: media bytes programmed / host bytes written (1.0 before any write).
    pub fn waf(&self) -> f64 {
        if self.host_write_bytes == 0 {
            1.0
        } else {
            self.media_write_bytes as f64 / self.host_write_bytes as f64
        }
    }

    /// WAF of the writes between `earlier` and `self`.
    pub fn waf_since(&self, earlier: &Counters) -> f64 {
        let h = self.host_write_bytes - earlier.host_write_bytes;
        let m = self.media_write_bytes - earlier.media_write_bytes;
        if h == 0 {
            1.0
        } else {
            m as f64 / h as f64
        }
    }
}

/// Per reclaim-unit-handle statistics (FDP); one entry (handle 0) on other devices.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandleStats {
    pub host_write_bytes: u64,
    pub media_write_bytes: u64,
    /// Reclaim units this handle has filled.
    pub reclaim_units_filled: u64,
}

/// Wear of the flash array.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WearReport {
    pub pe_limit: u32,
    pub erase_count_min: u32,
    pub erase_count_max: u32,
    pub erase_count_mean: f64,
    /// Mean erase count / P/E limit.
    pub life_used: f64,
    /// Virtual time the counters cover.
    pub elapsed_ns: u64,
    /// Host writes per day as drive writes per day of the logical capacity, at the observed rate.
    pub dwpd_observed: f64,
    /// Days until the mean block reaches its P/E limit at the observed erase rate (None: no data).
    pub lifetime_days_projected: Option<f64>,
    /// Drive writes per day the flash sustains for 5 years at the observed SSD WAF.
    pub dwpd_rated_5y: f64,
}

/// Everything a device reports, for `--json` output and the harness.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub capacity: Capacity,
    pub counters: Counters,
    pub waf: f64,
    pub handles: Vec<HandleStats>,
    pub wear: WearReport,
    pub read_latency: LatencySummary,
    pub write_latency: LatencySummary,
    /// Fraction of the logical capacity that is mapped.
    pub fill: f64,
    pub free_eus: u64,
    /// Mapping entries in use (mapped logical units).
    #[serde(default)]
    pub mapped_units: u64,
    /// Memory of the full mapping table in bytes: 4-byte entries for every logical unit plus the
    /// remap sharing table (see [`crate::Ssd::mapping_table_bytes`]).
    #[serde(default)]
    pub mapping_table_bytes: u64,
    /// The part of it in use: 4 bytes per mapped unit plus the sharing table.
    #[serde(default)]
    pub mapping_bytes_in_use: u64,
}
