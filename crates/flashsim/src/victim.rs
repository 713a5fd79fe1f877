//! GC victim bookkeeping: which sealed erase units exist, how many valid units each holds, and how
//! each policy picks one. Greedy is O(1) per update through valid-count buckets (intrusive doubly
//! linked lists); FIFO keeps seal order; random, d-choices and cost-benefit sample an indexable set.

use crate::config::GcPolicy;
use rand::Rng;
use rand_pcg::Pcg64Mcg;
use std::collections::VecDeque;

const NIL: u32 = u32::MAX;

/// Sealed (fully written, not yet collected) erase units of one lane.
pub(crate) struct LaneVictims {
    /// `head[v]`: first sealed EU with exactly `v` valid units.
    head: Vec<u32>,
    /// Lowest bucket that may be non-empty.
    min_hint: usize,
    /// Indexable set of sealed EUs (for random sampling and cost-benefit scans).
    set: Vec<u32>,
    /// Seal order (for FIFO); entries already collected are skipped lazily.
    fifo: VecDeque<u32>,
}

/// Victim bookkeeping for every lane of a device.
pub(crate) struct Victims {
    lanes: Vec<LaneVictims>,
    next: Vec<u32>,
    prev: Vec<u32>,
    /// Position of an EU in its lane's `set`, or NIL when not sealed.
    pos: Vec<u32>,
    /// Sequence number at sealing (age for cost-benefit).
    seal_seq: Vec<u64>,
    seq: u64,
    eu_units: u32,
}

impl Victims {
    pub fn new(erase_units: u32, lanes: u32, eu_units: u32) -> Self {
        let n = erase_units as usize;
        Victims {
            lanes: (0..lanes)
                .map(|_| LaneVictims {
                    head: vec![NIL; eu_units as usize + 1],
                    min_hint: 0,
                    set: Vec::new(),
                    fifo: VecDeque::new(),
                })
                .collect(),
            next: vec![NIL; n],
            prev: vec![NIL; n],
            pos: vec![NIL; n],
            seal_seq: vec![0; n],
            seq: 0,
            eu_units,
        }
    }

    /// Number of sealed EUs in a lane.
    pub fn sealed(&self, lane: u32) -> usize {
        self.lanes[lane as usize].set.len()
    }

    pub fn is_sealed(&self, eu: u32) -> bool {
        self.pos[eu as usize] != NIL
    }

    /// Adds a freshly sealed EU holding `valid` valid units.
    pub fn insert(&mut self, lane: u32, eu: u32, valid: u32) {
        debug_assert!(!self.is_sealed(eu));
        let l = &mut self.lanes[lane as usize];
        self.pos[eu as usize] = l.set.len() as u32;
        l.set.push(eu);
        l.fifo.push_back(eu);
        self.seq += 1;
        self.seal_seq[eu as usize] = self.seq;
        self.link(lane, eu, valid);
    }

    #[inline(always)]
    fn link(&mut self, lane: u32, eu: u32, valid: u32) {
        let l = &mut self.lanes[lane as usize];
        let h = l.head[valid as usize];
        self.next[eu as usize] = h;
        self.prev[eu as usize] = NIL;
        if h != NIL {
            self.prev[h as usize] = eu;
        }
        l.head[valid as usize] = eu;
        if (valid as usize) < l.min_hint {
            l.min_hint = valid as usize;
        }
    }

    #[inline(always)]
    fn unlink(&mut self, lane: u32, eu: u32, valid: u32) {
        let (n, p) = (self.next[eu as usize], self.prev[eu as usize]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.lanes[lane as usize].head[valid as usize] = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        }
    }

    /// A sealed EU lost one valid unit (its count went from `valid + 1` to `valid`): `unlink`
    /// from bucket `valid + 1`, then `link` into bucket `valid`, fused (this runs once per
    /// overwrite).
    #[inline(always)]
    pub fn decrement(&mut self, lane: u32, eu: u32, valid: u32) {
        let (e, v) = (eu as usize, valid as usize);
        debug_assert!(e < self.next.len() && self.pos[e] != NIL);
        debug_assert!(v < self.eu_units as usize && (lane as usize) < self.lanes.len());
        // SAFETY: `eu` is a sealed erase unit, so it indexes `next` and `prev`, whose entries
        // (and the buckets' heads) are NIL or erase units; `lane` is its lane; a sealed unit
        // held `valid + 1 <= eu_units` valid units, and `head` has `eu_units + 1` buckets.
        unsafe {
            let next = self.next.as_mut_ptr();
            let prev = self.prev.as_mut_ptr();
            let l = self.lanes.get_unchecked_mut(lane as usize);
            let head = l.head.as_mut_ptr();
            let (n, p) = (*next.add(e), *prev.add(e));
            if p != NIL {
                *next.add(p as usize) = n;
            } else {
                *head.add(v + 1) = n;
            }
            if n != NIL {
                *prev.add(n as usize) = p;
            }
            let h = *head.add(v);
            *next.add(e) = h;
            *prev.add(e) = NIL;
            if h != NIL {
                *prev.add(h as usize) = eu;
            }
            *head.add(v) = eu;
            if v < l.min_hint {
                l.min_hint = v;
            }
        }
    }

    /// Removes a sealed EU (it was chosen as victim).
    pub fn remove(&mut self, lane: u32, eu: u32, valid: u32) {
        self.unlink(lane, eu, valid);
        let l = &mut self.lanes[lane as usize];
        let p = self.pos[eu as usize] as usize;
        let last = *l.set.last().expect("sealed set not empty");
        l.set.swap_remove(p);
        if last != eu {
            self.pos[last as usize] = p as u32;
        }
        self.pos[eu as usize] = NIL;
    }

    /// Picks a victim in `lane` without removing it. `valid_of` gives an EU's valid count.
    pub fn pick(
        &mut self,
        lane: u32,
        policy: GcPolicy,
        rng: &mut Pcg64Mcg,
        valid_of: impl Fn(u32) -> u32,
    ) -> Option<u32> {
        if self.lanes[lane as usize].set.is_empty() {
            return None;
        }
        match policy {
            GcPolicy::Greedy => {
                let l = &mut self.lanes[lane as usize];
                let mut v = l.min_hint;
                while v <= self.eu_units as usize {
                    if l.head[v] != NIL {
                        l.min_hint = v;
                        return Some(l.head[v]);
                    }
                    v += 1;
                }
                None
            }
            GcPolicy::Fifo => {
                let l = &mut self.lanes[lane as usize];
                while let Some(&eu) = l.fifo.front() {
                    if self.pos[eu as usize] != NIL {
                        return Some(eu);
                    }
                    l.fifo.pop_front();
                }
                None
            }
            GcPolicy::Random => {
                let set = &self.lanes[lane as usize].set;
                Some(set[rng.random_range(0..set.len())])
            }
            GcPolicy::DChoices { d } => {
                let set = &self.lanes[lane as usize].set;
                let mut best = NIL;
                let mut best_valid = u32::MAX;
                for _ in 0..d {
                    let eu = set[rng.random_range(0..set.len())];
                    let v = valid_of(eu);
                    if v < best_valid {
                        best = eu;
                        best_valid = v;
                    }
                }
                Some(best)
            }
            GcPolicy::CostBenefit => {
                let set = &self.lanes[lane as usize].set;
                let units = self.eu_units as f64;
                let mut best = NIL;
                let mut best_score = f64::NEG_INFINITY;
                for &eu in set {
                    let u = valid_of(eu) as f64 / units;
                    let age = (self.seq - self.seal_seq[eu as usize] + 1) as f64;
                    let score = if u == 0.0 {
                        f64::INFINITY
                    } else {
                        age * (1.0 - u) / (2.0 * u)
                    };
                    // Ties go to the lower EU number so the choice is deterministic.
                    if score > best_score || (score == best_score && eu < best) {
                        best = eu;
                        best_score = score;
                    }
                }
                Some(best)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn greedy_picks_fewest_valid_and_tracks_decrements() {
        let mut v = Victims::new(8, 1, 16);
        let mut valid = [16u32, 10, 12, 16, 0, 0, 0, 0];
        for eu in 0..4 {
            v.insert(0, eu, valid[eu as usize]);
        }
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        assert_eq!(
            v.pick(0, GcPolicy::Greedy, &mut rng, |e| valid[e as usize]),
            Some(1)
        );
        for _ in 0..5 {
            valid[2] -= 1;
            v.decrement(0, 2, valid[2]);
        }
        assert_eq!(
            v.pick(0, GcPolicy::Greedy, &mut rng, |e| valid[e as usize]),
            Some(2)
        );
        v.remove(0, 2, valid[2]);
        assert_eq!(
            v.pick(0, GcPolicy::Greedy, &mut rng, |e| valid[e as usize]),
            Some(1)
        );
        assert_eq!(v.sealed(0), 3);
        assert_eq!(
            v.pick(0, GcPolicy::Fifo, &mut rng, |e| valid[e as usize]),
            Some(0)
        );
        v.remove(0, 0, valid[0]);
        assert_eq!(
            v.pick(0, GcPolicy::Fifo, &mut rng, |e| valid[e as usize]),
            Some(1)
        );
    }
}
