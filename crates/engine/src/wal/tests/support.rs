//! Helpers of the log's unit tests: a memory device the test keeps a handle on (to reopen,
//! corrupt or crash it after the log lets go), a device with a volatile write cache that can lose
//! unflushed writes, and record generators.

use std::sync::{Arc, Mutex};

use crate::device::{BlockDevice, DeviceError, DeviceStats, MemDevice};
use crate::wal::{Body, CheckpointData, Redo, Undo};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

/// A memory device shared between the test and the log.
#[derive(Clone)]
pub struct Held(pub Arc<Mutex<MemDevice>>);

impl Held {
    pub fn new(capacity_bytes: u64, block_bytes: u32) -> Held {
        Held(Arc::new(Mutex::new(MemDevice::new(
            capacity_bytes,
            block_bytes,
        ))))
    }
    pub fn boxed(&self) -> Box<dyn BlockDevice> {
        Box::new(self.clone())
    }
    /// Runs `f` on the raw bytes.
    pub fn with_bytes<R>(&self, f: impl FnOnce(&mut [u8]) -> R) -> R {
        f(&mut self.0.lock().unwrap().bytes_mut())
    }
}

impl BlockDevice for Held {
    fn capacity_bytes(&self) -> u64 {
        self.0.lock().unwrap().capacity_bytes()
    }
    fn block_bytes(&self) -> u32 {
        self.0.lock().unwrap().block_bytes()
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        self.0.lock().unwrap().read_at(offset, buf)
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.0.lock().unwrap().write_at(offset, data)
    }
    fn flush(&mut self) -> Result<(), DeviceError> {
        self.0.lock().unwrap().flush()
    }
    fn stats(&self) -> DeviceStats {
        self.0.lock().unwrap().stats()
    }
}

/// A device with a volatile cache: writes are visible at once but durable only after `flush`.
/// `crash` keeps the durable image plus a random subset of the unflushed block writes (in any
/// order), like a power cut. Writes can be made to fail.
#[derive(Clone)]
pub struct Volatile(pub Arc<Mutex<VolatileState>>);

pub struct VolatileState {
    pub durable: Vec<u8>,
    pub current: Vec<u8>,
    /// Unflushed writes: (offset, block bytes).
    pub pending: Vec<(u64, Vec<u8>)>,
    pub block: u32,
    pub fail_writes: bool,
    /// Some(n): after n more flushes, one flush fails without making anything durable.
    pub flushes_until_failure: Option<u32>,
    pub stats: DeviceStats,
}

impl Volatile {
    pub fn new(capacity_bytes: u64, block_bytes: u32) -> Volatile {
        Volatile(Arc::new(Mutex::new(VolatileState {
            durable: vec![0; capacity_bytes as usize],
            current: vec![0; capacity_bytes as usize],
            pending: Vec::new(),
            block: block_bytes,
            fail_writes: false,
            flushes_until_failure: None,
            stats: DeviceStats::default(),
        })))
    }
    pub fn boxed(&self) -> Box<dyn BlockDevice> {
        Box::new(self.clone())
    }
    /// Power cut: each unflushed block write survives with probability 1/2.
    pub fn crash(&self, rng: &mut Pcg64) {
        self.crash_with(|_| rng.random_bool(0.5));
    }
    /// Power cut keeping the unflushed block writes at the offsets `keep` accepts.
    pub fn crash_with(&self, mut keep: impl FnMut(u64) -> bool) {
        let mut s = self.0.lock().unwrap();
        let pending = std::mem::take(&mut s.pending);
        let mut img = s.durable.clone();
        for (off, data) in pending {
            if keep(off) {
                img[off as usize..off as usize + data.len()].copy_from_slice(&data);
            }
        }
        s.durable = img.clone();
        s.current = img;
    }
}

impl BlockDevice for Volatile {
    fn capacity_bytes(&self) -> u64 {
        self.0.lock().unwrap().current.len() as u64
    }
    fn block_bytes(&self) -> u32 {
        self.0.lock().unwrap().block
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        let s = self.0.lock().unwrap();
        crate::device::check_io(offset, buf.len() as u64, s.current.len() as u64, s.block)?;
        buf.copy_from_slice(&s.current[offset as usize..offset as usize + buf.len()]);
        Ok(())
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        let mut s = self.0.lock().unwrap();
        crate::device::check_io(offset, data.len() as u64, s.current.len() as u64, s.block)?;
        if s.fail_writes {
            return Err(DeviceError::Io("injected write error".into()));
        }
        s.current[offset as usize..offset as usize + data.len()].copy_from_slice(data);
        let b = s.block as usize;
        for (i, chunk) in data.chunks(b).enumerate() {
            s.pending.push((offset + (i * b) as u64, chunk.to_vec()));
        }
        s.stats.writes += 1;
        s.stats.write_bytes += data.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> Result<(), DeviceError> {
        let mut s = self.0.lock().unwrap();
        match s.flushes_until_failure {
            Some(0) => {
                s.flushes_until_failure = None;
                return Err(DeviceError::Io("injected flush error".into()));
            }
            Some(n) => s.flushes_until_failure = Some(n - 1),
            None => {}
        }
        s.pending.clear();
        s.durable = s.current.clone();
        s.stats.flushes += 1;
        Ok(())
    }
    fn stats(&self) -> DeviceStats {
        self.0.lock().unwrap().stats.clone()
    }
}

pub fn rng(seed: u64) -> Pcg64 {
    Pcg64::seed_from_u64(seed)
}

fn bytes(rng: &mut Pcg64, max: usize) -> Vec<u8> {
    let n = rng.random_range(0..=max);
    (0..n).map(|_| rng.random()).collect()
}

/// A random record body; sizes up to about `max_bytes`.
pub fn body(rng: &mut Pcg64, max_bytes: usize) -> Body {
    let redo = |rng: &mut Pcg64| match rng.random_range(0..3) {
        0 => Redo::LeafPut {
            pid: rng.random(),
            key: bytes(rng, 32),
            value: bytes(rng, max_bytes),
        },
        1 => Redo::LeafDel {
            pid: rng.random(),
            key: bytes(rng, 32),
        },
        _ => Redo::Images(
            (0..rng.random_range(0..3))
                .map(|_| (rng.random(), bytes(rng, max_bytes / 2)))
                .collect(),
        ),
    };
    match rng.random_range(0..7) {
        0 | 1 => Body::Update {
            redo: redo(rng),
            undo: Undo {
                tree: rng.random(),
                key: bytes(rng, 32),
                old: if rng.random() {
                    Some(bytes(rng, 64))
                } else {
                    None
                },
            },
        },
        2 => Body::Clr {
            redo: redo(rng),
            undo_next: rng.random(),
        },
        3 => Body::System { redo: redo(rng) },
        4 => Body::Commit,
        5 => Body::End,
        _ => Body::Checkpoint(CheckpointData {
            dirty_pages: (0..rng.random_range(0..5)).map(|_| rng.random()).collect(),
            active_txns: (0..rng.random_range(0..5)).map(|_| rng.random()).collect(),
            next_txn: rng.random(),
        }),
    }
}

/// A [`Held`] device whose next flush, once armed, stops until the test opens the gate: a log
/// flush in flight the test can act around.
#[derive(Clone)]
pub struct Gated {
    pub dev: Held,
    gate: Arc<(Mutex<GateState>, std::sync::Condvar)>,
    /// Every flush takes this long (like an fsync).
    pub flush_delay: std::time::Duration,
}

#[derive(Default)]
struct GateState {
    armed: bool,
    /// A flush is stopped at the gate.
    entered: bool,
    open: bool,
}

impl Gated {
    pub fn new(capacity_bytes: u64, block_bytes: u32) -> Gated {
        Gated {
            dev: Held::new(capacity_bytes, block_bytes),
            gate: Arc::default(),
            flush_delay: std::time::Duration::ZERO,
        }
    }
    pub fn boxed(&self) -> Box<dyn BlockDevice> {
        Box::new(self.clone())
    }
    /// The next flush stops at the gate.
    pub fn arm(&self) {
        let mut s = self.gate.0.lock().unwrap();
        *s = GateState {
            armed: true,
            ..GateState::default()
        };
    }
    /// Waits until a flush stopped at the gate.
    pub fn wait_entered(&self) {
        let (m, cv) = &*self.gate;
        let mut s = m.lock().unwrap();
        while !s.entered {
            s = cv.wait(s).unwrap();
        }
    }
    /// Lets the stopped flush go on.
    pub fn open(&self) {
        let (m, cv) = &*self.gate;
        m.lock().unwrap().open = true;
        cv.notify_all();
    }
}

impl BlockDevice for Gated {
    fn capacity_bytes(&self) -> u64 {
        self.dev.capacity_bytes()
    }
    fn block_bytes(&self) -> u32 {
        self.dev.block_bytes()
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        self.dev.read_at(offset, buf)
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.dev.write_at(offset, data)
    }
    fn flush(&mut self) -> Result<(), DeviceError> {
        let (m, cv) = &*self.gate;
        let mut s = m.lock().unwrap();
        if s.armed {
            s.armed = false;
            s.entered = true;
            cv.notify_all();
            while !s.open {
                s = cv.wait(s).unwrap();
            }
        }
        drop(s);
        std::thread::sleep(self.flush_delay);
        self.dev.flush()
    }
    fn stats(&self) -> DeviceStats {
        self.dev.stats()
    }
}

/// Runs `f` on another thread and returns its result, failing the test if it takes more than
/// five seconds (a test of what must not block).
pub fn within_5s<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(5))
        .expect("blocked for more than 5 s")
}
