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
use crate::sync::Shards;
use crate::txn_table::shard;
use crate::wal::record::{TreeId, TxnId};
use heads::Heads;
use segments::{Segment, UndoIo};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

mod heads;
mod segments;
mod shared;
#[cfg(test)]
mod tests;
pub(crate) use shared::{Snapshots, Versions};

/// A commit timestamp: commits are numbered 1, 2, ...; 0 is "before every snapshot".
pub(crate) type Ts = u64;

/// Shards of the live transactions' state.
const LIVE_SHARDS: usize = 16;

/// The largest extent of a rollback segment.
const EXTENT_BYTES: u64 = 1 << 20;

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

/// The version store (see the module's documentation). Its parts have latches of their own,
/// so that snapshot readers and writers of different keys go on beside each other (the core
/// latch shared, see `shared.rs`):
///
/// - the heads, sharded by key ([`Heads`]): a reader or writer of a key takes its shard;
/// - what only writers change ([`Writers`]: segments, free extents, retired commits,
///   counters) under one mutex, held for an append or a commit's bookkeeping, not across the
///   write of the undo blocks an append completes (a reader takes it only to copy a segment's
///   unwritten tail);
/// - each live transaction's own state, in shards by transaction, out of its shard while the
///   transaction appends (never held with the writers' mutex);
/// - the undo device and its block cache ([`UndoIo`]), taken after the writers' mutex where
///   both are held (moving to a new extent, purge's trims);
/// - the snapshot registry ([`Snapshots`], striped).
///
/// The oldest snapshot is found (a look at every stripe) with none of these held, but when an
/// append finds no free extent.
pub(crate) struct VersionStore {
    heads: Heads,
    /// What each live transaction did to the store, sharded by transaction.
    live: Shards<HashMap<TxnId, TxnVersions>>,
    w: Mutex<Writers>,
    io: Mutex<UndoIo>,
    block: u64,
    extent_bytes: u64,
    /// Active snapshots and the newest commit timestamp (shared with snapshot readers, which
    /// begin and end beside each other).
    snaps: Arc<Snapshots>,
    /// The first timestamp in [`Writers::retired`] (`u64::MAX`: none), read without the mutex
    /// by a snapshot reader's end.
    retired_first: AtomicU64,
    /// The counters a snapshot reader moves.
    reads: ReadCounts,
    /// Write-write conflicts refused (counted before the writers' mutex is taken).
    write_conflicts: AtomicU64,
}

/// Bytes of whole undo blocks a segment's tail may hold unwritten after a before-image, for the
/// transaction to write once it has let the leaf go ([`VersionStore::write_completed`]); past
/// this (an operation of many changes under one latch, a bulk load by puts), the before-image
/// writes them itself.
const DEFERRED_BLOCK_BYTES: u64 = 64 << 10;

/// What writers change, under the store's writers' mutex.
struct Writers {
    free: BTreeSet<u32>,
    segments: Vec<Segment>,
    /// Heads of commits waiting for the oldest snapshot to pass their commit.
    retired: BTreeMap<Ts, Vec<(TreeId, Vec<u8>)>>,
    stats: VersionStats,
}

/// A live transaction's state taken out of its shard, put back when dropped.
struct TakenState<'a> {
    store: &'a VersionStore,
    txn: TxnId,
    t: TxnVersions,
}

impl Drop for TakenState<'_> {
    fn drop(&mut self) {
        let t = std::mem::take(&mut self.t);
        self.store.live.lock(shard(self.txn)).insert(self.txn, t);
    }
}

/// What snapshot reads did, counted by the reader and then added to the store's counters
/// ([`VersionStore::count`]): a read that gives up for the exclusive path adds nothing.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ReadTally {
    chain_reads: u64,
    blocks_read: u64,
    old_versions_read: u64,
}

impl ReadTally {
    /// Adds `other`'s reads to these.
    pub fn add(&mut self, other: &ReadTally) {
        self.chain_reads += other.chain_reads;
        self.blocks_read += other.blocks_read;
        self.old_versions_read += other.old_versions_read;
    }
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
            heads: Heads::new(),
            live: Shards::new(LIVE_SHARDS),
            w: Mutex::new(Writers {
                free: (0..n as u32).collect(),
                segments: Vec::new(),
                retired: BTreeMap::new(),
                stats: VersionStats {
                    extents_total: n,
                    extent_bytes,
                    ..VersionStats::default()
                },
            }),
            io: Mutex::new(UndoIo::new(dev)),
            block,
            extent_bytes,
            snaps: Arc::new(Snapshots::new()),
            retired_first: AtomicU64::new(u64::MAX),
            reads: ReadCounts::default(),
            write_conflicts: AtomicU64::new(0),
        })
    }

    /// The undo device's statistics.
    pub fn device_stats(&self) -> crate::device::DeviceStats {
        self.io_lock().dev.stats()
    }

    fn io_lock(&self) -> MutexGuard<'_, UndoIo> {
        crate::sync::lock(&self.io)
    }

    fn writers(&self) -> MutexGuard<'_, Writers> {
        crate::sync::lock(&self.w)
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
            .lock(shard(txn))
            .get(&txn)
            .is_none_or(|t| t.replaced.is_empty() && t.touched.is_empty() && t.segment.is_none())
    }

    /// Before a snapshot transaction writes `key`: refuses (first updater wins) when another
    /// transaction wrote it and has not committed, or committed after the snapshot.
    pub fn check_write(&self, txn: TxnId, tree: TreeId, key: &[u8]) -> Result<()> {
        let Some(snap) = self.snapshot_of(txn) else {
            return Ok(());
        };
        let Some(h) = self.heads.get(tree, key) else {
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
        self.write_conflicts.fetch_add(1, Ordering::Relaxed);
        Err(Error::Conflict { what })
    }

    /// Records that `txn` is about to replace `old` (the tree's version of `key`, None if
    /// absent) with a version of its own. Appends the before-image to its segment and makes
    /// `txn` the key's head. A second change of the same key by `txn` keeps the first image.
    ///
    /// The caller holds `key`'s exclusive lock (and the latch of its leaf, or the core latch
    /// exclusive): no other writer changes its head meanwhile. Only purge may drop it, once
    /// every snapshot sees past it; then the image made here carries a version every snapshot
    /// sees, and no reader follows its link on.
    pub fn before_write(
        &self,
        txn: TxnId,
        tree: TreeId,
        key: &[u8],
        old: Option<&[u8]>,
    ) -> Result<()> {
        let prev_head = self.heads.get(tree, key);
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
        // Taken out of its shard for the append (only `txn`'s own operations reach it), so
        // that other transactions' ends in that shard do not wait for an undo block's write;
        // put back when this ends, a panic included (its extents would stay held otherwise).
        let mut taken = TakenState {
            store: self,
            txn,
            t: self.live.lock(shard(txn)).remove(&txn).unwrap_or_default(),
        };
        let t = &mut taken.t;
        let mut w = self.writers();
        let appended = self.append(&mut w, t, txn, &rec);
        // Whole blocks are left in the tail for `write_completed`, which the transaction calls
        // once it has let the leaf go, unless they pile up (an operation of many changes under
        // one latch): then they are written here, and an error refuses this change.
        let blocks = match (&appended, t.segment) {
            (Ok((_, whole)), Some(si)) if *whole >= DEFERRED_BLOCK_BYTES => {
                self.whole_blocks(&w, si)
            }
            _ => None,
        };
        if appended.is_ok() {
            w.stats.before_images += 1;
            w.stats.appended_bytes += rec.len() as u64;
        }
        drop(w);
        let appended = appended.and_then(|(ptr, _)| {
            if let Some(b) = blocks {
                self.write_blocks(b)?;
            }
            Ok(ptr)
        });
        if appended.is_ok() {
            t.replaced.push((tree, key.to_vec(), prev_head));
        }
        drop(taken);
        let ptr = appended?;
        // The image is appended before the head names it: a reader that finds the head finds
        // the image.
        self.heads.insert(
            tree,
            key,
            Head {
                writer: txn,
                ts: None,
                prev: ptr,
            },
        );
        Ok(())
    }

    /// Writes the whole undo blocks `txn`'s before-images completed and [`Self::before_write`]
    /// left in its segment's tail (readers find them there meanwhile), so that the write runs
    /// after the caller let the leaf go: called after each write operation, holding no latch.
    /// A failed write leaves them in the tail (readers still find them); the caller poisons
    /// the handle, as for a failed write in [`Self::before_write`].
    pub fn write_completed(&self, txn: TxnId) -> Result<()> {
        let Some(si) = self.live.lock(shard(txn)).get(&txn).and_then(|t| t.segment) else {
            return Ok(());
        };
        let Some(b) = self.whole_blocks(&self.writers(), si) else {
            return Ok(());
        };
        self.write_blocks(b)
    }

    /// `txn` committed: its versions get the next timestamp; what it replaced waits for purge.
    pub fn commit(&self, txn: TxnId) -> Result<()> {
        let was_snapshot = self.snaps.end(txn).is_some();
        let Some(t) = self.live.lock(shard(txn)).remove(&txn) else {
            // Its end may let the oldest snapshot move on.
            if was_snapshot {
                self.purge();
            }
            return Ok(());
        };
        let mut w = self.writers();
        if t.replaced.is_empty() {
            w.release(&t, 0);
            drop(w);
            self.purge();
            return Ok(());
        }
        // Every head gets the timestamp before snapshots may take it: a snapshot that begins
        // beside this commit sees all of it or none. Commits that change versions take their
        // timestamps, and publish them, in turn, under the writers' mutex.
        let ts = self.snaps.last_ts() + 1;
        let mut keys = Vec::with_capacity(t.replaced.len());
        for (tree, key, _) in t.replaced {
            self.heads.stamp(tree, &key, txn, ts);
            keys.push((tree, key));
        }
        self.snaps.publish(ts);
        let t = TxnVersions {
            replaced: Vec::new(),
            ..t
        };
        w.release(&t, ts);
        w.retired.insert(ts, keys);
        self.note_retired(&w);
        drop(w);
        self.purge();
        Ok(())
    }

    /// `txn` rolled back (the core latch exclusive): the heads it replaced come back.
    pub fn abort(&self, txn: TxnId) {
        let was_snapshot = self.snaps.end(txn).is_some();
        let Some(t) = self.live.lock(shard(txn)).remove(&txn) else {
            if was_snapshot {
                self.purge();
            }
            return;
        };
        let oldest = self.oldest();
        for (tree, key, prev) in t.replaced.iter().rev() {
            match prev {
                // A head every snapshot now sees past was purged while replaced: gone.
                Some(h) if h.ts.is_some_and(|ts| ts <= oldest) => {
                    self.heads.restore(*tree, key, None)
                }
                prev => self.heads.restore(*tree, key, *prev),
            }
        }
        self.writers().release(&t, 0);
        self.purge();
    }

    /// The oldest active snapshot, or the newest commit when there is none.
    fn oldest(&self) -> Ts {
        self.snaps.oldest()
    }

    /// Whether the end of snapshot `snap` (a reader's, which wrote nothing) may let
    /// [`VersionStore::purge`] free something: a commit is retired at or before the oldest
    /// snapshot. Only a snapshot older than the first retired commit can have held that back.
    pub fn purge_due_after(&self, snap: Ts) -> bool {
        let first = self.retired_first.load(Ordering::SeqCst);
        first != u64::MAX && snap < first && first <= self.oldest()
    }

    /// Keeps [`VersionStore::retired_first`] in step with `w.retired`.
    fn note_retired(&self, w: &Writers) {
        let first = w.retired.first_key_value().map_or(u64::MAX, |(&ts, _)| ts);
        self.retired_first.store(first, Ordering::SeqCst);
    }

    /// Frees what no active snapshot can read: heads of commits at or before the oldest
    /// snapshot (every commit when there is none), and extents that only such commits (and
    /// aborted transactions) wrote into; the extent a segment appends to stays. The oldest
    /// snapshot is found before the writers' mutex is taken: a snapshot that begins meanwhile
    /// is no older.
    pub fn purge(&self) {
        let ends = self.snaps.ends();
        self.purge_from(self.oldest(), ends);
    }

    /// [`VersionStore::purge`] with `oldest` found at or before now, after `ends` snapshots
    /// had ended, until nothing retired is due. A snapshot that ends while this runs may find
    /// the first retired commit still listed, at or before its own snapshot, and leave the
    /// purge to this one, whose `oldest` it may still have held back: so after a pass, if a
    /// snapshot ended meanwhile and the first commit left is due by an oldest found again, go
    /// on. (Its end took its snapshot out, and counted itself, before it read the first
    /// retired commit, which this pass had not yet stored: so the oldest found after the
    /// store sees it gone. With no end meanwhile, as when a long snapshot holds commits back,
    /// a commit's purge looks at the snapshots once.)
    fn purge_from(&self, mut oldest: Ts, mut ends: u64) {
        loop {
            let mut w = self.writers();
            self.purge_locked(&mut w, oldest);
            drop(w);
            if self.snaps.ends() == ends {
                return;
            }
            let first = self.retired_first.load(Ordering::SeqCst);
            if first == u64::MAX {
                return;
            }
            ends = self.snaps.ends();
            oldest = self.oldest();
            if first > oldest {
                return;
            }
        }
    }

    /// [`VersionStore::purge`] with the writers' mutex held, `oldest` found at or before now.
    fn purge_locked(&self, w: &mut Writers, oldest: Ts) {
        while let Some(entry) = w.retired.first_entry() {
            let ts = *entry.key();
            if ts > oldest {
                break;
            }
            for (tree, key) in entry.remove() {
                self.heads.remove_unless(tree, &key, |h| h.ts != Some(ts));
            }
        }
        self.note_retired(w);
        let dead = w.dead_extents(oldest);
        if !dead.is_empty() {
            let mut io = self.io_lock();
            for id in dead {
                // Trimmed before it is free to take: nobody writes it meanwhile.
                io.trim(id as u64 * self.extent_bytes, self.extent_bytes);
                w.free.insert(id);
                w.stats.extents_in_use -= 1;
                w.stats.extents_freed += 1;
            }
        }
    }

    /// What `txn` sees of `key`, whose version in the tree is `current`. Takes the head's
    /// shard, then (for an older version) follows the chain.
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
        let Some(h) = self.heads.get(tree, key) else {
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
        self.heads.keys_in(tree, range, reverse, limit)
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
            heads: self.heads.count(),
            write_conflicts: n(&self.write_conflicts),
            ..self.writers().stats.clone()
        }
    }
}
