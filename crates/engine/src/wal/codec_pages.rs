//! Encoding of the parts of page redo (tags 4 and 5): page images without their hole, and page
//! operations. See the format table in `codec.rs`.

use super::{
    put_bytes, zero_hole, Cursor, Fault, Parse, MAX_IMAGE, OP_INTERNAL_INSERT, OP_META_FREE_HEAD,
    OP_META_NEXT_PID, OP_SET_LINK, OP_SPLIT_PENDING, OP_TRUNCATE,
};
use crate::page_op::PageOp;

/// `image` as `len`, `hole_at`, `hole_len` and the bytes outside the hole; with `elided` None
/// the hole is empty, else it is the longest run of zeros and its length is added to `elided`.
pub(super) fn put_holed_image(
    out: &mut Vec<u8>,
    image: &[u8],
    elided: Option<&mut usize>,
) -> std::result::Result<(), ()> {
    if image.len() > MAX_IMAGE {
        return Err(());
    }
    let (at, len) = match elided {
        Some(e) => {
            let (at, len) = zero_hole(image);
            *e += len;
            (at, len)
        }
        None => (0, 0),
    };
    for n in [image.len(), at, len] {
        out.extend_from_slice(&(n as u32).to_le_bytes());
    }
    out.extend_from_slice(&image[..at]);
    out.extend_from_slice(&image[at + len..]);
    Ok(())
}

pub(super) fn put_op(out: &mut Vec<u8>, op: &PageOp) -> std::result::Result<(), ()> {
    match op {
        PageOp::SetLink(link) => {
            out.push(OP_SET_LINK);
            out.extend_from_slice(&link.to_le_bytes());
        }
        PageOp::InternalInsert { key, child } => {
            out.push(OP_INTERNAL_INSERT);
            put_bytes(out, key)?;
            out.extend_from_slice(&child.to_le_bytes());
        }
        PageOp::Truncate { keep, link } => {
            out.push(OP_TRUNCATE);
            out.extend_from_slice(&keep.to_le_bytes());
            out.extend_from_slice(&link.to_le_bytes());
        }
        PageOp::MetaNextPid(pid) => {
            out.push(OP_META_NEXT_PID);
            out.extend_from_slice(&pid.to_le_bytes());
        }
        PageOp::MetaFreeHead(pid) => {
            out.push(OP_META_FREE_HEAD);
            out.extend_from_slice(&pid.to_le_bytes());
        }
        PageOp::SplitPending(on) => {
            out.push(OP_SPLIT_PENDING);
            out.push(u8::from(*on));
        }
    }
    Ok(())
}

impl Cursor<'_> {
    /// An image as [`put_holed_image`] writes it; its length is taken from `budget`.
    pub(super) fn holed_image(&mut self, budget: &mut usize) -> Parse<Vec<u8>> {
        let (len, at, hole) = (
            self.u32()? as usize,
            self.u32()? as usize,
            self.u32()? as usize,
        );
        if len > MAX_IMAGE || at.checked_add(hole).is_none_or(|end| end > len) {
            return Err(Fault::Malformed("page image hole outside the image"));
        }
        *budget = budget
            .checked_sub(len)
            .ok_or(Fault::Malformed("page images far larger than their record"))?;
        let mut image = Vec::with_capacity(len);
        image.extend_from_slice(self.take(at)?);
        image.resize(at + hole, 0);
        image.extend_from_slice(self.take(len - at - hole)?);
        Ok(image)
    }
    pub(super) fn op(&mut self) -> Parse<PageOp> {
        Ok(match self.u8()? {
            OP_SET_LINK => PageOp::SetLink(self.u64()?),
            OP_INTERNAL_INSERT => {
                let key = self.bytes()?;
                PageOp::InternalInsert {
                    key,
                    child: self.u64()?,
                }
            }
            OP_TRUNCATE => PageOp::Truncate {
                keep: self.u32()?,
                link: self.u64()?,
            },
            OP_META_NEXT_PID => PageOp::MetaNextPid(self.u64()?),
            OP_META_FREE_HEAD => PageOp::MetaFreeHead(self.u64()?),
            OP_SPLIT_PENDING => match self.u8()? {
                0 => PageOp::SplitPending(false),
                1 => PageOp::SplitPending(true),
                _ => return Err(Fault::Malformed("bad split-pending flag")),
            },
            _ => return Err(Fault::Malformed("unknown page operation")),
        })
    }
}
