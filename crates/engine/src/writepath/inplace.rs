//! In-place writes: every page has a fixed home on the data device. With the doublewrite buffer
//! (on by default) a batch of pages is first written to a doublewrite area and made durable, and
//! only then to the homes, so a page torn by a power cut can be repaired from its copy at startup.
//!
//! Data device layout (docs/format.md):
//!
//! | bytes | what |
//! |---|---|
//! | `0 .. page_size` | database header: magic `WAFERDB1`, version, page size, doublewrite pages, the checkpoint stamp (database id, generation, checkpoint LSN), CRC32C |
//! | `page_size .. (1 + dw_pages) * page_size` | doublewrite area (copies of sealed pages) |
//! | `(1 + dw_pages + pid) * page_size` | home of page `pid` |

use super::{LogSink, PageReader, WriteCounters, WritePath, WriteReason};
use crate::device::{BlockDevice, DeviceStats};
use crate::error::{Error, Result};
use crate::health::Health;
use crate::identity::{DataStamp, Stamp};
use crate::page::{self, get_u32, get_u64, put_u32, put_u64, PageId};
use std::collections::HashMap;

const DB_MAGIC: &[u8; 8] = b"WAFERDB1";
const DB_FORMAT_VERSION: u32 = 2;
/// Offset of the header's CRC32C (of the bytes before it; the same in version 1).
const HEADER_CRC_AT: usize = 60;
// The stamp (id u128 at 20, generation u64 at 36, checkpoint LSN u64 at 44) ends before the CRC.
const _: () = assert!(44 + 8 <= HEADER_CRC_AT);

/// Where things are on the data device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InPlaceLayout {
    pub page_size: u32,
    /// Pages in the doublewrite area (it is always reserved, even when doublewrite is off, so the
    /// setting can change between runs).
    pub dw_pages: u32,
}

impl InPlaceLayout {
    fn home(&self, pid: PageId) -> u64 {
        (1 + self.dw_pages as u64 + pid) * self.page_size as u64
    }
    fn dw_slot(&self, i: u32) -> u64 {
        (1 + i as u64) * self.page_size as u64
    }
}

/// The in-place write path.
pub struct InPlace {
    dev: Box<dyn BlockDevice>,
    layout: InPlaceLayout,
    doublewrite: bool,
    /// Home writes issued since the last device flush (their doublewrite copies must not be
    /// overwritten before they are durable).
    homes_pending: bool,
    counters: WriteCounters,
    /// Set by the first device error: the device's state is unknown from then on.
    /// The database's poison signal (shared once the database is open).
    health: Health,
    /// The checkpoint stamp in the header (zero until the first checkpoint of a new database).
    stamp: Stamp,
}

impl InPlace {
    fn with(dev: Box<dyn BlockDevice>, layout: InPlaceLayout, doublewrite: bool) -> InPlace {
        InPlace {
            dev,
            layout,
            doublewrite,
            homes_pending: false,
            counters: WriteCounters::default(),
            health: Health::new(),
            stamp: Stamp::default(),
        }
    }

    /// Whether `b` (the first block of a data device) is this write path's header.
    pub fn recognizes(b: &[u8]) -> bool {
        b.len() >= 8 && &b[..8] == DB_MAGIC
    }

    /// Formats a new data device.
    pub fn create(
        dev: Box<dyn BlockDevice>,
        page_size: u32,
        dw_pages: u32,
        doublewrite: bool,
    ) -> Result<InPlace> {
        let layout = InPlaceLayout {
            page_size,
            dw_pages,
        };
        let block = dev.block_bytes();
        if !(page_size as u64).is_multiple_of(block as u64) {
            return Err(Error::Config(format!(
                "page size {page_size} is not a multiple of the data device block {block}"
            )));
        }
        if dev.capacity_bytes() < layout.home(8) {
            return Err(Error::Config(format!(
                "data device of {} bytes is too small",
                dev.capacity_bytes()
            )));
        }
        let mut wp = InPlace::with(dev, layout, doublewrite);
        // Nothing of an earlier database on this device may survive: stale pages could carry
        // LSNs above the new log's and hide its records from redo, and stale doublewrite copies
        // could be "repaired" in. The header is written by the first checkpoint (`set_stamp`),
        // before the log master names it, so a power cut during creation leaves a blank device
        // beside a log without a checkpoint, which the next open formats again.
        wp.dev.write_at(0, &vec![0u8; page_size as usize])?;
        wp.zero_doublewrite_area()?;
        let homes = wp.layout.home(0);
        let len = wp.dev.capacity_bytes() - homes;
        wp.clear(homes, len)?;
        wp.dev.flush()?;
        Ok(wp)
    }

    /// Zeroes a byte range: a trim where the device reads trimmed blocks as zeros, else writes.
    fn clear(&mut self, offset: u64, len: u64) -> Result<()> {
        super::zero_range(self.dev.as_mut(), offset, len)
    }

    fn zero_doublewrite_area(&mut self) -> Result<()> {
        let zero = vec![0u8; self.layout.page_size as usize * self.layout.dw_pages.max(1) as usize];
        if self.layout.dw_pages > 0 {
            self.dev.write_at(self.layout.dw_slot(0), &zero)?;
            self.dev.flush()?;
        }
        Ok(())
    }

    /// Writes the database header with `stamp` and makes it durable: the device is a database
    /// (of `stamp.id`, at checkpoint `stamp.generation`) from now on. Only the first device
    /// block is written (the rest of the header page stays zero), so a power cut cannot tear it.
    fn write_header(&mut self, stamp: &Stamp) -> Result<()> {
        let page_size = self.layout.page_size;
        let block = (self.dev.block_bytes() as usize).max(HEADER_CRC_AT + 4);
        let mut hdr = vec![0u8; block.min(page_size as usize)];
        hdr[..8].copy_from_slice(DB_MAGIC);
        put_u32(&mut hdr, 8, DB_FORMAT_VERSION);
        put_u32(&mut hdr, 12, page_size);
        put_u32(&mut hdr, 16, self.layout.dw_pages);
        hdr[20..36].copy_from_slice(&stamp.id.to_le_bytes());
        put_u64(&mut hdr, 36, stamp.generation);
        put_u64(&mut hdr, 44, stamp.checkpoint_lsn);
        let c = crc32c::crc32c(&hdr[..HEADER_CRC_AT]);
        put_u32(&mut hdr, HEADER_CRC_AT, c);
        self.dev.write_at(0, &hdr)?;
        self.dev.flush()?;
        self.counters.db_write_bytes += hdr.len() as u64;
        self.counters.metadata_bytes += hdr.len() as u64;
        self.stamp = *stamp;
        Ok(())
    }

    fn fail_check(&self) -> Result<()> {
        self.health.check()
    }

    fn note<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(Error::Device(e)) = &r {
            self.health
                .poison_with(|| format!("data device failed earlier: {e}"));
        }
        r
    }

    /// Opens a formatted data device and repairs torn pages from the doublewrite area.
    pub fn open(mut dev: Box<dyn BlockDevice>, doublewrite: bool) -> Result<InPlace> {
        let block = dev.block_bytes().max(512) as usize;
        let mut first = vec![0u8; block.max(64)];
        if dev.capacity_bytes() < first.len() as u64 {
            return Err(Error::NotADatabase(
                "data device is smaller than a header".into(),
            ));
        }
        dev.read_at(0, &mut first)?;
        if &first[..8] != DB_MAGIC {
            return Err(Error::NotADatabase(
                "data device has no wafer header (wrong magic)".into(),
            ));
        }
        if crc32c::crc32c(&first[..HEADER_CRC_AT]) != get_u32(&first, HEADER_CRC_AT) {
            return Err(Error::NotADatabase(
                "data device header checksum mismatch".into(),
            ));
        }
        let version = get_u32(&first, 8);
        if version != DB_FORMAT_VERSION {
            return Err(Error::NotADatabase(format!(
                "data format version {version}, this build reads {DB_FORMAT_VERSION}"
            )));
        }
        let layout = InPlaceLayout {
            page_size: get_u32(&first, 12),
            dw_pages: get_u32(&first, 16),
        };
        if !layout.page_size.is_power_of_two() || layout.page_size < 1024 {
            return Err(Error::NotADatabase(format!(
                "bad page size {} in header",
                layout.page_size
            )));
        }
        if doublewrite && layout.dw_pages == 0 {
            // The area is part of the format: writing pages straight home while the
            // configuration says they go through a doublewrite buffer would leave torn pages
            // unrepairable without anyone having asked for that.
            return Err(Error::Config(
                "the database was formatted without a doublewrite area (doublewrite_pages = 0),                  so its pages are written straight to their homes, and the configuration asks                  for doublewrite: set doublewrite = false to open it"
                    .into(),
            ));
        }
        let mut id = [0u8; 16];
        id.copy_from_slice(&first[20..36]);
        let mut wp = InPlace::with(dev, layout, doublewrite);
        wp.stamp = Stamp {
            id: u128::from_le_bytes(id),
            generation: get_u64(&first, 36),
            checkpoint_lsn: get_u64(&first, 44),
        };
        wp.repair_from_doublewrite()?;
        if !doublewrite {
            // Copies left from a run with doublewrite on would never be refreshed now; an old
            // copy must not "repair" a page torn in a later run.
            wp.zero_doublewrite_area()?;
        }
        Ok(wp)
    }

    pub fn layout(&self) -> &InPlaceLayout {
        &self.layout
    }

    /// Startup repair from the doublewrite area. Only the last batch's copies are used: every
    /// older batch's homes were made durable before the area was written again, so a home that
    /// fails its checks and is not in the last batch was damaged after it was written, and a
    /// copy from the area's tail would bring back an older version. The last batch is the one
    /// slot 0 belongs to; each copy carries its batch's length and its slot in its checksum
    /// field ([`batch_tag`]). A last-batch copy goes home if the home fails its checks or is
    /// older (a lower page LSN). Copies an earlier build wrote (untagged) fall back to
    /// [`torn_from`].
    fn repair_from_doublewrite(&mut self) -> Result<()> {
        let ps = self.layout.page_size as usize;
        let dw_pages = self.layout.dw_pages;
        // (page LSN, copy, from the last batch) of the newest usable copy of each page.
        let mut best: HashMap<PageId, (u64, Vec<u8>, bool)> = HashMap::new();
        let mut buf = vec![0u8; ps];
        let mut last_batch: Option<u32> = None;
        for i in 0..dw_pages {
            self.dev.read_at(self.layout.dw_slot(i), &mut buf)?;
            if page::is_zeroed(&buf) {
                continue;
            }
            let tag = match untag_copy(&mut buf, i, dw_pages) {
                Some(t) => t,
                None => continue,
            };
            if page::verify(&buf, None).is_err() {
                continue;
            }
            if i == 0 {
                last_batch = tag;
            }
            let current = match (tag, last_batch) {
                (Some(n), Some(last)) => n == last && i < last,
                // Slot 0 tagged and this copy not, or the reverse: an older batch.
                (Some(_), None) | (None, Some(_)) => continue,
                (None, None) => false,
            };
            let pid = page::page_id(&buf);
            let lsn = page::page_lsn(&buf);
            if pid >= self.page_capacity() || (tag.is_some() && !current) {
                continue;
            }
            if best.get(&pid).is_none_or(|(l, _, _)| *l < lsn) {
                best.insert(pid, (lsn, buf.clone(), current));
            }
        }
        let mut pids: Vec<PageId> = best.keys().copied().collect();
        pids.sort_unstable();
        let mut repaired = 0;
        for pid in pids {
            let (lsn, copy, current) = &best[&pid];
            self.dev.read_at(self.layout.home(pid), &mut buf)?;
            let home_ok = page::verify(&buf, Some(pid)).is_ok();
            let restore = if home_ok {
                page::page_lsn(&buf) < *lsn
            } else {
                *current || torn_from(&buf, pid, copy)
            };
            if restore {
                self.dev.write_at(self.layout.home(pid), copy)?;
                repaired += 1;
            }
        }
        if repaired > 0 {
            self.dev.flush()?;
        }
        self.counters.pages_repaired += repaired;
        Ok(())
    }

    fn write_homes(&mut self, pages: &[(PageId, &[u8])]) -> Result<()> {
        let ps = self.layout.page_size as u64;
        // One command for the lot: a file merges the homes of neighbouring pages.
        let writes: Vec<(u64, &[u8])> = pages
            .iter()
            .map(|&(pid, data)| (self.layout.home(pid), data))
            .collect();
        self.dev.write_many(&writes)?;
        self.counters.db_write_bytes += ps * pages.len() as u64;
        self.homes_pending = true;
        Ok(())
    }
}

impl WritePath for InPlace {
    fn maintenance_due(&self) -> bool {
        // No background work of its own.
        false
    }

    fn writes_log(&self) -> bool {
        // Homes are fixed: writing a page logs nothing.
        false
    }

    fn share_health(&mut self, health: Health) {
        self.health.join(health);
    }

    fn read_page(&mut self, pid: PageId, buf: &mut [u8]) -> Result<()> {
        self.fail_check()?;
        let r = self.read_page_inner(pid, buf);
        self.note(r)
    }

    fn write_pages(
        &mut self,
        pages: &[(PageId, &[u8])],
        reason: WriteReason,
        log: &mut dyn LogSink,
    ) -> Result<()> {
        self.fail_check()?;
        // The write-ahead rule: the log describing a page is durable before the page is written.
        debug_assert!(
            pages
                .iter()
                .all(|(_, p)| page::page_lsn(p) == 0 || page::page_lsn(p) < log.durable_lsn()),
            "write-ahead rule: a page is newer than the durable log (durable below {})",
            log.durable_lsn()
        );
        let r = self.write_pages_inner(pages, reason);
        self.note(r)
    }

    fn sync(&mut self, _log: &mut dyn LogSink) -> Result<()> {
        self.fail_check()?;
        let r = self.dev.flush().map_err(Error::from);
        self.homes_pending = false;
        self.note(r)
    }

    fn stamp(&self) -> DataStamp {
        DataStamp {
            stamp: self.stamp,
            ..DataStamp::default()
        }
    }

    fn set_stamp(&mut self, stamp: &Stamp) -> Result<()> {
        self.fail_check()?;
        let r = self.write_header(stamp);
        self.note(r)
    }

    fn pages_untorn(&self) -> bool {
        // What `write_pages` does: through the doublewrite area only if it is on and exists.
        self.doublewrite && self.layout.dw_pages > 0
    }

    fn kind(&self) -> &'static str {
        "in-place"
    }

    fn page_capacity(&self) -> u64 {
        let ps = self.layout.page_size as u64;
        (self.dev.capacity_bytes() / ps).saturating_sub(1 + self.layout.dw_pages as u64)
    }

    fn page_reader(&self) -> Option<std::sync::Arc<dyn PageReader>> {
        Some(std::sync::Arc::new(HomeReader {
            dev: self.dev.shared_reader()?,
            layout: self.layout.clone(),
            capacity: self.page_capacity(),
            pages: Default::default(),
        }))
    }

    fn counters(&self) -> &WriteCounters {
        &self.counters
    }

    fn device_stats(&self) -> DeviceStats {
        self.dev.stats()
    }
}

/// Pages read from their homes by other threads ([`WritePath::page_reader`]).
struct HomeReader {
    dev: std::sync::Arc<dyn crate::device::SharedRead>,
    layout: InPlaceLayout,
    capacity: u64,
    pages: crate::sync::Striped,
}

impl PageReader for HomeReader {
    fn read_page(&self, pid: PageId, buf: &mut [u8]) -> Result<()> {
        check_pid(pid, self.capacity)?;
        self.dev.read_at(self.layout.home(pid), buf)?;
        self.pages.add(1);
        verify_home(pid, buf)
    }

    fn reads(&self) -> (u64, u64) {
        let n = self.pages.get();
        (n, n * self.layout.page_size as u64)
    }
}

/// Only a damaged page (a child pointer, a free-list link) names a page past the device:
/// corruption, not a full database.
fn check_pid(pid: PageId, capacity: u64) -> Result<()> {
    if pid >= capacity {
        return Err(Error::CorruptPage {
            pid,
            reason: "page id beyond the data device",
        });
    }
    Ok(())
}

/// A page read from its home: zeros (never written) or a sealed page of that id.
fn verify_home(pid: PageId, buf: &[u8]) -> Result<()> {
    if page::is_zeroed(buf) {
        return Ok(());
    }
    page::verify(buf, Some(pid))
}

impl InPlace {
    fn read_page_inner(&mut self, pid: PageId, buf: &mut [u8]) -> Result<()> {
        check_pid(pid, self.page_capacity())?;
        self.dev.read_at(self.layout.home(pid), buf)?;
        self.counters.page_reads += 1;
        self.counters.read_bytes += buf.len() as u64;
        verify_home(pid, buf)
    }

    fn write_pages_inner(&mut self, pages: &[(PageId, &[u8])], reason: WriteReason) -> Result<()> {
        let ps = self.layout.page_size as u64;
        for (pid, data) in pages {
            debug_assert_eq!(data.len() as u64, ps);
            debug_assert!(
                page::verify(data, Some(*pid)).is_ok(),
                "page {pid} not sealed"
            );
            if *pid >= self.page_capacity() {
                return Err(Error::Full(format!("page {pid} is beyond the data device")));
            }
        }
        let n = pages.len() as u64;
        self.counters.user_write_bytes += n * ps;
        match reason {
            WriteReason::Eviction => self.counters.eviction_writes += n,
            WriteReason::Checkpoint => self.counters.checkpoint_writes += n,
        }
        if !self.doublewrite || self.layout.dw_pages == 0 {
            return self.write_homes(pages);
        }
        for chunk in pages.chunks(self.layout.dw_pages as usize) {
            if self.homes_pending {
                // The previous batch's homes must be durable before their copies are overwritten.
                self.dev.flush()?;
                self.homes_pending = false;
            }
            let mut area = Vec::with_capacity(chunk.len() * ps as usize);
            for (i, (_, data)) in chunk.iter().enumerate() {
                let at = area.len();
                area.extend_from_slice(data);
                tag_copy(&mut area[at..], chunk.len() as u32, i as u32);
            }
            self.dev.write_at(self.layout.dw_slot(0), &area)?;
            self.counters.db_write_bytes += area.len() as u64;
            self.counters.doublewrite_bytes += area.len() as u64;
            self.dev.flush()?;
            self.write_homes(chunk)?;
        }
        Ok(())
    }
}

/// A nonzero 32-bit value naming slot `slot` of a batch of `n` copies; a copy in the
/// doublewrite area stores its page's checksum XOR this, so the repair can tell the last
/// batch's copies from older ones left in the area's tail without writing more bytes.
fn batch_tag(n: u32, slot: u32) -> u32 {
    let x = ((n as u64) << 32 | slot as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((x >> 32) as u32) | 1
}

/// Marks a sealed page image as copy `slot` of a batch of `n`.
fn tag_copy(copy: &mut [u8], n: u32, slot: u32) {
    let c = page::get_u32(copy, 0) ^ batch_tag(n, slot);
    page::put_u32(copy, 0, c);
}

/// Reads the batch length of the copy in slot `slot` and puts its page's own checksum back:
/// Some(Some(n)) for a tagged copy, Some(None) for an untagged one (an earlier build's, or
/// a valid page that is not a copy), None for a copy whose checksum matches neither (torn,
/// damaged). `dw_pages` bounds the batch length.
fn untag_copy(copy: &mut [u8], slot: u32, dw_pages: u32) -> Option<Option<u32>> {
    let x = page::get_u32(copy, 0) ^ page::checksum(copy);
    if x == 0 {
        return Some(None);
    }
    let n = (slot + 1..=dw_pages).find(|&n| batch_tag(n, slot) == x)?;
    let own = page::checksum(copy);
    page::put_u32(copy, 0, own);
    Some(Some(n))
}

/// Whether a home that fails its checks is what a torn write of `copy` (page `pid`) leaves.
/// A tear leaves each block either new (the copy's) or old (the home's before the write):
/// * a header block naming the page with an LSN at most the copy's (the copy's own header, or
///   the version the copy replaced). A home damaged after a newer version was written keeps
///   that version's higher LSN and is refused, so an older batch's copy left in the area's
///   tail is never restored over it;
/// * a blank header (the page's first write): then every block must be blank or the copy's,
///   so damage that blanked the header of a page written before is refused too.
///
/// Anything else is damage, left to fail as `CorruptPage` when the page is read.
fn torn_from(home: &[u8], pid: PageId, copy: &[u8]) -> bool {
    const SECTOR: usize = 512;
    if home[..page::PAGE_HEADER_BYTES].iter().all(|&b| b == 0) {
        return home
            .chunks(SECTOR)
            .zip(copy.chunks(SECTOR))
            .all(|(h, c)| h == c || h.iter().all(|&b| b == 0));
    }
    page::page_id(home) == pid && page::page_lsn(home) <= page::page_lsn(copy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::MemDevice;
    use crate::page::PageType;
    use crate::writepath::MemLog;

    /// A log durable far beyond the test pages' LSNs (the write-ahead rule holds).
    fn durable_log() -> MemLog {
        MemLog {
            next: 1 << 40,
            durable: 1 << 40,
            records: Vec::new(),
        }
    }

    fn page(pid: PageId, lsn: u64, fill: u8) -> Vec<u8> {
        let mut p = vec![0u8; 4096];
        page::init(&mut p, pid, PageType::Leaf);
        p[48..].fill(fill);
        page::set_page_lsn(&mut p, lsn);
        page::seal(&mut p);
        p
    }

    #[test]
    fn doublewrite_doubles_bytes_and_reads_back() {
        let dev = Box::new(MemDevice::new(1 << 20, 4096));
        let mut wp = InPlace::create(dev, 4096, 8, true).unwrap();
        wp.set_stamp(&Stamp::default()).unwrap();
        let a = page(3, 10, 1);
        let b = page(4, 11, 2);
        wp.write_pages(
            &[(3, &a), (4, &b)],
            WriteReason::Checkpoint,
            &mut durable_log(),
        )
        .unwrap();
        let c = wp.counters();
        assert_eq!(c.metadata_bytes, 4096, "the header: one block");
        assert_eq!(c.db_write_bytes - c.metadata_bytes, 2 * c.user_write_bytes);
        let mut buf = vec![0u8; 4096];
        wp.read_page(3, &mut buf).unwrap();
        assert_eq!(buf, a);
        wp.read_page(5, &mut buf).unwrap();
        assert!(page::is_zeroed(&buf));
    }

    #[test]
    fn torn_home_is_repaired_from_the_doublewrite_copy() {
        let dev = Box::new(MemDevice::new(1 << 20, 4096));
        let mut wp = InPlace::create(dev, 4096, 8, true).unwrap();
        wp.set_stamp(&Stamp::default()).unwrap();
        let a = page(3, 10, 1);
        wp.write_pages(&[(3, &a)], WriteReason::Eviction, &mut durable_log())
            .unwrap();
        wp.sync(&mut durable_log()).unwrap();
        // Tear the home: half old zeros.
        let home = wp.layout().home(3) as usize;
        let mut dev = wp.dev;
        let mut torn = a.clone();
        torn[2048..].fill(0);
        dev.write_at(home as u64, &torn).unwrap();
        let mut wp = InPlace::open(dev, true).unwrap();
        assert_eq!(wp.counters().pages_repaired, 1);
        let mut buf = vec![0u8; 4096];
        wp.read_page(3, &mut buf).unwrap();
        assert_eq!(buf, a);
    }

    /// The next version of `prev` at `lsn`, sealed for a write as the cache does it (its write
    /// history shifted).
    fn next_version(prev: &[u8], lsn: u64, fill: u8) -> Vec<u8> {
        let mut p = prev.to_vec();
        p[48..].fill(fill);
        page::set_page_lsn(&mut p, lsn);
        page::note_write(&mut p);
        page::seal(&mut p);
        p
    }

    /// A smaller batch leaves older batches' copies in the tail of the area. A home damaged after
    /// it was written must not get such an older copy back (that would silently lose what was
    /// written since): it fails as corrupt. A home torn by a write of its newest copy, whose
    /// header is still the previous version's, is repaired.
    #[test]
    fn a_damaged_home_gets_no_older_copy_back_and_a_torn_one_is_repaired() {
        let dev = Box::new(MemDevice::new(1 << 20, 4096));
        let mut wp = InPlace::create(dev, 4096, 8, true).unwrap();
        wp.set_stamp(&Stamp::default()).unwrap();
        let log = &mut durable_log();
        let fresh = |pid| {
            let mut p = vec![0u8; 4096];
            page::init(&mut p, pid, PageType::Leaf);
            p
        };
        let v1 = next_version(&fresh(3), 10, 1);
        let others: Vec<Vec<u8>> = (4..7).map(|pid| next_version(&fresh(pid), 5, 9)).collect();
        // Batch 1: page 3's first version lands in slot 3.
        let batch: Vec<(PageId, &[u8])> =
            vec![(4, &others[0]), (5, &others[1]), (6, &others[2]), (3, &v1)];
        wp.write_pages(&batch, WriteReason::Checkpoint, log)
            .unwrap();
        // Batch 2: its second version in slot 0; batch 3 overwrites slot 0 with page 7.
        let v2 = next_version(&v1, 20, 2);
        wp.write_pages(&[(3, &v2)], WriteReason::Checkpoint, log)
            .unwrap();
        let p7 = next_version(&fresh(7), 21, 7);
        wp.write_pages(&[(7, &p7)], WriteReason::Checkpoint, log)
            .unwrap();
        wp.sync(log).unwrap();
        let home = wp.layout().home(3);
        let mut dev = wp.dev;
        // Damage: the home's first half overwritten (header included).
        let mut bad = v2.clone();
        bad[..2048]
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (i * 7 + 3) as u8);
        dev.write_at(home, &bad).unwrap();
        let mut wp = InPlace::open(dev, true).unwrap();
        assert_eq!(
            wp.counters().pages_repaired,
            0,
            "the older copy was not restored"
        );
        let mut buf = vec![0u8; 4096];
        assert!(matches!(
            wp.read_page(3, &mut buf),
            Err(Error::CorruptPage { pid: 3, .. })
        ));
        // Damage that blanks the header over the newer version's body, or the whole home: the
        // older copy (the page's first write, in batch 1's tail) is not restored either.
        for blank in [512, 4096] {
            let mut dev = wp.dev;
            let mut blanked = v2.clone();
            blanked[..blank].fill(0);
            dev.write_at(home, &blanked).unwrap();
            wp = InPlace::open(dev, true).unwrap();
            assert_eq!(wp.counters().pages_repaired, 0, "blank {blank}");
            assert!(wp.read_page(3, &mut buf).is_err() || page::is_zeroed(&buf));
        }
        // A third version whose home write tore: the header (first 512 bytes) is still the
        // second version's, the rest is new.
        let v3 = next_version(&v2, 30, 3);
        wp.write_pages(&[(3, &v3)], WriteReason::Checkpoint, log)
            .unwrap();
        wp.sync(log).unwrap();
        let mut dev = wp.dev;
        let mut torn = v3.clone();
        torn[..512].copy_from_slice(&v2[..512]);
        dev.write_at(home, &torn).unwrap();
        let mut wp = InPlace::open(dev, true).unwrap();
        assert_eq!(wp.counters().pages_repaired, 1);
        wp.read_page(3, &mut buf).unwrap();
        assert_eq!(buf, v3);
    }

    #[test]
    fn without_doublewrite_a_torn_page_is_detected() {
        let dev = Box::new(MemDevice::new(1 << 20, 4096));
        let mut wp = InPlace::create(dev, 4096, 8, false).unwrap();
        wp.set_stamp(&Stamp::default()).unwrap();
        let a = page(3, 10, 1);
        wp.write_pages(&[(3, &a)], WriteReason::Eviction, &mut durable_log())
            .unwrap();
        let c = wp.counters();
        assert_eq!(c.db_write_bytes - c.metadata_bytes, c.user_write_bytes);
        let home = wp.layout().home(3);
        let mut dev = wp.dev;
        let mut torn = a.clone();
        torn[2048..].fill(0);
        dev.write_at(home, &torn).unwrap();
        let mut wp = InPlace::open(dev, false).unwrap();
        let mut buf = vec![0u8; 4096];
        assert!(matches!(
            wp.read_page(3, &mut buf),
            Err(Error::CorruptPage { pid: 3, .. })
        ));
    }

    #[test]
    fn foreign_device_is_not_a_database() {
        let dev = Box::new(MemDevice::new(1 << 20, 4096));
        assert!(matches!(
            InPlace::open(dev, true),
            Err(Error::NotADatabase(_))
        ));
    }
}
