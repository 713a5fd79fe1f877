//! [`LogReader`]: forward iteration over the log from an LSN to the end of the valid log.
//!
//! The valid log ends at the first position holding a zeroed header, a length that does not fit,
//! a record whose `lsn` field is not its position (stale data of an earlier lap), or a record
//! whose checksum fails (a torn or lost write). That is the normal end after a crash, not an
//! error: the reader stops there and tells where and why ([`LogReader::end_lsn`],
//! [`LogReader::stop`]). Errors are device errors, and a record whose checksum matches but whose
//! contents do not parse (a bug or a foreign format, never a torn write).

use crate::error::{Error, Result};
use crate::page::Lsn;
use crate::wal::codec::{self, Fault, HEADER_BYTES};
use crate::wal::log::Wal;
use crate::wal::record::LogRecord;

/// Bytes read from the device at a time while scanning.
const WINDOW_BYTES: u64 = 64 * 1024;

/// Why a scan stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScanStop {
    /// Reached the end of the appended log (or, before `set_end`, the end of the log space).
    Limit,
    /// The next header is all zeros: never written, or zeroed after a recovery.
    Zeroed,
    /// The length field is shorter than a header or runs past the log space.
    BadLength(u32),
    /// The `lsn` field is not the record's position: stale data or garbage.
    LsnMismatch { found: Lsn },
    /// The checksum does not match: a torn or lost write.
    BadChecksum,
}

/// Iterates records; see the module documentation. Borrows the log for its lifetime.
pub struct LogReader<'a> {
    wal: &'a mut Wal,
    pos: Lsn,
    limit: Lsn,
    win_start: Lsn,
    window: Vec<u8>,
    stop: Option<ScanStop>,
    failed: bool,
    /// Tell a torn tail from damage in the middle of the log (see [`LogReader::detecting_damage`]).
    detect_damage: bool,
}

impl<'a> LogReader<'a> {
    pub(crate) fn new(wal: &'a mut Wal, from: Lsn, limit: Lsn) -> LogReader<'a> {
        LogReader {
            wal,
            pos: from,
            limit,
            win_start: 0,
            window: Vec::new(),
            stop: None,
            failed: false,
            detect_damage: false,
        }
    }

    /// Makes the scan tell a torn tail from damage in the middle of the log: a record whose
    /// checksum fails but whose length is plausible is followed, record by record; if valid
    /// records continue past the record's end by more than the largest write the log may have
    /// made at once (as its master records it, plus a block), the bad record was in an earlier
    /// write that had been made
    /// durable, so it was damaged afterwards: the scan fails with `CorruptLog` instead of
    /// ending there. Any other end (a header that cannot be followed, zeros, an earlier lap's
    /// record) is looked past by searching for a valid record beyond that window.
    pub fn detecting_damage(mut self) -> Self {
        self.detect_damage = true;
        self
    }

    /// Bytes past the end of a torn record (or the start of a header that does not parse) that
    /// the write which tore it may have reached:
    /// the largest write between two device flushes that any run of this log made, as its
    /// master records it ([`Wal::torn_span`]; a quarter of the log space for a master that
    /// predates the record), plus a block.
    fn torn_window(&self) -> u64 {
        self.wal.torn_span() + self.wal.block_bytes()
    }

    /// After a bad checksum at `at` for a record of `total` bytes: whether valid records follow
    /// it beyond the torn-write window. The window is measured from the record's end, not its
    /// start: a flush of more than a buffer writes chunks, each made durable before the next,
    /// and a chunk may start inside a long record, so the write that tore it may reach a
    /// window past the record's end (as `Wal::set_end` zeroes).
    fn valid_records_follow(&mut self, at: Lsn, total: u64) -> Result<Option<Lsn>> {
        let window = total + self.torn_window();
        let mut q = at + total;
        while q + HEADER_BYTES as u64 <= self.limit {
            let head = self.get(q, HEADER_BYTES)?;
            let len = codec::record_len(head).unwrap_or(0) as u64;
            let lsn = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
            if lsn != q || len < HEADER_BYTES as u64 || q + len > self.limit {
                return Ok(None);
            }
            if codec::check(self.get(q, len as usize)?).is_err() {
                return Ok(None);
            }
            if q >= at + window {
                return Ok(Some(q));
            }
            q += len;
        }
        Ok(None)
    }

    /// After a header that does not parse at `at` (a length or LSN field damaged, or a
    /// record of `torn` bytes whose checksum fails and that could not be followed: the window
    /// starts at its end, see [`LogReader::valid_records_follow`]): the position of a valid
    /// record that starts beyond the torn-write window, found by trying every position in one
    /// log buffer's length after it.
    /// Such a record was written after the damaged one, in an earlier write that had been
    /// made durable. The search is cheap per position (an LSN field must equal its position
    /// before a checksum is computed), so it runs at every end of a scan that detects damage,
    /// the usual ends included (zeros, a record of an earlier lap): a zeroed stretch or a block
    /// that kept an earlier lap's bytes in the middle of the log ends the scan there too, and
    /// only a valid record beyond the window tells it from the end. None can be there at a
    /// true end: recovery zeroed the window past the last end it found, and anything further
    /// is of an earlier lap (its LSN field short of its position by the log's capacity).
    fn valid_record_beyond(&mut self, at: Lsn, torn: u64) -> Result<Option<Lsn>> {
        let from = at + torn + self.torn_window();
        let to = (from + self.wal.buffer_bytes() + self.wal.block_bytes()).min(self.limit);
        if from + HEADER_BYTES as u64 > to {
            return Ok(None);
        }
        // The region once, then a tight loop over it: this runs at the end of every recovery
        // scan, so it must cost little (a millisecond for a megabyte).
        let region = self.wal.read_range(from, (to - from) as usize)?;
        let mut candidates = Vec::new();
        for (i, w) in region.windows(HEADER_BYTES).enumerate() {
            let q = from + i as u64;
            if u64::from_le_bytes(w[8..16].try_into().expect("8 bytes")) == q {
                candidates.push(q);
            }
        }
        for q in candidates {
            let head = self.get(q, HEADER_BYTES)?;
            let len = codec::record_len(head).unwrap_or(0) as u64;
            if len >= HEADER_BYTES as u64
                && q + len <= self.limit
                && codec::check(self.get(q, len as usize)?).is_ok()
            {
                return Ok(Some(q));
            }
        }
        Ok(None)
    }

    /// Ends the scan for `why` at `at`, unless (when detecting damage) a valid record starts
    /// beyond the torn-write window: then the log is corrupt. `torn`: the length of a record
    /// there whose checksum fails (0 for any other end).
    fn end_or_damage(&mut self, at: Lsn, torn: u64, why: ScanStop) -> Result<Option<LogRecord>> {
        if self.detect_damage {
            if let Some(q) = self.valid_record_beyond(at, torn)? {
                self.failed = true;
                return Err(Error::CorruptLog {
                    lsn: at,
                    reason: format!(
                        "the scan stopped ({why:?}) but a valid record follows at LSN {q}, beyond \
                         any torn write: the log was damaged after it was written"
                    ),
                });
            }
        }
        self.end(why)
    }

    /// The LSN after the last record returned (where the next one would start).
    pub fn position(&self) -> Lsn {
        self.pos
    }

    #[cfg(test)]
    /// Where the valid log ends, once the scan stopped ([`LogReader::stop`] is Some): the
    /// position, i.e. the LSN after the last valid record.
    pub fn end_lsn(&self) -> Lsn {
        self.pos
    }

    #[cfg(test)]
    /// Why the scan stopped (None while it goes on, or after an error).
    pub fn stop(&self) -> Option<&ScanStop> {
        self.stop.as_ref()
    }

    /// Log bytes `[lsn, lsn + n)`, through a read-ahead window.
    fn get(&mut self, lsn: Lsn, n: usize) -> Result<&[u8]> {
        let end = lsn + n as u64;
        let have = lsn >= self.win_start && end <= self.win_start + self.window.len() as u64;
        if !have {
            let block = self.wal.block_bytes();
            let a = lsn - lsn % block;
            let room = self.limit.div_ceil(block) * block - a;
            let want = (end - a).max(WINDOW_BYTES.min(room));
            self.window = self.wal.read_range(a, want as usize)?;
            self.win_start = a;
        }
        let off = (lsn - self.win_start) as usize;
        Ok(&self.window[off..off + n])
    }

    fn end(&mut self, why: ScanStop) -> Result<Option<LogRecord>> {
        self.stop = Some(why);
        Ok(None)
    }

    /// The next record, or None at the end of the valid log.
    pub fn next_record(&mut self) -> Result<Option<LogRecord>> {
        if self.stop.is_some() || self.failed {
            return Ok(None);
        }
        let pos = self.pos;
        let left = self.limit - pos;
        if left < HEADER_BYTES as u64 {
            return self.end(ScanStop::Limit);
        }
        let head = self.get(pos, HEADER_BYTES)?;
        if head.iter().all(|&b| b == 0) {
            // The usual end of a log that has not wrapped yet, or a zeroed stretch in the middle.
            return self.end_or_damage(pos, 0, ScanStop::Zeroed);
        }
        let total = codec::record_len(head).unwrap_or(0);
        let mut found = [0u8; 8];
        found.copy_from_slice(&head[8..16]);
        let found = u64::from_le_bytes(found);
        if found != pos {
            // A record of an earlier lap is the usual end (or a block that lost its write and
            // kept the earlier lap's bytes); anything else may be damage too.
            return self.end_or_damage(pos, 0, ScanStop::LsnMismatch { found });
        }
        if (total as usize) < HEADER_BYTES || total as u64 > left {
            return self.end_or_damage(pos, 0, ScanStop::BadLength(total));
        }
        let bytes = self.get(pos, total as usize)?;
        match codec::decode_raw(bytes) {
            Ok(rec) => {
                self.pos += total as u64;
                Ok(Some(rec))
            }
            Err(Fault::BadChecksum) => {
                if self.detect_damage {
                    if let Some(q) = self.valid_records_follow(pos, total as u64)? {
                        self.failed = true;
                        return Err(Error::CorruptLog {
                            lsn: pos,
                            reason: format!(
                                "the record's checksum fails but valid records follow it (at LSN \
                                 {q}): the log was damaged after it was written, not torn"
                            ),
                        });
                    }
                }
                // Its length may be what was damaged: look past the window without it.
                self.end_or_damage(pos, total as u64, ScanStop::BadChecksum)
            }
            Err(f) => {
                self.failed = true;
                Err(Error::CorruptLog {
                    lsn: pos,
                    reason: f.describe(),
                })
            }
        }
    }
}

impl Iterator for LogReader<'_> {
    type Item = Result<LogRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_record() {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}
