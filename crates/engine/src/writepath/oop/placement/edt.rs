//! Estimated deathtime (paper 002 section 4.2): EDT = log position now + the mean interval of
//! the page's last writes, which its header keeps (GC copies do not change it). A page with no
//! history gets the mean interval seen for its page type: the header carries no tree id, but page
//! types separate inner nodes from leaves.

use super::super::area::space::MAX_EDT;
use crate::page::{self, Lsn};

/// Mean write interval seen per page type, as (sum, count).
#[derive(Clone, Debug, Default)]
pub(in crate::writepath::oop) struct EdtEstimator {
    type_interval: [(u128, u64); 8],
}

impl EdtEstimator {
    /// EDT of page image `data` being written now (its header's history includes this write).
    pub(in crate::writepath::oop) fn estimate(&mut self, data: &[u8], now: Lsn) -> u64 {
        let h = page::write_history(data);
        let n = h.iter().take_while(|&&x| x != 0).count();
        let t = data[6] as usize & 7;
        if n >= 2 && h[0] > h[n - 1] {
            let interval = (h[0] - h[n - 1]) / (n as u64 - 1);
            let e = &mut self.type_interval[t];
            e.0 += interval as u128;
            e.1 += 1;
            now.saturating_add(interval)
        } else {
            // First write: pages of the same kind are grouped by the mean interval of their kind.
            let (sum, cnt) = self.type_interval[t];
            if cnt == 0 {
                MAX_EDT
            } else {
                now.saturating_add((sum / cnt as u128) as u64)
            }
        }
    }
}
