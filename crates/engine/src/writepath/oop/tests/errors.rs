//! The kind of error each failure gives: device state that contradicts what the database knows
//! is a device error and poisons the write path; a page id past the device is a corrupt page (it
//! came from a corrupt pointer), not a full device; a header whose fields contradict each other
//! is not a database. (Bad settings are configuration errors: `format`.)

use super::*;
use flashsim::ZnsConfig;

#[test]
fn zone_append_landing_elsewhere_is_a_device_error_and_poisons() {
    let mode = Mode::Zns(ZnsConfig {
        zone_eus: 1,
        max_open_zones: 6,
        max_active_zones: 6,
    });
    let dev = sim(ssd(24 << 20, mode));
    let cfg = OopConfig {
        max_open_zones: 1,
        batch_pages: 4,
        ..OopConfig::default()
    };
    let mut wp = OutOfPlace::create(Box::new(dev.clone()), 4096, cfg).unwrap();
    wp.set_stamp(&crate::identity::Stamp::default()).unwrap();
    let mut log = durable_log();
    for pid in 0..4 {
        let p = page(pid, 1, pid as u8, false);
        wp.write_pages(&[(pid, &p)], WriteReason::Eviction, &mut log)
            .unwrap();
    }
    wp.sync(&mut log).unwrap();
    // Something else appends to the zone the database writes to: its write pointer moves.
    let z = wp.placement.open_zones()[0];
    let device_zone = wp.layout().zone_start(z) / wp.layout().zone_bytes;
    dev.lock()
        .zone_append(device_zone as u32, &[0u8; 4096])
        .unwrap();
    let r = (4..8)
        .try_for_each(|pid| {
            let p = page(pid, 1, pid as u8, false);
            wp.write_pages(&[(pid, &p)], WriteReason::Eviction, &mut log)
        })
        .and_then(|_| wp.sync(&mut log));
    assert!(
        matches!(&r, Err(Error::Device(e)) if e.to_string().contains("landed at")),
        "{r:?}"
    );
    let mut buf = vec![0u8; 4096];
    assert!(matches!(wp.read_page(0, &mut buf), Err(Error::Poisoned(_))));
}

#[test]
fn reading_a_page_id_past_the_device_is_a_corrupt_page() {
    let mut wp = new_wp(small_cfg(Codec::Lz4), 8 << 20);
    let mut buf = vec![0u8; 4096];
    let cap = wp.page_capacity();
    let r = wp.read_page(cap, &mut buf);
    assert!(
        matches!(r, Err(Error::CorruptPage { pid, .. }) if pid == cap),
        "{r:?}"
    );
    assert!(matches!(
        wp.read_page(u64::MAX, &mut buf),
        Err(Error::CorruptPage { .. })
    ));
    // Not a device error: the write path goes on.
    wp.read_page(cap - 1, &mut buf).unwrap();
    assert!(page::is_zeroed(&buf));
}

#[test]
fn a_header_whose_fields_contradict_each_other_is_not_a_database() {
    let dev = Held::new(MemDevice::new(8 << 20, 4096));
    let mut wp = OutOfPlace::create(Box::new(dev.clone()), 4096, OopConfig::default()).unwrap();
    wp.set_stamp(&crate::identity::Stamp::default()).unwrap();
    let good = wp.layout().clone();
    drop(wp);
    let bad = [
        OopLayout {
            zone_bytes: 0,
            ..good.clone()
        },
        OopLayout {
            page_size: 0,
            ..good.clone()
        },
        OopLayout {
            pages: u64::MAX / 2,
            ..good.clone()
        },
        OopLayout {
            zone_count: u32::MAX,
            zone_bytes: u64::MAX / 2,
            ..good.clone()
        },
    ];
    for layout in bad {
        dev.lock().write_at(0, &layout.encode()).unwrap();
        let r = OutOfPlace::open(Box::new(dev.clone()), OopConfig::default());
        assert!(
            matches!(r, Err(Error::NotADatabase(_))),
            "{layout:?}: {:?}",
            r.err()
        );
    }
    dev.lock().write_at(0, &good.encode()).unwrap();
    OutOfPlace::open(Box::new(dev.clone()), OopConfig::default()).unwrap();
}
