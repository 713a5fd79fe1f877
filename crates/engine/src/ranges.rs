//! Key-range locks: what a serializable scan holds instead of its whole tree in S. The
//! guarantee is next-key locking's (Mohan, ARIES/KVL, 1990): no phantom, no dirty read, and no
//! change under the scan's feet until its transaction ends; what differs is the bookkeeping: one
//! *claim* per scan, a key range that grows leaf by leaf, rather than a lock per key.
//!
//! A scan reports, under each leaf's latch before it lets go, how far it has read
//! ([`Reach`]). Before a claim grows over keys the scan read, the scan probes each for an X
//! lock of another transaction (an uncommitted insert or update: refused), and the tree's set
//! of uncommitted deletes for a key in the new extent (refused: its rollback would bring the
//! key back). While the scan goes on, its claim is *open*: it covers, besides its range, the
//! gap just past its last key, which a writer that inserts at the end of a leaf the scan has
//! left could otherwise fill unseen.
//!
//! A writer, holding the latch of the leaf it changes, asks [`RangeLocks::check`]:
//! - an update or a delete is refused if another transaction's claim covers the key; a delete
//!   is then recorded among the uncommitted deletes until its transaction ends;
//! - an insert is refused if a claim covers the key, or if it lands in an open claim's gap: its
//!   predecessor in its leaf is at or before the claim's last key and it is beyond it. An insert
//!   into an empty leaf, whose neighbours the leaf does not show, is refused by every open claim
//!   whose start it follows (rare, and only ever stricter).
//!
//! Why that is enough (a scan's visit and a writer's change of one leaf exclude each other by
//! the leaf's latch): a change made before the scan visits its leaf is seen by the scan's probe
//! (or found among the deletes); a change made after is checked against a claim that already
//! covers the leaf's keys the scan read, and the gap after the last of them. An insert before
//! the first key of a leaf the scan has not reached yet will be read when the scan gets there.
//! Writers look at [`RangeLocks::claims`] first, with no lock taken; a scan makes its claim
//! (empty) before it latches its first leaf, so a writer that saw no claim changed its leaf
//! before the scan could read it.
//!
//! A rollback is never refused, but it must not bring a deleted key back into an open claim's
//! gap beside the running scan, then end (its delete's record going): the scan, reading on in
//! the next leaf, would never meet the key. Beside others it asks
//! [`RangeLocks::insert_claimed`] and leaves such an undo to the exclusive rollback, which runs
//! when no scan does (`engine/rollback_shared.rs`).
//!
//! Writes with the core latch exclusive run when no scan does, so every claim is closed then:
//! only what a claim covers refuses them ([`Change::Put`]), whatever the key's neighbours.
//!
//! A claim is made (empty) when its scan begins, and lives, closed once the scan ends, until its
//! transaction ends; a cursor keeps one claim for all its batches.

use crate::btree::tree::Reach;
use crate::wal::record::TxnId;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// A write as its leaf shows it, for [`RangeLocks::check`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum Change<'a> {
    /// A new value of a key that is there.
    Update,
    /// A delete of a key (that is there, or may be).
    Delete,
    /// A put with the core latch exclusive, where the key may be new: no scan runs then, so
    /// every claim is closed and only what a claim covers refuses it.
    Put,
    /// A new key, with the keys just before and after it in its leaf (`None`: it goes first,
    /// or last, in its leaf).
    Insert {
        pred: Option<&'a [u8]>,
        succ: Option<&'a [u8]>,
    },
}

/// The key range one scan has read.
#[derive(Clone, Debug)]
struct Claim {
    txn: TxnId,
    id: u64,
    reverse: bool,
    /// The scan's range: the side it started from stays; the other moves as it reads.
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    /// The range's far bound (where a `Reach::Bound` takes the moving side).
    far: Bound<Vec<u8>>,
    /// Nothing read yet: the moving side means nothing.
    empty: bool,
    /// The scan is running and goes on past the moving side: the gap there is claimed too.
    /// Set by each report of the scan; cleared when it stops or ends.
    open: bool,
}

fn above_lo(lo: &Bound<Vec<u8>>, k: &[u8]) -> bool {
    match lo {
        Bound::Included(l) => k >= l.as_slice(),
        Bound::Excluded(l) => k > l.as_slice(),
        Bound::Unbounded => true,
    }
}

fn below_hi(hi: &Bound<Vec<u8>>, k: &[u8]) -> bool {
    match hi {
        Bound::Included(h) => k <= h.as_slice(),
        Bound::Excluded(h) => k < h.as_slice(),
        Bound::Unbounded => true,
    }
}

fn owned(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    b.map(<[u8]>::to_vec)
}

impl Claim {
    fn covers(&self, k: &[u8]) -> bool {
        !self.empty && above_lo(&self.lo, k) && below_hi(&self.hi, k)
    }

    /// Whether an insert of `k` between `pred` and `succ` (its neighbours in its leaf) must be
    /// refused.
    fn refuses_insert(&self, k: &[u8], pred: Option<&[u8]>, succ: Option<&[u8]>) -> bool {
        if self.covers(k) {
            return true;
        }
        if !self.open {
            return false;
        }
        let empty_leaf = pred.is_none() && succ.is_none();
        if !self.reverse {
            // Past the moving (upper) side, in the gap right after it.
            if !above_lo(&self.lo, k) {
                return false;
            }
            match pred {
                Some(p) if self.empty => !above_lo(&self.lo, p),
                Some(p) => below_hi(&self.hi, p),
                None => empty_leaf,
            }
        } else {
            if !below_hi(&self.hi, k) {
                return false;
            }
            match succ {
                Some(s) if self.empty => !below_hi(&self.hi, s),
                Some(s) => above_lo(&self.lo, s),
                None => empty_leaf,
            }
        }
    }

    /// The moving side `reach` takes this claim to, and whether it stays open; `None` if it
    /// does not move.
    fn edge(&self, reach: Reach<'_>) -> Option<(Bound<Vec<u8>>, bool)> {
        match reach {
            Reach::On(None) => None,
            Reach::On(Some(k)) => Some((Bound::Included(k.to_vec()), true)),
            Reach::Stop(k) => Some((Bound::Included(k.to_vec()), false)),
            // The tree's end in the scan's direction: nothing more up to the far bound either.
            Reach::Bound | Reach::All => Some((self.far.clone(), false)),
        }
    }

    /// The range this claim covers with its moving side at `edge`.
    fn with_edge<'a>(&'a self, edge: &'a Bound<Vec<u8>>) -> (Bound<&'a [u8]>, Bound<&'a [u8]>) {
        let (lo, hi) = if self.reverse {
            (edge, &self.hi)
        } else {
            (&self.lo, edge)
        };
        (
            lo.as_ref().map(|k| k.as_slice()),
            hi.as_ref().map(|k| k.as_slice()),
        )
    }

    /// Moves the moving side to `edge`, never back over what the claim covers: a cursor's batch
    /// run again (after a conflict it waited out, or a page it missed) reports keys behind the
    /// edge its first try reached; keeping them claimed only refuses more.
    fn set_edge(&mut self, edge: Bound<Vec<u8>>, open: bool) {
        self.open = open;
        let (side, reverse) = if self.reverse {
            (&mut self.lo, true)
        } else {
            (&mut self.hi, false)
        };
        if self.empty || reaches(&edge, side, reverse) {
            *side = edge;
        }
        self.empty = false;
    }
}

/// Whether moving side `new` reaches at least as far as `old`: further up for an upper side,
/// further down for a lower one (`reverse`).
fn reaches(new: &Bound<Vec<u8>>, old: &Bound<Vec<u8>>, reverse: bool) -> bool {
    use std::cmp::Ordering::{Greater, Less};
    let beyond = if reverse { Less } else { Greater };
    match (new, old) {
        (Bound::Unbounded, _) => true,
        (_, Bound::Unbounded) => false,
        // An excluded side reaches past an included one at the same key only if beyond it.
        (Bound::Excluded(n), Bound::Included(o)) => n.as_slice().cmp(o) == beyond,
        (Bound::Included(n) | Bound::Excluded(n), Bound::Included(o) | Bound::Excluded(o)) => {
            n.as_slice().cmp(o) != beyond.reverse()
        }
    }
}

/// Whether a range holds any key (`BTreeMap::range` refuses the others).
fn ordered(b: (Bound<&[u8]>, Bound<&[u8]>)) -> bool {
    match b {
        (Bound::Included(l), Bound::Included(h)) => l <= h,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Included(h) | Bound::Excluded(h)) => l < h,
        _ => true,
    }
}

#[derive(Default)]
struct Inner {
    claims: Vec<Claim>,
    /// Keys deleted by transactions that have not ended, and by whom.
    deleted: BTreeMap<Vec<u8>, TxnId>,
    next_id: u64,
}

/// One tree's key-range locks (kept in the tree's gate, `locks.rs`).
#[derive(Default)]
pub(crate) struct RangeLocks {
    /// Claims held, plus scans begun that have not made theirs yet: writers look here first.
    claims: AtomicU64,
    /// Entries of `Inner::deleted`.
    deleted: AtomicU64,
    inner: Mutex<Inner>,
}

/// One scan's claim, as the scan keeps it (see [`RangeLocks::reach`]).
#[derive(Debug)]
pub(crate) struct ScanClaim {
    id: u64,
    /// The scanning transaction writes the tree itself (so the tree's writer count includes
    /// it: see `cc.rs`).
    pub own_ix: bool,
}

impl RangeLocks {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        crate::sync::lock(&self.inner)
    }

    /// A scan of `range` (descending if `reverse`) by `txn` begins: its claim, empty, made
    /// before the scan latches any leaf (see the module notes). A cursor keeps one claim for
    /// all its batches.
    pub fn begin(
        &self,
        txn: TxnId,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
    ) -> ScanClaim {
        let (lo, hi) = (owned(range.0), owned(range.1));
        let far = if reverse { lo.clone() } else { hi.clone() };
        let mut g = self.inner();
        let id = g.next_id;
        g.next_id += 1;
        g.claims.push(Claim {
            txn,
            id,
            reverse,
            lo,
            hi,
            far,
            empty: true,
            // Opened by the scan's first report (a scan not running claims no gap).
            open: false,
        });
        self.claims.fetch_add(1, Ordering::SeqCst);
        ScanClaim { id, own_ix: false }
    }

    /// Whether any claim is held (a look with no lock).
    pub fn any(&self) -> bool {
        self.claims.load(Ordering::SeqCst) > 0
    }

    /// Whether another transaction than `txn` holds a claim.
    pub fn others(&self, txn: TxnId) -> bool {
        if self.claims.load(Ordering::SeqCst) == 0 {
            return false;
        }
        self.inner().claims.iter().any(|c| c.txn != txn)
    }

    /// The scan of `txn` reached `reach` (under the latch of the leaf it read): grows its
    /// claim, unless another transaction's uncommitted delete lies in the claim grown (`Err`
    /// with the key; the claim stays as it was).
    pub fn reach(
        &self,
        txn: TxnId,
        claim: &ScanClaim,
        reach: Reach<'_>,
    ) -> std::result::Result<(), Vec<u8>> {
        let deletes = self.deleted.load(Ordering::SeqCst) > 0;
        let mut g = self.inner();
        let Inner {
            claims, deleted, ..
        } = &mut *g;
        let c = claims
            .iter_mut()
            .find(|c| c.id == claim.id)
            .expect("a claim lives until its transaction ends");
        let Some((edge, open)) = c.edge(reach) else {
            // Nothing read in that leaf: the edge stays, and the gap past it is claimed.
            c.open = true;
            return Ok(());
        };
        if deletes {
            let b = c.with_edge(&edge);
            if ordered(b) {
                if let Some((k, _)) = deleted.range::<[u8], _>(b).find(|(_, t)| **t != txn) {
                    return Err(k.clone());
                }
            }
        }
        c.set_edge(edge, open);
        Ok(())
    }

    /// The scan (or a cursor's batch) ended, however: its claim stops growing, closed at the
    /// last key it read; a cursor's next batch opens it again.
    pub fn end_scan(&self, claim: &ScanClaim) {
        let mut g = self.inner();
        if let Some(c) = g.claims.iter_mut().find(|c| c.id == claim.id) {
            c.open = false;
        }
    }

    /// Whether `txn` may make `change` to `key` (its leaf latched): `Err` with a description
    /// of what refuses it. A delete allowed is recorded until `txn` ends.
    pub fn check(
        &self,
        txn: TxnId,
        key: &[u8],
        change: Change<'_>,
    ) -> std::result::Result<(), &'static str> {
        let delete = matches!(change, Change::Delete);
        if !delete && self.claims.load(Ordering::SeqCst) == 0 {
            return Ok(());
        }
        let mut g = self.inner();
        let refused = g
            .claims
            .iter()
            .filter(|c| c.txn != txn)
            .any(|c| match change {
                Change::Update | Change::Delete => c.covers(key),
                Change::Put => {
                    debug_assert!(!c.open, "a claim open while the core latch is exclusive");
                    c.covers(key)
                }
                Change::Insert { pred, succ } => c.refuses_insert(key, pred, succ),
            });
        if refused {
            return Err("a key range another transaction scanned");
        }
        if delete {
            let prev = g.deleted.insert(key.to_vec(), txn);
            debug_assert!(
                prev.is_none_or(|t| t == txn),
                "two uncommitted deletes of a key"
            );
            if prev.is_none() {
                self.deleted.fetch_add(1, Ordering::SeqCst);
            }
        }
        Ok(())
    }

    /// Whether another transaction's claim covers `key`, or a running scan's gap takes it, were
    /// it inserted between `pred` and `succ` in its leaf (latched): the check of
    /// [`RangeLocks::check`] for an insert, asked by a rollback that brings a deleted key back
    /// (it is not refused, but must not make it beside such a scan: see
    /// `engine/rollback_shared.rs`). Nothing is recorded.
    pub fn insert_claimed(
        &self,
        txn: TxnId,
        key: &[u8],
        (pred, succ): (Option<&[u8]>, Option<&[u8]>),
    ) -> bool {
        if self.claims.load(Ordering::SeqCst) == 0 {
            return false;
        }
        self.inner()
            .claims
            .iter()
            .any(|c| c.txn != txn && c.refuses_insert(key, pred, succ))
    }

    /// `txn` ended: its claims and deletes go.
    pub fn release(&self, txn: TxnId) {
        if self.claims.load(Ordering::SeqCst) == 0 && self.deleted.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut g = self.inner();
        let before = g.claims.len();
        g.claims.retain(|c| c.txn != txn);
        let gone = (before - g.claims.len()) as u64;
        if gone > 0 {
            self.claims.fetch_sub(gone, Ordering::SeqCst);
        }
        let before = g.deleted.len();
        g.deleted.retain(|_, t| *t != txn);
        let gone = (before - g.deleted.len()) as u64;
        if gone > 0 {
            self.deleted.fetch_sub(gone, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inc(k: &[u8]) -> Bound<&[u8]> {
        Bound::Included(k)
    }

    #[test]
    fn a_key_put_back_is_claimed_by_a_running_scans_range_and_gap_only() {
        let r = RangeLocks::default();
        assert!(!r.insert_claimed(2, b"e", (Some(b"d"), None)), "no claim");
        let c = r.begin(1, (inc(b"b"), Bound::Excluded(&b"m"[..])), false);
        r.reach(1, &c, Reach::On(Some(b"d"))).unwrap();
        // Read up to "d", going on: "c" is in its range, "e" (last in its leaf, after "d") in
        // the gap it will not read, "e" before "f" in a leaf not read yet is not.
        assert!(r.insert_claimed(2, b"c", (Some(b"b"), Some(b"d"))));
        assert!(r.insert_claimed(2, b"e", (Some(b"d"), None)));
        assert!(!r.insert_claimed(2, b"e", (None, Some(b"f"))));
        assert!(
            !r.insert_claimed(1, b"e", (Some(b"d"), None)),
            "its own scan"
        );
        // Stopped (a cursor between batches): it goes on after "d" and reads "e" then.
        r.end_scan(&c);
        assert!(!r.insert_claimed(2, b"e", (Some(b"d"), None)));
        assert!(r.insert_claimed(2, b"c", (Some(b"b"), Some(b"d"))));
        // Nothing is recorded: a delete check after finds no delete of another.
        r.release(1);
        assert!(r.check(3, b"e", Change::Delete).is_ok());
    }

    #[test]
    fn a_claim_grows_and_refuses_writers_in_it_and_its_gap() {
        let r = RangeLocks::default();
        let range = (inc(b"b"), Bound::Excluded(&b"m"[..]));
        let c = r.begin(1, range, false);
        // Nothing read yet: an insert at the end of the first leaf, after keys below "b", is in
        // the gap the scan is about to read.
        r.reach(1, &c, Reach::On(None)).unwrap();
        let ins = |pred, succ| Change::Insert { pred, succ };
        assert!(r.check(2, b"c", ins(Some(&b"a"[..]), None)).is_err());
        assert!(
            r.check(2, b"a0", ins(Some(&b"a"[..]), None)).is_ok(),
            "before the range"
        );
        r.reach(1, &c, Reach::On(Some(b"d"))).unwrap();
        assert!(r.check(2, b"c", Change::Update).is_err());
        assert!(r.check(2, b"e", Change::Update).is_ok(), "not read yet");
        assert!(
            r.check(2, b"e", ins(Some(&b"d"[..]), None)).is_err(),
            "the open gap"
        );
        assert!(
            r.check(2, b"f", ins(Some(&b"e"[..]), None)).is_ok(),
            "past the gap"
        );
        assert!(
            r.check(2, b"f", ins(None, Some(&b"g"[..]))).is_ok(),
            "a leaf not read yet"
        );
        assert!(r.check(1, b"c", Change::Update).is_ok(), "its own claim");
        // Stopped at "d" (its limit): the gap closes.
        r.reach(1, &c, Reach::Stop(b"d")).unwrap();
        assert!(r.check(2, b"e", ins(Some(&b"d"[..]), None)).is_ok());
        r.end_scan(&c);
        assert!(r.others(2) && !r.others(1));
        r.release(1);
        assert!(!r.others(2));
        assert!(r.check(2, b"c", Change::Update).is_ok());
    }

    #[test]
    fn deletes_refuse_and_are_refused() {
        let r = RangeLocks::default();
        r.check(2, b"k", Change::Delete).unwrap();
        let range = (Bound::Unbounded, Bound::Unbounded);
        let c = r.begin(1, range, false);
        assert_eq!(r.reach(1, &c, Reach::On(Some(b"z"))), Err(b"k".to_vec()));
        r.end_scan(&c);
        r.release(2);
        let c = r.begin(1, range, false);
        r.reach(1, &c, Reach::All).unwrap();
        r.end_scan(&c);
        assert!(r.check(2, b"k", Change::Delete).is_err());
        assert!(
            r.check(2, b"k", ins_none()).is_err(),
            "the whole tree is claimed"
        );
        r.release(1);
        assert!(r.check(2, b"k", Change::Delete).is_ok());
    }

    #[test]
    fn a_moving_side_reaches_by_its_direction() {
        let (i, x) = (
            |k: &[u8]| Bound::Included(k.to_vec()),
            |k: &[u8]| Bound::Excluded(k.to_vec()),
        );
        // Upper sides.
        assert!(reaches(&i(b"b"), &i(b"a"), false) && reaches(&i(b"a"), &i(b"a"), false));
        assert!(reaches(&i(b"a"), &x(b"a"), false) && !reaches(&x(b"a"), &i(b"a"), false));
        assert!(!reaches(&i(b"a"), &i(b"b"), false));
        assert!(reaches(&Bound::Unbounded, &i(b"z"), false));
        assert!(!reaches(&i(b"z"), &Bound::Unbounded, false));
        // Lower sides.
        assert!(reaches(&i(b"a"), &i(b"b"), true) && !reaches(&i(b"b"), &i(b"a"), true));
        assert!(reaches(&i(b"a"), &x(b"a"), true) && !reaches(&x(b"a"), &i(b"a"), true));
        assert!(reaches(&x(b"a"), &i(b"b"), true));
    }

    fn ins_none() -> Change<'static> {
        Change::Insert {
            pred: None,
            succ: None,
        }
    }

    #[test]
    fn a_descending_claim_mirrors_an_ascending_one() {
        let r = RangeLocks::default();
        let range = (inc(b"b"), inc(b"m"));
        let c = r.begin(1, range, true);
        r.reach(1, &c, Reach::On(Some(b"h"))).unwrap();
        let ins = |pred, succ| Change::Insert { pred, succ };
        assert!(r.check(2, b"i", Change::Update).is_err());
        assert!(
            r.check(2, b"g", ins(None, Some(&b"h"[..]))).is_err(),
            "the open gap"
        );
        assert!(r
            .check(2, b"g", ins(Some(&b"f"[..]), Some(&b"g1"[..])))
            .is_ok());
        assert!(
            r.check(2, b"n", ins(Some(&b"m"[..]), None)).is_ok(),
            "past the range"
        );
        r.reach(1, &c, Reach::Bound).unwrap();
        assert!(
            r.check(2, b"b", Change::Update).is_err(),
            "down to the start"
        );
        assert!(r.check(2, b"a", Change::Update).is_ok());
        r.end_scan(&c);
        // An empty leaf does not show where its key goes: every open claim refuses.
        let c = r.begin(3, (inc(b"x"), Bound::Unbounded), false);
        r.reach(3, &c, Reach::On(None)).unwrap();
        assert!(r.check(2, b"y", ins_none()).is_err());
        assert!(r.check(2, b"w", ins_none()).is_ok(), "before its start");
        r.end_scan(&c);
        assert!(r.check(2, b"y", ins_none()).is_ok(), "closed");
    }
}
