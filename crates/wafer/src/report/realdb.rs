//! The real-database page: results of `wafer realdb` (one section per file, so several
//! databases can share a page), each with its table, a bar per setting of where the bytes of a
//! transaction come from (the database, the file system, the SSD), how far repeated runs agree,
//! and the crash experiments.

use super::charts::{self, Bar, Segment};
use super::html::{esc, figure, fixed, grouped, page_start, segment_legend, sources_then};
use super::{Content, Input, ReportError};
use crate::cli::realdb::device_line;
use crate::realdb::RealdbResult;
use plotters::style::RGBColor;
use std::fmt::Write as _;

const CHART_WIDTH: u32 = 900;

const SEGMENTS: [Segment; 3] = [
    Segment {
        label: "written by the database",
        color: RGBColor(66, 133, 244),
    },
    Segment {
        label: "added by the file system",
        color: RGBColor(251, 188, 5),
    },
    Segment {
        label: "added by the SSD (GC)",
        color: RGBColor(219, 68, 55),
    },
];

/// The title when none is given.
pub fn default_title(inputs: &[Input]) -> String {
    let names: Vec<&str> = results(inputs).iter().map(|r| r.recipe.as_str()).collect();
    format!(
        "wafer realdb: {} on the simulated SSD",
        if names.is_empty() {
            "databases".to_string()
        } else {
            names.join(", ")
        }
    )
}

fn results(inputs: &[Input]) -> Vec<&RealdbResult> {
    inputs
        .iter()
        .filter_map(|i| match &i.content {
            Content::Realdb(r) => Some(r.as_ref()),
            _ => None,
        })
        .collect()
}

/// The bytes of one transaction by origin: what the database wrote that reached the device,
/// what the file system added, what the SSD added.
fn split(db: f64, host: f64, media: f64) -> Vec<f64> {
    vec![db.min(host), (host - db).max(0.0), (media - host).max(0.0)]
}

fn runs_section(out: &mut String, r: &RealdbResult, n: usize) -> Result<(), ReportError> {
    out.push_str(
        "<table>\n<thead><tr><th>setting</th><th>txns</th><th>DB B/txn</th><th>host \
         B/txn</th><th>flash B/txn</th><th>flushes/txn</th><th>FS WAF</th><th>SSD \
         WAF</th><th>total WAF</th><th>database counters per txn</th></tr></thead>\n<tbody>\n",
    );
    for x in &r.runs {
        let t = x.db.txns.max(1) as f64;
        let detail: Vec<String> =
            x.db.detail
                .iter()
                .map(|(k, v)| format!("{k} {}", fixed(*v as f64 / t, 2)))
                .collect();
        let _ = writeln!(
            out,
            "<tr><td class=\"text\">{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td></tr>",
            esc(&x.setting),
            if r.runs.iter().filter(|y| y.setting == x.setting).count() > 1 {
                format!(" (run {})", x.repeat + 1)
            } else {
                String::new()
            },
            grouped(x.db.txns as f64),
            grouped(x.db_bytes_per_txn),
            grouped(x.host_bytes_per_txn),
            grouped(x.media_bytes_per_txn),
            fixed(x.device.flushes as f64 / t, 2),
            fixed(x.fs_waf, 2),
            fixed(x.ssd_waf, 2),
            fixed(x.total_waf, 2),
            esc(&detail.join(", "))
        );
    }
    out.push_str("</tbody>\n</table>\n");
    if let Some(first) = r.runs.first() {
        let _ = writeln!(
            out,
            "<p class=\"note\">DB bytes: {}. Host bytes: what the file system sent to the \
             device; flash bytes: what the flash programmed (GC included). FS WAF = host / DB, \
             SSD WAF = flash / host, total WAF = flash / DB. An FS WAF below 1 means the \
             database wrote bytes that never reached the device (files deleted while still in \
             the page cache).</p>",
            esc(&first.db.source)
        );
    }
    let bars: Vec<Bar> = r
        .runs
        .iter()
        .map(|x| Bar {
            label: x.setting.clone(),
            values: split(
                x.db_bytes_per_txn,
                x.host_bytes_per_txn,
                x.media_bytes_per_txn,
            ),
        })
        .collect();
    let svg = charts::stacked_bars(
        &SEGMENTS,
        &bars,
        "flash bytes programmed per transaction (bar length), by origin",
        "nothing written",
        CHART_WIDTH,
    )
    .map_err(ReportError::Chart)?;
    segment_legend(out, &SEGMENTS);
    figure(
        out,
        &format!("fig-realdb-{n}"),
        &svg,
        "Per transaction: the database's bytes that reached the device, what the file system \
         added (its journal, metadata, whole blocks), what the SSD added (GC relocations).",
    );
    Ok(())
}

fn spread_section(out: &mut String, r: &RealdbResult) {
    out.push_str(
        "<h3>Repeatability</h3>\n<table>\n<thead><tr><th>setting</th><th>runs</th><th>DB \
         bytes</th><th>host bytes</th><th>flash bytes</th></tr></thead>\n<tbody>\n",
    );
    for s in &r.spread {
        let _ = writeln!(
            out,
            "<tr><td class=\"text\">{}</td><td>{}</td><td>{}%</td><td>{}%</td><td>{}%</td></tr>",
            esc(&s.setting),
            s.runs,
            fixed(s.db_bytes_pct, 2),
            fixed(s.host_bytes_pct, 2),
            fixed(s.media_bytes_pct, 2)
        );
    }
    out.push_str(
        "</tbody>\n</table>\n<p class=\"note\">(max - min) / mean over the runs of each \
         setting, each on a fresh device: real databases are not deterministic (thread \
         interleaving, timers).</p>\n",
    );
}

fn crash_section(out: &mut String, r: &RealdbResult) {
    out.push_str(
        "<table>\n<thead><tr><th>setting</th><th>acknowledged</th><th>found after \
         recovery</th><th>cache units lost</th><th>flushes before the cut</th><th>durability \
         promised</th><th>recovered</th><th>check</th></tr></thead>\n<tbody>\n",
    );
    for c in &r.crashes {
        let _ = writeln!(
            out,
            "<tr><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td class=\"text\">{}</td></tr>",
            esc(&c.setting),
            c.acknowledged,
            c.found,
            c.lost_units,
            c.flushes_before_cut,
            if c.durable_promised { "yes" } else { "no" },
            if c.recovered { "yes" } else { "<b>NO</b>" },
            esc(&c.check)
        );
    }
    out.push_str(
        "</tbody>\n</table>\n<p class=\"note\">The device's power was cut (its volatile write \
         cache lost, then left off) a few device writes after the given number of commits had \
         returned; the database and the file system were dropped as a machine's power cut \
         drops them, the file system mounted again and the database opened. Recovered: it \
         opened, passed its check, holds no gap, and holds every acknowledged commit where its \
         setting promises durability.</p>\n",
    );
}

/// The page.
pub fn page(title: &str, inputs: &[Input]) -> Result<String, ReportError> {
    let mut out = String::with_capacity(32 * 1024);
    page_start(&mut out, title);
    sources_then(
        &mut out,
        title,
        inputs,
        "run",
        "Unmodified databases on a simulated SSD mounted through FUSE, with a real file system \
         on a loop device: byte counts are measured, times are not shown (the simulated device \
         answers as fast as the model computes).",
    );
    for (n, r) in results(inputs).into_iter().enumerate() {
        let _ = writeln!(
            out,
            "<h2>{} ({} on a loop device)</h2>\n<p class=\"note\">{}. {}</p>",
            esc(&r.recipe),
            esc(&r.fs),
            esc(&r.workload),
            esc(&device_line(r))
        );
        if !r.runs.is_empty() {
            runs_section(&mut out, r, n)?;
        }
        if !r.spread.is_empty() {
            spread_section(&mut out, r);
        }
        if !r.crashes.is_empty() {
            out.push_str("<h3>Power cuts</h3>\n");
            crash_section(&mut out, r);
        }
    }
    out.push_str("</body>\n</html>\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_split_by_origin() {
        assert_eq!(split(100.0, 150.0, 300.0), vec![100.0, 50.0, 150.0]);
        // Bytes the database wrote that never reached the device are not drawn.
        assert_eq!(split(200.0, 150.0, 150.0), vec![150.0, 0.0, 0.0]);
    }
}
