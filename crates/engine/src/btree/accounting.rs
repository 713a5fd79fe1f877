//! Page accounting, an fsck of page allocation: every page id below the meta page's high-water
//! mark must be exactly one of the meta page, a node or overflow page reachable from a tree of
//! the catalog, or a page on the free list. Anything else is a leak, a page used twice, or a
//! damaged free list.

use super::node::{self, LeafValue, NodeKind};
use super::{overflow, PageStore};
use crate::error::Result;
use crate::meta::{self, META_PID};
use crate::page::{self, PageId, PageType};
use std::collections::HashMap;

/// Walks every tree and the free list through `store`; returns one line per violation (empty:
/// the allocation is consistent). An unreadable meta page or free-list page is an error.
pub(crate) fn check<S: PageStore>(store: &mut S) -> Result<Vec<String>> {
    let meta_page = store.read_page(META_PID, |p| p.to_vec())?;
    let next = meta::next_pid(&meta_page);
    let trees = meta::trees(&meta_page)?;
    let mut bad = Vec::new();
    let mut owner: HashMap<PageId, String> = HashMap::new();
    owner.insert(META_PID, "meta".into());
    let mut claim = |pid: PageId, who: String, bad: &mut Vec<String>| {
        if pid >= next {
            bad.push(format!(
                "page {pid} ({who}) is beyond the high-water mark {next}"
            ));
        }
        if let Some(o) = owner.insert(pid, who.clone()) {
            bad.push(format!("page {pid} used twice: {o} and {who}"));
        }
    };
    for t in &trees {
        let mut stack = vec![t.root];
        while let Some(pid) = stack.pop() {
            claim(pid, format!("tree {} node", t.name), &mut bad);
            let buf = match store.read_page(pid, |p| p.to_vec()) {
                Ok(b) => b,
                Err(e) => {
                    bad.push(format!("tree {} page {pid}: {e}", t.name));
                    continue;
                }
            };
            match node::kind(&buf) {
                Ok(NodeKind::Internal) => match node::internal_entries(&buf) {
                    Ok((left, cells)) => {
                        stack.push(left);
                        stack.extend(cells.iter().map(|c| c.1));
                    }
                    Err(e) => bad.push(format!("tree {} page {pid}: {e}", t.name)),
                },
                Ok(NodeKind::Leaf) => {
                    let entries = match node::leaf_entries(&buf) {
                        Ok(v) => v,
                        Err(e) => {
                            bad.push(format!("tree {} page {pid}: {e}", t.name));
                            continue;
                        }
                    };
                    for (_, v) in entries {
                        if let LeafValue::Overflow { total_len, first } = v {
                            match overflow::chain_pages(store, first, total_len) {
                                Ok(ps) => {
                                    for op in ps {
                                        claim(op, format!("tree {} overflow", t.name), &mut bad)
                                    }
                                }
                                Err(e) => bad.push(format!("overflow chain at {first}: {e}")),
                            }
                        }
                    }
                }
                Err(e) => bad.push(format!("page {pid}: {e}")),
            }
        }
    }
    let mut f = meta::free_head(&meta_page);
    let mut steps = 0;
    while f != 0 {
        claim(f, "free list".into(), &mut bad);
        // A free page that cannot be read (torn, damaged) is an error, as the meta page is: the
        // caller gets its typed error, not a line of the report.
        let p = store.read_page(f, |p| p.to_vec())?;
        if page::page_type(&p) != Some(PageType::Free) {
            bad.push(format!(
                "free-list page {f} has type {:?}",
                page::page_type(&p)
            ));
        }
        f = meta::free_next(&p);
        steps += 1;
        if steps > next {
            bad.push("the free list has a cycle".into());
            break;
        }
    }
    for pid in 0..next {
        if !owner.contains_key(&pid) {
            bad.push(format!("page {pid} leaked (neither in a tree nor free)"));
        }
    }
    Ok(bad)
}

#[cfg(test)]
mod tests {
    use crate::btree::PageStore;
    use crate::page::PageType;
    use crate::wal::record::Body;
    use crate::{Db, DbConfig, Devices};

    #[test]
    fn a_leaked_page_is_reported() {
        let db = Db::open(Devices::memory(16 << 20, 4 << 20), DbConfig::default()).unwrap();
        db.create_tree("t").unwrap();
        assert!(db.check_pages().unwrap().is_empty());
        // Allocate a page and link it nowhere.
        {
            let mut core = db.shared.core();
            let core = &mut *core;
            let mut wal = db.shared.wal.lock();
            crate::ops::run_op(
                &mut core.cache,
                &mut *wal,
                (0, 0),
                &mut Vec::new(),
                |m| Ok((m.alloc_page(PageType::Leaf)?, None)),
                |_, redo| Body::System { redo },
            )
            .unwrap();
        }
        let bad = db.check_pages().unwrap();
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0].contains("leaked"), "{bad:?}");
    }
}
