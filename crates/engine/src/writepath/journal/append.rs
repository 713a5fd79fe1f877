//! Appending to the journal: where a write batch goes in the ring, the limits that start the
//! journal's own checkpoint, and the flow control of appends past the foreground limit.

use super::entry::{self, Format};
use super::{Image, Journal};
use crate::error::{Error, Result};
use crate::page::PageId;
use crate::wal::record::MapChange;
use crate::writepath::{LogSink, WriteReason};

impl Journal {
    pub(super) fn write_batch(
        &mut self,
        pages: &[(PageId, &[u8])],
        reason: WriteReason,
        log: &mut dyn LogSink,
    ) -> Result<()> {
        // `moved` may still be set here only after a checkpoint that failed between its move and
        // its record: the images it moved are in the journal too, so appending is safe, and the
        // next checkpoint moves everything again before it empties the journal.
        let ps = self.page_size as usize;
        let batch = entry::build(
            self.cfg.method.format(),
            pages,
            ps,
            self.unit as usize,
            self.sector as usize,
        );
        let len = batch.bytes.len() as u64;
        let used = self.ring.used();
        // An engine checkpoint's batches go on to the end of the ring: its end moves every image
        // home and empties the journal anyway.
        if used > 0
            && used + len > self.foreground_limit()
            && !(self.sliced && reason == WriteReason::Checkpoint)
        {
            self.make_room(len, log)?;
        }
        let at = match self.place(len) {
            Some(at) => at,
            // No room before the head of a journal moved home in slices.
            None if self.ring.used() > 0 => {
                self.make_room(len, log)?;
                self.place(len).ok_or_else(|| self.full(len))?
            }
            None => return Err(self.full(len)),
        };
        let end = at + len;
        let base = self.journal_start + at;
        self.dev.write_at(base, &batch.bytes)?;
        // The images enter the map once their bytes are on the device.
        let mut places = self.dir.write();
        for p in &batch.placed {
            let img = Image {
                offset: base + p.at as u64,
                len: p.len as u32,
                span: p.span as u32,
            };
            if places.jmt.insert(p.pid, img).is_some() {
                self.stats.superseded += 1;
            }
            self.unlogged.push(MapChange {
                pid: p.pid,
                offset: img.offset,
                len: img.len,
            });
            self.stats.images_merged += p.merged as u64;
            self.counters.stored_user_bytes += p.len as u64;
        }
        drop(places);
        self.ring.appended(at, self.next_batch_at(end));
        self.stats.images += pages.len() as u64;
        self.stats.peak_journal_bytes = self.stats.peak_journal_bytes.max(self.ring.used());
        self.counters.user_write_bytes += (ps * pages.len()) as u64;
        self.counters.db_write_bytes += len;
        self.counters.padding_bytes += batch.padding_bytes;
        self.counters.metadata_bytes += batch.descriptor_bytes;
        match reason {
            WriteReason::Eviction => self.counters.eviction_writes += pages.len() as u64,
            WriteReason::Checkpoint => self.counters.checkpoint_writes += pages.len() as u64,
        }
        Ok(())
    }

    /// Room for a batch of `len` bytes past the foreground limit, or where the ring has no
    /// gap for it: with a lone thread, the journal's own checkpoint, whole, by the appender; with
    /// several (its checkpoint goes in slices), the appender moves slices home itself until the
    /// batch fits under the limit: the flow control of appends, which then go no faster than
    /// the journal empties, a slice at a time, where a whole checkpoint stopped every thread
    /// that needed the core latch exclusive for all of it.
    fn make_room(&mut self, len: u64, log: &mut dyn LogSink) -> Result<()> {
        if !self.sliced {
            return self.journal_checkpoint(log);
        }
        // One slice for a batch past the limit (each batch pays for its room: a slice moves
        // more images than a batch appends), more only while the ring has no gap for it.
        let mut slices = 0;
        loop {
            let used = self.ring.used();
            let over = used + len > self.foreground_limit() && slices == 0;
            if used == 0 || (!over && self.place(len).is_some()) {
                return Ok(());
            }
            slices += 1;
            self.draining = true;
            self.journal_slice(log)?;
            self.stats.foreground_slices += 1;
            if self.ring.used() >= used {
                // Nothing freed (cannot happen with images left): the whole of it.
                return self.journal_checkpoint(log);
            }
        }
    }

    /// Where a batch of `len` bytes goes in the ring, if it fits.
    fn place(&self, len: u64) -> Option<u64> {
        self.ring.place(len, |end| self.next_batch_at(end))
    }

    fn full(&self, len: u64) -> Error {
        Error::Full(format!(
            "the journal area ({} bytes) has no room for {len} more bytes before a \
             checkpoint empties it; a larger journal.journal_bytes or a lower \
             journal.checkpoint_fill leaves room",
            self.journal_bytes
        ))
    }

    /// Journal bytes past which the background work checkpoints the journal.
    pub(super) fn background_limit(&self) -> u64 {
        (self.cfg.checkpoint_fill * self.journal_bytes as f64) as u64
    }

    /// Journal bytes a write may not pass before it checkpoints the journal itself: halfway
    /// from the background's limit to full, so that a background checkpoint that starts late
    /// still comes first.
    pub(super) fn foreground_limit(&self) -> u64 {
        let soft = self.background_limit();
        soft + (self.journal_bytes - soft) / 2
    }

    /// Where the batch after one ending at `end` (relative to the journal) starts: sector-aligned
    /// batches start on a mapping-unit boundary, so their FULL images stay aligned; conventional
    /// entries follow each other.
    pub(super) fn next_batch_at(&self, end: u64) -> u64 {
        match self.cfg.method.format() {
            Format::SectorAligned => end
                .next_multiple_of(self.unit as u64)
                .min(self.journal_bytes),
            Format::Conventional => end,
        }
    }
}
