//! fjall 2.x: a transactional keyspace with one partition. With the crate's default
//! `single_writer_tx` feature, write transactions queue on one lock.

use super::{Mode, Res, Sizing};
use fjall::{
    Config, PartitionCreateOptions, PersistMode, TransactionalKeyspace,
    TransactionalPartitionHandle,
};
use std::path::Path;

pub struct FjallKv {
    ks: TransactionalKeyspace,
    part: TransactionalPartitionHandle,
    persist: Option<PersistMode>,
}

impl FjallKv {
    pub fn open(mode: Mode, dir: &Path, s: Sizing) -> Res<FjallKv> {
        std::fs::create_dir_all(dir)?;
        let ks = Config::new(dir)
            .cache_size(s.cache_bytes())
            .open_transactional()?;
        let part = ks.open_partition("usertable", PartitionCreateOptions::default())?;
        let persist = match mode {
            // Commits go to the journal's OS buffers, not to the disk.
            Mode::Memory => None,
            Mode::Durable => Some(PersistMode::SyncAll),
        };
        Ok(FjallKv { ks, part, persist })
    }
}

impl super::Kv for FjallKv {
    fn load_batch(&self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Res<()> {
        let mut w = self.ks.write_tx().durability(self.persist);
        for (k, v) in pairs {
            w.insert(&self.part, &k[..], &v[..]);
        }
        w.commit()?;
        Ok(())
    }

    fn read(&self, key: &[u8], out: &mut Vec<u8>) -> Res<bool> {
        let r = self.ks.read_tx();
        Ok(super::copy_out(r.get(&self.part, key)?.as_deref(), out))
    }

    fn write(&self, key: &[u8], value: &[u8]) -> Res<u64> {
        let mut w = self.ks.write_tx().durability(self.persist);
        w.insert(&self.part, key, value);
        w.commit()?;
        Ok(0)
    }

    fn scan(&self, start: &[u8], len: usize) -> Res<(usize, u64)> {
        let r = self.ks.read_tx();
        let mut n = 0;
        for kv in r.range(&self.part, start..).take(len) {
            let (k, v) = kv?;
            std::hint::black_box((k.len(), v.len()));
            n += 1;
        }
        Ok((n, 0))
    }
}
