//! Tests of the out-of-place write path below the database: formatting and settings
//! (`format`), the kind of error each failure gives (`errors`), reads and writes
//! (`read_write`), DB garbage collection (`gc`), a device that fills up (`full_device`),
//! snapshots and recovery (`recovery`), power cuts during GC and NoWA compensation
//! (`power_cut`), NoWA on a simulated SSD (`nowa`), the invariants the write path asserts
//! (`invariants`), and the log-structured area used without the out-of-place policies
//! (`area`).

mod area;
mod errors;
mod format;
mod full_device;
mod gc;
mod invariants;
mod nowa;
mod power_cut;
mod read_write;
mod recovery;

use super::*;
use crate::device::{MemDevice, SimDevice, VirtualClock};
use crate::page::{self, PageType};
use crate::writepath::pack::{self, Codec};
use crate::writepath::MemLog;
use flashsim::{Geometry, Mode, SsdConfig};
use rand::{RngCore, SeedableRng};

/// A device the test keeps a handle on (to reopen or crash it after the write path lets go).
type Held<D> = crate::device::Handle<D>;

/// A sealed leaf page of 4 KiB with page LSN `lsn` whose body is `fill` repeated
/// (`compressible`) or pseudo-random bytes.
fn page(pid: PageId, lsn: Lsn, fill: u8, compressible: bool) -> Vec<u8> {
    let mut p = vec![0u8; 4096];
    page::init(&mut p, pid, PageType::Leaf);
    page::set_page_lsn(&mut p, lsn);
    let mut rng = rand_pcg::Pcg64::seed_from_u64(pid * 1000 + fill as u64);
    for b in p[page::PAGE_HEADER_BYTES..].iter_mut() {
        *b = if compressible {
            fill
        } else {
            rng.next_u64() as u8
        };
    }
    page::note_write(&mut p);
    page::seal(&mut p);
    p
}

/// A sealed leaf page of `size` bytes (page LSN `lsn`, write noted) whose body compresses to
/// about 40% with LZ4: 7 random bytes then 9 copies of one byte, per 16.
fn page_image(pid: u64, lsn: u64, size: usize, rng: &mut impl RngCore) -> Vec<u8> {
    let mut p = vec![0u8; size];
    page::init(&mut p, pid, PageType::Leaf);
    page::set_page_lsn(&mut p, lsn);
    for chunk in p[page::PAGE_HEADER_BYTES..].chunks_mut(16) {
        let b = rng.next_u32() as u8;
        for (i, x) in chunk.iter_mut().enumerate() {
            *x = if i < 7 { rng.next_u32() as u8 } else { b };
        }
    }
    page::note_write(&mut p);
    page::seal(&mut p);
    p
}

/// LSN at which [`durable_log`] starts: page LSNs below it are durable.
const LOG_BASE: Lsn = 1 << 40;

/// A log durable up to [`LOG_BASE`]: pages with smaller LSNs may be written at once (the
/// write-ahead rule holds), and location records get LSNs from there, durable only when the
/// write path (or the test) forces them.
fn durable_log() -> MemLog {
    MemLog {
        next: LOG_BASE,
        durable: LOG_BASE,
        records: Vec::new(),
    }
}

/// Writes page `p` as the buffer pool does: the log is forced past the page's LSN first (the
/// write-ahead rule the write path asserts); that LSN is one of a record already logged.
fn write_page(wp: &mut OutOfPlace, log: &mut MemLog, pid: PageId, p: &[u8]) -> Result<()> {
    let lsn = page::page_lsn(p);
    log.next = log.next.max(lsn + 1);
    log.force(lsn)?;
    wp.write_pages(&[(pid, p)], WriteReason::Eviction, log)
}

fn small_cfg(codec: Codec) -> OopConfig {
    OopConfig {
        codec,
        zone_bytes: 64 * 1024,
        max_open_zones: 2,
        batch_pages: 8,
        ..OopConfig::default()
    }
}

/// Zones of 8 pages, two open, batches of 8 pages, no compression: a 1 MiB device fills up and
/// garbage-collects quickly.
fn tiny_cfg() -> OopConfig {
    OopConfig {
        codec: Codec::None,
        zone_bytes: 32 * 1024,
        max_open_zones: 2,
        batch_pages: 8,
        ..OopConfig::default()
    }
}

fn new_wp(cfg: OopConfig, bytes: u64) -> OutOfPlace {
    let mut wp = OutOfPlace::create(Box::new(MemDevice::new(bytes, 4096)), 4096, cfg).unwrap();
    wp.set_stamp(&crate::identity::Stamp::default()).unwrap();
    wp
}

/// 4 channels x 2 dies, 16 KiB pages, 8 pages per block: a 1 MiB superblock (the SSD GC unit).
fn ssd(logical: u64, mode: Mode) -> SsdConfig {
    let g = Geometry {
        channels: 4,
        dies_per_channel: 2,
        planes_per_die: 1,
        blocks_per_plane: 1,
        pages_per_block: 8,
        page_size_bytes: 16 * 1024,
    };
    SsdConfig::sized_untimed(g, logical, 0.12, mode)
}

fn sim(cfg: SsdConfig) -> Held<SimDevice> {
    Held::new(SimDevice::new(cfg, VirtualClock::shared()).unwrap())
}
