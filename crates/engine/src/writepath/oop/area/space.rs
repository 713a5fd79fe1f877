//! Space metadata of the log-structured area (paper 002 section 6.2): the page map
//! (`PID2OffsetTable`: page id -> byte offset and stored length) and the zones (`StorageSpace`:
//! state, write pointer, valid bytes and pages, average EDT, and the reverse map: which page was
//! written at which offset of the zone, in write order).
//!
//! The estimated deathtime (EDT) of each copy is the caller's: the area stores it with the copy
//! and averages it per zone (both go into snapshots) but never computes or uses it.

use crate::page::{Lsn, PageId};

/// EDT of pages with no history: the coldest.
pub(crate) const MAX_EDT: u64 = u64::MAX / 4;

/// A page as the area stores it: its stored bytes (a blob or the raw page, see `pack`), the
/// EDT its placement used, and its page LSN (for the write-ahead check; 0 for copies of pages
/// already stored, whose LSN was durable when they were first written).
pub(crate) struct StoredPage {
    pub pid: PageId,
    pub bytes: Vec<u8>,
    pub edt: u64,
    pub lsn: Lsn,
}

/// Where a page is stored. `off == NONE`: never written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    pub off: u64,
    pub len: u32,
    /// Estimated deathtime when it was written (log position; 0 = unknown).
    pub edt: u64,
}

impl Loc {
    pub const NONE: u64 = u64::MAX;
    pub const EMPTY: Loc = Loc {
        off: Loc::NONE,
        len: 0,
        edt: 0,
    };
    pub fn is_some(&self) -> bool {
        self.off != Loc::NONE
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneState {
    /// Free: trimmed or reset, nothing valid.
    Empty,
    /// Accepting appends.
    Open,
    /// No more appends until reclaimed.
    Full,
}

#[derive(Clone, Debug)]
pub struct Zone {
    pub state: ZoneState,
    /// Bytes appended since the zone was last emptied.
    pub wp: u64,
    /// Stored bytes and count of the pages whose current copy is in this zone.
    pub valid_bytes: u64,
    pub valid_pages: u32,
    /// Reverse map: (offset in the zone, page) of every copy written, valid or not.
    pub rev: Vec<(u32, PageId)>,
    /// Sum and count of the EDTs of pages written here (GDT).
    pub edt_sum: u128,
    pub edt_n: u64,
    /// Placement id of this zone's writes (FDP; see the backend).
    pub piid: u16,
    /// Live page copies per 4 KiB slot (slot trims; empty when not tracked).
    pub slot_live: Vec<u16>,
}

impl Zone {
    pub fn empty() -> Zone {
        Zone {
            state: ZoneState::Empty,
            wp: 0,
            valid_bytes: 0,
            valid_pages: 0,
            rev: Vec::new(),
            edt_sum: 0,
            edt_n: 0,
            piid: 0,
            slot_live: Vec::new(),
        }
    }

    /// Average EDT of the pages written here (None before the first).
    pub fn avg_edt(&self) -> Option<u64> {
        (self.edt_n > 0).then(|| (self.edt_sum / self.edt_n as u128) as u64)
    }

    pub fn note_edt(&mut self, edt: u64) {
        self.edt_sum += edt as u128;
        self.edt_n += 1;
    }

    /// Back to free.
    pub fn clear(&mut self) {
        *self = Zone::empty();
    }

    /// Bytes the zone can still take.
    pub fn room(&self, zone_bytes: u64) -> u64 {
        zone_bytes - self.wp
    }
}
