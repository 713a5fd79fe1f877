//! Range scans under the core latch held exclusive (the plain one), and a snapshot reader's,
//! which merges the tree with the version store's heads a window at a time: exclusive, or
//! shared beside other readers over the pages in memory (in parts, see [`ScanParts`]).

use super::{Core, Pairs};
use crate::btree::tree as bt;
use crate::btree::tree::{Reach, ScanSink};
use crate::cache::PageCache;
use crate::catalog::Tree;
use crate::cc::{ConcurrencyControl, KeyRange, ScanGuard};
use crate::error::Result;
use crate::health::Health;
use crate::mvcc::{ReadTally, VersionStore};
use crate::read_shared::SharedReader;
use crate::scan_buf::{PairOut, ScanBuf};
use crate::wal::record::{TreeId, TxnId};
use crate::wal::Wal;
use std::cell::Cell;
use std::ops::Bound;

impl Core {
    /// Up to `limit` pairs of `tree` in `range` for `txn` (descending if `reverse`), kept from
    /// phantoms by a key-range claim (see `ranges.rs`), or by the whole tree if the
    /// transaction holds it. `cursor`: a cursor's batch, with the cursor's claim (made and
    /// counted as an operation when it opened; `None` for a snapshot reader's).
    #[allow(clippy::too_many_arguments)]
    pub fn scan(
        &mut self,
        wal: &mut Wal,
        txn: TxnId,
        tree: &Tree,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        limit: usize,
        cursor: Option<&mut Option<ScanGuard>>,
    ) -> Result<Pairs> {
        let mut out = Vec::new();
        self.scan_to(wal, (txn, tree), (range, reverse), limit, cursor, &mut out)?;
        Ok(out)
    }

    /// [`Core::scan`], its pairs put in `out` (emptied first).
    pub(crate) fn scan_to<O: PairOut>(
        &mut self,
        wal: &mut Wal,
        (txn, tree): (TxnId, &Tree),
        (range, reverse): (KeyRange<'_>, bool),
        limit: usize,
        cursor: Option<&mut Option<ScanGuard>>,
        out: &mut O,
    ) -> Result<()> {
        out.clear_pairs();
        if self.is_snapshot(txn) {
            self.checked(txn, tree)?;
            if cursor.is_none() {
                self.stats.ops.add(1);
            }
            if limit == 0 {
                return Ok(());
            }
            let mut view = Exclusive {
                cache: &mut self.cache,
                wal,
                store: self
                    .versions
                    .as_ref()
                    .expect("a snapshot transaction has a store")
                    .store(),
                health: &self.health,
                txn,
                tree,
            };
            return snapshot_scan(&mut view, (range, reverse), limit, out, &mut None)
                .expect("an exclusive view reads every page");
        }
        let (mut own, batch) = (None, cursor.is_some());
        let guard = self.scan_guard(txn, tree, (range, reverse), cursor, &mut own)?;
        if !batch {
            self.stats.ops.add(1);
        }
        let cc = self.txns.cc();
        let mut sink = ClaimedPairs::new(cc, (txn, tree.id), guard, limit, out);
        let r = if limit == 0 {
            Ok(())
        } else {
            crate::ops::read(&mut self.cache, wal, |m| {
                bt::scan(m, tree.root, range.0, range.1, reverse, &mut sink)
            })
        };
        drop(sink);
        self.health.guard(r)
    }

    /// The checks before a scan of `txn` (not a snapshot reader's), and what keeps it from
    /// phantoms: the claim in `kept` (a cursor's, or that of a scan run in parts, see
    /// [`ScanParts`]; made here and kept there if it is empty), or a new one kept in `own`.
    pub(super) fn scan_guard<'g>(
        &self,
        txn: TxnId,
        tree: &Tree,
        (range, reverse): (KeyRange<'_>, bool),
        kept: Option<&'g mut Option<ScanGuard>>,
        own: &'g mut Option<ScanGuard>,
    ) -> Result<&'g ScanGuard> {
        let slot = match kept {
            Some(g) if g.is_some() => {
                self.checked(txn, tree)?;
                return Ok(g.as_ref().expect("looked at"));
            }
            Some(g) => g,
            None => own,
        };
        self.check()?;
        let g = self.txns.scan_begin(txn, (tree.id, range), reverse, || {
            self.catalog.check_handle(tree)
        })?;
        Ok(slot.insert(g))
    }

    /// [`Core::scan`] for a snapshot reader with the core latch shared, after the `kept` pairs
    /// `out` holds (a scan in parts, see [`ScanParts`]; `partial`: it may stop part way):
    /// `None` when a page it needs is not in memory. Then, in parts, the windows read whole
    /// before the miss and the part of the last one read before it are kept in `out` (the
    /// caller takes them as the next part's start); else the caller runs `scan` exclusive.
    /// A snapshot reader takes no lock.
    pub(super) fn scan_snapshot_shared<O: PairOut>(
        &self,
        (txn, tree): (TxnId, &Tree),
        (range, reverse): (KeyRange<'_>, bool),
        (limit, partial, kept): (usize, bool, usize),
        (counts, resolved): (&mut PartCounts, &mut Option<Vec<u8>>),
        out: &mut O,
    ) -> Option<Result<()>> {
        let mut view = SharedView {
            core: self,
            txn,
            tree,
            hits: 0,
            tally: ReadTally::default(),
            partial,
            cut: false,
        };
        let r = if limit > kept {
            snapshot_scan(&mut view, (range, reverse), limit, out, resolved)
        } else {
            Some(Ok(()))
        };
        if r.is_some() {
            // Done within a window a miss cut short: the page is not needed after all.
            let _ = crate::read_shared::take_miss();
        }
        if r.is_some() || (partial && resolved.is_some()) {
            // Done, or a part kept: what it read counts (a part's, up to its last leaf read
            // whole), once the scan completes shared.
            counts.hits += view.hits;
            counts.tally.add(&view.tally);
        }
        if r.is_some() {
            self.cache.pool.shared_hits.add(counts.hits);
            view.versions().count(&counts.tally);
        }
        r
    }
}

/// The pairs of a scan, up to a limit, with the scan's key-range claim grown leaf by leaf as it
/// reads (see `ranges.rs`); ends the claim's growth when finished (or dropped).
pub(super) struct ClaimedPairs<'a, O: PairOut> {
    cc: &'a dyn ConcurrencyControl,
    txn: TxnId,
    tree: TreeId,
    guard: &'a ScanGuard,
    out: &'a mut O,
    limit: usize,
    /// Pairs of `out` whose keys the claim was told about.
    told: usize,
    /// Pages a part of a scan in parts has read (its reader's tally, see [`ScanParts`]), and
    /// how many it had read when it first and last told how far it reached.
    pages: Option<&'a Cell<u64>>,
    first_reach: Option<u64>,
    last_reach: u64,
}

impl<'a, O: PairOut> ClaimedPairs<'a, O> {
    /// The pairs go to `out`, after those it holds (which `guard` covers already: the parts
    /// of a scan before this one, see [`ScanParts`]).
    pub(super) fn new(
        cc: &'a dyn ConcurrencyControl,
        (txn, tree): (TxnId, TreeId),
        guard: &'a ScanGuard,
        limit: usize,
        out: &'a mut O,
    ) -> ClaimedPairs<'a, O> {
        let told = out.pair_count();
        ClaimedPairs {
            cc,
            txn,
            tree,
            guard,
            out,
            limit,
            told,
            pages: None,
            first_reach: None,
            last_reach: 0,
        }
    }

    /// Notes, at each reach, how many pages the reader counted in `pages` had read.
    pub(super) fn tallied(mut self, pages: &'a Cell<u64>) -> ClaimedPairs<'a, O> {
        self.pages = Some(pages);
        self
    }

    /// Pages read when the scan first told how far it reached (0 if it never did), and when
    /// it last did.
    pub(super) fn pages_at_reach(&self) -> (u64, u64) {
        (self.first_reach.unwrap_or(0), self.last_reach)
    }

    /// Pairs of the output whose keys the claim was told about (all of them but those of a
    /// leaf the scan had not finished when a miss stopped it).
    pub(super) fn told(&self) -> usize {
        self.told
    }
}

/// A scan run with the core latch shared in parts, with several threads: a part that a miss
/// stops keeps the pairs its claim covers, the page is read with the latch released
/// ([`super::Shared::shared_op`]), and the next part goes on after the last key kept, growing
/// the same claim, as a cursor's next batch does. A scan of many pages not in memory so never
/// runs exclusive for want of attempts, reading its pages under the core latch. Why it stays
/// serializable: the keys kept are covered by the claim until the transaction ends, so none of
/// them changes and no key appears among them; what lies after the last of them is read by the
/// later parts, so the scan sees the range as it is when its last part reads it. A snapshot
/// scan's part keeps the windows it resolved, the last one cut short at the last leaf it read
/// whole (the snapshot is fixed: any split into parts sees the same versions). With one
/// thread (virtual time among such runs) a miss starts the scan over, as before: the same
/// page accesses, so the same eviction choices.
#[derive(Default)]
pub(crate) struct ScanParts {
    /// Whether this scan goes on after a miss (decided by its first attempt).
    pub(super) resumes: Option<bool>,
    /// Its claim, made by its first attempt and grown by each part (a cursor's batch grows
    /// the cursor's instead).
    pub(super) guard: Option<ScanGuard>,
    /// Pairs of the output that earlier parts read and the claim covers.
    pub(super) kept: usize,
    /// Where the next part starts: after this key, in scan order (the last key kept; for a
    /// snapshot scan, the end of the last window it resolved, which may hold no visible key).
    pub(super) after: Option<Vec<u8>>,
    /// Parts kept so far.
    pub(super) parts: usize,
    /// What the parts kept so far read.
    pub(super) counts: PartCounts,
}

/// Cache hits and version-store reads of the parts a scan kept, counted only when the scan
/// completes shared: a scan that then runs exclusive reads its range again from the start, and
/// that pass is the one counted.
#[derive(Default)]
pub(crate) struct PartCounts {
    pub(super) hits: u64,
    pub(super) tally: ReadTally,
}

impl ScanParts {
    /// Parts kept so far: a round of attempts that did not add one made no progress.
    pub(crate) fn parts(&self) -> usize {
        self.parts
    }

    /// A part ends at `after` with the first `kept` pairs of the output.
    pub(super) fn keep(&mut self, kept: usize, after: Vec<u8>) {
        self.kept = kept;
        self.after = Some(after);
        self.parts += 1;
    }
}

impl<O: PairOut> Drop for ClaimedPairs<'_, O> {
    fn drop(&mut self) {
        if let ScanGuard::Ranges(claim) = self.guard {
            self.cc.scan_end(self.tree, claim);
        }
    }
}

impl<O: PairOut> ScanSink for ClaimedPairs<'_, O> {
    fn pair(&mut self, key: &[u8], value: &[u8]) -> bool {
        self.out.push_pair(key, value);
        self.out.pair_count() < self.limit
    }

    fn reach(&mut self, reach: Reach<'_>) -> Result<()> {
        if let Some(p) = self.pages {
            self.last_reach = p.get();
            self.first_reach.get_or_insert(self.last_reach);
        }
        let ScanGuard::Ranges(claim) = self.guard else {
            // The transaction holds the whole tree: every pair so far is covered (a scan in
            // parts keeps them too).
            self.told = self.out.pair_count();
            return Ok(());
        };
        // A key reached but not given yet: its value is in an overflow chain.
        let n = self.out.pair_count();
        let ahead = match reach {
            Reach::On(Some(k)) | Reach::Stop(k) if n == 0 || self.out.key_at(n - 1) != k => Some(k),
            _ => None,
        };
        let out = &*self.out;
        let mut keys = (self.told..n).map(|i| out.key_at(i)).chain(ahead);
        let r = self
            .cc
            .scan_reach(self.txn, self.tree, claim, &mut keys, reach);
        self.told = n;
        r
    }
}

/// Up to `want` pairs of the tree at `root` in `r`, in scan order, into `buf` (emptied
/// first), counting the pages it reads in `pages` if given (see [`WindowSink`]).
fn window<S: crate::btree::PageStore>(
    m: &mut S,
    root: crate::page::PageId,
    (r, reverse): (KeyRange<'_>, bool),
    want: usize,
    (buf, pages): (&mut ScanBuf, Option<&PageTally>),
) -> Result<()> {
    buf.clear();
    let mut sink = WindowSink { buf, want, pages };
    bt::scan(m, root, r.0, r.1, reverse, &mut sink)
}

/// Pages a shared reader read (its tally), and how many it had read at the last leaf's reach.
#[derive(Default)]
struct PageTally {
    read: Cell<u64>,
    reached: Cell<u64>,
}

/// A snapshot scan's window being read: its pairs up to the last leaf's reach are those of
/// leaves read whole (a miss comes between leaves, or before an overflow value, whose key is
/// not among them).
struct WindowSink<'a> {
    buf: &'a mut ScanBuf,
    want: usize,
    pages: Option<&'a PageTally>,
}

impl ScanSink for WindowSink<'_> {
    fn pair(&mut self, key: &[u8], value: &[u8]) -> bool {
        self.buf.push_pair(key, value);
        self.buf.len() < self.want
    }

    fn reach(&mut self, _reach: Reach<'_>) -> Result<()> {
        if let Some(p) = self.pages {
            p.reached.set(p.read.get());
        }
        Ok(())
    }
}

/// What a snapshot scan reads: the tree a window at a time, the keys with a head in the version
/// store, and the version the snapshot sees of one record.
trait SnapshotView {
    /// Up to `want` pairs of the tree in `range`, into `buf` (emptied first); `None` when
    /// refused (a page not in memory, for a view that does not read the device).
    fn tree_window(
        &mut self,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        want: usize,
        buf: &mut ScanBuf,
    ) -> Option<Result<()>>;
    /// Up to `limit` keys with a head in `range`, in scan order.
    fn heads(
        &mut self,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        limit: usize,
    ) -> Vec<Vec<u8>>;
    /// The version of `key` the snapshot sees, whose version in the tree is `current`.
    fn visible(&mut self, key: &[u8], current: Option<Vec<u8>>) -> Result<Option<Vec<u8>>>;
    /// Whether a miss cut the last window short (and forgets it): its pairs are those of the
    /// leaves read before the miss, and the scan stops after it, to go on in a next part.
    fn cut(&mut self) -> bool {
        false
    }
}

/// The view of a scan holding the core latch exclusive: reads pages from the device too.
struct Exclusive<'a> {
    cache: &'a mut PageCache,
    wal: &'a mut Wal,
    store: &'a VersionStore,
    health: &'a Health,
    txn: TxnId,
    tree: &'a Tree,
}

impl SnapshotView for Exclusive<'_> {
    fn tree_window(
        &mut self,
        r: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        want: usize,
        buf: &mut ScanBuf,
    ) -> Option<Result<()>> {
        let res = crate::ops::read(self.cache, self.wal, |m| {
            window(m, self.tree.root, (r, reverse), want, (buf, None))
        });
        Some(self.health.guard(res))
    }
    fn heads(
        &mut self,
        r: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        limit: usize,
    ) -> Vec<Vec<u8>> {
        self.store.head_keys(self.tree.id, r, reverse, limit)
    }
    fn visible(&mut self, key: &[u8], current: Option<Vec<u8>>) -> Result<Option<Vec<u8>>> {
        let mut tally = ReadTally::default();
        let r = self
            .store
            .visible(self.txn, self.tree.id, key, current, &mut tally);
        self.store.count(&tally);
        self.health.guard(r)
    }
}

/// The view of a scan holding the core latch shared: pages only from memory, the version store
/// latched for each look (see [`crate::mvcc::Versions`]). What it read is counted once the
/// whole scan ran shared: one that gives up for the exclusive path counts nothing.
struct SharedView<'a> {
    core: &'a Core,
    txn: TxnId,
    tree: &'a Tree,
    /// Page hits of the windows read so far.
    hits: u64,
    /// What the version store's chains gave so far.
    tally: ReadTally,
    /// A window a miss cuts short is kept, up to the last leaf read whole (a scan in parts);
    /// else the window, and the scan, is refused.
    partial: bool,
    /// A miss cut the last window short.
    cut: bool,
}

impl SharedView<'_> {
    fn versions(&self) -> &crate::mvcc::Versions {
        self.core
            .versions
            .as_ref()
            .expect("a snapshot transaction has a store")
    }
}

impl SnapshotView for SharedView<'_> {
    fn tree_window(
        &mut self,
        r: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        want: usize,
        buf: &mut ScanBuf,
    ) -> Option<Result<()>> {
        let pages = PageTally::default();
        let res = SharedReader::run_keeping(&self.core.cache, &pages.read, |m| {
            window(
                m,
                self.tree.root,
                (r, reverse),
                want,
                (&mut *buf, Some(&pages)),
            )
        });
        match res {
            Some(res) => {
                self.hits += pages.read.get();
                Some(self.core.health.guard(res))
            }
            None if self.partial && !buf.is_empty() => {
                self.hits += pages.reached.get();
                self.cut = true;
                Some(Ok(()))
            }
            None => None,
        }
    }
    fn heads(
        &mut self,
        r: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        limit: usize,
    ) -> Vec<Vec<u8>> {
        self.versions()
            .store()
            .head_keys(self.tree.id, r, reverse, limit)
    }
    fn visible(&mut self, key: &[u8], current: Option<Vec<u8>>) -> Result<Option<Vec<u8>>> {
        let (txn, tree) = (self.txn, self.tree.id);
        let r = self
            .core
            .versions
            .as_ref()
            .expect("a snapshot transaction has a store")
            .visible(txn, tree, key, current, &mut self.tally);
        self.core.health.guard(r)
    }
    fn cut(&mut self) -> bool {
        std::mem::take(&mut self.cut)
    }
}

/// A snapshot reader's scan: the tree's pairs merged with the records whose version it may see
/// differently (those with a head), each resolved to its version, a window at a time. A window
/// takes up to `limit` heads and `limit` + that many tree pairs and resolves everything up to
/// the nearer of their ends (past it, either may hold keys not yet read): at most as many tree
/// keys as heads can be invisible, so windows continue until `limit` pairs are visible or the
/// range is done. The pairs go to `out` after those it holds. `None` when the view refused a
/// window, or cut one short (a scan in parts: the pairs given so far stay, `resolved` names
/// the end of the last window resolved, if any, and the next part goes on after it). The
/// heads are looked at again after the tree is read (see the loop).
fn snapshot_scan<O: PairOut>(
    view: &mut impl SnapshotView,
    (range, reverse): (KeyRange<'_>, bool),
    limit: usize,
    out: &mut O,
    resolved: &mut Option<Vec<u8>>,
) -> Option<Result<()>> {
    let window = limit.clamp(1, 1024);
    let mut bounds: (Bound<Vec<u8>>, Bound<Vec<u8>>) =
        (range.0.map(|k| k.to_vec()), range.1.map(|k| k.to_vec()));
    let before = |a: &[u8], b: &[u8]| if reverse { a > b } else { a < b };
    // The tree's window, reused from window to window.
    let mut tree = ScanBuf::new();
    loop {
        let r = (
            bounds.0.as_ref().map(|k| k.as_slice()),
            bounds.1.as_ref().map(|k| k.as_slice()),
        );
        let heads = view.heads(r, reverse, window);
        let heads_done = heads.len() < window;
        let want = window + heads.len();
        if let Err(e) = view.tree_window(r, reverse, want, &mut tree)? {
            return Some(Err(e));
        }
        // A window a miss cut short ends at its last key: the scan stops after it.
        let cut = view.cut();
        let tree_done = !cut && tree.len() < want;
        // The window ends at the nearer of the two last keys read (when more may follow).
        let mut end: Option<Vec<u8>> = None;
        if !tree_done {
            end = tree.iter().last().map(|(k, _)| k.to_vec());
        }
        if !heads_done {
            let h = heads.last().expect("a full window").clone();
            end = Some(match end {
                Some(e) if before(&e, &h) => e,
                _ => h,
            });
        }
        let inside = |k: &[u8]| end.as_deref().is_none_or(|e| !before(e, k));
        // The heads again, now that the tree is read, as far as the window goes: with the
        // core latch shared a writer may have changed the window meanwhile, and a writer's head
        // comes before its leaf change, so these cover every key the tree read shows changed
        // (or no longer shows, deleted). The first look only sized the window.
        let heads = match end.as_deref() {
            Some(e) if reverse => view.heads((Bound::Included(e), r.1), reverse, usize::MAX),
            Some(e) => view.heads((r.0, Bound::Included(e)), reverse, usize::MAX),
            None => view.heads(r, reverse, usize::MAX),
        };
        // The tree's pairs merged with the head keys, in scan order: a key without a head,
        // looked at after the tree was read, is seen as the tree has it (what `visible` would
        // say); a head key missing from the tree was deleted (or is being written).
        let mut hs = heads.into_iter().filter(|h| inside(h)).peekable();
        for (k, v) in tree.iter().filter(|(k, _)| inside(k)) {
            while let Some(h) = hs.next_if(|h| before(h, k)) {
                if let Some(r) = emit(view, out, limit, (&h, None)) {
                    return Some(r);
                }
            }
            let r = if hs.next_if(|h| h.as_slice() == k).is_some() {
                emit(view, out, limit, (k, Some(v)))
            } else if out.pair_count() >= limit {
                Some(Ok(()))
            } else {
                out.push_pair(k, v);
                None
            };
            if let Some(r) = r {
                return Some(r);
            }
        }
        for h in hs {
            if let Some(r) = emit(view, out, limit, (&h, None)) {
                return Some(r);
            }
        }
        if out.pair_count() >= limit {
            return Some(Ok(()));
        }
        if cut {
            // The page missed is read, and the scan goes on after the window's end.
            if end.is_some() {
                *resolved = end;
            }
            return None;
        }
        match end {
            Some(e) if out.pair_count() < limit => {
                *resolved = Some(e.clone());
                if reverse {
                    bounds.1 = Bound::Excluded(e);
                } else {
                    bounds.0 = Bound::Excluded(e);
                }
            }
            _ => return Some(Ok(())),
        }
    }
}

/// One key with a head in a snapshot scan's window (`current`: its version in the tree, if it
/// is there): the version the snapshot sees goes to `out`. `Some` ends the scan (`limit` pairs
/// given already, or an error).
fn emit<O: PairOut>(
    view: &mut impl SnapshotView,
    out: &mut O,
    limit: usize,
    (key, current): (&[u8], Option<&[u8]>),
) -> Option<Result<()>> {
    if out.pair_count() >= limit {
        return Some(Ok(()));
    }
    match view.visible(key, current.map(|v| v.to_vec())) {
        Ok(Some(v)) => out.push_pair(key, &v),
        Ok(None) => {}
        Err(e) => return Some(Err(e)),
    }
    None
}
