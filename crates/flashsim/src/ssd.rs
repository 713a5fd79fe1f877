//! The simulated SSD: page-level FTL, write frontiers, garbage collection, trim, remap, FDP
//! placement, the write cache and the timing model. Zone commands live in `zns.rs`.
//!
//! Addressing: the host speaks bytes; inside, a logical unit (`lu`) is one mapping unit of the
//! logical space and a physical unit (`pu`) is one mapping-unit slot of flash,
//! `pu = eu * eu_units + offset`. `map[lu]` is the physical unit holding a logical unit, `rev[pu]`
//! the (primary) logical unit stored in a physical unit, `valid` a bitmap over physical units.
//! Remapped (shared) physical units keep their extra owners in `shared`.

use crate::cache::{CachedUnit, WriteCache};
use crate::config::{Capacity, Mode, SsdConfig};
use crate::divide::Divisor;
use crate::error::SimError;
use crate::stats::{Counters, HandleStats};
use crate::store::Store;
use crate::timing::{LatencyHistogram, Timing};
use crate::victim::Victims;
use crate::zns::Zones;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use std::collections::{HashMap, VecDeque};

pub(crate) const NIL: u32 = u32::MAX;

/// Bytes of one logical-to-physical mapping entry, as the mapping-memory figures assume them
/// (a 32-bit physical unit number, the usual page-level FTL entry).
pub const MAP_ENTRY_BYTES: u64 = 4;

/// Distance (in units) at which mapping-table entries are prefetched in bulk loops.
pub(crate) const PREFETCH_AHEAD: usize = 32;

/// Invalidations left pending (see [`Ssd::unref`]): two halves of `PENDING_BATCH`; a power of
/// two.
pub(crate) const PENDING_UNREFS: usize = 32;
/// Pending invalidations are applied this many at a time.
pub(crate) const PENDING_BATCH: usize = PENDING_UNREFS / 2;

/// Hints the CPU to bring the cache line holding `*p` in; a no-op off x86-64.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EuState {
    Free,
    Open,
    Sealed,
}

/// Where physical units live: with one lane (superblock GC units) the pages of an erase unit are
/// striped over all (die, plane) pairs; with one lane per (die, plane) each erase unit is a block
/// of one plane.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DieMap {
    eu_div: Divisor,
    upp_shift: u32,
    die_planes_div: Divisor,
    planes_div: Divisor,
    striped: bool,
}

impl DieMap {
    /// The die physical unit `pu` lives on.
    #[inline]
    pub(crate) fn die_of(self, pu: u32) -> u32 {
        let (eu, off) = self.eu_div.div_rem(pu);
        let slot = if self.striped {
            off >> self.upp_shift
        } else {
            eu
        };
        self.planes_div.div(self.die_planes_div.div_rem(slot).1)
    }
}

/// One write frontier: an open erase unit per lane.
pub(crate) struct Frontier {
    pub(crate) eu: Vec<u32>,
    pub(crate) off: Vec<u32>,
    pub(crate) rr: u32,
    pub(crate) gc: bool,
    pub(crate) handle: u16,
}

/// How a remap treats its source range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RemapKind {
    /// Source and destination both refer to the data afterwards (copy semantics).
    Share,
    /// The source range is unmapped afterwards (move semantics).
    Move,
}

/// One remap: make `[dst, dst+len)` hold what `[src, src+len)` holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemapOp {
    pub src: u64,
    pub dst: u64,
    pub len: u64,
    pub kind: RemapKind,
}

/// One in-device copy: make `[dst, dst+len)` hold what `[src, src+len)` holds by reading the
/// source from flash and programming it at the destination (see [`Ssd::copy`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyOp {
    pub src: u64,
    pub dst: u64,
    pub len: u64,
}

/// What a write command is, for the counters: a host write, a host write of data the host had
/// already written once (a rewrite), or a copy the device makes by itself (remap's unaligned
/// parts). Rewrites and internal copies program redundant bytes (`redundant_write_bytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteKind {
    Host,
    Rewrite,
    Internal,
}

impl WriteKind {
    fn host(self) -> bool {
        self != WriteKind::Internal
    }
    fn redundant(self) -> bool {
        self != WriteKind::Host
    }
}

/// What a power cut did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowerCutReport {
    /// Cached units programmed thanks to power-loss protection.
    pub destaged_units: u64,
    /// Cached units lost (no power-loss protection).
    pub lost_units: u64,
}

/// A simulated flash SSD. Every command takes the virtual time it is submitted at (ns) and
/// returns the virtual time it completes at.
pub struct Ssd {
    pub(crate) cfg: SsdConfig,
    pub(crate) cap: Capacity,
    pub(crate) unit: u32,
    pub(crate) unit_shift: u32,
    pub(crate) upp: u32,
    /// log2 of `upp` (units per page is a power of two).
    pub(crate) upp_shift: u32,
    pub(crate) eu_units: u32,
    /// Divides a physical unit number by `eu_units` (its erase unit).
    pub(crate) eu_div: Divisor,
    pub(crate) lanes: u32,
    pub(crate) die_planes: u32,
    pub(crate) planes: u32,
    pub(crate) dies: u32,
    /// Which die a physical unit lives on.
    pub(crate) die_map: DieMap,
    pub(crate) logical_units: u32,
    pub(crate) map: Vec<u32>,
    pub(crate) rev: Vec<u32>,
    pub(crate) valid: Vec<u64>,
    /// Physical units whose last reference was dropped but which are not invalidated yet (valid
    /// bit, erase-unit valid count, victim bucket), oldest first from `pending_next`; NIL: free
    /// slot. See [`Ssd::unref`]. Applied in order, and before anything reads or changes the
    /// bitmap, the valid counts or the victim buckets otherwise ([`Ssd::apply_unrefs`]).
    pub(crate) pending: [u32; PENDING_UNREFS],
    pub(crate) pending_next: usize,
    pub(crate) shared: HashMap<u32, Vec<u32>>,
    pub(crate) eu_valid: Vec<u32>,
    pub(crate) eu_state: Vec<EuState>,
    pub(crate) eu_handle: Vec<u16>,
    pub(crate) erase_count: Vec<u32>,
    pub(crate) free: Vec<VecDeque<u32>>,
    pub(crate) victims: Victims,
    pub(crate) frontiers: Vec<Frontier>,
    pub(crate) handles: u32,
    pub(crate) timing: Timing,
    pub(crate) store: Store,
    pub(crate) cache: WriteCache,
    pub(crate) zones: Option<Zones>,
    pub(crate) counters: Counters,
    pub(crate) handle_stats: Vec<HandleStats>,
    pub(crate) read_lat: LatencyHistogram,
    pub(crate) write_lat: LatencyHistogram,
    pub(crate) rng: Pcg64Mcg,
    pub(crate) mapped_units: u64,
    pub(crate) last_ns: u64,
    /// Reused buffers of a GC victim's valid physical units and their logical units.
    pub(crate) gc_pus: Vec<u32>,
    pub(crate) gc_lus: Vec<u32>,
    /// The simple fast path applies: WAF-only, no timing, no cache, not zoned.
    pub(crate) fast: bool,
    /// Whole-unit writes without data go straight to flash: WAF-only, no cache, not zoned.
    pub(crate) direct: bool,
}

impl Ssd {
    /// Builds a device from a validated configuration. All flash starts erased and unmapped.
    pub fn new(cfg: SsdConfig) -> Result<Ssd, SimError> {
        cfg.validate()?;
        let cap = cfg.capacity();
        let unit = cfg.mapping_unit_bytes;
        let eu_units = cfg.eu_units();
        let lanes = cfg.lanes();
        let eus = cfg.erase_units();
        let phys_units = eus as u64 * eu_units as u64;
        let logical_units = (cap.logical_bytes / unit as u64) as u32;
        let handles = match &cfg.mode {
            Mode::Fdp(f) => f.handles,
            _ => 1,
        };
        let mut free: Vec<VecDeque<u32>> = (0..lanes).map(|_| VecDeque::new()).collect();
        for eu in 0..eus {
            free[(eu % lanes) as usize].push_back(eu);
        }
        let mut frontiers = Vec::new();
        for gc in [false, true] {
            if gc && !cfg.gc.separate_gc_frontier {
                break;
            }
            for h in 0..handles {
                frontiers.push(Frontier {
                    eu: vec![NIL; lanes as usize],
                    off: vec![0; lanes as usize],
                    rr: 0,
                    gc,
                    handle: h as u16,
                });
            }
        }
        let zones = match &cfg.mode {
            Mode::Zns(z) => Some(Zones::new(z, eus, eu_units)),
            _ => None,
        };
        let store = Store::open(&cfg.data, eus, cfg.eu_bytes(), cap.physical_bytes)?;
        let direct = !matches!(cfg.mode, Mode::Zns(_))
            && matches!(cfg.data, crate::config::DataMode::WafOnly)
            && cfg.write_cache_bytes == 0;
        let fast = direct && !cfg.timing.enabled;
        let g = &cfg.geometry;
        let ssd = Ssd {
            unit,
            unit_shift: unit.trailing_zeros(),
            upp: cfg.units_per_page(),
            upp_shift: cfg.units_per_page().trailing_zeros(),
            eu_units,
            eu_div: Divisor::new(eu_units),
            lanes,
            die_planes: g.die_planes(),
            planes: g.planes_per_die,
            dies: g.dies(),
            die_map: DieMap {
                eu_div: Divisor::new(eu_units),
                upp_shift: cfg.units_per_page().trailing_zeros(),
                die_planes_div: Divisor::new(g.die_planes()),
                planes_div: Divisor::new(g.planes_per_die),
                striped: lanes == 1,
            },
            logical_units,
            map: alloc_table(logical_units as usize, NIL),
            rev: alloc_table(phys_units as usize, NIL),
            valid: vec![0u64; (phys_units as usize).div_ceil(64)],
            pending: [NIL; PENDING_UNREFS],
            pending_next: 0,
            shared: HashMap::new(),
            eu_valid: vec![0; eus as usize],
            eu_state: vec![EuState::Free; eus as usize],
            eu_handle: vec![0; eus as usize],
            erase_count: vec![0; eus as usize],
            free,
            victims: Victims::new(eus, lanes, eu_units),
            frontiers,
            handles,
            timing: Timing::new(&cfg.timing, &cfg.geometry, unit),
            store,
            cache: WriteCache::new((cfg.write_cache_bytes / unit as u64) as usize),
            zones,
            counters: Counters::default(),
            handle_stats: vec![HandleStats::default(); handles as usize],
            read_lat: LatencyHistogram::new(),
            write_lat: LatencyHistogram::new(),
            rng: Pcg64Mcg::seed_from_u64(cfg.seed),
            mapped_units: 0,
            last_ns: 0,
            fast,
            direct,
            gc_pus: Vec::new(),
            gc_lus: Vec::new(),
            cap,
            cfg,
        };
        Ok(ssd)
    }

    pub fn config(&self) -> &SsdConfig {
        &self.cfg
    }

    /// Logical and physical capacity, over-provisioning and spare factor.
    pub fn capacity(&self) -> &Capacity {
        &self.cap
    }

    /// The mapping unit in bytes (the logical block size the device is best written in).
    pub fn unit_bytes(&self) -> u32 {
        self.unit
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Per reclaim unit handle statistics (one entry unless FDP).
    pub fn handle_stats(&self) -> &[HandleStats] {
        &self.handle_stats
    }

    /// Fraction of the logical space currently mapped.
    pub fn fill(&self) -> f64 {
        self.mapped_units as f64 / self.logical_units.max(1) as f64
    }

    /// Logical units (mapping entries) currently mapped: the entries in use in the mapping table.
    pub fn mapped_units(&self) -> u64 {
        self.mapped_units
    }

    /// Bytes of the remap sharing table: for every physical unit that more than one logical unit
    /// refers to, a 4-byte key plus 4 bytes per extra owner.
    pub fn sharing_table_bytes(&self) -> u64 {
        self.shared
            .values()
            .map(|extra| 4 + 4 * extra.len() as u64)
            .sum()
    }

    /// Memory of the full mapping table a device provisions, in bytes: one entry of
    /// [`MAP_ENTRY_BYTES`] per logical unit (a flat page-level map, as typical FTLs keep in DRAM,
    /// whatever is mapped) plus the sharing table ([`Ssd::sharing_table_bytes`]). Halving the
    /// mapping unit doubles it.
    pub fn mapping_table_bytes(&self) -> u64 {
        self.logical_units as u64 * MAP_ENTRY_BYTES + self.sharing_table_bytes()
    }

    /// The part of the mapping table in use, in bytes: one [`MAP_ENTRY_BYTES`] entry per mapped
    /// logical unit plus the sharing table (what a demand-loaded map would have to hold).
    pub fn mapping_bytes_in_use(&self) -> u64 {
        self.mapped_units * MAP_ENTRY_BYTES + self.sharing_table_bytes()
    }

    /// Free erase units over all lanes.
    pub fn free_eus(&self) -> u64 {
        self.free.iter().map(|f| f.len() as u64).sum()
    }

    /// Clears the latency histograms (e.g. after preconditioning).
    pub fn reset_latency(&mut self) {
        self.read_lat.reset();
        self.write_lat.reset();
    }

    // ---------------------------------------------------------------- helpers

    /// Current contents of a logical unit (cache, then flash; zeros when unmapped), and the time
    /// they are available. Counts a media read when flash is read.
    fn read_unit(&mut self, lu: u32, at: u64, out: Option<&mut [u8]>) -> Result<u64, SimError> {
        if let Some(c) = self.cache.get(lu) {
            if let Some(out) = out {
                match &c.data {
                    Some(d) => out.copy_from_slice(d),
                    None => out.fill(0),
                }
            }
            return Ok(at);
        }
        let pu = self.map[lu as usize];
        if pu == NIL {
            if let Some(out) = out {
                out.fill(0);
            }
            return Ok(at);
        }
        self.counters.media_read_bytes += self.unit as u64;
        let done = if self.timing.enabled() {
            self.timing.read(at, self.die_of(pu), 1)
        } else {
            at
        };
        if let Some(out) = out {
            self.store.read(pu, out)?;
        }
        Ok(done)
    }

    /// A hint for simulation speed, with no effect on results: a command at byte `offset` will
    /// follow soon, so the device brings the mapping-table entry it will need into the CPU cache
    /// now. Drivers that know their next commands (a closed loop with a queue of pending
    /// commands, a trace) call it a few dozen commands ahead.
    #[inline]
    pub fn prefetch(&self, offset: u64) {
        prefetch(
            self.map
                .as_ptr()
                .wrapping_add((offset >> self.unit_shift) as usize),
        );
    }

    /// Host write of `len` bytes at byte `offset`, placement id `pid` (FDP; ignored otherwise).
    /// `data`, when given, must be `len` bytes; a device in WAF-only mode discards it.
    pub fn write(
        &mut self,
        at: u64,
        offset: u64,
        len: u64,
        pid: u16,
        data: Option<&[u8]>,
    ) -> Result<u64, SimError> {
        if self.direct
            && data.is_none()
            && len == self.unit as u64
            && offset & (len - 1) == 0
            && offset < self.cap.logical_bytes
            && (pid as u32) < self.handles
        {
            // One whole unit on a WAF-only device without cache (the commands of sweeps): what
            // `write_cmd` does for it, without its per-command generality.
            let stream = pid as usize;
            let lu = (offset >> self.unit_shift) as u32;
            self.touch(at);
            if !self.timing.enabled() {
                self.write_direct(lu, stream, at)?;
                return Ok(at);
            }
            let start = at + self.timing.cfg.command_overhead_ns;
            let done = start.max(self.write_direct(lu, stream, start)?);
            self.write_lat.record(done - at);
            return Ok(done);
        }
        self.write_cmd(at, offset, len, pid, data, WriteKind::Host)
    }

    /// A host write of data the host had already written to the device once (e.g. a
    /// checkpoint's copy of a journal entry to its home location): a [`Ssd::write`] whose
    /// programs, read-modify-write ones included, are also counted in `redundant_write_bytes`.
    pub fn write_rewrite(
        &mut self,
        at: u64,
        offset: u64,
        len: u64,
        pid: u16,
        data: Option<&[u8]>,
    ) -> Result<u64, SimError> {
        self.write_cmd(at, offset, len, pid, data, WriteKind::Rewrite)
    }

    /// A write command of the given kind (internal copies are not host traffic).
    pub(crate) fn write_cmd(
        &mut self,
        at: u64,
        offset: u64,
        len: u64,
        pid: u16,
        data: Option<&[u8]>,
        kind: WriteKind,
    ) -> Result<u64, SimError> {
        let host = kind.host();
        let redundant = kind.redundant();
        if let Some(d) = data {
            if d.len() as u64 != len {
                return Err(SimError::BufferSize {
                    expected: len,
                    got: d.len() as u64,
                });
            }
        }
        if self.zones.is_some() {
            let done = self.zone_write(at, offset, len, data)?;
            if redundant {
                self.counters.redundant_write_bytes += len;
            }
            return Ok(done);
        }
        self.check_range(offset, len)?;
        let stream = self.host_stream(pid)?;
        self.touch(at);
        if host {
            self.count_host_write(stream, len);
        }
        if len == 0 {
            return Ok(at);
        }
        let unit = self.unit as u64;
        let first = (offset >> self.unit_shift) as u32;
        let last = ((offset + len - 1) >> self.unit_shift) as u32;
        if self.fast && offset.is_multiple_of(unit) && len.is_multiple_of(unit) {
            for lu in first..=last {
                self.write_unit_direct(lu, stream, at, None)?;
            }
            if redundant {
                self.counters.redundant_write_bytes += (last - first + 1) as u64 * unit;
            }
            return Ok(at);
        }
        let keeps = self.store.keeps_data();
        let start = at + self.timing_overhead();
        let mut done = start;
        let mut buf = vec![0u8; if keeps { unit as usize } else { 0 }];
        for lu in first..=last {
            let ustart = lu as u64 * unit;
            let lo = offset.max(ustart);
            let hi = (offset + len).min(ustart + unit);
            let partial = hi - lo != unit;
            let mut ready = start;
            if partial {
                let cached = self.cache.get(lu).is_some();
                if !cached && self.map[lu as usize] != NIL {
                    self.counters.rmw_units += 1;
                    self.counters.rmw_read_bytes += unit;
                }
                if !cached {
                    // A write smaller than the mapping unit reads the rest of the unit back.
                    ready = self.read_unit(lu, start, if keeps { Some(&mut buf) } else { None })?;
                } else if keeps {
                    self.read_unit(lu, start, Some(&mut buf))?;
                }
            }
            if let Some(d) = data {
                let src = &d[(lo - offset) as usize..(hi - offset) as usize];
                buf[(lo - ustart) as usize..(hi - ustart) as usize].copy_from_slice(src);
            }
            let unit_data = if keeps { Some(&buf[..]) } else { None };
            let ack = if self.cache.enabled() {
                self.cache.put(
                    lu,
                    CachedUnit {
                        pid: stream as u16,
                        data: unit_data.map(|d| d.to_vec().into_boxed_slice()),
                        redundant,
                    },
                );
                let mut ack = ready + self.timing_unit_xfer();
                while self.cache.over_capacity() {
                    ack = ack.max(self.destage_one(ready)?);
                }
                ack
            } else {
                if redundant {
                    self.counters.redundant_write_bytes += unit;
                }
                self.write_unit_direct(lu, stream, ready, unit_data)?
            };
            done = done.max(ack);
        }
        if self.timing.enabled() {
            self.write_lat.record(done - at);
        }
        Ok(done)
    }

    pub(crate) fn count_host_write(&mut self, stream: usize, len: u64) {
        self.counters.host_write_bytes += len;
        self.counters.host_write_cmds += 1;
        let handle = self.frontiers[stream].handle as usize;
        self.handle_stats[handle].host_write_bytes += len;
    }

    pub(crate) fn timing_overhead(&self) -> u64 {
        if self.timing.enabled() {
            self.timing.cfg.command_overhead_ns
        } else {
            0
        }
    }

    pub(crate) fn timing_unit_xfer(&self) -> u64 {
        if self.timing.enabled() {
            (self.unit as u64 * 1000).div_ceil(self.timing.cfg.channel_mb_s.max(1))
        } else {
            0
        }
    }

    /// Programs the oldest cached unit. Returns the ack time of its program.
    pub(crate) fn destage_one(&mut self, at: u64) -> Result<u64, SimError> {
        match self.cache.pop_oldest() {
            Some((lu, c)) => {
                let stream = c.pid as usize;
                if c.redundant {
                    self.counters.redundant_write_bytes += self.unit as u64;
                }
                self.write_unit_direct(lu, stream, at, c.data.as_deref())
            }
            None => Ok(at),
        }
    }

    /// Host read of `len` bytes at `offset` into `buf` (if given; WAF-only devices return zeros).
    pub fn read(
        &mut self,
        at: u64,
        offset: u64,
        len: u64,
        buf: Option<&mut [u8]>,
    ) -> Result<u64, SimError> {
        self.read_cmd(at, offset, len, buf, true)
    }

    pub(crate) fn read_cmd(
        &mut self,
        at: u64,
        offset: u64,
        len: u64,
        mut buf: Option<&mut [u8]>,
        host: bool,
    ) -> Result<u64, SimError> {
        if let Some(b) = &buf {
            if b.len() as u64 != len {
                return Err(SimError::BufferSize {
                    expected: len,
                    got: b.len() as u64,
                });
            }
        }
        let cap = self.cap.logical_bytes;
        if offset.checked_add(len).is_none_or(|e| e > cap) {
            return Err(SimError::OutOfRange {
                offset,
                len,
                capacity: cap,
            });
        }
        self.touch(at);
        if host {
            self.counters.host_read_bytes += len;
            self.counters.host_read_cmds += 1;
        }
        if len == 0 {
            return Ok(at);
        }
        let unit = self.unit as u64;
        let first = (offset >> self.unit_shift) as u32;
        let last = ((offset + len - 1) >> self.unit_shift) as u32;
        let start = at + self.timing_overhead();
        let mut done = start;
        let mut tmp = vec![0u8; if buf.is_some() { unit as usize } else { 0 }];
        for lu in first..=last {
            let ustart = lu as u64 * unit;
            let lo = offset.max(ustart);
            let hi = (offset + len).min(ustart + unit);
            let t = self.read_unit(lu, start, if buf.is_some() { Some(&mut tmp) } else { None })?;
            if let Some(b) = buf.as_deref_mut() {
                b[(lo - offset) as usize..(hi - offset) as usize]
                    .copy_from_slice(&tmp[(lo - ustart) as usize..(hi - ustart) as usize]);
            }
            done = done.max(t);
        }
        if self.timing.enabled() {
            self.read_lat.record(done - at);
        }
        Ok(done)
    }

    /// Discards (unmaps) every mapping unit wholly inside `[offset, offset+len)`.
    pub fn trim(&mut self, at: u64, offset: u64, len: u64) -> Result<u64, SimError> {
        if self.zones.is_some() {
            return Err(SimError::Unsupported(
                "trim on a zoned device (use zone reset)",
            ));
        }
        self.check_range(offset, len)?;
        self.touch(at);
        let unit = self.unit as u64;
        let first = offset.div_ceil(unit);
        let end = (offset + len) / unit;
        for lu in first..end {
            self.unmap(lu as u32);
        }
        self.counters.trim_bytes += end.saturating_sub(first) * unit;
        Ok(at + self.timing_overhead())
    }

    pub(crate) fn unmap(&mut self, lu: u32) {
        self.cache.remove(lu);
        let pu = self.map[lu as usize];
        if pu != NIL {
            self.unref(pu, lu);
            self.map[lu as usize] = NIL;
            self.mapped_units -= 1;
        }
    }

    /// Makes every completed write durable (destages the write cache). Completes when all queued
    /// flash work is done.
    ///
    /// With power-loss protection every acknowledged write is already durable (the controller's
    /// buffer is backed by capacitors), so a flush completes after the command overhead, as on
    /// datacenter SSDs. Without it, a flush waits until all queued program work is done.
    pub fn flush(&mut self, at: u64) -> Result<u64, SimError> {
        self.touch(at);
        self.counters.flushes += 1;
        while self.cache.len() > 0 {
            self.destage_one(at)?;
        }
        if self.cfg.power_loss_protection {
            // The cache is protected: the destaging above happens behind the flush's back.
            return Ok(at + self.timing_overhead());
        }
        Ok(if self.timing.enabled() {
            self.timing.all_idle_at().max(at)
        } else {
            at
        })
    }

    /// Power is cut: the write cache is destaged (power-loss protection) or lost.
    pub fn power_cut(&mut self) -> Result<PowerCutReport, SimError> {
        let n = self.cache.len() as u64;
        if self.cfg.power_loss_protection {
            let at = self.last_ns;
            while self.cache.len() > 0 {
                self.destage_one(at)?;
            }
            Ok(PowerCutReport {
                destaged_units: n,
                lost_units: 0,
            })
        } else {
            self.cache.clear();
            self.counters.power_cut_lost_bytes += n * self.unit as u64;
            Ok(PowerCutReport {
                destaged_units: 0,
                lost_units: n,
            })
        }
    }
}

/// The words of a bitmap that bits `lo..hi` fall in, each with the mask of those bits.
pub(crate) fn bit_range_words(lo: u32, hi: u32) -> impl Iterator<Item = (usize, u64)> {
    let mut pu = lo;
    std::iter::from_fn(move || {
        if pu >= hi {
            return None;
        }
        let bit = pu & 63;
        let n = (64 - bit).min(hi - pu);
        let mask = if n == 64 {
            !0u64
        } else {
            ((1u64 << n) - 1) << bit
        };
        let w = (pu >> 6) as usize;
        pu += n;
        Some((w, mask))
    })
}

/// Allocates a large table filled with `fill`, asking the kernel for transparent huge pages so the
/// random lookups of the mapping tables miss the TLB less.
fn alloc_table(len: usize, fill: u32) -> Vec<u32> {
    let mut v: Vec<u32> = Vec::with_capacity(len);
    let bytes = len * 4;
    if bytes >= 1 << 21 {
        let page = 4096usize;
        let start = (v.as_ptr() as usize) & !(page - 1);
        let end = v.as_ptr() as usize + bytes;
        // SAFETY: the range lies within (or on the first page of) memory this Vec's allocation
        // owns; madvise only changes paging advice and is done before the pages are touched.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
    v.resize(len, fill);
    v
}
