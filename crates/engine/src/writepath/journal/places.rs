//! The journal map (JMT) as the write path and its readers share it.
//!
//! A cache miss reads its page with no lock held across the device read, at the place the
//! journal gives, and confirms after the read that the place held the page all the while
//! (docs/engine.md, "Misses", step 3). Both the look-up and the confirmation used to take the
//! write path's mutex, which the write path holds across its device I/O: a batch's journal
//! append and, above all, the journal's own checkpoint, which moves every journaled page home
//! (a copy or remap per page) from inside the write that filled the journal. Every miss of every
//! thread waited for that. The map now sits behind a reader-writer lock of its own
//! ([`Directory`]), written by the write path (under its mutex) only for the moments it changes
//! (an image appended, the journal emptied, recovery) and read by misses with the write path's
//! mutex let go.
//!
//! Why a place found without the mutex stays right while it is read: a journal image is not
//! overwritten until the journal is emptied, which bumps `emptied` in the same step as it clears
//! the map (a confirmation compares it); a page's home is rewritten only by a checkpoint that
//! moves that page's image home, so only for pages in the map; and a page being read is not
//! cached, so nothing writes it meanwhile (it neither enters the map nor has its home
//! rewritten). An image enters the map after its bytes are on the device.

use super::Image;
use crate::error::{Error, Result};
use crate::page::PageId;
use crate::writepath::Place;
use std::collections::HashMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The map and the count of times the journal was emptied, changed together.
#[derive(Default)]
pub(super) struct Places {
    /// Page id -> its newest image in the journal.
    pub jmt: HashMap<PageId, Image>,
    /// Times the journal was emptied since it was opened (recovery's rebuild counts too).
    pub emptied: u64,
}

/// Where the homes are: page `pid`'s at `start + pid * page_size`, for `pages` pages.
#[derive(Clone, Copy, Debug)]
pub(super) struct Homes {
    pub start: u64,
    pub page_size: u32,
    pub pages: u64,
}

impl Homes {
    pub(super) fn home(&self, pid: PageId) -> u64 {
        self.start + pid * self.page_size as u64
    }
}

/// The shared map; cloning shares it.
#[derive(Clone)]
pub(super) struct Directory {
    places: Arc<RwLock<Places>>,
    homes: Homes,
}

impl Directory {
    pub(super) fn new(homes: Homes) -> Directory {
        Directory {
            places: Arc::default(),
            homes,
        }
    }

    pub(super) fn homes(&self) -> Homes {
        self.homes
    }

    /// The map, to read. What the write path does under the lock (map inserts and removals,
    /// vector pushes) panics only if memory runs out, so a poisoned lock is taken as it is.
    pub(super) fn read(&self) -> RwLockReadGuard<'_, Places> {
        self.places.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The map, to change (by the write path, under its mutex).
    pub(super) fn write(&self) -> RwLockWriteGuard<'_, Places> {
        self.places.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Where page `pid` is now: its newest journal image, or its home.
    pub(super) fn locate(&self, pid: PageId) -> Result<Place> {
        if pid >= self.homes.pages {
            return Err(Error::CorruptPage {
                pid,
                reason: "page id beyond the data device",
            });
        }
        let places = self.read();
        let (offset, len, home) = match places.jmt.get(&pid) {
            Some(img) => (img.offset, img.len, false),
            None => (self.homes.home(pid), self.homes.page_size, true),
        };
        Ok(Place {
            offset,
            len,
            epoch: places.emptied,
            home,
        })
    }

    /// Whether `place`, as [`Directory::locate`] gave it for `pid`, is still where the page is
    /// and the journal was not emptied since.
    pub(super) fn confirm(&self, pid: PageId, place: &Place) -> bool {
        let places = self.read();
        places.emptied == place.epoch
            && match places.jmt.get(&pid) {
                Some(img) => !place.home && img.offset == place.offset && img.len == place.len,
                None => place.home,
            }
    }
}
