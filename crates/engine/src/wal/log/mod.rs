//! [`Wal`]: a circular write-ahead log on a dedicated block device.
//!
//! Layout of the log device (`B` = the device block size):
//!
//! | offset | size | contents |
//! |---|---|---|
//! | 0 | B | master copy A (written when the master sequence number is even), see `master.rs` |
//! | B | B | master copy B (sequence number odd) |
//! | 2B | C | circular data area of C bytes (a multiple of B): log records, back to back |
//!
//! An LSN is a byte offset in the unbounded log stream; the byte with LSN `l` lives at device
//! offset `2B + (l mod C)`, so a record may wrap around the end of the data area. A new log starts
//! at LSN `B` (nonzero, so 0 can mean "none"); a log formatted over an older wafer log starts past
//! every LSN the older log could have used, so no stale record can pass for a new one.
//!
//! The log stream is written in whole blocks: the tail block is rewritten, padded with zeros, each
//! time more records are flushed; its image always carries the earlier (already durable) records
//! of that block, so a rewrite never destroys them provided a one-block write is atomic (the
//! device contract). The valid log ends at the first record that is zeroed, fails its checksum, or
//! whose `lsn` field is not its position (stale data from an earlier lap).
//!
//! Space: the records from the master's start LSN to the end are live. An append fails with
//! [`Error::LogFull`] if its last block would overwrite the block holding the start LSN; the engine
//! then checkpoints and advances the start with [`Wal::set_master`].
//!
//! At most `buffer_bytes` (1/16 of the log space, at most 1 MiB) are written between two device
//! flushes. After a crash, bytes written but not flushed can therefore only lie within
//! `buffer_bytes` past the last completed flush, which is in the block of the valid end or inside
//! the torn record there. [`Wal::set_end`] durably zeroes that window before new records go there,
//! so stale records of the same lap can never resurface behind new ones.
//!
//! Locking: the device sits behind its own lock (the I/O lock, [`Io`]), apart from the log
//! itself, so that a group-commit leader can write and flush the log without holding the log
//! (`group.rs`): [`Wal::begin_flush`] takes a copy of the buffered bytes under the log's lock,
//! [`FlushJob::run`] writes them under the I/O lock only, and [`Wal::finish_flush`] publishes
//! the new durable LSN under the log's lock again; so does the flush of a full buffer once
//! several threads use the log ([`Wal::set_defer_full`]: the append that fills the buffer leaves
//! it, and `SharedWal::flush_full` writes it after the operation, with the log unlocked). Every
//! other path (a full buffer with one thread, or grown to four buffers, [`Wal::flush`],
//! [`Wal::flush_to`], [`Wal::set_master`], reads) takes the I/O lock while holding the log's
//! lock, so it waits for a flush in progress. The order is always log lock,
//! then I/O lock; a flush job holds only the I/O lock. See [`Io`] for why an older image of the
//! tail block can never overwrite a newer one.

use std::borrow::Borrow;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::device::{BlockDevice, DeviceError};
use crate::error::{Error, Result};
use crate::health::Health;
use crate::page::Lsn;
use crate::wal::codec::{self, HEADER_BYTES};
use crate::wal::master::{newest, read_masters, Master, MasterBlock, MasterCopy, MASTER_BYTES};
use crate::wal::reader::LogReader;
use crate::wal::record::{Body, LogRecord, TxnId};

mod config;
mod flush;
mod master_write;

pub use config::{WalConfig, WalStats};

pub(crate) use flush::FlushJob;
use flush::Io;

/// Smallest data area, in blocks.
const MIN_DATA_BLOCKS: u64 = 4;
/// Largest LSN a master may carry (keeps all LSN arithmetic far from overflow).
const MAX_SANE_LSN: Lsn = 1 << 62;

/// Largest log buffer: pending bytes beyond it are written out by `append`.
const MAX_BUFFER_BYTES: u64 = 1 << 20;

fn align_down(x: u64, b: u64) -> u64 {
    x - x % b
}

fn align_up(x: u64, b: u64) -> u64 {
    x.div_ceil(b) * b
}

/// Where the circular data area is on the device.
#[derive(Clone, Copy, Debug)]
struct Area {
    block: u64,
    start: u64,
    capacity: u64,
}

impl Area {
    /// Writes block-aligned log bytes starting at block-aligned `lsn`, wrapping as needed.
    fn write(&self, dev: &mut dyn BlockDevice, lsn: Lsn, data: &[u8]) -> Result<(), DeviceError> {
        debug_assert!(
            lsn.is_multiple_of(self.block) && (data.len() as u64).is_multiple_of(self.block)
        );
        let mut done = 0usize;
        while done < data.len() {
            let off = (lsn + done as u64) % self.capacity;
            let n = (data.len() - done).min((self.capacity - off) as usize);
            dev.write_at(self.start + off, &data[done..done + n])?;
            done += n;
        }
        Ok(())
    }

    /// Reads block-aligned log bytes starting at block-aligned `lsn`, wrapping as needed.
    fn read(&self, dev: &mut dyn BlockDevice, lsn: Lsn, buf: &mut [u8]) -> Result<(), DeviceError> {
        let mut done = 0usize;
        while done < buf.len() {
            let off = (lsn + done as u64) % self.capacity;
            let n = (buf.len() - done).min((self.capacity - off) as usize);
            dev.read_at(self.start + off, &mut buf[done..done + n])?;
            done += n;
        }
        Ok(())
    }
}

/// The in-memory end of the log: the bytes from the start of the tail block to the next LSN.
#[derive(Debug)]
struct Tail {
    /// LSN of `buf[0]`, block-aligned.
    buf_start: Lsn,
    buf: Vec<u8>,
    /// Everything below this LSN is durable.
    durable: Lsn,
}

impl Tail {
    fn next(&self) -> Lsn {
        self.buf_start + self.buf.len() as u64
    }
}

/// What an update's record must leave free in the log ([`Wal::set_update_keep`]): `reserved`
/// bytes, and for the record's own rollback as much again as the record (with whole page images)
/// plus `undo_extra`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UpdateKeep {
    pub reserved: u64,
    pub undo_extra: u64,
}

/// A circular write-ahead log. See the module documentation for the layout.
pub struct Wal {
    /// The device, behind the I/O lock (shared with flush jobs in progress).
    io: Arc<Mutex<Io>>,
    cfg: WalConfig,
    area: Area,
    buffer_bytes: u64,
    /// Log bytes only [`Wal::append_system`] may use (page location records of the write path,
    /// which must be logged even while a checkpoint is freeing space).
    system_reserve: u64,
    /// A rollback or recovery is running: every append may use the system reserve (they must
    /// complete; see [`Wal::swap_unreserved`]).
    unreserved: bool,
    /// A transaction's update is being logged: what its record must leave free.
    update_keep: Option<UpdateKeep>,
    /// What the last update refused under `update_keep` needed for itself: its record and its
    /// rollback's (0: none since [`Wal::take_refused_update`]).
    refused_update: u64,
    /// [`codec::Encoded::whole_len`] of the last record appended.
    last_whole_len: u64,
    master: Master,
    sequence: u64,
    /// The database's id (in every master copy).
    id: crate::identity::DbId,
    /// The largest write between two device flushes that any run may have made (0: unknown, a
    /// log whose master predates the field); kept in every master copy and raised there
    /// before this run writes more (see [`Wal::torn_span`]).
    max_write: u64,
    /// None after `open` until `set_end`.
    tail: Option<Tail>,
    /// The poison signal, shared with the rest of the database once it is open.
    health: Health,
    stats: WalStats,
    /// A full buffer is left to be flushed outside the log's lock ([`Wal::set_defer_full`]).
    defer_full: bool,
    /// The end of the bytes the last [`Wal::begin_flush`] took (being written, or written).
    taken: Lsn,
    /// A [`MasterJob`] is out (being written with the log unlocked): no other master write
    /// may start until [`Wal::finish_master`].
    master_in_flight: bool,
    /// Set when an append leaves a full buffer to be flushed ([`SharedWal::flush_full`]).
    ///
    /// [`SharedWal::flush_full`]: crate::wal::SharedWal::flush_full
    full_due: Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal")
            .field("area", &self.area)
            .field("master", &self.master)
            .field("sequence", &self.sequence)
            .field("next_lsn", &self.next_lsn())
            .field("durable_lsn", &self.durable_lsn())
            .field("poisoned", &self.health.is_poisoned())
            .finish()
    }
}

/// The log buffer: 1/16 of the log space, at least a block, at most 1 MiB (or as asked, at
/// most a quarter of the log space).
fn buffer_bytes_for(cfg: &WalConfig, area: &Area) -> u64 {
    let want = cfg
        .buffer_bytes
        .unwrap_or((area.capacity / 16).min(MAX_BUFFER_BYTES))
        .min(area.capacity / 4);
    align_down(want, area.block).max(area.block)
}

impl Wal {
    fn new(dev: Box<dyn BlockDevice>, cfg: WalConfig, area: Area, mb: MasterBlock) -> Wal {
        let buffer_bytes = buffer_bytes_for(&cfg, &area);
        Wal {
            io: Arc::new(Mutex::new(Io { dev, durable: 0 })),
            cfg,
            area,
            buffer_bytes,
            system_reserve: 0,
            unreserved: false,
            update_keep: None,
            refused_update: 0,
            last_whole_len: 0,
            master: mb.master,
            sequence: mb.sequence,
            id: mb.id,
            max_write: mb.max_write,
            tail: None,
            health: Health::new(),
            stats: WalStats::default(),
            defer_full: false,
            taken: 0,
            master_in_flight: false,
            full_due: Default::default(),
        }
    }

    /// Formats `dev` as an empty log of a new database (a fresh random id) and returns it ready
    /// to append.
    pub fn create(mut dev: Box<dyn BlockDevice>, cfg: WalConfig) -> Result<Wal> {
        let block = dev.block_bytes() as u64;
        if block < MASTER_BYTES as u64 {
            return Err(Error::Config(format!(
                "log device block of {block} bytes is smaller than the {MASTER_BYTES}-byte master"
            )));
        }
        let data_start = 2 * block;
        let room = dev.capacity_bytes().saturating_sub(data_start);
        let want = if cfg.space_bytes == 0 {
            room
        } else {
            cfg.space_bytes.min(room)
        };
        let capacity = align_down(want, block);
        if capacity < MIN_DATA_BLOCKS * block {
            return Err(Error::Config(format!(
                "log space of {capacity} bytes is too small: it needs at least {MIN_DATA_BLOCKS} \
                 blocks of {block} bytes (and the device two more for the master)"
            )));
        }
        // Start past every LSN an older wafer log on this device could have written.
        let first = match newest(&read_masters(dev.as_mut())?) {
            Some(old) => align_up(
                old.master
                    .start_lsn
                    .saturating_add(old.data_capacity)
                    .max(block),
                block,
            ),
            None => block,
        };
        if first > MAX_SANE_LSN {
            return Err(Error::CorruptLog {
                lsn: first,
                reason: "the old log on this device has an implausible start LSN".into(),
            });
        }
        let area = Area {
            block,
            start: data_start,
            capacity,
        };
        let mb = MasterBlock {
            block_bytes: block as u32,
            data_start,
            data_capacity: capacity,
            sequence: 1,
            id: crate::identity::new_id(),
            master: Master {
                checkpoint_lsn: 0,
                start_lsn: first,
                generation: 0,
            },
            // Recorded before the first write of this size.
            max_write: buffer_bytes_for(&cfg, &area),
        };
        let mut img = vec![0u8; 2 * block as usize];
        MasterBlock { sequence: 0, ..mb }.encode(&mut img[..block as usize]);
        mb.encode(&mut img[block as usize..]);
        dev.write_at(0, &img)?;
        dev.flush()?;
        let mut wal = Wal::new(dev, cfg, area, mb);
        wal.stats.bytes_written += img.len() as u64;
        wal.stats.master_writes += 2;
        wal.stats.device_flushes += 1;
        wal.tail = Some(Tail {
            buf_start: first,
            buf: Vec::new(),
            durable: first,
        });
        wal.io().durable = first;
        Ok(wal)
    }

    /// Opens an existing log and returns it with its master. Recovery then scans with
    /// [`Wal::scan_from`] and calls [`Wal::set_end`] with the end of the valid log before
    /// appending.
    /// Refuses a log space asked for at an open that is not the one the log was made with:
    /// the space is fixed when the log is created (LSNs map onto it), and an open that asked
    /// for another would otherwise run silently with the old one. `asked` is compared as
    /// creation would have made it on this device (bounded by the device, in whole blocks),
    /// so the configuration a database was created with always opens it.
    pub fn check_space(&self, asked: u64) -> Result<()> {
        let block = self.area.block;
        let room = self.io().dev.capacity_bytes().saturating_sub(2 * block);
        let made = align_down(asked.min(room), block);
        if made != self.area.capacity {
            return Err(Error::Config(format!(
                "the log was created with {} bytes of log space and the configuration asks \
                 for {asked} (log_space_bytes is fixed when the database is created: leave it \
                 unset, or give the size it was created with)",
                self.area.capacity
            )));
        }
        Ok(())
    }

    pub fn open(mut dev: Box<dyn BlockDevice>, cfg: WalConfig) -> Result<(Wal, Master)> {
        let block = dev.block_bytes() as u64;
        let copies = read_masters(dev.as_mut())?;
        if copies.iter().all(|c| *c == MasterCopy::NoMagic) {
            return Err(Error::NotADatabase(
                "the log device has no WAFERLOG master block".into(),
            ));
        }
        for c in &copies {
            if let MasterCopy::UnknownVersion(v) = c {
                return Err(Error::NotADatabase(format!(
                    "the log has format version {v}; this build reads version {}",
                    crate::wal::master::FORMAT_VERSION
                )));
            }
        }
        let mb = newest(&copies).ok_or_else(|| Error::CorruptLog {
            lsn: 0,
            reason: "both master copies are corrupt".into(),
        })?;
        if mb.block_bytes as u64 != block {
            return Err(Error::Config(format!(
                "the log was formatted for {}-byte blocks but the device has {block}-byte blocks",
                mb.block_bytes
            )));
        }
        let corrupt = |why: &str| Error::CorruptLog {
            lsn: 0,
            reason: format!("master: {why}"),
        };
        if mb.data_start != 2 * block {
            return Err(corrupt("data area start is not two blocks"));
        }
        if !mb.data_capacity.is_multiple_of(block) || mb.data_capacity < MIN_DATA_BLOCKS * block {
            return Err(corrupt("bad data area capacity"));
        }
        let total = mb.data_start.saturating_add(mb.data_capacity);
        if total > dev.capacity_bytes() {
            return Err(Error::Config(format!(
                "the log occupies {total} bytes but the device has only {}",
                dev.capacity_bytes()
            )));
        }
        let m = mb.master;
        if m.start_lsn == 0 || m.start_lsn > MAX_SANE_LSN {
            return Err(corrupt("bad start LSN"));
        }
        if m.checkpoint_lsn != 0
            && (m.checkpoint_lsn < m.start_lsn || m.checkpoint_lsn > MAX_SANE_LSN)
        {
            return Err(corrupt("checkpoint LSN outside the live log"));
        }
        let area = Area {
            block,
            start: mb.data_start,
            capacity: mb.data_capacity,
        };
        Ok((Wal::new(dev, cfg, area, mb), m))
    }

    /// Sets the end of the log after recovery: records are appended from `end` on (normally the
    /// scan's [`LogReader::end_lsn`]). Durably zeroes the window past `end` that unflushed writes
    /// before the crash could have reached. On a log that already has an end this only accepts
    /// that same end.
    pub fn set_end(&mut self, end: Lsn) -> Result<()> {
        self.check_ok()?;
        if let Some(t) = &self.tail {
            if t.next() == end {
                return Ok(());
            }
            return Err(Error::InvalidArgument(format!(
                "set_end({end}) on a log whose end is already {}",
                t.next()
            )));
        }
        let limit = self.space_limit();
        if end < self.master.start_lsn || end > limit {
            return Err(Error::InvalidArgument(format!(
                "log end {end} outside the live log [{}, {limit}]",
                self.master.start_lsn
            )));
        }
        let block = self.area.block;
        let a = align_down(end, block);
        let prefix = self.read_range(a, (end - a) as usize)?;
        // Unflushed writes start at a block boundary `p` (everything before it was flushed) and
        // reach at most `buffer_bytes` past it. Either `p` is at or after `end`'s block, or the
        // torn record at `end` straddles `p`: then its header is durable and `p` lies before
        // the record's end, which the header tells.
        let mut torn_end = end;
        if limit - end >= HEADER_BYTES as u64 {
            let head = self.read_range(end, HEADER_BYTES)?;
            if head[8..16] == end.to_le_bytes() {
                let claimed = codec::record_len(&head).unwrap_or(0) as u64;
                torn_end = end + claimed.min(limit - end);
            }
        }
        // The window an earlier run's unflushed write may have reached: its largest write,
        // which may exceed this run's buffer (a log of an older build: this run's).
        let span = align_up(self.max_write.max(self.buffer_bytes), block);
        let zero_end = (a + span + block)
            .max(align_up(torn_end, block) + span)
            .min(limit);
        if zero_end > a {
            let mut img = vec![0u8; (zero_end - a) as usize];
            img[..prefix.len()].copy_from_slice(&prefix);
            self.write_and_flush(a, &img)?;
        }
        self.tail = Some(Tail {
            buf_start: a,
            buf: prefix,
            durable: end,
        });
        self.io().durable = end;
        // Recorded before this run writes that much: a torn write of this run is then known to
        // reach no further (the scan's damage detection and the next `set_end` rely on it). A
        // log whose master did not record it keeps the widest window (a quarter of the space):
        // an older build's run may have left unflushed bytes that far, which this `set_end`
        // did not zero.
        let want = self.buffer_bytes.max(self.torn_span());
        if self.max_write < want {
            self.max_write = want;
            self.write_master(self.master)?;
        }
        Ok(())
    }

    /// How far past the last complete flush a torn write may reach: the largest write between
    /// two device flushes any run made, as the master records it; for a log whose master does
    /// not record it, a quarter of the log space (the largest buffer any configuration gets).
    pub fn torn_span(&self) -> u64 {
        if self.max_write > 0 {
            self.max_write
        } else {
            // Whole blocks: `set_end` zeroes this far past the end.
            align_up(self.area.capacity / 4, self.area.block)
        }
    }

    /// Appends a record of transaction `txn` (0 = none) whose previous record is `prev_lsn`
    /// (0 = none) to the log buffer and returns its LSN. Not durable until [`Wal::flush_to`].
    /// Fails with [`Error::LogFull`] if the log has no room before the start LSN.
    pub fn append(&mut self, txn: TxnId, prev_lsn: Lsn, body: impl Borrow<Body>) -> Result<Lsn> {
        self.append_inner(txn, prev_lsn, codec::BodyRef::Body(body.borrow()), false)
    }

    /// [`Wal::append`] of the [`Body::Update`] of one leaf record, from borrowed parts (see
    /// [`codec::LeafUpdate`]): the same bytes, without building the body.
    pub fn append_leaf_update(
        &mut self,
        txn: TxnId,
        prev_lsn: Lsn,
        update: codec::LeafUpdate<'_>,
    ) -> Result<Lsn> {
        self.append_inner(txn, prev_lsn, codec::BodyRef::LeafUpdate(update), false)
    }

    /// [`Wal::append`] that may also use the system reserve ([`Wal::set_system_reserve`]).
    pub fn append_system(&mut self, body: &Body) -> Result<Lsn> {
        self.append_inner(0, 0, codec::BodyRef::Body(body), true)
    }

    /// Keeps `bytes` of the log for [`Wal::append_system`]: other appends and
    /// [`Wal::free_bytes`] treat the log as that much smaller.
    pub fn set_system_reserve(&mut self, bytes: u64) {
        self.system_reserve = bytes.min(self.area.capacity / 4);
    }

    /// The log bytes only system appends may use (see [`Wal::set_system_reserve`]).
    pub(crate) fn system_reserve_bytes(&self) -> u64 {
        self.system_reserve
    }

    /// While on, every append may use the system reserve (see [`Wal::set_system_reserve`]): for
    /// rollbacks and recovery, which must complete. Their records fit the space transactions
    /// reserved, except structure changes a rollback's re-inserts may cause beyond the one each
    /// transaction reserves room for: those borrow from the system reserve. Returns the setting
    /// before.
    pub(crate) fn swap_unreserved(&mut self, on: bool) -> bool {
        std::mem::replace(&mut self.unreserved, on)
    }

    /// Runs `f` with [`Wal::swap_unreserved`] on (rollbacks, recoveries, commits whose space was
    /// reserved), then off again.
    pub(crate) fn unreserved<R>(&mut self, f: impl FnOnce(&mut Wal) -> R) -> R {
        self.unreserved = true;
        let r = f(self);
        self.unreserved = false;
        r
    }

    /// The size of the last record appended with its holes put back: what the log keeps for
    /// its rollback is based on it (see [`codec::Encoded::whole_len`]).
    pub(crate) fn last_whole_len(&self) -> u64 {
        self.last_whole_len
    }

    /// While `Some(keep)`, ordinary appends are updates that must leave free after themselves
    /// what live transactions reserved for their rollback plus what their own rollback will
    /// need: a record that would eat into it fails with [`Error::LogFull`] instead. (The
    /// engine's estimate before an operation cannot know the size of the value it replaces.)
    pub(crate) fn set_update_keep(&mut self, keep: Option<UpdateKeep>) {
        self.update_keep = keep;
    }

    /// What the last update refused for the space it would keep needed for itself (record,
    /// its rollback and the undo margin), and forgets it; 0 if none was refused. The engine's
    /// estimate before an update cannot know the value it replaces (a delete of a long value
    /// logs that value for its undo): a refused update is retried once with this need.
    pub(crate) fn take_refused_update(&mut self) -> u64 {
        std::mem::take(&mut self.refused_update)
    }

    fn append_inner(
        &mut self,
        txn: TxnId,
        prev_lsn: Lsn,
        body: codec::BodyRef<'_>,
        system: bool,
    ) -> Result<Lsn> {
        self.check_ok()?;
        let reserve = if system || self.unreserved {
            0
        } else {
            self.system_reserve
        };
        let limit = self.space_limit().saturating_sub(reserve);
        let capacity = self.area.capacity;
        let Some(tail) = self.tail.as_mut() else {
            return Err(not_ready());
        };
        let lsn = tail.next();
        debug_assert!(prev_lsn < lsn, "prev_lsn {prev_lsn} not before lsn {lsn}");
        let before = tail.buf.len();
        let encoded = codec::encode_parts(
            lsn,
            txn,
            prev_lsn,
            body,
            self.cfg.image_holes,
            &mut tail.buf,
        )?;
        let len = encoded.len as u64;
        let keep = match self.update_keep {
            Some(k) if !system && !self.unreserved => k
                .reserved
                .saturating_add(encoded.whole_len as u64)
                .saturating_add(k.undo_extra),
            _ => 0,
        };
        if len > capacity || lsn + len + keep > limit {
            tail.buf.truncate(before);
            if len > capacity {
                return Err(Error::InvalidArgument(format!(
                    "log record of {len} bytes is larger than the whole log ({capacity} bytes)"
                )));
            }
            if keep > 0 {
                // Its own footprint, without the other transactions' reservations.
                self.refused_update = len
                    .saturating_add(keep)
                    .saturating_sub(self.update_keep.map_or(0, |k| k.reserved));
                return Err(Error::LogFull(format!(
                    "a {len}-byte record at LSN {lsn} would use log space kept for the rollback \
                     of live transactions ({keep} bytes with its own); abort or commit them"
                )));
            }
            return Err(Error::LogFull(format!(
                "a {len}-byte record at LSN {lsn} needs the space up to LSN {}, but the log \
                 start LSN {} is still needed; checkpoint to advance it",
                lsn + len,
                self.master.start_lsn
            )));
        }
        let pending = tail.next() - tail.durable;
        self.last_whole_len = encoded.whole_len as u64;
        self.stats.records += 1;
        self.stats.appended_bytes += len;
        if pending >= self.buffer_bytes && !self.defer_full(pending) {
            self.stats.buffer_full_flushes += 1;
            self.flush()?;
        }
        Ok(lsn)
    }

    fn poison(&mut self, e: DeviceError) -> Error {
        self.health.poison_with(|| format!("log device: {e}"));
        Error::Device(e)
    }

    /// Fails with [`Error::Poisoned`] once a write to the log device failed (or, once the log
    /// shares the database's health signal, once any component poisoned the database).
    pub fn check_ok(&self) -> Result<()> {
        self.health.check()
    }

    /// Makes the log read and write the database's shared poison signal.
    pub fn share_health(&mut self, health: Health) {
        if let Err(Error::Poisoned(why)) = self.health.check() {
            health.poison_with(|| why);
        }
        self.health = health;
    }

    /// Iterates the records from `lsn` to the end of the valid log (see [`LogReader`]).
    pub fn scan_from(&mut self, lsn: Lsn) -> Result<LogReader<'_>> {
        let limit = self.read_limit();
        if lsn < self.master.start_lsn || lsn > limit {
            return Err(Error::InvalidArgument(format!(
                "scan from LSN {lsn} outside the live log [{}, {limit}]",
                self.master.start_lsn
            )));
        }
        Ok(LogReader::new(self, lsn, limit))
    }

    /// Reads the record at `lsn` (from the buffer if it is not written yet).
    pub fn read_record(&mut self, lsn: Lsn) -> Result<LogRecord> {
        let limit = self.read_limit();
        if lsn < self.master.start_lsn || lsn >= limit {
            return Err(Error::InvalidArgument(format!(
                "no record at LSN {lsn}: outside the live log [{}, {limit})",
                self.master.start_lsn
            )));
        }
        let corrupt = |reason: String| Error::CorruptLog { lsn, reason };
        if limit - lsn < HEADER_BYTES as u64 {
            return Err(corrupt("record header runs past the end of the log".into()));
        }
        let head = self.read_range(lsn, HEADER_BYTES)?;
        let total = codec::record_len(&head).unwrap_or(0) as u64;
        if total < HEADER_BYTES as u64 || total > limit - lsn {
            return Err(corrupt(format!("bad record length {total}")));
        }
        let bytes = self.read_range(lsn, total as usize)?;
        let rec = codec::decode(&bytes, lsn)?;
        if rec.lsn != lsn {
            return Err(corrupt(format!("the record there has LSN {}", rec.lsn)));
        }
        Ok(rec)
    }

    /// Log bytes `[lsn, lsn + len)`: from the device below the buffered tail, from the buffer
    /// above, zeros past the end. `len` must not exceed the capacity.
    pub(crate) fn read_range(&mut self, lsn: Lsn, len: usize) -> Result<Vec<u8>> {
        debug_assert!(len as u64 <= self.area.capacity + self.area.block);
        let mut out = vec![0u8; len];
        let end = lsn + len as u64;
        let dev_end = self
            .tail
            .as_ref()
            .map_or(u64::MAX, |t| t.buf_start)
            .min(end);
        let block = self.area.block;
        if lsn < dev_end {
            let a = align_down(lsn, block);
            let mut tmp = vec![0u8; (align_up(dev_end, block) - a) as usize];
            self.area.read(self.io().dev.as_mut(), a, &mut tmp)?;
            out[..(dev_end - lsn) as usize]
                .copy_from_slice(&tmp[(lsn - a) as usize..(dev_end - a) as usize]);
        }
        if let Some(t) = &self.tail {
            let s = lsn.max(t.buf_start);
            let e = end.min(t.next());
            if s < e {
                out[(s - lsn) as usize..(e - lsn) as usize].copy_from_slice(
                    &t.buf[(s - t.buf_start) as usize..(e - t.buf_start) as usize],
                );
            }
        }
        Ok(out)
    }

    /// Where valid records can end: the next LSN, or before `set_end` the end of the space.
    pub(crate) fn read_limit(&self) -> Lsn {
        self.tail.as_ref().map_or(self.space_limit(), Tail::next)
    }

    /// The first LSN an append may not reach: the block holding the start LSN, one lap later.
    fn space_limit(&self) -> Lsn {
        align_down(self.master.start_lsn, self.area.block) + self.area.capacity
    }

    /// The LSN the next record will get (0 after `open` until `set_end`).
    pub fn next_lsn(&self) -> Lsn {
        self.tail.as_ref().map_or(0, Tail::next)
    }

    /// Every record starting below this LSN is durable (0 after `open` until `set_end`).
    pub fn durable_lsn(&self) -> Lsn {
        self.tail.as_ref().map_or(0, |t| t.durable)
    }

    /// Whether structure changes may log page operations ([`WalConfig::page_ops`]); set once
    /// the write path is open and known to leave no torn page.
    pub(crate) fn set_page_ops(&mut self, on: bool) {
        self.cfg.page_ops = on;
    }

    /// Bytes of the circular data area.
    pub fn capacity_bytes(&self) -> u64 {
        self.area.capacity
    }

    /// Live log bytes: from the start LSN to the next LSN.
    pub fn used_bytes(&self) -> u64 {
        self.next_lsn().saturating_sub(self.master.start_lsn)
    }

    /// Bytes that can still be appended before the log is full.
    pub fn free_bytes(&self) -> u64 {
        match &self.tail {
            Some(t) => self
                .space_limit()
                .saturating_sub(self.system_reserve)
                .saturating_sub(t.next()),
            None => 0,
        }
    }

    /// Bytes of the log buffer: pending bytes beyond it are written out by `append`, and at most
    /// this much is written between two device flushes.
    pub fn buffer_bytes(&self) -> u64 {
        self.buffer_bytes
    }

    /// The master as last persisted.
    pub fn master(&self) -> Master {
        self.master
    }

    /// The database's id, from the master.
    pub fn db_id(&self) -> crate::identity::DbId {
        self.id
    }

    #[cfg(test)]
    /// Sequence number of the current master copy.
    pub fn master_sequence(&self) -> u64 {
        self.sequence
    }

    /// The device block size.
    pub fn block_bytes(&self) -> u64 {
        self.area.block
    }
}

fn not_ready() -> Error {
    Error::InvalidArgument("the log was opened but its end is not set yet (call set_end)".into())
}
