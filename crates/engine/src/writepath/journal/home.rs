//! Moving the journal's images home: the ladder's methods (host copy, device copies, remap), and
//! the journal's own checkpoint between the engine's.
//!
//! With a lone thread the journal's own checkpoint moves every image home and empties the
//! journal in one go, as the paper's does. With several threads that held a writer's ticket
//! and the write path's mutex for the whole move, and every operation that needed the core
//! latch exclusive waited for it (170-310 ms with copies on ext4, docs/results.md,
//! twenty-first run). So there it goes in slices ([`Journal::journal_slice`]): each step moves
//! the oldest [`SLICE_IMAGES`] images home, logs their pages home, and frees their part of the
//! ring (`ring.rs`), which appends reuse; steps follow each other until the journal is back
//! to half its threshold.

use super::{HomeMethod, Image, Journal};
use crate::device::{CopyOp, RemapMode, RemapOp};
use crate::error::Result;
use crate::page::PageId;
use crate::wal::record::MapChange;
use crate::writepath::LogSink;

/// Images a slice of the journal's own checkpoint moves home at most (several threads): about
/// 20 ms of copies by the host on ext4, the longest a slice holds the write path.
pub(super) const SLICE_IMAGES: usize = 128;

impl Journal {
    /// Moves the newest image of every journaled page home, by the configured method, and
    /// makes the homes durable.
    pub(super) fn move_home(&mut self) -> Result<()> {
        let images = self.images_in_order();
        self.move_images(&images)
    }

    /// The journal map's images, in journal order from the ring's head (the device reads the
    /// journal sequentially; with a lone thread, by offset).
    fn images_in_order(&self) -> Vec<(PageId, Image)> {
        let mut images: Vec<(PageId, Image)> =
            self.dir.read().jmt.iter().map(|(p, i)| (*p, *i)).collect();
        let start = self.journal_start;
        images.sort_unstable_by_key(|(_, i)| self.ring.position(i.offset - start));
        images
    }

    /// Moves `images` home by the configured method and makes the homes durable.
    fn move_images(&mut self, images: &[(PageId, Image)]) -> Result<()> {
        let ps = self.page_size as u64;
        match self.cfg.method {
            HomeMethod::Host => {
                // A read and a rewrite per image, in order (`BlockDevice::host_copy`; a file
                // overlaps them).
                let ops: Vec<CopyOp> = images
                    .iter()
                    .map(|&(pid, img)| CopyOp {
                        src: img.offset,
                        dst: self.home(pid),
                        len: ps,
                    })
                    .collect();
                self.dev.host_copy(&ops)?;
                self.stats.host_move_bytes += 2 * ps * ops.len() as u64;
                self.counters.db_write_bytes += ps * ops.len() as u64;
            }
            HomeMethod::IscA | HomeMethod::IscB => {
                let ops: Vec<CopyOp> = images
                    .iter()
                    .map(|&(pid, img)| CopyOp {
                        src: img.offset,
                        dst: self.home(pid),
                        len: img.span as u64,
                    })
                    .collect();
                if self.cfg.method == HomeMethod::IscA {
                    // A command a range, sent together (`BlockDevice::copy_each`: a file
                    // overlaps them; a simulated SSD takes them one after the other).
                    self.dev.copy_each(&ops)?;
                    self.stats.copy_commands += ops.len() as u64;
                } else if !ops.is_empty() {
                    self.dev.copy(&ops)?;
                    self.stats.copy_commands += 1;
                }
                self.stats.copy_ranges += ops.len() as u64;
                self.stats.device_move_bytes += ops.iter().map(|o| o.len).sum::<u64>();
            }
            HomeMethod::IscC | HomeMethod::CheckIn => {
                let ops: Vec<RemapOp> = images
                    .iter()
                    .map(|&(pid, img)| RemapOp {
                        src: img.offset,
                        dst: self.home(pid),
                        len: img.span as u64,
                        mode: RemapMode::Share,
                    })
                    .collect();
                if !ops.is_empty() {
                    self.dev.remap(&ops)?;
                    self.stats.remap_commands += 1;
                }
                self.stats.remap_ranges += ops.len() as u64;
                self.stats.device_move_bytes += ops.iter().map(|o| o.len).sum::<u64>();
            }
        }
        // A compressed image leaves the rest of its home slot stale: trim it, where the device
        // takes a trim per page at little cost.
        let caps = self.dev.capabilities();
        if caps.trim && caps.block_trims {
            for &(pid, img) in images {
                if (img.span as u64) < ps {
                    self.dev
                        .trim(self.home(pid) + img.span as u64, ps - img.span as u64)?;
                }
            }
        }
        self.dev.flush()?;
        self.stats.images_moved += images.len() as u64;
        self.stats.checkpoints += 1;
        Ok(())
    }

    /// Logs the locations of the images written since the last call and forces them: from then
    /// on recovery finds these images through the journal map.
    pub(super) fn log_locations(&mut self, log: &mut dyn LogSink) -> Result<()> {
        if !self.unlogged.is_empty() {
            let changes = std::mem::take(&mut self.unlogged);
            let lsn = log.log_map(&changes)?;
            log.force(lsn)?;
        }
        Ok(())
    }

    /// The journal's own checkpoint (paper 004's), between the engine's: the newest images
    /// move home, a location record puts each of their pages back home (`offset` = its home),
    /// and once that is durable the journal is emptied and reused. Until then a power cut
    /// finds every moved page through the journal map, never in a home half rewritten.
    pub(super) fn journal_checkpoint(&mut self, log: &mut dyn LogSink) -> Result<()> {
        self.dev.flush()?;
        self.log_locations(log)?;
        self.move_home()?;
        let pids: Vec<PageId> = self.dir.read().jmt.keys().copied().collect();
        self.log_home(&pids, log)?;
        self.stats.journal_checkpoints += 1;
        self.empty_journal()
    }

    /// Logs a location record per page of `pids` putting it back home (`offset` = its home)
    /// and forces it: from then on recovery reads those pages at home.
    fn log_home(&mut self, pids: &[PageId], log: &mut dyn LogSink) -> Result<()> {
        if pids.is_empty() {
            return Ok(());
        }
        let len = self.page_size;
        let home: Vec<MapChange> = pids
            .iter()
            .map(|&pid| MapChange {
                pid,
                offset: self.home(pid),
                len,
            })
            .collect();
        let lsn = log.log_map(&home)?;
        log.force(lsn)
    }

    /// A slice of the journal's own checkpoint (several threads): once the journal is filled
    /// beyond `checkpoint_fill`, and until it is back to half of that, each call moves the
    /// oldest [`SLICE_IMAGES`] images home. Before anything moves, every appended image's
    /// location is logged and forced (the part a slice frees may then be reused: a page
    /// written again has its newer image found through the log, and the older, moved, is no
    /// longer needed); after, a location record per moved page puts it back home, forced,
    /// and the ring's head moves to the oldest image left (the journal empties when none is).
    /// Each slice counts as one of the journal's checkpoints. Returns whether to go on at
    /// once.
    pub(super) fn journal_slice(&mut self, log: &mut dyn LogSink) -> Result<bool> {
        if !self.draining && self.ring.used() <= self.background_limit() {
            return Ok(false);
        }
        self.draining = true;
        self.dev.flush()?;
        self.log_locations(log)?;
        let mut images = self.images_in_order();
        let start = self.journal_start;
        let rest = images.get(self.slice_images).map(|(_, i)| i.offset - start);
        images.truncate(self.slice_images);
        self.move_images(&images)?;
        let pids: Vec<PageId> = images.iter().map(|&(pid, _)| pid).collect();
        self.log_home(&pids, log)?;
        self.stats.journal_checkpoints += 1;
        let Some(head) = rest else {
            self.empty_journal()?;
            return Ok(false);
        };
        {
            let mut places = self.dir.write();
            for pid in &pids {
                places.jmt.remove(pid);
            }
        }
        self.ring.head = head;
        self.draining = self.ring.used() > self.background_limit() / 2;
        Ok(self.draining)
    }

    /// Forgets the journal's images (they are home) and trims its space.
    pub(super) fn empty_journal(&mut self) -> Result<()> {
        {
            // One step for readers: the map cleared and the count bumped together.
            let mut places = self.dir.write();
            places.jmt.clear();
            places.emptied += 1;
        }
        let used = self.ring.written_to;
        self.ring.reset();
        self.draining = false;
        if used > 0 && self.dev.capabilities().trim {
            self.dev.trim(self.journal_start, used)?;
        }
        Ok(())
    }
}
