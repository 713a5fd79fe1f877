//! Reports: wear, the full device report, and the FTL invariant check used by tests.

use crate::config::GcUnit;
use crate::ssd::{Ssd, NIL};
use crate::stats::{Report, WearReport};

impl Ssd {
    pub fn wear(&self) -> WearReport {
        let n = self.erase_count.len().max(1) as f64;
        let mean = self.erase_count.iter().map(|&c| c as f64).sum::<f64>() / n;
        let min = self.erase_count.iter().copied().min().unwrap_or(0);
        let max = self.erase_count.iter().copied().max().unwrap_or(0);
        let pe = self.cfg.wear.pe_limit;
        let elapsed = self.last_ns;
        let days = elapsed as f64 / 86_400e9;
        let logical = self.cap.logical_bytes as f64;
        let dwpd_observed = if days > 0.0 {
            self.counters.host_write_bytes as f64 / logical / days
        } else {
            0.0
        };
        let lifetime_days_projected = if days > 0.0 && mean > 0.0 {
            Some((pe as f64 - mean).max(0.0) / (mean / days))
        } else {
            None
        };
        let waf = self.counters.waf();
        let dwpd_rated_5y =
            pe as f64 * self.cap.physical_bytes as f64 / (waf * logical * 5.0 * 365.25);
        WearReport {
            pe_limit: pe,
            erase_count_min: min,
            erase_count_max: max,
            erase_count_mean: mean,
            life_used: mean / pe as f64,
            elapsed_ns: elapsed,
            dwpd_observed,
            lifetime_days_projected,
            dwpd_rated_5y,
        }
    }

    /// Everything the device knows about itself, serialisable.
    pub fn report(&self) -> Report {
        Report {
            capacity: self.cap.clone(),
            counters: self.counters.clone(),
            waf: self.counters.waf(),
            handles: self.handle_stats.clone(),
            wear: self.wear(),
            read_latency: self.read_lat.summary(),
            write_latency: self.write_lat.summary(),
            fill: self.fill(),
            free_eus: self.free_eus(),
            mapped_units: self.mapped_units(),
            mapping_table_bytes: self.mapping_table_bytes(),
            mapping_bytes_in_use: self.mapping_bytes_in_use(),
        }
    }

    /// Checks the FTL's invariants (mapping and reverse mapping agree, valid counts match the
    /// bitmap). Expensive: for tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut counts = vec![0u32; self.eu_valid.len()];
        for (lu, &pu) in self.map.iter().enumerate() {
            if pu == NIL {
                continue;
            }
            if !self.is_valid(pu) {
                return Err(format!("lu {lu} maps to invalid pu {pu}"));
            }
            let owner = self.rev[pu as usize] == lu as u32
                || self
                    .shared
                    .get(&pu)
                    .is_some_and(|e| e.contains(&(lu as u32)));
            if !owner {
                return Err(format!("pu {pu} does not list lu {lu} as an owner"));
            }
        }
        for pu in 0..(self.eu_valid.len() as u32 * self.eu_units) {
            if self.is_valid(pu) {
                counts[(pu / self.eu_units) as usize] += 1;
                let lu = self.rev[pu as usize];
                if self.map[lu as usize] != pu {
                    return Err(format!("valid pu {pu} owned by lu {lu} mapped elsewhere"));
                }
            }
        }
        // Pending invalidations are applied to the bitmap by `is_valid`, not yet to the counts.
        let mut expected = self.eu_valid.clone();
        for &pu in self.pending.iter().filter(|&&pu| pu != NIL) {
            expected[(pu / self.eu_units) as usize] -= 1;
        }
        if counts != expected {
            return Err("per-EU valid counts disagree with the bitmap".into());
        }
        let mapped = self.map.iter().filter(|&&p| p != NIL).count() as u64;
        if mapped != self.mapped_units {
            return Err(format!("mapped_units {} != {}", self.mapped_units, mapped));
        }
        Ok(())
    }

    /// The GC unit in use (for tools that align to it).
    pub fn gc_unit(&self) -> GcUnit {
        self.cfg.gc.unit
    }
}
