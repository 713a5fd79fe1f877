//! The data of the device page's charts (`wafer sim` results), and the drawn SVGs.

use super::{pick_unit, with_unit, Unit, CHART_WIDTH, TIME_UNITS};
use crate::report::charts::{self, Line, LinePanel};
use crate::report::SimView;

/// The x axis of the device charts: virtual time when every run has it, else host writes in
/// device capacities.
pub struct SimAxis {
    pub desc: String,
    /// Whether x is virtual time (else capacities written).
    pub time: bool,
}

fn sim_x(views: &[SimView<'_>]) -> (SimAxis, Unit) {
    let time = !views.is_empty()
        && views
            .iter()
            .all(|v| v.run.rows.iter().all(|r| r.virtual_time_s.is_some()));
    if time {
        let max = views
            .iter()
            .flat_map(|v| v.run.rows.iter().filter_map(|r| r.virtual_time_s))
            .fold(0.0, f64::max);
        let u = pick_unit(max, &TIME_UNITS);
        (
            SimAxis {
                desc: with_unit("virtual time since the measured run started", u.name),
                time: true,
            },
            u,
        )
    } else {
        (
            SimAxis {
                desc: "host writes since the measured run started (x logical capacity)".into(),
                time: false,
            },
            Unit { div: 1.0, name: "" },
        )
    }
}

fn sim_line(
    v: &SimView<'_>,
    time: bool,
    u: Unit,
    f: impl Fn(&wafer_workloads::IntervalRow) -> Option<f64>,
) -> Line {
    Line {
        color: v.color,
        points: v
            .run
            .rows
            .iter()
            .filter_map(|r| {
                let x = if time {
                    r.virtual_time_s? / u.div
                } else {
                    r.capacity_multiple
                };
                Some((x, f(r)?))
            })
            .collect(),
    }
}

/// SSD WAF of each interval and cumulative, a line per simulation, against the [`SimAxis`].
pub fn sim_waf(views: &[SimView<'_>]) -> (SimAxis, Vec<Line>, Vec<Line>) {
    let (axis, u) = sim_x(views);
    let interval = views
        .iter()
        .map(|v| sim_line(v, axis.time, u, |r| Some(r.waf_interval)))
        .collect();
    let cumulative = views
        .iter()
        .map(|v| sim_line(v, axis.time, u, |r| Some(r.waf_cumulative)))
        .collect();
    (axis, interval, cumulative)
}

/// Host write throughput (MB/s, virtual time) of each interval, against the [`SimAxis`]; `None`
/// when no simulation ran with the timing model.
pub fn sim_write_rate(views: &[SimView<'_>]) -> Option<(SimAxis, Vec<Line>)> {
    if !views
        .iter()
        .any(|v| v.run.rows.iter().any(|r| r.write_mb_s.is_some()))
    {
        return None;
    }
    let (axis, u) = sim_x(views);
    let lines = views
        .iter()
        .map(|v| sim_line(v, axis.time, u, |r| r.write_mb_s))
        .collect();
    Some((axis, lines))
}

/// The charts of the device page.
pub struct SimFigures {
    pub waf_svg: String,
    pub rate_svg: Option<String>,
}

pub fn draw_sim(views: &[SimView<'_>]) -> Result<SimFigures, String> {
    let (axis, interval, cumulative) = sim_waf(views);
    let waf_svg = charts::line_panels(
        &[
            LinePanel {
                caption: Some("SSD WAF per interval"),
                x_desc: &axis.desc,
                y_desc: "SSD WAF (media / host bytes)",
                lines: &interval,
            },
            LinePanel {
                caption: Some("SSD WAF since the run started"),
                x_desc: &axis.desc,
                y_desc: "cumulative SSD WAF",
                lines: &cumulative,
            },
        ],
        (CHART_WIDTH, 440),
    )?;
    let rate_svg = match sim_write_rate(views) {
        Some((axis, lines)) => Some(charts::line_chart(
            &LinePanel {
                caption: None,
                x_desc: &axis.desc,
                y_desc: "host writes per interval (MB/s, virtual)",
                lines: &lines,
            },
            (CHART_WIDTH, 420),
        )?),
        None => None,
    };
    Ok(SimFigures { waf_svg, rate_svg })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim(timing: bool) -> wafer_workloads::simrun::RunSummary {
        let mut ssd = flashsim::SsdConfig::small(8 << 20, 0.2);
        ssd.timing.enabled = timing;
        let params = wafer_workloads::RunParams {
            capacity_multiple: 1.0,
            ..Default::default()
        };
        wafer_workloads::run(
            ssd,
            &wafer_workloads::Workload::default(),
            &params,
            &mut wafer_workloads::Quiet,
        )
        .expect("small simulation runs")
    }

    #[test]
    fn sim_charts_data() {
        let (a, b) = (sim(true), sim(false));
        let v = |run, i| SimView {
            label: format!("s{i}"),
            color: charts::run_color(i),
            run,
        };
        // Both timed: against virtual time.
        let timed = [v(&a, 0), v(&a, 1)];
        let (axis, interval, cumulative) = sim_waf(&timed);
        assert!(axis.time && axis.desc.starts_with("virtual time"));
        assert_eq!(interval[0].points.len(), a.rows.len());
        let last = a.rows.last().unwrap();
        assert_eq!(cumulative[0].points.last().unwrap().1, last.waf_cumulative);
        assert!(sim_write_rate(&timed).is_some());
        // One without timing: every run against host writes in capacities.
        let mixed = [v(&a, 0), v(&b, 1)];
        let (axis, interval, _) = sim_waf(&mixed);
        assert!(!axis.time && axis.desc.contains("x logical capacity"));
        assert_eq!(
            interval[1].points.last().unwrap(),
            &(
                b.rows.last().unwrap().capacity_multiple,
                b.rows.last().unwrap().waf_interval
            )
        );
        assert!(sim_write_rate(&[v(&b, 0)]).is_none());
    }
}
