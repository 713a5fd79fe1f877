//! The log-structured area on its own, as another write path (the journal of a journal + remap
//! path) would use it: no stage, placement, GC or NoWA policy; zones opened and closed by the
//! caller, packed appends, location logging, reclaiming only after the log force, and a
//! snapshot plus replay.

use super::*;
use crate::writepath::oop::area::backend::{self, ZoneRequest};
use crate::writepath::oop::area::space::{StoredPage, ZoneState};
use crate::writepath::oop::area::{read_stored, snapshot_bytes, LogArea};
use crate::writepath::LogSink;

const DEVICE_BYTES: u64 = 4 << 20;

/// A formatted area of 64 KiB zones on `dev` (all the zones the device holds).
fn area_on(dev: &Held<MemDevice>) -> LogArea {
    let backend = backend::detect(Box::new(dev.clone()));
    let req = ZoneRequest {
        open_zones: 1,
        aligned: false,
        zone_bytes: 64 << 10,
    };
    let geo = backend.zone_geometry(&req, 4096);
    let pages = DEVICE_BYTES / 4096;
    let meta = backend.metadata_layout(
        snapshot_bytes(pages, DEVICE_BYTES / geo.zone_bytes),
        geo.zone_bytes,
    );
    let zoned = backend.zoned();
    let layout = OopLayout::plan(4096, DEVICE_BYTES, geo, meta, zoned, 0, pages).unwrap();
    let mut area = LogArea::format(backend, layout, true).unwrap();
    area.write_header(1).unwrap();
    area
}

/// The area of a device formatted by [`area_on`], before recovery.
fn reopen(dev: &Held<MemDevice>) -> LogArea {
    let mut hdr = vec![0u8; 4096];
    dev.lock().read_at(0, &mut hdr).unwrap();
    let layout = OopLayout::decode(&hdr).unwrap();
    LogArea::open(
        backend::for_layout(Box::new(dev.clone()), &layout).unwrap(),
        layout,
        true,
    )
    .unwrap()
}

/// Version `v` of page `pid` (page LSN `v`), compressed.
fn version(pid: PageId, v: Lsn) -> (Vec<u8>, StoredPage) {
    let p = page(pid, v, (pid + v) as u8, true);
    let bytes = pack::stored_bytes(pid, &pack::compress_page(Codec::Lz4, &p));
    let stored = StoredPage {
        pid,
        bytes,
        edt: 0,
        lsn: v,
    };
    (p, stored)
}

/// Appends version `v` of `pids` to zone `z` as one packed run.
fn append(area: &mut LogArea, z: u32, pids: std::ops::Range<PageId>, v: Lsn) {
    let run: Vec<StoredPage> = pids.map(|pid| version(pid, v).1).collect();
    let lens: Vec<usize> = run.iter().map(|p| p.bytes.len()).collect();
    let plan = pack::plan_best_fit(&lens, pack::SLOT_BYTES);
    area.append(z, &run, &plan, true).unwrap();
}

fn assert_reads(area: &mut LogArea, pid: PageId, v: Lsn) {
    let mut buf = vec![0u8; 4096];
    area.read(pid, &mut buf).unwrap();
    assert!(buf == version(pid, v).0, "page {pid} is not version {v}");
}

#[test]
fn a_journal_can_use_the_area_without_the_out_of_place_policies() {
    let dev = Held::new(MemDevice::new(DEVICE_BYTES, 4096));
    let mut area = area_on(&dev);
    let mut log = durable_log();
    let first = area.open_zone(0).expect("a free zone");
    append(&mut area, first, 0..8, 1);
    // Readable at once; logged only when committed (after a device flush).
    assert_reads(&mut area, 3, 1);
    assert!(area.has_unlogged() && log.records.is_empty());
    area.commit_locations(&mut log).unwrap();
    assert_eq!(log.records.len(), 1);
    assert_eq!(log.records[0].1.len(), 8);
    area.close_zone(first).unwrap();

    // New versions of every page elsewhere: the first zone is dead, and is reclaimed only
    // after the log is forced past the record that emptied it.
    let second = area.open_zone(0).expect("a free zone");
    append(&mut area, second, 0..8, 2);
    assert_eq!(area.zone(first).valid_pages, 0);
    let free = area.free_zones();
    assert_eq!(area.reclaim_dead(&mut log).unwrap(), 1);
    let last = log.records.last().expect("records").0;
    assert!(log.durable > last, "reclaimed before the log was forced");
    assert_eq!(area.free_zones(), free + 1);
    assert_eq!(area.zone(first).state, ZoneState::Empty);
    assert_eq!(area.check_consistency(), Ok(()));

    // A checkpoint's snapshot, then more versions of half the pages, then a restart.
    let tag = log.next;
    area.write_snapshot(tag, 0, 0).unwrap();
    log.next += 1;
    log.force(tag).unwrap();
    area.snapshot_done();
    append(&mut area, second, 0..4, 3);
    area.commit_locations(&mut log).unwrap();
    drop(area);
    let mut area = reopen(&dev);
    area.recover_begin(tag).unwrap();
    for (lsn, changes) in &log.records {
        area.redo_map(*lsn, changes).unwrap();
    }
    area.recover_end().unwrap();
    for pid in 0..8 {
        assert_reads(&mut area, pid, if pid < 4 { 3 } else { 2 });
    }
    assert_eq!(area.zone(second).state, ZoneState::Full);
    assert_eq!(area.check_consistency(), Ok(()));
}

/// Appends the caller planned badly are refused, not written past the zone.
#[test]
fn an_append_that_does_not_fit_its_zone_is_refused() {
    let dev = Held::new(MemDevice::new(DEVICE_BYTES, 4096));
    let mut area = area_on(&dev);
    let z = area.open_zone(0).expect("a free zone");
    // 17 raw pages do not fit a 64 KiB zone.
    let run: Vec<StoredPage> = (0..17)
        .map(|pid| StoredPage {
            pid,
            bytes: page(pid, 1, 0, false),
            edt: 0,
            lsn: 1,
        })
        .collect();
    let plan = pack::plan_best_fit(&vec![4096; run.len()], pack::SLOT_BYTES);
    let r = area.append(z, &run, &plan, true);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{:?}", r.err());
    // Nor to a zone that is not open.
    area.close_zone(z).unwrap();
    let plan = pack::plan_best_fit(&[4096], pack::SLOT_BYTES);
    let r = area.append(z, &run[..1], &plan, true);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{:?}", r.err());
    assert_eq!(area.check_consistency(), Ok(()));
}

/// A read made without the write path's mutex is confirmed only if its place held the page all
/// the while: not when the page moved, and not when its zone was reset and the same page
/// written again at the very same bytes (which the map alone cannot tell).
#[test]
fn a_place_is_confirmed_only_while_it_held_the_page() {
    let dev = Held::new(MemDevice::new(DEVICE_BYTES, 4096));
    let mut area = area_on(&dev);
    let mut log = durable_log();
    let first = area.open_zone(0).expect("a free zone");
    append(&mut area, first, 0..8, 1);
    area.close_zone(first).unwrap();
    let place = area.locate(0).unwrap().expect("page 0 is stored");
    assert!(area.locate(9).unwrap().is_none(), "never written");
    assert!(matches!(
        area.locate(DEVICE_BYTES),
        Err(Error::CorruptPage { .. })
    ));
    let mut buf = vec![0u8; 4096];
    let read = |at: u64, io: &mut [u8]| Ok(dev.lock().read_at(at, io)?);
    let (r, bytes) = read_stored(read, place.offset, place.len, 0, &mut buf);
    r.unwrap();
    assert!(bytes >= place.len as u64 && buf == version(0, 1).0);
    assert!(area.still_at(0, &place));

    // Every page moves on; the zone dies and is reset.
    let second = area.open_zone(0).expect("a free zone");
    append(&mut area, second, 0..8, 2);
    assert!(!area.still_at(0, &place), "page 0 moved");
    assert_eq!(area.reclaim_dead(&mut log).unwrap(), 1);
    // The zone comes back and takes the first run again: page 0's first version at the same
    // offset, in a zone reset since.
    let again = loop {
        let z = area.open_zone(0).expect("a free zone");
        if z == first {
            break z;
        }
    };
    append(&mut area, again, 0..8, 1);
    let now = area.locate(0).unwrap().expect("page 0 is stored");
    assert_eq!((now.offset, now.len), (place.offset, place.len));
    assert!(!area.still_at(0, &place), "the zone was reset in between");
    assert!(area.still_at(0, &now));
    // The shared map, which readers use without the write path's mutex, says the same.
    let shared = area.shared_map();
    assert_eq!(shared.locate(0), Some(now));
    assert!(!shared.confirm(0, &place) && shared.confirm(0, &now));
    assert_eq!(area.check_consistency(), Ok(()));
}
