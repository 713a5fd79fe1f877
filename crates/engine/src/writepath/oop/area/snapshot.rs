//! Map snapshots (paper 002 section 6.2: "each checkpoint persists snapshots of the
//! PID2OffsetTable and the ActiveGroupHistory").
//!
//! Two slots alternate; a snapshot is tagged with the LSN of the checkpoint record that follows
//! it, and recovery loads the one with the largest tag not past the last complete checkpoint.
//! Image layout (little-endian, 4 KiB blocks; docs/format.md):
//!
//! | block | contents |
//! |---|---|
//! | 0 | magic `WAFSNAP2`, tag u64, seq u64, pages u64, zones u32, stream position u64, map blocks u32, zone blocks u32, CRC32C u32 (at 52; of the whole image with this field zero), then the 3 metadata owners' NoWA units, then at 168 the checkpoint generation u64 and at 176 the log's durable LSN u64 when the snapshot was written |
//! | 1 .. 1 + map blocks | 341 pages per block: offset u64 (`u64::MAX` = none), stored length u32 |
//! | then zone blocks | 83 zones per block: write pointer u64, average EDT u64, unit count u8, 8 x unit u32 |
//!
//! The generation and durable LSN are the out-of-place data device's checkpoint stamp
//! (`identity.rs`): recovery needs the snapshot tagged with the master's checkpoint and fails
//! with `CorruptMetadata` when it does not read back, rather than fall back to the older one
//! (whose later location records the log no longer replays).
//!
//! A snapshot writes block 0 and only the blocks that changed since the snapshot before last
//! (which is what its slot holds); the first two after format or recovery write everything. A
//! torn snapshot fails its CRC and recovery takes the other slot, which belongs to the previous
//! checkpoint (the checkpoint record is logged only after the snapshot is durable).

use super::nowa::{Groups, Owner, MAX_PIECES};
use super::space::Loc;
use super::LogArea;
use crate::error::{Error, Result};
use crate::page::{get_u32, get_u64, put_u32, put_u64, Lsn};
use crate::writepath::pack::SLOT_BYTES;

const MAGIC: &[u8; 8] = b"WAFSNAP2";
const BLOCK: usize = 4096;
const PAGE_REC: usize = 12;
const PAGES_PER_BLOCK: usize = BLOCK / PAGE_REC;
const ZONE_REC: usize = 17 + 4 * MAX_PIECES;
const ZONES_PER_BLOCK: usize = BLOCK / ZONE_REC;
const META_AT: usize = 64;
const META_REC: usize = 1 + 4 * MAX_PIECES;
const CRC_AT: usize = 52;
/// Metadata owners in block 0: the two snapshot slots and the device header.
const META_OWNERS: usize = 3;
/// Block 0: checkpoint generation and the log's durable LSN (after the metadata owners).
const GEN_AT: usize = 168;
const DURABLE_AT: usize = 176;
const _: () = assert!(META_AT + META_OWNERS * META_REC <= GEN_AT && DURABLE_AT + 8 <= BLOCK);

// Blocks are slots (the snapshot slots are slot aligned); records never straddle a block.
const _: () = assert!(BLOCK == SLOT_BYTES);
const _: () = assert!(PAGES_PER_BLOCK * PAGE_REC <= BLOCK && ZONES_PER_BLOCK * ZONE_REC <= BLOCK);
// Block 0: the header fields end before the CRC, the CRC before the metadata owners, which fit.
const _: () = assert!(48 + 4 <= CRC_AT && CRC_AT + 4 <= META_AT);
const _: () = assert!(META_AT + META_OWNERS * META_REC <= BLOCK);
// A zone record: write pointer, average EDT, unit count (u8), then the units.
const _: () = assert!(ZONE_REC == 16 + 1 + 4 * MAX_PIECES && MAX_PIECES <= u8::MAX as usize);

/// A snapshot slot that reads back whole.
pub(crate) struct Found {
    pub(crate) tag: Lsn,
    pub(crate) seq: u64,
    pub(crate) generation: u64,
    pub(crate) durable: Lsn,
    pub(crate) img: Vec<u8>,
}

/// What a snapshot slot holds.
pub(crate) enum SlotRead {
    /// No snapshot magic: never written, or erased.
    Empty,
    /// A snapshot that does not read back (torn, or damaged later).
    Damaged,
    Valid(Found),
}

/// The snapshot state of an area: which slot holds what, and the image last written.
pub(super) struct SnapState {
    /// Number of the next snapshot.
    pub(super) seq: u64,
    /// The snapshot image as last written, and per 4 KiB block of it the number of the
    /// snapshot it last changed for: a snapshot rewrites only the blocks changed since the
    /// one before last (the other slot holds the last one).
    pub(super) img: Vec<u8>,
    pub(super) dirty: Vec<u64>,
    /// Snapshots to write whole (after format or recovery, the slots' contents are unknown).
    pub(super) full: u8,
    /// The slot holding the snapshot of the last complete checkpoint (never overwritten), and
    /// the slot written by a checkpoint not confirmed complete yet.
    pub(super) confirmed: Option<usize>,
    pub(super) unconfirmed: Option<usize>,
    /// Recovery: the tag of the snapshot loaded (records before it are in it).
    pub(super) tag: Lsn,
}

impl SnapState {
    pub(super) fn new() -> SnapState {
        SnapState {
            seq: 0,
            img: Vec::new(),
            dirty: Vec::new(),
            full: 2,
            confirmed: None,
            unconfirmed: None,
            tag: 0,
        }
    }
}

fn blocks(pages: u64, zones: u64) -> (usize, usize) {
    (
        (pages as usize).div_ceil(PAGES_PER_BLOCK),
        (zones as usize).div_ceil(ZONES_PER_BLOCK),
    )
}

/// Bytes of a snapshot of `pages` pages and `zones` zones.
pub(crate) fn image_bytes(pages: u64, zones: u64) -> u64 {
    let (m, z) = blocks(pages, zones);
    ((1 + m + z) * BLOCK) as u64
}

fn put_units(b: &mut [u8], at: usize, list: &[u64]) {
    let list = &list[list.len().saturating_sub(MAX_PIECES)..];
    b[at] = list.len() as u8;
    for (i, &g) in list.iter().enumerate() {
        put_u32(b, at + 1 + 4 * i, g as u32);
    }
}

fn get_units(b: &[u8], at: usize) -> Vec<u64> {
    let k = (b[at] as usize).min(MAX_PIECES);
    (0..k).map(|i| get_u32(b, at + 1 + 4 * i) as u64).collect()
}

fn crc_of(img: &[u8]) -> u32 {
    let c = crc32c::crc32c(&img[..CRC_AT]);
    crc32c::crc32c_append(c, &img[CRC_AT + 4..])
}

impl LogArea {
    fn snap_blocks(&self) -> (usize, usize) {
        blocks(self.map.len() as u64, self.zones.len() as u64)
    }

    fn dirty_len(&self) -> usize {
        let (m, z) = self.snap_blocks();
        1 + m + z
    }

    /// Page `pid`'s location changed.
    pub(super) fn touch_page(&mut self, pid: u64) {
        if self.snap.dirty.is_empty() {
            self.snap.dirty = vec![0; self.dirty_len()];
        }
        self.snap.dirty[1 + pid as usize / PAGES_PER_BLOCK] = self.snap.seq;
    }

    /// Zone `z`'s record changed.
    pub(super) fn touch_zone(&mut self, z: u32) {
        if self.snap.dirty.is_empty() {
            self.snap.dirty = vec![0; self.dirty_len()];
        }
        let (m, _) = self.snap_blocks();
        self.snap.dirty[1 + m + z as usize / ZONES_PER_BLOCK] = self.snap.seq;
    }

    fn encode_map_block(&mut self, b: usize) {
        let first = (b - 1) * PAGES_PER_BLOCK;
        let last = (first + PAGES_PER_BLOCK).min(self.map.len());
        let base = b * BLOCK;
        for (i, l) in self.map[first..last].iter().enumerate() {
            let at = base + i * PAGE_REC;
            put_u64(&mut self.snap.img, at, l.off);
            put_u32(&mut self.snap.img, at + 8, l.len);
        }
    }

    fn encode_zone_block(&mut self, b: usize, map_blocks: usize) {
        let first = (b - 1 - map_blocks) * ZONES_PER_BLOCK;
        let last = (first + ZONES_PER_BLOCK).min(self.zones.len());
        let base = b * BLOCK;
        for z in first..last {
            let at = base + (z - first) * ZONE_REC;
            let zone = &self.zones[z];
            put_u64(&mut self.snap.img, at, zone.wp);
            put_u64(&mut self.snap.img, at + 8, zone.avg_edt().unwrap_or(0));
            let units = self.stream.pieces_of(Owner::Zone(z as u32)).to_vec();
            put_units(&mut self.snap.img, at + 16, &units);
        }
    }

    /// Writes the snapshot tagged `tag` (checkpoint `generation`, log durable below `durable`)
    /// to its slot and makes it durable.
    pub(crate) fn write_snapshot(&mut self, tag: Lsn, generation: u64, durable: Lsn) -> Result<()> {
        let n = self.snap.seq;
        // Never the slot of the last complete checkpoint's snapshot. A checkpoint that wrote a
        // snapshot but did not complete leaves its slot in an unknown state for the incremental
        // rule below: the next two snapshots are written whole.
        let slot = match self.snap.confirmed {
            Some(c) => 1 - c,
            None => (n % 2) as usize,
        };
        if self.snap.unconfirmed.is_some() {
            self.snap.full = 2;
        }
        let (mb, zb) = self.snap_blocks();
        let total = 1 + mb + zb;
        let full = self.snap.full > 0 || self.snap.img.len() != total * BLOCK;
        if self.snap.img.len() != total * BLOCK {
            self.snap.img = vec![0u8; total * BLOCK];
        }
        if self.snap.dirty.len() != total {
            self.snap.dirty = vec![n; total];
        }
        let write: Vec<bool> = (0..total)
            .map(|b| b == 0 || full || self.snap.dirty[b] + 1 >= n)
            .collect();
        for (b, &w) in write.iter().enumerate().skip(1) {
            if w && b <= mb {
                self.encode_map_block(b);
            } else if w {
                self.encode_zone_block(b, mb);
            }
        }
        // Block 0: header and the metadata owners (whose units change as this slot is rewritten).
        self.stream.kill(Owner::Meta(slot as u8));
        let rewritten: usize = write.iter().filter(|&&w| w).count() * BLOCK;
        self.stream.write(Owner::Meta(slot as u8), rewritten as u64);
        let img = &mut self.snap.img;
        img[..BLOCK].fill(0);
        img[..8].copy_from_slice(MAGIC);
        put_u64(img, 8, tag);
        put_u64(img, 16, n);
        put_u64(img, 24, self.map.len() as u64);
        put_u32(img, 32, self.zones.len() as u32);
        put_u64(img, 36, self.stream.pos);
        put_u32(img, 44, mb as u32);
        put_u32(img, 48, zb as u32);
        for m in 0..META_OWNERS as u8 {
            let units = self.stream.pieces_of(Owner::Meta(m)).to_vec();
            put_units(img, META_AT + m as usize * META_REC, &units);
        }
        put_u64(img, GEN_AT, generation);
        put_u64(img, DURABLE_AT, durable);
        let crc = crc_of(img);
        put_u32(img, CRC_AT, crc);
        if (total * BLOCK) as u64 > self.layout.snap_bytes {
            return Err(Error::NotADatabase(
                "the map snapshot exceeds its slot: the device header is inconsistent".into(),
            ));
        }
        // The blocks to write, as runs of adjacent blocks (one write each).
        let mut changed = Vec::new();
        let mut b = 0;
        while b < total {
            if !write[b] {
                b += 1;
                continue;
            }
            let mut e = b + 1;
            while e < total && write[e] {
                e += 1;
            }
            changed.push((b * BLOCK, (e - b) * BLOCK));
            b = e;
        }
        let start = self.layout.snap_start[slot];
        let mut written = 0;
        let r = self.backend.write_snapshot(
            start,
            self.layout.snap_bytes,
            &self.snap.img,
            &changed,
            &mut written,
        );
        self.counters.metadata_bytes += written;
        self.counters.db_write_bytes += written;
        r?;
        self.flush()?;
        self.snap.full = self.snap.full.saturating_sub(1);
        self.snap.seq += 1;
        self.snap.unconfirmed = Some(slot);
        Ok(())
    }

    /// The checkpoint whose snapshot was written last is complete: its slot is now the one
    /// recovery needs, never to be overwritten until the next checkpoint completes.
    pub(crate) fn snapshot_done(&mut self) {
        if let Some(s) = self.snap.unconfirmed.take() {
            self.snap.confirmed = Some(s);
        }
    }

    /// Reads snapshot slot `s`.
    pub(super) fn read_snapshot(&mut self, s: usize) -> Result<SlotRead> {
        let start = self.layout.snap_start[s];
        let mut head = vec![0u8; BLOCK];
        self.backend.dev_mut().read_at(start, &mut head)?;
        if &head[..8] != MAGIC {
            return Ok(SlotRead::Empty);
        }
        let total = 1 + get_u32(&head, 44) as usize + get_u32(&head, 48) as usize;
        if (total * BLOCK) as u64 > self.layout.snap_bytes {
            return Ok(SlotRead::Damaged);
        }
        let mut img = vec![0u8; total * BLOCK];
        self.backend.dev_mut().read_at(start, &mut img)?;
        if crc_of(&img) != get_u32(&img, CRC_AT) {
            return Ok(SlotRead::Damaged);
        }
        Ok(SlotRead::Valid(Found {
            tag: get_u64(&img, 8),
            seq: get_u64(&img, 16),
            generation: get_u64(&img, GEN_AT),
            durable: get_u64(&img, DURABLE_AT),
            img,
        }))
    }

    /// Makes snapshot slot `s` read as empty (its block 0 zeroed; on a zoned device its zones
    /// reset) and durable.
    pub(super) fn erase_snapshot(&mut self, s: usize) -> Result<()> {
        let start = self.layout.snap_start[s];
        let zero = vec![0u8; BLOCK];
        let mut written = 0;
        let r = self.backend.write_snapshot(
            start,
            self.layout.snap_bytes,
            &zero,
            &[(0, BLOCK)],
            &mut written,
        );
        self.counters.metadata_bytes += written;
        self.counters.db_write_bytes += written;
        r?;
        self.flush()
    }

    /// Loads a snapshot image into the map and the NoWA model; returns each zone's (write
    /// pointer, average EDT) as of the snapshot.
    pub(super) fn load_snapshot(&mut self, img: &[u8]) -> Result<Vec<(u64, u64)>> {
        let n = get_u64(img, 24) as usize;
        let zc = get_u32(img, 32) as usize;
        let (mb, zb) = self.snap_blocks();
        if n != self.map.len()
            || zc != self.zones.len()
            || get_u32(img, 44) as usize != mb
            || get_u32(img, 48) as usize != zb
        {
            return Err(Error::NotADatabase(
                "the map snapshot does not match the device layout".into(),
            ));
        }
        for (pid, l) in self.map.iter_mut().enumerate() {
            let at = BLOCK * (1 + pid / PAGES_PER_BLOCK) + (pid % PAGES_PER_BLOCK) * PAGE_REC;
            *l = Loc {
                off: get_u64(img, at),
                len: get_u32(img, at + 8),
                edt: 0,
            };
        }
        self.stream = Groups::new(self.layout.gc_unit);
        self.stream.pos = get_u64(img, 36);
        let mut info = Vec::with_capacity(zc);
        for z in 0..zc {
            let at = BLOCK * (1 + mb + z / ZONES_PER_BLOCK) + (z % ZONES_PER_BLOCK) * ZONE_REC;
            self.stream
                .restore(Owner::Zone(z as u32), &get_units(img, at + 16));
            info.push((get_u64(img, at), get_u64(img, at + 8)));
        }
        for m in 0..META_OWNERS as u8 {
            self.stream.restore(
                Owner::Meta(m),
                &get_units(img, META_AT + m as usize * META_REC),
            );
        }
        self.snap.img = img.to_vec();
        self.snap.full = 2;
        Ok(info)
    }
}
