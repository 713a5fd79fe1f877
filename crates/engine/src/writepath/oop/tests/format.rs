//! Formatting: settings and devices the write path refuses, and foreign headers.

use super::*;

#[test]
fn bad_settings_get_config_errors() {
    let dev = || Box::new(MemDevice::new(8 << 20, 4096));
    let tiny = OopConfig {
        zone_bytes: 8192,
        ..OopConfig::default()
    };
    assert!(matches!(
        OutOfPlace::create(dev(), 16384, tiny),
        Err(Error::Config(_))
    ));
    let odd = OopConfig {
        zone_bytes: 65536 + 512,
        ..OopConfig::default()
    };
    assert!(matches!(
        OutOfPlace::create(dev(), 4096, odd),
        Err(Error::Config(_))
    ));
    // Too small a device for the open zones and the GC reserve.
    assert!(matches!(
        OutOfPlace::create(
            Box::new(MemDevice::new(256 << 10, 4096)),
            4096,
            OopConfig::default()
        ),
        Err(Error::Config(_))
    ));
}

#[test]
fn a_foreign_header_is_refused() {
    let mut dev = MemDevice::new(1 << 20, 4096);
    dev.write_at(0, &[7u8; 4096]).unwrap();
    assert!(matches!(
        OutOfPlace::open(Box::new(dev), OopConfig::default()),
        Err(Error::NotADatabase(_))
    ));
}
