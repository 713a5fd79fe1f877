//! LMDB through heed: the unnamed database of one environment. LMDB has one writer at a time:
//! write transactions queue on its mutex.

use super::{Mode, Res, Sizing};
use heed::types::Bytes;
use heed::{CommitOrAbort, Database, Env, EnvFlags, EnvOpenOptions, WithTls};
use std::ops::Bound;
use std::path::Path;

pub struct LmdbKv {
    env: &'static Env<WithTls>,
    db: Database<'static, Bytes, Bytes>,
}

impl LmdbKv {
    pub fn open(mode: Mode, dir: &Path, s: Sizing) -> Res<LmdbKv> {
        std::fs::create_dir_all(dir)?;
        let mut opts = EnvOpenOptions::new();
        // The map is address space, not memory: room for the data set, its page overhead and
        // the copy-on-write pages of the runs.
        opts.map_size(((s.raw_bytes() * 8).max(1 << 30) as usize).next_multiple_of(4096))
            .max_readers(1024);
        if mode == Mode::Memory {
            // SAFETY: NO_SYNC and WRITE_MAP give up durability across a crash of the machine
            // (not of the process), which is what the memory mode measures; the directory is
            // fresh and used by this process only.
            unsafe {
                opts.flags(EnvFlags::NO_SYNC | EnvFlags::NO_META_SYNC | EnvFlags::WRITE_MAP);
            }
        }
        // SAFETY: the environment is opened once, by this process only.
        let env = unsafe { opts.open(dir)? };
        // heed's database handles borrow their environment; the environment lives as long as
        // the process (a child that runs one measurement and exits).
        let env: &'static Env<WithTls> = Box::leak(Box::new(env));
        let w = env.write_txn()?;
        let db = env
            .create_databases_and_commit(w, |opener, w| -> Result<_, heed::Error> {
                let db = opener.create_database::<Bytes, Bytes>(w, None)?;
                Ok(CommitOrAbort::<_, ()>::Commit(db))
            })?
            .unwrap_commit();
        Ok(LmdbKv { env, db })
    }
}

impl super::Kv for LmdbKv {
    fn load_batch(&self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Res<()> {
        let mut w = self.env.write_txn()?;
        for (k, v) in pairs {
            self.db.put(&mut w, k, v)?;
        }
        w.commit()?;
        Ok(())
    }

    fn read(&self, key: &[u8], out: &mut Vec<u8>) -> Res<bool> {
        let r = self.env.read_txn()?;
        let found = super::copy_out(self.db.get(&r, key)?, out);
        drop(r);
        Ok(found)
    }

    fn write(&self, key: &[u8], value: &[u8]) -> Res<u64> {
        let mut w = self.env.write_txn()?;
        self.db.put(&mut w, key, value)?;
        w.commit()?;
        Ok(0)
    }

    fn scan(&self, start: &[u8], len: usize) -> Res<(usize, u64)> {
        let r = self.env.read_txn()?;
        let mut n = 0;
        let range = (Bound::Included(start), Bound::Unbounded);
        for kv in self.db.range(&r, &range)?.take(len) {
            let (k, v) = kv?;
            std::hint::black_box((k.len(), v.len()));
            n += 1;
        }
        drop(r);
        Ok((n, 0))
    }
}
