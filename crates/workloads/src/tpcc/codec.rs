//! The row codec: fields appended little-endian ([`Enc`]), read back with bounds checks
//! ([`Dec`]); strings are length-prefixed. A [`Row`] type encodes to exactly its fields and
//! decodes only from exactly its fields.

use super::TpccError;

/// Appends fields to a row's bytes.
#[derive(Default)]
pub struct Enc(pub Vec<u8>);

impl Enc {
    /// One byte.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    /// Little-endian u16.
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Little-endian u32.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Little-endian u64.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Little-endian i64.
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// A string of at most 255 bytes, length-prefixed (longer input is truncated).
    pub fn str(&mut self, s: &[u8]) -> &mut Self {
        let n = s.len().min(255);
        self.0.push(n as u8);
        self.0.extend_from_slice(&s[..n]);
        self
    }
    /// A string of at most 65535 bytes, with a two-byte length.
    pub fn long_str(&mut self, s: &[u8]) -> &mut Self {
        let n = s.len().min(u16::MAX as usize);
        self.0.extend_from_slice(&(n as u16).to_le_bytes());
        self.0.extend_from_slice(&s[..n]);
        self
    }
}

/// Reads fields back; every read is checked against the end of the bytes.
pub struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Dec<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Dec<'a> {
        Dec { buf, pos: 0 }
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    fn arr<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }
    /// One byte.
    pub fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    /// Little-endian u16.
    pub fn u16(&mut self) -> Option<u16> {
        self.arr().map(u16::from_le_bytes)
    }
    /// Little-endian u32.
    pub fn u32(&mut self) -> Option<u32> {
        self.arr().map(u32::from_le_bytes)
    }
    /// Little-endian u64.
    pub fn u64(&mut self) -> Option<u64> {
        self.arr().map(u64::from_le_bytes)
    }
    /// Little-endian i64.
    pub fn i64(&mut self) -> Option<i64> {
        self.arr().map(i64::from_le_bytes)
    }
    /// A length-prefixed string.
    pub fn str(&mut self) -> Option<Vec<u8>> {
        let n = self.u8()? as usize;
        Some(self.take(n)?.to_vec())
    }
    /// A string with a two-byte length.
    pub fn long_str(&mut self) -> Option<Vec<u8>> {
        let n = self.u16()? as usize;
        Some(self.take(n)?.to_vec())
    }
    /// Whether every byte was read.
    pub fn done(&self) -> bool {
        self.pos == self.buf.len()
    }
}

/// A row type with its encoding.
pub trait Row: Sized {
    /// The table's name (for errors).
    const TABLE: &'static str;
    /// Appends the fields.
    fn put(&self, e: &mut Enc);
    /// Reads the fields.
    fn get(d: &mut Dec<'_>) -> Option<Self>;
    /// The row's bytes.
    fn encode(&self) -> Vec<u8> {
        let mut e = Enc::default();
        self.put(&mut e);
        e.0
    }
    /// The row from its bytes; an error if they do not hold exactly one row.
    fn decode(bytes: &[u8]) -> Result<Self, TpccError> {
        let mut d = Dec::new(bytes);
        match Self::get(&mut d) {
            Some(r) if d.done() => Ok(r),
            _ => Err(TpccError::Corrupt(format!(
                "a {} row of {} bytes does not decode",
                Self::TABLE,
                bytes.len()
            ))),
        }
    }
}
