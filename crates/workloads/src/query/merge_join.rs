//! Sort-merge join on temp space.
//!
//! Both inputs go through the external sort (run generation and any intermediate merges) with
//! half the memory budget each; the final merges of both sides then run side by side and feed a
//! merge of the two sorted streams. Duplicate keys on both sides give their cross product: the
//! left rows of one key are held in memory while the right rows of that key stream past.

use super::hash_join::JoinSink;
use super::sort::{sort_phases, SortStats, Sorted};
use super::temp::TempSpace;
use super::{min_budget_clusters, JoinRow, PhaseMark, PhaseStats, QueryError, Row};
use std::cmp::Ordering;

/// What a sort-merge join did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MergeJoinStats {
    /// The left input's sort (its `merge` holds only the intermediate merges).
    pub left_sort: SortStats,
    /// The right input's sort (likewise).
    pub right_sort: SortStats,
    /// The final merges of both sides and the join merge.
    pub merge: PhaseStats,
    /// Rows of the join result.
    pub output_rows: u64,
}

/// Joins `left` and `right` on equal keys by sorting both (each with `budget_bytes / 2`, at least
/// [`min_budget_clusters`] per side) on `temp` and merging. The result is ordered by key; within
/// a key, by right value, then left value.
pub fn sort_merge_join<L, R, E1, E2>(
    temp: &mut TempSpace,
    budget_bytes: usize,
    left: L,
    right: R,
) -> Result<(Vec<JoinRow>, MergeJoinStats), QueryError>
where
    L: IntoIterator<Item = Result<Row, E1>>,
    R: IntoIterator<Item = Result<Row, E2>>,
    E1: Into<QueryError>,
    E2: Into<QueryError>,
{
    super::collect_join(|sink| sort_merge_join_into(temp, budget_bytes, left, right, sink))
}

/// [`sort_merge_join`] handing each result row to `sink` instead of collecting them.
pub fn sort_merge_join_into<L, R, E1, E2>(
    temp: &mut TempSpace,
    budget_bytes: usize,
    left: L,
    right: R,
    sink: JoinSink<'_>,
) -> Result<MergeJoinStats, QueryError>
where
    L: IntoIterator<Item = Result<Row, E1>>,
    R: IntoIterator<Item = Result<Row, E2>>,
    E1: Into<QueryError>,
    E2: Into<QueryError>,
{
    let c = temp.cluster_bytes();
    let min = 2 * min_budget_clusters(temp);
    if budget_bytes < min * c {
        return Err(QueryError::Config(format!(
            "memory budget {budget_bytes} bytes is below {min} clusters of {c} bytes (half per side)"
        )));
    }
    let half = budget_bytes / 2;
    let (mut ls, left_sort) = sort_phases(temp, half, left)?;
    let (mut rs, right_sort) = match sort_phases(temp, half, right) {
        Ok(x) => x,
        Err(e) => {
            let _ = ls.release(temp);
            return Err(e);
        }
    };
    let mut stats = MergeJoinStats {
        left_sort,
        right_sort,
        ..MergeJoinStats::default()
    };
    let mark = PhaseMark::start(temp);
    let r = merge(temp, &mut ls, &mut rs, sink);
    let rl = ls.release(temp);
    let rr = rs.release(temp);
    mark.stop(temp, &mut stats.merge);
    stats.output_rows = r?;
    rl.and(rr)?;
    Ok(stats)
}

fn merge(
    temp: &mut TempSpace,
    ls: &mut Sorted,
    rs: &mut Sorted,
    sink: JoinSink<'_>,
) -> Result<u64, QueryError> {
    let mut emitted = 0u64;
    let mut l = ls.next_row(temp)?;
    let mut r = rs.next_row(temp)?;
    while let (Some((lk, _)), Some((rk, _))) = (&l, &r) {
        match lk.cmp(rk) {
            Ordering::Less => l = ls.next_row(temp)?,
            Ordering::Greater => r = rs.next_row(temp)?,
            Ordering::Equal => {
                let (key, first) = l.take().expect("left row");
                let mut group = vec![first];
                loop {
                    l = ls.next_row(temp)?;
                    match l.take() {
                        Some((k, v)) if k == key => group.push(v),
                        other => {
                            l = other;
                            break;
                        }
                    }
                }
                while let Some((rk, rv)) = r.take() {
                    if rk != key {
                        r = Some((rk, rv));
                        break;
                    }
                    for lv in &group {
                        sink(&key, lv, &rv);
                        emitted += 1;
                    }
                    r = rs.next_row(temp)?;
                }
            }
        }
    }
    Ok(emitted)
}
