//! The buffer pool: a fixed set of page frames, a page table, CLOCK replacement, pin counts, dirty
//! tracking with recLSN and a flush list ordered by oldest modification (the checkpointer's
//! candidate list). Eviction writes a dirty victim through the write path after forcing the log up
//! to the victim's page LSN (the WAL rule).
//!
//! The pool is used under the engine's core latch, so it needs no internal locking; pins keep the
//! pages of an operation in memory until the operation has been logged.

use crate::error::{Error, Result};
use crate::page::{self, Lsn, PageId};
use crate::writepath::{LogSink, WritePath, WriteReason};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};

const NO_FRAME: u32 = u32::MAX;

struct Frame {
    pid: Option<PageId>,
    data: Box<[u8]>,
    dirty: bool,
    rec_lsn: Lsn,
    pins: u32,
    referenced: bool,
    /// Consecutive checkpoints that selected this page and deferred its write (paper 000's
    /// `checkpoint_count`); reset whenever the page is written or evicted.
    ckpt_count: u32,
}

/// Buffer pool counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolStats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub dirty_evictions: u64,
}

impl PoolStats {
    pub fn hit_ratio(&self) -> f64 {
        let n = self.hits + self.misses;
        if n == 0 {
            1.0
        } else {
            self.hits as f64 / n as f64
        }
    }
}

pub struct BufferPool {
    page_size: usize,
    frames: Vec<Frame>,
    table: HashMap<PageId, u32>,
    hand: usize,
    flush_list: BTreeSet<(Lsn, PageId)>,
    pub stats: PoolStats,
}

/// Forces the log to be durable up to an LSN (the WAL rule, before a page is written).
pub type LogForce<'a> = &'a mut dyn LogSink;

impl BufferPool {
    pub fn new(frames: usize, page_size: usize) -> BufferPool {
        BufferPool {
            page_size,
            frames: (0..frames.max(8))
                .map(|_| Frame {
                    pid: None,
                    data: vec![0u8; page_size].into_boxed_slice(),
                    dirty: false,
                    rec_lsn: 0,
                    pins: 0,
                    referenced: false,
                    ckpt_count: 0,
                })
                .collect(),
            table: HashMap::new(),
            hand: 0,
            flush_list: BTreeSet::new(),
            stats: PoolStats::default(),
        }
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    pub fn data(&self, f: u32) -> &[u8] {
        &self.frames[f as usize].data
    }

    pub fn data_mut(&mut self, f: u32) -> &mut [u8] {
        &mut self.frames[f as usize].data
    }

    pub fn pid_of(&self, f: u32) -> Option<PageId> {
        self.frames[f as usize].pid
    }

    pub fn pin(&mut self, f: u32) {
        self.frames[f as usize].pins += 1;
    }

    pub fn unpin(&mut self, f: u32) {
        let fr = &mut self.frames[f as usize];
        debug_assert!(fr.pins > 0);
        fr.pins -= 1;
    }

    pub fn lookup(&self, pid: PageId) -> Option<u32> {
        self.table.get(&pid).copied()
    }

    /// The frame holding `pid`, reading it through the write path on a miss.
    pub fn fetch(
        &mut self,
        pid: PageId,
        wp: &mut dyn WritePath,
        force: LogForce<'_>,
    ) -> Result<u32> {
        if let Some(&f) = self.table.get(&pid) {
            self.stats.hits += 1;
            self.frames[f as usize].referenced = true;
            return Ok(f);
        }
        self.stats.misses += 1;
        let f = self.victim(wp, force)?;
        let fr = &mut self.frames[f as usize];
        if let Err(e) = wp.read_page(pid, &mut fr.data) {
            fr.pid = None;
            return Err(e);
        }
        fr.pid = Some(pid);
        fr.referenced = true;
        self.table.insert(pid, f);
        Ok(f)
    }

    /// A frame for a page that is being created (not read from the device): zeroed.
    pub fn create(
        &mut self,
        pid: PageId,
        wp: &mut dyn WritePath,
        force: LogForce<'_>,
    ) -> Result<u32> {
        if let Some(&f) = self.table.get(&pid) {
            self.frames[f as usize].data.fill(0);
            return Ok(f);
        }
        let f = self.victim(wp, force)?;
        let fr = &mut self.frames[f as usize];
        fr.data.fill(0);
        fr.pid = Some(pid);
        fr.referenced = true;
        self.table.insert(pid, f);
        Ok(f)
    }

    /// Frees a frame for reuse: CLOCK over unpinned frames; a dirty victim is written first.
    fn victim(&mut self, wp: &mut dyn WritePath, force: LogForce<'_>) -> Result<u32> {
        let n = self.frames.len();
        let mut chosen = NO_FRAME;
        for _ in 0..2 * n + 1 {
            let i = self.hand;
            self.hand = (self.hand + 1) % n;
            let fr = &mut self.frames[i];
            if fr.pins > 0 {
                continue;
            }
            if fr.pid.is_none() {
                chosen = i as u32;
                break;
            }
            if fr.referenced {
                fr.referenced = false;
                continue;
            }
            chosen = i as u32;
            break;
        }
        if chosen == NO_FRAME {
            return Err(Error::Full(
                "every buffer frame is pinned: the buffer pool is too small for this operation"
                    .into(),
            ));
        }
        if let Some(pid) = self.frames[chosen as usize].pid {
            if self.frames[chosen as usize].dirty {
                self.write_frame(chosen, wp, force, WriteReason::Eviction)?;
                self.stats.dirty_evictions += 1;
            }
            self.table.remove(&pid);
            self.stats.evictions += 1;
            self.frames[chosen as usize].pid = None;
            self.frames[chosen as usize].ckpt_count = 0;
        }
        Ok(chosen)
    }

    /// Marks a frame dirty by a change logged at `lsn` (recLSN = first such LSN since clean).
    pub fn mark_dirty(&mut self, f: u32, lsn: Lsn) {
        let fr = &mut self.frames[f as usize];
        if !fr.dirty {
            fr.dirty = true;
            fr.rec_lsn = lsn;
            self.flush_list
                .insert((lsn, fr.pid.expect("dirty frame holds a page")));
        }
    }

    pub fn is_dirty(&self, f: u32) -> bool {
        self.frames[f as usize].dirty
    }

    /// Writes a dirty frame through the write path and marks it clean.
    pub fn write_frame(
        &mut self,
        f: u32,
        wp: &mut dyn WritePath,
        force: LogForce<'_>,
        reason: WriteReason,
    ) -> Result<()> {
        let fr = &mut self.frames[f as usize];
        let pid = fr.pid.expect("frame holds a page");
        force.force(page::page_lsn(&fr.data))?;
        page::note_write(&mut fr.data);
        page::seal(&mut fr.data);
        wp.write_pages(&[(pid, &fr.data)], reason, force)?;
        self.flush_list.remove(&(fr.rec_lsn, pid));
        fr.dirty = false;
        fr.rec_lsn = 0;
        fr.ckpt_count = 0;
        Ok(())
    }

    /// Writes several dirty pages as one batch (checkpoints). Pages not dirty are skipped.
    pub fn write_batch(
        &mut self,
        pids: &[PageId],
        wp: &mut dyn WritePath,
        force: LogForce<'_>,
        reason: WriteReason,
    ) -> Result<usize> {
        let frames: Vec<u32> = pids
            .iter()
            .filter_map(|p| self.table.get(p).copied())
            .filter(|&f| self.frames[f as usize].dirty)
            .collect();
        if frames.is_empty() {
            return Ok(0);
        }
        let max_lsn = frames
            .iter()
            .map(|&f| page::page_lsn(&self.frames[f as usize].data))
            .max()
            .unwrap_or(0);
        force.force(max_lsn)?;
        for &f in &frames {
            let fr = &mut self.frames[f as usize];
            page::note_write(&mut fr.data);
            page::seal(&mut fr.data);
        }
        let batch: Vec<(PageId, &[u8])> = frames
            .iter()
            .map(|&f| {
                let fr = &self.frames[f as usize];
                (fr.pid.expect("page"), &fr.data[..])
            })
            .collect();
        wp.write_pages(&batch, reason, force)?;
        for &f in &frames {
            let fr = &mut self.frames[f as usize];
            let pid = fr.pid.expect("page");
            self.flush_list.remove(&(fr.rec_lsn, pid));
            fr.dirty = false;
            fr.rec_lsn = 0;
            fr.ckpt_count = 0;
        }
        Ok(frames.len())
    }

    /// How many consecutive checkpoints deferred `pid` (0 if not cached).
    pub fn ckpt_count(&self, pid: PageId) -> u32 {
        self.table
            .get(&pid)
            .map_or(0, |&f| self.frames[f as usize].ckpt_count)
    }

    /// Records that a checkpoint selected `pid` and deferred it. Returns the new count.
    pub fn defer(&mut self, pid: PageId) -> u32 {
        match self.table.get(&pid) {
            Some(&f) => {
                let fr = &mut self.frames[f as usize];
                fr.ckpt_count += 1;
                fr.ckpt_count
            }
            None => 0,
        }
    }

    /// Dirty pages with their recLSN, oldest modification first.
    pub fn dirty_pages(&self) -> Vec<(PageId, Lsn)> {
        self.flush_list.iter().map(|&(l, p)| (p, l)).collect()
    }

    /// The oldest recLSN of any dirty page.
    pub fn min_rec_lsn(&self) -> Option<Lsn> {
        self.flush_list.iter().next().map(|&(l, _)| l)
    }

    pub fn dirty_count(&self) -> usize {
        self.flush_list.len()
    }

    /// Frames that are free or clean and unpinned (what eviction can take without a write).
    pub fn clean_frames(&self) -> usize {
        self.frames
            .iter()
            .filter(|f| f.pins == 0 && (f.pid.is_none() || !f.dirty))
            .count()
    }

    /// Up to `n` dirty unpinned pages the CLOCK hand will reach first (the page cleaner's picks).
    pub fn cleaner_candidates(&self, n: usize) -> Vec<PageId> {
        let len = self.frames.len();
        (0..len)
            .map(|i| &self.frames[(self.hand + i) % len])
            .filter(|f| f.dirty && f.pins == 0 && !f.referenced)
            .filter_map(|f| f.pid)
            .take(n)
            .collect()
    }

    /// Drops every page (after a crash test or on close, once everything is written).
    pub fn clear(&mut self) {
        for f in &mut self.frames {
            f.pid = None;
            f.dirty = false;
            f.pins = 0;
        }
        self.table.clear();
        self.flush_list.clear();
    }
}
