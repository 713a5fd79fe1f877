//! A reusable buffer of a scan's pairs ([`ScanBuf`], filled by [`crate::Txn::scan_into`]): every
//! key and value in one byte vector, so a scan allocates nothing per pair and a caller that
//! scans again reuses the memory. [`PairOut`] is what the scan code writes its pairs to: this
//! buffer or a vector of owned pairs ([`crate::Txn::scan`]).

/// The pairs of a scan in one allocation (see the module notes). Read them with
/// [`ScanBuf::iter`] or [`ScanBuf::get`]; they stay until the next scan into the buffer or
/// [`ScanBuf::clear`].
///
/// ```
/// use std::ops::Bound;
/// use wafer_engine::{Db, DbConfig, Devices, ScanBuf};
/// let db = Db::open(Devices::memory(16 << 20, 4 << 20), DbConfig::default()).unwrap();
/// let t = db.create_tree("t").unwrap();
/// let mut txn = db.begin().unwrap();
/// for i in 0..100u32 {
///     txn.put(&t, format!("k{i:03}").as_bytes(), b"v").unwrap();
/// }
/// let mut buf = ScanBuf::new();
/// let range = (Bound::Included(&b"k010"[..]), Bound::Unbounded);
/// txn.scan_into(&t, range, false, 5, &mut buf).unwrap();
/// assert_eq!(buf.len(), 5);
/// assert_eq!(buf.get(0), Some((&b"k010"[..], &b"v"[..])));
/// assert_eq!(buf.iter().last().unwrap().0, b"k014");
/// txn.commit().unwrap();
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanBuf {
    /// Keys and values, each pair's key then its value.
    bytes: Vec<u8>,
    /// Where each pair's key ends and its value ends in `bytes` (its key starts where the pair
    /// before it ends).
    ends: Vec<(usize, usize)>,
}

impl ScanBuf {
    /// An empty buffer.
    pub fn new() -> ScanBuf {
        ScanBuf::default()
    }

    /// Pairs held.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether it holds no pair.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Empties it, keeping its memory.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// Pair `i` (key, value), in scan order.
    pub fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let &(key_end, value_end) = self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1].1 };
        Some((&self.bytes[start..key_end], &self.bytes[key_end..value_end]))
    }

    /// The pairs (key, value), in scan order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> + '_ {
        let mut start = 0;
        self.ends.iter().map(move |&(key_end, value_end)| {
            let pair = (&self.bytes[start..key_end], &self.bytes[key_end..value_end]);
            start = value_end;
            pair
        })
    }

    /// The pairs as owned vectors.
    pub fn to_vec(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect()
    }

    fn push(&mut self, key: &[u8], value: &[u8]) {
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.ends.push((key_end, self.bytes.len()));
    }
}

/// Where the scan code puts the pairs it reads.
pub(crate) trait PairOut {
    /// Appends a pair.
    fn push_pair(&mut self, key: &[u8], value: &[u8]);
    /// Pairs held.
    fn pair_count(&self) -> usize;
    /// The key of pair `i`.
    fn key_at(&self, i: usize) -> &[u8];
    /// Empties it (a shared attempt that gave up is run again from the start).
    fn clear_pairs(&mut self);
    /// Keeps the first `n` pairs (a scan resumed after a miss drops what its claim does not
    /// cover).
    fn truncate_pairs(&mut self, n: usize);
}

impl PairOut for Vec<(Vec<u8>, Vec<u8>)> {
    fn push_pair(&mut self, key: &[u8], value: &[u8]) {
        self.push((key.to_vec(), value.to_vec()));
    }
    fn pair_count(&self) -> usize {
        self.len()
    }
    fn key_at(&self, i: usize) -> &[u8] {
        &self[i].0
    }
    fn clear_pairs(&mut self) {
        self.clear();
    }
    fn truncate_pairs(&mut self, n: usize) {
        self.truncate(n);
    }
}

impl PairOut for ScanBuf {
    fn push_pair(&mut self, key: &[u8], value: &[u8]) {
        self.push(key, value);
    }
    fn pair_count(&self) -> usize {
        self.len()
    }
    fn key_at(&self, i: usize) -> &[u8] {
        self.get(i).expect("a pair in the buffer").0
    }
    fn clear_pairs(&mut self) {
        self.clear();
    }
    fn truncate_pairs(&mut self, n: usize) {
        if n < self.ends.len() {
            self.ends.truncate(n);
            self.bytes.truncate(self.ends.last().map_or(0, |e| e.1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_come_back_as_pushed_and_clear_keeps_the_memory() {
        let mut b = ScanBuf::new();
        assert!(b.is_empty() && b.get(0).is_none());
        b.push_pair(b"a", b"1");
        b.push_pair(b"", b"");
        b.push_pair(b"ccc", b"333");
        assert_eq!(b.len(), 3);
        assert_eq!(b.get(1), Some((&b""[..], &b""[..])));
        assert_eq!(b.key_at(2), b"ccc");
        let all: Vec<_> = b.iter().collect();
        assert_eq!(
            all,
            vec![
                (&b"a"[..], &b"1"[..]),
                (&b""[..], &b""[..]),
                (&b"ccc"[..], &b"333"[..])
            ]
        );
        assert_eq!(b.to_vec()[2], (b"ccc".to_vec(), b"333".to_vec()));
        b.truncate_pairs(5);
        assert_eq!(b.len(), 3);
        b.truncate_pairs(1);
        b.push_pair(b"d", b"4");
        assert_eq!(
            b.iter().collect::<Vec<_>>(),
            vec![(&b"a"[..], &b"1"[..]), (&b"d"[..], &b"4"[..])]
        );
        let cap = b.bytes.capacity();
        b.clear_pairs();
        assert!(b.is_empty() && b.iter().next().is_none());
        assert_eq!(b.bytes.capacity(), cap);
        b.push_pair(b"k", b"v");
        assert_eq!(b.get(0), Some((&b"k"[..], &b"v"[..])));
    }
}
