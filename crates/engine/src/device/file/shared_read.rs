//! Reads of a file device from any thread ([`BlockDevice::shared_reader`]): `pread` needs no
//! state of the owner but the descriptor.

use super::{check_io, io_err, AlignedBuf, DeviceError, ReadCounts, SharedRead, BLOCK_BYTES};
use std::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

pub(super) struct FileReader {
    /// A duplicate of the device's descriptor: the same open file, so the same `O_DIRECT`
    /// setting at every moment.
    pub file: File,
    pub path: PathBuf,
    pub capacity: u64,
    pub counts: Arc<ReadCounts>,
}

thread_local! {
    /// An aligned buffer for reads into memory `O_DIRECT` cannot take, one per thread.
    static BOUNCE: RefCell<Option<AlignedBuf>> = const { RefCell::new(None) };
}

impl SharedRead for FileReader {
    /// Reads into `buf` through an aligned buffer if `buf` is not aligned (it may be read with
    /// `O_DIRECT`). An `EINVAL` (a filesystem that refuses direct I/O late) is returned as an
    /// error: the owner's own read switches the file to buffered I/O.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        check_io(offset, buf.len() as u64, self.capacity, BLOCK_BYTES)?;
        let r = if (buf.as_ptr() as usize).is_multiple_of(super::ALIGN) {
            self.file.read_exact_at(buf, offset)
        } else {
            BOUNCE.with(|cell| {
                let mut cell = cell.borrow_mut();
                let bounce = match cell.take() {
                    Some(b) if b.len >= buf.len() => b,
                    _ => AlignedBuf::new(buf.len().next_multiple_of(super::ALIGN)),
                };
                let b = cell.insert(bounce);
                let b = &mut b.as_mut_slice()[..buf.len()];
                let r = self.file.read_exact_at(b, offset);
                if r.is_ok() {
                    buf.copy_from_slice(b);
                }
                r
            })
        };
        r.map_err(|e| io_err(&self.path, "read", e))?;
        self.counts.add(buf.len());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::device::{BlockDevice, DeviceError, FileDevice, SharedDevice};

    /// A reader sees what the owner wrote, from another thread, into aligned and unaligned
    /// memory; its reads are counted in the device's statistics; out-of-range and unaligned
    /// reads are refused as the owner's are.
    #[test]
    fn a_shared_reader_reads_the_owners_writes_and_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = FileDevice::open(dir.path().join("dev"), Some(1 << 20), true).unwrap();
        let r = d.shared_reader().expect("a file offers a shared reader");
        let page: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
        d.write_at(4096, &page).unwrap();
        let before = d.stats();
        let got = std::thread::spawn({
            let r = r.clone();
            move || {
                // An unaligned buffer: one byte into an allocation.
                let mut buf = vec![0u8; 8192 + 1];
                r.read_at(4096, &mut buf[1..]).unwrap();
                buf[1..].to_vec()
            }
        })
        .join()
        .unwrap();
        assert_eq!(got, page);
        d.write_at(4096, &[7u8; 4096]).unwrap();
        let mut buf = vec![0u8; 4096];
        r.read_at(4096, &mut buf).unwrap();
        assert_eq!(buf, [7u8; 4096], "a later write is seen");
        let after = d.stats();
        assert_eq!(after.reads - before.reads, 2);
        assert_eq!(after.read_bytes - before.read_bytes, 8192 + 4096);
        assert!(matches!(
            r.read_at(1 << 20, &mut buf),
            Err(DeviceError::OutOfRange { .. })
        ));
        assert!(matches!(
            r.read_at(100, &mut buf),
            Err(DeviceError::Unaligned { .. })
        ));
    }

    /// A partition's reader reads the partition's bytes (offsets from its base), refuses
    /// bytes beyond it, and counts in the partition's statistics.
    #[test]
    fn a_partitions_shared_reader_reads_its_own_range() {
        let dir = tempfile::tempdir().unwrap();
        let f = FileDevice::open(dir.path().join("dev"), Some(64 * 1024), true).unwrap();
        let mut parts = SharedDevice::shared(f)
            .split(&[16 * 1024, 48 * 1024])
            .unwrap();
        let mut b = parts.pop().unwrap();
        let mut a = parts.pop().unwrap();
        a.write_at(0, &[1u8; 4096]).unwrap();
        b.write_at(0, &[2u8; 4096]).unwrap();
        let rb = b
            .shared_reader()
            .expect("over a file, a partition offers one");
        let mut buf = vec![0u8; 4096];
        rb.read_at(0, &mut buf).unwrap();
        assert_eq!(buf, [2u8; 4096]);
        assert!(matches!(
            rb.read_at(48 * 1024, &mut buf),
            Err(DeviceError::OutOfRange { .. })
        ));
        assert_eq!(b.stats().reads, 1);
        assert_eq!(a.stats().reads, 0);
    }
}
