//! The journal area as a ring: where the next batch goes, how much is in use, and where the
//! live part starts again after a recovery.
//!
//! Appends go at `tail`; `head` is where the oldest image still needed is. With a lone thread
//! the journal's own checkpoint moves every image home and empties the journal (`head` and
//! `tail` back to 0), so the ring never wraps and `head` stays 0: the layout is the paper's.
//! With several threads it moves the oldest images a slice at a time (`home.rs`), and `head`
//! advances past what a slice freed: appends then wrap to the start of the area once its end
//! is reached, and reuse the space a slice freed (never the space of an image still needed:
//! one whose page the journal map names, or whose page's newer image's location is not
//! logged yet; a slice logs those first).

use super::Image;
use crate::page::PageId;
use std::collections::HashMap;

/// Offsets relative to the journal area of `bytes` bytes. Empty: `head == tail` (both 0
/// after the journal is emptied). Wrapped: `tail < head`, the live part `[head, bytes)` and
/// `[0, tail)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Ring {
    pub head: u64,
    pub tail: u64,
    pub bytes: u64,
    /// The end of what was written since the journal was last emptied (the whole area once
    /// it wrapped): what emptying it trims.
    pub written_to: u64,
}

impl Ring {
    pub(super) fn new(bytes: u64) -> Ring {
        Ring {
            bytes,
            ..Ring::default()
        }
    }

    /// Bytes from the oldest image still needed to the tail (with a wrap, the gap left at the
    /// end of the area too).
    pub(super) fn used(&self) -> u64 {
        if self.tail >= self.head {
            self.tail - self.head
        } else {
            self.bytes - self.head + self.tail
        }
    }

    /// Where a batch of `len` bytes goes, if it fits: at the tail, or, past the end of the
    /// area, at its start; `aligned_end` gives where the batch after one ending at an offset
    /// starts. The tail never reaches `head` from behind (equal means empty).
    pub(super) fn place(&self, len: u64, aligned_end: impl Fn(u64) -> u64) -> Option<u64> {
        if self.tail >= self.head {
            if self.tail + len <= self.bytes {
                return Some(self.tail);
            }
            (self.head > 0 && len <= self.bytes && aligned_end(len) < self.head).then_some(0)
        } else {
            (aligned_end(self.tail + len) < self.head).then_some(self.tail)
        }
    }

    /// A batch was written at `at`; the next goes at `next`.
    pub(super) fn appended(&mut self, at: u64, next: u64) {
        if at < self.tail {
            // Wrapped: anything of the area may have been written since it was emptied.
            self.written_to = self.bytes;
        }
        self.tail = next;
        self.written_to = self.written_to.max(next);
    }

    /// Where `rel` (an offset in the area) comes, counting from `head`.
    pub(super) fn position(&self, rel: u64) -> u64 {
        (rel + self.bytes - self.head) % self.bytes
    }

    /// Emptied: everything starts again at 0.
    pub(super) fn reset(&mut self) {
        *self = Ring::new(self.bytes);
    }
}

/// The order in which recovery met the images' location records, to find the ring's ends.
#[derive(Default)]
pub(super) struct Replayed {
    next: u64,
    /// Page -> the rank of its newest location record.
    rank: HashMap<PageId, u64>,
}

impl Replayed {
    /// A location record put page `pid` at an image.
    pub(super) fn placed(&mut self, pid: PageId) {
        self.rank.insert(pid, self.next);
        self.next += 1;
    }

    /// A location record sent page `pid` home.
    pub(super) fn homed(&mut self, pid: PageId) {
        self.rank.remove(&pid);
    }

    /// The ring after recovery, from the images the journal map names (offsets relative to
    /// the area; `end` gives where the batch after an image starts). Unwrapped (the oldest
    /// image before the newest, as a lone thread always leaves it): from 0 to after the image
    /// that ends last, as before the ring. Wrapped: from the oldest image to after the newest.
    pub(super) fn ring(
        &self,
        bytes: u64,
        images: &HashMap<PageId, Image>,
        start: u64,
        end: impl Fn(&Image) -> u64,
    ) -> Ring {
        let mut ring = Ring::new(bytes);
        let rank = |pid: &PageId| self.rank.get(pid).copied().unwrap_or(0);
        let oldest = images.iter().min_by_key(|(pid, _)| rank(pid));
        let newest = images.iter().max_by_key(|(pid, _)| rank(pid));
        let (Some((_, oldest)), Some((_, newest))) = (oldest, newest) else {
            return ring;
        };
        if newest.offset >= oldest.offset {
            ring.tail = images.values().map(&end).max().unwrap_or(0);
            ring.written_to = ring.tail;
        } else {
            ring.head = oldest.offset - start;
            ring.tail = end(newest);
            ring.written_to = bytes;
        }
        ring
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_places_at_the_tail_wraps_short_of_the_head_and_never_meets_it() {
        let same = |e: u64| e;
        let mut r = Ring::new(100);
        assert_eq!(r.place(60, same), Some(0));
        r.appended(0, 60);
        assert_eq!(
            (r.used(), r.place(50, same)),
            (60, None),
            "no room and no head to wrap to"
        );
        r.head = 40;
        assert_eq!(r.place(40, same), Some(60), "up to the end");
        assert_eq!(
            r.place(41, same),
            None,
            "past the end, and at the start it reaches the head"
        );
        r.head = 50;
        assert_eq!(r.place(41, same), Some(0), "wrapped, short of the head");
        r.appended(0, 41);
        assert_eq!((r.used(), r.written_to), (91, 100));
        assert_eq!(r.place(9, same), None, "the tail would meet the head");
        assert_eq!(r.place(8, same), Some(41));
        assert_eq!(r.position(41), 91);
        assert_eq!(r.position(50), 0);
    }
}
