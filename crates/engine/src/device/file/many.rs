//! Lists of writes (`BlockDevice::write_many`): sorted by offset, runs of writes that follow
//! each other on the file (a checkpoint batch's pages of neighbouring ids) merged into one
//! `pwrite` each, and the runs written side by side by up to [`WRITERS`] threads.
//!
//! With `O_DIRECT` each `pwrite` is a device command the caller waits for. One at a time, a
//! checkpoint of scattered pages on this machine's disk wrote about eight thousand pages a
//! second, and with the log short every writer waited for it. Several commands in flight let
//! the device work on them at once (a queue depth above one), as an SSD needs to reach its
//! bandwidth. Threads, not `io_uring`: nothing to set up or to be refused by a sandbox, and a
//! batch's writes take milliseconds against tens of microseconds to start a thread.

use super::{io_err, is_einval, AlignedBuf, FileDevice, ALIGN, BLOCK_BYTES, BOUNCE_MAX_BYTES};
use crate::device::{check_io, BlockDevice, DeviceError};
use std::os::unix::fs::FileExt;

/// Threads writing a list's runs at once (and so the device commands in flight).
const WRITERS: usize = 8;

/// One run: its offset and the writes (indices into the list) that make it, in file order.
struct Run {
    start: u64,
    len: usize,
    parts: Vec<usize>,
}

/// The runs of `writes`: sorted by offset, neighbours merged up to `max` bytes; None if two
/// writes overlap (then their order matters).
fn runs(writes: &[(u64, &[u8])], max: usize) -> Option<Vec<Run>> {
    let mut order: Vec<usize> = (0..writes.len()).collect();
    order.sort_by_key(|&i| writes[i].0);
    let end = |i: usize| writes[i].0 + writes[i].1.len() as u64;
    if order.windows(2).any(|w| writes[w[1]].0 < end(w[0])) {
        return None;
    }
    let mut out: Vec<Run> = Vec::new();
    for i in order {
        let (offset, data) = writes[i];
        match out.last_mut() {
            Some(r) if r.start + r.len as u64 == offset && r.len + data.len() <= max => {
                r.len += data.len();
                r.parts.push(i);
            }
            _ => out.push(Run {
                start: offset,
                len: data.len(),
                parts: vec![i],
            }),
        }
    }
    Some(out)
}

/// Writes `runs` of `writes` to `file`, the `k`-th thread of `n` taking every `n`-th run, each
/// run gathered into an aligned buffer (any buffer suits a file not opened `O_DIRECT`; one
/// aligned buffer suits both). The first error, if any.
fn write_share(
    file: &std::fs::File,
    writes: &[(u64, &[u8])],
    runs: &[Run],
    k: usize,
    n: usize,
) -> std::io::Result<()> {
    let most = runs.iter().skip(k).step_by(n).map(|r| r.len).max();
    let Some(most) = most.filter(|&m| m > 0) else {
        // No run, or only empty ones: nothing to write.
        return Ok(());
    };
    let mut buf = AlignedBuf::new(most.next_multiple_of(ALIGN));
    for r in runs.iter().skip(k).step_by(n) {
        let b = buf.as_mut_slice();
        let mut filled = 0;
        for &i in &r.parts {
            let d = writes[i].1;
            b[filled..filled + d.len()].copy_from_slice(d);
            filled += d.len();
        }
        file.write_all_at(&buf.as_slice()[..r.len], r.start)?;
    }
    Ok(())
}

impl FileDevice {
    /// [`BlockDevice::write_many`] for files: see the module notes. Every write is checked
    /// before any is made. Writes that overlap are written one by one, in their order.
    pub(super) fn write_runs(&mut self, writes: &[(u64, &[u8])]) -> Result<(), DeviceError> {
        for &(offset, data) in writes {
            check_io(offset, data.len() as u64, self.capacity, BLOCK_BYTES)?;
        }
        let Some(runs) = runs(writes, BOUNCE_MAX_BYTES) else {
            for &(offset, data) in writes {
                self.write_at(offset, data)?;
            }
            return Ok(());
        };
        match runs.as_slice() {
            [] => return Ok(()),
            [one] if one.parts.len() == 1 => {
                let (offset, data) = writes[one.parts[0]];
                return self.write_at(offset, data);
            }
            _ => {}
        }
        self.write_side_by_side(writes, &runs)?;
        self.stats.writes += runs.len() as u64;
        self.stats.write_bytes += runs.iter().map(|r| r.len as u64).sum::<u64>();
        Ok(())
    }

    /// The writes of a copy through memory (`runs.rs`: one run's pieces, read together),
    /// written side by side as [`FileDevice::write_runs`] writes (they were written one at a
    /// time: a journal's move home by copies, 3,200 pages, took 220-400 ms on ext4, nearly all
    /// of it these writes, docs/results.md, twenty-second run). Not counted as the host's
    /// writes (the copy counts its bytes). Checked by the copy already; writes that overlap
    /// are written one by one, in their order.
    pub(super) fn write_copies(&mut self, writes: &[(u64, &[u8])]) -> Result<(), DeviceError> {
        match runs(writes, BOUNCE_MAX_BYTES) {
            Some(runs) => self.write_side_by_side(writes, &runs),
            None => {
                for &(offset, data) in writes {
                    self.file
                        .write_all_at(data, offset)
                        .map_err(|e| io_err(&self.path, "write", e))?;
                }
                Ok(())
            }
        }
    }

    /// `runs` of `writes` by up to [`WRITERS`] threads (counted by the caller).
    fn write_side_by_side(
        &mut self,
        writes: &[(u64, &[u8])],
        runs: &[Run],
    ) -> Result<(), DeviceError> {
        if runs.is_empty() {
            return Ok(());
        }
        self.unsynced = true;
        let n = runs.len().min(WRITERS);
        let mut r = self.write_all_runs(writes, runs, n);
        if matches!(&r, Err(e) if self.direct && is_einval(e)) {
            self.reopen_buffered()?;
            r = self.write_all_runs(writes, runs, n);
        }
        r.map_err(|e| io_err(&self.path, "write", e))
    }

    /// Writes the runs with `n` threads (the caller's own when `n` is 1).
    fn write_all_runs(
        &self,
        writes: &[(u64, &[u8])],
        runs: &[Run],
        n: usize,
    ) -> std::io::Result<()> {
        let file = &self.file;
        if n <= 1 {
            return write_share(file, writes, runs, 0, 1);
        }
        std::thread::scope(|s| {
            let mut result = Ok(());
            let mut others = Vec::with_capacity(n - 1);
            for k in 1..n {
                let spawned = std::thread::Builder::new()
                    .name("wafer-write".into())
                    .spawn_scoped(s, move || write_share(file, writes, runs, k, n));
                match spawned {
                    Ok(h) => others.push(h),
                    // No thread to be had (a process limit): this share is written here.
                    Err(_) => result = result.and(write_share(file, writes, runs, k, n)),
                }
            }
            result = result.and(write_share(file, writes, runs, 0, n));
            others
                .into_iter()
                .map(|h| h.join().expect("a writer thread panicked"))
                .fold(result, |acc, r| acc.and(r))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_neighbours_up_to_the_limit_and_refuse_overlaps() {
        let p = [0u8; 4096];
        let w = |offs: &[u64]| -> Vec<(u64, &[u8])> { offs.iter().map(|&o| (o, &p[..])).collect() };
        let shape = |r: Vec<Run>| -> Vec<(u64, usize)> {
            r.iter().map(|r| (r.start, r.parts.len())).collect()
        };
        let r = runs(&w(&[8192, 0, 4096, 20480, 16384]), 1 << 20).unwrap();
        assert_eq!(shape(r), [(0, 3), (16384, 2)]);
        let r = runs(&w(&[0, 4096, 8192]), 8192).unwrap();
        assert_eq!(shape(r), [(0, 2), (8192, 1)], "at most 8 KiB a run");
        assert!(
            runs(&w(&[0, 4096, 0]), 1 << 20).is_none(),
            "the same page twice"
        );
        assert!(runs(&[], 1 << 20).unwrap().is_empty());
    }
}
