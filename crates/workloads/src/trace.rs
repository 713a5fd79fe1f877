//! Block traces replayed on flashsim: parsing the common text formats into device commands.
//!
//! Formats (chosen by `--trace-format` or detected from the first lines):
//! - **fio iolog v2**: a `fio version 2 iolog` header, then `FILE ACTION [OFFSET LENGTH]` with
//!   byte offsets; actions `read`, `write`, `trim` carry a range, `add`/`open`/`close`/`sync`/
//!   `datasync`/`wait` do not and are skipped.
//! - **fio iolog v3**: a `fio version 3 iolog` header, then `TIME FILE ACTION [OFFSET LENGTH]`.
//! - **blkparse** text output (its default format), 512-byte sectors:
//!   `MAJ,MIN CPU SEQ TIME PID ACTION RWBS SECTOR + COUNT [PROC]`. Queue events (`Q`) are replayed; a trace without any uses
//!   the issue events (`D`). RWBS `D...` is a discard (trim), `W` a write, `R` a read; summary
//!   lines and other events are skipped.
//! - **MQSim/SNIA-style ASCII**: `ARRIVAL_NS DEVICE LBA SECTORS TYPE` (512-byte sectors; type 0 is
//!   a write, 1 a read).
//!
//! Replay maps every command onto the simulated device: the offset modulo the device's logical
//! capacity, aligned down to the mapping unit, the length rounded up to whole units (clipped at
//! the end of the device). The trace repeats from its start until the run has written the
//! amount asked (`--capacity-multiple`); a trace shorter than its device's steady state then
//! repeats itself, which is not the same workload as a longer trace.

use crate::synthetic::{Op, OpKind};
use serde::{Deserialize, Serialize};

/// A trace text format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceFormat {
    /// fio iolog version 2.
    FioV2,
    /// fio iolog version 3 (timestamps first).
    FioV3,
    /// blkparse's default text output.
    Blkparse,
    /// MQSim/SNIA-style ASCII lines.
    Mqsim,
}

impl std::str::FromStr for TraceFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "fio-v2" | "fio2" => Ok(TraceFormat::FioV2),
            "fio-v3" | "fio3" => Ok(TraceFormat::FioV3),
            "blkparse" => Ok(TraceFormat::Blkparse),
            "mqsim" | "ascii" => Ok(TraceFormat::Mqsim),
            _ => Err(format!(
                "unknown trace format '{s}' (fio-v2, fio-v3, blkparse, mqsim)"
            )),
        }
    }
}

/// A trace that cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("trace line {line}: {msg}")]
pub struct TraceError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub msg: String,
}

/// A parsed trace: its commands in order.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The format it was read in.
    pub format: TraceFormat,
    /// Its commands (those with a range), in order.
    pub ops: Vec<Op>,
    /// Lines that carry no command (headers, file actions, other blkparse events, summaries).
    pub skipped_lines: u64,
}

/// What a summary says about a replayed trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceInfo {
    /// The trace file.
    pub path: String,
    /// Its format.
    pub format: Option<TraceFormat>,
    /// Commands in one pass.
    pub commands: u64,
    /// Writes, reads and trims in one pass.
    pub writes: u64,
    /// Reads in one pass.
    pub reads: u64,
    /// Trims in one pass.
    pub trims: u64,
    /// Bytes written by one pass (before mapping onto the device).
    pub write_bytes: u64,
    /// Times the trace was replayed (fractional: the run stopped part-way through a pass).
    pub passes: f64,
}

/// Guesses the format from the first lines that are not empty.
pub fn detect(text: &str) -> Option<TraceFormat> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next()?;
    if first.starts_with("fio version 2 iolog") {
        return Some(TraceFormat::FioV2);
    }
    if first.starts_with("fio version 3 iolog") {
        return Some(TraceFormat::FioV3);
    }
    for l in std::iter::once(first).chain(lines.take(20)) {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() >= 7 && f[0].contains(',') && f[3].contains('.') {
            return Some(TraceFormat::Blkparse);
        }
        if f.len() == 5 && f.iter().all(|x| x.parse::<u64>().is_ok()) {
            return Some(TraceFormat::Mqsim);
        }
    }
    None
}

fn num(s: &str, line: usize, what: &str) -> Result<u64, TraceError> {
    s.parse().map_err(|_| TraceError {
        line,
        msg: format!("{what} '{s}' is not a whole number"),
    })
}

fn op(kind: OpKind, offset_bytes: u64, len_bytes: u64) -> Op {
    Op {
        kind,
        offset_bytes,
        len_bytes,
    }
}

/// Parses `text` in `format` (detected if None).
pub fn parse(text: &str, format: Option<TraceFormat>) -> Result<Trace, TraceError> {
    let format = match format.or_else(|| detect(text)) {
        Some(f) => f,
        None => {
            return Err(TraceError {
                line: 1,
                msg: "unknown trace format: expected a fio iolog (v2 or v3) header, blkparse \
                      text output or MQSim ASCII lines (give --trace-format)"
                    .into(),
            })
        }
    };
    let mut ops = Vec::new();
    let mut skipped = 0u64;
    let mut blk_q = Vec::new();
    let mut blk_d = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let f: Vec<&str> = raw.split_whitespace().collect();
        if f.is_empty() || f[0].starts_with('#') {
            skipped += 1;
            continue;
        }
        match format {
            TraceFormat::FioV2 | TraceFormat::FioV3 => {
                if f[0] == "fio" {
                    skipped += 1;
                    continue;
                }
                let at = if format == TraceFormat::FioV3 { 2 } else { 1 };
                let Some(action) = f.get(at) else {
                    return Err(TraceError {
                        line: n,
                        msg: "expected FILE ACTION [OFFSET LENGTH]".into(),
                    });
                };
                let kind = match *action {
                    "read" => OpKind::Read,
                    "write" => OpKind::Write,
                    "trim" => OpKind::Trim,
                    "add" | "open" | "close" | "sync" | "datasync" | "wait" => {
                        skipped += 1;
                        continue;
                    }
                    a => {
                        return Err(TraceError {
                            line: n,
                            msg: format!("unknown fio iolog action '{a}'"),
                        })
                    }
                };
                let (Some(o), Some(l)) = (f.get(at + 1), f.get(at + 2)) else {
                    return Err(TraceError {
                        line: n,
                        msg: format!("'{action}' needs an offset and a length"),
                    });
                };
                ops.push(op(kind, num(o, n, "offset")?, num(l, n, "length")?));
            }
            TraceFormat::Blkparse => {
                // MAJ,MIN CPU SEQ TIME PID ACTION RWBS SECTOR + COUNT [PROC]
                if f.len() < 10 || !f[0].contains(',') || f[8] != "+" {
                    skipped += 1;
                    continue;
                }
                let rwbs = f[6];
                let kind = if rwbs.starts_with('D') {
                    OpKind::Trim
                } else if rwbs.contains('W') {
                    OpKind::Write
                } else if rwbs.contains('R') {
                    OpKind::Read
                } else {
                    skipped += 1;
                    continue;
                };
                let o = op(
                    kind,
                    num(f[7], n, "sector")? * 512,
                    num(f[9], n, "sector count")? * 512,
                );
                match f[5] {
                    "Q" => blk_q.push(o),
                    "D" => blk_d.push(o),
                    _ => skipped += 1,
                }
            }
            TraceFormat::Mqsim => {
                if f.len() != 5 {
                    return Err(TraceError {
                        line: n,
                        msg: "expected ARRIVAL_NS DEVICE LBA SECTORS TYPE".into(),
                    });
                }
                let kind = match num(f[4], n, "type")? {
                    0 => OpKind::Write,
                    1 => OpKind::Read,
                    t => {
                        return Err(TraceError {
                            line: n,
                            msg: format!("request type {t} is neither 0 (write) nor 1 (read)"),
                        })
                    }
                };
                ops.push(op(
                    kind,
                    num(f[2], n, "LBA")? * 512,
                    num(f[3], n, "sector count")? * 512,
                ));
            }
        }
    }
    if format == TraceFormat::Blkparse {
        ops = if blk_q.is_empty() { blk_d } else { blk_q };
    }
    ops.retain(|o| o.len_bytes > 0);
    if !ops.iter().any(|o| o.kind == OpKind::Write) {
        return Err(TraceError {
            line: text.lines().count(),
            msg: "the trace holds no write with a length (a run is measured in bytes written)"
                .into(),
        });
    }
    Ok(Trace {
        format,
        ops,
        skipped_lines: skipped,
    })
}

impl Trace {
    /// What a summary says of it (before replay: no passes yet).
    pub fn info(&self, path: &str) -> TraceInfo {
        let count = |k| self.ops.iter().filter(|o| o.kind == k).count() as u64;
        TraceInfo {
            path: path.to_string(),
            format: Some(self.format),
            commands: self.ops.len() as u64,
            writes: count(OpKind::Write),
            reads: count(OpKind::Read),
            trims: count(OpKind::Trim),
            write_bytes: self
                .ops
                .iter()
                .filter(|o| o.kind == OpKind::Write)
                .map(|o| o.len_bytes)
                .sum(),
            passes: 0.0,
        }
    }
}

/// Replays a trace on a device of `capacity` bytes with `unit`-byte mapping units, repeating it.
pub struct TraceSource<'a> {
    ops: &'a [Op],
    next: usize,
    capacity: u64,
    unit: u64,
    /// Commands handed out.
    pub issued: u64,
}

impl<'a> TraceSource<'a> {
    /// Replays `trace` (which must hold a command) on `capacity` bytes of `unit`-byte units.
    pub fn new(trace: &'a Trace, capacity: u64, unit: u64) -> TraceSource<'a> {
        assert!(!trace.ops.is_empty() && capacity >= unit && unit > 0);
        TraceSource {
            ops: &trace.ops,
            next: 0,
            capacity: capacity - capacity % unit,
            unit,
            issued: 0,
        }
    }

    /// The next command, mapped onto the device.
    pub fn next_op(&mut self) -> Op {
        let o = self.ops[self.next];
        self.next = (self.next + 1) % self.ops.len();
        self.issued += 1;
        let start = o.offset_bytes % self.capacity;
        let start = start - start % self.unit;
        let end = (o.offset_bytes % self.capacity + o.len_bytes)
            .div_ceil(self.unit)
            .saturating_mul(self.unit)
            .min(self.capacity);
        op(o.kind, start, (end - start).max(self.unit))
    }

    /// Passes over the trace so far.
    pub fn passes(&self) -> f64 {
        self.issued as f64 / self.ops.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_v2_and_v3() {
        let v2 = "fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x write 4096 8192\n\
                  /dev/x read 0 4096\n/dev/x trim 8192 4096\n/dev/x close\n";
        let t = parse(v2, None).unwrap();
        assert_eq!(t.format, TraceFormat::FioV2);
        assert_eq!(
            t.ops,
            vec![
                op(OpKind::Write, 4096, 8192),
                op(OpKind::Read, 0, 4096),
                op(OpKind::Trim, 8192, 4096)
            ]
        );
        assert_eq!(t.skipped_lines, 4);
        let v3 = "fio version 3 iolog\n0 /dev/x add\n10 /dev/x open\n20 /dev/x write 0 4096\n";
        let t = parse(v3, None).unwrap();
        assert_eq!(t.format, TraceFormat::FioV3);
        assert_eq!(t.ops, vec![op(OpKind::Write, 0, 4096)]);
        assert!(parse("fio version 2 iolog\n/dev/x write 1\n", None).is_err());
        assert!(parse("fio version 2 iolog\n/dev/x frob 1 2\n", None)
            .unwrap_err()
            .msg
            .contains("frob"));
    }

    #[test]
    fn blkparse_uses_queue_events() {
        let text = "  8,16   0        1     0.000000000  1234  Q   W 16 + 8 [fio]\n\
                    \x20 8,16   0        2     0.000001000  1234  G   W 16 + 8 [fio]\n\
                    \x20 8,16   0        3     0.000002000  1234  D   W 16 + 8 [fio]\n\
                    \x20 8,16   1        4     0.000003000  1234  Q   R 0 + 8 [fio]\n\
                    \x20 8,16   1        5     0.000004000  1234  Q  DS 32 + 16 [fio]\n\
                    CPU0 (8,16):\n Reads Queued: 1\n";
        let t = parse(text, None).unwrap();
        assert_eq!(t.format, TraceFormat::Blkparse);
        assert_eq!(
            t.ops,
            vec![
                op(OpKind::Write, 8192, 4096),
                op(OpKind::Read, 0, 4096),
                op(OpKind::Trim, 16384, 8192)
            ]
        );
    }

    #[test]
    fn mqsim_ascii() {
        let t = parse("0 0 8 8 0\n100 0 0 8 1\n", None).unwrap();
        assert_eq!(t.format, TraceFormat::Mqsim);
        assert_eq!(
            t.ops,
            vec![op(OpKind::Write, 4096, 4096), op(OpKind::Read, 0, 4096)]
        );
        assert!(parse("0 0 8 8 7\n", Some(TraceFormat::Mqsim)).is_err());
    }

    #[test]
    fn a_trace_without_writes_or_format_is_refused() {
        assert!(parse("0 0 8 8 1\n", None)
            .unwrap_err()
            .msg
            .contains("no write"));
        assert!(parse("hello world\n", None)
            .unwrap_err()
            .msg
            .contains("unknown trace format"));
    }

    #[test]
    fn replay_maps_onto_the_device_and_repeats() {
        let t = parse(
            "fio version 2 iolog\n/dev/x write 10000 100\n/dev/x write 40960 8192\n",
            None,
        )
        .unwrap();
        let mut s = TraceSource::new(&t, 32768, 4096);
        // 10000 aligns down to 8192; 100 bytes round up to one unit.
        assert_eq!(s.next_op(), op(OpKind::Write, 8192, 4096));
        // 40960 mod 32768 = 8192, two units.
        assert_eq!(s.next_op(), op(OpKind::Write, 8192, 8192));
        assert_eq!(s.next_op(), op(OpKind::Write, 8192, 4096));
        assert_eq!(s.passes(), 1.5);
    }
}
