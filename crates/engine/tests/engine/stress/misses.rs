//! Misses from many threads at once: a pool far smaller than the data, so that nearly every
//! operation reads pages with the core latch released (reserving frames, waiting for another
//! thread's load of the same page, writing dirty victims) while other threads change records
//! and a maintenance thread checkpoints.

use super::*;

/// Records in the tree: some 300 leaves, against a pool of [`FRAMES`].
pub const RECORDS: u64 = 20_000;
pub const FRAMES: usize = 32;
pub const WRITERS: u64 = 2;
pub const READERS: u64 = 4;

pub fn key(i: u64) -> Vec<u8> {
    format!("rec{i:07}").into_bytes()
}

/// Record `i` at generation `g`: the key's number and the generation, padded to 60 bytes.
pub fn value(i: u64, g: u64) -> Vec<u8> {
    let mut v = format!("{i}:{g}:").into_bytes();
    v.resize(60, b'#');
    v
}

/// (record, generation) of a value, checked against the record it was read for.
pub fn parse(i: u64, v: &[u8]) -> Result<u64, Fail> {
    let s = std::str::from_utf8(v).map_err(|_| Fail::Fatal(format!("record {i}: not text")))?;
    let mut parts = s.split(':');
    let (Some(who), Some(g)) = (parts.next(), parts.next()) else {
        return Err(Fail::Fatal(format!("record {i}: value {s:?}")));
    };
    if who != i.to_string() {
        return Err(Fail::Fatal(format!(
            "record {i} holds record {who}'s value"
        )));
    }
    g.parse()
        .map_err(|_| Fail::Fatal(format!("record {i}: generation {g:?}")))
}

pub fn config() -> DbConfig {
    DbConfig {
        buffer_pages: FRAMES,
        ..stress_config()
    }
}

pub fn load(db: &Db) -> Result<Tree, String> {
    let t = db.create_tree("cold").map_err(|e| e.to_string())?;
    for chunk in (0..RECORDS).collect::<Vec<_>>().chunks(500) {
        let mut x = db.begin().map_err(|e| e.to_string())?;
        for &i in chunk {
            x.put(&t, &key(i), &value(i, 0))
                .map_err(|e| e.to_string())?;
        }
        x.commit().map_err(|e| e.to_string())?;
    }
    Ok(t)
}

/// Writer `w` owns the records `i % WRITERS == w`: it raises random ones' generations, a few a
/// transaction, and returns the generation of each record it committed.
pub fn writer(db: &Db, t: &Tree, w: u64, stop: &Stop) -> Result<BTreeMap<u64, u64>, String> {
    let mut rng = rng_for(seed(), 700 + w);
    let mut gens = BTreeMap::new();
    let mut retries = 0;
    while !stop.now() {
        let picks: Vec<u64> = (0..4)
            .map(|_| rng.random_range(0..RECORDS / WRITERS) * WRITERS + w)
            .collect();
        let r = retry(stop, &mut rng, &mut retries, |_| {
            run_txn(db.begin()?, |x| {
                let mut next = Vec::new();
                for &i in &picks {
                    let g = match x.get(t, &key(i))? {
                        Some(v) => parse(i, &v)?,
                        None => return Err(Fail::Fatal(format!("record {i} is missing"))),
                    };
                    x.put(t, &key(i), &value(i, g + 1))?;
                    next.push((i, g + 1));
                }
                Ok(next)
            })
        });
        if let Some(next) = stop.fail_all(r.map_err(|e| format!("writer {w}: {e}")))? {
            gens.extend(next);
        }
    }
    Ok(gens)
}

/// Reader `id` reads random records, outside transactions and in them, and the last reader
/// scans runs of them: every value must be its record's.
pub fn reader(db: &Db, t: &Tree, id: u64, stop: &Stop) -> Result<u64, String> {
    let mut rng = rng_for(seed(), 800 + id);
    let mut reads = 0;
    let fail = |e: Fail| format!("reader {id}: {e}");
    let failed = |e: String| format!("reader {id}: {e}");
    while !stop.now() {
        if id == READERS - 1 {
            let mut retries = 0;
            let r = retry(stop, &mut rng, &mut retries, |rng| {
                run_txn(db.begin()?, |x| scan_run(x, t, rng))
            });
            reads += r.map_err(failed)?.unwrap_or(0);
            continue;
        }
        let i = rng.random_range(0..RECORDS);
        let v = if id.is_multiple_of(2) {
            db.get(t, &key(i)).map_err(|e| fail(e.into()))?
        } else {
            let mut retries = 0;
            let r = retry(stop, &mut rng, &mut retries, |_| {
                run_txn(db.begin()?, |x| Ok(x.get(t, &key(i))?))
            });
            match r.map_err(failed)? {
                Some(v) => v,
                None => continue,
            }
        };
        match v {
            Some(v) => parse(i, &v).map_err(fail)?,
            None => return Err(fail(Fail::Fatal(format!("record {i} is missing")))),
        };
        reads += 1;
    }
    Ok(reads)
}

/// A scan of a run of 300 to 1,500 records from a random one (up to 27 leaves, against a pool
/// of [`FRAMES`]: it misses part way and goes on in parts), ascending, descending or by a
/// cursor: every record of the run, once, in order, each value its record's. Returns the
/// records read.
fn scan_run(x: &mut Txn, t: &Tree, rng: &mut Pcg64Mcg) -> Result<u64, Fail> {
    let len = rng.random_range(300..1_500u64);
    let lo = rng.random_range(0..RECORDS - len);
    let (from, to) = (key(lo), key(lo + len));
    let range = (Bound::Included(&from[..]), Bound::Excluded(&to[..]));
    let how = rng.random_range(0..3);
    let pairs = match how {
        0 => x.scan(t, range, false, usize::MAX)?,
        1 => x.scan(t, range, true, usize::MAX)?,
        _ => x.cursor(t, range, false)?.collect::<Result<Vec<_>, _>>()?,
    };
    if pairs.len() as u64 != len {
        return Err(Fail::Fatal(format!(
            "a scan ({how}) of records {lo}.. read {} of {len}",
            pairs.len()
        )));
    }
    for (n, (k, v)) in pairs.iter().enumerate() {
        let i = if how == 1 {
            lo + len - 1 - n as u64
        } else {
            lo + n as u64
        };
        if *k != key(i) {
            return Err(Fail::Fatal(format!(
                "a scan ({how}) of records {lo}.. read {:?} where record {i} is",
                String::from_utf8_lossy(k)
            )));
        }
        parse(i, v)?;
    }
    Ok(len)
}

/// Every record at the generation its writer last committed (0 if never).
pub fn check(db: &Db, t: &Tree, gens: &BTreeMap<u64, u64>, what: &str) -> Result<(), String> {
    for i in 0..RECORDS {
        let want = gens.get(&i).copied().unwrap_or(0);
        let got = db.get(t, &key(i)).map_err(|e| format!("{what}: {e}"))?;
        if got.as_deref() != Some(&value(i, want)[..]) {
            return Err(format!(
                "{what}: record {i} is {:?}, its writer committed generation {want}",
                got.map(|v| String::from_utf8_lossy(&v).into_owned())
            ));
        }
    }
    Ok(())
}

/// Readers and writers on a tree some ten times the pool, with a maintenance thread: nearly
/// every operation misses, so frames are reserved, loaded with the core latch released, waited
/// for by other threads and taken from dirty victims all the time, and scans go on in parts. Every value read must be its
/// record's, every committed generation must be there at the end and after a crash.
#[test]
fn misses_from_many_threads_keep_every_record() {
    let pair = MemPair::new();
    misses_keep_every_record("misses_from_many_threads_keep_every_record", move || {
        Ok(pair.devices())
    });
}

/// [`misses_from_many_threads_keep_every_record`] on files: misses read pages without the
/// write path's mutex (`BlockDevice::shared_reader`), beside dirty victims' and checkpoints'
/// writes of other pages.
#[test]
fn misses_from_many_threads_on_files_keep_every_record() {
    let dir = tempfile::tempdir().unwrap();
    misses_keep_every_record(
        "misses_from_many_threads_on_files_keep_every_record",
        move || Devices::files(dir.path(), 16 << 20, 4 << 20).map_err(|e| e.to_string()),
    );
}

/// [`misses_from_many_threads_on_files_keep_every_record`] out of place, on a data file small
/// enough that garbage collection moves pages and resets zones all through the run: a miss
/// reads its page at the place the page map gave, with the write path's mutex let go, and is
/// read again under it if the page moved or its zone was reset meanwhile.
#[test]
fn misses_from_many_threads_out_of_place_keep_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = DbConfig {
        doublewrite: false,
        out_of_place: Some(wafer_engine::OopConfig {
            zone_bytes: 64 << 10,
            max_open_zones: 2,
            batch_pages: 4,
            ..wafer_engine::OopConfig::default()
        }),
        ..config()
    };
    misses_keep_every_record_as(
        "misses_from_many_threads_out_of_place_keep_every_record",
        cfg,
        move || Devices::files(dir.path(), 4 << 20, 4 << 20).map_err(|e| e.to_string()),
    );
}

/// [`misses_from_many_threads_on_files_keep_every_record`] journaled (Check-In) with a small
/// journal: evicted pages are read from journal images while checkpoints (the engine's and
/// the journal's own) move them home and empty it; a read that a checkpoint overtook is read
/// again under the write path's mutex.
#[test]
fn misses_from_many_threads_journaled_keep_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = DbConfig {
        doublewrite: false,
        journal: Some(wafer_engine::JournalConfig {
            journal_bytes: 1 << 20,
            ..wafer_engine::JournalConfig::new(wafer_engine::HomeMethod::CheckIn)
        }),
        ..config()
    };
    misses_keep_every_record_as(
        "misses_from_many_threads_journaled_keep_every_record",
        cfg,
        move || Devices::files(dir.path(), 16 << 20, 4 << 20).map_err(|e| e.to_string()),
    );
}

/// The run of [`misses_from_many_threads_keep_every_record`] on the devices `devices` gives
/// (the same storage each time: the second opens it after the first handle is dropped, as
/// after a crash).
fn misses_keep_every_record(
    name: &'static str,
    devices: impl Fn() -> Result<Devices, String> + Send + Sync + 'static,
) {
    misses_keep_every_record_as(name, config(), devices)
}

/// [`misses_keep_every_record`] with the database's settings `cfg`; out of place, garbage
/// collection must have run.
fn misses_keep_every_record_as(
    name: &'static str,
    cfg: DbConfig,
    devices: impl Fn() -> Result<Devices, String> + Send + Sync + 'static,
) {
    let summary = watchdog(name, move || {
        let started = Instant::now();
        let db = Db::open(devices()?, cfg.clone()).map_err(|e| e.to_string())?;
        let t = load(&db)?;
        let before = db.stats();
        let stop = Stop::new();
        let done = AtomicBool::new(false);
        let (gens, reads) = std::thread::scope(|s| {
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| {
                    let (db, t, stop) = (&db, &t, &stop);
                    s.spawn(move || stop.fail_all(writer(db, t, w, stop)))
                })
                .collect();
            let readers: Vec<_> = (0..READERS)
                .map(|id| {
                    let (db, t, stop) = (&db, &t, &stop);
                    s.spawn(move || stop.fail_all(reader(db, t, id, stop)))
                })
                .collect();
            let ck = s.spawn(|| stop.fail_all(checkpointer(&db, &done, &stop)));
            let gens = all_ok(writers.into_iter().map(|h| h.join().unwrap()).collect());
            let reads = all_ok(readers.into_iter().map(|h| h.join().unwrap()).collect());
            done.store(true, Ordering::SeqCst);
            let ck = ck.join().unwrap();
            (gens.and_then(|g| ck.map(|_| g)), reads)
        });
        let (gens, reads) = (gens?, reads?);
        let gens: BTreeMap<u64, u64> = gens.into_iter().flatten().collect();
        let after = db.stats();
        let unlatched = after.pool.unlatched_reads - before.pool.unlatched_reads;
        let victims = after.writes.eviction_writes - before.writes.eviction_writes;
        let shared = after.pool.reserved_shared - before.pool.reserved_shared;
        if unlatched == 0 || victims == 0 || shared == 0 {
            return Err(format!(
                "expected misses read unlatched, some reserved with the latch shared, and dirty \
                 victims: {unlatched} unlatched reads ({shared} reserved shared), {victims} \
                 eviction writes"
            ));
        }
        let resumed = after.engine.scans_resumed - before.engine.scans_resumed;
        if resumed == 0 {
            return Err("expected scans that went on in parts after their misses".into());
        }
        let ahead = after.pool.written_ahead - before.pool.written_ahead;
        if (cfg.out_of_place.is_some() || cfg.journal.is_some()) && ahead == 0 {
            return Err("expected dirty pages written ahead of the misses".into());
        }
        let gc = after.writes.gc_rounds - before.writes.gc_rounds;
        if cfg.out_of_place.is_some() && gc == 0 {
            return Err("expected garbage collection to run".into());
        }
        let emptied = match (&after.journal, &before.journal) {
            (Some(a), Some(b)) => a.checkpoints - b.checkpoints,
            _ => 0,
        };
        if cfg.journal.is_some() && emptied == 0 {
            return Err("expected the journal to be moved home and emptied".into());
        }
        check(&db, &t, &gens, "after the run")?;
        drop(db);
        let db = Db::open(devices()?, cfg.clone()).map_err(|e| format!("reopen: {e}"))?;
        let t = db.open_tree("cold").map_err(|e| e.to_string())?;
        check(&db, &t, &gens, "after the crash and reopen")?;
        db.verify().map_err(|e| e.to_string())?;
        Ok(format!(
            "{name}: {} records changed, {} reads, {unlatched} pages read unlatched ({shared} \
             reserved shared), {victims} eviction writes ({ahead} written ahead), {gc} GC rounds, \
             {emptied} journal moves home, {:?}",
            gens.len(),
            reads.iter().sum::<u64>(),
            started.elapsed()
        ))
    });
    eprintln!("{summary}");
}
