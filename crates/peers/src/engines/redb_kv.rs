//! redb 2.x: one table of byte-string keys and values. redb has one writer at a time: write
//! transactions queue on its own lock.

use super::{Mode, Res, Sizing};
use redb::{Database, Durability, TableDefinition};
use std::path::Path;

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("usertable");

pub struct RedbKv {
    db: Database,
    durability: Durability,
}

impl RedbKv {
    pub fn open(mode: Mode, dir: &Path, s: Sizing) -> Res<RedbKv> {
        std::fs::create_dir_all(dir)?;
        let db = Database::builder()
            .set_cache_size(s.cache_bytes() as usize)
            .create(dir.join("data.redb"))?;
        let durability = match mode {
            Mode::Memory => Durability::None,
            Mode::Durable => Durability::Immediate,
        };
        let kv = RedbKv { db, durability };
        // Create the table.
        super::Kv::load_batch(&kv, &[])?;
        Ok(kv)
    }

    fn write_txn(&self, f: impl FnOnce(&mut redb::Table<&[u8], &[u8]>) -> Res<()>) -> Res<()> {
        let mut w = self.db.begin_write()?;
        w.set_durability(self.durability);
        {
            let mut t = w.open_table(TABLE)?;
            f(&mut t)?;
        }
        w.commit()?;
        Ok(())
    }
}

impl super::Kv for RedbKv {
    fn load_batch(&self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Res<()> {
        self.write_txn(|t| {
            for (k, v) in pairs {
                t.insert(&k[..], &v[..])?;
            }
            Ok(())
        })
    }

    fn read(&self, key: &[u8], out: &mut Vec<u8>) -> Res<bool> {
        let r = self.db.begin_read()?;
        let t = r.open_table(TABLE)?;
        let found = super::copy_out(t.get(key)?.as_ref().map(|g| g.value()), out);
        Ok(found)
    }

    fn write(&self, key: &[u8], value: &[u8]) -> Res<u64> {
        self.write_txn(|t| {
            t.insert(key, value)?;
            Ok(())
        })?;
        Ok(0)
    }

    fn scan(&self, start: &[u8], len: usize) -> Res<(usize, u64)> {
        let r = self.db.begin_read()?;
        let t = r.open_table(TABLE)?;
        let mut n = 0;
        for kv in t.range(start..)?.take(len) {
            let (k, v) = kv?;
            std::hint::black_box((k.value().len(), v.value().len()));
            n += 1;
        }
        Ok((n, 0))
    }
}
