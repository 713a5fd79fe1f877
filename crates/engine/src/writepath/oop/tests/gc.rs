//! DB garbage collection.

use super::*;
use rand::RngCore;
use std::collections::HashMap;

/// Overwriting pages fills zones with garbage; GC reclaims it, the data stays readable, and
/// the bytes copied by GC show up in DB WAF.
#[test]
fn gc_reclaims_zones_and_keeps_every_page() {
    let mut wp = new_wp(small_cfg(Codec::None), 4 << 20);
    let mut log = durable_log();
    // Skewed overwrites: low page ids far more often.
    let latest = overwrite(&mut wp, &mut log, 6, 7, |rng, n| {
        (rng.next_u64() % n).min(rng.next_u64() % n)
    });
    let c = wp.counters().clone();
    assert!(c.gc_rounds > 0 && c.zones_reclaimed > 0, "{c:?}");
    assert!(c.gc_write_bytes > 0);
    assert!(c.db_waf() > 1.0);
    // Every byte written is in exactly one of the parts.
    assert_eq!(
        c.db_write_bytes,
        c.stored_user_bytes
            + c.gc_write_bytes
            + c.compensation_bytes
            + c.padding_bytes
            + c.metadata_bytes
    );
    reads_back(&mut wp, &latest);
    // GC forced the log past the location records of its copies before trimming victims (the
    // test itself never forces it).
    assert!(log.durable > LOG_BASE);
    assert_eq!(wp.check_invariants(), Ok(()));
}

/// With other threads beside it, background GC goes a slice of a victim's live pages at a time
/// (`maintain_beside`, here slices of 8 KiB in zones of 64 KiB): victims are emptied over
/// several slices and reclaimed, the zones agree with the map after every step, and every page
/// reads back as last written; raw pages, and compressed ones packed into shared slots (a
/// slice reads whole slots).
#[test]
fn gc_in_slices_empties_victims_over_several_steps_and_keeps_every_page() {
    for codec in [Codec::None, Codec::Lz4] {
        gc_in_slices(codec);
    }
}

fn gc_in_slices(codec: Codec) {
    let mut wp = new_wp(small_cfg(codec), 4 << 20);
    wp.slice_bytes = 8 << 10;
    let mut log = durable_log();
    let steps = std::cell::Cell::new(0u64);
    let latest = overwrite_with(
        &mut wp,
        &mut log,
        (6, codec != Codec::None),
        7,
        |rng, n| (rng.next_u64() % n).min(rng.next_u64() % n),
        |wp, log| {
            while wp.maintain_beside(log).unwrap() {
                steps.set(steps.get() + 1);
                assert_eq!(wp.check_invariants(), Ok(()));
            }
        },
    );
    let c = wp.counters().clone();
    assert!(c.zones_reclaimed > 0, "{c:?}");
    assert!(
        c.gc_rounds > 2 * c.zones_reclaimed,
        "victims were not emptied over several slices: {c:?}"
    );
    assert!(steps.get() > 0, "no step asked for another at once");
    reads_back(&mut wp, &latest);
    assert_eq!(wp.check_invariants(), Ok(()));
}

/// Dead 4 KiB slots are trimmed one by one where the device takes a trim per block at little
/// cost (the memory device), and not in a regular file, where each trim would punch a hole and
/// stall the file's other I/O: there only reclaimed zones are trimmed. Either way every page
/// reads back as last written.
#[test]
fn slots_are_trimmed_one_by_one_only_where_block_trims_are_cheap() {
    use crate::device::{BlockDevice, FileDevice};
    let dir = tempfile::tempdir().unwrap();
    let bytes = 4 << 20;
    let file = FileDevice::open(dir.path().join("dev"), Some(bytes), true).unwrap();
    assert!(!file.capabilities().block_trims);
    let devices: [(Box<dyn BlockDevice>, bool); 2] = [
        (Box::new(MemDevice::new(bytes, 4096)), true),
        (Box::new(file), false),
    ];
    for (dev, slot_trims) in devices {
        let mut wp = OutOfPlace::create(dev, 4096, small_cfg(Codec::None)).unwrap();
        wp.set_stamp(&crate::identity::Stamp::default()).unwrap();
        let mut log = durable_log();
        let latest = overwrite(&mut wp, &mut log, 4, 11, |rng, n| rng.next_u64() % n);
        let c = wp.counters().clone();
        assert!(c.zones_reclaimed > 0, "{c:?}");
        assert_eq!(c.slots_trimmed > 0, slot_trims, "{c:?}");
        reads_back(&mut wp, &latest);
    }
}

/// Writes 80% of the page ids once, then `rounds - 1` rounds of as many overwrites of the ids
/// `pick` draws (seeded by `seed`), with background maintenance every 50 writes, and syncs.
/// Returns each page's last image.
fn overwrite(
    wp: &mut OutOfPlace,
    log: &mut MemLog,
    rounds: u64,
    seed: u64,
    pick: impl Fn(&mut rand_pcg::Pcg64, u64) -> u64,
) -> HashMap<PageId, Vec<u8>> {
    overwrite_with(wp, log, (rounds, false), seed, pick, |wp, log| {
        wp.maintain(log).unwrap();
    })
}

/// [`overwrite`], with `maintain` for the background maintenance, the pages about half
/// compressible or not at all.
fn overwrite_with(
    wp: &mut OutOfPlace,
    log: &mut MemLog,
    (rounds, compressible): (u64, bool),
    seed: u64,
    pick: impl Fn(&mut rand_pcg::Pcg64, u64) -> u64,
    maintain: impl Fn(&mut OutOfPlace, &mut MemLog),
) -> HashMap<PageId, Vec<u8>> {
    let n = wp.page_capacity() * 8 / 10;
    let mut latest = HashMap::new();
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    for round in 0..rounds {
        for i in 0..n {
            let pid = if round == 0 { i } else { pick(&mut rng, n) };
            let lsn = 100 + round * n + i;
            let p = if compressible {
                // About half compressible: packed several to a slot, not aligned to one.
                page_image(pid, lsn, 4096, &mut rng)
            } else {
                page(pid, lsn, (pid % 200) as u8, false)
            };
            wp.write_pages(&[(pid, &p)], WriteReason::Eviction, log)
                .unwrap();
            latest.insert(pid, p);
            if i % 50 == 0 {
                maintain(wp, log);
            }
        }
    }
    wp.sync(log).unwrap();
    latest
}

/// Every page of `latest` reads back as its image there.
fn reads_back(wp: &mut OutOfPlace, latest: &HashMap<PageId, Vec<u8>>) {
    let mut buf = vec![0u8; 4096];
    for (pid, p) in latest {
        wp.read_page(*pid, &mut buf).unwrap();
        assert_eq!(&buf, p, "page {pid}");
    }
}
