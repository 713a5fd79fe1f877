//! The MVCC page: a `wafer bench mvcc` result (paper 003 Table 4 and Figure 5): the second
//! snapshot scan's undo reads per device, and their time x address scatter.

use super::charts::{self, RUN_COLORS};
use super::html::{esc, figure, fixed, grouped, page_start, sources_then, swatch};
use super::{Content, Input, ReportError};
use std::fmt::Write as _;
use wafer_workloads::mvcc::{MvccBenchResult, UndoDevice};

const CHART_WIDTH: u32 = 900;

fn device_name(d: UndoDevice) -> &'static str {
    match d {
        UndoDevice::Disk => "disk (Barracuda 7200.10)",
        UndoDevice::Flash => "flash SSD (mcaqe32g)",
    }
}

/// The title when none is given.
pub fn default_title(r: &MvccBenchResult) -> String {
    format!(
        "wafer bench mvcc: snapshot reads of {} rows after {} updaters (paper 003 Table 4)",
        r.config.rows, r.config.updaters
    )
}

/// The page of the one MVCC result among `inputs`.
pub fn page(title: &str, inputs: &[Input]) -> Result<String, ReportError> {
    let mut out = String::with_capacity(32 * 1024);
    page_start(&mut out, title);
    sources_then(
        &mut out,
        title,
        inputs,
        "run",
        "Times are virtual: the undo device's simulated time.",
    );
    for i in inputs {
        let Content::Mvcc(r) = &i.content else {
            continue;
        };
        let _ = writeln!(
            out,
            "<p class=\"note\">T1 scans {} rows of {} B under snapshot isolation; {} \
             transactions each update every row and commit; T1 scans again and reads every \
             row's version at its snapshot from the rollback segments on the undo device. The \
             table is cached, so the undo device's reads are the scan's I/O.</p>",
            r.config.rows, r.config.value_bytes, r.config.updaters
        );
        out.push_str(
            "<table>\n<thead><tr><th>rollback segments on</th><th>undo pages read</th><th>pages \
             / table pages</th><th>read time (s)</th><th>per page (ms)</th><th>images \
             followed</th></tr></thead>\n<tbody>\n",
        );
        for (n, run) in r.runs.iter().enumerate() {
            let _ = writeln!(
                out,
                "<tr><td class=\"text\">{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{}</td></tr>",
                swatch(RUN_COLORS[n % RUN_COLORS.len()]),
                device_name(run.device),
                grouped(run.undo_pages_read as f64),
                fixed(
                    run.undo_pages_read as f64 / run.table_pages.max(1) as f64,
                    2
                ),
                fixed(run.read_ns as f64 / 1e9, 2),
                fixed(run.read_ns_per_page / 1e6, 3),
                grouped(run.chain_reads as f64)
            );
        }
        out.push_str("</tbody>\n</table>\n");
        if let [a, b] = r.runs.as_slice() {
            let _ = writeln!(
                out,
                "<p class=\"note\">Read time {} / {}: {}x (paper 003: 328 s / 21 s = \
                 15.6x).</p>",
                esc(device_name(a.device)),
                esc(device_name(b.device)),
                fixed(a.read_ns as f64 / b.read_ns.max(1) as f64, 1)
            );
        }
        out.push_str("<h2>The second scan's undo reads (Figure 5)</h2>\n<div class=\"pair\">\n");
        for (n, run) in r.runs.iter().enumerate() {
            let t = &run.trace;
            let t0 = t.t_ns.first().copied().unwrap_or(0);
            let c = RUN_COLORS[n % RUN_COLORS.len()];
            let svg = charts::io_scatter(t, t0, (c, c), (CHART_WIDTH / 2, 420))
                .map_err(ReportError::Chart)?;
            figure(
                &mut out,
                &format!("fig-mvcc-{n}"),
                &svg,
                &format!(
                    "{}: {} reads{}, time since the scan began and address on the undo \
                     device.",
                    device_name(run.device),
                    t.commands,
                    if t.stride > 1 {
                        format!(" (one in {} drawn)", t.stride)
                    } else {
                        String::new()
                    }
                ),
            );
        }
        out.push_str("</div>\n");
    }
    out.push_str("</body>\n</html>\n");
    Ok(out)
}
