//! The online log table (paper 001, section 3.1): page id -> that page's redo records in order,
//! plus each live transaction's records. It holds the changes of every page whose image on the
//! device is older than the page: pages evicted dirty without a write (the page table says
//! `EvictedDirty`) and dirty pages still in a frame. A record is *committed* once its
//! transaction's commit copied it to the log (it then has a log LSN) or at once for system
//! changes; until then it is *live* and has only its operation sequence number (OSN).
//!
//! Order: the engine lets one live transaction at a time change a page (the flushless sink
//! refuses a second with `Conflict`), so each page's list is its committed records in LSN order
//! followed by at most one transaction's live records in OSN order, which is the order the
//! changes were made. On-the-fly redo applies exactly that list.
//!
//! Memory: each (page, record) entry counts the bytes of its share of the record (a leaf change's
//! key and value, or that page's image); the table refuses entries beyond its budget (the share
//! of the buffer memory `FlushlessConfig::table_fraction` gives it).

use crate::error::{Error, Result};
use crate::page::{Lsn, PageId};
use crate::redo::Applied;
use crate::wal::record::{PageRedo, Redo, TxnId};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Page LSNs of live (uncommitted) changes: this bit plus the record's OSN. Above every real LSN,
/// so a live change always applies on top of the committed ones; never written to the device
/// (no-steal), and replaced by the real LSN when the transaction commits.
pub(crate) const PROVISIONAL: Lsn = 1 << 62;

/// Counters of the log table and of on-the-fly redo.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableStats {
    /// Bytes the table may hold, and holds now.
    pub budget_bytes: u64,
    pub bytes: u64,
    /// Records (a structure change's record counts once) and pages with records, now.
    pub records: u64,
    pub pages: u64,
    /// Of the records now: those of live transactions.
    pub live_records: u64,
    /// The most bytes the table held.
    pub peak_bytes: u64,
    /// Reads of a page evicted dirty, brought up to date from its records (each cost one page
    /// read), and the records they applied.
    pub otf_redos: u64,
    pub otf_records_applied: u64,
    /// Committed records dropped because a later committed full image of their page replaced
    /// them.
    #[serde(default)]
    pub superseded: u64,
    /// The most records one page has now (`records / pages` is the mean).
    #[serde(default)]
    pub max_page_records: u64,
    /// Committed records found already in a page's stored image when it was read (a restart
    /// reloads records without reading pages; they leave the table then).
    #[serde(default)]
    pub already_applied: u64,
}

struct Rec {
    txn: TxnId,
    /// Log LSN once committed; 0 while live.
    lsn: Lsn,
    /// When it was committed (the database clock), for `max_age`.
    committed_ns: u64,
    redo: Redo,
    /// Page lists still holding it.
    refs: u32,
}

#[derive(Default)]
struct PageRecs {
    /// Record OSNs: the committed ones first.
    ids: Vec<u64>,
    committed: usize,
    bytes: u64,
}

/// One page's committed records, as a checkpoint sees them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PageSummary {
    pub pid: PageId,
    pub committed: usize,
    /// Table bytes its committed records hold (what compacting it frees).
    pub committed_bytes: u64,
    /// LSN and commit time of the oldest committed record.
    pub oldest_lsn: Lsn,
    pub oldest_ns: u64,
    /// Whether a live transaction has records on it too.
    pub live: bool,
}

pub(crate) struct LogTable {
    recs: HashMap<u64, Rec>,
    pages: HashMap<PageId, PageRecs>,
    live: HashMap<TxnId, Vec<u64>>,
    next_osn: u64,
    live_records: u64,
    pub stats: TableStats,
    /// What operations with the core latch shared counted for [`super::FlushlessStats`]
    /// (under this table's mutex, which they hold then).
    pub shared: SharedTally,
}

/// Counters of [`super::FlushlessStats`] that operations with the core latch shared keep.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SharedTally {
    pub commits_logged: u64,
    pub records_logged: u64,
    pub page_conflicts: u64,
    pub aborts: u64,
}

/// Bytes a record's entry for page `pid` counts.
fn share(redo: &Redo, pid: PageId) -> u64 {
    const ENTRY: u64 = 48;
    ENTRY
        + match redo {
            Redo::LeafPut { key, value, .. } => (key.len() + value.len()) as u64,
            Redo::LeafDel { key, .. } => key.len() as u64,
            Redo::Images(v) => v
                .iter()
                .filter(|(p, _)| *p == pid)
                .map(|(_, img)| img.len() as u64)
                .sum(),
            Redo::Pages(v) => v
                .iter()
                .filter(|(p, _)| *p == pid)
                .map(|(_, r)| r.bytes() as u64)
                .sum(),
        }
}

impl LogTable {
    pub fn new(budget_bytes: u64) -> LogTable {
        LogTable {
            recs: HashMap::new(),
            pages: HashMap::new(),
            live: HashMap::new(),
            next_osn: 1,
            live_records: 0,
            stats: TableStats {
                budget_bytes,
                ..TableStats::default()
            },
            shared: SharedTally::default(),
        }
    }

    pub fn budget(&self) -> u64 {
        self.stats.budget_bytes
    }

    pub fn bytes(&self) -> u64 {
        self.stats.bytes
    }

    pub fn free_bytes(&self) -> u64 {
        self.budget().saturating_sub(self.bytes())
    }

    /// Bytes `redo` would add.
    pub fn cost(redo: &Redo) -> u64 {
        crate::redo::pages(redo)
            .into_iter()
            .map(|p| share(redo, p))
            .sum()
    }

    /// The live transaction with records on `pid`, if any.
    pub fn owner(&self, pid: PageId) -> Option<TxnId> {
        let p = self.pages.get(&pid)?;
        (p.ids.len() > p.committed).then(|| self.recs[p.ids.last().expect("non-empty")].txn)
    }

    pub fn has_records(&self, pid: PageId) -> bool {
        self.pages.contains_key(&pid)
    }

    /// Pages with records, those whose records take the most bytes first.
    pub fn pages_by_bytes(&self) -> Vec<PageId> {
        let mut v: Vec<(u64, PageId)> = self.pages.iter().map(|(&p, r)| (r.bytes, p)).collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        v.into_iter().map(|(_, p)| p).collect()
    }

    /// Pages with records.
    pub fn pages(&self) -> Vec<PageId> {
        let mut v: Vec<PageId> = self.pages.keys().copied().collect();
        v.sort_unstable();
        v
    }

    fn add(&mut self, txn: TxnId, lsn: Lsn, now_ns: u64, redo: Redo) -> u64 {
        let osn = self.next_osn;
        self.next_osn += 1;
        let pids = crate::redo::pages(&redo);
        for &pid in &pids {
            let s = share(&redo, pid);
            let p = self.pages.entry(pid).or_default();
            if lsn != 0 {
                debug_assert_eq!(
                    p.committed,
                    p.ids.len(),
                    "a committed change of page {pid} after a live one"
                );
                p.committed += 1;
            }
            p.ids.push(osn);
            p.bytes += s;
            self.stats.bytes += s;
        }
        self.stats.peak_bytes = self.stats.peak_bytes.max(self.stats.bytes);
        self.recs.insert(
            osn,
            Rec {
                txn,
                lsn,
                committed_ns: now_ns,
                redo,
                refs: pids.len() as u32,
            },
        );
        osn
    }

    /// A committed full image of `pid` (the record `id`, committed and listed) replaces every
    /// earlier record of the page: they are dropped (still in the log; the page's recovery LSN
    /// becomes the image's).
    fn supersede(&mut self, pid: PageId, id: u64) {
        let p = self.pages.get_mut(&pid).expect("page of a record");
        let at = p.ids.iter().position(|x| *x == id).expect("listed");
        debug_assert!(at < p.committed, "only a committed image supersedes");
        if at == 0 {
            return;
        }
        self.drop_front(pid, at);
        self.stats.superseded += at as u64;
    }

    /// Removes the first `n` (committed) records of `pid`'s list: they leave the page's list,
    /// and the table when no other page lists them.
    fn drop_front(&mut self, pid: PageId, n: usize) {
        let p = self.pages.get_mut(&pid).expect("page of a record");
        debug_assert!(n <= p.committed);
        let gone: Vec<u64> = p.ids.drain(..n).collect();
        p.committed -= n;
        let mut freed = 0;
        for id in gone {
            let r = self.recs.get_mut(&id).expect("record");
            freed += share(&r.redo, pid);
            r.refs -= 1;
            if r.refs == 0 {
                self.recs.remove(&id);
            }
        }
        p.bytes -= freed;
        self.stats.bytes -= freed;
    }

    /// Pages of which `redo` is a full image.
    fn imaged(redo: &Redo) -> Vec<PageId> {
        match redo {
            Redo::Images(v) => v.iter().map(|(p, _)| *p).collect(),
            Redo::Pages(v) => v
                .iter()
                .filter(|(_, r)| matches!(r, PageRedo::Image(_)))
                .map(|(p, _)| *p)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Adds a committed record (a system change, or one reloaded at restart).
    pub fn add_committed(&mut self, txn: TxnId, lsn: Lsn, now_ns: u64, redo: Redo) {
        debug_assert!(lsn != 0 && lsn < PROVISIONAL);
        let imaged = Self::imaged(&redo);
        let id = self.add(txn, lsn, now_ns, redo);
        for pid in imaged {
            self.supersede(pid, id);
        }
    }

    /// Adds a live record of `txn`; returns the provisional page LSN it stamps.
    pub fn add_live(&mut self, txn: TxnId, redo: Redo) -> Lsn {
        debug_assert!(txn != 0);
        let osn = self.add(txn, 0, 0, redo);
        self.live.entry(txn).or_default().push(osn);
        self.live_records += 1;
        PROVISIONAL | osn
    }

    /// Whether `txn` has live records (changes not yet committed).
    pub fn has_live(&self, txn: TxnId) -> bool {
        self.live.get(&txn).is_some_and(|ids| !ids.is_empty())
    }

    /// Whether `f` holds for every page `txn`'s live records change (no allocation: this runs
    /// under the table's mutex at every commit).
    pub fn live_pages_all(&self, txn: TxnId, f: impl Fn(PageId) -> bool) -> bool {
        let Some(ids) = self.live.get(&txn) else {
            return true;
        };
        ids.iter().all(|i| match &self.recs[i].redo {
            Redo::LeafPut { pid, .. } | Redo::LeafDel { pid, .. } => f(*pid),
            Redo::Images(v) => v.iter().all(|(p, _)| f(*p)),
            Redo::Pages(v) => v.iter().all(|(p, _)| f(*p)),
        })
    }

    /// `txn`'s live records, oldest first (what its commit copies to the log).
    pub fn live_redo(&self, txn: TxnId) -> Vec<Redo> {
        self.live
            .get(&txn)
            .map(|ids| ids.iter().map(|i| self.recs[i].redo.clone()).collect())
            .unwrap_or_default()
    }

    /// `txn` committed: its records got `lsns` (in order). Returns each page it changed with the
    /// LSN of its last change there.
    pub fn commit(&mut self, txn: TxnId, lsns: &[Lsn], now_ns: u64) -> Vec<(PageId, Lsn)> {
        let ids = self.live.remove(&txn).unwrap_or_default();
        assert_eq!(ids.len(), lsns.len(), "one LSN per live record");
        let mut last: HashMap<PageId, Lsn> = HashMap::new();
        for (id, &lsn) in ids.iter().zip(lsns) {
            let r = self.recs.get_mut(id).expect("live record");
            r.lsn = lsn;
            r.committed_ns = now_ns;
            let imaged = Self::imaged(&r.redo);
            for pid in crate::redo::pages(&r.redo) {
                let p = self.pages.get_mut(&pid).expect("page of a record");
                debug_assert_eq!(
                    p.ids[p.committed], *id,
                    "records of page {pid} out of order"
                );
                p.committed += 1;
                last.insert(pid, lsn);
            }
            for pid in imaged {
                self.supersede(pid, *id);
            }
        }
        self.live_records -= ids.len() as u64;
        let mut v: Vec<(PageId, Lsn)> = last.into_iter().collect();
        v.sort_unstable();
        v
    }

    /// Drops `txn`'s live records (its abort). Returns the pages they changed.
    pub fn discard(&mut self, txn: TxnId) -> Vec<PageId> {
        let ids = self.live.remove(&txn).unwrap_or_default();
        let mut pages = Vec::new();
        for id in ids.iter().rev() {
            let r = self.recs.remove(id).expect("live record");
            for pid in crate::redo::pages(&r.redo) {
                let s = share(&r.redo, pid);
                let p = self.pages.get_mut(&pid).expect("page of a record");
                let at = p.ids.iter().rposition(|x| x == id).expect("listed");
                debug_assert!(at >= p.committed, "a live record among committed ones");
                p.ids.remove(at);
                p.bytes -= s;
                self.stats.bytes -= s;
                if p.ids.is_empty() {
                    self.pages.remove(&pid);
                }
                pages.push(pid);
            }
        }
        self.live_records -= ids.len() as u64;
        pages.sort_unstable();
        pages.dedup();
        pages
    }

    /// Applies `pid`'s records to its stored image `data`: committed ones where the page is
    /// older, then a live transaction's (if `live`). Returns how many changed the page.
    pub fn redo_page(&self, pid: PageId, data: &mut [u8], live: bool) -> Result<u64> {
        let Some(p) = self.pages.get(&pid) else {
            return Ok(0);
        };
        let n = if live { p.ids.len() } else { p.committed };
        let mut applied = 0;
        for id in &p.ids[..n] {
            let r = &self.recs[id];
            let lsn = if r.lsn != 0 { r.lsn } else { PROVISIONAL | id };
            if crate::redo::apply(data, pid, lsn, &r.redo)? == Applied::Changed {
                applied += 1;
            }
        }
        Ok(applied)
    }

    /// Every page with committed records, by page id.
    pub fn summaries(&self) -> Vec<PageSummary> {
        let mut v: Vec<PageSummary> = self
            .pages
            .iter()
            .filter(|(_, p)| p.committed > 0)
            .map(|(&pid, p)| {
                let r = &self.recs[&p.ids[0]];
                let committed_bytes = p.ids[..p.committed]
                    .iter()
                    .map(|i| share(&self.recs[i].redo, pid))
                    .sum();
                PageSummary {
                    pid,
                    committed: p.committed,
                    committed_bytes,
                    oldest_lsn: r.lsn,
                    oldest_ns: r.committed_ns,
                    live: p.ids.len() > p.committed,
                }
            })
            .collect();
        v.sort_unstable_by_key(|s| s.pid);
        v
    }

    /// Deletes `pid`'s committed records (their changes are now on the device). Returns whether
    /// the page still has (live) records.
    pub fn drop_committed(&mut self, pid: PageId) -> bool {
        let Some(p) = self.pages.get(&pid) else {
            return false;
        };
        self.drop_front(pid, p.committed);
        let left = !self.pages[&pid].ids.is_empty();
        if !left {
            self.pages.remove(&pid);
        }
        left
    }

    /// Drops `pid`'s committed records that a stored image with page LSN `stored_lsn` already
    /// holds (LSN at or below it: a prefix, records being in LSN order). Returns whether the
    /// page still has records.
    pub fn drop_applied(&mut self, pid: PageId, stored_lsn: Lsn) -> bool {
        let Some(p) = self.pages.get(&pid) else {
            return false;
        };
        let n = p.ids[..p.committed]
            .iter()
            .take_while(|id| self.recs[id].lsn <= stored_lsn)
            .count();
        if n > 0 {
            self.drop_front(pid, n);
            self.stats.already_applied += n as u64;
        }
        let left = !self.pages[&pid].ids.is_empty();
        if !left {
            self.pages.remove(&pid);
        }
        left
    }

    /// The stats, with the current counts.
    pub fn snapshot(&self) -> TableStats {
        TableStats {
            records: self.recs.len() as u64,
            pages: self.pages.len() as u64,
            live_records: self.live_records,
            max_page_records: self
                .pages
                .values()
                .map(|p| p.ids.len() as u64)
                .max()
                .unwrap_or(0),
            ..self.stats.clone()
        }
    }

    /// Refuses `extra` bytes more than the budget allows.
    pub fn check_room(&self, extra: u64) -> Result<()> {
        if self.bytes() + extra > self.budget() {
            return Err(Error::TableFull(format!(
                "the change needs {extra} bytes and {} of the table's {} hold records ({} of \
                 them records of live transactions, which no checkpoint can remove): commit or \
                 abort transactions, or give the table more memory (flushless.table_fraction)",
                self.bytes(),
                self.budget(),
                self.live_records
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(pid: PageId, k: &[u8]) -> Redo {
        Redo::LeafPut {
            pid,
            key: k.to_vec(),
            value: b"v".to_vec(),
        }
    }

    #[test]
    fn commit_orders_and_discard_drops() {
        let mut t = LogTable::new(1 << 20);
        t.add_committed(0, 100, 5, put(3, b"a"));
        let l1 = t.add_live(7, put(3, b"b"));
        let l2 = t.add_live(7, Redo::Images(vec![(3, vec![0; 64]), (4, vec![0; 64])]));
        assert!(l1 & PROVISIONAL != 0 && l2 > l1);
        assert_eq!(t.owner(3), Some(7));
        assert_eq!(t.owner(4), Some(7));
        let pages = t.commit(7, &[200, 300], 9);
        assert_eq!(pages, vec![(3, 300), (4, 300)]);
        assert_eq!(t.owner(3), None);
        // The committed image of page 3 replaced its two earlier records.
        let s = t.summaries();
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].pid, s[0].committed, s[0].oldest_lsn), (3, 1, 300));
        assert_eq!(t.snapshot().superseded, 2);
        // A live record of another transaction, then its abort.
        t.add_live(8, put(4, b"c"));
        assert_eq!(t.discard(8), vec![4]);
        assert!(t.has_records(4));
        // Compaction of page 3 keeps the shared image for page 4.
        assert!(!t.drop_committed(3));
        assert_eq!(t.snapshot().records, 1);
        assert!(!t.drop_committed(4));
        assert_eq!(t.bytes(), 0);
        assert_eq!(t.snapshot().records, 0);
    }

    #[test]
    fn a_committed_image_supersedes_only_committed_records() {
        let mut t = LogTable::new(1 << 20);
        t.add_committed(0, 100, 5, put(3, b"a"));
        // A live image does not drop the committed record: an abort would need it.
        t.add_live(7, Redo::Images(vec![(3, vec![0; 64])]));
        assert_eq!(t.snapshot().records, 2);
        assert_eq!(t.discard(7), vec![3]);
        assert_eq!(t.summaries()[0].oldest_lsn, 100);
        // A committed (system) image does.
        t.add_committed(0, 200, 6, Redo::Images(vec![(3, vec![0; 64])]));
        assert_eq!(t.snapshot().records, 1);
        assert_eq!(t.summaries()[0].oldest_lsn, 200);
    }

    #[test]
    fn the_budget_is_enforced() {
        let t = LogTable::new(100);
        assert!(t.check_room(50).is_ok());
        assert!(matches!(t.check_room(101), Err(Error::TableFull(_))));
    }
}
