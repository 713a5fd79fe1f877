//! Moving the journal's images home: the ladder's methods (host copy, device copies, remap), and
//! the journal's own checkpoint between the engine's.

use super::{HomeMethod, Image, Journal};
use crate::device::{CopyOp, RemapMode, RemapOp};
use crate::error::Result;
use crate::page::PageId;
use crate::wal::record::MapChange;
use crate::writepath::LogSink;

impl Journal {
    /// Moves the newest image of every journaled page home, by the configured method, and
    /// makes the homes durable.
    pub(super) fn move_home(&mut self) -> Result<()> {
        let mut images: Vec<(PageId, Image)> =
            self.dir.read().jmt.iter().map(|(p, i)| (*p, *i)).collect();
        // In journal order: the device reads the journal sequentially.
        images.sort_unstable_by_key(|(_, i)| i.offset);
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
            for &(pid, img) in &images {
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
        let ps = self.page_size;
        let home: Vec<MapChange> = self
            .dir
            .read()
            .jmt
            .keys()
            .map(|&pid| MapChange {
                pid,
                offset: self.home(pid),
                len: ps,
            })
            .collect();
        if !home.is_empty() {
            let lsn = log.log_map(&home)?;
            log.force(lsn)?;
        }
        self.stats.journal_checkpoints += 1;
        self.empty_journal()
    }

    /// Forgets the journal's images (they are home) and trims its space.
    pub(super) fn empty_journal(&mut self) -> Result<()> {
        {
            // One step for readers: the map cleared and the count bumped together.
            let mut places = self.dir.write();
            places.jmt.clear();
            places.emptied += 1;
        }
        let used = self.tail;
        self.tail = 0;
        if used > 0 && self.dev.capabilities().trim {
            self.dev.trim(self.journal_start, used)?;
        }
        Ok(())
    }
}
