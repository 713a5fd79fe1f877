//! Fault injection for crash tests: a [`FaultDevice`] wraps any [`BlockDevice`] and can cut
//! power at the Nth command, lose or tear writes that were not flushed, return an I/O error once,
//! and misdirect a write. Every command the trait has is forwarded and counted: reads, writes,
//! placed writes (and rewrites), flushes, trims, remap batches, copy commands, zone appends,
//! resets, finishes and zone reports.
//! Capabilities are the inner device's.
//!
//! Model: the inner device always holds the newest data (commands are applied at once). While a
//! fault that can undo changes is enabled (`lose_unflushed` or `torn_writes`), the wrapper keeps
//! an undo journal of every change since the last successful flush. [`FaultDevice::crash`]
//! decides which of them survived, puts the inner device in the state that leaves, clears the
//! journal and powers the device back on so the engine can reopen on it.
//!
//! * **Writes, trims, remaps** (conventional devices): the journal keeps the changed ranges and
//!   their previous contents, read from the inner device just before the change. At the crash it
//!   is walked from newest to oldest; each change survives or not, and the previous contents of
//!   the lost parts are written back (never over blocks a newer surviving change covers). The
//!   newest write may be torn at block granularity (a random prefix or subset of its blocks).
//! * **Remap batches are atomic per batch**: a batch is one journal entry holding the previous
//!   contents of every range it changed (each destination, and the source of a move); it
//!   survives whole or is undone whole. A batch the power cut interrupts (with `torn_writes`) is
//!   applied, fails with [`DeviceError::PowerCut`], and at the crash happened or not with equal
//!   probability.
//! * **Copy commands** are treated exactly as remap batches: one journal entry per command (the
//!   previous contents of every destination), lost or kept whole, applied then undone or not
//!   when the power cut interrupts one. Rewrites ([`BlockDevice::write_rewrite`]) are writes.
//! * **Zones** (zoned inner devices): appends, writes into a zone, resets and finishes are
//!   journaled per zone, in order, with the zone's write pointer and condition before the first
//!   of them (from a zone report) and, for a reset, the contents the zone held up to its write
//!   pointer. A zone only ever holds a prefix of its history: at the crash each zone keeps the
//!   commands up to a random point of its journal (with `lose_unflushed`; uniform over the
//!   points) and loses every later one, so data appended after a lost reset is lost too and the
//!   data that survives is contiguous from the zone's start. The newest command of all may also
//!   break off (with `torn_writes`): an append keeps a random prefix of its blocks, possibly none
//!   (an append's offset is known only once the inner device returns, so even an append the power
//!   cut interrupts is applied first, then fails with [`DeviceError::PowerCut`]); a reset or a
//!   finish is atomic: it happened or it did not, with equal probability. The zones' states
//!   together stay within the inner device's active-zone limit (a device keeps its zone
//!   resources consistent across a power loss): where independent choices would exceed it,
//!   zones keep their whole history until they fit. A zone whose surviving state differs from
//!   the inner device's is rebuilt there: reset, the surviving contents appended again,
//!   finished if it was finished, so its write pointer and condition are what survived
//!   (`CrashReport::zones_rebuilt`); a rebuild the inner device refuses is reported in
//!   `CrashReport::restore_error`. Writes to a zoned device are never misdirected.
//!
//! A power cut is armed by command number (`FaultConfig::power_cut_after`,
//! [`FaultHandle::cut_power_at`]) or at the Nth command of a kind
//! ([`FaultHandle::cut_power_at_nth`], e.g. the 3rd zone reset from now), and
//! [`FaultHandle::cut_on`] says which kind of command it fired on. Several devices (data and
//! log) can share one power domain ([`FaultDevice::in_power_domain`]): one switch, one count.
//!
//! Deterministic: the same seed and the same command sequence give the same faults.
//!
//! The journal's reads of previous contents, zone reports and the restores go to the inner
//! device directly, so the inner device's own statistics include them (and, over a simulated
//! SSD, they take virtual time); [`FaultDevice::stats`] counts only what the host asked for
//! (with `media_write_bytes` from the inner device).

mod crash;
mod zones;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use self::zones::{ZoneBefore, ZoneOp};
use super::{
    check_copy, check_io, check_remap, BlockDevice, Capabilities, CopyOp, DeviceError, DeviceStats,
    RemapMode, RemapOp, ZoneReport,
};

/// Which faults to inject. The default injects none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultConfig {
    /// Seed of every random choice (which writes are lost, how a write tears, where a write is
    /// misdirected).
    pub seed: u64,
    /// Cut power at the Nth command (1-based, counting every command: reads, writes, flushes,
    /// trims, remap batches, zone appends, resets, finishes and reports): that command and every
    /// later one fail with [`DeviceError::PowerCut`] until [`FaultDevice::crash`]. If the Nth
    /// command changes data (a write, an append, a reset, a finish, a remap batch) and
    /// `torn_writes` is set, it is applied before it fails: it is then the newest unflushed
    /// change and may tear (a write, an append) or be undone (an atomic command) at the crash.
    pub power_cut_after: Option<u64>,
    /// At a power cut the last unflushed write may be torn at block granularity: a random prefix
    /// or a random subset of its blocks is durable, the rest keeps the previous contents.
    pub torn_writes: bool,
    /// At a power cut each unflushed write (or trim, or remap batch) on a conventional device is
    /// independently lost with probability 1/2: its ranges return to the previous contents. On a
    /// zoned device each zone loses the commands after a random point of its unflushed history.
    pub lose_unflushed: bool,
    /// The Nth command (1-based) fails once with [`DeviceError::Io`] and has no effect.
    pub io_error_after: Option<u64>,
    /// The Nth write (1-based, counting write commands, zone appends included, that reach the
    /// device) lands at another block-aligned offset (or nowhere, if no other offset fits it); it
    /// reports success. Zone appends and writes to a zoned device are never misdirected.
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

/// What a crash did to the unflushed changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Whether power was off (a power cut had fired) when `crash` was called.
    pub was_powered_off: bool,
    /// Unflushed changes (writes, trims, remap batches, zone commands) in the journal at the
    /// crash.
    pub unflushed: u64,
    /// Of those, how many were lost entirely (a reset or finish that did not happen counts).
    pub lost: u64,
    /// The last unflushed write or zone append, if it was torn (for an append: a prefix).
    pub torn: Option<TornWrite>,
    /// Bytes written back into the inner device to undo lost changes (zone rebuilds included).
    pub restored_bytes: u64,
    /// Zones rebuilt (reset, surviving contents appended again) to their surviving state.
    pub zones_rebuilt: u64,
    /// The command of this device an armed power cut fired on (None: no cut fired here, e.g.
    /// it fired on another device of the power domain or power was cut from outside).
    pub cut_command: Option<CommandKind>,
    /// An error of the inner device while restoring (the crash image is then incomplete).
    pub restore_error: Option<DeviceError>,
}

const NO_CUT: u64 = u64::MAX;

/// The kinds of command a [`FaultDevice`] counts (one per [`BlockDevice`] method that reaches
/// the device; a placed write is a `Write`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CommandKind {
    Read,
    Write,
    Flush,
    Trim,
    Remap,
    ZoneAppend,
    ZoneReset,
    ZoneFinish,
    ZoneReport,
    /// An in-device copy command ([`BlockDevice::copy`]).
    Copy,
}

impl CommandKind {
    const ALL: usize = 10;

    /// Whether the command changes data (and so may be applied, then torn or undone, when the
    /// power cut interrupts it).
    fn changes_data(self) -> bool {
        matches!(
            self,
            CommandKind::Write
                | CommandKind::Remap
                | CommandKind::Copy
                | CommandKind::ZoneAppend
                | CommandKind::ZoneReset
                | CommandKind::ZoneFinish
        )
    }
}

/// State shared between a [`FaultDevice`] and its [`FaultHandle`]s (and the other devices of its
/// power domain).
#[derive(Debug)]
struct Shared {
    commands: AtomicU64,
    writes: AtomicU64,
    /// CommandKind number at which power is cut (NO_CUT: none).
    cut_at: AtomicU64,
    /// The command the last armed power cut fired on.
    cut_on: Mutex<Option<CommandKind>>,
    powered_off: AtomicBool,
    power_cuts: AtomicU64,
    io_errors: AtomicU64,
    misdirects: Mutex<Vec<Misdirect>>,
}

/// One device's own counters (the rest of its state is its power domain's).
#[derive(Debug, Default)]
struct Local {
    /// Commands so far by kind (indexed by `CommandKind as usize`).
    by_kind: [AtomicU64; CommandKind::ALL],
    /// A power cut at the nth command of a kind (counted like `by_kind`).
    cut_at_kind: Mutex<Option<(CommandKind, u64)>>,
}

/// A cloneable handle on a [`FaultDevice`]'s counters and power switch, for a test that has
/// handed the device itself to the engine. The power switch, the command count and the fault
/// counters are the power domain's; the counts by kind and cuts by kind are the device's.
#[derive(Clone, Debug)]
pub struct FaultHandle {
    shared: Arc<Shared>,
    local: Arc<Local>,
}

impl FaultHandle {
    /// Commands submitted so far (including failed ones).
    pub fn commands(&self) -> u64 {
        self.shared.commands.load(Ordering::SeqCst)
    }

    /// Commands of one kind this device received so far (including failed ones).
    pub fn commands_of(&self, kind: CommandKind) -> u64 {
        self.local.by_kind[kind as usize].load(Ordering::SeqCst)
    }

    /// Arms (or, with None, disarms) a power cut at this device's `n`th command of `kind`
    /// (1-based, counted like [`FaultHandle::commands_of`]; a number already passed cuts power at
    /// the next command of that kind). It adds to a cut armed by command number: the first to
    /// come fires, and it cuts the power of the whole domain.
    pub fn cut_power_at_nth(&self, kind: CommandKind, n: Option<u64>) {
        *lock(&self.local.cut_at_kind) = n.map(|n| (kind, n));
    }

    /// The command an armed power cut (by number or by kind) last fired on; None if none has
    /// fired or power was cut from outside.
    pub fn cut_on(&self) -> Option<CommandKind> {
        *lock(&self.shared.cut_on)
    }

    /// Write commands (zone appends included) that reached the device so far.
    pub fn writes(&self) -> u64 {
        self.shared.writes.load(Ordering::SeqCst)
    }

    /// Cuts power now: every later command fails with [`DeviceError::PowerCut`] until
    /// [`FaultDevice::crash`].
    pub fn cut_power_now(&self) {
        if !self.shared.powered_off.swap(true, Ordering::SeqCst) {
            self.shared.power_cuts.fetch_add(1, Ordering::SeqCst);
        }
        self.shared.cut_at.store(NO_CUT, Ordering::SeqCst);
        *lock(&self.local.cut_at_kind) = None;
    }

    /// Arms (or, with None, disarms) a power cut at absolute command number `n` (1-based; a
    /// number already passed cuts power at the next command).
    pub fn cut_power_at(&self, n: Option<u64>) {
        self.shared
            .cut_at
            .store(n.unwrap_or(NO_CUT), Ordering::SeqCst);
    }

    /// Whether power is off.
    pub fn is_powered_off(&self) -> bool {
        self.shared.powered_off.load(Ordering::SeqCst)
    }

    /// Power cuts so far.
    pub fn power_cuts(&self) -> u64 {
        self.shared.power_cuts.load(Ordering::SeqCst)
    }

    /// Injected I/O errors so far.
    pub fn io_errors(&self) -> u64 {
        self.shared.io_errors.load(Ordering::SeqCst)
    }

    /// Misdirected writes so far.
    pub fn misdirects(&self) -> Vec<Misdirect> {
        lock(&self.shared.misdirects).clone()
    }
}

/// A mutex's contents, even if a thread panicked holding it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Write,
    Trim,
    Remap,
    Copy,
}

/// How a write reaches the inner device.
#[derive(Clone, Copy)]
enum WriteHow {
    Plain,
    Placed(u16),
    Rewrite,
}

/// One undoable change since the last flush.
enum Change {
    /// A write, trim or remap batch: each range it changed (offset, contents before the change).
    Ranges {
        kind: Kind,
        ranges: Vec<(u64, Vec<u8>)>,
    },
    /// A command on one zone of a zoned device.
    Zone { zone: u32, op: ZoneOp },
}

/// What the command gate decided.
enum Gate {
    Proceed,
    /// Power is cut by this command, which changes data: apply it (to be torn or undone at the
    /// crash), then fail.
    Interrupted,
}

/// The outcome of a data-changing command the gate let through: a command the power cut
/// interrupts fails with [`DeviceError::PowerCut`] whether it was applied or not.
fn interrupted<T>(gate: Gate, r: Result<T, DeviceError>) -> Result<T, DeviceError> {
    match gate {
        Gate::Proceed => r,
        Gate::Interrupted => Err(DeviceError::PowerCut),
    }
}

/// A block device with injected faults. See the module documentation for the model.
pub struct FaultDevice<D: BlockDevice> {
    inner: D,
    cfg: FaultConfig,
    rng: Pcg64Mcg,
    shared: Arc<Shared>,
    local: Arc<Local>,
    journal: Vec<Change>,
    /// Zones with journaled commands: their state before the first.
    zones_before: BTreeMap<u32, ZoneBefore>,
    /// The inner device's zone size (None: conventional).
    zone_bytes: Option<u64>,
    /// The command of this device an armed power cut fired on.
    cut_here: Option<CommandKind>,
    stats: DeviceStats,
}

impl<D: BlockDevice> FaultDevice<D> {
    /// Wraps `inner` with the faults of `cfg`.
    pub fn new(inner: D, cfg: FaultConfig) -> FaultDevice<D> {
        let shared = Arc::new(Shared {
            commands: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            cut_at: AtomicU64::new(cfg.power_cut_after.unwrap_or(NO_CUT)),
            cut_on: Mutex::new(None),
            powered_off: AtomicBool::new(false),
            power_cuts: AtomicU64::new(0),
            io_errors: AtomicU64::new(0),
            misdirects: Mutex::new(Vec::new()),
        });
        FaultDevice::with_shared(inner, cfg, shared)
    }

    /// Wraps `inner` in the power domain of `power` (e.g. a log device next to a data device):
    /// the devices share one power switch and one command count (so a cut at the Nth command
    /// counts the commands of both and stops both), one I/O error and misdirect numbering, and
    /// the counters a [`FaultHandle`] reads. `cfg.power_cut_after` is ignored (arm the cut on
    /// the handle); the other faults of `cfg` apply to this device, with its own seed. Each
    /// device keeps its own journal and its own counts by kind: call [`FaultDevice::crash`] on
    /// every device of the domain (the first powers the domain back on).
    pub fn in_power_domain(inner: D, cfg: FaultConfig, power: &FaultHandle) -> FaultDevice<D> {
        FaultDevice::with_shared(inner, cfg, power.shared.clone())
    }

    fn with_shared(inner: D, cfg: FaultConfig, shared: Arc<Shared>) -> FaultDevice<D> {
        FaultDevice {
            rng: Pcg64Mcg::seed_from_u64(cfg.seed),
            zone_bytes: inner.capabilities().zone_bytes,
            inner,
            cfg,
            shared,
            local: Arc::default(),
            journal: Vec::new(),
            zones_before: BTreeMap::new(),
            cut_here: None,
            stats: DeviceStats::default(),
        }
    }

    /// A handle for reading the command count and cutting power from outside.
    pub fn handle(&self) -> FaultHandle {
        FaultHandle {
            shared: self.shared.clone(),
            local: self.local.clone(),
        }
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

    /// Unflushed changes (writes, trims, remap batches, zone commands) in the undo journal.
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
    fn gate(&mut self, cmd: CommandKind) -> Result<Gate, DeviceError> {
        let s = &self.shared;
        let n = s.commands.fetch_add(1, Ordering::SeqCst) + 1;
        let nk = self.local.by_kind[cmd as usize].fetch_add(1, Ordering::SeqCst) + 1;
        if s.powered_off.load(Ordering::SeqCst) {
            return Err(DeviceError::PowerCut);
        }
        let by_kind = lock(&self.local.cut_at_kind).is_some_and(|(k, at)| k == cmd && nk >= at);
        if n >= s.cut_at.load(Ordering::SeqCst) || by_kind {
            self.handle().cut_power_now();
            *lock(&self.shared.cut_on) = Some(cmd);
            self.cut_here = Some(cmd);
            return if cmd.changes_data() && self.cfg.torn_writes {
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

    /// Records the previous contents of ranges about to change (one journal entry).
    fn journal(&mut self, kind: Kind, ranges: &[(u64, u64)]) -> Result<(), DeviceError> {
        if self.journaling() {
            let mut saved = Vec::with_capacity(ranges.len());
            for &(offset, len) in ranges {
                let mut prev = vec![0u8; len as usize];
                self.inner.read_at(offset, &mut prev)?;
                saved.push((offset, prev));
            }
            self.journal.push(Change::Ranges {
                kind,
                ranges: saved,
            });
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
        if self.cfg.misdirect_after != Some(w) || self.zone_bytes.is_some() {
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
        lock(&self.shared.misdirects).push(Misdirect {
            intended: offset,
            actual,
            len,
        });
        actual
    }

    fn write_cmd(&mut self, offset: u64, data: &[u8], how: WriteHow) -> Result<(), DeviceError> {
        let gate = self.gate(CommandKind::Write)?;
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
            match self.zone_bytes {
                // A write into a zone: journaled like an append at its offset.
                Some(zb) if zb > 0 => {
                    self.journal_zone((at / zb) as u32, ZoneOp::Append { offset: at, len })?
                }
                _ => self.journal(Kind::Write, &[(at, len)])?,
            }
            let r = match how {
                WriteHow::Placed(pid) => self.inner.write_placed(at, data, pid),
                WriteHow::Plain => self.inner.write_at(at, data),
                WriteHow::Rewrite => self.inner.write_rewrite(at, data),
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

    /// A remap batch past the gate: checked whole, journaled as one entry (the previous contents
    /// of every destination and of every moved source), sent.
    fn remap_cmd(&mut self, ops: &[RemapOp]) -> Result<(), DeviceError> {
        check_remap(ops, self.inner.capacity_bytes(), self.inner.block_bytes())?;
        let mut ranges = Vec::new();
        for op in ops.iter().filter(|op| op.len > 0) {
            ranges.push((op.dst, op.len));
            if op.mode == RemapMode::Move {
                ranges.push((op.src, op.len));
            }
        }
        self.journal(Kind::Remap, &ranges)?;
        self.inner.remap(ops).inspect_err(|_| self.unjournal())
    }

    /// A copy command past the gate: checked whole, journaled as one entry (the previous
    /// contents of every destination), sent.
    fn copy_cmd(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        check_copy(ops, self.inner.capacity_bytes(), self.inner.block_bytes())?;
        let ranges: Vec<(u64, u64)> = ops
            .iter()
            .filter(|op| op.len > 0)
            .map(|op| (op.dst, op.len))
            .collect();
        self.journal(Kind::Copy, &ranges)?;
        self.inner.copy(ops).inspect_err(|_| self.unjournal())
    }

    /// A zone append past the gate: the zone's state is noted, the append sent and journaled
    /// where it landed.
    fn append_cmd(&mut self, zone: u32, data: &[u8]) -> Result<u64, DeviceError> {
        self.note_zone(zone)?;
        let at = self.inner.zone_append(zone, data)?;
        self.journal_zone(
            zone,
            ZoneOp::Append {
                offset: at,
                len: data.len() as u64,
            },
        )?;
        Ok(at)
    }

    /// A zone reset or finish past the gate: journaled, sent.
    fn zone_mgmt_cmd(&mut self, zone: u32, op: ZoneOp) -> Result<(), DeviceError> {
        let reset = matches!(op, ZoneOp::Reset { .. });
        self.journal_zone(zone, op)?;
        let r = if reset {
            self.inner.zone_reset(zone)
        } else {
            self.inner.zone_finish(zone)
        };
        r.inspect_err(|_| self.unjournal())
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
        self.gate(CommandKind::Read)?;
        self.inner.read_at(offset, buf)?;
        self.stats.reads += 1;
        self.stats.read_bytes += buf.len() as u64;
        Ok(())
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.write_cmd(offset, data, WriteHow::Plain)
    }

    fn write_placed(&mut self, offset: u64, data: &[u8], pid: u16) -> Result<(), DeviceError> {
        self.write_cmd(offset, data, WriteHow::Placed(pid))
    }

    fn write_rewrite(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.write_cmd(offset, data, WriteHow::Rewrite)
    }

    fn flush(&mut self) -> Result<(), DeviceError> {
        self.gate(CommandKind::Flush)?;
        self.inner.flush()?;
        self.journal.clear();
        self.zones_before.clear();
        self.stats.flushes += 1;
        Ok(())
    }

    fn trim(&mut self, offset: u64, len: u64) -> Result<(), DeviceError> {
        self.gate(CommandKind::Trim)?;
        check_io(
            offset,
            len,
            self.inner.capacity_bytes(),
            self.inner.block_bytes(),
        )?;
        self.journal(Kind::Trim, &[(offset, len)])?;
        self.inner
            .trim(offset, len)
            .inspect_err(|_| self.unjournal())
    }

    /// Atomic per batch (see the module documentation).
    fn remap(&mut self, ops: &[RemapOp]) -> Result<(), DeviceError> {
        let gate = self.gate(CommandKind::Remap)?;
        let r = self.remap_cmd(ops);
        interrupted(gate, r)
    }

    /// Atomic per command, like a remap batch (see the module documentation).
    fn copy(&mut self, ops: &[CopyOp]) -> Result<(), DeviceError> {
        let gate = self.gate(CommandKind::Copy)?;
        let r = self.copy_cmd(ops);
        interrupted(gate, r)
    }

    fn zone_append(&mut self, zone: u32, data: &[u8]) -> Result<u64, DeviceError> {
        let gate = self.gate(CommandKind::ZoneAppend)?;
        self.shared.writes.fetch_add(1, Ordering::SeqCst);
        let r = self.append_cmd(zone, data);
        let at = interrupted(gate, r)?;
        self.stats.writes += 1;
        self.stats.write_bytes += data.len() as u64;
        Ok(at)
    }

    /// Atomic (see the module documentation).
    fn zone_reset(&mut self, zone: u32) -> Result<(), DeviceError> {
        let gate = self.gate(CommandKind::ZoneReset)?;
        let r = self.zone_mgmt_cmd(zone, ZoneOp::Reset { prev: Vec::new() });
        interrupted(gate, r)
    }

    /// Atomic (see the module documentation).
    fn zone_finish(&mut self, zone: u32) -> Result<(), DeviceError> {
        let gate = self.gate(CommandKind::ZoneFinish)?;
        let r = self.zone_mgmt_cmd(zone, ZoneOp::Finish);
        interrupted(gate, r)
    }

    fn zone_report(&mut self, zone: u32) -> Result<ZoneReport, DeviceError> {
        self.gate(CommandKind::ZoneReport)?;
        self.inner.zone_report(zone)
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
mod tests;
