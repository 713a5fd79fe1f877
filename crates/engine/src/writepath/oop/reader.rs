//! Reads of out-of-place pages from any thread ([`WritePath::page_reader`]): the place comes
//! from the page map under the write path's mutex ([`WritePath::locate`]); the device read and
//! the unpacking (decompression, checksum) run with the mutex let go, beside other threads'
//! reads and the write path's own writes and garbage collection; the place is confirmed under
//! the mutex after ([`WritePath::confirm`]: still the page's, its zone not reset meanwhile).
//!
//! [`WritePath::page_reader`]: crate::writepath::WritePath::page_reader
//! [`WritePath::locate`]: crate::writepath::WritePath::locate
//! [`WritePath::confirm`]: crate::writepath::WritePath::confirm

use super::area::read_stored;
use crate::device::SharedRead;
use crate::error::Result;
use crate::page::PageId;
use crate::writepath::{PageReader, Place, ReadCount};
use std::sync::Arc;

/// Reads stored pages at the places the page map gave, through the device's shared reader.
pub(super) struct ZoneReader {
    dev: Arc<dyn SharedRead>,
    count: ReadCount,
}

impl ZoneReader {
    pub(super) fn new(dev: Arc<dyn SharedRead>) -> ZoneReader {
        let count = ReadCount::default();
        ZoneReader { dev, count }
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

    fn reads(&self) -> (u64, u64) {
        self.count.get()
    }
}
