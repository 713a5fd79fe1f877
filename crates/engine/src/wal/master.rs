//! The log's master record: two copies, in blocks 0 and 1 of the log device, written alternately
//! (sequence number `s` goes to block `s % 2`) so a torn master write leaves the other copy valid.
//! On open the valid copy with the highest sequence number wins. Layout of one copy (the rest of
//! the block is zero):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `WAFERLOG` (ASCII) |
//! | 8 | 4 | format version (u32, currently 1) |
//! | 12 | 4 | block size in bytes (u32): the device block the log was formatted for |
//! | 16 | 8 | data area start: byte offset of the circular data area (2 x block size) |
//! | 24 | 8 | data area capacity in bytes (a multiple of the block size) |
//! | 32 | 8 | sequence number of this copy |
//! | 40 | 8 | checkpoint LSN: the last complete checkpoint record (0 = none) |
//! | 48 | 8 | log start LSN: the oldest LSN still needed; space before it is reusable |
//! | 56 | 4 | CRC32C of bytes `[0, 56)` |
//!
//! The magic and the version stay at offsets 0 and 8 in every future version.

use crate::page::Lsn;

pub const MAGIC: &[u8; 8] = b"WAFERLOG";
pub const FORMAT_VERSION: u32 = 1;
/// Bytes of a master copy that carry data (the CRC included).
pub const MASTER_BYTES: usize = 60;

/// What the master tells recovery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Master {
    /// LSN of the last complete checkpoint record (0 = none yet).
    pub checkpoint_lsn: Lsn,
    /// The oldest LSN still needed (recovery starts no earlier); the space before it is reusable.
    pub start_lsn: Lsn,
}

/// One decoded master copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MasterBlock {
    pub block_bytes: u32,
    pub data_start: u64,
    pub data_capacity: u64,
    pub sequence: u64,
    pub master: Master,
}

/// What a block holding a master copy turned out to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MasterCopy {
    Valid(MasterBlock),
    NoMagic,
    UnknownVersion(u32),
    Corrupt,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

impl MasterBlock {
    /// Encodes this copy into `block` (at least [`MASTER_BYTES`] long; the rest is zeroed).
    pub fn encode(&self, block: &mut [u8]) {
        block.fill(0);
        block[0..8].copy_from_slice(MAGIC);
        block[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        block[12..16].copy_from_slice(&self.block_bytes.to_le_bytes());
        block[16..24].copy_from_slice(&self.data_start.to_le_bytes());
        block[24..32].copy_from_slice(&self.data_capacity.to_le_bytes());
        block[32..40].copy_from_slice(&self.sequence.to_le_bytes());
        block[40..48].copy_from_slice(&self.master.checkpoint_lsn.to_le_bytes());
        block[48..56].copy_from_slice(&self.master.start_lsn.to_le_bytes());
        let crc = crc32c::crc32c(&block[0..56]);
        block[56..60].copy_from_slice(&crc.to_le_bytes());
    }

    /// Classifies the contents of a master block.
    pub fn decode(block: &[u8]) -> MasterCopy {
        if block.len() < MASTER_BYTES || &block[0..8] != MAGIC {
            return MasterCopy::NoMagic;
        }
        let crc_ok = u32_at(block, 56) == crc32c::crc32c(&block[0..56]);
        let version = u32_at(block, 8);
        if !crc_ok {
            return MasterCopy::Corrupt;
        }
        if version != FORMAT_VERSION {
            return MasterCopy::UnknownVersion(version);
        }
        MasterCopy::Valid(MasterBlock {
            block_bytes: u32_at(block, 12),
            data_start: u64_at(block, 16),
            data_capacity: u64_at(block, 24),
            sequence: u64_at(block, 32),
            master: Master {
                checkpoint_lsn: u64_at(block, 40),
                start_lsn: u64_at(block, 48),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_detection() {
        let m = MasterBlock {
            block_bytes: 512,
            data_start: 1024,
            data_capacity: 8192,
            sequence: 5,
            master: Master {
                checkpoint_lsn: 900,
                start_lsn: 600,
            },
        };
        let mut b = vec![0u8; 512];
        m.encode(&mut b);
        assert_eq!(MasterBlock::decode(&b), MasterCopy::Valid(m));
        for bit in 64..MASTER_BYTES * 8 {
            let mut c = b.clone();
            c[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(MasterBlock::decode(&c), MasterCopy::Corrupt, "bit {bit}");
        }
        b[0] = b'X';
        assert_eq!(MasterBlock::decode(&b), MasterCopy::NoMagic);
        assert_eq!(MasterBlock::decode(&[0u8; 512]), MasterCopy::NoMagic);
    }

    #[test]
    fn unknown_version_is_reported() {
        let m = MasterBlock {
            block_bytes: 512,
            data_start: 1024,
            data_capacity: 8192,
            sequence: 1,
            master: Master::default(),
        };
        let mut b = vec![0u8; 512];
        m.encode(&mut b);
        b[8..12].copy_from_slice(&7u32.to_le_bytes());
        let crc = crc32c::crc32c(&b[0..56]);
        b[56..60].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(MasterBlock::decode(&b), MasterCopy::UnknownVersion(7));
    }
}
