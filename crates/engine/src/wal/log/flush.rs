//! Making the log durable: the I/O state behind its own lock, the one function every log write
//! goes through, the flush jobs group commit runs outside the log's latch, and the flushes that
//! run with the log latched (checkpoints, eviction's write-ahead rule, a full buffer).

use super::*;

/// The log device and how far the log on it is durable: the state behind the I/O lock (see the
/// module documentation).
///
/// Every write of log records goes through [`write_log`] and writes the records from the tail
/// block of `durable` up to the end of the log as it was when the bytes were taken from the
/// buffer (under the log's lock). Images taken later hold everything earlier ones hold, and
/// more. So a writer whose end is not past `durable` has nothing to add, and must not write: a
/// newer image of the tail block may already be on the device. A writer whose end is past
/// `durable` holds the newest image: every writer that took its bytes later would have moved
/// `durable` past this end.
pub(super) struct Io {
    pub(super) dev: Box<dyn BlockDevice>,
    /// Every log byte below this LSN is written and flushed. Runs ahead of the log's durable LSN
    /// from the end of a flush job until [`Wal::finish_flush`] publishes it.
    pub(super) durable: Lsn,
}

/// Locks the I/O state, also after a panic of another thread holding it (a write cut short
/// leaves `durable` where it was, which is safe).
pub(super) fn lock_io(io: &Mutex<Io>) -> MutexGuard<'_, Io> {
    io.lock().unwrap_or_else(|e| e.into_inner())
}

/// Device work done by one flush, for the statistics.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct FlushWork {
    /// Whether it made new records durable.
    pub(super) wrote: bool,
    pub(super) bytes_written: u64,
    pub(super) device_flushes: u64,
}

/// Writes and flushes the log bytes `bytes`, which start at the block-aligned `start` and run
/// to the end of the log when they were taken (a whole tail block or more, the last block
/// partial), skipping what is durable already. At most `chunk` bytes (a multiple of the block)
/// are written between two device flushes, each chunk starting at a block boundary below which
/// everything is durable: the window `Wal::set_end` zeroes after a crash.
pub(super) fn write_log(
    io: &mut Io,
    area: &Area,
    chunk: u64,
    start: Lsn,
    bytes: &[u8],
    work: &mut FlushWork,
) -> Result<(), DeviceError> {
    let block = area.block;
    debug_assert!(start.is_multiple_of(block) && chunk.is_multiple_of(block));
    let end = start + bytes.len() as u64;
    if io.durable >= end {
        // Made durable by a writer that took its bytes later (see `Io`): writing these could
        // put an older image of the tail block over a newer one.
        return Ok(());
    }
    // Everything below `start` is durable (it is below the tail block of the durable LSN the
    // bytes were taken at), and so is everything below `io.durable`.
    let from = align_down(io.durable.max(start), block);
    let mut off = (from - start) as usize;
    let chunk = chunk as usize;
    while off < bytes.len() {
        let stop = (off + chunk).min(bytes.len());
        let lsn = start + off as u64;
        let data = &bytes[off..stop];
        work.bytes_written += align_up(data.len() as u64, block);
        work.device_flushes += 1;
        if (data.len() as u64).is_multiple_of(block) {
            area.write(io.dev.as_mut(), lsn, data)?;
        } else {
            // The tail block, padded with zeros (the end of the valid log).
            let mut img = vec![0u8; align_up(data.len() as u64, block) as usize];
            img[..data.len()].copy_from_slice(data);
            area.write(io.dev.as_mut(), lsn, &img)?;
        }
        io.dev.flush()?;
        off = stop;
    }
    io.durable = end;
    work.wrote = true;
    Ok(())
}

/// A log flush taken out of the log by [`Wal::begin_flush`], to run without the log's lock: a
/// copy of the buffered bytes from the tail block of the durable LSN to the next LSN.
pub(crate) struct FlushJob {
    io: Arc<Mutex<Io>>,
    area: Area,
    chunk: u64,
    health: Health,
    /// LSN of `bytes[0]`, block-aligned.
    start: Lsn,
    bytes: Vec<u8>,
}

/// The outcome of a [`FlushJob`], for [`Wal::finish_flush`].
#[must_use]
pub(crate) struct FlushDone {
    end: Lsn,
    work: FlushWork,
    result: Result<()>,
}

impl FlushJob {
    /// The LSN below which everything is durable once the job succeeded.
    pub(crate) fn end(&self) -> Lsn {
        self.start + self.bytes.len() as u64
    }

    /// Writes and flushes the bytes (taking only the I/O lock). A device error poisons the log.
    pub(crate) fn run(self) -> FlushDone {
        let end = self.end();
        let mut work = FlushWork::default();
        let mut io = lock_io(&self.io);
        // A failed write or flush since the bytes were taken may have left anything on the
        // device: write nothing more.
        let result = self.health.check().and_then(|()| {
            write_log(
                &mut io,
                &self.area,
                self.chunk,
                self.start,
                &self.bytes,
                &mut work,
            )
            .map_err(|e| {
                self.health.poison_with(|| format!("log device: {e}"));
                Error::Device(e)
            })
        });
        drop(io);
        FlushDone { end, work, result }
    }
}

impl Wal {
    /// Makes the record starting at `lsn` (and everything before it) durable. Writes every
    /// buffered record, not only those up to `lsn`.
    pub fn flush_to(&mut self, lsn: Lsn) -> Result<()> {
        self.check_ok()?;
        match &self.tail {
            Some(t) if lsn >= t.durable => self.flush(),
            _ => Ok(()),
        }
    }

    /// Writes and flushes every buffered record, with the log locked (appends wait). A flush
    /// job in progress is waited for (the I/O lock); what it made durable is not written again.
    pub fn flush(&mut self) -> Result<()> {
        self.check_ok()?;
        let Some(tail) = self.tail.as_ref() else {
            return Ok(());
        };
        let end = tail.next();
        if tail.durable >= end {
            return Ok(());
        }
        let mut work = FlushWork::default();
        let r = write_log(
            &mut lock_io(&self.io),
            &self.area,
            self.buffer_bytes,
            tail.buf_start,
            &tail.buf,
            &mut work,
        );
        self.count(work);
        r.map_err(|e| self.poison(e))?;
        self.publish(end);
        Ok(())
    }

    /// Takes the buffered records out for a flush without the log's lock ([`FlushJob::run`],
    /// then [`Wal::finish_flush`] with its outcome); None if everything is durable. Appends may
    /// continue meanwhile: they go on into the buffer, which keeps the tail block until the
    /// outcome is published, and the next flush writes them.
    pub(crate) fn begin_flush(&mut self) -> Result<Option<FlushJob>> {
        self.check_ok()?;
        let tail = self.tail.as_ref().ok_or_else(not_ready)?;
        if tail.durable >= tail.next() {
            return Ok(None);
        }
        self.taken = tail.next();
        Ok(Some(FlushJob {
            io: self.io.clone(),
            area: self.area,
            chunk: self.buffer_bytes,
            health: self.health.clone(),
            start: tail.buf_start,
            bytes: tail.buf.clone(),
        }))
    }

    /// Publishes the outcome of a [`FlushJob`] of this log: on success everything below its end
    /// is durable (the durable LSN only moves forward: a [`Wal::flush`] in between may have
    /// moved it further).
    pub(crate) fn finish_flush(&mut self, done: FlushDone) -> Result<()> {
        self.count(done.work);
        done.result?;
        self.publish(done.end);
        Ok(())
    }

    pub(super) fn count(&mut self, work: FlushWork) {
        self.stats.bytes_written += work.bytes_written;
        self.stats.device_flushes += work.device_flushes;
        if work.wrote {
            self.stats.flushes += 1;
        }
    }

    /// Everything below `end` (at most the next LSN) is durable: moves the durable LSN there and
    /// drops the buffered blocks below the new tail block.
    pub(super) fn publish(&mut self, end: Lsn) {
        let block = self.area.block;
        let Some(tail) = self.tail.as_mut() else {
            return;
        };
        assert!(
            end <= tail.next(),
            "durable {end} past the end {}",
            tail.next()
        );
        if end <= tail.durable {
            return;
        }
        tail.durable = end;
        let keep = align_down(end, block);
        if keep > tail.buf_start {
            tail.buf.drain(..(keep - tail.buf_start) as usize);
            tail.buf_start = keep;
        }
    }

    pub(super) fn io(&self) -> MutexGuard<'_, Io> {
        lock_io(&self.io)
    }

    /// Writes block-aligned bytes at block-aligned `lsn` and flushes the device; an error poisons
    /// the log.
    pub(super) fn write_and_flush(&mut self, lsn: Lsn, data: &[u8]) -> Result<()> {
        let r = {
            let mut io = self.io();
            let io = &mut *io;
            self.area
                .write(io.dev.as_mut(), lsn, data)
                .and_then(|_| io.dev.flush())
        };
        self.stats.bytes_written += data.len() as u64;
        self.stats.device_flushes += 1;
        r.map_err(|e| self.poison(e))
    }
}

/// A full buffer left for a flush outside the log's lock may grow to this many times the
/// buffer before an append flushes it itself (the flush outside is late: the appenders wait).
const DEFERRED_FULL_BUFFERS: u64 = 4;

impl Wal {
    /// With `on`, an append that fills the buffer does not write it (with the log locked, every
    /// other appender waiting for the device): it leaves the flush to
    /// [`crate::wal::SharedWal::flush_full`], called with the log unlocked, unless the buffer has
    /// grown to [`DEFERRED_FULL_BUFFERS`] buffers by then. Off (the default), a full buffer is
    /// written by the append that fills it: a single thread (and the virtual-time driver) writes
    /// the log at the same points either way.
    pub(crate) fn set_defer_full(&mut self, on: bool) {
        self.defer_full = on;
    }

    /// Whether an append that left `pending` bytes unflushed leaves their flush to
    /// [`crate::wal::SharedWal::flush_full`] (and says so through [`Wal::full_due_flag`]).
    pub(super) fn defer_full(&mut self, pending: u64) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        if !self.defer_full || pending >= DEFERRED_FULL_BUFFERS * self.buffer_bytes {
            return false;
        }
        // Raised once per full buffer not taken by a flush yet (a flush in flight took the
        // bytes before its end), so appenders do not write the flag's line over and over.
        if self.full() && !self.full_due.load(Relaxed) {
            self.full_due.store(true, Relaxed);
        }
        true
    }

    /// Whether the buffered bytes that no flush has taken yet (neither durable nor in a flush
    /// in flight) fill the buffer.
    pub(crate) fn full(&self) -> bool {
        self.tail.as_ref().is_some_and(|t| {
            t.next().saturating_sub(t.durable.max(self.taken)) >= self.buffer_bytes
        })
    }

    /// The flag an append raises when it leaves a full buffer to be flushed outside the log's
    /// lock (read without the lock, cleared by whoever takes that flush).
    pub(crate) fn full_due_flag(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.full_due.clone()
    }
}
