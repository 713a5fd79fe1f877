//! Reads of out-of-place pages from any thread ([`WritePath::page_reader`]): the place comes
//! from the area's shared copy of the page map (`area/shared.rs`), with no part of the write
//! path's mutex, unless the page is staged (then the write path serves it, under its mutex:
//! [`WritePath::locate`]); the device read and the unpacking (decompression, checksum) run
//! beside other threads' reads and the write path's own writes, garbage collection and
//! snapshots; the place is confirmed after (still the page's, its zone not reset meanwhile).
//!
//! [`WritePath::page_reader`]: crate::writepath::WritePath::page_reader
//! [`WritePath::locate`]: crate::writepath::WritePath::locate

use super::area::read_stored;
use super::area::shared::SharedMap;
use crate::device::SharedRead;
use crate::error::{Error, Result};
use crate::page::PageId;
use crate::writepath::{PageReader, Place, ReadCount};
use std::sync::Arc;

/// Reads stored pages at the places the page map gave, through the device's shared reader.
pub(super) struct ZoneReader {
    dev: Arc<dyn SharedRead>,
    map: Arc<SharedMap>,
    pages: u64,
    count: ReadCount,
}

impl ZoneReader {
    pub(super) fn new(dev: Arc<dyn SharedRead>, map: Arc<SharedMap>, pages: u64) -> ZoneReader {
        let count = ReadCount::default();
        ZoneReader {
            dev,
            map,
            pages,
            count,
        }
    }
}

impl PageReader for ZoneReader {
    fn moves(&self) -> bool {
        true
    }

    fn read_placed(&self, pid: PageId, place: &Place, buf: &mut [u8]) -> Result<()> {
        let dev = &self.dev;
        let (r, read) = read_stored(
            |at, io| Ok(dev.read_at(at, io)?),
            place.offset,
            place.len,
            pid,
            buf,
        );
        self.count.note(read);
        r
    }

    fn locates(&self) -> bool {
        self.map.usable()
    }

    fn locate(&self, pid: PageId) -> Result<Option<Place>> {
        if pid >= self.pages {
            return Err(Error::CorruptPage {
                pid,
                reason: "page id beyond the page capacity of the data device",
            });
        }
        Ok(self.map.locate(pid))
    }

    fn read_staged(&self, pid: PageId, buf: &mut [u8]) -> Result<bool> {
        let Some(bytes) = self.map.staged_copy(pid) else {
            return Ok(false);
        };
        crate::writepath::pack::unpack_into(&bytes, 0, bytes.len(), pid, buf)?;
        Ok(true)
    }

    fn confirm(&self, pid: PageId, place: &Place) -> bool {
        pid < self.pages && self.map.confirm(pid, place)
    }

    fn reads(&self) -> (u64, u64) {
        self.count.get()
    }
}
