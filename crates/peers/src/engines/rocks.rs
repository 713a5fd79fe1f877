//! RocksDB through the `rocksdb` crate: a plain DB (a single put is atomic, a load batch is a
//! WriteBatch), compression off (the values are incompressible), a block cache that holds the
//! data set. The WAL is on in both modes; `sync` follows the mode.

use super::{Mode, Res, Sizing};
use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options, WriteBatch, WriteOptions, DB};
use std::path::Path;

pub struct RocksKv {
    db: DB,
    sync: bool,
}

impl RocksKv {
    pub fn open(mode: Mode, dir: &Path, s: Sizing) -> Res<RocksKv> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.set_compression_type(DBCompressionType::None);
        opts.increase_parallelism(
            std::thread::available_parallelism().map_or(2, |n| n.get() as i32),
        );
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&Cache::new_lru_cache(s.cache_bytes() as usize)?);
        opts.set_block_based_table_factory(&table);
        let db = DB::open(&opts, dir)?;
        Ok(RocksKv {
            db,
            sync: mode == Mode::Durable,
        })
    }

    fn write_options(&self) -> WriteOptions {
        let mut w = WriteOptions::default();
        w.set_sync(self.sync);
        w
    }
}

impl super::Kv for RocksKv {
    fn load_batch(&self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Res<()> {
        let mut b = WriteBatch::default();
        for (k, v) in pairs {
            b.put(k, v);
        }
        self.db.write_opt(b, &self.write_options())?;
        Ok(())
    }

    fn read(&self, key: &[u8], out: &mut Vec<u8>) -> Res<bool> {
        Ok(super::copy_out(self.db.get_pinned(key)?.as_deref(), out))
    }

    fn write(&self, key: &[u8], value: &[u8]) -> Res<u64> {
        self.db.put_opt(key, value, &self.write_options())?;
        Ok(0)
    }

    fn scan(&self, start: &[u8], len: usize) -> Res<(usize, u64)> {
        let mut it = self.db.raw_iterator();
        it.seek(start);
        let mut n = 0;
        while n < len && it.valid() {
            std::hint::black_box((it.key().map(<[u8]>::len), it.value().map(<[u8]>::len)));
            n += 1;
            it.next();
        }
        it.status()?;
        Ok((n, 0))
    }
}
