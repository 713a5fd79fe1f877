//! Range scans under the core latch held exclusive: the plain one, and a snapshot reader's,
//! which merges the tree with the version store's heads a window at a time.

use super::Core;
use crate::btree::tree as bt;
use crate::catalog::Tree;
use crate::cc::Access;
use crate::error::Result;
use crate::wal::record::TxnId;
use crate::wal::Wal;
use std::ops::Bound;

impl Core {
    /// Up to `limit` pairs of `tree` in `range` for `txn` (descending if `reverse`), locking the
    /// whole tree in shared mode first unless `locked` (a cursor that already did).
    #[allow(clippy::too_many_arguments)]
    pub fn scan(
        &mut self,
        wal: &mut Wal,
        txn: TxnId,
        tree: &Tree,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        limit: usize,
        locked: bool,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let snapshot = self.is_snapshot(txn);
        if locked || snapshot {
            self.checked(txn, tree)?;
            if !locked {
                self.stats.ops.add(1);
            }
        } else {
            self.access(txn, tree, None, Access::Read)?;
            self.stats.ops.add(1);
        }
        if limit == 0 {
            return Ok(Vec::new());
        }
        if snapshot {
            return self.scan_snapshot(wal, txn, tree, range, reverse, limit);
        }
        let mut out = Vec::new();
        let r = crate::ops::read(&mut self.cache, wal, |m| {
            bt::scan(m, tree.root, range.0, range.1, reverse, |k, v| {
                out.push((k.to_vec(), v.to_vec()));
                out.len() < limit
            })
        });
        self.health.guard(r)?;
        Ok(out)
    }

    /// [`Core::scan`] for a snapshot reader: the tree's pairs merged with the records whose
    /// version it may see differently (those with a head), each resolved to its version, a
    /// window at a time. A window takes up to `limit` heads and `limit` + that many tree pairs
    /// and resolves everything up to the nearer of their ends (past it, either may hold keys
    /// not yet read): at most as many tree keys as heads can be invisible, so windows continue
    /// until `limit` pairs are visible or the range is done.
    fn scan_snapshot(
        &mut self,
        wal: &mut Wal,
        txn: TxnId,
        tree: &Tree,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let window = limit.clamp(1, 1024);
        let mut bounds: (Bound<Vec<u8>>, Bound<Vec<u8>>) =
            (range.0.map(|k| k.to_vec()), range.1.map(|k| k.to_vec()));
        let before = |a: &[u8], b: &[u8]| if reverse { a > b } else { a < b };
        let mut out = Vec::new();
        loop {
            let r = (
                bounds.0.as_ref().map(|k| k.as_slice()),
                bounds.1.as_ref().map(|k| k.as_slice()),
            );
            let vs = self
                .versions
                .as_ref()
                .expect("a snapshot transaction has a store");
            let heads = vs.head_keys(tree.id, r, reverse, window);
            let heads_done = heads.len() < window;
            let want = window + heads.len();
            let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            let res = crate::ops::read(&mut self.cache, wal, |m| {
                bt::scan(m, tree.root, r.0, r.1, reverse, |k, v| {
                    pairs.push((k.to_vec(), v.to_vec()));
                    pairs.len() < want
                })
            });
            self.health.guard(res)?;
            let tree_done = pairs.len() < want;
            // The window ends at the nearer of the two last keys read (when more may follow).
            let mut end: Option<Vec<u8>> = None;
            if !tree_done {
                end = pairs.last().map(|p| p.0.clone());
            }
            if !heads_done {
                let h = heads.last().expect("a full window").clone();
                end = Some(match end {
                    Some(e) if before(&e, &h) => e,
                    _ => h,
                });
            }
            let inside = |k: &[u8]| end.as_deref().is_none_or(|e| !before(e, k));
            let mut merged: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
            let mut hs = heads.into_iter().filter(|h| inside(h)).peekable();
            for (k, v) in pairs.into_iter().filter(|p| inside(&p.0)) {
                while let Some(h) = hs.next_if(|h| before(h, &k)) {
                    merged.push((h, None));
                }
                hs.next_if(|h| *h == k);
                merged.push((k, Some(v)));
            }
            merged.extend(hs.map(|h| (h, None)));
            let vs = self
                .versions
                .as_mut()
                .expect("a snapshot transaction has a store");
            for (k, current) in merged {
                if out.len() >= limit {
                    return Ok(out);
                }
                // A head key missing from the tree was deleted (or is being written).
                let r = vs.visible(txn, tree.id, &k, current);
                if let Some(v) = self.health.guard(r)? {
                    out.push((k, v));
                }
            }
            match end {
                Some(e) if out.len() < limit => {
                    if reverse {
                        bounds.1 = Bound::Excluded(e);
                    } else {
                        bounds.0 = Bound::Excluded(e);
                    }
                }
                _ => return Ok(out),
            }
        }
    }
}
