//! The one redo function: how a logged change is applied to a page image. Pure (a page buffer
//! in, the same buffer changed out), so crash recovery uses it today and on-the-fly redo (paper
//! 001: re-applying the records of a page that was evicted without being written, when it is read
//! again) can use it tomorrow without a second implementation.
//!
//! Idempotence comes from the page LSN: a change is applied only to a page older than the record,
//! and stamps the page with the record's LSN.

use crate::btree::node;
use crate::error::{Error, Result};
use crate::page::{self, Lsn, PageId};
use crate::wal::record::Redo;

/// What [`apply`] did to the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// The record changed the page (its LSN is now the record's).
    Changed,
    /// The page already holds the change (page LSN at or past the record), or the record does
    /// not concern this page.
    Skipped,
}

/// The pages a record changes.
pub fn pages(redo: &Redo) -> Vec<PageId> {
    match redo {
        Redo::LeafPut { pid, .. } | Redo::LeafDel { pid, .. } => vec![*pid],
        Redo::Images(v) => v.iter().map(|(p, _)| *p).collect(),
    }
}

/// Applies the part of `redo` (logged at `lsn`) that concerns page `pid` to its image `data`.
///
/// A full image needs no valid old page: a torn or never-written page is simply replaced. A leaf
/// change needs the page it was logged against: a never-written page is corruption.
pub fn apply(data: &mut [u8], pid: PageId, lsn: Lsn, redo: &Redo) -> Result<Applied> {
    match redo {
        Redo::Images(images) => {
            let mut applied = Applied::Skipped;
            for (p, image) in images.iter().filter(|(p, _)| *p == pid) {
                debug_assert_eq!(*p, pid);
                if page::is_zeroed(data) || page::page_lsn(data) < lsn {
                    if image.len() != data.len() {
                        return Err(Error::CorruptLog {
                            lsn,
                            reason: format!("page image of {} bytes", image.len()),
                        });
                    }
                    data.copy_from_slice(image);
                    page::set_page_lsn(data, lsn);
                    applied = Applied::Changed;
                }
            }
            Ok(applied)
        }
        Redo::LeafPut { pid: p, key, value } if *p == pid => {
            if !leaf_needs(data, pid, lsn)? {
                return Ok(Applied::Skipped);
            }
            node::leaf_put_inline(data, key, value).map_err(|e| match e {
                node::PutError::Corrupt(e) => e,
                node::PutError::NoSpace => Error::CorruptLog {
                    lsn,
                    reason: format!("redo of a leaf put does not fit page {pid}"),
                },
            })?;
            page::set_page_lsn(data, lsn);
            Ok(Applied::Changed)
        }
        Redo::LeafDel { pid: p, key } if *p == pid => {
            if !leaf_needs(data, pid, lsn)? {
                return Ok(Applied::Skipped);
            }
            node::leaf_del(data, key)?;
            page::set_page_lsn(data, lsn);
            Ok(Applied::Changed)
        }
        _ => Ok(Applied::Skipped),
    }
}

/// Whether a leaf change logged at `lsn` is missing from the page (an error if the page was
/// never written: a leaf change cannot be replayed onto nothing).
fn leaf_needs(data: &[u8], pid: PageId, lsn: Lsn) -> Result<bool> {
    if page::is_zeroed(data) {
        return Err(Error::CorruptPage {
            pid,
            reason: "redo of a leaf change found the page never written",
        });
    }
    Ok(page::page_lsn(data) < lsn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btree::node::{self, NodeKind, Search};
    use crate::page::{PageType, NO_PAGE};

    fn leaf(pid: PageId, lsn: Lsn) -> Vec<u8> {
        let mut p = vec![0u8; 4096];
        page::init(&mut p, pid, PageType::Leaf);
        node::init(&mut p, NodeKind::Leaf, NO_PAGE);
        page::set_page_lsn(&mut p, lsn);
        p
    }

    #[test]
    fn leaf_changes_apply_once_by_page_lsn() {
        let mut p = leaf(3, 10);
        let put = Redo::LeafPut {
            pid: 3,
            key: b"k".to_vec(),
            value: b"v".to_vec(),
        };
        assert_eq!(apply(&mut p, 3, 20, &put).unwrap(), Applied::Changed);
        assert_eq!(page::page_lsn(&p), 20);
        assert!(matches!(node::search(&p, b"k").unwrap(), Search::Found(_)));
        // Replaying the same record, or an older one, changes nothing.
        let before = p.clone();
        assert_eq!(apply(&mut p, 3, 20, &put).unwrap(), Applied::Skipped);
        assert_eq!(apply(&mut p, 3, 15, &put).unwrap(), Applied::Skipped);
        assert_eq!(p, before);
        // A record of another page does not touch this one.
        assert_eq!(apply(&mut p, 4, 30, &put).unwrap(), Applied::Skipped);
        let del = Redo::LeafDel {
            pid: 3,
            key: b"k".to_vec(),
        };
        assert_eq!(apply(&mut p, 3, 30, &del).unwrap(), Applied::Changed);
        assert!(matches!(
            node::search(&p, b"k").unwrap(),
            Search::NotFound(_)
        ));
    }

    #[test]
    fn images_replace_torn_pages_and_leaf_changes_refuse_blank_ones() {
        let image = leaf(5, 0);
        let redo = Redo::Images(vec![(5, image.clone())]);
        let mut blank = vec![0u8; 4096];
        assert_eq!(apply(&mut blank, 5, 7, &redo).unwrap(), Applied::Changed);
        assert_eq!(page::page_lsn(&blank), 7);
        let put = Redo::LeafPut {
            pid: 6,
            key: b"k".to_vec(),
            value: b"v".to_vec(),
        };
        let mut blank = vec![0u8; 4096];
        assert!(matches!(
            apply(&mut blank, 6, 9, &put),
            Err(Error::CorruptPage { pid: 6, .. })
        ));
        let short = Redo::Images(vec![(5, vec![1u8; 100])]);
        assert!(matches!(
            apply(&mut leaf(5, 0), 5, 9, &short),
            Err(Error::CorruptLog { .. })
        ));
        assert_eq!(pages(&redo), vec![5]);
    }
}
