//! Settings of the out-of-place write path (`DbConfig::out_of_place`).

use crate::error::{Error, Result};
use crate::writepath::pack::{Codec, SLOT_BYTES};
use serde::{Deserialize, Serialize};

/// Settings of the out-of-place write path. The defaults are paper 002's plain "out-of-place"
/// row: no compression, random placement, greedy GC, no NoWA, zones not aligned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OopConfig {
    /// Page compression (`none`, `lz4`, `zstd`); compressed pages are packed into 4 KiB slots.
    pub codec: Codec,
    /// Grouping by deathtime: EDT-based placement and GC.
    pub gdt: bool,
    /// The NoWA write pattern: open zones together, compensation writes (conventional SSDs).
    pub nowa: bool,
    /// Zone size = device GC unit / open zones (conventional SSDs).
    pub aligned: bool,
    /// Zone size in bytes when not aligned (0: half the aligned size). Zoned devices use their
    /// zone size, FDP devices their reclaim unit.
    pub zone_bytes: u64,
    /// Open zones at once (0: 16; ZNS: at most the device limit less one; FDP: handles less one).
    pub max_open_zones: u32,
    /// Pages written together as one batch.
    pub batch_pages: u32,
    /// Foreground GC keeps at least this many zones free, plus what one batch fills.
    pub gc_reserve_zones: u32,
    /// Background GC keeps this many zones more.
    pub gc_background_zones: u32,
    /// Trim each 4 KiB slot once no live page is left in it (conventional and FDP devices), so
    /// the SSD knows as much about dead data as the database: without it the SSD keeps copying
    /// dead pages of zones that DB GC has not reclaimed yet. Only on devices that take a trim
    /// per block at little cost (`Capabilities::block_trims`): not on regular files, where a
    /// trim punches a hole and stalls the file's other I/O; there whole zones are trimmed when
    /// reclaimed.
    pub trim_slots: bool,
    /// Seed of random placement.
    pub seed: u64,
}

impl Default for OopConfig {
    fn default() -> Self {
        OopConfig {
            codec: Codec::None,
            gdt: false,
            nowa: false,
            aligned: false,
            zone_bytes: 0,
            max_open_zones: 0,
            batch_pages: 512,
            gc_reserve_zones: 2,
            gc_background_zones: 2,
            trim_slots: true,
            seed: 1,
        }
    }
}

impl OopConfig {
    /// Refuses settings the write path cannot work with.
    pub fn validate(&self) -> Result<()> {
        if self.batch_pages == 0 {
            return Err(Error::Config(
                "out_of_place.batch_pages must be >= 1".into(),
            ));
        }
        if self.zone_bytes != 0 && !self.zone_bytes.is_multiple_of(SLOT_BYTES as u64) {
            return Err(Error::Config(format!(
                "out_of_place.zone_bytes {} must be a multiple of {SLOT_BYTES}",
                self.zone_bytes
            )));
        }
        if self.gc_reserve_zones == 0 {
            return Err(Error::Config(
                "out_of_place.gc_reserve_zones must be >= 1".into(),
            ));
        }
        Ok(())
    }
}
