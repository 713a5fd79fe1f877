//! The NoWA model (paper 002 sections 5.3-5.4): which of the data device's GC units hold live data.
//!
//! A conventional SSD fills its erase units (superblocks) with host writes in the order they
//! arrive. The engine is the only writer of its data device, so it knows that order: the
//! *stream position* counts every byte it has written since the device was formatted, and the
//! device GC unit `k` holds stream bytes `[k * unit, (k + 1) * unit)`. Each unit is an *active
//! group* in the paper's terms: the zones (and metadata areas) written while it was open. The
//! model records, per owner (a DB zone or a metadata area), the units it has bytes in, and per
//! unit, its owners. When an owner's bytes all die (a zone is trimmed after DB GC, a snapshot slot
//! is rewritten), it leaves its units; a unit with no owner left is fully invalid inside the SSD,
//! so the SSD's GC can erase it without copying anything.
//!
//! NoWA keeps the number of *live* units (with at least one owner) below the number of units the
//! device's logical capacity holds: the SSD has more physical units than that (its over-
//! provisioning), so whenever it needs to garbage-collect it finds a unit that is entirely
//! invalid and copies nothing: SSD WAF = 1. When the count reaches the limit because owners of a
//! unit died unevenly (frequency imbalance, Figure 8), the engine issues *compensation writes*:
//! it relocates the remaining live zones of the cheapest complete unit (Figure 10).

use std::collections::{BTreeMap, HashMap};

/// Who wrote bytes into a device GC unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    /// A DB zone (its current incarnation: reclaiming the zone kills it).
    Zone(u32),
    /// A metadata area: 0 and 1 the snapshot slots, 2 the device header.
    Meta(u8),
}

/// Units an owner may list in a snapshot (older ones are dropped: the model is then approximate).
pub const MAX_PIECES: usize = 8;

#[derive(Clone, Debug, Default)]
pub struct Groups {
    /// The device GC unit in bytes.
    pub unit: u64,
    /// Bytes written to the device since it was formatted.
    pub pos: u64,
    /// Live units and their owners.
    owners: BTreeMap<u64, Vec<Owner>>,
    /// Units each owner has bytes in.
    pieces: HashMap<Owner, Vec<u64>>,
}

impl Groups {
    pub fn new(unit: u64) -> Groups {
        Groups {
            unit: unit.max(4096),
            ..Groups::default()
        }
    }

    /// Records `len` bytes written by `owner` at the current stream position.
    pub fn write(&mut self, owner: Owner, len: u64) {
        if len == 0 {
            return;
        }
        let first = self.pos / self.unit;
        let last = (self.pos + len - 1) / self.unit;
        for g in first..=last {
            self.add_piece(owner, g);
        }
        self.pos += len;
    }

    fn add_piece(&mut self, owner: Owner, g: u64) {
        let list = self.pieces.entry(owner).or_default();
        if list.contains(&g) {
            return;
        }
        list.push(g);
        self.owners.entry(g).or_default().push(owner);
    }

    /// All bytes of `owner` are dead (zone trimmed or reset, metadata slot about to be rewritten).
    pub fn kill(&mut self, owner: Owner) {
        if let Some(list) = self.pieces.remove(&owner) {
            for g in list {
                if let Some(o) = self.owners.get_mut(&g) {
                    o.retain(|&x| x != owner);
                    if o.is_empty() {
                        self.owners.remove(&g);
                    }
                }
            }
        }
    }

    /// Units with live data (the one being filled included).
    pub fn live(&self) -> usize {
        self.owners.len()
    }

    /// Complete units (the stream has moved past them) that still hold live data, with owners.
    pub fn complete_live(&self) -> impl Iterator<Item = (u64, &[Owner])> {
        let current = self.pos / self.unit;
        self.owners
            .range(..current)
            .map(|(&g, o)| (g, o.as_slice()))
    }

    /// Units `owner` has bytes in (newest last).
    pub fn pieces_of(&self, owner: Owner) -> &[u64] {
        self.pieces.get(&owner).map_or(&[], |v| v.as_slice())
    }

    /// Restores an owner's units from a snapshot.
    pub fn restore(&mut self, owner: Owner, units: &[u64]) {
        for &g in units {
            self.add_piece(owner, g);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_die_with_their_last_owner() {
        let mut g = Groups::new(4096 * 4);
        g.write(Owner::Zone(0), 4096 * 2);
        g.write(Owner::Zone(1), 4096 * 3); // spans units 0 and 1
        g.write(Owner::Zone(2), 4096 * 3); // unit 1, ends at the end of unit 1
        assert_eq!(g.live(), 2);
        assert_eq!(g.pieces_of(Owner::Zone(1)), &[0, 1]);
        g.kill(Owner::Zone(0));
        assert_eq!(g.live(), 2);
        g.kill(Owner::Zone(1));
        assert_eq!(g.live(), 1, "unit 0 has no owner left");
        let complete: Vec<u64> = g.complete_live().map(|(u, _)| u).collect();
        assert_eq!(complete, vec![1]);
        g.kill(Owner::Zone(2));
        assert_eq!(g.live(), 0);
    }
}
