//! Rollback segments: before-images appended in extents of the undo device, and read back by
//! snapshot readers (see the module notes of `mvcc`).
//!
//! Appends and extent bookkeeping run under the store's writers' mutex ([`Writers`]); device
//! reads and writes, and the cache of read blocks, under the undo device's own mutex
//! ([`UndoIo`]), taken after it. A reader takes the writers' mutex only to copy a segment's
//! unwritten tail, and reads the device after letting it go: what it reads there is below the
//! tail, written once and not freed while its snapshot is registered (purge frees an extent
//! only when every writer into it committed at or before the oldest snapshot, and a reader
//! follows a chain only through images of versions newer than its snapshot).

use super::{Image, Ptr, ReadTally, Ts, TxnVersions, VersionStore, Writers};
use crate::device::BlockDevice;
use crate::error::{Error, Result};
use crate::wal::record::TxnId;
use std::collections::HashMap;

/// Undo blocks kept after a read (a database keeps recently read undo blocks in its buffer
/// cache): a reader following many chains through the same segments reads each block once.
const CACHED_BLOCKS: usize = 64;

/// An extent of a rollback segment.
pub(super) struct Extent {
    pub id: u32,
    /// Live transactions that wrote into it.
    pub live_writers: u32,
    /// The newest commit of a transaction that wrote into it.
    pub max_ts: Ts,
}

/// A rollback segment: extents appended in turn.
#[derive(Default)]
pub(super) struct Segment {
    pub extents: Vec<Extent>,
    /// Bytes appended into the last extent.
    used: u64,
    /// The unwritten tail: from `tail_from` (a block boundary of the last extent) to `used`.
    tail: Vec<u8>,
    tail_from: u64,
    /// The transaction appending to it now.
    holder: Option<TxnId>,
}

/// Whole blocks of a segment's tail, to be written to the undo device.
pub(super) struct Blocks {
    segment: usize,
    at: u64,
    data: Vec<u8>,
}

/// The undo device and its cache of read blocks.
pub(super) struct UndoIo {
    pub dev: Box<dyn BlockDevice>,
    /// Recently read undo blocks: device offset -> contents, with a use stamp.
    cache: HashMap<u64, (u64, Vec<u8>)>,
    stamp: u64,
}

impl UndoIo {
    pub fn new(dev: Box<dyn BlockDevice>) -> UndoIo {
        UndoIo {
            dev,
            cache: HashMap::new(),
            stamp: 0,
        }
    }

    /// Drops cached blocks in `[at, at + len)` (rewritten or freed).
    fn forget_blocks(&mut self, at: u64, len: u64) {
        if !self.cache.is_empty() {
            self.cache.retain(|&k, _| k < at || k >= at + len);
        }
    }

    /// Writes `data` at `at` (cached blocks there forgotten first).
    pub fn write(&mut self, at: u64, data: &[u8]) -> Result<()> {
        self.forget_blocks(at, data.len() as u64);
        Ok(self.dev.write_at(at, data)?)
    }

    /// Trims `[at, at + len)`, whose contents are dead: the device may reclaim them.
    pub fn trim(&mut self, at: u64, len: u64) {
        self.forget_blocks(at, len);
        let _ = self.dev.trim(at, len);
    }

    /// The block of `block` bytes at `at`, from the cache or read from the device (and cached).
    fn block_at(&mut self, at: u64, block: u64, tally: &mut ReadTally) -> Result<Vec<u8>> {
        self.stamp += 1;
        if let Some((used, b)) = self.cache.get_mut(&at) {
            *used = self.stamp;
            return Ok(b.clone());
        }
        let mut b = vec![0u8; block as usize];
        self.dev.read_at(at, &mut b)?;
        tally.blocks_read += 1;
        if self.cache.len() >= CACHED_BLOCKS {
            if let Some(&victim) = self
                .cache
                .iter()
                .min_by_key(|(_, (used, _))| *used)
                .map(|(k, _)| k)
            {
                self.cache.remove(&victim);
            }
        }
        self.cache.insert(at, (self.stamp, b.clone()));
        Ok(b)
    }
}

impl Writers {
    /// The segment `txn` holds, taking an idle one (or a new one) on its first append.
    fn segment_of(&mut self, t: &mut TxnVersions, txn: TxnId) -> usize {
        if let Some(i) = t.segment {
            return i;
        }
        let i = match self.segments.iter().position(|s| s.holder.is_none()) {
            Some(i) => i,
            None => {
                self.segments.push(Segment::default());
                self.stats.segments = self.segments.len() as u64;
                self.segments.len() - 1
            }
        };
        self.segments[i].holder = Some(txn);
        t.segment = Some(i);
        i
    }

    /// Marks the end of `txn`'s writing into the extents it touched (at commit `ts`, or 0
    /// for an abort, whose images are never read again) and gives its segment back.
    pub fn release(&mut self, t: &TxnVersions, ts: Ts) {
        for &(si, id) in &t.touched {
            if let Some(x) = self.segments[si].extents.iter_mut().find(|x| x.id == id) {
                x.live_writers -= 1;
                x.max_ts = x.max_ts.max(ts);
            }
        }
        if let Some(si) = t.segment {
            self.segments[si].holder = None;
        }
    }

    /// Extents no snapshot at or after `oldest` reads, taken out of their segments: those only
    /// commits at or before it (and aborted transactions) wrote into. The extent a segment
    /// appends to stays, held or idle: the next transaction goes on appending after the last
    /// one (an append-only stream through the extents).
    pub fn dead_extents(&mut self, oldest: Ts) -> Vec<u32> {
        let mut dead_ids = Vec::new();
        for seg in &mut self.segments {
            let n = seg.extents.len();
            let mut i = 0;
            seg.extents.retain(|x| {
                i += 1;
                let dead = i < n && x.live_writers == 0 && x.max_ts <= oldest;
                if dead {
                    dead_ids.push(x.id);
                }
                !dead
            });
        }
        dead_ids
    }
}

impl VersionStore {
    /// Appends `rec` to the segment of `txn`, whose state is `t` (a new extent when the
    /// current one is short). Its place, and the bytes of whole blocks the segment's tail now
    /// holds unwritten: they go to the device with the writers' mutex released
    /// ([`VersionStore::whole_blocks`], [`VersionStore::write_blocks`]).
    pub(super) fn append(
        &self,
        w: &mut Writers,
        t: &mut TxnVersions,
        txn: TxnId,
        rec: &[u8],
    ) -> Result<(Ptr, u64)> {
        let si = w.segment_of(t, txn);
        let seg = &w.segments[si];
        let room = if seg.extents.is_empty() {
            0
        } else {
            self.extent_bytes - seg.used
        };
        if room < rec.len() as u64 {
            if w.free.is_empty() {
                // Snapshot readers end without purging unless heads are due (`purge_due_after`):
                // extents they alone held may be free to take.
                self.purge_locked(w, self.snaps.oldest());
            }
            let Some(&e) = w.free.iter().next() else {
                let oldest = self.snaps.oldest();
                return Err(Error::VersionStoreFull(format!(
                    "all {} extents of {} bytes hold versions that active snapshots may read \
                     (oldest snapshot at commit {oldest}, {} commits since) or that live \
                     transactions wrote; end long snapshot transactions or give the undo device \
                     more space",
                    w.stats.extents_total,
                    self.extent_bytes,
                    self.snaps.last_ts() - oldest
                )));
            };
            w.free.remove(&e);
            w.stats.extents_in_use += 1;
            let seg = &mut w.segments[si];
            // The old extent's partial block is written before moving on.
            let flush = std::mem::take(&mut seg.tail);
            let flush_at = seg
                .extents
                .last()
                .map(|x| x.id as u64 * self.extent_bytes + seg.tail_from);
            seg.extents.push(Extent {
                id: e,
                live_writers: 0,
                max_ts: 0,
            });
            seg.used = 0;
            seg.tail_from = 0;
            if let Some(at) = flush_at {
                self.write_padded(at, flush)?;
            }
        }
        let seg = &mut w.segments[si];
        let ext = seg.extents.last_mut().expect("an extent");
        let ext_id = ext.id;
        if !t.touched.contains(&(si, ext_id)) {
            t.touched.push((si, ext_id));
            ext.live_writers += 1;
        }
        let offset = ext_id as u64 * self.extent_bytes + seg.used;
        seg.tail.extend_from_slice(rec);
        seg.used += rec.len() as u64;
        // Whole blocks go to the device next, sequentially. They stay in the tail, where
        // readers find them, until they are written.
        let whole = seg.tail.len() as u64 / self.block * self.block;
        let ptr = Ptr {
            offset,
            len: rec.len() as u32,
        };
        Ok((ptr, whole))
    }

    /// A copy of the whole blocks segment `si`'s tail holds unwritten, and where they go.
    pub(super) fn whole_blocks(&self, w: &Writers, si: usize) -> Option<Blocks> {
        let seg = &w.segments[si];
        let ext = seg.extents.last()?;
        let whole = seg.tail.len() as u64 / self.block * self.block;
        (whole > 0).then(|| Blocks {
            segment: si,
            at: ext.id as u64 * self.extent_bytes + seg.tail_from,
            data: seg.tail[..whole as usize].to_vec(),
        })
    }

    /// Writes the whole blocks of a segment's tail ([`VersionStore::whole_blocks`]), the
    /// writers' mutex not held (so that readers copying a tail and other writers do not wait
    /// for the device), then takes them out of the tail. Only the segment's transaction appends
    /// to it, on its own thread, which also calls this, and the extent it appends to is never
    /// freed while it is live, so the tail begins as it did when the blocks were copied. After
    /// a failed write the blocks stay in the tail, and the next append writes them again.
    pub(super) fn write_blocks(&self, b: Blocks) -> Result<()> {
        self.io_lock().write(b.at, &b.data)?;
        let mut w = self.writers();
        let seg = &mut w.segments[b.segment];
        let len = b.data.len();
        debug_assert_eq!(seg.tail[..len], b.data[..]);
        seg.tail.drain(..len);
        seg.tail_from += len as u64;
        Ok(())
    }

    /// Writes `data` at `at`, padded with zeros to whole blocks.
    fn write_padded(&self, at: u64, mut data: Vec<u8>) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let len = (data.len() as u64).div_ceil(self.block) * self.block;
        data.resize(len as usize, 0);
        self.io_lock().write(at, &data)
    }

    /// Reads a before-image (from the unwritten tail of a live segment, or the device).
    pub(super) fn read_image(&self, p: Ptr, tally: &mut ReadTally) -> Result<Image> {
        tally.chain_reads += 1;
        let mut buf = vec![0u8; p.len as usize];
        // The record may still sit (in part) in a live segment's tail: copied, so that the
        // writers' mutex is not held across the device read.
        let ext = (p.offset / self.extent_bytes) as u32;
        let in_ext = p.offset % self.extent_bytes;
        let tail = self.writers().segments.iter().find_map(|s| {
            (s.extents.last().map(|x| x.id) == Some(ext) && in_ext + p.len as u64 > s.tail_from)
                .then(|| (s.tail_from, s.tail.clone()))
        });
        let on_device_end = match &tail {
            Some((from, _)) => (*from).max(in_ext).min(in_ext + p.len as u64),
            None => in_ext + p.len as u64,
        };
        let dev_len = (on_device_end - in_ext) as usize;
        if dev_len > 0 {
            // Whole blocks, each from the cache or the device.
            let lo = p.offset / self.block * self.block;
            let hi = (p.offset + dev_len as u64).div_ceil(self.block) * self.block;
            let mut io = self.io_lock();
            let mut at = lo;
            while at < hi {
                let block = io.block_at(at, self.block, tally)?;
                let b_lo = at.max(p.offset);
                let b_hi = (at + self.block).min(p.offset + dev_len as u64);
                buf[(b_lo - p.offset) as usize..(b_hi - p.offset) as usize]
                    .copy_from_slice(&block[(b_lo - at) as usize..(b_hi - at) as usize]);
                at += self.block;
            }
        }
        if let Some((from, t)) = tail {
            for (i, b) in buf.iter_mut().enumerate().skip(dev_len) {
                *b = t[(in_ext + i as u64 - from) as usize];
            }
        }
        super::decode(&buf, p.offset)
    }
}
