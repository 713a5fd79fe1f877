//! Building a node's cells from their parts: a leaf cell (key and inline value, or key and
//! overflow reference) and an internal cell (separator and child).

use super::{LeafValue, INTERNAL_OVERHEAD, TAG_INLINE, TAG_OVERFLOW};
use crate::error::{Error, Result};
use crate::page::PageId;

/// Cells up to this many bytes are built on the stack (a YCSB record of a 24-byte key and a
/// 100-byte value is 131): a put would otherwise allocate, and grow, a vector per cell.
const CELL_STACK_BYTES: usize = 256;

/// A cell built from parts: on the stack when short, else on the heap.
pub(super) struct CellBuf {
    stack: [u8; CELL_STACK_BYTES],
    len: usize,
    heap: Vec<u8>,
}

impl CellBuf {
    fn of(parts: &[&[u8]]) -> CellBuf {
        let len = parts.iter().map(|p| p.len()).sum();
        let mut c = CellBuf {
            stack: [0; CELL_STACK_BYTES],
            len,
            heap: Vec::new(),
        };
        if len <= CELL_STACK_BYTES {
            let mut at = 0;
            for p in parts {
                c.stack[at..at + p.len()].copy_from_slice(p);
                at += p.len();
            }
        } else {
            c.heap = parts.concat();
        }
        c
    }
}

impl std::ops::Deref for CellBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        if self.len <= CELL_STACK_BYTES {
            &self.stack[..self.len]
        } else {
            &self.heap
        }
    }
}

pub(super) fn leaf_cell(key: &[u8], val: LeafValue<'_>) -> Result<CellBuf> {
    if key.len() > u16::MAX as usize {
        return Err(Error::KeyTooLong {
            len: key.len(),
            max: u16::MAX as usize,
        });
    }
    let klen = (key.len() as u16).to_le_bytes();
    Ok(match val {
        LeafValue::Inline(v) => {
            if v.len() > u32::MAX as usize {
                return Err(Error::ValueTooLong {
                    len: v.len(),
                    max: u32::MAX as usize,
                });
            }
            let vlen = (v.len() as u32).to_le_bytes();
            CellBuf::of(&[&klen, key, &[TAG_INLINE], &vlen, v])
        }
        LeafValue::Overflow { total_len, first } => CellBuf::of(&[
            &klen,
            key,
            &[TAG_OVERFLOW],
            &total_len.to_le_bytes(),
            &first.to_le_bytes(),
        ]),
    })
}

pub(super) fn internal_cell(key: &[u8], child: PageId) -> Result<Vec<u8>> {
    if key.len() > u16::MAX as usize {
        return Err(Error::KeyTooLong {
            len: key.len(),
            max: u16::MAX as usize,
        });
    }
    let mut c = Vec::with_capacity(INTERNAL_OVERHEAD + key.len());
    c.extend_from_slice(&(key.len() as u16).to_le_bytes());
    c.extend_from_slice(key);
    c.extend_from_slice(&child.to_le_bytes());
    Ok(c)
}
