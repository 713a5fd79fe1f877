//! Bad input must give a clear error and leave the handle usable (DESIGN.md: "bad input gets a
//! clear error, never a panic; an I/O error poisons the handle"). Each test here feeds one kind
//! of bad or oversized input; most then check that the database still works.

use crate::support::{key, value, MemPair};
use wafer_engine::{Db, DbConfig, Error};

fn still_usable(db: &Db) {
    let t = db.tree("after").expect("the handle must stay usable");
    let mut x = db.begin().unwrap();
    x.put(&t, b"k", b"v").unwrap();
    x.commit().unwrap();
    db.verify().unwrap();
}

/// Duplicate and unknown tree names, an empty name, a key over the limit and a bad page size.
#[test]
fn bad_input_gets_typed_errors() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    assert!(matches!(db.create_tree("t"), Err(Error::TreeExists(_))));
    assert!(matches!(db.open_tree("nope"), Err(Error::NoSuchTree(_))));
    assert!(db.create_tree("").is_err());
    let mut x = db.begin().unwrap();
    assert!(matches!(
        x.put(&t, &vec![1u8; 5000], b"v"),
        Err(Error::KeyTooLong { .. })
    ));
    x.commit().unwrap();
    let bad = DbConfig {
        page_size: 1000,
        ..DbConfig::default()
    };
    assert!(matches!(
        Db::open(pair.devices(), bad),
        Err(Error::Config(_))
    ));
    for pct in [0, 101] {
        let bad = DbConfig {
            group_commit: wafer_engine::GroupCommitConfig {
                min_share_pct: pct,
                ..Default::default()
            },
            ..DbConfig::default()
        };
        assert!(
            matches!(Db::open(pair.devices(), bad), Err(Error::Config(m)) if m.contains("min_share_pct")),
            "min_share_pct {pct}"
        );
    }
}

/// The catalog lives in the meta page, so the number of trees is bounded. Creating one tree too
/// many must fail with a typed error, not poison the database.
#[test]
fn too_many_trees_is_a_clean_error() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let mut created = 0;
    let err = loop {
        let name = format!("{:0>64}", created);
        match db.create_tree(&name) {
            Ok(_) => created += 1,
            Err(e) => break e,
        }
        assert!(created < 10_000, "the catalog never filled up");
    };
    assert!(
        !matches!(err, Error::Poisoned(_)),
        "first error after {created} trees was already Poisoned"
    );
    // The trees created so far, and the handle, must still work.
    let r = db.begin();
    assert!(
        r.is_ok(),
        "after '{err}' ({created} trees) the handle is unusable: {:?}",
        r.err()
    );
    drop(r);
    still_usable(&db);
}

/// A value whose log record cannot fit in the log: a clear error (ValueTooLong / LogFull), and
/// the database stays usable.
#[test]
fn value_larger_than_the_log_is_a_clean_error() {
    let pair = MemPair::new();
    let cfg = DbConfig {
        buffer_pages: 1024,
        log_space_bytes: Some(1 << 20),
        ..DbConfig::default()
    };
    let db = Db::open(pair.devices(), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    let r = x.put(&t, b"big", &value(1, 2 << 20));
    let e = r.expect_err("a 2 MiB value cannot be logged in a 1 MiB log");
    drop(x);
    assert!(
        db.begin().is_ok(),
        "a too-large value ({e}) poisoned the database"
    );
    still_usable(&db);
}

/// A value that would fit in the log space as a whole but not in what is left of it.
#[test]
fn value_larger_than_the_free_log_is_a_clean_error() {
    let pair = MemPair::new();
    let cfg = DbConfig {
        buffer_pages: 1024,
        log_space_bytes: Some(1 << 20),
        ..DbConfig::default()
    };
    let db = Db::open(pair.devices(), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    // Fill the log up to just below the checkpoint threshold (0.5) with committed rows.
    let mut i = 0u64;
    while db.stats().wal.appended_bytes < 400 << 10 {
        let mut x = db.begin().unwrap();
        for _ in 0..20 {
            x.put(&t, &key(i, 16), &value(i, 200)).unwrap();
            i += 1;
        }
        x.commit().unwrap();
    }
    let mut x = db.begin().unwrap();
    let r = x.put(&t, b"big", &value(2, 700 << 10));
    if let Err(e) = &r {
        drop(x);
        assert!(
            db.begin().is_ok(),
            "a value too large for the free log ({e}) poisoned the database"
        );
    } else {
        x.commit().unwrap();
    }
    still_usable(&db);
}

/// A value whose overflow chain needs more frames than the buffer pool has (all pages an
/// operation touches stay pinned until it is logged).
#[test]
fn value_larger_than_the_buffer_pool_is_a_clean_error() {
    let pair = MemPair::new();
    let cfg = DbConfig {
        buffer_pages: 32,
        log_space_bytes: Some(4 << 20),
        ..DbConfig::default()
    };
    let db = Db::open(pair.devices(), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    let r = x.put(&t, b"big", &value(3, 200 << 10));
    if let Err(e) = &r {
        drop(x);
        assert!(
            db.begin().is_ok(),
            "a value larger than the buffer pool ({e}) poisoned the database"
        );
    } else {
        x.commit().unwrap();
    }
    still_usable(&db);
}

/// Keys at the limit and values at the inline limit boundary round-trip; a key one byte over
/// the limit is rejected without harm.
#[test]
fn keys_and_values_at_their_limits_round_trip() {
    let pair = MemPair::new();
    let db = Db::open(pair.devices(), DbConfig::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    let max_key = 4096 / 8;
    let mut x = db.begin().unwrap();
    let k = vec![b'k'; max_key];
    for len in [0usize, 1, 400, 480, 500, 1000, 1006, 1007, 4036, 4037, 9000] {
        let v = value(len as u64, len);
        x.put(&t, &k, &v).unwrap();
        assert_eq!(x.get(&t, &k).unwrap(), Some(v));
    }
    assert!(matches!(
        x.put(&t, &vec![b'k'; max_key + 1], b"v"),
        Err(Error::KeyTooLong { .. })
    ));
    assert_eq!(x.get(&t, &vec![b'k'; max_key + 1]).unwrap(), None);
    x.put(&t, b"", b"empty key").unwrap();
    assert_eq!(x.get(&t, b"").unwrap().as_deref(), Some(&b"empty key"[..]));
    x.commit().unwrap();
    still_usable(&db);
}

/// A full data device is an expected condition ("full log or device" are typed errors): the
/// insert that does not fit fails with `Full`, and the database stays usable so the caller can
/// delete rows to make room.
#[test]
fn full_data_device_is_a_clean_error() {
    // 100-byte values: the last insert needs pages for a split; 6000-byte values: a two-page
    // overflow chain whose second page does not fit.
    for len in [100usize, 3000, 6000] {
        full_device_once(len);
    }
}

fn full_device_once(len: usize) {
    let cfg = DbConfig {
        buffer_pages: 64,
        log_space_bytes: Some(2 << 20),
        ..DbConfig::default()
    };
    // 1 header + 64 doublewrite + 192 pages.
    let db = Db::open(wafer_engine::Devices::memory(257 * 4096, 4 << 20), cfg).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut i = 0u64;
    let err = loop {
        let mut x = db.begin().unwrap();
        let r = x.put(&t, &key(i, 16), &value(i, len));
        match r {
            Ok(_) => x.commit().unwrap(),
            Err(e) => break e,
        }
        i += 1;
        assert!(i < 100_000, "the device never filled up");
    };
    assert!(matches!(err, Error::Full(_)), "unexpected error {err}");
    let r = db.begin();
    assert!(
        r.is_ok(),
        "value length {len}: after '{err}' ({i} rows) the handle is unusable: {:?}",
        r.err()
    );
    drop(r);
    // Deletes in transactions of 20: a transaction is bounded by the log space.
    for c in 0..(i / 2).div_ceil(20) {
        let mut x = db.begin().unwrap();
        for j in c * 20..((c + 1) * 20).min(i / 2) {
            x.delete(&t, &key(j, 16)).unwrap();
        }
        x.commit().unwrap();
    }
    still_usable(&db);
}

/// The longest value a configuration accepts (the `max` its `ValueTooLong` names; bound by the
/// pool in the first configuration, by the log space in the second) can then be overwritten by
/// one as long and by a short one, deleted, and each rolled back, in that configuration; a crash
/// with its overwrite live recovers in it; one byte more is refused naming the settings that
/// raise the limit. Before, a put accepted values that their delete or overwrite then refused
/// (`LogFull`: a delete's estimate left out the value its undo logs; `PoolExhausted`: an
/// overwrite pins both chains).
#[test]
fn the_longest_value_accepted_can_be_overwritten_deleted_and_rolled_back() {
    use crate::support::LinkedRig;
    for (pool, log) in [(24usize, 4u64 << 20), (1024, 512 << 10)] {
        let rig = LinkedRig::new(7, 16 << 20, 8 << 20, 512);
        let cfg = DbConfig {
            buffer_pages: pool,
            log_space_bytes: Some(log),
            ..DbConfig::default()
        };
        let db = Db::open(rig.devices(), cfg.clone()).unwrap();
        let t = db.create_tree("t").unwrap();
        // Rows enough for a tree of two levels.
        for c in 0..20 {
            let mut x = db.begin().unwrap();
            for i in 0..100 {
                x.put(&t, &key(c * 100 + i, 16), &value(i, 100)).unwrap();
            }
            x.commit().unwrap();
        }
        let mut x = db.begin().unwrap();
        let max = match x.put(&t, b"big", &value(1, 64 << 20)) {
            Err(Error::ValueTooLong { max, .. }) => max,
            other => panic!("a 64 MiB value in {pool} frames: {:?}", other.map(|_| ())),
        };
        assert!(max > 8 << 10, "{pool} frames, {log} log bytes: only {max}");
        match x.put(&t, b"big", &value(1, max + 1)) {
            Err(e @ Error::ValueTooLong { .. }) => {
                let why = e.to_string();
                assert!(
                    why.contains(&format!("at most {max}"))
                        && why.contains("buffer_pages")
                        && why.contains("log_space_bytes"),
                    "{why}"
                );
            }
            other => panic!("one byte over: {:?}", other.map(|_| ())),
        }
        let v1 = value(1, max);
        x.put(&t, b"big", &v1).unwrap();
        x.commit().unwrap();
        let steps: [(&str, Option<Vec<u8>>); 3] = [
            ("overwrite", Some(value(2, max))),
            ("overwrite short", Some(b"short".to_vec())),
            ("delete", None),
        ];
        for (what, new) in &steps {
            let mut x = db.begin().unwrap();
            let old = match new {
                Some(v) => x.put(&t, b"big", v),
                None => x.delete(&t, b"big"),
            }
            .unwrap_or_else(|e| panic!("{what} of the longest value ({max}): {e}"));
            assert_eq!(old.as_deref(), Some(&v1[..]), "{what}");
            x.abort()
                .unwrap_or_else(|e| panic!("rollback of the {what}: {e}"));
            assert_eq!(db.get(&t, b"big").unwrap().as_deref(), Some(&v1[..]));
        }
        // A crash with an overwrite live: recovery undoes it in the same configuration.
        let mut x = db.begin().unwrap();
        x.put(&t, b"big", &value(3, max)).unwrap();
        db.flush_log().unwrap();
        std::mem::forget(x);
        drop(db);
        rig.crash();
        let db = Db::open(rig.devices(), cfg.clone()).unwrap();
        let t = db.open_tree("t").unwrap();
        assert_eq!(db.get(&t, b"big").unwrap().as_deref(), Some(&v1[..]));
        for (what, new) in &steps {
            let mut x = db.begin().unwrap();
            match new {
                Some(v) => x.put(&t, b"big", v),
                None => x.delete(&t, b"big"),
            }
            .unwrap_or_else(|e| panic!("{what} after recovery: {e}"));
            x.commit().unwrap();
        }
        assert_eq!(db.get(&t, b"big").unwrap(), None);
        db.verify().unwrap();
    }
}

/// A small pool with no log space given opens: the default log space (the pool's size) is
/// raised to the smallest the engine accepts (before, `DbConfig { buffer_pages: 16, .. }`
/// was refused its own default with `Config`).
#[test]
fn a_small_pool_opens_with_the_default_log_space() {
    let pair = MemPair::new();
    let cfg = DbConfig {
        buffer_pages: 16,
        ..DbConfig::default()
    };
    let db = Db::open(pair.devices(), cfg.clone()).unwrap();
    let t = db.create_tree("t").unwrap();
    let mut x = db.begin().unwrap();
    x.put(&t, b"k", &value(1, 900)).unwrap();
    x.commit().unwrap();
    drop(db);
    let db = Db::open(pair.devices(), cfg).unwrap();
    let t = db.open_tree("t").unwrap();
    assert_eq!(db.get(&t, b"k").unwrap(), Some(value(1, 900)));
    still_usable(&db);
}
