//! Staged pages: written pages wait here, compressed, until a batch is full (or `sync`), and
//! reads of them are served from here. A batch flush writes them through placement, logs the
//! locations of what it wrote (even if it failed part-way) and issues the slot trims whose
//! records are durable. Pages not written (carried to the next batch because they would only
//! partly fill a slot, or left by an error) stay staged, so they stay readable and a later
//! `sync` writes them.

use super::area::space::StoredPage;
use super::placement::Kind;
use super::OutOfPlace;
use crate::error::{Error, Result};
use crate::page::{self, PageId};
use crate::writepath::pack;
use crate::writepath::{LogSink, WriteReason};
use std::collections::{HashMap, VecDeque};

/// Pages written but not yet stored, in the order they were first staged.
#[derive(Default)]
pub(super) struct Stage {
    pages: Vec<StoredPage>,
    index: HashMap<PageId, usize>,
    /// Pages left staged by the last batch flush (the next flush waits for a whole batch more).
    carry_base: usize,
}

impl Stage {
    pub(super) fn get(&self, pid: PageId) -> Option<&StoredPage> {
        self.index.get(&pid).map(|&i| &self.pages[i])
    }

    pub(super) fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// Stages `page`, replacing an older staged version of it.
    fn put(&mut self, page: StoredPage) {
        match self.index.get(&page.pid) {
            Some(&i) => self.pages[i] = page,
            None => {
                self.index.insert(page.pid, self.pages.len());
                self.pages.push(page);
            }
        }
    }

    /// A whole batch is staged beyond the pages the last flush left.
    fn batch_full(&self, batch_pages: u32) -> bool {
        self.pages.len() >= self.carry_base + batch_pages as usize
    }

    fn take(&mut self) -> Vec<StoredPage> {
        self.index.clear();
        std::mem::take(&mut self.pages)
    }

    /// Stages again what a flush did not write.
    fn keep(&mut self, left: impl IntoIterator<Item = StoredPage>) {
        for p in left {
            self.index.insert(p.pid, self.pages.len());
            self.pages.push(p);
        }
        self.carry_base = self.pages.len();
    }
}

impl OutOfPlace {
    /// Reads a staged page into `buf`; false if `pid` is not staged.
    pub(super) fn read_staged(&self, pid: PageId, buf: &mut [u8]) -> Result<bool> {
        let Some(p) = self.stage.get(pid) else {
            return Ok(false);
        };
        pack::unpack_into(&p.bytes, 0, p.bytes.len(), pid, buf)?;
        Ok(true)
    }

    /// Compresses and stages `pages`, writing a batch whenever one is full.
    pub(super) fn stage_pages(
        &mut self,
        pages: &[(PageId, &[u8])],
        reason: WriteReason,
        log: &mut dyn LogSink,
    ) -> Result<()> {
        let now = log.next_lsn();
        for &(pid, data) in pages {
            if pid >= self.area.page_capacity() {
                return Err(Error::Full(format!("page {pid} is beyond the data device")));
            }
            let lsn = page::page_lsn(data);
            debug_assert!(
                lsn < log.durable_lsn(),
                "write-ahead rule: page {pid} (LSN {lsn}) is written before the log is durable \
                 past it (durable below {})",
                log.durable_lsn()
            );
            let c = self.area.counters_mut();
            c.user_write_bytes += data.len() as u64;
            match reason {
                WriteReason::Eviction => c.eviction_writes += 1,
                WriteReason::Checkpoint => c.checkpoint_writes += 1,
            }
            let edt = if self.cfg.gdt {
                self.placement.edt.estimate(data, now)
            } else {
                0
            };
            let bytes = pack::stored_bytes(pid, &pack::compress_page(self.cfg.codec, data));
            self.area.keep_staged(pid, &bytes);
            self.area.mark_staged(pid, true);
            self.stage.put(StoredPage {
                pid,
                bytes,
                edt,
                lsn,
            });
            if self.stage.batch_full(self.cfg.batch_pages) {
                let r = self.flush_staged(log, false);
                self.note(r)?;
            }
        }
        Ok(())
    }

    /// Writes the staged pages (`all`: every one; else pages that would only partly fill a last
    /// slot may stay staged).
    pub(super) fn flush_staged(&mut self, log: &mut dyn LogSink, all: bool) -> Result<()> {
        if self.stage.is_empty() {
            // Locations written by a batch that failed part-way are logged now.
            return self.area.commit_locations(log).map(|_| ());
        }
        self.ensure_free(log)?;
        let mut items: VecDeque<StoredPage> = self.stage.take().into();
        let taken: Vec<PageId> = items.iter().map(|p| p.pid).collect();
        // The write-ahead rule at the data write itself: the log is durable past every page.
        debug_assert!(
            items.iter().all(|p| p.lsn < log.durable_lsn()),
            "write-ahead rule: a staged page's LSN is not durable in the log"
        );
        let mut carried = Vec::new();
        let carry = (!all).then_some(&mut carried);
        let r = self.placement.place(
            &mut self.area,
            &mut items,
            Kind::User,
            log.next_lsn(),
            carry,
        );
        // Pages not written (carried to the next batch, or left by an error) stay staged.
        self.stage.keep(carried.into_iter().chain(items));
        // The others are on the device, and the map names them: readers may read them there.
        for pid in taken {
            if self.stage.get(pid).is_none() {
                self.area.mark_staged(pid, false);
            }
        }
        // What was written is logged even if the batch failed part-way.
        let c = self.area.commit_locations(log);
        r?;
        c?;
        self.area.issue_slot_trims(log)
    }
}
