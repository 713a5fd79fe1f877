//! Contents of programmed flash, addressed by physical mapping unit. WAF-only devices keep none.

use crate::config::DataMode;
use crate::error::SimError;
use std::fs::File;
use std::os::unix::fs::FileExt;

pub(crate) enum Store {
    None,
    /// One lazily allocated buffer per erase unit, dropped when the unit is erased.
    Memory {
        eus: Vec<Option<Box<[u8]>>>,
        eu_bytes: usize,
    },
    /// A sparse file of physical size; erased units are left as they are (never read again).
    File {
        file: File,
    },
}

impl Store {
    pub fn open(
        mode: &DataMode,
        erase_units: u32,
        eu_bytes: u64,
        physical_bytes: u64,
    ) -> Result<Self, SimError> {
        Ok(match mode {
            DataMode::WafOnly => Store::None,
            DataMode::Memory => Store::Memory {
                eus: (0..erase_units).map(|_| None).collect(),
                eu_bytes: eu_bytes as usize,
            },
            DataMode::File { path } => {
                let file = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(path)
                    .map_err(|e| SimError::Backing(format!("{}: {e}", path.display())))?;
                file.set_len(physical_bytes)
                    .map_err(|e| SimError::Backing(format!("{}: {e}", path.display())))?;
                Store::File { file }
            }
        })
    }

    pub fn keeps_data(&self) -> bool {
        !matches!(self, Store::None)
    }

    fn mem_slot(eus: &mut [Option<Box<[u8]>>], eu_bytes: usize, pu: u32, unit: usize) -> &mut [u8] {
        let units_per_eu = eu_bytes / unit;
        let eu = pu as usize / units_per_eu;
        let off = (pu as usize % units_per_eu) * unit;
        let buf = eus[eu].get_or_insert_with(|| vec![0u8; eu_bytes].into_boxed_slice());
        &mut buf[off..off + unit]
    }

    pub fn write(&mut self, pu: u32, data: &[u8]) -> Result<(), SimError> {
        let unit = data.len();
        match self {
            Store::None => Ok(()),
            Store::Memory { eus, eu_bytes } => {
                Self::mem_slot(eus, *eu_bytes, pu, unit).copy_from_slice(data);
                Ok(())
            }
            Store::File { file } => file
                .write_all_at(data, pu as u64 * unit as u64)
                .map_err(|e| SimError::Backing(e.to_string())),
        }
    }

    pub fn read(&mut self, pu: u32, out: &mut [u8]) -> Result<(), SimError> {
        let unit = out.len();
        match self {
            Store::None => {
                out.fill(0);
                Ok(())
            }
            Store::Memory { eus, eu_bytes } => {
                out.copy_from_slice(Self::mem_slot(eus, *eu_bytes, pu, unit));
                Ok(())
            }
            Store::File { file } => file
                .read_exact_at(out, pu as u64 * unit as u64)
                .map_err(|e| SimError::Backing(e.to_string())),
        }
    }

    pub fn erase(&mut self, eu: u32) {
        if let Store::Memory { eus, .. } = self {
            eus[eu as usize] = None;
        }
    }
}
