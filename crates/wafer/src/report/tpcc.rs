//! The TPC-C tables of a benchmark page: tpmC, New-Orders and bytes per New-Order, the mix that
//! ran, and the recovery after a crash at the end, phase by phase.

use super::figures::{Figures, RECOVERY_SEGMENTS};
use super::html::{best, esc, figure, fixed, grouped, latency, percent, swatch};
use super::RunView;
use std::fmt::Write as _;
use wafer_workloads::tpcc::{TpccFigures, TxnKind};

/// One column of the results table.
struct Column {
    head: &'static str,
    value: fn(&TpccFigures, &RunView<'_>) -> f64,
    show: fn(f64) -> String,
    /// `Some(true)`: lower is better; `Some(false)`: higher is better; `None`: not ranked.
    lower_is_better: Option<bool>,
}

const COLUMNS: [Column; 10] = [
    Column {
        head: "tpmC",
        value: |f, _| f.tpmc,
        show: grouped,
        lower_is_better: Some(false),
    },
    Column {
        head: "tpmC, last quarter",
        value: |f, _| f.tpmc_last_quarter,
        show: grouped,
        lower_is_better: Some(false),
    },
    Column {
        head: "New-Orders",
        value: |f, _| f.new_orders as f64,
        show: grouped,
        lower_is_better: None,
    },
    Column {
        head: "transactions",
        value: |f, _| f.txns.total() as f64,
        show: grouped,
        lower_is_better: None,
    },
    Column {
        head: "user bytes / NO",
        value: |f, _| f.user_bytes_per_new_order,
        show: grouped,
        lower_is_better: Some(true),
    },
    Column {
        head: "host bytes / NO",
        value: |f, _| f.host_bytes_per_new_order,
        show: grouped,
        lower_is_better: Some(true),
    },
    Column {
        head: "flash bytes / NO",
        value: |f, _| f.media_bytes_per_new_order,
        show: grouped,
        lower_is_better: Some(true),
    },
    Column {
        head: "log bytes / NO",
        value: |f, _| f.wal_bytes_per_new_order,
        show: grouped,
        lower_is_better: Some(true),
    },
    Column {
        head: "total WAF",
        value: |_, v| v.run.run.total_waf,
        show: |v| fixed(v, 2),
        lower_is_better: Some(true),
    },
    Column {
        head: "p99 latency",
        value: |_, v| v.run.latency.p99_ns as f64,
        show: |v| latency(v as u64),
        lower_is_better: Some(true),
    },
];

/// A row for a run without TPC-C figures (a file written before `bench tpcc` recorded them).
fn missing(out: &mut String, v: &RunView<'_>, columns: usize) {
    let _ = writeln!(
        out,
        "<tr><td>{}{}</td><td class=\"text\" colspan=\"{columns}\">no TPC-C figures in this \
         file (written before <code>wafer bench tpcc --out</code> recorded them): rerun the \
         benchmark</td></tr>",
        swatch(v.color),
        esc(&v.label)
    );
}

fn results_table(out: &mut String, views: &[RunView<'_>]) {
    out.push_str("<table>\n<thead><tr><th>configuration</th>");
    for c in &COLUMNS {
        let _ = write!(out, "<th>{}</th>", esc(c.head));
    }
    out.push_str("<th class=\"text\">consistency</th></tr></thead>\n<tbody>\n");
    let best_of: Vec<Vec<usize>> = COLUMNS
        .iter()
        .map(|c| {
            let values: Vec<f64> = views
                .iter()
                .map(|v| v.run.tpcc.as_ref().map_or(f64::NAN, |f| (c.value)(f, v)))
                .collect();
            c.lower_is_better
                .map(|lower| best(&values, c.show, lower))
                .unwrap_or_default()
        })
        .collect();
    for (i, v) in views.iter().enumerate() {
        let Some(f) = &v.run.tpcc else {
            missing(out, v, COLUMNS.len() + 1);
            continue;
        };
        let _ = write!(out, "<tr><td>{}{}</td>", swatch(v.color), esc(&v.label));
        for (c, b) in COLUMNS.iter().zip(&best_of) {
            let class = if b.contains(&i) {
                " class=\"best\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", (c.show)((c.value)(f, v)));
        }
        let _ = writeln!(out, "<td class=\"text\">{}</td></tr>", esc(&f.check));
    }
    out.push_str("</tbody>\n</table>\n");
}

fn mix_table(out: &mut String, views: &[RunView<'_>]) {
    out.push_str("<table>\n<thead><tr><th>configuration</th>");
    for k in TxnKind::ALL {
        let _ = write!(out, "<th>{}</th>", esc(k.name()));
    }
    out.push_str(
        "<th>New-Orders rolled back</th><th>conflicts retried</th>\
         <th>empty delivery districts</th></tr></thead>\n<tbody>\n",
    );
    for v in views {
        let Some(f) = &v.run.tpcc else {
            missing(out, v, TxnKind::ALL.len() + 3);
            continue;
        };
        let _ = write!(out, "<tr><td>{}{}</td>", swatch(v.color), esc(&v.label));
        for k in TxnKind::ALL {
            let i = k.index();
            let _ = write!(
                out,
                "<td>{} <span class=\"src\">({})</span></td>",
                percent(f.mix_percent[i] / 100.0),
                grouped(f.txns.completed[i] as f64)
            );
        }
        let conflicts: u64 = f.txns.conflicts.iter().sum();
        let _ = writeln!(
            out,
            "<td>{}</td><td>{}</td><td>{}</td></tr>",
            grouped(f.txns.rolled_back as f64),
            grouped(conflicts as f64),
            grouped(f.txns.skipped_deliveries as f64)
        );
    }
    out.push_str("</tbody>\n</table>\n");
}

fn recovery_table(out: &mut String, views: &[RunView<'_>]) {
    out.push_str(
        "<table>\n<thead><tr><th>configuration</th><th>analysis records</th>\
         <th>analysis</th><th>redo records</th><th>page changes reapplied</th><th>redo</th>\
         <th>undo transactions</th><th>undo records</th><th>undo</th>\
         <th>reopen in all</th><th class=\"text\">recovered database</th></tr></thead>\n\
         <tbody>\n",
    );
    let ms = |us: u64| format!("{} ms", fixed(us as f64 / 1e3, 2));
    for v in views {
        let Some(f) = &v.run.tpcc else { continue };
        let Some(r) = &f.recovery else {
            let _ = writeln!(
                out,
                "<tr><td>{}{}</td><td class=\"text\" colspan=\"10\">no crash (run without \
                 --crash-at-end)</td></tr>",
                swatch(v.color),
                esc(&v.label)
            );
            continue;
        };
        let p = &r.report;
        let _ = writeln!(
            out,
            "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{} ms</td><td class=\"text\">{}</td></tr>",
            swatch(v.color),
            esc(&v.label),
            grouped(p.analysis_records as f64),
            ms(p.analysis_us),
            grouped(p.redo_records as f64),
            grouped(p.redo_applied as f64),
            ms(p.redo_us),
            grouped(p.undo_txns as f64),
            grouped(p.undo_records as f64),
            ms(p.undo_us),
            fixed(r.virtual_ms, 2),
            esc(&f.check),
        );
    }
    out.push_str("</tbody>\n</table>\n");
}

/// The TPC-C sections: results, mix, and recovery when a run crashed at its end.
pub fn sections(out: &mut String, views: &[RunView<'_>], f: &Figures) {
    out.push_str("<h2>TPC-C results</h2>\n");
    out.push_str(
        "<p class=\"note\">Over the whole run phase. tpmC = New-Orders completed per minute of \
         virtual time (last quarter: from the series point at 75% of the run's time to its \
         end). Bytes per New-Order (NO): user = pages written for eviction and checkpoints \
         (uncompressed); host = written to the data SSD (the DB-issued bytes); flash = \
         programmed to its NAND (host bytes &times; SSD WAF); log = written to the log SSD. \
         The best value of a column is in bold. Consistency: the TPC-C consistency conditions \
         after the load and after the run (after recovery when the run crashed).</p>\n",
    );
    results_table(out, views);

    out.push_str("<h2>Transaction mix run</h2>\n");
    out.push_str(
        "<p class=\"note\">Share of the completed transactions by type (count in brackets). \
         The terminals deal the standard deck: 45% New-Order, 43% Payment, 4% each of \
         Order-Status, Delivery and Stock-Level (44.5% and 4.5% New-Order and Delivery in the \
         steady-size mode). A rolled-back New-Order (the specification's 1% with an unused \
         item) counts as completed; a transaction aborted by a lock conflict is retried.</p>\n",
    );
    mix_table(out, views);

    if let Some(svg) = &f.recovery_svg {
        out.push_str("<h2>Recovery after a crash at the end of the run</h2>\n");
        out.push_str(
            "<p class=\"note\">The run ends with a crash (no final checkpoint: the buffer pool \
             and the unflushed log tail are lost) and the engine reopens the same simulated \
             SSDs. Times are virtual (the engine runs on the SSDs' clock): analysis, redo and \
             undo, and the rest of the reopen (opening the devices, the checkpoint that ends \
             recovery).</p>\n",
        );
        super::html::segment_legend(out, &RECOVERY_SEGMENTS);
        figure(
            out,
            "fig-recovery",
            svg,
            "Recovery time by phase, virtual milliseconds.",
        );
        recovery_table(out, views);
    }
}
