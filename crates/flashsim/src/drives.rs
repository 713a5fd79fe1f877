//! Named drive presets: the shape of a few real SSDs (channels, dies per channel, planes, pages
//! per block, page size), their NAND timing and their interface, for `wafer sim --drive`. Few of
//! these values are published; docs/flashsim.md lists each one with its source or marks it as
//! assumed. A preset fixes the shape of the flash, not its size: blocks per plane follow from the
//! logical capacity asked for, so a drive can be simulated at a fraction of its real capacity.

use crate::config::{Cell, Geometry, Mode, SsdConfig, TimingConfig, ZnsConfig};
use serde::{Deserialize, Serialize};

/// A named drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Drive {
    /// Samsung PM9A3 class: a datacenter TLC NVMe SSD (the drive paper 002 measures).
    Pm9a3,
    /// Western Digital Ultrastar DC ZN540 class: a ZNS SSD on TLC NAND whose zones hold 1077 MiB.
    Zn540,
    /// Crucial P3 Plus class: a consumer QLC NVMe SSD with a 4-channel controller.
    P3Plus,
    /// Samsung MCAQE32G8APP class: the 2008 PATA SLC SSD paper 003 measures (2 channels x
    /// 4-way interleaving, 2 KiB pages).
    Mcaqe32g,
}

/// NAND timing, endurance and channel rate of a drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriveMedia {
    pub read_ns: u64,
    pub program_ns: u64,
    pub erase_ns: u64,
    pub pe_limit: u32,
    pub channel_mb_s: u64,
    pub command_overhead_ns: u64,
}

impl Drive {
    /// Every preset.
    pub const ALL: [Drive; 4] = [Drive::Pm9a3, Drive::Zn540, Drive::P3Plus, Drive::Mcaqe32g];

    /// The name `--drive` takes.
    pub fn name(self) -> &'static str {
        match self {
            Drive::Pm9a3 => "pm9a3",
            Drive::Zn540 => "zn540",
            Drive::P3Plus => "p3-plus",
            Drive::Mcaqe32g => "mcaqe32g",
        }
    }

    /// One line on what the preset stands for.
    pub fn description(self) -> &'static str {
        match self {
            Drive::Pm9a3 => "Samsung PM9A3 class datacenter TLC NVMe SSD",
            Drive::Zn540 => {
                "Western Digital Ultrastar DC ZN540 class ZNS SSD (TLC, 1077 MiB zones)"
            }
            Drive::P3Plus => "Crucial P3 Plus class consumer QLC NVMe SSD",
            Drive::Mcaqe32g => "Samsung MCAQE32G8APP class 2008 PATA SLC SSD (paper 003)",
        }
    }

    /// The flash array's shape, with one block per plane (sizing sets the real number).
    pub fn geometry(self) -> Geometry {
        if self == Drive::Mcaqe32g {
            // K9WAG08U1A SLC: 2 KiB pages, 64 pages (128 KiB) per block; 2 channels x 4 ways.
            return Geometry {
                channels: 2,
                dies_per_channel: 4,
                planes_per_die: 1,
                blocks_per_plane: 1,
                pages_per_block: 64,
                page_size_bytes: 2 * 1024,
            };
        }
        let (channels, dies_per_channel, planes_per_die, pages_per_block) = match self {
            Drive::Pm9a3 => (8, 4, 2, 1536),
            // 8 x 4 dies x 2 planes x 1077 pages of 16 KiB = one superblock = 1077 MiB, the
            // drive's zone capacity.
            Drive::Zn540 => (8, 4, 2, 1077),
            Drive::P3Plus => (4, 2, 4, 2048),
            Drive::Mcaqe32g => unreachable!("returned above"),
        };
        Geometry {
            channels,
            dies_per_channel,
            planes_per_die,
            blocks_per_plane: 1,
            pages_per_block,
            page_size_bytes: 16 * 1024,
        }
    }

    /// NAND timing, endurance and channel rate.
    pub fn media(self) -> DriveMedia {
        let defaults = TimingConfig::default();
        let tlc = DriveMedia {
            read_ns: defaults.read_ns,
            program_ns: defaults.program_ns,
            erase_ns: defaults.erase_ns,
            pe_limit: 3000,
            channel_mb_s: defaults.channel_mb_s,
            command_overhead_ns: defaults.command_overhead_ns,
        };
        match self {
            Drive::Pm9a3 | Drive::Zn540 => tlc,
            Drive::P3Plus => {
                let (read_ns, program_ns, erase_ns, pe_limit) = Cell::Qlc.figures();
                DriveMedia {
                    read_ns,
                    program_ns,
                    erase_ns,
                    pe_limit,
                    channel_mb_s: 1600,
                    command_overhead_ns: defaults.command_overhead_ns,
                }
            }
            Drive::Mcaqe32g => {
                let (read_ns, _, erase_ns, pe_limit) = Cell::Slc.figures();
                DriveMedia {
                    read_ns,
                    // Effective, not the cell's 250 us: the drive sustains 32 MB/s of writes
                    // (paper 003, Table 1), 8 dies x 2 KiB per 512 us.
                    program_ns: 512_000,
                    erase_ns,
                    pe_limit,
                    // 2 channels x 28 MB/s = the drive's 56 MB/s sustained reads (Table 1).
                    channel_mb_s: 28,
                    // 0.2 ms for a 2 KiB read (Table 1) = 100 us + 25 us read + 73 us transfer.
                    command_overhead_ns: 100_000,
                }
            }
        }
    }

    /// The host interface: zoned for ZNS drives, conventional otherwise.
    pub fn mode(self) -> Mode {
        match self {
            Drive::Zn540 => Mode::Zns(ZnsConfig {
                zone_eus: 1,
                max_open_zones: 8,
                max_active_zones: 8,
            }),
            Drive::Pm9a3 | Drive::P3Plus | Drive::Mcaqe32g => Mode::Conventional,
        }
    }

    /// Sets this drive's NAND timing, endurance, channel rate and interface on `cfg` (its
    /// geometry and whether timing is simulated stay).
    pub fn apply_media(self, cfg: &mut SsdConfig) {
        let m = self.media();
        cfg.timing.read_ns = m.read_ns;
        cfg.timing.program_ns = m.program_ns;
        cfg.timing.erase_ns = m.erase_ns;
        cfg.timing.channel_mb_s = m.channel_mb_s;
        cfg.timing.command_overhead_ns = m.command_overhead_ns;
        cfg.wear.pe_limit = m.pe_limit;
        cfg.mode = self.mode();
    }

    /// A device of this drive's shape exporting `logical_bytes` at spare factor `spare_factor`
    /// (a ZNS drive exports all its zones).
    pub fn config(self, logical_bytes: u64, spare_factor: f64) -> SsdConfig {
        let mut cfg = SsdConfig::sized(self.geometry(), logical_bytes, spare_factor);
        // The mapping unit is at most a page (2 KiB on the SLC drive).
        cfg.mapping_unit_bytes = cfg.mapping_unit_bytes.min(cfg.geometry.page_size_bytes);
        self.apply_media(&mut cfg);
        cfg.fit_reserve();
        cfg
    }
}

impl std::fmt::Display for Drive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Drive {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim().to_ascii_lowercase();
        Drive::ALL
            .into_iter()
            .find(|d| d.name() == t)
            .ok_or_else(|| {
                let names: Vec<&str> = Drive::ALL.iter().map(|d| d.name()).collect();
                format!("unknown drive '{s}' (expected one of {})", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssd::Ssd;

    /// Every preset gives a valid device, at a small and a larger capacity, that runs.
    #[test]
    fn presets_validate_and_run() {
        for d in Drive::ALL {
            assert_eq!(d.name().parse::<Drive>(), Ok(d));
            for logical in [4u64 << 30, 32 << 30] {
                let mut cfg = d.config(logical, 0.1);
                cfg.validate().unwrap_or_else(|e| panic!("{d}: {e}"));
                let g = &cfg.geometry;
                assert_eq!(
                    (
                        g.channels,
                        g.dies_per_channel,
                        g.planes_per_die,
                        g.pages_per_block
                    ),
                    {
                        let p = d.geometry();
                        (
                            p.channels,
                            p.dies_per_channel,
                            p.planes_per_die,
                            p.pages_per_block,
                        )
                    }
                );
                cfg.timing.enabled = false;
                let cap = cfg.capacity();
                if matches!(cfg.mode, Mode::Zns(_)) {
                    assert!(cap.logical_bytes >= logical, "{d}: {cap:?}");
                } else {
                    assert_eq!(cap.logical_bytes, logical);
                }
                let mut ssd = Ssd::new(cfg).unwrap();
                if d.mode() == Mode::Conventional {
                    let units = cap.logical_bytes / 4096;
                    let offs: Vec<u64> = (0..units.min(1 << 16)).map(|u| u * 4096).collect();
                    ssd.write_batch(0, &offs, 4096, 0).unwrap();
                    assert_eq!(ssd.counters().host_write_cmds, offs.len() as u64);
                }
            }
        }
    }

    #[test]
    fn zn540_zone_is_its_published_capacity() {
        let cfg = Drive::Zn540.config(64 << 30, 0.0);
        assert_eq!(cfg.eu_bytes(), 1077 << 20);
        assert!(matches!(cfg.mode, Mode::Zns(ZnsConfig { zone_eus: 1, .. })));
    }

    #[test]
    fn qlc_media_is_slower_than_tlc() {
        let (q, t) = (Drive::P3Plus.media(), Drive::Pm9a3.media());
        assert!(q.read_ns > t.read_ns && q.program_ns > t.program_ns);
        assert_eq!(Cell::Qlc.figures().3, 1000);
        assert!("nope"
            .parse::<Drive>()
            .unwrap_err()
            .contains("pm9a3, zn540, p3-plus"));
    }
}
