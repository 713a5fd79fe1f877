//! The version store of snapshot isolation (paper 003 section 4): rollback segments on the
//! `undo` device.
//!
//! The B+tree holds the newest version of every record. When a transaction (of either isolation
//! level) changes a record, the version it replaces (its *before-image*) is appended to the
//! rollback segment the transaction holds: an append-only stream in extents of the undo device
//! (1 MiB, less on small devices), written a block at a time as blocks fill (the partial last
//! block stays in memory, as a database's undo blocks stay in its buffer cache). A segment
//! serves one transaction at a time and the next one after it; segments are added as the
//! number of concurrent writers grows (paper 003 section 4.2). An in-memory *head* per changed record says who wrote the tree's version,
//! when it committed (its commit timestamp, none while uncommitted) and where the before-image
//! of the version it replaced is. A snapshot reader (begun at timestamp `S`) sees the tree's
//! version when its writer committed at or before `S` (or is the reader itself); otherwise it
//! follows the chain of before-images into the segments (random reads of the undo device) to
//! the newest one committed at or before `S`.
//!
//! Purge: versions older than the oldest active snapshot are dead. The versions a committed
//! transaction replaced are read only by snapshots older than its commit, so an extent is freed
//! (trimmed and returned) once no live transaction has written into it, the oldest snapshot
//! is at or past the newest commit that did, and its segment has moved on to another extent; the heads of a commit are dropped then too. An
//! aborted transaction's heads are put back at once (its images are never read again).
//!
//! Crash safety: rebuilt, not recovered. No snapshot survives a restart, so no old version is
//! needed after one: the store starts empty at every open and the undo device's old contents
//! are ignored. The tree's own changes stay protected by the log (redo and undo), as before.
//!
//! Space is bounded by the undo device: when no extent is free, the write that needed one fails
//! with [`Error::VersionStoreFull`] before changing anything; ending old snapshots (or a larger
//! undo device) makes room.

use crate::device::BlockDevice;
use crate::error::{Error, Result};
use crate::wal::record::{TreeId, TxnId};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

mod shared;
pub(crate) use shared::{Snapshots, Versions};

/// A commit timestamp: commits are numbered 1, 2, ...; 0 is "before every snapshot".
pub(crate) type Ts = u64;

/// The largest extent of a rollback segment.
const EXTENT_BYTES: u64 = 1 << 20;

/// Undo blocks kept after a read (a database keeps recently read undo blocks in its buffer
/// cache): a reader following many chains through the same segments reads each block once.
const CACHED_BLOCKS: usize = 64;

/// Where a before-image is on the undo device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ptr {
    offset: u64,
    len: u32,
}

/// The newest version of a record that some snapshot may not see.
#[derive(Clone, Copy, Debug)]
struct Head {
    writer: TxnId,
    /// Commit timestamp of `writer`, None while it is uncommitted.
    ts: Option<Ts>,
    /// The before-image of the version it replaced.
    prev: Ptr,
}

/// An extent of a rollback segment.
struct Extent {
    id: u32,
    /// Live transactions that wrote into it.
    live_writers: u32,
    /// The newest commit of a transaction that wrote into it.
    max_ts: Ts,
}

/// A rollback segment: extents appended in turn.
#[derive(Default)]
struct Segment {
    extents: Vec<Extent>,
    /// Bytes appended into the last extent.
    used: u64,
    /// The unwritten tail: from `tail_from` (a block boundary of the last extent) to `used`.
    tail: Vec<u8>,
    tail_from: u64,
    /// The transaction appending to it now.
    holder: Option<TxnId>,
}

/// What a transaction did to the store, for its end.
#[derive(Default)]
struct TxnVersions {
    /// The segment it holds (from its first before-image on).
    segment: Option<usize>,
    /// Extents it wrote into: (segment, extent id).
    touched: Vec<(usize, u32)>,
    /// Heads it replaced, in order: (tree, key, the previous head).
    replaced: Vec<(TreeId, Vec<u8>, Option<Head>)>,
}

/// Counters of the version store.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VersionStats {
    /// Before-images appended.
    pub before_images: u64,
    /// Bytes appended to rollback segments.
    pub appended_bytes: u64,
    /// Before-images read back by snapshot readers.
    pub chain_reads: u64,
    /// Undo blocks read from the device for them (the others were in memory).
    pub blocks_read: u64,
    /// Reads that returned an older version than the tree's.
    pub old_versions_read: u64,
    /// Extents in use now, and of the device.
    pub extents_in_use: u64,
    pub extents_total: u64,
    /// Extent size in bytes.
    pub extent_bytes: u64,
    /// Extents freed by purge.
    pub extents_freed: u64,
    /// Rollback segments (they grow with the number of concurrent writers).
    pub segments: u64,
    /// Heads in memory now.
    pub heads: u64,
    /// Write-write conflicts refused to snapshot transactions.
    pub write_conflicts: u64,
}

/// The version store (see the module's documentation).
pub(crate) struct VersionStore {
    /// The undo device and the blocks recently read from it: snapshot readers follow chains
    /// with the store latched shared (see `shared.rs`), each read under this mutex.
    io: std::sync::Mutex<UndoIo>,
    block: u64,
    extent_bytes: u64,
    free: BTreeSet<u32>,
    heads: HashMap<TreeId, BTreeMap<Vec<u8>, Head>>,
    live: HashMap<TxnId, TxnVersions>,
    segments: Vec<Segment>,
    /// Active snapshots and the newest commit timestamp (shared with snapshot readers, which
    /// begin and end beside each other).
    snaps: Arc<Snapshots>,
    /// Heads of commits waiting for the oldest snapshot to pass their commit.
    retired: BTreeMap<Ts, Vec<(TreeId, Vec<u8>)>>,
    /// The counters a snapshot reader moves (with the store latched shared).
    reads: ReadCounts,
    pub stats: VersionStats,
}

/// The undo device and its cache of read blocks.
struct UndoIo {
    dev: Box<dyn BlockDevice>,
    /// Recently read undo blocks: device offset -> contents, with a use stamp.
    cache: HashMap<u64, (u64, Vec<u8>)>,
    stamp: u64,
}

/// What snapshot reads did, counted by the reader and then added to the store's counters
/// ([`VersionStore::count`]): a read that gives up for the exclusive path adds nothing.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ReadTally {
    chain_reads: u64,
    blocks_read: u64,
    old_versions_read: u64,
}

/// [`VersionStats`] counters of the readers' side.
#[derive(Default)]
struct ReadCounts {
    chain_reads: AtomicU64,
    blocks_read: AtomicU64,
    old_versions_read: AtomicU64,
}

/// A before-image as stored: its version's commit timestamp, the one before it, the value.
struct Image {
    ts: Ts,
    prev: Option<Ptr>,
    value: Option<Vec<u8>>,
}

fn encode(tree: TreeId, key: &[u8], img: &Image) -> Vec<u8> {
    let mut b = Vec::with_capacity(48 + key.len() + img.value.as_ref().map_or(0, |v| v.len()));
    b.extend_from_slice(&[0; 4]); // length, filled below
    b.extend_from_slice(&[0; 4]); // crc32c, filled below
    b.extend_from_slice(&img.ts.to_le_bytes());
    let (po, pl) = img.prev.map_or((u64::MAX, 0), |p| (p.offset, p.len));
    b.extend_from_slice(&po.to_le_bytes());
    b.extend_from_slice(&pl.to_le_bytes());
    b.extend_from_slice(&tree.to_le_bytes());
    b.extend_from_slice(&(key.len() as u32).to_le_bytes());
    b.extend_from_slice(key);
    match &img.value {
        Some(v) => {
            b.push(1);
            b.extend_from_slice(&(v.len() as u32).to_le_bytes());
            b.extend_from_slice(v);
        }
        None => b.push(0),
    }
    let len = b.len() as u32;
    b[0..4].copy_from_slice(&len.to_le_bytes());
    let crc = crc32c::crc32c(&b[8..]);
    b[4..8].copy_from_slice(&crc.to_le_bytes());
    b
}

fn decode(b: &[u8], at: u64) -> Result<Image> {
    let bad = |reason: &str| Error::VersionCorrupt {
        offset: at,
        reason: reason.to_string(),
    };
    let u32_at = |i: usize| -> Result<u32> {
        b.get(i..i + 4)
            .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
            .ok_or_else(|| bad("truncated"))
    };
    let u64_at = |i: usize| -> Result<u64> {
        b.get(i..i + 8)
            .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
            .ok_or_else(|| bad("truncated"))
    };
    if u32_at(0)? as usize != b.len() {
        return Err(bad("length mismatch"));
    }
    if u32_at(4)? != crc32c::crc32c(&b[8..]) {
        return Err(bad("checksum mismatch"));
    }
    let ts = u64_at(8)?;
    let po = u64_at(16)?;
    let pl = u32_at(24)?;
    let klen = u32_at(32)? as usize;
    let mut i = 36 + klen;
    let present = *b.get(i).ok_or_else(|| bad("truncated"))?;
    i += 1;
    let value = if present == 1 {
        let vlen = u32_at(i)? as usize;
        i += 4;
        Some(b.get(i..i + vlen).ok_or_else(|| bad("truncated"))?.to_vec())
    } else {
        None
    };
    Ok(Image {
        ts,
        prev: (po != u64::MAX).then_some(Ptr {
            offset: po,
            len: pl,
        }),
        value,
    })
}

impl VersionStore {
    /// A store over `dev` (its contents are ignored: the store starts empty).
    pub fn new(dev: Box<dyn BlockDevice>) -> Result<VersionStore> {
        // Undo pages of 4 KiB (or the device's block, if larger), as the data pages.
        let block = (dev.block_bytes() as u64).max(4096);
        let cap = dev.capacity_bytes() / block * block;
        let extent_bytes = (EXTENT_BYTES.min(cap / 4) / block * block).max(block);
        let n = cap / extent_bytes;
        if n < 2 {
            return Err(Error::InvalidArgument(format!(
                "the undo device ({cap} bytes) is too small for rollback segments"
            )));
        }
        Ok(VersionStore {
            io: std::sync::Mutex::new(UndoIo {
                dev,
                cache: HashMap::new(),
                stamp: 0,
            }),
            block,
            extent_bytes,
            free: (0..n as u32).collect(),
            heads: HashMap::new(),
            live: HashMap::new(),
            segments: Vec::new(),
            snaps: Arc::new(Snapshots::new()),
            retired: BTreeMap::new(),
            reads: ReadCounts::default(),
            stats: VersionStats {
                extents_total: n,
                extent_bytes,
                ..VersionStats::default()
            },
        })
    }

    /// The undo device's statistics.
    pub fn device_stats(&self) -> crate::device::DeviceStats {
        self.io_lock().dev.stats()
    }

    fn io_lock(&self) -> std::sync::MutexGuard<'_, UndoIo> {
        crate::sync::lock(&self.io)
    }

    fn io_mut(&mut self) -> &mut UndoIo {
        self.io.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    /// The snapshot registry (begins and ends of snapshot transactions).
    pub fn snapshots(&self) -> &Arc<Snapshots> {
        &self.snaps
    }

    /// `txn`'s snapshot, if it is a snapshot transaction.
    pub fn snapshot_of(&self, txn: TxnId) -> Option<Ts> {
        self.snaps.of(txn)
    }

    /// Whether `txn` has left nothing in the store but, perhaps, its snapshot (no before-image,
    /// no segment): its commit changes no version any snapshot sees.
    pub fn wrote_nothing(&self, txn: TxnId) -> bool {
        self.live
            .get(&txn)
            .is_none_or(|t| t.replaced.is_empty() && t.touched.is_empty() && t.segment.is_none())
    }

    /// Before a snapshot transaction writes `key`: refuses (first updater wins) when another
    /// transaction wrote it and has not committed, or committed after the snapshot.
    pub fn check_write(&mut self, txn: TxnId, tree: TreeId, key: &[u8]) -> Result<()> {
        let Some(snap) = self.snapshot_of(txn) else {
            return Ok(());
        };
        let Some(h) = self.heads.get(&tree).and_then(|m| m.get(key)) else {
            return Ok(());
        };
        if h.writer == txn {
            return Ok(());
        }
        let what = match h.ts {
            None => format!(
                "key written by transaction {}, which has not committed (first updater wins)",
                h.writer
            ),
            Some(ts) if ts > snap => format!(
                "key written by transaction {}, committed after this snapshot",
                h.writer
            ),
            Some(_) => return Ok(()),
        };
        self.stats.write_conflicts += 1;
        Err(Error::Conflict { what })
    }

    /// Records that `txn` is about to replace `old` (the tree's version of `key`, None if
    /// absent) with a version of its own. Appends the before-image to its segment and makes
    /// `txn` the key's head. A second change of the same key by `txn` keeps the first image.
    pub fn before_write(
        &mut self,
        txn: TxnId,
        tree: TreeId,
        key: &[u8],
        old: Option<&[u8]>,
    ) -> Result<()> {
        let prev_head = self.heads.get(&tree).and_then(|m| m.get(key)).copied();
        if prev_head.is_some_and(|h| h.writer == txn) {
            return Ok(());
        }
        let img = Image {
            ts: prev_head.and_then(|h| h.ts).unwrap_or(0),
            prev: prev_head.map(|h| h.prev),
            value: old.map(|v| v.to_vec()),
        };
        debug_assert!(
            prev_head.is_none_or(|h| h.ts.is_some()),
            "an uncommitted head is another writer's: 2PL or the snapshot check refused it"
        );
        let rec = encode(tree, key, &img);
        if rec.len() as u64 > self.extent_bytes {
            return Err(Error::InvalidArgument(format!(
                "a before-image of {} bytes does not fit an undo extent of {}",
                rec.len(),
                self.extent_bytes
            )));
        }
        let ptr = self.append(txn, &rec)?;
        self.stats.before_images += 1;
        self.stats.appended_bytes += rec.len() as u64;
        let t = self.live.entry(txn).or_default();
        t.replaced.push((tree, key.to_vec(), prev_head));
        self.heads.entry(tree).or_default().insert(
            key.to_vec(),
            Head {
                writer: txn,
                ts: None,
                prev: ptr,
            },
        );
        self.stats.heads = self.heads.values().map(|m| m.len() as u64).sum();
        Ok(())
    }

    /// The segment `txn` holds, taking an idle one (or a new one) on its first append.
    fn segment_of(&mut self, txn: TxnId) -> usize {
        if let Some(i) = self.live.get(&txn).and_then(|t| t.segment) {
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
        self.live.entry(txn).or_default().segment = Some(i);
        i
    }

    /// Appends `rec` to `txn`'s segment (a new extent when the current one is short), writing
    /// every block it completes. Its place.
    fn append(&mut self, txn: TxnId, rec: &[u8]) -> Result<Ptr> {
        let si = self.segment_of(txn);
        let seg = &self.segments[si];
        let room = if seg.extents.is_empty() {
            0
        } else {
            self.extent_bytes - seg.used
        };
        if room < rec.len() as u64 {
            if self.free.is_empty() {
                // Snapshot readers end without purging unless heads are due (`purge_due`):
                // extents they alone held may be free to take.
                self.purge();
            }
            let Some(&e) = self.free.iter().next() else {
                let oldest = self.oldest();
                return Err(Error::VersionStoreFull(format!(
                    "all {} extents of {} bytes hold versions that active snapshots may read \
                     (oldest snapshot at commit {oldest}, {} commits since) or that live \
                     transactions wrote; end long snapshot transactions or give the undo device \
                     more space",
                    self.stats.extents_total,
                    self.extent_bytes,
                    self.snaps.last_ts() - oldest
                )));
            };
            self.free.remove(&e);
            self.stats.extents_in_use += 1;
            let extent_bytes = self.extent_bytes;
            let seg = &mut self.segments[si];
            // The old extent's partial block is written before moving on.
            let flush = std::mem::take(&mut seg.tail);
            let flush_at = seg
                .extents
                .last()
                .map(|x| x.id as u64 * extent_bytes + seg.tail_from);
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
        let (extent_bytes, block) = (self.extent_bytes, self.block);
        let seg = &mut self.segments[si];
        let ext = seg.extents.last_mut().expect("an extent");
        let ext_id = ext.id;
        let t = self.live.get_mut(&txn).expect("made by segment_of");
        if !t.touched.contains(&(si, ext_id)) {
            t.touched.push((si, ext_id));
            ext.live_writers += 1;
        }
        let offset = ext_id as u64 * extent_bytes + seg.used;
        seg.tail.extend_from_slice(rec);
        seg.used += rec.len() as u64;
        // Whole blocks go to the device now, sequentially.
        let whole = seg.tail.len() as u64 / block * block;
        if whole > 0 {
            let rest = seg.tail.split_off(whole as usize);
            let out = std::mem::replace(&mut seg.tail, rest);
            let at = ext_id as u64 * extent_bytes + seg.tail_from;
            seg.tail_from += whole;
            self.forget_blocks(at, whole);
            self.io_mut().dev.write_at(at, &out)?;
        }
        Ok(Ptr {
            offset,
            len: rec.len() as u32,
        })
    }

    /// Writes `data` at `at`, padded with zeros to whole blocks.
    fn write_padded(&mut self, at: u64, mut data: Vec<u8>) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let len = (data.len() as u64).div_ceil(self.block) * self.block;
        data.resize(len as usize, 0);
        self.forget_blocks(at, len);
        self.io_mut().dev.write_at(at, &data)?;
        Ok(())
    }

    /// Marks the end of `txn`'s writing into the extents it touched (at commit `ts`, or 0
    /// for an abort, whose images are never read again) and gives its segment back.
    fn release(&mut self, t: &TxnVersions, ts: Ts) {
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

    /// `txn` committed: its versions get the next timestamp; what it replaced waits for purge.
    pub fn commit(&mut self, txn: TxnId) -> Result<()> {
        let was_snapshot = self.snaps.end(txn).is_some();
        let Some(t) = self.live.remove(&txn) else {
            // Its end may let the oldest snapshot move on.
            if was_snapshot {
                self.purge();
            }
            return Ok(());
        };
        if t.replaced.is_empty() {
            self.release(&t, 0);
            self.purge();
            return Ok(());
        }
        // Every head gets the timestamp before snapshots may take it: a snapshot that begins
        // beside this commit (with the core latch shared) sees all of it or none.
        let ts = self.snaps.last_ts() + 1;
        let mut keys = Vec::with_capacity(t.replaced.len());
        for (tree, key, _) in &t.replaced {
            if let Some(h) = self.heads.get_mut(tree).and_then(|m| m.get_mut(key)) {
                debug_assert_eq!(h.writer, txn);
                h.ts = Some(ts);
            }
            keys.push((*tree, key.clone()));
        }
        self.snaps.publish(ts);
        self.release(&t, ts);
        self.retired.insert(ts, keys);
        self.purge();
        Ok(())
    }

    /// `txn` rolled back: the heads it replaced come back.
    pub fn abort(&mut self, txn: TxnId) {
        let was_snapshot = self.snaps.end(txn).is_some();
        let Some(t) = self.live.remove(&txn) else {
            if was_snapshot {
                self.purge();
            }
            return;
        };
        let oldest = self.oldest();
        for (tree, key, prev) in t.replaced.iter().rev() {
            let m = self.heads.entry(*tree).or_default();
            match prev {
                // A head every snapshot now sees past was purged while replaced: gone.
                Some(h) if h.ts.is_some_and(|ts| ts <= oldest) => {
                    m.remove(key);
                }
                Some(h) => {
                    m.insert(key.clone(), *h);
                }
                None => {
                    m.remove(key);
                }
            }
        }
        self.release(&t, 0);
        self.purge();
    }

    /// The oldest active snapshot, or the newest commit when there is none.
    fn oldest(&self) -> Ts {
        self.snaps.oldest()
    }

    /// Whether [`VersionStore::purge`] would free something now (a commit retired at or before
    /// the oldest snapshot): a snapshot reader's end looks, and purges only then.
    pub fn purge_due(&self) -> bool {
        self.retired
            .first_key_value()
            .is_some_and(|(&ts, _)| ts <= self.oldest())
    }

    /// Frees what no active snapshot can read: heads of commits at or before the oldest
    /// snapshot (every commit when there is none), and extents that only such commits (and
    /// aborted transactions) wrote into; the extent a segment appends to stays.
    pub fn purge(&mut self) {
        let oldest = self.oldest();
        while let Some(entry) = self.retired.first_entry() {
            let ts = *entry.key();
            if ts > oldest {
                break;
            }
            for (tree, key) in entry.remove() {
                if let Some(m) = self.heads.get_mut(&tree) {
                    if m.get(&key).is_some_and(|h| h.ts == Some(ts)) {
                        m.remove(&key);
                    }
                }
            }
        }
        let mut freed = Vec::new();
        for seg in &mut self.segments {
            // The extent a segment appends to stays, held or idle: the next transaction goes
            // on appending after the last one (an append-only stream through the extents).
            let n = seg.extents.len();
            let mut i = 0;
            seg.extents.retain(|x| {
                i += 1;
                let dead = i < n && x.live_writers == 0 && x.max_ts <= oldest;
                if dead {
                    freed.push(x.id);
                }
                !dead
            });
        }
        for id in freed {
            self.forget_blocks(id as u64 * self.extent_bytes, self.extent_bytes);
            // The extent's old contents are dead: the device may reclaim them.
            let extent_bytes = self.extent_bytes;
            let _ = self
                .io_mut()
                .dev
                .trim(id as u64 * extent_bytes, extent_bytes);
            self.free.insert(id);
            self.stats.extents_in_use -= 1;
            self.stats.extents_freed += 1;
        }
        self.stats.heads = self.heads.values().map(|m| m.len() as u64).sum();
    }

    /// Reads a before-image (from the unwritten tail of a live segment, or the device).
    fn read_image(&self, p: Ptr, tally: &mut ReadTally) -> Result<Image> {
        tally.chain_reads += 1;
        let mut buf = vec![0u8; p.len as usize];
        // The record may still sit (in part) in a live segment's tail.
        let ext = (p.offset / self.extent_bytes) as u32;
        let in_ext = p.offset % self.extent_bytes;
        let tail = self.segments.iter().find_map(|s| {
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
            let mut at = lo;
            while at < hi {
                let block = self.block_at(at, tally)?;
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
        decode(&buf, p.offset)
    }

    /// The undo block at `at`, from the cache or read from the device (and cached).
    fn block_at(&self, at: u64, tally: &mut ReadTally) -> Result<Vec<u8>> {
        let mut io = self.io_lock();
        let io = &mut *io;
        io.stamp += 1;
        if let Some((used, b)) = io.cache.get_mut(&at) {
            *used = io.stamp;
            return Ok(b.clone());
        }
        let mut b = vec![0u8; self.block as usize];
        io.dev.read_at(at, &mut b)?;
        tally.blocks_read += 1;
        if io.cache.len() >= CACHED_BLOCKS {
            if let Some(&victim) = io
                .cache
                .iter()
                .min_by_key(|(_, (used, _))| *used)
                .map(|(k, _)| k)
            {
                io.cache.remove(&victim);
            }
        }
        io.cache.insert(at, (io.stamp, b.clone()));
        Ok(b)
    }

    /// Drops cached blocks in `[at, at + len)` (rewritten or freed).
    fn forget_blocks(&mut self, at: u64, len: u64) {
        let io = self.io_mut();
        if !io.cache.is_empty() {
            io.cache.retain(|&k, _| k < at || k >= at + len);
        }
    }

    /// What `txn` sees of `key`, whose version in the tree is `current`. Takes the store
    /// shared: what it changes (the undo block cache, the readers' counters) has its own
    /// latch.
    pub fn visible(
        &self,
        txn: TxnId,
        tree: TreeId,
        key: &[u8],
        current: Option<Vec<u8>>,
        tally: &mut ReadTally,
    ) -> Result<Option<Vec<u8>>> {
        let Some(snap) = self.snapshot_of(txn) else {
            return Ok(current);
        };
        let Some(h) = self.heads.get(&tree).and_then(|m| m.get(key)).copied() else {
            return Ok(current);
        };
        if h.writer == txn || h.ts.is_some_and(|ts| ts <= snap) {
            return Ok(current);
        }
        tally.old_versions_read += 1;
        let mut p = h.prev;
        loop {
            let img = self.read_image(p, tally)?;
            if img.ts <= snap {
                return Ok(img.value);
            }
            p = img.prev.ok_or_else(|| Error::VersionCorrupt {
                offset: p.offset,
                reason: format!(
                    "the chain ends at a version committed at {} after snapshot {snap}",
                    img.ts
                ),
            })?;
        }
    }

    /// Up to `limit` keys of `tree` with a head in `range`, in scan order (descending if
    /// `reverse`): the records a snapshot may see differently from the tree.
    pub fn head_keys(
        &self,
        tree: TreeId,
        range: (std::ops::Bound<&[u8]>, std::ops::Bound<&[u8]>),
        reverse: bool,
        limit: usize,
    ) -> Vec<Vec<u8>> {
        let Some(m) = self.heads.get(&tree) else {
            return Vec::new();
        };
        let r = m.range::<[u8], _>(range).map(|(k, _)| k.clone());
        if reverse {
            r.rev().take(limit).collect()
        } else {
            r.take(limit).collect()
        }
    }

    /// Adds what snapshot reads did to the counters.
    pub fn count(&self, t: &ReadTally) {
        let add = |c: &AtomicU64, n: u64| {
            if n > 0 {
                c.fetch_add(n, Ordering::Relaxed);
            }
        };
        add(&self.reads.chain_reads, t.chain_reads);
        add(&self.reads.blocks_read, t.blocks_read);
        add(&self.reads.old_versions_read, t.old_versions_read);
    }

    /// A snapshot of the counters.
    pub fn snapshot_stats(&self) -> VersionStats {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        VersionStats {
            chain_reads: n(&self.reads.chain_reads),
            blocks_read: n(&self.reads.blocks_read),
            old_versions_read: n(&self.reads.old_versions_read),
            ..self.stats.clone()
        }
    }
}
