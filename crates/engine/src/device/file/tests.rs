//! Tests of the file device: round trips, direct and buffered, errors, sizes, remaps.

use super::*;

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// A file device of `blocks` 4 KiB blocks in `dir`, written with random bytes from `seed`:
/// the device, its bytes, and the generator to go on with.
pub(super) fn random_file(
    dir: &Path,
    blocks: u64,
    seed: u64,
) -> (FileDevice, Vec<u8>, rand_pcg::Pcg64Mcg) {
    use rand::{Rng, SeedableRng};
    let mut d = FileDevice::open(dir.join("dev"), Some(blocks * 4096), true).unwrap();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let mut bytes = vec![0u8; (blocks * 4096) as usize];
    rng.fill(&mut bytes[..]);
    d.write_at(0, &bytes).unwrap();
    (d, bytes, rng)
}

fn roundtrip(dir: &Path, direct: bool) {
    let path = dir.join("dev");
    let mut d = if direct {
        FileDevice::open(&path, Some(1 << 20), true).unwrap()
    } else {
        let d = FileDevice::open_buffered(&path, Some(1 << 20), true).unwrap();
        assert!(!d.direct_io());
        d
    };
    assert_eq!(d.capacity_bytes(), 1 << 20);
    assert_eq!(d.block_bytes(), 4096);
    // A Vec is rarely 4096-aligned; an offset slice certainly is not.
    let mut big = pattern(3 * 4096 + 1, 5);
    let data = &big[1..];
    d.write_at(8192, data).unwrap();
    let mut back = vec![0u8; 3 * 4096 + 3];
    d.read_at(8192, &mut back[3..]).unwrap();
    assert_eq!(&back[3..], data);
    // An aligned buffer takes the direct path.
    let mut ab = AlignedBuf::new(4096);
    ab.as_mut_slice().copy_from_slice(&pattern(4096, 9));
    d.write_at(0, ab.as_slice()).unwrap();
    d.flush().unwrap();
    let s = d.stats();
    assert_eq!((s.writes, s.reads, s.flushes), (2, 1, 1));
    assert_eq!(s.write_bytes, 4 * 4096);
    assert_eq!(s.media_write_bytes, None);
    big.clear();
    drop(d);

    // Reopen: the capacity comes from the file length and the data persisted.
    let mut d = FileDevice::open(&path, None, false).unwrap();
    assert_eq!(d.capacity_bytes(), 1 << 20);
    let mut b = vec![0u8; 4096];
    d.read_at(0, &mut b).unwrap();
    assert_eq!(b, pattern(4096, 9));
    d.read_at(8192, &mut b).unwrap();
    assert_eq!(b, pattern(3 * 4096 + 1, 5)[1..4097]);

    // Trim punches a hole where the filesystem can.
    d.trim(8192, 4096).unwrap();
    if d.capabilities().trim {
        d.read_at(8192, &mut b).unwrap();
        assert_eq!(b, vec![0u8; 4096]);
    }
    d.read_at(12288, &mut b).unwrap();
    assert_eq!(b, pattern(3 * 4096 + 1, 5)[4097..8193]);
}

#[test]
fn roundtrip_in_tempdir() {
    let dir = tempfile::tempdir().unwrap();
    // Works whether or not the filesystem accepts O_DIRECT.
    roundtrip(dir.path(), true);
}

#[test]
fn roundtrip_buffered() {
    let dir = tempfile::tempdir().unwrap();
    roundtrip(dir.path(), false);
}

#[test]
fn roundtrip_on_tmpfs() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return;
    }
    let Ok(dir) = tempfile::tempdir_in(shm) else {
        return;
    };
    // Older tmpfs refuses O_DIRECT (newer kernels accept it); either way the device works.
    roundtrip(dir.path(), true);
}

#[test]
fn large_unaligned_io_is_chunked() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = FileDevice::open(dir.path().join("dev"), Some(4 << 20), true).unwrap();
    let n = BOUNCE_MAX_BYTES + 2 * 4096;
    let src = pattern(n + 1, 3);
    d.write_at(4096, &src[1..]).unwrap();
    let mut back = vec![0u8; n + 1];
    d.read_at(4096, &mut back[1..]).unwrap();
    assert_eq!(back[1..], src[1..]);
}

#[test]
fn errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev");
    assert!(matches!(
        FileDevice::open(&path, Some(4096), false),
        Err(DeviceError::Io(_))
    ));
    assert!(matches!(
        FileDevice::open(&path, Some(1000), true),
        Err(DeviceError::Unaligned { .. })
    ));
    let mut d = FileDevice::open(&path, Some(64 * 1024), true).unwrap();
    let mut b = vec![0u8; 4096];
    assert!(matches!(
        d.read_at(64 * 1024, &mut b),
        Err(DeviceError::OutOfRange { .. })
    ));
    assert!(matches!(
        d.write_at(60 * 1024, &[0u8; 8192]),
        Err(DeviceError::OutOfRange { .. })
    ));
    assert!(matches!(
        d.write_at(512, &b),
        Err(DeviceError::Unaligned { .. })
    ));
    assert!(matches!(
        d.read_at(0, &mut b[..100]),
        Err(DeviceError::Unaligned { .. })
    ));
    assert!(matches!(
        d.trim(4096, 100),
        Err(DeviceError::Unaligned { .. })
    ));
    assert_eq!(d.stats(), DeviceStats::default());
}

#[test]
fn capacity_prefix_of_larger_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev");
    drop(FileDevice::open(&path, Some(1 << 20), true).unwrap());
    let d = FileDevice::open(&path, Some(64 * 1024), false).unwrap();
    assert_eq!(d.capacity_bytes(), 64 * 1024);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 1 << 20);
}

#[test]
fn a_truncated_file_is_not_zero_extended() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev");
    drop(FileDevice::open(&path, Some(1 << 20), true).unwrap());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(64 * 1024)
        .unwrap();
    assert!(matches!(
        FileDevice::open(&path, Some(1 << 20), true),
        Err(DeviceError::WrongSize { .. })
    ));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 64 * 1024);
}

/// A flush with nothing changed since the last one makes no `fdatasync` (it would make no new
/// data durable); a write, trim, remap or copy makes the next flush sync again, and so does
/// opening the file.
#[test]
fn a_flush_with_nothing_changed_since_the_last_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = FileDevice::open(dir.path().join("dev"), Some(1 << 20), true).unwrap();
    let flushes = |d: &FileDevice| d.stats().flushes;
    d.flush().unwrap();
    assert_eq!(flushes(&d), 1, "a new file is synced once");
    d.flush().unwrap();
    assert_eq!(flushes(&d), 1);
    let mut back = vec![0u8; 4096];
    d.read_at(0, &mut back).unwrap();
    d.flush().unwrap();
    assert_eq!(flushes(&d), 1, "a read changes nothing");
    let changes: [&dyn Fn(&mut FileDevice); 4] = [
        &|d| d.write_at(0, &pattern(4096, 1)).unwrap(),
        &|d| d.trim(0, 4096).unwrap(),
        &|d| {
            let op = RemapOp {
                src: 0,
                dst: 8192,
                len: 4096,
                mode: RemapMode::Share,
            };
            d.remap(&[op]).unwrap()
        },
        &|d| {
            let op = CopyOp {
                src: 0,
                dst: 16384,
                len: 4096,
            };
            d.copy(&[op]).unwrap()
        },
    ];
    for (i, change) in changes.iter().enumerate() {
        change(&mut d);
        d.flush().unwrap();
        d.flush().unwrap();
        assert_eq!(flushes(&d), 2 + i as u64, "change {i}: one sync");
    }
}

/// `write_many` writes what `write_at` one by one would: neighbours merged into one command
/// whatever order they come in, the others alone; writes that overlap in their given order.
#[test]
fn write_many_merges_neighbours_and_keeps_the_order_of_overlapping_writes() {
    let dir = tempfile::tempdir().unwrap();
    for direct in [true, false] {
        let path = dir.path().join(format!("dev{direct}"));
        let mut d = if direct {
            FileDevice::open(&path, Some(1 << 20), true).unwrap()
        } else {
            FileDevice::open_buffered(&path, Some(1 << 20), true).unwrap()
        };
        // Pages 5, 3, 4 (one run of three), 11 alone, 7 and 8 (a run of two); offset slices are
        // not aligned.
        let pages: Vec<(u64, Vec<u8>)> = [5u64, 3, 4, 11, 8, 7]
            .iter()
            .map(|&p| (p * 4096, pattern(4097, p as u8)))
            .collect();
        let writes: Vec<(u64, &[u8])> = pages.iter().map(|(o, b)| (*o, &b[1..])).collect();
        let before = d.stats().writes;
        d.write_many(&writes).unwrap();
        assert_eq!(d.stats().writes - before, 3, "three commands");
        for (o, b) in &pages {
            let mut back = vec![0u8; 4096];
            d.read_at(*o, &mut back).unwrap();
            assert_eq!(&back[..], &b[1..], "page at {o}");
        }
        // The same page twice: the later write wins.
        let (a, b) = (pattern(4096, 1), pattern(4096, 2));
        d.write_many(&[(0, &a[..]), (4096, &a[..]), (0, &b[..])])
            .unwrap();
        let mut back = vec![0u8; 4096];
        d.read_at(0, &mut back).unwrap();
        assert_eq!(back, b);
        // Empty writes write nothing.
        d.write_many(&[(0, &[][..]), (4096, &[][..])]).unwrap();
        d.read_at(0, &mut back).unwrap();
        assert_eq!(back, b);
        // Checked whole first: nothing is written if one is out of range.
        let far = [(8192, &a[..]), (1 << 20, &a[..])];
        assert!(d.write_many(&far).is_err());
        d.read_at(8192, &mut back).unwrap();
        assert_ne!(back, a);
    }
}

/// A file made by `create_zeroed` has every block allocated (written, not a hole), so a write
/// into it never changes the file's metadata; an existing non-empty file is left alone, an
/// empty one and a temporary file a crash left are replaced.
#[test]
fn a_zeroed_file_is_written_through_and_replaces_nothing_that_holds_data() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    std::fs::write(dir.path().join("log.zeroing"), b"left by a crash").unwrap();
    std::fs::write(&path, b"").unwrap();
    assert!(FileDevice::create_zeroed(&path, 3 << 20).unwrap());
    let m = std::fs::metadata(&path).unwrap();
    assert_eq!(m.len(), 3 << 20);
    // st_blocks counts 512-byte units actually allocated; a sparse file would count none.
    assert!(
        m.blocks() * 512 >= 3 << 20,
        "{} blocks allocated",
        m.blocks()
    );
    assert!(!dir.path().join("log.zeroing").exists());
    let mut d = FileDevice::open(&path, Some(3 << 20), false).unwrap();
    let mut buf = vec![1u8; 4096];
    d.read_at(4096, &mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 0));
    d.write_at(0, &pattern(4096, 7)).unwrap();
    d.flush().unwrap();
    drop(d);
    // Already there: untouched, whatever its size.
    assert!(!FileDevice::create_zeroed(&path, 1 << 20).unwrap());
    let mut d = FileDevice::open(&path, None, false).unwrap();
    d.read_at(0, &mut buf).unwrap();
    assert_eq!(buf, pattern(4096, 7));
    assert!(matches!(
        FileDevice::create_zeroed(&dir.path().join("odd"), 5000),
        Err(DeviceError::Unaligned { .. })
    ));
    assert!(!dir.path().join("odd").exists());
}

/// A random file of `blocks` blocks and a memory device with the same bytes (a model to do
/// the same to), and the random stream.
fn file_and_model(
    dir: &Path,
    blocks: u64,
    seed: u64,
) -> (FileDevice, crate::device::MemDevice, rand_pcg::Pcg64Mcg) {
    let (d, start, rng) = random_file(dir, blocks, seed);
    let mut model = crate::device::MemDevice::new(blocks * 4096, 4096);
    model.write_at(0, &start).unwrap();
    (d, model, rng)
}

/// Whether the file and the model hold the same bytes.
fn same_as_model(d: &mut FileDevice, model: &mut crate::device::MemDevice) -> bool {
    let mut a = vec![0u8; d.capacity_bytes() as usize];
    let mut b = a.clone();
    d.read_at(0, &mut a).unwrap();
    model.read_at(0, &mut b).unwrap();
    a == b
}

/// Up to 19 one-block copies whose sources are two blocks apart (an image and its descriptor),
/// destinations anywhere (`onto_source`: their own source too, which no copy command takes).
fn random_copies(rng: &mut impl rand::Rng, blocks: u64, onto_source: bool) -> Vec<CopyOp> {
    let k = 4096u64;
    let mut src = rng.random_range(0..blocks / 2);
    let mut ops = Vec::new();
    for _ in 0..rng.random_range(1..20) {
        if src >= blocks {
            break;
        }
        let dst = if onto_source {
            rng.random_range(0..blocks)
        } else {
            (src + rng.random_range(1..blocks)) % blocks
        };
        ops.push(CopyOp {
            src: src * k,
            dst: dst * k,
            len: k,
        });
        src += 2;
    }
    ops
}

/// Single-range copy commands sent together (`copy_each`, ISC-A's journal move) give what the
/// commands give one after the other, count as device copies (not the host's writes), and a
/// bad command stops them there with the ones before it done.
#[test]
fn copies_sent_together_give_what_one_command_after_another_gives() {
    let k = 4096u64;
    let blocks = 256u64;
    let dir = tempfile::tempdir().unwrap();
    let (mut d, mut model, mut rng) = file_and_model(dir.path(), blocks, 11);
    for _ in 0..40 {
        let ops = random_copies(&mut rng, blocks, false);
        let (before, copied) = (d.stats(), d.remap_stats().copy_bytes);
        d.copy_each(&ops).unwrap();
        crate::device::copy_each_in_order(&mut model, &ops).unwrap();
        assert_eq!(d.stats().write_bytes, before.write_bytes);
        assert_eq!(d.remap_stats().copy_bytes - copied, ops.len() as u64 * k);
        assert!(
            same_as_model(&mut d, &mut model),
            "the file differs from the commands in order"
        );
    }
    // The third command copies past the end: the first two are done, the error is returned.
    let mut ops = random_copies(&mut rng, blocks, false);
    ops.truncate(2);
    ops.push(CopyOp {
        src: 0,
        dst: blocks * k,
        len: k,
    });
    assert!(d.copy_each(&ops).is_err());
    assert!(crate::device::copy_each_in_order(&mut model, &ops).is_err());
    assert!(
        same_as_model(&mut d, &mut model),
        "the commands before the bad one are done"
    );
}

/// A copy through the host on a file (the journal's baseline move home: images that follow
/// each other in the journal, scattered homes, some writing where a later range reads) leaves
/// the file as the default, a read and a rewrite per range in order, leaves a memory device,
/// and counts every byte as the host's reads and writes.
#[test]
fn a_host_copy_gives_what_reading_and_writing_in_order_gives_and_counts_as_host_io() {
    let k = 4096u64;
    let blocks = 256u64;
    let dir = tempfile::tempdir().unwrap();
    let (mut d, mut model, mut rng) = file_and_model(dir.path(), blocks, 7);
    for _ in 0..40 {
        let ops = random_copies(&mut rng, blocks, true);
        let before = d.stats();
        d.host_copy(&ops).unwrap();
        model.host_copy(&ops).unwrap();
        let after = d.stats();
        let bytes = ops.len() as u64 * k;
        assert_eq!(after.read_bytes - before.read_bytes, bytes);
        assert_eq!(after.write_bytes - before.write_bytes, bytes);
        assert!(
            same_as_model(&mut d, &mut model),
            "the file differs from copying in order"
        );
    }
}
