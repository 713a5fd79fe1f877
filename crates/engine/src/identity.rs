//! Which database a device belongs to, and which checkpoint it has reached: the rules that keep
//! a data device and a log device that do not belong together from opening (issue 12).
//!
//! A database gets a random 128-bit id when it is created (the log master keeps it). Every
//! completed checkpoint has a *generation*, counted from 1. Each checkpoint stamps the data
//! device with (id, generation, checkpoint LSN) before the log master names it:
//!
//! * in place, the database header, rewritten (one device block) after the checkpoint record is
//!   durable;
//! * out of place, the map snapshot (written before the checkpoint record, tagged with its LSN
//!   and the log's durable LSN at that moment); the id is in the device header, written once.
//!
//! Then the master is written with the same generation. So after a crash the data device is
//! at the log's generation `g` or at `g + 1`, never elsewhere, and open accepts exactly:
//!
//! * the same id;
//! * data generation `g`, naming the master's checkpoint LSN;
//! * data generation `g + 1` naming an LSN after the master's checkpoint, when the log holds a
//!   checkpoint record there (the crash hit between the data stamp and the master), or, for a
//!   stamp written before its record (out of place), when the log ends between the LSN that was
//!   durable when the snapshot was written and the snapshot's tag (the crash hit between the
//!   snapshot and its record: that unfinished snapshot is then discarded before anything is
//!   logged, so it can never be mistaken for a finished one).
//!
//! Anything else is [`Error::Mismatch`] saying what was found (a stale data file, a stale log, a
//! log of another database), or [`Error::CorruptMetadata`] when the stamp that would match is
//! damaged. The checks read only; a refused open writes nothing (in place, opening the data
//! device first repairs torn pages from its own doublewrite copies).

use crate::error::{Error, Result};
use crate::page::Lsn;
use crate::wal::Master;

/// A database's identity: random at creation.
pub type DbId = u128;

/// A fresh database id (random, from the operating system's entropy through `rand`).
pub(crate) fn new_id() -> DbId {
    rand::random::<DbId>().max(1)
}

/// How ids are shown in messages.
pub(crate) fn show(id: DbId) -> String {
    format!("{id:032x}")
}

/// What a checkpoint records on the data device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamp {
    pub id: DbId,
    /// Completed checkpoints since creation, this one included.
    pub generation: u64,
    /// LSN of this checkpoint's record.
    pub checkpoint_lsn: Lsn,
}

/// What the data device says at open.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataStamp {
    pub stamp: Stamp,
    /// Set when the stamp is written before its checkpoint record (out of place: the snapshot):
    /// every log record below this LSN was durable when it was written.
    pub log_durable: Option<Lsn>,
    /// Metadata that could have held a newer stamp but does not read back (out of place: a
    /// snapshot slot that fails its checksum).
    pub damaged: Option<String>,
}

/// How the data device stands to the log, when they belong together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Agreement {
    /// Both at the same checkpoint.
    Same,
    /// The data device is one checkpoint ahead (at `checkpoint_lsn`): the crash came before the
    /// master named it. Recovery confirms it with [`settle`].
    Ahead {
        checkpoint_lsn: Lsn,
        log_durable: Option<Lsn>,
    },
}

/// Checks the data device's stamp against the log (`log_id`, `master`).
pub(crate) fn check(data: &DataStamp, log_id: DbId, master: &Master) -> Result<Agreement> {
    let d = data.stamp;
    let g = master.generation;
    if d.id != log_id {
        return Err(Error::Mismatch(format!(
            "the log belongs to another database (log of database {}, data device of database \
             {})",
            show(log_id),
            show(d.id)
        )));
    }
    let at = |gen: u64, lsn: Lsn| format!("checkpoint generation {gen} (LSN {lsn})");
    if d.generation < g {
        let found = format!(
            "the data device is at {}, the log expects {}",
            at(d.generation, d.checkpoint_lsn),
            at(g, master.checkpoint_lsn)
        );
        return Err(match &data.damaged {
            Some(why) => Error::CorruptMetadata(format!("{why}; {found}")),
            None => Error::Mismatch(format!("stale data file: {found}")),
        });
    }
    if d.generation > g + 1 {
        return Err(Error::Mismatch(format!(
            "stale log: the data device is at {}, the log only reaches {}",
            at(d.generation, d.checkpoint_lsn),
            at(g, master.checkpoint_lsn)
        )));
    }
    if d.generation == g {
        if d.checkpoint_lsn != master.checkpoint_lsn {
            return Err(Error::Mismatch(format!(
                "the data device and the log disagree on checkpoint generation {g}: the data \
                 device names LSN {}, the log LSN {}",
                d.checkpoint_lsn, master.checkpoint_lsn
            )));
        }
        return Ok(Agreement::Same);
    }
    if d.checkpoint_lsn <= master.checkpoint_lsn {
        return Err(Error::Mismatch(format!(
            "the data device is at {} but that is not after the log's {}",
            at(d.generation, d.checkpoint_lsn),
            at(g, master.checkpoint_lsn)
        )));
    }
    Ok(Agreement::Ahead {
        checkpoint_lsn: d.checkpoint_lsn,
        log_durable: data.log_durable,
    })
}

/// After the analysis scan, before recovery writes anything: confirms an [`Agreement::Ahead`].
/// `saw_record`: the scan met a checkpoint record at its LSN; `log_end`: where the valid log
/// ends. Returns true if the data device's stamp belongs to a checkpoint that never got its
/// record (the caller discards it).
pub(crate) fn settle(agreement: Agreement, saw_record: bool, log_end: Lsn) -> Result<bool> {
    let Agreement::Ahead {
        checkpoint_lsn,
        log_durable,
    } = agreement
    else {
        return Ok(false);
    };
    if saw_record {
        return Ok(false);
    }
    if log_durable.is_some_and(|d| d <= log_end && log_end <= checkpoint_lsn) {
        return Ok(true);
    }
    Err(Error::Mismatch(format!(
        "stale log: the data device has a checkpoint at LSN {checkpoint_lsn} that the log does \
         not hold (the log ends at LSN {log_end})"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn master(generation: u64, checkpoint_lsn: Lsn) -> Master {
        Master {
            checkpoint_lsn,
            start_lsn: checkpoint_lsn.max(1),
            generation,
        }
    }

    fn data(generation: u64, checkpoint_lsn: Lsn) -> DataStamp {
        DataStamp {
            stamp: Stamp {
                id: 7,
                generation,
                checkpoint_lsn,
            },
            ..DataStamp::default()
        }
    }

    #[test]
    fn generations_must_agree() {
        assert_eq!(
            check(&data(3, 100), 7, &master(3, 100)),
            Ok(Agreement::Same)
        );
        assert!(matches!(
            check(&data(4, 200), 7, &master(3, 100)),
            Ok(Agreement::Ahead {
                checkpoint_lsn: 200,
                ..
            })
        ));
        let msg = |r: Result<Agreement>| match r {
            Err(Error::Mismatch(m)) => m,
            r => panic!("{r:?}"),
        };
        assert!(msg(check(&data(3, 100), 8, &master(3, 100))).contains("another database"));
        assert!(msg(check(&data(2, 50), 7, &master(3, 100))).contains("stale data file"));
        assert!(msg(check(&data(5, 300), 7, &master(3, 100))).contains("stale log"));
        assert!(msg(check(&data(3, 90), 7, &master(3, 100))).contains("disagree"));
        assert!(msg(check(&data(4, 100), 7, &master(3, 100))).contains("not after"));
        let mut damaged = data(2, 50);
        damaged.damaged = Some("snapshot slot 1 is damaged".into());
        assert!(matches!(
            check(&damaged, 7, &master(3, 100)),
            Err(Error::CorruptMetadata(_))
        ));
    }

    #[test]
    fn an_ahead_stamp_needs_its_record_or_an_unfinished_snapshot() {
        let ahead = |log_durable| Agreement::Ahead {
            checkpoint_lsn: 200,
            log_durable,
        };
        assert_eq!(settle(Agreement::Same, false, 10), Ok(false));
        assert_eq!(settle(ahead(None), true, 500), Ok(false));
        assert!(settle(ahead(None), false, 200).is_err());
        assert_eq!(settle(ahead(Some(180)), false, 190), Ok(true));
        assert_eq!(settle(ahead(Some(180)), false, 200), Ok(true));
        assert!(settle(ahead(Some(180)), false, 170).is_err());
        assert!(settle(ahead(Some(180)), false, 260).is_err());
    }
}
