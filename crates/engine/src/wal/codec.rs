//! Encoding of [`LogRecord`]s: little-endian, one CRC32C per record. Decoding never panics on
//! arbitrary bytes; every defect is reported as [`Error::CorruptLog`].
//!
//! Record header (33 bytes):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | `total_len`: bytes of the whole record, header included (u32) |
//! | 4 | 4 | CRC32C of bytes `[8, total_len)`: everything after this field |
//! | 8 | 8 | `lsn`: the record's own LSN (its byte position in the log stream) |
//! | 16 | 8 | `txn`: transaction id (0 = none) |
//! | 24 | 8 | `prev_lsn`: the transaction's previous record (0 = none) |
//! | 32 | 1 | `kind`: body kind, see below |
//! | 33 | `total_len - 33` | body, by kind |
//!
//! Body kinds (`kind` byte) and their fields, in order. `bytes` is a length-prefixed byte string:
//! a u32 length followed by that many bytes. Integers are little-endian.
//!
//! | kind | name | body |
//! |---|---|---|
//! | 1 | Update | redo, undo |
//! | 2 | Clr | redo, `undo_next` u64 |
//! | 3 | System | redo |
//! | 4 | Commit | (empty) |
//! | 5 | Abort | (empty) |
//! | 6 | End | (empty) |
//! | 7 | Checkpoint | `next_txn` u64, `n_dirty` u32, `n_dirty` x (`pid` u64, `rec_lsn` u64), `n_active` u32, `n_active` x (`txn` u64, `last_lsn` u64, `undo_next` u64) |
//! | 8 | Map | `count` u32, `count` x (`pid` u64, `offset` u64, `len` u32) |
//! | 9 | Redo | redo (flushless mode: a committed change) |
//! | 10 | Space | redo, `n_alloc` u32, `n_alloc` x `pid` u64, `n_free` u32, `n_free` x `pid` u64 |
//! | 11 | TableCheckpoint | `next_txn` u64, `n_dirty` u32, `n_dirty` x (`pid` u64, `rec_lsn` u64), `n_txns` u32, `n_txns` x (`txn` u64, `n` u32, `n` x `pid` u64) |
//!
//! Kind 0 is never written, so a zeroed area never decodes as a record.
//!
//! `redo` starts with a tag byte:
//!
//! | tag | name | fields |
//! |---|---|---|
//! | 1 | LeafPut | `pid` u64, `key` bytes, `value` bytes |
//! | 2 | LeafDel | `pid` u64, `key` bytes |
//! | 3 | Images | `count` u32, `count` x (`pid` u64, `image` bytes) (written unless `DbConfig::log_image_holes`) |
//! | 4 | Images with holes | `count` u32, `count` x (`pid` u64, `len` u32, `hole_at` u32, `hole_len` u32, the image's `len - hole_len` bytes outside the hole) |
//!
//! | 5 | Pages | `count` u32, `count` x (`pid` u64, `form` u8, then form 0: an image as in tag 4 (`len` u32, `hole_at` u32, `hole_len` u32, bytes; the hole is empty unless `DbConfig::log_image_holes`), form 1: `n` u32, `n` x page operation) |
//!
//! A page operation (tag 5, form 1) is an `op` byte and its fields: 1 SetLink `link` u64; 2
//! InternalInsert `key` bytes, `child` u64; 3 Truncate `keep` u32, `link` u64; 4 MetaNextPid
//! `pid` u64; 5 MetaFreeHead `pid` u64. Tag 5 is written for a structure change where some page
//! changed only by such operations (`DbConfig::log_page_ops`), tag 3 or 4 otherwise.
//!
//! Tag 4 is tag 3 without the longest run of zero bytes of each image (a slotted page's free
//! middle, most of a new page): the image is bytes `[0, hole_at)`, then `hole_len` zeros, then
//! the rest. Both decode to the same [`Redo::Images`]; `len` is at most [`MAX_IMAGE`], and the
//! images of one record at most 1024 times the record's length.
//!
//! `undo`: `tree` u32, `key` bytes, `has_old` u8 (0 or 1), then `old` bytes if `has_old` is 1.
//!
//! A record is valid only if `total_len` >= 33, the CRC matches, the kind and tags are known, the
//! flag bytes are 0 or 1, and the body fields consume exactly `total_len - 33` bytes.

use crate::error::{Error, Result};
use crate::page::Lsn;
use crate::page::PageId;
use crate::wal::record::{
    Body, CheckpointData, LoadUndo, LogRecord, MapChange, PageRedo, Redo, TableCheckpointData,
    TreeId, TxnId, Undo,
};

/// A record body to encode: a [`Body`], or the update of one leaf record given by borrowed
/// parts. The second is a write's common path: its key, value and old value go into the log
/// buffer without first being copied into a `Body`. Both encode to the same bytes.
#[derive(Clone, Copy)]
pub enum BodyRef<'a> {
    Body(&'a Body),
    LeafUpdate(LeafUpdate<'a>),
}

/// [`Body::Update`] of [`Redo::LeafPut`] (`value` Some) or [`Redo::LeafDel`] (`value` None) of
/// `key` in leaf `pid`, with the [`Undo`] of `key` in `tree` back to `old`.
#[derive(Clone, Copy)]
pub struct LeafUpdate<'a> {
    pub pid: PageId,
    pub key: &'a [u8],
    pub value: Option<&'a [u8]>,
    pub tree: TreeId,
    pub old: Option<&'a [u8]>,
}

/// Bytes of the record header.
pub const HEADER_BYTES: usize = 33;

const KIND_UPDATE: u8 = 1;
const KIND_CLR: u8 = 2;
const KIND_SYSTEM: u8 = 3;
const KIND_COMMIT: u8 = 4;
const KIND_ABORT: u8 = 5;
const KIND_END: u8 = 6;
const KIND_CHECKPOINT: u8 = 7;
const KIND_MAP: u8 = 8;
const KIND_REDO: u8 = 9;
const KIND_SPACE: u8 = 10;
const KIND_TABLE_CHECKPOINT: u8 = 11;
const KIND_LOAD: u8 = 12;

const REDO_LEAF_PUT: u8 = 1;
const REDO_LEAF_DEL: u8 = 2;
const REDO_IMAGES: u8 = 3;
const REDO_HOLED_IMAGES: u8 = 4;
const REDO_PAGES: u8 = 5;

const FORM_IMAGE: u8 = 0;
const FORM_OPS: u8 = 1;

const OP_SET_LINK: u8 = 1;
const OP_INTERNAL_INSERT: u8 = 2;
const OP_TRUNCATE: u8 = 3;
const OP_META_NEXT_PID: u8 = 4;
const OP_META_FREE_HEAD: u8 = 5;
const OP_SPLIT_PENDING: u8 = 6;

/// The largest page image a record may hold (the largest page size is 16 KiB): a bound that
/// keeps a corrupt length from asking for an absurd allocation.
pub const MAX_IMAGE: usize = 64 << 10;

/// At most this many bytes of page images decode from each byte of a record with holes (a
/// 16 KiB free page, the emptiest image, takes about 80 bytes: a ratio near 200), so a corrupt
/// record whose checksum happens to match cannot ask for gigabytes.
const MAX_HOLE_RATIO: usize = 1024;

/// A hole shorter than this is not worth its two fields.
const MIN_HOLE: usize = 16;

/// The longest run of zero bytes in `image` that covers whole aligned 8-byte words, widened by
/// the zero bytes on either side: (start, length); (0, 0) if it is shorter than [`MIN_HOLE`].
pub fn zero_hole(image: &[u8]) -> (usize, usize) {
    let (mut best, mut run_start, mut run) = ((0usize, 0usize), 0usize, 0usize);
    for (i, w) in image.chunks_exact(8).enumerate() {
        let word = u64::from_ne_bytes(w.try_into().expect("8 bytes"));
        if word == 0 {
            if run == 0 {
                run_start = i;
            }
            run += 1;
        } else {
            if run > best.1 {
                best = (run_start, run);
            }
            run = 0;
        }
    }
    if run > best.1 {
        best = (run_start, run);
    }
    let (mut start, mut end) = (best.0 * 8, (best.0 + best.1) * 8);
    if start == end {
        return (0, 0);
    }
    while start > 0 && image[start - 1] == 0 {
        start -= 1;
    }
    while end < image.len() && image[end] == 0 {
        end += 1;
    }
    if end - start < MIN_HOLE {
        return (0, 0);
    }
    (start, end - start)
}

/// Why bytes are not a valid record (the low-level form of [`Error::CorruptLog`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Fewer bytes than the header or than `total_len` says.
    Truncated,
    /// `total_len` is smaller than the header.
    BadLength(u32),
    /// The CRC does not match (torn or corrupted write).
    BadChecksum,
    /// The checksum matches but the contents do not parse.
    Malformed(&'static str),
}

impl Fault {
    pub fn describe(&self) -> String {
        match self {
            Fault::Truncated => "record truncated".to_string(),
            Fault::BadLength(n) => format!("record length {n} is shorter than the header"),
            Fault::BadChecksum => "checksum mismatch (torn or corrupted write)".to_string(),
            Fault::Malformed(why) => format!("malformed record: {why}"),
        }
    }
}

/// The `total_len` field of a record starting at `bytes[0]`, if at least 4 bytes are given.
pub fn record_len(bytes: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(0..4)?.try_into().ok()?))
}

/// The CRC32C a record's checksum field must hold (`record` is the whole record).
fn crc_of(record: &[u8]) -> u32 {
    crc32c::crc32c(&record[8..])
}

#[cfg(test)]
/// Appends the encoding of `rec` to `out` and returns its length. Fails (leaving `out` as it was)
/// if the record would exceed `u32::MAX` bytes or a byte string exceeds `u32::MAX` bytes.
pub fn encode(rec: &LogRecord, out: &mut Vec<u8>) -> Result<usize> {
    encode_parts(
        rec.lsn,
        rec.txn,
        rec.prev_lsn,
        BodyRef::Body(&rec.body),
        true,
        out,
    )
    .map(|e| e.len)
}

/// The size of an encoded record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// Bytes written.
    pub len: usize,
    /// Bytes it takes with its holes put back (with holes: 8 bytes an image more than the same
    /// record with whole images would take): the measure of a structure change that the space
    /// kept for its rollback is based on, since the compensation's images may have smaller
    /// holes than the change's own.
    pub whole_len: usize,
}

/// [`encode`] from the parts of a record, without building a [`LogRecord`].
pub fn encode_parts(
    lsn: Lsn,
    txn: TxnId,
    prev_lsn: Lsn,
    body: BodyRef<'_>,
    holes: bool,
    out: &mut Vec<u8>,
) -> Result<Encoded> {
    let start = out.len();
    out.extend_from_slice(&[0u8; 8]);
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(&txn.to_le_bytes());
    out.extend_from_slice(&prev_lsn.to_le_bytes());
    // None: page images whole (redo tag 3).
    let mut elided = holes.then_some(0);
    let body = match body {
        BodyRef::Body(b) => put_body(out, b, &mut elided),
        BodyRef::LeafUpdate(u) => {
            out.push(KIND_UPDATE);
            put_leaf_redo(out, u.pid, u.key, u.value)
                .and_then(|_| put_undo_parts(out, u.tree, u.key, u.old))
        }
    };
    let len = out.len() - start;
    let total = match body.ok().and_then(|_| u32::try_from(len).ok()) {
        Some(t) => t,
        None => {
            out.truncate(start);
            return Err(Error::InvalidArgument(format!(
                "log record of {len} bytes is too large to encode (at most {} bytes, and each \
                 byte string at most {} bytes)",
                u32::MAX,
                u32::MAX
            )));
        }
    };
    let rec_bytes = &mut out[start..];
    rec_bytes[0..4].copy_from_slice(&total.to_le_bytes());
    let crc = crc_of(rec_bytes);
    rec_bytes[4..8].copy_from_slice(&crc.to_le_bytes());
    Ok(Encoded {
        len,
        whole_len: len + elided.unwrap_or(0),
    })
}

#[cfg(test)]
/// Encodes `rec` into a new vector.
pub fn encode_to_vec(rec: &LogRecord) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    encode(rec, &mut v)?;
    Ok(v)
}

/// The kind byte and body of `body`; with `elided` Some, page images are written without their
/// holes, and the zero bytes left out are added to it.
fn put_body(
    out: &mut Vec<u8>,
    body: &Body,
    elided: &mut Option<usize>,
) -> std::result::Result<(), ()> {
    match body {
        Body::Update { redo, undo } => {
            out.push(KIND_UPDATE);
            put_redo(out, redo, elided).and_then(|_| put_undo(out, undo))
        }
        Body::Clr { redo, undo_next } => {
            out.push(KIND_CLR);
            let r = put_redo(out, redo, elided);
            out.extend_from_slice(&undo_next.to_le_bytes());
            r
        }
        Body::System { redo } => {
            out.push(KIND_SYSTEM);
            put_redo(out, redo, elided)
        }
        Body::Load { redo, undo } => {
            out.push(KIND_LOAD);
            put_redo(out, redo, elided).and_then(|_| {
                out.extend_from_slice(&undo.tree.to_le_bytes());
                put_bytes(out, &undo.first)?;
                put_bytes(out, &undo.last)
            })
        }
        Body::Commit => {
            out.push(KIND_COMMIT);
            Ok(())
        }
        Body::Abort => {
            out.push(KIND_ABORT);
            Ok(())
        }
        Body::End => {
            out.push(KIND_END);
            Ok(())
        }
        Body::Checkpoint(cp) => {
            out.push(KIND_CHECKPOINT);
            put_checkpoint(out, cp)
        }
        Body::Map(changes) => {
            out.push(KIND_MAP);
            put_count(out, changes.len()).map(|_| {
                for m in changes {
                    out.extend_from_slice(&m.pid.to_le_bytes());
                    out.extend_from_slice(&m.offset.to_le_bytes());
                    out.extend_from_slice(&m.len.to_le_bytes());
                }
            })
        }
        Body::Redo { redo } => {
            out.push(KIND_REDO);
            put_redo(out, redo, elided)
        }
        Body::Space { redo, alloc, free } => {
            out.push(KIND_SPACE);
            put_redo(out, redo, elided)
                .and_then(|_| put_pids(out, alloc))
                .and_then(|_| put_pids(out, free))
        }
        Body::TableCheckpoint(cp) => {
            out.push(KIND_TABLE_CHECKPOINT);
            put_table_checkpoint(out, cp)
        }
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) -> std::result::Result<(), ()> {
    let n = u32::try_from(b.len()).map_err(|_| ())?;
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(b);
    Ok(())
}

fn put_count(out: &mut Vec<u8>, n: usize) -> std::result::Result<(), ()> {
    let n = u32::try_from(n).map_err(|_| ())?;
    out.extend_from_slice(&n.to_le_bytes());
    Ok(())
}

/// `redo`; with `elided` Some, page images without their holes (tag 4), whose bytes are added
/// to it; with None, whole (tag 3).
fn put_redo(
    out: &mut Vec<u8>,
    redo: &Redo,
    elided: &mut Option<usize>,
) -> std::result::Result<(), ()> {
    match redo {
        Redo::LeafPut { pid, key, value } => put_leaf_redo(out, *pid, key, Some(value)),
        Redo::LeafDel { pid, key } => put_leaf_redo(out, *pid, key, None),
        Redo::Images(images) => {
            let Some(elided) = elided else {
                out.push(REDO_IMAGES);
                put_count(out, images.len())?;
                for (pid, image) in images {
                    out.extend_from_slice(&pid.to_le_bytes());
                    put_bytes(out, image)?;
                }
                return Ok(());
            };
            out.push(REDO_HOLED_IMAGES);
            put_count(out, images.len())?;
            for (pid, image) in images {
                out.extend_from_slice(&pid.to_le_bytes());
                put_holed_image(out, image, Some(elided))?;
            }
            Ok(())
        }
        Redo::Pages(pages) => {
            out.push(REDO_PAGES);
            put_count(out, pages.len())?;
            for (pid, page) in pages {
                out.extend_from_slice(&pid.to_le_bytes());
                match page {
                    PageRedo::Image(image) => {
                        out.push(FORM_IMAGE);
                        put_holed_image(out, image, elided.as_mut())?;
                    }
                    PageRedo::Ops(ops) => {
                        out.push(FORM_OPS);
                        put_count(out, ops.len())?;
                        for op in ops {
                            put_op(out, op)?;
                        }
                    }
                }
            }
            Ok(())
        }
    }
}

/// [`Redo::LeafPut`] of `value`, or [`Redo::LeafDel`] for None.
fn put_leaf_redo(
    out: &mut Vec<u8>,
    pid: PageId,
    key: &[u8],
    value: Option<&[u8]>,
) -> std::result::Result<(), ()> {
    out.push(if value.is_some() {
        REDO_LEAF_PUT
    } else {
        REDO_LEAF_DEL
    });
    out.extend_from_slice(&pid.to_le_bytes());
    put_bytes(out, key)?;
    value.map_or(Ok(()), |v| put_bytes(out, v))
}

fn put_undo(out: &mut Vec<u8>, undo: &Undo) -> std::result::Result<(), ()> {
    put_undo_parts(out, undo.tree, &undo.key, undo.old.as_deref())
}

fn put_undo_parts(
    out: &mut Vec<u8>,
    tree: TreeId,
    key: &[u8],
    old: Option<&[u8]>,
) -> std::result::Result<(), ()> {
    out.extend_from_slice(&tree.to_le_bytes());
    put_bytes(out, key)?;
    match old {
        None => {
            out.push(0);
            Ok(())
        }
        Some(old) => {
            out.push(1);
            put_bytes(out, old)
        }
    }
}

fn put_checkpoint(out: &mut Vec<u8>, cp: &CheckpointData) -> std::result::Result<(), ()> {
    out.extend_from_slice(&cp.next_txn.to_le_bytes());
    put_count(out, cp.dirty_pages.len())?;
    for (pid, rec_lsn) in &cp.dirty_pages {
        out.extend_from_slice(&pid.to_le_bytes());
        out.extend_from_slice(&rec_lsn.to_le_bytes());
    }
    put_count(out, cp.active_txns.len())?;
    for (txn, last, undo_next) in &cp.active_txns {
        out.extend_from_slice(&txn.to_le_bytes());
        out.extend_from_slice(&last.to_le_bytes());
        out.extend_from_slice(&undo_next.to_le_bytes());
    }
    Ok(())
}

fn put_pids(out: &mut Vec<u8>, pids: &[PageId]) -> std::result::Result<(), ()> {
    put_count(out, pids.len())?;
    for p in pids {
        out.extend_from_slice(&p.to_le_bytes());
    }
    Ok(())
}

fn put_table_checkpoint(
    out: &mut Vec<u8>,
    cp: &TableCheckpointData,
) -> std::result::Result<(), ()> {
    out.extend_from_slice(&cp.next_txn.to_le_bytes());
    put_count(out, cp.dirty_pages.len())?;
    for (pid, rec_lsn) in &cp.dirty_pages {
        out.extend_from_slice(&pid.to_le_bytes());
        out.extend_from_slice(&rec_lsn.to_le_bytes());
    }
    put_count(out, cp.allocations.len())?;
    for (txn, pids) in &cp.allocations {
        out.extend_from_slice(&txn.to_le_bytes());
        put_pids(out, pids)?;
    }
    Ok(())
}

/// Checks the length and checksum of the record at the start of `bytes` and returns its length.
pub fn check(bytes: &[u8]) -> std::result::Result<usize, Fault> {
    if bytes.len() < HEADER_BYTES {
        return Err(Fault::Truncated);
    }
    let total = record_len(bytes).ok_or(Fault::Truncated)?;
    if (total as usize) < HEADER_BYTES {
        return Err(Fault::BadLength(total));
    }
    let rec = bytes.get(..total as usize).ok_or(Fault::Truncated)?;
    let stored = u32::from_le_bytes([rec[4], rec[5], rec[6], rec[7]]);
    if stored != crc_of(rec) {
        return Err(Fault::BadChecksum);
    }
    Ok(total as usize)
}

/// Decodes the record at the start of `bytes` (which may continue past it), with the low-level
/// fault on failure.
pub fn decode_raw(bytes: &[u8]) -> std::result::Result<LogRecord, Fault> {
    let total = check(bytes)?;
    let mut c = Cursor {
        b: &bytes[..total],
        at: 8,
    };
    let lsn = c.u64()?;
    let txn = c.u64()?;
    let prev_lsn = c.u64()?;
    let body = match c.u8()? {
        KIND_UPDATE => {
            let redo = c.redo()?;
            let undo = c.undo()?;
            Body::Update { redo, undo }
        }
        KIND_CLR => {
            let redo = c.redo()?;
            let undo_next = c.u64()?;
            Body::Clr { redo, undo_next }
        }
        KIND_SYSTEM => Body::System { redo: c.redo()? },
        KIND_LOAD => {
            let redo = c.redo()?;
            let undo = LoadUndo {
                tree: c.u32()?,
                first: c.bytes()?,
                last: c.bytes()?,
            };
            Body::Load { redo, undo }
        }
        KIND_COMMIT => Body::Commit,
        KIND_ABORT => Body::Abort,
        KIND_END => Body::End,
        KIND_CHECKPOINT => Body::Checkpoint(c.checkpoint()?),
        KIND_MAP => {
            let n = c.u32()? as usize;
            // Each entry takes 20 bytes: a count larger than the record is malformed.
            if n > (total - c.at) / 20 {
                return Err(Fault::Malformed("map change count exceeds the record"));
            }
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push(MapChange {
                    pid: c.u64()?,
                    offset: c.u64()?,
                    len: c.u32()?,
                });
            }
            Body::Map(v)
        }
        KIND_REDO => Body::Redo { redo: c.redo()? },
        KIND_SPACE => {
            let redo = c.redo()?;
            let alloc = c.pids()?;
            let free = c.pids()?;
            Body::Space { redo, alloc, free }
        }
        KIND_TABLE_CHECKPOINT => Body::TableCheckpoint(c.table_checkpoint()?),
        _ => return Err(Fault::Malformed("unknown record kind")),
    };
    if c.at != total {
        return Err(Fault::Malformed("trailing bytes after the body"));
    }
    Ok(LogRecord {
        lsn,
        txn,
        prev_lsn,
        body,
    })
}

/// Decodes the record at the start of `bytes`. `at` is the LSN the record was read from, used in
/// the error.
pub fn decode(bytes: &[u8], at: Lsn) -> Result<LogRecord> {
    decode_raw(bytes).map_err(|f| Error::CorruptLog {
        lsn: at,
        reason: f.describe(),
    })
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

type Parse<T> = std::result::Result<T, Fault>;

impl Cursor<'_> {
    fn remaining(&self) -> usize {
        self.b.len() - self.at
    }
    fn take(&mut self, n: usize) -> Parse<&[u8]> {
        if n > self.remaining() {
            return Err(Fault::Malformed("field runs past the end of the record"));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Parse<u8> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Parse<u32> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self) -> Parse<u64> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    fn bytes(&mut self) -> Parse<Vec<u8>> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    /// A count of entries of at least `min_entry` bytes each, checked against what is left.
    fn count(&mut self, min_entry: usize) -> Parse<usize> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_entry) > self.remaining() {
            return Err(Fault::Malformed(
                "entry count runs past the end of the record",
            ));
        }
        Ok(n)
    }
    fn redo(&mut self) -> Parse<Redo> {
        Ok(match self.u8()? {
            REDO_LEAF_PUT => {
                let pid = self.u64()?;
                let key = self.bytes()?;
                let value = self.bytes()?;
                Redo::LeafPut { pid, key, value }
            }
            REDO_LEAF_DEL => {
                let pid = self.u64()?;
                let key = self.bytes()?;
                Redo::LeafDel { pid, key }
            }
            REDO_IMAGES => {
                let n = self.count(12)?;
                let mut images = Vec::with_capacity(n);
                for _ in 0..n {
                    let pid = self.u64()?;
                    images.push((pid, self.bytes()?));
                }
                Redo::Images(images)
            }
            REDO_HOLED_IMAGES => {
                let n = self.count(20)?;
                let mut images = Vec::with_capacity(n);
                let mut budget = self.b.len().saturating_mul(MAX_HOLE_RATIO);
                for _ in 0..n {
                    let pid = self.u64()?;
                    images.push((pid, self.holed_image(&mut budget)?));
                }
                Redo::Images(images)
            }
            REDO_PAGES => {
                let n = self.count(9)?;
                let mut pages = Vec::with_capacity(n);
                let mut budget = self.b.len().saturating_mul(MAX_HOLE_RATIO);
                for _ in 0..n {
                    let pid = self.u64()?;
                    let page = match self.u8()? {
                        FORM_IMAGE => PageRedo::Image(self.holed_image(&mut budget)?),
                        FORM_OPS => {
                            // The shortest operation (a split-pending flag) is two bytes.
                            let k = self.count(2)?;
                            let mut ops = Vec::with_capacity(k);
                            for _ in 0..k {
                                ops.push(self.op()?);
                            }
                            PageRedo::Ops(ops)
                        }
                        _ => return Err(Fault::Malformed("unknown page redo form")),
                    };
                    pages.push((pid, page));
                }
                Redo::Pages(pages)
            }
            _ => return Err(Fault::Malformed("unknown redo tag")),
        })
    }
    fn undo(&mut self) -> Parse<Undo> {
        let tree = self.u32()?;
        let key = self.bytes()?;
        let old = match self.u8()? {
            0 => None,
            1 => Some(self.bytes()?),
            _ => return Err(Fault::Malformed("undo has_old flag is neither 0 nor 1")),
        };
        Ok(Undo { tree, key, old })
    }
    fn pids(&mut self) -> Parse<Vec<PageId>> {
        let n = self.count(8)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.u64()?);
        }
        Ok(v)
    }
    fn table_checkpoint(&mut self) -> Parse<TableCheckpointData> {
        let next_txn = self.u64()?;
        let n = self.count(16)?;
        let mut dirty_pages = Vec::with_capacity(n);
        for _ in 0..n {
            dirty_pages.push((self.u64()?, self.u64()?));
        }
        let n = self.count(12)?;
        let mut allocations = Vec::with_capacity(n);
        for _ in 0..n {
            let txn = self.u64()?;
            allocations.push((txn, self.pids()?));
        }
        Ok(TableCheckpointData {
            dirty_pages,
            allocations,
            next_txn,
        })
    }
    fn checkpoint(&mut self) -> Parse<CheckpointData> {
        let next_txn = self.u64()?;
        let n = self.count(16)?;
        let mut dirty_pages = Vec::with_capacity(n);
        for _ in 0..n {
            dirty_pages.push((self.u64()?, self.u64()?));
        }
        let n = self.count(24)?;
        let mut active_txns = Vec::with_capacity(n);
        for _ in 0..n {
            active_txns.push((self.u64()?, self.u64()?, self.u64()?));
        }
        Ok(CheckpointData {
            dirty_pages,
            active_txns,
            next_txn,
        })
    }
}

#[path = "codec_pages.rs"]
mod pages;
use pages::{put_holed_image, put_op};

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
