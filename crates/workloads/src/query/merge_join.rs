//! Sort-merge join on temp space.
//!
//! Both inputs go through the external sort (run generation and any intermediate merges) with
//! half the memory budget each; the final merges of both sides then run side by side and feed a
//! merge of the two sorted streams. Duplicate keys on both sides give their cross product: the
//! left rows of one key are held in memory while the right rows of that key stream past.

use super::sort::{sort_phases, SortStats, Sorted};
use super::temp::TempSpace;
use super::{JoinRow, PhaseMark, PhaseStats, QueryError, Row};
use std::cmp::Ordering;

/// What a sort-merge join did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
/// three clusters) on `temp` and merging. The result is ordered by key; within a key, by right
/// value, then left value.
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
    let c = temp.cluster_bytes();
    if budget_bytes < 6 * c {
        return Err(QueryError::Config(format!(
            "memory budget {budget_bytes} bytes is below six clusters of {c} bytes (three per side)"
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
    let mut out = Vec::new();
    let r = merge(temp, &mut ls, &mut rs, &mut out);
    let rl = ls.release(temp);
    let rr = rs.release(temp);
    mark.stop(temp, &mut stats.merge);
    r.and(rl).and(rr)?;
    stats.output_rows = out.len() as u64;
    Ok((out, stats))
}

fn merge(
    temp: &mut TempSpace,
    ls: &mut Sorted,
    rs: &mut Sorted,
    out: &mut Vec<JoinRow>,
) -> Result<(), QueryError> {
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
                        out.push((key.clone(), lv.clone(), rv.clone()));
                    }
                    r = rs.next_row(temp)?;
                }
            }
        }
    }
    Ok(())
}
