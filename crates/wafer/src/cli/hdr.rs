//! `--hdr DIR` of `wafer bench ycsb` and `wafer bench tpcc`: every operation latency of a run's
//! measured phase as an HdrHistogram interval log, one file per configuration
//! (`DIR/CONFIG.hlog`), so HdrHistogram tools (HistogramLogAnalyzer, hdr-plot, the Java
//! `HistogramLogProcessor`) read it.
//!
//! The file is the standard interval log (format version 1.3): comment lines, a
//! `#[StartTime: ...]` and a `#[BaseTime: ...]` of 0 (timestamps are virtual seconds since the run
//! phase started), the CSV legend, `#[MaxValueDivisor: 1000000.000]` (values are virtual
//! nanoseconds, so the `Interval_Max` column is in milliseconds, the tools' default), then one line
//! per series interval of the run: start (s), length (s), max (ms) and the interval's histogram,
//! V2-compressed (deflate) and base64-encoded. Merged, the intervals are the run's whole latency
//! histogram.

use super::CliError;
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};
use wafer_workloads::bench::LatencyLog;

/// The CSV legend line the Java `HistogramLogWriter` writes after the headers.
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(if s.is_finite() { s.max(0.0) } else { 0.0 })
}

/// The interval log of `log`; `what` goes into the leading comment (e.g. "wafer bench ycsb,
/// in-place").
pub fn encode(what: &str, log: &LatencyLog) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    {
        let mut builder = IntervalLogWriterBuilder::new();
        builder
            .add_comment(&format!(
                "{what}: latency of every operation of the run phase, one histogram per series \
                 interval"
            ))
            .add_comment(
                "values in virtual nanoseconds; timestamps in seconds of virtual time since the \
                 run phase started",
            )
            .add_comment("[Histogram log format version 1.3]")
            .with_start_time(UNIX_EPOCH)
            .with_base_time(UNIX_EPOCH);
        builder
            .begin_log_with(&mut out, &mut serializer)
            .map_err(|e| e.to_string())?;
    }
    out.extend_from_slice(LEGEND.as_bytes());
    // The divisor lives in the writer, which writes its `#[MaxValueDivisor: ...]` line when it
    // begins: after the legend (readers skip comment lines wherever they are).
    let mut writer = IntervalLogWriterBuilder::new()
        .with_max_value_divisor(1e6)
        .begin_log_with(&mut out, &mut serializer)
        .map_err(|e| e.to_string())?;
    for i in &log.intervals {
        let h = i.histogram();
        writer
            .write_histogram(h.hdr(), secs(i.start_s), secs(i.end_s - i.start_s), None)
            .map_err(|e| format!("cannot encode a latency histogram: {e:?}"))?;
    }
    Ok(out)
}

/// `DIR/NAME.hlog` (a `/` in the name becomes `-`).
pub fn path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{}.hlog", name.replace(['/', '\\'], "-")))
}

/// Creates `dir` (before a run, so a bad `--hdr` stops it early).
pub fn prepare(dir: &Path) -> Result<(), CliError> {
    if dir.exists() && !dir.is_dir() {
        return Err(CliError::Usage(format!(
            "--hdr {}: not a directory",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::Usage(format!("--hdr {}: cannot create it: {e}", dir.display())))?;
    super::check_writable("--hdr", &dir.join(".wafer-write-test.hlog"))
}

/// Writes the log of the run `name` to `DIR/NAME.hlog`.
pub fn write(dir: &Path, command: &str, name: &str, log: &LatencyLog) -> Result<(), CliError> {
    let bytes = encode(&format!("{command}, {name}"), log).map_err(CliError::Run)?;
    let p = path(dir, name);
    std::fs::write(&p, bytes)
        .map_err(|e| CliError::Run(format!("cannot write {}: {e}", p.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::Histogram;
    use wafer_workloads::bench::LatencyInterval;

    /// Reads an interval log back: (start s, length s, histogram) per interval.
    fn read(bytes: &[u8]) -> Vec<(f64, f64, Histogram<u64>)> {
        let mut d = Deserializer::new();
        IntervalLogIterator::new(bytes)
            .filter_map(|e| match e.expect("log entry parses") {
                LogEntry::Interval(i) => {
                    let raw = base64::engine::general_purpose::STANDARD
                        .decode(i.encoded_histogram())
                        .expect("base64");
                    let h: Histogram<u64> = d.deserialize(&mut &raw[..]).expect("histogram");
                    Some((
                        i.start_timestamp().as_secs_f64(),
                        i.duration().as_secs_f64(),
                        h,
                    ))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_log_reads_back_to_the_same_counts() {
        let mut a = flashsim::LatencyHistogram::new();
        let mut b = flashsim::LatencyHistogram::new();
        for v in 1..=5000u64 {
            a.record(v * 997);
            if v % 3 == 0 {
                b.record(v * 12_345);
            }
        }
        let log = LatencyLog {
            intervals: vec![
                LatencyInterval {
                    start_s: 0.0,
                    end_s: 0.25,
                    counts: a.counts(),
                },
                LatencyInterval {
                    start_s: 0.25,
                    end_s: 1.5,
                    counts: b.counts(),
                },
                LatencyInterval {
                    start_s: 1.5,
                    end_s: 1.75,
                    counts: Vec::new(),
                },
            ],
        };
        let bytes = encode("test, a", &log).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            text.starts_with("#test, a: latency of every operation"),
            "{text}"
        );
        for line in [
            "#[Histogram log format version 1.3]",
            "#[StartTime: 0.000 (seconds since epoch)]",
            "#[BaseTime: 0.000 (seconds since epoch)]",
            LEGEND.trim_end(),
            "#[MaxValueDivisor: 1000000.000]",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in {text}");
        }
        let back = read(&bytes);
        assert_eq!(back.len(), 3);
        for ((start, len, h), (want, i)) in back.iter().zip([&a, &b].iter().zip(&log.intervals)) {
            assert_eq!(h, want.hdr());
            assert_eq!(h.len(), want.hdr().len());
            assert!((start - i.start_s).abs() < 1e-3 && (len - (i.end_s - i.start_s)).abs() < 1e-3);
        }
        assert!(back[2].2.is_empty());
        // The max column is in milliseconds (divisor 10^6).
        let second = text.lines().find(|l| l.starts_with("0.250,")).unwrap();
        let max_ms: f64 = second.split(',').nth(2).unwrap().parse().unwrap();
        assert!(
            (max_ms - b.hdr().max() as f64 / 1e6).abs() < 1e-3,
            "{second}"
        );
    }
}
