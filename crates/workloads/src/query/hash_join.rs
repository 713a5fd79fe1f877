//! Grace hash join on temp space.
//!
//! Partition: both inputs are split into `fan_out` partitions ([`partition_fan_out`]) by a seeded
//! hash of the join key (one filling cluster per partition, written behind as runs; the
//! partitions' clusters interleave on temp space, so the writes climb through the addresses as
//! if appended, and a partition read back is scattered).
//! Build + probe: for each pair of partitions the smaller one is loaded into an in-memory hash
//! table and the other is streamed past it, a cluster at a time. A pair whose smaller side does
//! not fit the budget is partitioned again with another hash seed (recursive partitioning); past
//! [`MAX_DEPTH`] levels (heavy skew on a single key) the pair is joined block-nested-loop style:
//! the build side in budget-sized chunks, the probe side read once per chunk.

use super::run::{row_bytes, Run, RunReader, RunWriter};
use super::temp::TempSpace;
use super::{
    check_budget, key_hash, partition_fan_out, JoinRow, PhaseMark, PhaseStats, QueryError, Row,
};
use std::collections::HashMap;

/// Partitioning levels after which a pair of partitions is joined by chunks instead.
pub const MAX_DEPTH: usize = 3;

/// What a Grace hash join did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HashJoinStats {
    /// Partitions per partitioning step.
    pub fan_out: usize,
    /// Partitioning (first level and recursive): temp writes and the reads of recursion.
    pub partition: PhaseStats,
    /// Build + probe: reads of the partitions.
    pub build_probe: PhaseStats,
    /// Pairs of partitions partitioned again because they did not fit the budget.
    pub recursive_partitionings: usize,
    /// Deepest partitioning level reached (0 = only the first level).
    pub max_depth: usize,
    /// Pairs joined by chunks after [`MAX_DEPTH`] levels.
    pub chunked_pairs: usize,
    /// Rows of the join result.
    pub output_rows: u64,
}

/// Receives each row of a join result: key, left value, right value.
pub type JoinSink<'a> = &'a mut dyn FnMut(&[u8], &[u8], &[u8]);

/// Splits the rows `next` yields into `fan_out` runs by `key_hash(key, seed)`.
fn partition(
    temp: &mut TempSpace,
    fan_out: usize,
    seed: u64,
    mut next: impl FnMut(&mut TempSpace) -> Result<Option<Row>, QueryError>,
) -> Result<Vec<Run>, QueryError> {
    let mut writers: Vec<RunWriter> = (0..fan_out).map(|_| RunWriter::new(temp)).collect();
    let filled = (|| {
        while let Some((k, v)) = next(temp)? {
            temp.cpu_rows(1);
            let p = (key_hash(&k, seed) % fan_out as u64) as usize;
            writers[p].push(temp, &k, &v)?;
        }
        Ok::<_, QueryError>(())
    })();
    if let Err(e) = filled {
        for w in writers {
            let _ = w.abandon(temp);
        }
        return Err(e);
    }
    let mut runs = Vec::with_capacity(fan_out);
    let mut failed = None;
    for w in writers {
        if failed.is_some() {
            let _ = w.abandon(temp);
            continue;
        }
        match w.finish(temp) {
            Ok(r) => runs.push(r),
            Err(e) => failed = Some(e),
        }
    }
    if let Some(e) = failed {
        for r in runs {
            let _ = temp.release(r);
        }
        return Err(e);
    }
    Ok(runs)
}

/// Joins `left` and `right` on equal keys with `budget_bytes` of memory (at least three
/// clusters) on `temp`. Every pair of rows with equal keys gives one `(key, left value, right
/// value)`; the order of the result is unspecified.
pub fn grace_hash_join<L, R, E1, E2>(
    temp: &mut TempSpace,
    budget_bytes: usize,
    left: L,
    right: R,
) -> Result<(Vec<JoinRow>, HashJoinStats), QueryError>
where
    L: IntoIterator<Item = Result<Row, E1>>,
    R: IntoIterator<Item = Result<Row, E2>>,
    E1: Into<QueryError>,
    E2: Into<QueryError>,
{
    super::collect_join(|sink| grace_hash_join_into(temp, budget_bytes, left, right, sink))
}

/// [`grace_hash_join`] handing each result row to `sink` instead of collecting them.
pub fn grace_hash_join_into<L, R, E1, E2>(
    temp: &mut TempSpace,
    budget_bytes: usize,
    left: L,
    right: R,
    sink: JoinSink<'_>,
) -> Result<HashJoinStats, QueryError>
where
    L: IntoIterator<Item = Result<Row, E1>>,
    R: IntoIterator<Item = Result<Row, E2>>,
    E1: Into<QueryError>,
    E2: Into<QueryError>,
{
    check_budget(budget_bytes, temp)?;
    let fan_out = partition_fan_out(budget_bytes, temp);
    let mut stats = HashJoinStats {
        fan_out,
        ..HashJoinStats::default()
    };
    let mark = PhaseMark::start(temp);
    let mut l = left.into_iter();
    let lp = partition(temp, fan_out, 0, |_| {
        l.next().transpose().map_err(Into::into)
    })?;
    let mut r = right.into_iter();
    let rp = match partition(temp, fan_out, 0, |_| {
        r.next().transpose().map_err(Into::into)
    }) {
        Ok(rp) => rp,
        Err(e) => {
            for run in lp {
                let _ = temp.release(run);
            }
            return Err(e);
        }
    };
    mark.stop(temp, &mut stats.partition);

    let mut work: Vec<(Run, Run, usize)> = lp.into_iter().zip(rp).map(|(a, b)| (a, b, 0)).collect();
    let mut result = Ok(());
    while let Some((a, b, depth)) = work.pop() {
        if result.is_err() {
            let _ = temp.release(a);
            let _ = temp.release(b);
            continue;
        }
        result = join_pair(temp, budget_bytes, a, b, depth, &mut work, sink, &mut stats);
    }
    result?;
    Ok(stats)
}

/// Joins one pair of partitions (left run, right run), or partitions it again onto `work`.
#[allow(clippy::too_many_arguments)]
fn join_pair(
    temp: &mut TempSpace,
    budget: usize,
    left: Run,
    right: Run,
    depth: usize,
    work: &mut Vec<(Run, Run, usize)>,
    sink: JoinSink<'_>,
    stats: &mut HashJoinStats,
) -> Result<(), QueryError> {
    if left.rows() == 0 || right.rows() == 0 {
        temp.release(left)?;
        return temp.release(right);
    }
    let cluster = temp.cluster_bytes();
    // Build on the smaller side; `swapped` = the build side is the right input.
    let swapped = right.bytes() < left.bytes();
    let (build, probe) = if swapped {
        (right, left)
    } else {
        (left, right)
    };
    // The hash table gets the budget less the probe reader's clusters.
    let table_budget = budget
        .saturating_sub(temp.reader_clusters() * cluster)
        .max(cluster);
    if build.bytes() as usize > table_budget && depth < MAX_DEPTH {
        stats.recursive_partitionings += 1;
        stats.max_depth = stats.max_depth.max(depth + 1);
        let mark = PhaseMark::start(temp);
        let seed = depth as u64 + 1;
        let (l, r) = if swapped {
            (probe, build)
        } else {
            (build, probe)
        };
        let lp = repartition(temp, stats.fan_out, seed, l);
        let rp = repartition(temp, stats.fan_out, seed, r);
        mark.stop(temp, &mut stats.partition);
        match (lp, rp) {
            (Ok(lp), Ok(rp)) => {
                work.extend(lp.into_iter().zip(rp).map(|(a, b)| (a, b, depth + 1)));
                return Ok(());
            }
            (lp, rp) => {
                let mut err = None;
                for side in [lp, rp] {
                    match side {
                        Ok(runs) => runs.into_iter().for_each(|r| drop(temp.release(r))),
                        Err(e) => err = err.or(Some(e)),
                    }
                }
                return Err(err.expect("one side failed"));
            }
        }
    }
    let mark = PhaseMark::start(temp);
    if build.bytes() as usize > table_budget {
        stats.chunked_pairs += 1;
    }
    let r = build_probe(temp, table_budget, build, probe, swapped, sink);
    mark.stop(temp, &mut stats.build_probe);
    stats.output_rows += r?;
    Ok(())
}

/// Reads `run` and splits it into `fan_out` runs with `seed`; frees `run`.
fn repartition(
    temp: &mut TempSpace,
    fan_out: usize,
    seed: u64,
    run: Run,
) -> Result<Vec<Run>, QueryError> {
    let mut reader = RunReader::new(run);
    let parts = partition(temp, fan_out, seed, |t| reader.next_row(t));
    reader.release(temp)?;
    parts
}

/// Loads `build` in chunks of at most `chunk` bytes into a hash table and streams `probe` past
/// each chunk; frees both runs. Returns the rows given to `sink`.
fn build_probe(
    temp: &mut TempSpace,
    chunk: usize,
    build: Run,
    probe: Run,
    swapped: bool,
    sink: JoinSink<'_>,
) -> Result<u64, QueryError> {
    let mut emitted = 0u64;
    // The build side is read into the table (its buffers become table entries), so it reads
    // ahead as far as the budget goes; the probe side gets what the table leaves.
    let c = temp.cluster_bytes();
    let mut b = RunReader::with_depth(build, chunk / c);
    let mut p = RunReader::with_depth(probe, 0);
    let r = (|| {
        let mut pending: Option<Row> = b.next_row(temp)?;
        while pending.is_some() {
            let mut table: HashMap<Vec<u8>, Vec<Vec<u8>>> = HashMap::new();
            let mut used = 0usize;
            while let Some((k, v)) = pending.take() {
                let n = row_bytes(&k, &v);
                if used + n > chunk && used > 0 {
                    pending = Some((k, v));
                    break;
                }
                used += n;
                temp.cpu_rows(1);
                table.entry(k).or_default().push(v);
                pending = b.next_row(temp)?;
            }
            p.rewind();
            p.set_depth((chunk + temp.reader_clusters() * c).saturating_sub(used) / c);
            while let Some((k, pv)) = p.next_row(temp)? {
                temp.cpu_rows(1);
                if let Some(bvs) = table.get(&k) {
                    for bv in bvs {
                        emitted += 1;
                        if swapped {
                            sink(&k, &pv, bv);
                        } else {
                            sink(&k, bv, &pv);
                        }
                    }
                }
            }
        }
        Ok(())
    })();
    let rb = b.release(temp);
    let rp = p.release(temp);
    r.and(rb).and(rp).map(|()| emitted)
}
