//! Reading pages of the journal write path: a journal image (raw, or a blob sized to whole
//! sectors) or a home (a raw page, a Check-In blob remapped home, or zeros), through the write
//! path's own device or, from any thread, through the device's shared reader
//! ([`JournalReader`]: the place is looked up in the shared journal map, read, and confirmed
//! there after, none of it under the write path's mutex; `places.rs`).

use super::places::Directory;
use crate::device::SharedRead;
use crate::error::Result;
use crate::page::{self, get_u32, PageId};
use crate::writepath::pack;
use crate::writepath::{PageReader, Place, ReadCount};
use std::sync::Arc;

/// Reads the journal image of page `pid` at `offset` (`len` stored bytes; the page size:
/// raw) through `read` into `buf` and verifies it. Returns that and the bytes read.
pub(super) fn read_image(
    read: impl FnOnce(u64, &mut [u8]) -> Result<()>,
    sector: u32,
    pid: PageId,
    offset: u64,
    len: u32,
    buf: &mut [u8],
) -> (Result<()>, u64) {
    if len as usize == buf.len() {
        if let Err(e) = read(offset, buf) {
            return (Err(e), 0);
        }
        return (page::verify(buf, Some(pid)), buf.len() as u64);
    }
    let mut stored = vec![0u8; len.next_multiple_of(sector) as usize];
    if let Err(e) = read(offset, &mut stored) {
        return (Err(e), 0);
    }
    let r = pack::unpack_into(&stored, 0, len as usize, pid, buf);
    (r, stored.len() as u64)
}

/// Reads the home of page `pid` (a page's worth of bytes) through `read` into `buf`: a raw
/// page, a blob (a Check-In image remapped home), or zeros (never written). Returns that and
/// the bytes read.
pub(super) fn read_home(
    read: impl FnOnce(&mut [u8]) -> Result<()>,
    pid: PageId,
    buf: &mut [u8],
) -> (Result<()>, u64) {
    let mut slot = vec![0u8; buf.len()];
    if let Err(e) = read(&mut slot) {
        return (Err(e), 0);
    }
    let n = slot.len() as u64;
    if page::is_zeroed(&slot) {
        buf.fill(0);
        return (Ok(()), n);
    }
    if slot[0] & 0xF0 == pack::BLOB_MAGIC {
        let stored = get_u32(&slot, 13) as usize + pack::BLOB_HEADER_BYTES;
        if stored < slot.len() && pack::unpack_into(&slot, 0, stored, pid, buf).is_ok() {
            return (Ok(()), n);
        }
    }
    buf.copy_from_slice(&slot);
    (page::verify(buf, Some(pid)), n)
}

/// Reads journaled pages from any thread at the places the write path gave.
pub(super) struct JournalReader {
    dev: Arc<dyn SharedRead>,
    sector: u32,
    count: ReadCount,
    dir: Directory,
}

impl JournalReader {
    pub(super) fn new(dev: Arc<dyn SharedRead>, sector: u32, dir: Directory) -> JournalReader {
        let count = ReadCount::default();
        JournalReader {
            dev,
            sector,
            count,
            dir,
        }
    }
}

impl PageReader for JournalReader {
    fn moves(&self) -> bool {
        true
    }

    fn read_placed(&self, pid: PageId, place: &Place, buf: &mut [u8]) -> Result<()> {
        let dev = &self.dev;
        let (r, read) = if place.home {
            read_home(|io| Ok(dev.read_at(place.offset, io)?), pid, buf)
        } else {
            let read = |at, io: &mut [u8]| Ok(dev.read_at(at, io)?);
            read_image(read, self.sector, pid, place.offset, place.len, buf)
        };
        self.count.note(read);
        r
    }

    fn locates(&self) -> bool {
        true
    }

    fn locate(&self, pid: PageId) -> Result<Option<Place>> {
        self.dir.locate(pid).map(Some)
    }

    fn confirm(&self, pid: PageId, place: &Place) -> bool {
        self.dir.confirm(pid, place)
    }

    fn reads(&self) -> (u64, u64) {
        self.count.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{BlockDevice, Handle, MemDevice};
    use crate::writepath::journal::{HomeMethod, Journal, JournalConfig};
    use crate::writepath::{Located, LogSink, MemLog, WritePath, WriteReason};

    fn leaf(pid: PageId, lsn: u64, fill: u8) -> Vec<u8> {
        let mut p = vec![0u8; 4096];
        page::init(&mut p, pid, page::PageType::Leaf);
        page::set_page_lsn(&mut p, lsn);
        p[page::PAGE_HEADER_BYTES..].fill(fill);
        page::note_write(&mut p);
        page::seal(&mut p);
        p
    }

    /// A journaled page is located at its image, which reads back and is confirmed until a
    /// checkpoint empties the journal; then it is located at its home. Both for raw images
    /// (baseline) and compressed ones (Check-In).
    #[test]
    fn a_page_is_located_in_the_journal_then_at_home() {
        for method in [HomeMethod::Host, HomeMethod::CheckIn] {
            let dev = Handle::new(MemDevice::new(8 << 20, 4096));
            let cfg = JournalConfig::new(method);
            let mut j = Journal::create(Box::new(dev.clone()), 4096, cfg).unwrap();
            j.set_stamp(&crate::identity::Stamp::default()).unwrap();
            let mut log = MemLog {
                next: 1 << 40,
                durable: 1 << 40,
                records: Vec::new(),
            };
            let a = leaf(3, 10, 7);
            j.write_pages(&[(3, &a)], WriteReason::Eviction, &mut log)
                .unwrap();
            j.sync(&mut log).unwrap();
            let mut buf = vec![0u8; 4096];
            let Located::At(place) = j.locate(3, &mut buf).unwrap() else {
                panic!("a journaled page has a place");
            };
            assert!(!place.home, "{method:?}: the journal image");
            // The page reader finds the same place, and confirms as the write path does,
            // without the write path (`places.rs`).
            let reader = j
                .page_reader()
                .expect("the memory device reads from any thread");
            assert!(reader.locates());
            assert_eq!(reader.locate(3).unwrap(), Some(place));
            let dev2 = dev.clone();
            let read = |at: u64, io: &mut [u8]| Ok(dev2.lock().read_at(at, io)?);
            let (r, _) = read_image(read, 4096, 3, place.offset, place.len, &mut buf);
            r.unwrap();
            assert_eq!(buf, a, "{method:?}");
            assert!(j.confirm(3, &place));
            assert!(!j.confirm(4, &place), "another page");
            // A checkpoint moves the image home and, once complete, empties the journal.
            let tag = log.next_lsn();
            j.checkpoint(tag, 1, tag).unwrap();
            assert!(
                j.confirm(3, &place),
                "moved home, the journal not emptied yet"
            );
            j.checkpoint_done();
            assert!(!j.confirm(3, &place), "{method:?}: the journal was emptied");
            assert!(
                !reader.confirm(3, &place),
                "{method:?}: the reader sees it emptied"
            );
            let Located::At(home) = j.locate(3, &mut buf).unwrap() else {
                panic!("a page at home has a place");
            };
            assert!(home.home);
            let (r, _) = read_home(|io| Ok(dev.lock().read_at(home.offset, io)?), 3, &mut buf);
            r.unwrap();
            assert_eq!(buf, a, "{method:?}: home");
            assert!(j.confirm(3, &home));
            // Written again into the emptied journal: the same bytes at the same offset, which
            // only the count of emptyings tells from the first image.
            j.write_pages(&[(3, &a)], WriteReason::Eviction, &mut log)
                .unwrap();
            j.sync(&mut log).unwrap();
            let Located::At(again) = j.locate(3, &mut buf).unwrap() else {
                panic!("a journaled page has a place");
            };
            assert_eq!((again.offset, again.len), (place.offset, place.len));
            assert!(
                !j.confirm(3, &place),
                "{method:?}: an earlier journal's image"
            );
            assert!(!j.confirm(3, &home), "{method:?}: no longer at home");
            assert!(j.confirm(3, &again));
            assert!(!reader.confirm(3, &home) && reader.confirm(3, &again));
            assert_eq!(reader.locate(3).unwrap(), Some(again));
            assert!(
                reader.locate(j.page_capacity()).is_err(),
                "beyond the device"
            );
        }
    }
}
