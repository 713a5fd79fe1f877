//! The MVCC page: a `wafer bench mvcc` result (paper 003 Table 4 and Figure 5): the second
//! snapshot scan's undo reads per device, and their time x address scatter.

use super::charts::{self, RUN_COLORS};
use super::html::{esc, figure, fixed, grouped, page_start, sources_then, swatch};
use super::{Content, Input, ReportError};
use std::fmt::Write as _;
use wafer_workloads::mvcc::{MvccBenchResult, UndoDevice, UndoWriteDevice, WriteWorkload};

const CHART_WIDTH: u32 = 900;

/// One device's trace as a scatter figure; `what` names the commands in the caption.
fn trace_figure(
    out: &mut String,
    id: &str,
    t: &wafer_workloads::iotrace::IoTrace,
    n: usize,
    (device, what): (&str, &str),
) -> Result<(), ReportError> {
    let t0 = t.t_ns.first().copied().unwrap_or(0);
    let col = RUN_COLORS[n % RUN_COLORS.len()];
    let svg = charts::io_scatter(t, t0, (col, col), (CHART_WIDTH / 2, 420))
        .map_err(ReportError::Chart)?;
    let drawn = if t.stride > 1 {
        format!(" (one in {} drawn)", t.stride)
    } else {
        String::new()
    };
    figure(
        out,
        id,
        &svg,
        &format!(
            "{device}: {} {what}{drawn}, virtual time since the first and address on the undo \
             device.",
            t.commands
        ),
    );
    Ok(())
}

fn write_device_name(d: UndoWriteDevice) -> &'static str {
    match d {
        UndoWriteDevice::DiskCached => "disk, 8 MB write cache",
        UndoWriteDevice::DiskWriteThrough => "disk, write-through",
        UndoWriteDevice::Flash => "flash SSD (mcaqe32g)",
    }
}

/// The writes experiment (Figure 4): its table and one scatter per device.
fn writes_section(out: &mut String, r: &MvccBenchResult) -> Result<(), ReportError> {
    let Some(c) = &r.write_config else {
        return Ok(());
    };
    let what = match c.workload {
        WriteWorkload::Tpcc => format!(
            "TPC-C terminals ({} warehouses at population scale {}) under snapshot isolation, \
             their statements interleaved, {} transactions completed",
            c.tpcc.warehouses, c.tpcc.scale, c.txns
        ),
        WriteWorkload::Updates => format!(
            "transactions of {} updates each on a table of {} rows, their operations \
             interleaved, {} committed",
            c.updates_per_txn, c.rows, c.txns
        ),
    };
    let _ = writeln!(
        out,
        "<h2>Rollback-segment writes (Figure 4)</h2>\n<p class=\"note\">{} concurrent \
         {what}: each transaction appends its before-images to its own rollback segment (1 MiB \
         extents), a 4 KiB page written as it fills.</p>",
        c.clients
    );
    out.push_str(
        "<table>\n<thead><tr><th>undo device</th><th>writes</th><th>time per 4 KiB block \
         (ms)</th><th>mean distance between writes (MB)</th><th>segments</th></tr></thead>\n\
         <tbody>\n",
    );
    for (n, w) in r.writes.iter().enumerate() {
        let _ = writeln!(
            out,
            "<tr><td class=\"text\">{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            swatch(RUN_COLORS[n % RUN_COLORS.len()]),
            write_device_name(w.device),
            grouped(w.timing.writes as f64),
            fixed(w.write_ns_per_block / 1e6, 3),
            fixed(w.mean_write_distance / 1e6, 2),
            w.segments
        );
    }
    out.push_str("</tbody>\n</table>\n<div class=\"pair\">\n");
    for (n, w) in r.writes.iter().enumerate() {
        trace_figure(
            out,
            &format!("fig-mvcc-w{n}"),
            &w.trace,
            n,
            (write_device_name(w.device), "writes"),
        )?;
    }
    out.push_str("</div>\n");
    Ok(())
}

fn device_name(d: UndoDevice) -> &'static str {
    match d {
        UndoDevice::Disk => "disk (Barracuda 7200.10)",
        UndoDevice::Flash => "flash SSD (mcaqe32g)",
    }
}

/// The title when none is given.
pub fn default_title(r: &MvccBenchResult) -> String {
    match (r.runs.is_empty(), r.writes.is_empty()) {
        (false, true) => format!(
            "wafer bench mvcc: snapshot reads of {} rows after {} updaters (paper 003 Table 4)",
            r.config.rows, r.config.updaters
        ),
        (true, false) => "wafer bench mvcc: rollback-segment writes (paper 003 Figure 4)".into(),
        _ => "wafer bench mvcc: rollback segments on disk and flash (paper 003 Figures 4-5, \
              Table 4)"
            .into(),
    }
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
        writes_section(&mut out, r)?;
        if r.runs.is_empty() {
            continue;
        }
        out.push_str("<h2>Snapshot reads from rollback segments (Table 4)</h2>\n");
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
            trace_figure(
                &mut out,
                &format!("fig-mvcc-{n}"),
                &run.trace,
                n,
                (device_name(run.device), "reads"),
            )?;
        }
        out.push_str("</div>\n");
    }
    out.push_str("</body>\n</html>\n");
    Ok(out)
}
