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
use crate::page_op::apply_op;
use crate::wal::record::{PageRedo, Redo};

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
        Redo::Pages(v) => v.iter().map(|(p, _)| *p).collect(),
    }
}

/// The leaves `redo` flags as split beside other threads, separator not posted (a page
/// operation that sets the flag, or an image with it set): recovery looks at them after redo
/// (`splits.rs`).
pub fn flags_split(redo: &Redo) -> Vec<PageId> {
    let flagged = |img: &[u8]| crate::btree::node::split_pending(img).unwrap_or(false);
    match redo {
        Redo::LeafPut { .. } | Redo::LeafDel { .. } => Vec::new(),
        Redo::Images(v) => v
            .iter()
            .filter(|(_, img)| flagged(img))
            .map(|(p, _)| *p)
            .collect(),
        Redo::Pages(v) => v
            .iter()
            .filter(|(_, r)| match r {
                PageRedo::Image(img) => flagged(img),
                PageRedo::Ops(ops) => ops.contains(&crate::page_op::PageOp::SplitPending(true)),
            })
            .map(|(p, _)| *p)
            .collect(),
    }
}

/// Whether `redo` holds a whole image of page `pid` (which then needs no valid old page).
pub fn has_image(redo: &Redo, pid: PageId) -> bool {
    match redo {
        Redo::Images(v) => v.iter().any(|(p, _)| *p == pid),
        Redo::Pages(v) => v
            .iter()
            .any(|(p, r)| *p == pid && matches!(r, PageRedo::Image(_))),
        _ => false,
    }
}

/// Replaces `data` with `image` if the page is older than `lsn` (or never written).
fn apply_image(data: &mut [u8], lsn: Lsn, image: &[u8]) -> Result<Applied> {
    if !(page::is_zeroed(data) || page::page_lsn(data) < lsn) {
        return Ok(Applied::Skipped);
    }
    if image.len() != data.len() {
        return Err(Error::CorruptLog {
            lsn,
            reason: format!("page image of {} bytes", image.len()),
        });
    }
    data.copy_from_slice(image);
    page::set_page_lsn(data, lsn);
    Ok(Applied::Changed)
}

/// Applies the part of `redo` (logged at `lsn`) that concerns page `pid` to its image `data`.
///
/// A full image needs no valid old page: a torn or never-written page is simply replaced. A leaf
/// change needs the page it was logged against: a never-written page is corruption.
pub fn apply(data: &mut [u8], pid: PageId, lsn: Lsn, redo: &Redo) -> Result<Applied> {
    match redo {
        Redo::Images(images) => {
            let mut applied = Applied::Skipped;
            for (_, image) in images.iter().filter(|(p, _)| *p == pid) {
                if apply_image(data, lsn, image)? == Applied::Changed {
                    applied = Applied::Changed;
                }
            }
            Ok(applied)
        }
        Redo::Pages(pages) => {
            let mut applied = Applied::Skipped;
            for (_, r) in pages.iter().filter(|(p, _)| *p == pid) {
                let done = match r {
                    PageRedo::Image(image) => apply_image(data, lsn, image)?,
                    PageRedo::Ops(ops) => {
                        if !needs(
                            data,
                            pid,
                            lsn,
                            "redo of page operations found the page never written",
                        )? {
                            continue;
                        }
                        for op in ops {
                            apply_op(data, op)
                                .map_err(|e| no_room(e, lsn, || format!("redo of {op:?}"), pid))?;
                        }
                        page::set_page_lsn(data, lsn);
                        Applied::Changed
                    }
                };
                if done == Applied::Changed {
                    applied = Applied::Changed;
                }
            }
            Ok(applied)
        }
        Redo::LeafPut { pid: p, key, value } if *p == pid => {
            if !leaf_needs(data, pid, lsn)? {
                return Ok(Applied::Skipped);
            }
            node::leaf_put_inline(data, key, value)
                .map_err(|e| no_room(e, lsn, || "redo of a leaf put".into(), pid))?;
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

/// The error of a redo step that failed: a change that does not fit its page is a corrupt log
/// (it fitted when it was logged).
fn no_room(e: node::PutError, lsn: Lsn, what: impl FnOnce() -> String, pid: PageId) -> Error {
    match e {
        node::PutError::Corrupt(e) => e,
        node::PutError::NoSpace => Error::CorruptLog {
            lsn,
            reason: format!("{} does not fit page {pid}", what()),
        },
    }
}

/// Whether a leaf change logged at `lsn` is missing from the page (an error if the page was
/// never written: a leaf change cannot be replayed onto nothing).
fn leaf_needs(data: &[u8], pid: PageId, lsn: Lsn) -> Result<bool> {
    needs(
        data,
        pid,
        lsn,
        "redo of a leaf change found the page never written",
    )
}

/// Whether a change logged at `lsn` against the page's previous contents is missing from it
/// (`what` names the error if the page was never written).
fn needs(data: &[u8], pid: PageId, lsn: Lsn, what: &'static str) -> Result<bool> {
    if page::is_zeroed(data) {
        return Err(Error::CorruptPage { pid, reason: what });
    }
    Ok(page::page_lsn(data) < lsn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btree::node::{self, NodeKind, Search};
    use crate::meta;
    use crate::page::{PageType, NO_PAGE};
    use crate::page_op::PageOp;

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

    /// Page operations replay onto the page they were logged against, once (by page LSN); an
    /// image in the same record replaces its page whatever it held; operations refuse a page
    /// never written, as leaf changes do.
    #[test]
    fn page_operations_apply_once_and_need_their_page() {
        let mut p = leaf(3, 10);
        for k in [b"a", b"b", b"c"] {
            node::leaf_put_inline(&mut p, k, b"v").unwrap();
        }
        let redo = Redo::Pages(vec![
            (
                3,
                PageRedo::Ops(vec![
                    PageOp::Truncate { keep: 2, link: 8 },
                    PageOp::SetLink(9),
                ]),
            ),
            (8, PageRedo::Image(leaf(8, 0))),
        ]);
        assert_eq!(apply(&mut p, 3, 20, &redo).unwrap(), Applied::Changed);
        assert_eq!(node::cell_count(&p).unwrap(), 2);
        assert_eq!(node::right_sibling(&p).unwrap(), 9);
        assert_eq!(page::page_lsn(&p), 20);
        let before = p.clone();
        assert_eq!(apply(&mut p, 3, 20, &redo).unwrap(), Applied::Skipped);
        assert_eq!(p, before);
        let mut blank = vec![0u8; 4096];
        assert_eq!(apply(&mut blank, 8, 20, &redo).unwrap(), Applied::Changed);
        assert!(has_image(&redo, 8) && !has_image(&redo, 3));
        assert!(matches!(
            apply(&mut vec![0u8; 4096], 3, 20, &redo),
            Err(Error::CorruptPage { pid: 3, .. })
        ));
        // A separator into an internal node; one that does not fit is a corrupt log, not a
        // silently different page.
        let mut n = vec![0u8; 4096];
        page::init(&mut n, 4, PageType::Internal);
        node::init(&mut n, NodeKind::Internal, 2);
        page::set_page_lsn(&mut n, 1);
        let ins = |i: u32| PageOp::InternalInsert {
            key: format!("{i:0200}").into_bytes(),
            child: 100 + i as u64,
        };
        let fill = Redo::Pages(vec![(4, PageRedo::Ops((0..40).map(ins).collect()))]);
        assert!(matches!(
            apply(&mut n, 4, 30, &fill),
            Err(Error::CorruptLog { lsn: 30, .. })
        ));
        let mut n2 = vec![0u8; 4096];
        page::init(&mut n2, 4, PageType::Internal);
        node::init(&mut n2, NodeKind::Internal, 2);
        page::set_page_lsn(&mut n2, 1);
        let one = Redo::Pages(vec![(4, PageRedo::Ops(vec![ins(7)]))]);
        assert_eq!(apply(&mut n2, 4, 30, &one).unwrap(), Applied::Changed);
        assert_eq!(node::child_at(&n2, 1).unwrap(), 107);
        // The meta page's allocation fields.
        let mut m = vec![0u8; 4096];
        meta::init(&mut m);
        let alloc = Redo::Pages(vec![(
            0,
            PageRedo::Ops(vec![PageOp::MetaNextPid(12), PageOp::MetaFreeHead(5)]),
        )]);
        assert_eq!(apply(&mut m, 0, 40, &alloc).unwrap(), Applied::Changed);
        assert_eq!((meta::next_pid(&m), meta::free_head(&m)), (12, 5));
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
