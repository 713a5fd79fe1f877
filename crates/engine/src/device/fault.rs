//! Fault injection for crash tests: a [`FaultDevice`] wraps any [`BlockDevice`] and can cut
//! power at the Nth command, lose or tear writes that were not flushed, return an I/O error once,
//! and misdirect a write.
//!
//! Model: the inner device always holds the newest data (writes are applied at once). While a
//! fault that can undo writes is enabled (`lose_unflushed` or `torn_writes`), the wrapper keeps an
//! undo journal of every write, trim and remap since the last successful flush: the range and its
//! previous contents, read from the inner device just before it is overwritten. [`FaultDevice::crash`]
//! walks the journal from newest to oldest, decides per entry whether it survived, restores the
//! previous contents of the lost parts (never over blocks a newer surviving write covers), clears
//! the journal and powers the device back on so the engine can reopen on it.
//!
//! Deterministic: the same seed and the same command sequence give the same faults.
//!
//! The journal's reads of previous contents and the restores go to the inner device directly, so
//! the inner device's own statistics include them (and, over a [`super::SimDevice`], they take
//! virtual time); [`FaultDevice::stats`] counts only what the host asked for (with
//! `media_write_bytes` from the inner device).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use super::{check_io, BlockDevice, Capabilities, DeviceError, DeviceStats};

/// Which faults to inject. The default injects none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultConfig {
    /// Seed of every random choice (which writes are lost, how a write tears, where a write is
    /// misdirected).
    pub seed: u64,
    /// Cut power at the Nth command (1-based, counting reads, writes, flushes, trims and remaps):
    /// that command and every later one fail with [`DeviceError::PowerCut`] until
    /// [`FaultDevice::crash`]. If the Nth command is a write and `torn_writes` is set, the
    /// interrupted write is partly applied (it is then the last unflushed write, and may tear).
    pub power_cut_after: Option<u64>,
    /// At a power cut the last unflushed write may be torn at block granularity: a random prefix
    /// or a random subset of its blocks is durable, the rest keeps the previous contents.
    pub torn_writes: bool,
    /// At a power cut each unflushed write (or trim, or remap) is independently lost with
    /// probability 1/2: its range returns to the previous contents.
    pub lose_unflushed: bool,
    /// The Nth command (1-based) fails once with [`DeviceError::Io`] and has no effect.
    pub io_error_after: Option<u64>,
    /// The Nth write (1-based, counting write commands that reach the device) lands at another
    /// block-aligned offset (or nowhere, if no other offset fits it); it reports success.
    pub misdirect_after: Option<u64>,
}

/// A write that landed somewhere else than asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Misdirect {
    /// The offset the host asked for.
    pub intended: u64,
    /// Where the data went (None: it was dropped, no other offset could hold it).
    pub actual: Option<u64>,
    /// Length of the write in bytes.
    pub len: u64,
}

/// How the last unflushed write was torn at a crash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornWrite {
    /// Offset of the write.
    pub offset: u64,
    /// Length of the write in bytes.
    pub len: u64,
    /// Per block of the write: whether the new contents are durable.
    pub durable_blocks: Vec<bool>,
}

/// What a crash did to the unflushed writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Whether power was off (a power cut had fired) when `crash` was called.
    pub was_powered_off: bool,
    /// Unflushed writes, trims and remaps in the journal at the crash.
    pub unflushed: u64,
    /// Of those, how many were lost entirely.
    pub lost: u64,
    /// The last unflushed write, if it was torn.
    pub torn: Option<TornWrite>,
    /// Bytes written back into the inner device to undo lost writes.
    pub restored_bytes: u64,
    /// An error of the inner device while restoring (the crash image is then incomplete).
    pub restore_error: Option<DeviceError>,
}

const NO_CUT: u64 = u64::MAX;

/// State shared between a [`FaultDevice`] and its [`FaultHandle`]s.
#[derive(Debug)]
struct Shared {
    commands: AtomicU64,
    writes: AtomicU64,
    /// Command number at which power is cut (NO_CUT: none).
    cut_at: AtomicU64,
    powered_off: AtomicBool,
    power_cuts: AtomicU64,
    io_errors: AtomicU64,
    misdirects: Mutex<Vec<Misdirect>>,
}

/// A cloneable handle on a [`FaultDevice`]'s counters and power switch, for a test that has
/// handed the device itself to the engine.
#[derive(Clone, Debug)]
pub struct FaultHandle(Arc<Shared>);

impl FaultHandle {
    /// Commands submitted so far (including failed ones).
    pub fn commands(&self) -> u64 {
        self.0.commands.load(Ordering::SeqCst)
    }

    /// Write commands that reached the device so far.
    pub fn writes(&self) -> u64 {
        self.0.writes.load(Ordering::SeqCst)
    }

    /// Cuts power now: every later command fails with [`DeviceError::PowerCut`] until
    /// [`FaultDevice::crash`].
    pub fn cut_power_now(&self) {
        if !self.0.powered_off.swap(true, Ordering::SeqCst) {
            self.0.power_cuts.fetch_add(1, Ordering::SeqCst);
        }
        self.0.cut_at.store(NO_CUT, Ordering::SeqCst);
    }

    /// Arms (or, with None, disarms) a power cut at absolute command number `n` (1-based; a
    /// number already passed cuts power at the next command).
    pub fn cut_power_at(&self, n: Option<u64>) {
        self.0.cut_at.store(n.unwrap_or(NO_CUT), Ordering::SeqCst);
    }

    /// Whether power is off.
    pub fn is_powered_off(&self) -> bool {
        self.0.powered_off.load(Ordering::SeqCst)
    }

    /// Power cuts so far.
    pub fn power_cuts(&self) -> u64 {
        self.0.power_cuts.load(Ordering::SeqCst)
    }

    /// Injected I/O errors so far.
    pub fn io_errors(&self) -> u64 {
        self.0.io_errors.load(Ordering::SeqCst)
    }

    /// Misdirected writes so far.
    pub fn misdirects(&self) -> Vec<Misdirect> {
        self.0
            .misdirects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Write,
    Trim,
    Remap,
}

/// One undoable change since the last flush.
struct JournalEntry {
    kind: Kind,
    offset: u64,
    /// Contents of `[offset, offset + prev.len())` before the change.
    prev: Vec<u8>,
}

/// What the command gate decided.
enum Gate {
    Proceed,
    /// Power is cut by this write command: apply it (to be torn at the crash), then fail.
    Interrupted,
}

/// A block device with injected faults. See the module documentation for the model.
pub struct FaultDevice<D: BlockDevice> {
    inner: D,
    cfg: FaultConfig,
    rng: Pcg64Mcg,
    shared: Arc<Shared>,
    journal: Vec<JournalEntry>,
    stats: DeviceStats,
}

impl<D: BlockDevice> FaultDevice<D> {
    /// Wraps `inner` with the faults of `cfg`.
    pub fn new(inner: D, cfg: FaultConfig) -> FaultDevice<D> {
        let shared = Arc::new(Shared {
            commands: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            cut_at: AtomicU64::new(cfg.power_cut_after.unwrap_or(NO_CUT)),
            powered_off: AtomicBool::new(false),
            power_cuts: AtomicU64::new(0),
            io_errors: AtomicU64::new(0),
            misdirects: Mutex::new(Vec::new()),
        });
        FaultDevice {
            inner,
            rng: Pcg64Mcg::seed_from_u64(cfg.seed),
            cfg,
            shared,
            journal: Vec::new(),
            stats: DeviceStats::default(),
        }
    }

    /// A handle for reading the command count and cutting power from outside.
    pub fn handle(&self) -> FaultHandle {
        FaultHandle(self.shared.clone())
    }

    /// The configuration.
    pub fn config(&self) -> &FaultConfig {
        &self.cfg
    }

    /// The wrapped device.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// The wrapped device, mutably (I/O through it bypasses fault injection and the journal).
    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }

    /// Unwraps the device (unflushed writes stay as they are: nothing is lost).
    pub fn into_inner(self) -> D {
        self.inner
    }

    /// Commands submitted so far.
    pub fn commands(&self) -> u64 {
        self.shared.commands.load(Ordering::SeqCst)
    }

    /// Whether power is off.
    pub fn is_powered_off(&self) -> bool {
        self.shared.powered_off.load(Ordering::SeqCst)
    }

    /// Unflushed writes, trims and remaps in the undo journal.
    pub fn unflushed(&self) -> usize {
        self.journal.len()
    }

    /// Cuts power now (same as [`FaultHandle::cut_power_now`]).
    pub fn cut_power_now(&self) {
        self.handle().cut_power_now();
    }

    fn journaling(&self) -> bool {
        self.cfg.lose_unflushed || self.cfg.torn_writes
    }

    /// Counts a command and decides whether it runs.
    fn gate(&mut self, is_write: bool) -> Result<Gate, DeviceError> {
        let s = &self.shared;
        let n = s.commands.fetch_add(1, Ordering::SeqCst) + 1;
        if s.powered_off.load(Ordering::SeqCst) {
            return Err(DeviceError::PowerCut);
        }
        if n >= s.cut_at.load(Ordering::SeqCst) {
            self.handle().cut_power_now();
            return if is_write && self.cfg.torn_writes {
                Ok(Gate::Interrupted)
            } else {
                Err(DeviceError::PowerCut)
            };
        }
        if self.cfg.io_error_after == Some(n) {
            s.io_errors.fetch_add(1, Ordering::SeqCst);
            return Err(DeviceError::Io(format!(
                "injected I/O error at command {n}"
            )));
        }
        Ok(Gate::Proceed)
    }

    /// Records the previous contents of a range about to change.
    fn journal(&mut self, kind: Kind, offset: u64, len: u64) -> Result<(), DeviceError> {
        if self.journaling() {
            let mut prev = vec![0u8; len as usize];
            self.inner.read_at(offset, &mut prev)?;
            self.journal.push(JournalEntry { kind, offset, prev });
        }
        Ok(())
    }

    /// Drops the newest journal entry after the change it records failed.
    fn unjournal(&mut self) {
        if self.journaling() {
            self.journal.pop();
        }
    }

    /// Where the current write lands: its own offset, or another one if it is misdirected.
    fn target(&mut self, offset: u64, len: u64) -> Option<u64> {
        let w = self.shared.writes.fetch_add(1, Ordering::SeqCst) + 1;
        if self.cfg.misdirect_after != Some(w) {
            return Some(offset);
        }
        let block = self.inner.block_bytes() as u64;
        let positions = (self.inner.capacity_bytes() - len) / block + 1;
        let actual = if positions > 1 {
            let intended = offset / block;
            let mut p = self.rng.random_range(0..positions - 1);
            if p >= intended {
                p += 1;
            }
            Some(p * block)
        } else {
            None
        };
        self.shared
            .misdirects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Misdirect {
                intended: offset,
                actual,
                len,
            });
        actual
    }

    fn write_cmd(&mut self, offset: u64, data: &[u8], pid: Option<u16>) -> Result<(), DeviceError> {
        let gate = self.gate(true)?;
        let len = data.len() as u64;
        let valid = check_io(
            offset,
            len,
            self.inner.capacity_bytes(),
            self.inner.block_bytes(),
        );
        if let Err(e) = valid {
            // A write the power cut interrupted fails with PowerCut whatever else is wrong.
            return Err(match gate {
                Gate::Proceed => e,
                Gate::Interrupted => DeviceError::PowerCut,
            });
        }
        let target = match gate {
            Gate::Proceed => self.target(offset, len),
            Gate::Interrupted => Some(offset),
        };
        if let Some(at) = target {
            self.journal(Kind::Write, at, len)?;
            let r = match pid {
                Some(pid) => self.inner.write_placed(at, data, pid),
                None => self.inner.write_at(at, data),
            };
            if let Err(e) = r {
                self.unjournal();
                return Err(e);
            }
        }
        if let Gate::Interrupted = gate {
            return Err(DeviceError::PowerCut);
        }
        self.stats.writes += 1;
        self.stats.write_bytes += len;
        Ok(())
    }

    /// Simulates the crash after a power cut (or anytime): decides which unflushed changes
    /// survive, restores the previous contents of the rest in the inner device, flushes it,
    /// clears the journal, and powers the device back on with no power cut armed.
    pub fn crash(&mut self) -> CrashReport {
        let block = self.inner.block_bytes() as u64;
        let mut report = CrashReport {
            was_powered_off: self.is_powered_off(),
            unflushed: self.journal.len() as u64,
            ..CrashReport::default()
        };
        // Blocks whose contents come from a newer surviving change.
        let mut settled: HashSet<u64> = HashSet::new();
        let journal = std::mem::take(&mut self.journal);
        for (i, e) in journal.iter().rev().enumerate() {
            let blocks = e.prev.len() as u64 / block;
            let lost = self.cfg.lose_unflushed && self.rng.random_bool(0.5);
            let durable: Vec<bool> = if lost {
                report.lost += 1;
                vec![false; blocks as usize]
            } else if i == 0 && self.cfg.torn_writes && e.kind == Kind::Write && blocks > 0 {
                let mask = self.tear(blocks as usize);
                report.torn = Some(TornWrite {
                    offset: e.offset,
                    len: e.prev.len() as u64,
                    durable_blocks: mask.clone(),
                });
                mask
            } else {
                vec![true; blocks as usize]
            };
            let first = e.offset / block;
            let mut j = 0u64;
            while j < blocks {
                if durable[j as usize] {
                    settled.insert(first + j);
                    j += 1;
                    continue;
                }
                if settled.contains(&(first + j)) {
                    j += 1;
                    continue;
                }
                // A run of blocks to restore.
                let start = j;
                while j < blocks && !durable[j as usize] && !settled.contains(&(first + j)) {
                    j += 1;
                }
                let bytes = &e.prev[(start * block) as usize..(j * block) as usize];
                match self.inner.write_at(e.offset + start * block, bytes) {
                    Ok(()) => report.restored_bytes += bytes.len() as u64,
                    Err(err) => {
                        report.restore_error.get_or_insert(err);
                    }
                }
            }
        }
        if report.restored_bytes > 0 {
            if let Err(err) = self.inner.flush() {
                report.restore_error.get_or_insert(err);
            }
        }
        self.shared.cut_at.store(NO_CUT, Ordering::SeqCst);
        self.shared.powered_off.store(false, Ordering::SeqCst);
        report
    }

    /// Which blocks of a torn write of `blocks` blocks are durable: a random prefix or a random
    /// subset, with equal probability.
    fn tear(&mut self, blocks: usize) -> Vec<bool> {
        if self.rng.random_bool(0.5) {
            let cut = self.rng.random_range(0..=blocks);
            (0..blocks).map(|b| b < cut).collect()
        } else {
            (0..blocks).map(|_| self.rng.random_bool(0.5)).collect()
        }
    }
}

impl<D: BlockDevice> BlockDevice for FaultDevice<D> {
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }

    fn block_bytes(&self) -> u32 {
        self.inner.block_bytes()
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        self.gate(false)?;
        self.inner.read_at(offset, buf)?;
        self.stats.reads += 1;
        self.stats.read_bytes += buf.len() as u64;
        Ok(())
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.write_cmd(offset, data, None)
    }

    fn write_placed(&mut self, offset: u64, data: &[u8], pid: u16) -> Result<(), DeviceError> {
        self.write_cmd(offset, data, Some(pid))
    }

    fn flush(&mut self) -> Result<(), DeviceError> {
        self.gate(false)?;
        self.inner.flush()?;
        self.journal.clear();
        self.stats.flushes += 1;
        Ok(())
    }

    fn trim(&mut self, offset: u64, len: u64) -> Result<(), DeviceError> {
        self.gate(false)?;
        check_io(
            offset,
            len,
            self.inner.capacity_bytes(),
            self.inner.block_bytes(),
        )?;
        self.journal(Kind::Trim, offset, len)?;
        self.inner
            .trim(offset, len)
            .inspect_err(|_| self.unjournal())
    }

    fn remap(&mut self, src: u64, dst: u64, len: u64) -> Result<(), DeviceError> {
        self.gate(false)?;
        let (cap, block) = (self.inner.capacity_bytes(), self.inner.block_bytes());
        check_io(src, len, cap, block)?;
        check_io(dst, len, cap, block)?;
        self.journal(Kind::Remap, dst, len)?;
        self.inner
            .remap(src, dst, len)
            .inspect_err(|_| self.unjournal())
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn stats(&self) -> DeviceStats {
        DeviceStats {
            media_write_bytes: self.inner.stats().media_write_bytes,
            ..self.stats.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::MemDevice;

    const B: usize = 512;

    fn dev(cfg: FaultConfig) -> FaultDevice<MemDevice> {
        FaultDevice::new(MemDevice::new(64 * B as u64, B as u32), cfg)
    }

    fn read(d: &mut FaultDevice<MemDevice>, block: usize) -> Vec<u8> {
        d.inner().bytes()[block * B..(block + 1) * B].to_vec()
    }

    #[test]
    fn power_cut_fails_later_commands_until_crash() {
        let mut d = dev(FaultConfig {
            power_cut_after: Some(3),
            ..FaultConfig::default()
        });
        let h = d.handle();
        d.write_at(0, &[1; B]).unwrap();
        d.flush().unwrap();
        assert_eq!(d.write_at(0, &[2; B]), Err(DeviceError::PowerCut));
        assert_eq!(read(&mut d, 0), vec![1; B], "the cut write is not applied");
        assert_eq!(d.read_at(0, &mut [0; B]), Err(DeviceError::PowerCut));
        assert_eq!(d.flush(), Err(DeviceError::PowerCut));
        assert!(h.is_powered_off());
        assert_eq!(h.commands(), 5);
        let r = d.crash();
        assert!(r.was_powered_off);
        assert!(!h.is_powered_off());
        // Re-armed: no further cut.
        for _ in 0..10 {
            d.write_at(0, &[3; B]).unwrap();
        }
        d.flush().unwrap();
        assert_eq!(h.power_cuts(), 1);
        // Cut from outside.
        h.cut_power_now();
        assert_eq!(d.flush(), Err(DeviceError::PowerCut));
        d.crash();
        h.cut_power_at(Some(h.commands() + 2));
        d.flush().unwrap();
        assert_eq!(d.flush(), Err(DeviceError::PowerCut));
    }

    #[test]
    fn io_error_returned_once() {
        let mut d = dev(FaultConfig {
            io_error_after: Some(2),
            ..FaultConfig::default()
        });
        d.write_at(0, &[1; B]).unwrap();
        assert!(matches!(d.write_at(0, &[2; B]), Err(DeviceError::Io(_))));
        assert_eq!(read(&mut d, 0), vec![1; B]);
        d.write_at(0, &[3; B]).unwrap();
        assert_eq!(read(&mut d, 0), vec![3; B]);
        assert_eq!(d.handle().io_errors(), 1);
        assert_eq!(d.stats().writes, 2);
    }

    #[test]
    fn misdirected_write_lands_elsewhere() {
        let mut d = dev(FaultConfig {
            seed: 9,
            misdirect_after: Some(2),
            ..FaultConfig::default()
        });
        d.write_at(4 * B as u64, &[1; B]).unwrap();
        d.write_at(8 * B as u64, &[2; 2 * B]).unwrap();
        assert_eq!(read(&mut d, 8), vec![0; B]);
        let m = d.handle().misdirects();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].intended, 8 * B as u64);
        let at = m[0].actual.unwrap();
        assert_ne!(at, 8 * B as u64);
        assert_eq!(at % B as u64, 0);
        assert_eq!(
            &d.inner().bytes()[at as usize..at as usize + 2 * B],
            &[2; 2 * B]
        );
        // Only once.
        d.write_at(8 * B as u64, &[3; B]).unwrap();
        assert_eq!(read(&mut d, 8), vec![3; B]);
    }

    #[test]
    fn without_loss_faults_crash_keeps_everything() {
        let mut d = dev(FaultConfig::default());
        d.write_at(0, &[1; B]).unwrap();
        d.cut_power_now();
        let r = d.crash();
        assert_eq!(r.unflushed, 0);
        assert_eq!(read(&mut d, 0), vec![1; B]);
    }

    #[test]
    fn torn_only_tears_the_last_write() {
        let mut torn = 0;
        for seed in 0..64 {
            let mut d = dev(FaultConfig {
                seed,
                torn_writes: true,
                ..FaultConfig::default()
            });
            d.write_at(0, &[1; 8 * B]).unwrap();
            d.flush().unwrap();
            d.write_at(0, &[2; 4 * B]).unwrap();
            d.write_at(0, &[3; 8 * B]).unwrap();
            d.cut_power_now();
            let r = d.crash();
            let t = r.torn.unwrap();
            assert_eq!((t.offset, t.len), (0, 8 * B as u64));
            for (b, &durable) in t.durable_blocks.iter().enumerate() {
                let want = if durable {
                    3
                } else if b < 4 {
                    2
                } else {
                    1
                };
                assert_eq!(read(&mut d, b), vec![want; B], "seed {seed} block {b}");
            }
            if t.durable_blocks.iter().any(|&x| !x) {
                torn += 1;
            }
        }
        assert!(torn > 10);
    }

    #[test]
    fn interrupted_write_can_tear() {
        let mut partial = 0;
        for seed in 0..32 {
            let mut d = dev(FaultConfig {
                seed,
                power_cut_after: Some(2),
                torn_writes: true,
                ..FaultConfig::default()
            });
            d.write_at(0, &[1; 4 * B]).unwrap();
            assert_eq!(d.write_at(0, &[2; 4 * B]), Err(DeviceError::PowerCut));
            let r = d.crash();
            let t = r.torn.unwrap();
            for (b, &durable) in t.durable_blocks.iter().enumerate() {
                assert_eq!(read(&mut d, b), vec![if durable { 2 } else { 1 }; B]);
            }
            if t.durable_blocks.iter().any(|&x| x) {
                partial += 1;
            }
        }
        assert!(partial > 0);
    }

    #[test]
    fn deterministic_given_seed() {
        let run = |seed| {
            let mut d = dev(FaultConfig {
                seed,
                torn_writes: true,
                lose_unflushed: true,
                ..FaultConfig::default()
            });
            for i in 0..20u8 {
                d.write_at((i as u64 % 8) * B as u64, &[i; 2 * B]).unwrap();
            }
            let r = d.crash();
            (r, d.into_inner().bytes().to_vec())
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5).1, run(6).1);
    }

    #[test]
    fn trim_is_journaled() {
        let mut d = dev(FaultConfig {
            seed: 1,
            lose_unflushed: true,
            ..FaultConfig::default()
        });
        d.write_at(0, &[7; B]).unwrap();
        d.flush().unwrap();
        d.trim(0, B as u64).unwrap();
        assert_eq!(d.unflushed(), 1);
        assert!(d.remap(0, B as u64, B as u64).is_err());
        assert_eq!(d.unflushed(), 1, "a failed remap leaves no journal entry");
        let r = d.crash();
        // The trim either survived (MemDevice reads trimmed blocks as zeros) or was undone.
        let got = read(&mut d, 0);
        if r.lost == 1 {
            assert_eq!(got, vec![7; B]);
        } else {
            assert_eq!(got, vec![0; B]);
        }
    }
}
