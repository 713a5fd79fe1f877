//! External merge sort on temp space.
//!
//! Run generation is replacement selection over the sort area (the budget less the output
//! buffers): a heap of rows from which the smallest that can still extend the current run is
//! written, sequentially, a cluster at a time, its place taken by the next input row; runs
//! average twice the sort area on unsorted input, and the writes interleave with the input. The merge reads each run a
//! cluster at a time (with read-ahead) and merges `fan_in` runs at once ([`merge_fan_in`]); while
//! there are more runs than that, intermediate merges write new runs, planned to move the fewest
//! bytes (Knuth's merge pattern with dummy runs): the first merges just enough of the smallest
//! runs that every later merge is full, then each merges the `fan_in` smallest. The last merge
//! streams its output to the caller. Input that fits the sort area whole is sorted in memory and
//! never touches temp space.
//!
//! Rows come out ordered by key, ties by value.

use super::run::{row_bytes, Run, RunReader, RunWriter};
use super::temp::TempSpace;
use super::{check_budget, merge_fan_in, sort_area_bytes, PhaseMark, PhaseStats, QueryError, Row};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What an external sort did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SortStats {
    /// Rows sorted.
    pub rows: u64,
    /// Bytes of the input rows as they are stored in runs (8 bytes of header per row).
    pub input_bytes: u64,
    /// Record bytes of each run run generation wrote (empty when the input fit in memory).
    pub initial_run_bytes: Vec<u64>,
    /// Runs merged at once at most.
    pub fan_in: usize,
    /// Merges that wrote a new run to temp (0 when one final merge sufficed).
    pub intermediate_merges: usize,
    /// Record bytes the intermediate merges wrote (each also read them once more).
    pub intermediate_bytes: u64,
    /// Run generation: temp writes of the initial runs.
    pub run_generation: PhaseStats,
    /// Merge: intermediate merges and the reads of the final merge (its time counts while the
    /// caller pulls rows).
    pub merge: PhaseStats,
}

/// A row in the merge heap with the index of the run it came from.
type HeapRow = Reverse<(Vec<u8>, Vec<u8>, usize)>;

/// A row in the replacement-selection heap with the number of the run it goes to.
type SelectRow = Reverse<(u64, Vec<u8>, Vec<u8>)>;

/// Merges runs on temp space; holds one cluster of each run in memory.
pub(crate) struct Merger {
    readers: Vec<Option<RunReader>>,
    heap: BinaryHeap<HeapRow>,
}

impl Merger {
    /// A merge of `runs` with `budget_bytes` of memory: what the output does not need is shared
    /// by the readers, so fewer runs than the fan-in read further ahead.
    pub(crate) fn new(
        temp: &mut TempSpace,
        runs: Vec<Run>,
        budget_bytes: usize,
    ) -> Result<Merger, QueryError> {
        let spare =
            (budget_bytes / temp.cluster_bytes()).saturating_sub(1 + temp.write_behind_clusters());
        let depth = spare / runs.len().max(1);
        let mut m = Merger {
            readers: runs
                .into_iter()
                .map(|r| Some(RunReader::with_depth(r, depth)))
                .collect(),
            heap: BinaryHeap::new(),
        };
        // Every run's first reads go out before waiting for any of them.
        for r in m.readers.iter_mut().flatten() {
            r.prefetch(temp)?;
        }
        for i in 0..m.readers.len() {
            m.refill(temp, i)?;
        }
        Ok(m)
    }

    fn refill(&mut self, temp: &mut TempSpace, i: usize) -> Result<(), QueryError> {
        let Some(reader) = self.readers[i].as_mut() else {
            return Ok(());
        };
        match reader.next_row(temp)? {
            Some((k, v)) => self.heap.push(Reverse((k, v, i))),
            None => {
                let reader = self.readers[i].take().expect("reader present");
                reader.release(temp)?;
            }
        }
        Ok(())
    }

    pub(crate) fn next_row(&mut self, temp: &mut TempSpace) -> Result<Option<Row>, QueryError> {
        let Some(Reverse((k, v, i))) = self.heap.pop() else {
            return Ok(None);
        };
        temp.cpu_rows(1);
        self.refill(temp, i)?;
        Ok(Some((k, v)))
    }

    /// Frees the runs not read to their end.
    pub(crate) fn release(&mut self, temp: &mut TempSpace) -> Result<(), QueryError> {
        self.heap.clear();
        let mut result = Ok(());
        for r in self.readers.iter_mut().filter_map(Option::take) {
            if let Err(e) = r.release(temp) {
                result = result.and(Err(e));
            }
        }
        result
    }
}

/// Sorted rows: from memory, or from a merge of runs on temp space.
pub(crate) enum Sorted {
    Memory(std::vec::IntoIter<Row>),
    Merge(Merger),
}

impl Sorted {
    pub(crate) fn next_row(&mut self, temp: &mut TempSpace) -> Result<Option<Row>, QueryError> {
        match self {
            Sorted::Memory(it) => Ok(it.next()),
            Sorted::Merge(m) => m.next_row(temp),
        }
    }

    pub(crate) fn release(&mut self, temp: &mut TempSpace) -> Result<(), QueryError> {
        match self {
            Sorted::Memory(it) => {
                it.by_ref().for_each(drop);
                Ok(())
            }
            Sorted::Merge(m) => m.release(temp),
        }
    }
}

/// Sorts `input` until at most `fan_in` runs are left (or everything is in memory): run
/// generation and the intermediate merges. The caller does the final merge.
pub(crate) fn sort_phases<I, E>(
    temp: &mut TempSpace,
    budget_bytes: usize,
    input: I,
) -> Result<(Sorted, SortStats), QueryError>
where
    I: IntoIterator<Item = Result<Row, E>>,
    E: Into<QueryError>,
{
    check_budget(budget_bytes, temp)?;
    let mut stats = SortStats {
        fan_in: merge_fan_in(budget_bytes, temp),
        ..SortStats::default()
    };
    let mut runs: Vec<Run> = Vec::new();
    let result = generate_and_merge(temp, budget_bytes, input, &mut stats, &mut runs);
    match result {
        Ok(Some(mem)) => Ok((Sorted::Memory(mem.into_iter()), stats)),
        Ok(None) => {
            // Opening the final merge reads the first cluster of every run: merge phase.
            let mark = PhaseMark::start(temp);
            let m = Merger::new(temp, runs, budget_bytes);
            mark.stop_in_flight(temp, &mut stats.merge);
            Ok((Sorted::Merge(m?), stats))
        }
        Err(e) => {
            for r in runs {
                let _ = temp.release(r);
            }
            Err(e)
        }
    }
}

/// Returns the rows when they all fit in memory; else leaves at most `fan_in` runs in `runs`.
fn generate_and_merge<I, E>(
    temp: &mut TempSpace,
    budget_bytes: usize,
    input: I,
    stats: &mut SortStats,
    runs: &mut Vec<Run>,
) -> Result<Option<Vec<Row>>, QueryError>
where
    I: IntoIterator<Item = Result<Row, E>>,
    E: Into<QueryError>,
{
    let mark = PhaseMark::start(temp);
    let area = sort_area_bytes(budget_bytes, temp);
    let mut input = input.into_iter();
    let mut next_row = |stats: &mut SortStats, temp: &mut TempSpace| -> Result<_, QueryError> {
        let Some(row) = input.next() else {
            return Ok(None);
        };
        let (k, v) = row.map_err(Into::into)?;
        let n = row_bytes(&k, &v);
        stats.rows += 1;
        stats.input_bytes += n as u64;
        temp.cpu_rows(1);
        Ok(Some((k, v, n)))
    };
    // Fill the sort area; input that fits is sorted in memory.
    let mut heap: BinaryHeap<SelectRow> = BinaryHeap::new();
    let mut used = 0usize;
    let mut pending = None;
    while let Some((k, v, n)) = next_row(stats, temp)? {
        if used + n > area && !heap.is_empty() {
            pending = Some((k, v, n));
            break;
        }
        used += n;
        heap.push(Reverse((0, k, v)));
    }
    if pending.is_none() {
        mark.stop(temp, &mut stats.run_generation);
        let mut rows: Vec<Row> = heap.into_iter().map(|Reverse((_, k, v))| (k, v)).collect();
        rows.sort_unstable();
        return Ok(Some(rows));
    }
    // Replacement selection: write the smallest row that can still extend the current run, then
    // take the next input row into its place (for the next run if it sorts before the row just
    // written). Writing and reading interleave row by row, and runs average twice the sort area
    // on unsorted input.
    let mut writer = RunWriter::new(temp);
    let mut current = 0u64;
    let selected = (|| {
        while let Some(Reverse((r, k, v))) = heap.pop() {
            if r != current {
                let done = std::mem::replace(&mut writer, RunWriter::new(temp));
                let run = done.finish(temp)?;
                stats.initial_run_bytes.push(run.bytes());
                runs.push(run);
                current = r;
            }
            writer.push(temp, &k, &v)?;
            used -= row_bytes(&k, &v);
            if pending.is_none() {
                pending = next_row(stats, temp)?;
            }
            if let Some((nk, nv, n)) = pending.take() {
                if used + n > area && !heap.is_empty() {
                    pending = Some((nk, nv, n));
                    continue;
                }
                let run = if (&nk, &nv) >= (&k, &v) {
                    current
                } else {
                    current + 1
                };
                used += n;
                heap.push(Reverse((run, nk, nv)));
            }
        }
        Ok::<_, QueryError>(())
    })();
    if let Err(e) = selected {
        let _ = writer.abandon(temp);
        return Err(e);
    }
    let run = writer.finish(temp)?;
    stats.initial_run_bytes.push(run.bytes());
    runs.push(run);
    mark.stop(temp, &mut stats.run_generation);

    let mark = PhaseMark::start(temp);
    let mut first = true;
    while runs.len() > stats.fan_in {
        let degree = merge_degree(runs.len(), stats.fan_in, first);
        first = false;
        // The `degree` smallest runs.
        runs.sort_by_key(|r| std::cmp::Reverse(r.bytes()));
        let group: Vec<Run> = runs.split_off(runs.len() - degree);
        let mut m = Merger::new(temp, group, budget_bytes)?;
        let mut w = RunWriter::new(temp);
        let merged = (|| {
            while let Some((k, v)) = m.next_row(temp)? {
                w.push(temp, &k, &v)?;
            }
            Ok::<_, QueryError>(())
        })();
        if let Err(e) = merged {
            let _ = m.release(temp);
            let _ = w.abandon(temp);
            return Err(e);
        }
        let run = w.finish(temp)?;
        stats.intermediate_bytes += run.bytes();
        runs.push(run);
        stats.intermediate_merges += 1;
    }
    mark.stop(temp, &mut stats.merge);
    Ok(None)
}

/// Runs the next intermediate merge takes when `runs` runs are left and `fan_in` can be merged
/// at once: the first merge takes just enough that every later one is full and the last leaves
/// exactly `fan_in` runs for the final merge; the others take `fan_in`.
fn merge_degree(runs: usize, fan_in: usize, first: bool) -> usize {
    debug_assert!(runs > fan_in && fan_in >= 2);
    if first {
        (runs - fan_in - 1) % (fan_in - 1) + 2
    } else {
        fan_in
    }
}

/// The output of [`external_sort`]: an iterator over the sorted rows. Runs still on temp space
/// are freed (and trimmed) when the stream ends or is dropped.
pub struct SortedStream<'t> {
    temp: &'t mut TempSpace,
    sorted: Sorted,
    stats: SortStats,
    done: bool,
}

impl SortedStream<'_> {
    /// The counters so far (complete once the stream has ended).
    pub fn stats(&self) -> &SortStats {
        &self.stats
    }

    fn finish(&mut self) -> Result<(), QueryError> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        let mark = PhaseMark::start(self.temp);
        let r = self.sorted.release(self.temp);
        mark.stop(self.temp, &mut self.stats.merge);
        r
    }
}

impl Iterator for SortedStream<'_> {
    type Item = Result<Row, QueryError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mark = PhaseMark::start(self.temp);
        let r = self.sorted.next_row(self.temp);
        mark.stop_in_flight(self.temp, &mut self.stats.merge);
        match r {
            Ok(Some(row)) => Some(Ok(row)),
            Ok(None) => self.finish().err().map(Err),
            Err(e) => {
                let _ = self.finish();
                Some(Err(e))
            }
        }
    }
}

impl Drop for SortedStream<'_> {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Sorts `input` with `budget_bytes` of memory (at least three clusters) on `temp`.
pub fn external_sort<I, E>(
    temp: &mut TempSpace,
    budget_bytes: usize,
    input: I,
) -> Result<SortedStream<'_>, QueryError>
where
    I: IntoIterator<Item = Result<Row, E>>,
    E: Into<QueryError>,
{
    let (sorted, stats) = sort_phases(temp, budget_bytes, input)?;
    Ok(SortedStream {
        temp,
        sorted,
        stats,
        done: false,
    })
}

/// [`external_sort`] collected into a vector, with the counters.
pub fn sort_to_vec<I, E>(
    temp: &mut TempSpace,
    budget_bytes: usize,
    input: I,
) -> Result<(Vec<Row>, SortStats), QueryError>
where
    I: IntoIterator<Item = Result<Row, E>>,
    E: Into<QueryError>,
{
    let mut stream = external_sort(temp, budget_bytes, input)?;
    let mut out = Vec::new();
    for row in stream.by_ref() {
        out.push(row?);
    }
    Ok((out, stream.stats().clone()))
}
