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
use crate::error::{Error, Result};
use crate::page::PageId;
use crate::sync::Striped;
use crate::writepath::{PageReader, Place};
use std::sync::Arc;

/// Reads stored pages at the places the page map gave, through the device's shared reader.
pub(super) struct ZoneReader {
    dev: Arc<dyn SharedRead>,
    pages: Striped,
    bytes: Striped,
}

impl ZoneReader {
    pub(super) fn new(dev: Arc<dyn SharedRead>) -> ZoneReader {
        ZoneReader {
            dev,
            pages: Striped::default(),
            bytes: Striped::default(),
        }
    }
}

impl PageReader for ZoneReader {
    fn moves(&self) -> bool {
        true
    }

    fn read_page(&self, _pid: PageId, _buf: &mut [u8]) -> Result<()> {
        Err(Error::InvalidArgument(
            "internal: out-of-place pages are read at the place the page map gives".into(),
        ))
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
        if read > 0 {
            self.pages.add(1);
            self.bytes.add(read);
        }
        r
    }

    fn reads(&self) -> (u64, u64) {
        (self.pages.get(), self.bytes.get())
    }
}
