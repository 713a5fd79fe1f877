//! Mini-transactions: one tree operation's page accesses through the buffer pool, turned into
//! exactly one log record. The pages an operation writes stay pinned until the record is appended
//! and every one of them carries its LSN; a simple in-place leaf change is logged physiologically
//! (page + key), anything else (splits, merges, overflow chains, allocation) as after-images.

use crate::btree::PageStore;
use crate::buffer::BufferPool;
use crate::error::{Error, Result};
use crate::meta::{self, META_PID};
use crate::page::{self, Lsn, PageId, PageType};
use crate::wal::record::{Redo, TxnId};
use crate::wal::Wal;
use crate::writepath::WritePath;

/// Page access for one operation.
pub struct Mtr<'a> {
    pub pool: &'a mut BufferPool,
    pub wp: &'a mut dyn WritePath,
    pub wal: &'a mut Wal,
    /// Pages written by this operation, with their frames (pinned).
    touched: Vec<(PageId, u32)>,
    /// Contents of each touched page before the operation (None: created by it), so a failed
    /// operation can be undone in memory instead of poisoning the database.
    before: Vec<Option<Box<[u8]>>>,
}

impl<'a> Mtr<'a> {
    pub fn new(pool: &'a mut BufferPool, wp: &'a mut dyn WritePath, wal: &'a mut Wal) -> Self {
        Mtr {
            pool,
            wp,
            wal,
            touched: Vec::new(),
            before: Vec::new(),
        }
    }

    fn frame(&mut self, pid: PageId) -> Result<u32> {
        let wal = &mut *self.wal;
        self.pool.fetch(pid, self.wp, wal)
    }

    fn touch(&mut self, pid: PageId, f: u32, created: bool) {
        if !self.touched.iter().any(|(p, _)| *p == pid) {
            self.pool.pin(f);
            self.touched.push((pid, f));
            self.before.push(if created {
                None
            } else {
                Some(self.pool.data(f).into())
            });
        }
    }

    /// The redo of what this operation did: physiological if `leaf` names the only page touched
    /// and the change was a plain leaf put/delete, after-images otherwise. None if nothing changed.
    pub fn redo(&self, leaf: Option<LeafChange<'_>>) -> Option<Redo> {
        if self.touched.is_empty() {
            return None;
        }
        if let Some(ch) = leaf {
            if self.touched.len() == 1 && self.touched[0].0 == ch.pid() {
                return Some(ch.into_redo());
            }
        }
        Some(Redo::Images(
            self.touched
                .iter()
                .map(|&(pid, f)| (pid, self.pool.data(f).to_vec()))
                .collect(),
        ))
    }

    /// Appends the operation's record and stamps its LSN on every touched page (marking them
    /// dirty), then unpins them. Returns the LSN (0 if nothing was logged). If the append fails,
    /// the mini-transaction comes back with the error so the caller can `release` it.
    pub fn append(
        mut self,
        txn: TxnId,
        prev_lsn: Lsn,
        body: Option<crate::wal::record::Body>,
    ) -> std::result::Result<Lsn, (Self, Error)> {
        let lsn = match body {
            Some(b) => match self.wal.append(txn, prev_lsn, b) {
                Ok(l) => l,
                Err(e) => return Err((self, e)),
            },
            None => 0,
        };
        self.before.clear();
        for (_, f) in std::mem::take(&mut self.touched) {
            if lsn != 0 {
                page::set_page_lsn(self.pool.data_mut(f), lsn);
                self.pool.mark_dirty(f, lsn);
            }
            self.pool.unpin(f);
        }
        Ok(lsn)
    }

    /// Unpins without logging. For a failed operation: every page it changed gets its
    /// contents from before the operation back (pages it created stay unused).
    pub fn release(mut self) {
        let before = std::mem::take(&mut self.before);
        for ((_, f), img) in std::mem::take(&mut self.touched).into_iter().zip(before) {
            if let Some(img) = img {
                self.pool.data_mut(f).copy_from_slice(&img);
            }
            self.pool.unpin(f);
        }
    }
}

/// A plain in-place leaf change, as the B+tree reports it.
pub enum LeafChange<'k> {
    Put {
        pid: PageId,
        key: &'k [u8],
        value: &'k [u8],
    },
    Del {
        pid: PageId,
        key: &'k [u8],
    },
}

impl LeafChange<'_> {
    fn pid(&self) -> PageId {
        match self {
            LeafChange::Put { pid, .. } | LeafChange::Del { pid, .. } => *pid,
        }
    }
    fn into_redo(self) -> Redo {
        match self {
            LeafChange::Put { pid, key, value } => Redo::LeafPut {
                pid,
                key: key.to_vec(),
                value: value.to_vec(),
            },
            LeafChange::Del { pid, key } => Redo::LeafDel {
                pid,
                key: key.to_vec(),
            },
        }
    }
}

impl PageStore for Mtr<'_> {
    fn page_size(&self) -> usize {
        self.pool.page_size()
    }

    fn read_page<R>(&mut self, pid: PageId, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let fr = self.frame(pid)?;
        let data = self.pool.data(fr);
        if page::is_zeroed(data) {
            return Err(Error::CorruptPage {
                pid,
                reason: "page was never written (dangling reference)",
            });
        }
        Ok(f(data))
    }

    fn write_page<R>(&mut self, pid: PageId, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        let fr = self.frame(pid)?;
        self.touch(pid, fr, false);
        Ok(f(self.pool.data_mut(fr)))
    }

    fn alloc_page(&mut self, kind: PageType) -> Result<PageId> {
        let capacity = self.wp.page_capacity();
        let head = self.read_page(META_PID, meta::free_head)?;
        let pid = if head != 0 {
            let next = self.read_page(head, meta::free_next)?;
            self.write_page(META_PID, |p| meta::set_free_head(p, next))?;
            head
        } else {
            let pid = self.read_page(META_PID, meta::next_pid)?;
            if pid >= capacity {
                return Err(Error::Full(format!(
                    "all {capacity} pages of the data device are in use"
                )));
            }
            self.write_page(META_PID, |p| meta::set_next_pid(p, pid + 1))?;
            pid
        };
        let wal = &mut *self.wal;
        let fr = self.pool.create(pid, self.wp, wal)?;
        self.touch(pid, fr, true);
        page::init(self.pool.data_mut(fr), pid, kind);
        Ok(pid)
    }

    fn free_page(&mut self, pid: PageId) -> Result<()> {
        if pid == META_PID {
            return Err(Error::InvalidArgument(
                "the meta page cannot be freed".into(),
            ));
        }
        let head = self.read_page(META_PID, meta::free_head)?;
        self.write_page(pid, |p| {
            page::init(p, pid, PageType::Free);
            meta::set_free_next(p, head);
        })?;
        self.write_page(META_PID, |p| meta::set_free_head(p, pid))?;
        Ok(())
    }
}
