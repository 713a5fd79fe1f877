//! The crash itself: what survives a power cut of a [`FaultDevice`] (which unflushed changes are
//! lost, which write is torn), undone on the inner device so it holds the surviving state.

use super::*;

impl<D: BlockDevice> FaultDevice<D> {
    /// Simulates the crash after a power cut (or anytime): decides which unflushed changes
    /// survive, restores the previous contents of the rest in the inner device (rebuilding the
    /// zones whose surviving state differs), flushes it, clears the journal, and powers the
    /// device back on with no power cut armed.
    pub fn crash(&mut self) -> CrashReport {
        let mut report = CrashReport {
            was_powered_off: self.is_powered_off(),
            unflushed: self.journal.len() as u64,
            cut_command: self.cut_here.take(),
            ..CrashReport::default()
        };
        let journal = std::mem::take(&mut self.journal);
        self.undo_ranges(&journal, &mut report);
        self.undo_zones(&journal, &mut report);
        self.zones_before.clear();
        if report.restored_bytes > 0 || report.zones_rebuilt > 0 {
            if let Err(err) = self.inner.flush() {
                report.restore_error.get_or_insert(err);
            }
        }
        self.shared.cut_at.store(NO_CUT, Ordering::SeqCst);
        *lock(&self.local.cut_at_kind) = None;
        self.shared.powered_off.store(false, Ordering::SeqCst);
        report
    }

    /// The crash for writes, trims and remap batches: newest to oldest, each survives or not;
    /// the previous contents of lost blocks are written back unless a newer surviving change
    /// covers them.
    fn undo_ranges(&mut self, journal: &[Change], report: &mut CrashReport) {
        let block = self.inner.block_bytes() as u64;
        // Blocks whose contents come from a newer surviving change.
        let mut settled: HashSet<u64> = HashSet::new();
        for (i, e) in journal.iter().rev().enumerate() {
            let Change::Ranges { kind, ranges } = e else {
                continue;
            };
            let lost = self.cfg.lose_unflushed && self.rng.random_bool(0.5);
            let single = match ranges.as_slice() {
                [(offset, prev)] => Some((*offset, prev.len() as u64 / block)),
                _ => None,
            };
            // Per range, per block: whether the change is durable there.
            let durable: Vec<Vec<bool>> = if lost {
                report.lost += 1;
                ranges
                    .iter()
                    .map(|r| vec![false; r.1.len() / block as usize])
                    .collect()
            } else if i == 0 && self.cfg.torn_writes && *kind == Kind::Write && single.is_some() {
                let (offset, blocks) = single.expect("one range");
                let mask = self.tear(blocks as usize);
                report.torn = Some(TornWrite {
                    offset,
                    len: blocks * block,
                    durable_blocks: mask.clone(),
                });
                vec![mask]
            } else if i == 0 && self.cfg.torn_writes && matches!(kind, Kind::Remap | Kind::Copy) {
                // The newest remap batch (or copy command) is atomic: it happened or it did not.
                let undone = self.rng.random_bool(0.5);
                if undone {
                    report.lost += 1;
                }
                ranges
                    .iter()
                    .map(|r| vec![!undone; r.1.len() / block as usize])
                    .collect()
            } else {
                ranges
                    .iter()
                    .map(|r| vec![true; r.1.len() / block as usize])
                    .collect()
            };
            // Decide every range of the entry before settling any (a batch's ranges may overlap
            // each other; all hold the contents from before the batch).
            let mut restore = Vec::new();
            for ((offset, prev), durable) in ranges.iter().zip(&durable) {
                let first = offset / block;
                let blocks = durable.len() as u64;
                let mut j = 0u64;
                while j < blocks {
                    if durable[j as usize] || settled.contains(&(first + j)) {
                        j += 1;
                        continue;
                    }
                    // A run of blocks to restore.
                    let start = j;
                    while j < blocks && !durable[j as usize] && !settled.contains(&(first + j)) {
                        j += 1;
                    }
                    restore.push((
                        offset + start * block,
                        &prev[(start * block) as usize..(j * block) as usize],
                    ));
                }
            }
            for ((offset, _), durable) in ranges.iter().zip(&durable) {
                let first = offset / block;
                for (j, &d) in durable.iter().enumerate() {
                    if d {
                        settled.insert(first + j as u64);
                    }
                }
            }
            for (at, bytes) in restore {
                match self.inner.write_at(at, bytes) {
                    Ok(()) => report.restored_bytes += bytes.len() as u64,
                    Err(err) => {
                        report.restore_error.get_or_insert(err);
                    }
                }
            }
        }
    }

    /// Which blocks of a torn write of `blocks` blocks are durable: a random prefix or a random
    /// subset, with equal probability.
    fn tear(&mut self, blocks: usize) -> Vec<bool> {
        if self.rng.random_bool(0.5) {
            let cut = self.rng.random_range(0..=blocks);
            (0..blocks).map(|b| b < cut).collect()
        } else {
            (0..blocks).map(|_| self.rng.random_bool(0.5)).collect()
        }
    }
}
