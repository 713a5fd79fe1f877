//! The write-path factory: a typed choice of write path, and the one place that formats a data
//! device for it or opens one, each write path recognising its own header. `Db::open` asks
//! [`probe`] what a device holds and [`create`] or [`open`] for the write path; it never reads
//! headers itself.

use super::{InPlace, Journal, JournalConfig, OopConfig, OutOfPlace, WritePath};
use crate::device::BlockDevice;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Which write path a database uses. Fixed when the database is created.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WritePathConfig {
    /// Fixed page homes, optionally behind a doublewrite buffer of `doublewrite_pages`.
    InPlace {
        doublewrite: bool,
        doublewrite_pages: u32,
    },
    /// Out-of-place writes (paper 002).
    OutOfPlace(OopConfig),
    /// Fixed homes behind a journal moved home at checkpoints (paper 004).
    Journal(JournalConfig),
}

impl WritePathConfig {
    /// The name of the write path a config asks for (as `WritePath::kind` reports it).
    pub fn kind(&self) -> &'static str {
        match self {
            WritePathConfig::InPlace { .. } => "in-place",
            WritePathConfig::OutOfPlace(_) => "out-of-place",
            WritePathConfig::Journal(_) => "journal",
        }
    }
}

/// What the first block of a data device holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// All zeros: never formatted (or formatting never completed).
    Blank,
    /// A write path's header (its `kind`).
    Formatted(&'static str),
    /// Something else.
    Foreign,
}

/// Reads the first block of `dev` and says what it holds.
pub fn probe(dev: &mut dyn BlockDevice) -> Result<Probe> {
    let mut hdr = vec![0u8; dev.block_bytes().max(512) as usize];
    dev.read_at(0, &mut hdr)?;
    Ok(if hdr.iter().all(|&b| b == 0) {
        Probe::Blank
    } else if InPlace::recognizes(&hdr) {
        Probe::Formatted("in-place")
    } else if super::oop::is_oop_header(&hdr) {
        Probe::Formatted("out-of-place")
    } else if Journal::recognizes(&hdr) {
        Probe::Formatted("journal")
    } else {
        Probe::Foreign
    })
}

/// Formats `dev` for the write path `cfg` with `page_size`-byte pages.
pub fn create(
    cfg: &WritePathConfig,
    dev: Box<dyn BlockDevice>,
    page_size: u32,
) -> Result<Box<dyn WritePath>> {
    Ok(match cfg {
        WritePathConfig::InPlace {
            doublewrite,
            doublewrite_pages,
        } => Box::new(InPlace::create(
            dev,
            page_size,
            *doublewrite_pages,
            *doublewrite,
        )?),
        WritePathConfig::OutOfPlace(o) => Box::new(OutOfPlace::create(dev, page_size, o.clone())?),
        WritePathConfig::Journal(j) => Box::new(Journal::create(dev, page_size, j.clone())?),
    })
}

/// Opens the database on `dev` with the write path `cfg`, which must be the one it was created
/// with and use `page_size`-byte pages. `found` is what [`probe`] said of the device.
pub fn open(
    cfg: &WritePathConfig,
    dev: Box<dyn BlockDevice>,
    page_size: u32,
    found: Probe,
) -> Result<Box<dyn WritePath>> {
    if let Probe::Formatted(kind) = found {
        if kind != cfg.kind() {
            return Err(Error::Config(format!(
                "the database was created with {kind} writes and the configuration asks for {}: \
                 {}",
                cfg.kind(),
                match kind {
                    "out-of-place" => "set out_of_place in the configuration to open it",
                    "journal" => "set journal in the configuration to open it",
                    _ => "unset out_of_place and journal to open it",
                }
            )));
        }
    }
    let (wp, theirs): (Box<dyn WritePath>, u32) = match cfg {
        WritePathConfig::InPlace { doublewrite, .. } => {
            let wp = InPlace::open(dev, *doublewrite)?;
            let ps = wp.layout().page_size;
            (Box::new(wp), ps)
        }
        WritePathConfig::OutOfPlace(o) => {
            let wp = OutOfPlace::open(dev, o.clone())?;
            let ps = wp.layout().page_size;
            (Box::new(wp), ps)
        }
        WritePathConfig::Journal(j) => {
            let wp = Journal::open(dev, j.clone())?;
            let ps = wp.page_size();
            (Box::new(wp), ps)
        }
    };
    debug_assert_eq!(
        wp.kind(),
        cfg.kind(),
        "the factory opened another write path"
    );
    if theirs != page_size {
        return Err(Error::Config(format!(
            "the database has {theirs}-byte pages, the config asks for {page_size}"
        )));
    }
    Ok(wp)
}
