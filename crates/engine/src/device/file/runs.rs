//! Copies through memory, several ranges to one read.
//!
//! Where the filesystem cannot clone (ext4, or any range not aligned to its block), a remap is a
//! read and a write per range, and so is every copy command. A journal checkpoint moves every
//! journaled page home in journal order, so the sources of consecutive ranges usually follow
//! each other on the device: one read of the stretch they span (gaps of at most [`MAX_GAP`]
//! included) then serves all of them, and each range costs one write instead of a read and a
//! write. The result is the same as copying range by range, in order: a range joins a run only
//! if no range of the run writes into the stretch the run reads, so nothing the run reads is
//! changed by the run before it is read.

use super::{CopyOp, DeviceError, FileDevice, RemapMode, RemapOp, BOUNCE_MAX_BYTES};
use std::os::unix::fs::FileExt;

/// Bytes between two sources that one read still spans (read and not used).
pub(super) const MAX_GAP: u64 = 16 << 10;

/// One range to copy: `len` bytes from `src` to `dst`, the source punched after (a remap's move).
#[derive(Clone, Copy, Debug)]
pub(super) struct Piece {
    pub src: u64,
    pub dst: u64,
    pub len: u64,
    pub punch: bool,
}

impl From<&RemapOp> for Piece {
    /// A remap done as a copy: a move punches its source after.
    fn from(op: &RemapOp) -> Piece {
        Piece {
            src: op.src,
            dst: op.dst,
            len: op.len,
            punch: op.mode == RemapMode::Move,
        }
    }
}

impl From<&CopyOp> for Piece {
    fn from(op: &CopyOp) -> Piece {
        Piece {
            src: op.src,
            dst: op.dst,
            len: op.len,
            punch: false,
        }
    }
}

fn overlaps(a: u64, a_len: u64, b: u64, b_len: u64) -> bool {
    a < b + b_len && b < a + a_len
}

/// How many of `pieces`, from the first, one read serves (at least one; pieces of no length
/// are taken along).
pub(super) fn run_len(pieces: &[Piece]) -> usize {
    let Some(first) = pieces.first() else {
        return 0;
    };
    let start = first.src;
    let mut end = first.src + first.len;
    let mut n = 1;
    if overlaps(first.dst, first.len, start, end - start) {
        return 1;
    }
    for p in &pieces[1..] {
        if p.len > 0 {
            let new_end = p.src + p.len;
            let follows = p.src >= end && p.src - end <= MAX_GAP;
            if !follows || new_end - start > BOUNCE_MAX_BYTES as u64 {
                break;
            }
            // Nothing the run writes may fall in what it reads.
            let read = (start, new_end - start);
            let writes_read = pieces[..=n]
                .iter()
                .any(|q| q.len > 0 && overlaps(q.dst, q.len, read.0, read.1));
            if writes_read {
                break;
            }
            end = new_end;
        }
        n += 1;
    }
    n
}

impl FileDevice {
    /// Copies `pieces` through memory, in order, one read for each run of them ([`run_len`]),
    /// adding to `copied` the bytes of each run written (also when a later run fails).
    pub(super) fn copy_pieces(
        &mut self,
        pieces: &[Piece],
        copied: &mut u64,
    ) -> Result<(), DeviceError> {
        let mut i = 0;
        while i < pieces.len() {
            let n = run_len(&pieces[i..]);
            self.copy_run(&pieces[i..i + n], copied)?;
            i += n;
        }
        Ok(())
    }

    /// One run: one read of the stretch its sources span (into the device's bounce buffer:
    /// a run is at most its size), then each piece's write (and punch).
    fn copy_run(&mut self, run: &[Piece], copied: &mut u64) -> Result<(), DeviceError> {
        let live: Vec<&Piece> = run.iter().filter(|p| p.len > 0).collect();
        let (Some(first), Some(last)) = (live.first(), live.last()) else {
            return Ok(());
        };
        if live.len() == 1 {
            let p = *first;
            self.copy_through(p.src, p.dst, p.len)?;
            *copied += p.len;
            if p.punch {
                self.punch(p.src, p.len)?;
            }
            return Ok(());
        }
        let start = first.src;
        let span = (last.src + last.len - start) as usize;
        debug_assert!(
            span <= BOUNCE_MAX_BYTES,
            "a run reads at most the bounce buffer"
        );
        let mut buf = self.take_bounce(span);
        let r = self.write_run(&live, start, &mut buf.as_mut_slice()[..span], copied);
        self.bounce = Some(buf);
        r
    }

    /// Reads `b.len()` bytes at `start` into `b`, then writes each of `live` from there, side
    /// by side ([`FileDevice::write_copies`]).
    fn write_run(
        &mut self,
        live: &[&Piece],
        start: u64,
        b: &mut [u8],
        copied: &mut u64,
    ) -> Result<(), DeviceError> {
        self.file
            .read_exact_at(b, start)
            .map_err(|e| super::io_err(&self.path, "read", e))?;
        let writes: Vec<(u64, &[u8])> = live
            .iter()
            .map(|p| {
                let at = (p.src - start) as usize;
                (p.dst, &b[at..at + p.len as usize])
            })
            .collect();
        self.write_copies(&writes)?;
        // The run's sources are punched after all its writes: no piece of a run writes into
        // what the run reads (`run_len`).
        for p in live {
            *copied += p.len;
            if p.punch {
                self.punch(p.src, p.len)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(src: u64, dst: u64, len: u64) -> Piece {
        Piece {
            src,
            dst,
            len,
            punch: false,
        }
    }

    #[test]
    fn runs_follow_sources_and_never_read_what_they_write() {
        let k = 4096;
        // Sources one after another (and one gap of 8 KiB): one run.
        let p = [
            piece(0, 100 * k, k),
            piece(k, 200 * k, 2 * k),
            piece(5 * k, 300 * k, k),
        ];
        assert_eq!(run_len(&p), 3);
        // A gap beyond MAX_GAP, or a source behind the last: a new run.
        let p = [piece(0, 100 * k, k), piece(k + MAX_GAP + k, 200 * k, k)];
        assert_eq!(run_len(&p), 1);
        let p = [piece(4 * k, 100 * k, k), piece(0, 200 * k, k)];
        assert_eq!(run_len(&p), 1);
        // A piece writing into what the run reads ends it before that piece.
        let p = [
            piece(0, 100 * k, k),
            piece(k, 200 * k, k),
            piece(2 * k, 0, k),
        ];
        assert_eq!(run_len(&p), 2);
        // A later source falling where an earlier piece writes: the earlier write comes first
        // in order, so the later piece starts a new run.
        let p = [piece(0, 3 * k, k), piece(k, 200 * k, 3 * k)];
        assert_eq!(run_len(&p), 1);
        // No longer than the bounce limit.
        let big = BOUNCE_MAX_BYTES as u64;
        let p = [piece(0, 10 * big, big / 2), piece(big / 2, 20 * big, big)];
        assert_eq!(run_len(&p), 1);
    }

    /// Batches whose sources mostly follow each other, some writing into sources of later
    /// pieces, moves among them: the file holds what copying piece by piece, in order, gives
    /// (a run's writes are made side by side, and writes to the same place one by one).
    #[test]
    fn a_batch_copies_as_piece_by_piece_in_order() {
        use crate::device::BlockDevice;
        use rand::Rng;
        let k = 4096u64;
        let blocks = 512u64;
        let dir = tempfile::tempdir().unwrap();
        let (mut d, mut model, mut rng) = super::super::tests::random_file(dir.path(), blocks, 5);
        let punches = d.capabilities().trim;
        let mut reads_saved = 0;
        for _ in 0..60 {
            let mut pieces = Vec::new();
            let mut src = rng.random_range(0..blocks / 2);
            for _ in 0..rng.random_range(1..12) {
                let len = rng.random_range(0..3u64);
                if src + len > blocks {
                    break;
                }
                let dst = rng.random_range(0..blocks - len);
                pieces.push(Piece {
                    src: src * k,
                    dst: dst * k,
                    len: len * k,
                    punch: rng.random_bool(0.2),
                });
                src += len + rng.random_range(0..3u64) * rng.random_range(0..2u64);
            }
            let mut i = 0;
            while i < pieces.len() {
                let n = run_len(&pieces[i..]);
                reads_saved += n - 1;
                i += n;
            }
            let mut copied = 0;
            let host_writes = d.stats().writes;
            d.copy_pieces(&pieces, &mut copied).unwrap();
            assert_eq!(copied, pieces.iter().map(|p| p.len).sum::<u64>());
            assert_eq!(
                d.stats().writes,
                host_writes,
                "a copy counted as host writes"
            );
            for p in &pieces {
                let (s, t, n) = (p.src as usize, p.dst as usize, p.len as usize);
                model.copy_within(s..s + n, t);
                if p.punch && punches {
                    model[s..s + n].fill(0);
                }
            }
            let mut back = vec![0u8; model.len()];
            d.read_at(0, &mut back).unwrap();
            assert!(back == model, "the file differs from copying in order");
        }
        assert!(reads_saved > 50, "runs formed: {reads_saved} reads saved");
    }
}
