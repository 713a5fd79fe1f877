//! The log's master record: two copies, in blocks 0 and 1 of the log device, written alternately
//! (sequence number `s` goes to block `s % 2`) so a torn master write leaves the other copy valid.
//! On open the valid copy with the highest sequence number wins. Layout of one copy (the rest of
//! the block is zero):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `WAFERLOG` (ASCII) |
//! | 8 | 4 | format version (u32, currently 2) |
//! | 12 | 4 | block size in bytes (u32): the device block the log was formatted for |
//! | 16 | 8 | data area start: byte offset of the circular data area (2 x block size) |
//! | 24 | 8 | data area capacity in bytes (a multiple of the block size) |
//! | 32 | 8 | sequence number of this copy |
//! | 40 | 8 | checkpoint LSN: the last complete checkpoint record (0 = none) |
//! | 48 | 8 | log start LSN: the oldest LSN still needed; space before it is reusable |
//! | 56 | 16 | database id (u128): random at creation, the same in the data device's stamp |
//! | 72 | 8 | checkpoint generation: completed checkpoints since creation (0 = none yet) |
//! | 80 | 8 | largest log write: the most bytes any run wrote between two device flushes, recorded before a run writes that many (version 3) |
//! | 88 | 4 | CRC32C of bytes `[0, 88)` |
//!
//! The magic and the version stay at offsets 0 and 8 in every future version. Version 2 (no
//! largest write, CRC32C at 80) is read, its largest write unknown (0); the next master write
//! is version 3. Version 1 (no id or generation, CRC32C at 56) is recognised and refused as an
//! unknown version.

use crate::device::BlockDevice;
use crate::error::Result;
use crate::page::Lsn;

pub const MAGIC: &[u8; 8] = b"WAFERLOG";
pub const FORMAT_VERSION: u32 = 3;
/// Offset of the CRC32C (of the bytes before it).
const CRC_AT: usize = 88;
/// Where version 2 had its CRC32C.
const V2_CRC_AT: usize = 80;
/// Where version 1 had its CRC32C (to tell an old master from a damaged one).
const V1_CRC_AT: usize = 56;
/// Bytes of a master copy that carry data (the CRC included).
pub const MASTER_BYTES: usize = CRC_AT + 4;

/// What the master tells recovery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Master {
    /// LSN of the last complete checkpoint record (0 = none yet).
    pub checkpoint_lsn: Lsn,
    /// The oldest LSN still needed (recovery starts no earlier); the space before it is reusable.
    pub start_lsn: Lsn,
    /// Generation of the checkpoint at `checkpoint_lsn` (completed checkpoints since creation);
    /// the data device's stamp must agree (`identity.rs`).
    pub generation: u64,
}

/// One decoded master copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MasterBlock {
    pub block_bytes: u32,
    pub data_start: u64,
    pub data_capacity: u64,
    pub sequence: u64,
    /// The database's id (the same in every copy, from creation on).
    pub id: crate::identity::DbId,
    pub master: Master,
    /// The most bytes any run wrote between two device flushes (its log buffer), recorded
    /// before a run may write that many; 0 = unknown (a version-2 master). A torn write reaches
    /// at most this far past the last complete flush.
    pub max_write: u64,
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
        block[56..72].copy_from_slice(&self.id.to_le_bytes());
        block[72..80].copy_from_slice(&self.master.generation.to_le_bytes());
        block[80..88].copy_from_slice(&self.max_write.to_le_bytes());
        let crc = crc32c::crc32c(&block[0..CRC_AT]);
        block[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    }

    /// Classifies the contents of a master block.
    pub fn decode(block: &[u8]) -> MasterCopy {
        if block.len() < MASTER_BYTES || &block[0..8] != MAGIC {
            return MasterCopy::NoMagic;
        }
        let version = u32_at(block, 8);
        let crc_at = match version {
            FORMAT_VERSION => CRC_AT,
            2 => V2_CRC_AT,
            _ => 0,
        };
        if crc_at == 0 {
            // Another version is reported only if it checks out as version 1 did (CRC32C of the
            // bytes before offset 56); anything else is a damaged copy.
            let v1_ok = u32_at(block, V1_CRC_AT) == crc32c::crc32c(&block[0..V1_CRC_AT]);
            return if v1_ok {
                MasterCopy::UnknownVersion(version)
            } else {
                MasterCopy::Corrupt
            };
        }
        if u32_at(block, crc_at) != crc32c::crc32c(&block[0..crc_at]) {
            return MasterCopy::Corrupt;
        }
        let mut id = [0u8; 16];
        id.copy_from_slice(&block[56..72]);
        MasterCopy::Valid(MasterBlock {
            block_bytes: u32_at(block, 12),
            data_start: u64_at(block, 16),
            data_capacity: u64_at(block, 24),
            sequence: u64_at(block, 32),
            id: u128::from_le_bytes(id),
            master: Master {
                checkpoint_lsn: u64_at(block, 40),
                start_lsn: u64_at(block, 48),
                generation: u64_at(block, 72),
            },
            max_write: if version == 2 { 0 } else { u64_at(block, 80) },
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
            id: 0x0123_4567_89ab_cdef_0011_2233_4455_6677,
            master: Master {
                checkpoint_lsn: 900,
                start_lsn: 600,
                generation: 12,
            },
            max_write: 1 << 20,
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
    fn a_version_2_master_reads_with_its_largest_write_unknown() {
        let m = MasterBlock {
            block_bytes: 512,
            data_start: 1024,
            data_capacity: 8192,
            sequence: 5,
            id: 77,
            master: Master {
                checkpoint_lsn: 900,
                start_lsn: 600,
                generation: 12,
            },
            max_write: 4096,
        };
        // Version 2: the same fields up to offset 80, its CRC32C there.
        let mut b = vec![0u8; 512];
        m.encode(&mut b);
        b[8..12].copy_from_slice(&2u32.to_le_bytes());
        b[80..92].fill(0);
        let crc = crc32c::crc32c(&b[0..80]);
        b[80..84].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(
            MasterBlock::decode(&b),
            MasterCopy::Valid(MasterBlock { max_write: 0, ..m })
        );
        b[20] ^= 1;
        assert_eq!(MasterBlock::decode(&b), MasterCopy::Corrupt);
    }

    #[test]
    fn unknown_version_is_reported() {
        // A version-1 master (its CRC32C at 56) is an unknown version, not a damaged copy.
        let mut b = vec![0u8; 512];
        b[0..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&1u32.to_le_bytes());
        let crc = crc32c::crc32c(&b[0..56]);
        b[56..60].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(MasterBlock::decode(&b), MasterCopy::UnknownVersion(1));
        b[20] ^= 1;
        assert_eq!(MasterBlock::decode(&b), MasterCopy::Corrupt);
    }
}

/// Reads both master copies: (copy in block 0, copy in block 1).
pub(crate) fn read_masters(dev: &mut dyn BlockDevice) -> Result<[MasterCopy; 2]> {
    let block = dev.block_bytes() as usize;
    if block < MASTER_BYTES || dev.capacity_bytes() < 2 * block as u64 {
        return Ok([MasterCopy::NoMagic, MasterCopy::NoMagic]);
    }
    let mut buf = vec![0u8; 2 * block];
    dev.read_at(0, &mut buf)?;
    Ok([
        MasterBlock::decode(&buf[..block]),
        MasterBlock::decode(&buf[block..]),
    ])
}

/// What a log device holds, read without changing it (for the open-or-create decision).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogProbe {
    /// No master copy has the magic: never formatted (or zeroed).
    Blank,
    /// The log of database `id`, at checkpoint `generation` (0: its creation never completed
    /// a checkpoint).
    Database {
        id: crate::identity::DbId,
        generation: u64,
    },
    /// A master with the magic that does not read back (damaged, or another format version).
    Unreadable,
}

/// Reads the master copies of `dev` and says what the log device holds.
pub fn probe(dev: &mut dyn BlockDevice) -> Result<LogProbe> {
    let copies = read_masters(dev)?;
    if copies.iter().all(|c| *c == MasterCopy::NoMagic) {
        return Ok(LogProbe::Blank);
    }
    if copies
        .iter()
        .any(|c| matches!(c, MasterCopy::UnknownVersion(_)))
    {
        return Ok(LogProbe::Unreadable);
    }
    Ok(match newest(&copies) {
        Some(mb) => LogProbe::Database {
            id: mb.id,
            generation: mb.master.generation,
        },
        None => LogProbe::Unreadable,
    })
}

/// The valid master copy with the highest sequence number.
pub(crate) fn newest(copies: &[MasterCopy; 2]) -> Option<MasterBlock> {
    copies
        .iter()
        .filter_map(|c| match c {
            MasterCopy::Valid(m) => Some(*m),
            _ => None,
        })
        .max_by_key(|m| m.sequence)
}
