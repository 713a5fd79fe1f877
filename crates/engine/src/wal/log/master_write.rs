//! Writing the master: with the log locked ([`Wal::set_master`], which flushes the log first),
//! or as a [`MasterJob`] taken out of the log and written with only the I/O lock held, so that
//! appends and group flushes go on meanwhile (a checkpoint's end, see `checkpoint::Tail`).
//!
//! A master names a checkpoint record and the log's new start. The record must be durable
//! before the master that names it is written; the space before the new start becomes reusable
//! only once the master is durable, so the log keeps its old master (and start) in memory
//! until the write is done: an append meanwhile sees the old start, and cannot overwrite the
//! bytes a crash during the write would still need.

use super::flush::lock_io;
use super::*;

/// A master write taken out of the log by [`Wal::begin_master`], to run without the log's lock
/// ([`MasterJob::run`], then [`Wal::finish_master`] with its outcome). At most one is out.
#[must_use = "a master job must be run and finished, else the log refuses every master write"]
pub(crate) struct MasterJob {
    io: Arc<Mutex<Io>>,
    health: Health,
    /// Where the copy goes (the master slot of its sequence number) and its image.
    offset: u64,
    img: Vec<u8>,
    sequence: u64,
    master: Master,
}

/// The outcome of a [`MasterJob`], for [`Wal::finish_master`].
#[must_use]
pub(crate) struct MasterDone {
    sequence: u64,
    master: Master,
    bytes: u64,
    result: Result<()>,
}

impl MasterJob {
    /// Writes and flushes the master copy, taking only the I/O lock (group flushes of the log
    /// wait for it there; appends do not). A device error poisons the log.
    pub(crate) fn run(self) -> MasterDone {
        let mut io = lock_io(&self.io);
        // A failed write since the job was taken may have left the log in any state: write
        // nothing more.
        let result = self.health.check().and_then(|()| {
            io.dev
                .write_at(self.offset, &self.img)
                .and_then(|_| io.dev.flush())
                .map_err(|e| {
                    self.health.poison_with(|| format!("log device: {e}"));
                    Error::Device(e)
                })
        });
        drop(io);
        MasterDone {
            sequence: self.sequence,
            master: self.master,
            bytes: self.img.len() as u64,
            result,
        }
    }
}

impl Wal {
    /// Persists a new master (after flushing the log). `start_lsn` may only move forward, up to
    /// the checkpoint LSN when there is one; the space before it becomes reusable.
    pub fn set_master(&mut self, m: Master) -> Result<()> {
        self.check_master(m)?;
        self.flush()?;
        self.write_master(m)
    }

    /// Takes a write of master `m` out of the log, to run with the log unlocked
    /// ([`MasterJob::run`]; then [`Wal::finish_master`]). Unlike [`Wal::set_master`] it does
    /// not flush the log: the checkpoint record `m` names must be durable already.
    pub(crate) fn begin_master(&mut self, m: Master) -> Result<MasterJob> {
        self.check_master(m)?;
        if m.checkpoint_lsn != 0 && self.durable_lsn() <= m.checkpoint_lsn {
            return Err(Error::InvalidArgument(format!(
                "internal: a master names checkpoint record {} before it is durable (durable \
                 below {})",
                m.checkpoint_lsn,
                self.durable_lsn()
            )));
        }
        self.master_in_flight = true;
        let sequence = self.sequence + 1;
        Ok(MasterJob {
            io: self.io.clone(),
            health: self.health.clone(),
            offset: (sequence % 2) * self.area.block,
            img: self.master_image(m, sequence),
            sequence,
            master: m,
        })
    }

    /// Publishes the outcome of this log's [`MasterJob`]: on success the new master (and the
    /// space before its start) takes effect. A failure has poisoned the log and is returned.
    pub(crate) fn finish_master(&mut self, done: MasterDone) -> Result<()> {
        debug_assert!(self.master_in_flight, "a master job finished twice");
        self.master_in_flight = false;
        self.count_master_write(done.bytes);
        done.result?;
        debug_assert_eq!(done.sequence, self.sequence + 1, "master writes overlapped");
        self.sequence = done.sequence;
        self.master = done.master;
        Ok(())
    }

    /// Checks a new master against the log: no master write out, the start moving forward
    /// and not past the end, a checkpoint record inside the kept log.
    fn check_master(&self, m: Master) -> Result<()> {
        self.check_ok()?;
        if self.master_in_flight {
            return Err(Error::InvalidArgument(
                "internal: a master write while another is being written".into(),
            ));
        }
        let next = self.tail.as_ref().ok_or_else(not_ready)?.next();
        if m.start_lsn < self.master.start_lsn || m.start_lsn > next {
            return Err(Error::InvalidArgument(format!(
                "new log start LSN {} outside [{}, {next}]",
                m.start_lsn, self.master.start_lsn
            )));
        }
        if m.checkpoint_lsn != 0 && (m.checkpoint_lsn < m.start_lsn || m.checkpoint_lsn >= next) {
            return Err(Error::InvalidArgument(format!(
                "checkpoint LSN {} outside [{}, {next})",
                m.checkpoint_lsn, m.start_lsn
            )));
        }
        Ok(())
    }

    /// The image of master copy `sequence` holding `m` (with the log's id, area and largest
    /// write).
    fn master_image(&self, m: Master, sequence: u64) -> Vec<u8> {
        let mut img = vec![0u8; self.area.block as usize];
        MasterBlock {
            block_bytes: self.area.block as u32,
            data_start: self.area.start,
            data_capacity: self.area.capacity,
            sequence,
            id: self.id,
            master: m,
            max_write: self.max_write,
        }
        .encode(&mut img);
        img
    }

    fn count_master_write(&mut self, bytes: u64) {
        self.stats.bytes_written += bytes;
        self.stats.master_writes += 1;
        self.stats.device_flushes += 1;
    }

    /// Writes `m` as the next master copy and flushes it, with the log locked.
    pub(super) fn write_master(&mut self, m: Master) -> Result<()> {
        debug_assert!(!self.master_in_flight, "a master write beside a master job");
        let sequence = self.sequence + 1;
        let img = self.master_image(m, sequence);
        let r = {
            let mut io = self.io();
            io.dev
                .write_at((sequence % 2) * self.area.block, &img)
                .and_then(|_| io.dev.flush())
        };
        self.count_master_write(img.len() as u64);
        r.map_err(|e| self.poison(e))?;
        self.sequence = sequence;
        self.master = m;
        Ok(())
    }
}
