//! A simple, deterministic hard-disk model behind the same [`SimDevice`] interface as the SSD.
//!
//! One actuator serves commands in submission order. Positioning starts at
//! `max(at + command_overhead, busy_until)`; the seek over `d` tracks takes 0 if `d = 0`, else
//! `t2t + (full - t2t) * sqrt(d / max_d)`; the platter angle at time `t` is `(t mod rev) / rev` and
//! sector `k` of a track sits at angle `k / sectors_per_track`, which fixes the rotational wait; a
//! track holds one revolution of data at `transfer_mb_s`, with no head-switch time. Writes are
//! write-through: log appends arriving at random times wait half a revolution (4.17 ms at 7200
//! rpm, as in Lee et al., SIGMOD 2008). Reads stream on (read-ahead): a read starting at most
//! `read_ahead_bytes` past the previous read's end needs no seek or rotational wait.
//!
//! With `write_cache_bytes > 0` writes are write-back instead: a write is acknowledged after the
//! command overhead once it fits in the cache, and the actuator destages cached writes in
//! batches of half the cache, sorted by address with contiguous extents merged (one positioning
//! per extent). A write that finds half the cache full starts a destage; if the previous destage
//! is still running it waits for it first (the other half is busy). Reads do not wait for
//! cached writes; a flush destages everything and waits.

use crate::config::ConfigError;
use crate::device::SimDevice;
use crate::error::SimError;
use crate::stats::Counters;
use crate::timing::{LatencyHistogram, LatencySummary};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Bytes per chunk of the in-memory contents (allocated lazily on first write).
const CHUNK: usize = 4096;

/// Configuration of a simulated hard disk. Units are in the field names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HddConfig {
    /// Bytes the host can address (a positive multiple of `sector_bytes`).
    pub capacity_bytes: u64,
    /// Sector size in bytes (a power of two, 512..=65536; default 512).
    pub sector_bytes: u32,
    /// Spindle speed in revolutions per minute (default 7200).
    pub rpm: u32,
    /// Seek time between adjacent tracks in ns (default 0.8 ms).
    pub track_to_track_seek_ns: u64,
    /// Seek time across the whole stroke in ns (default 15 ms; average random seek ~8.4 ms).
    pub full_stroke_seek_ns: u64,
    /// Sustained media transfer rate in MB/s (10^6 bytes/s, default 150). With `rpm` it fixes the
    /// track size, see [`HddConfig::sectors_per_track`].
    pub transfer_mb_s: u64,
    /// Fixed controller + interface overhead of every read and write command in ns (default 50 us).
    pub command_overhead_ns: u64,
    /// How far past the end of a read the drive keeps reading ahead, in bytes (0 disables).
    pub read_ahead_bytes: u64,
    /// Keep the written contents in memory (lazily, in 4 KiB chunks; a write without data stores
    /// zeros); otherwise reads return zeros.
    pub keep_data: bool,
    /// Volatile write-back cache in bytes (0 = write-through, the default).
    #[serde(default)]
    pub write_cache_bytes: u64,
}

impl HddConfig {
    /// A 7200 rpm enterprise disk of `capacity_bytes`, without kept contents.
    pub fn new(capacity_bytes: u64) -> HddConfig {
        HddConfig {
            capacity_bytes,
            sector_bytes: 512,
            rpm: 7200,
            track_to_track_seek_ns: 800_000,
            full_stroke_seek_ns: 15_000_000,
            transfer_mb_s: 150,
            command_overhead_ns: 50_000,
            read_ahead_bytes: 1 << 20,
            keep_data: false,
            write_cache_bytes: 0,
        }
    }

    /// The disk paper 003 measures (Seagate Barracuda 7200.10 ST3250310AS: 250 GB, 7200 rpm,
    /// 110 MB/s sustained, Table 1 of the paper) with its 8 MB cache write-back, as shipped. The
    /// seek curve is the default one (average random seek ~8.4 ms over the whole stroke).
    pub fn barracuda_7200_10() -> HddConfig {
        HddConfig {
            transfer_mb_s: 110,
            write_cache_bytes: 8 << 20,
            ..HddConfig::new(250_000_000_000 / 512 * 512)
        }
    }

    /// The same disk with a write cache of `bytes` (0: write-through).
    pub fn with_write_cache(self, bytes: u64) -> HddConfig {
        HddConfig {
            write_cache_bytes: bytes,
            ..self
        }
    }

    /// Duration of one revolution in ns (rounded).
    pub fn rev_ns(&self) -> u64 {
        let rpm = u64::from(self.rpm.max(1));
        (60_000_000_000 + rpm / 2) / rpm
    }

    /// Sectors per track: the sectors passing under the head in one revolution at `transfer_mb_s`.
    pub fn sectors_per_track(&self) -> u64 {
        let bytes = u128::from(self.transfer_mb_s) * u128::from(self.rev_ns()) / 1000;
        (bytes / u128::from(self.sector_bytes.max(1))) as u64
    }

    /// Number of tracks the capacity spans.
    pub fn tracks(&self) -> u64 {
        let sectors = self.capacity_bytes / u64::from(self.sector_bytes.max(1));
        sectors.div_ceil(self.sectors_per_track().max(1))
    }

    /// Checks every field; a config that passes can be simulated.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let sb = self.sector_bytes;
        let checks = [
            (
                !sb.is_power_of_two() || !(512..=65536).contains(&sb),
                "sector_bytes",
                "must be a power of two in 512..=65536",
            ),
            (
                self.capacity_bytes == 0
                    || !self.capacity_bytes.is_multiple_of(u64::from(sb.max(1))),
                "capacity_bytes",
                "must be a positive multiple of sector_bytes",
            ),
            (
                !(1..=1_000_000).contains(&self.rpm),
                "rpm",
                "must be in 1..=1000000",
            ),
            (
                !(1..=1_000_000).contains(&self.transfer_mb_s) || self.sectors_per_track() == 0,
                "transfer_mb_s",
                "must be in 1..=1000000 and give at least one sector per revolution",
            ),
            (
                self.track_to_track_seek_ns > self.full_stroke_seek_ns,
                "track_to_track_seek_ns",
                "must not exceed full_stroke_seek_ns",
            ),
        ];
        match checks.into_iter().find(|c| c.0) {
            Some((_, field, reason)) => Err(ConfigError {
                field,
                reason: reason.to_string(),
            }),
            None => Ok(()),
        }
    }
}

/// A simulated hard disk. Same configuration + same command sequence = same numbers.
pub struct Hdd {
    cfg: HddConfig,
    rev_ns: u64,
    spt: u64,
    max_distance: u64,
    /// Track the head is over.
    head_track: u64,
    /// When the actuator finishes its current command.
    busy_until: u64,
    /// Read-ahead stream: (next sector, time its slot starts under the head).
    stream: Option<(u64, u64)>,
    /// Cached writes not yet destaged: (offset, len) in bytes, in arrival order.
    cached: Vec<(u64, u64)>,
    cached_bytes: u64,
    /// When the last destage ends.
    destage_until: u64,
    counters: Counters,
    read_lat: LatencyHistogram,
    write_lat: LatencyHistogram,
    data: HashMap<u64, Box<[u8]>>,
}

impl Hdd {
    /// Builds a disk with the head over track 0 at time 0.
    pub fn new(cfg: HddConfig) -> Result<Hdd, SimError> {
        cfg.validate()?;
        Ok(Hdd {
            rev_ns: cfg.rev_ns(),
            spt: cfg.sectors_per_track(),
            max_distance: cfg.tracks().saturating_sub(1).max(1),
            cfg,
            head_track: 0,
            busy_until: 0,
            stream: None,
            cached: Vec::new(),
            cached_bytes: 0,
            destage_until: 0,
            counters: Counters::default(),
            read_lat: LatencyHistogram::new(),
            write_lat: LatencyHistogram::new(),
            data: HashMap::new(),
        })
    }

    /// The configuration the disk was built with.
    pub fn config(&self) -> &HddConfig {
        &self.cfg
    }

    /// Time at which the actuator is idle.
    pub fn busy_until(&self) -> u64 {
        self.busy_until
    }

    /// Latency (completion - submission) of the read commands so far.
    pub fn read_latency(&self) -> LatencySummary {
        self.read_lat.summary()
    }

    /// Latency (completion - submission) of the write commands so far.
    pub fn write_latency(&self) -> LatencySummary {
        self.write_lat.summary()
    }

    /// Seek time over `distance` tracks.
    pub fn seek_ns(&self, distance: u64) -> u64 {
        let c = &self.cfg;
        let (t2t, full) = (c.track_to_track_seek_ns, c.full_stroke_seek_ns);
        let frac = (distance.min(self.max_distance) as f64 / self.max_distance as f64).sqrt();
        match distance {
            0 => 0,
            _ => t2t + ((full - t2t) as f64 * frac).round() as u64,
        }
    }

    /// Time from angle 0 to the start of slot `x` (sectors from angle 0, may exceed a track).
    fn slot_ns(&self, x: u64) -> u64 {
        let within = u128::from(x % self.spt) * u128::from(self.rev_ns) / u128::from(self.spt);
        (x / self.spt) * self.rev_ns + within as u64
    }

    /// Checks a command; a rejected command leaves the device unchanged.
    fn check(&self, offset: u64, len: u64, buf_len: Option<usize>) -> Result<(), SimError> {
        let capacity = self.cfg.capacity_bytes;
        match buf_len.map(|b| b as u64) {
            Some(got) if got != len => Err(SimError::BufferSize { expected: len, got }),
            _ if offset.checked_add(len).is_none_or(|e| e > capacity) => {
                Err(SimError::OutOfRange {
                    offset,
                    len,
                    capacity,
                })
            }
            _ => Ok(()),
        }
    }

    /// Times a non-empty read or write of the byte range; returns its completion.
    fn access(&mut self, write: bool, at_ns: u64, offset: u64, len: u64) -> u64 {
        let sb = u64::from(self.cfg.sector_bytes);
        let (first, end) = (offset / sb, (offset + len).div_ceil(sb));
        let ready = (at_ns + self.cfg.command_overhead_ns).max(self.busy_until);
        let window = self.cfg.read_ahead_bytes / sb;
        let done = match self.stream {
            // Served by the read-ahead stream, whose slot `next` started at `t_next`.
            Some((next, t_next)) if !write && first >= next && first - next <= window => {
                let k = next % self.spt;
                let t_end = t_next + self.slot_ns(k + (end - next)) - self.slot_ns(k);
                self.stream = Some((end, t_end));
                ready.max(t_end)
            }
            _ => {
                let seek = self.seek_ns((first / self.spt).abs_diff(self.head_track));
                let sought = ready + seek;
                // Wait until sector `k` (angle k / spt) is under the head, then transfer.
                let k = first % self.spt;
                let mut start = sought - sought % self.rev_ns + self.slot_ns(k);
                if start < sought {
                    start += self.rev_ns;
                }
                let t_end = start + self.slot_ns(k + (end - first)) - self.slot_ns(k);
                self.stream = (!write && window > 0).then_some((end, t_end));
                t_end
            }
        };
        self.head_track = (end - 1) / self.spt;
        self.busy_until = done;
        done
    }

    /// Puts a write into the write-back cache; returns its acknowledgement.
    fn cache_write(&mut self, at_ns: u64, offset: u64, len: u64) -> u64 {
        let mut ack = at_ns + self.cfg.command_overhead_ns;
        let half = (self.cfg.write_cache_bytes / 2).max(1);
        if self.cached_bytes + len > half && !self.cached.is_empty() {
            // The other half is still being destaged: wait for it, then destage this half.
            ack = ack.max(self.destage_until);
            self.destage(ack);
        }
        self.cached.push((offset, len));
        self.cached_bytes += len;
        if self.cached_bytes >= half {
            self.destage(ack);
        }
        ack
    }

    /// Writes every cached extent, by address, merging contiguous ones, starting at `at_ns`.
    fn destage(&mut self, at_ns: u64) {
        let mut extents = std::mem::take(&mut self.cached);
        self.cached_bytes = 0;
        extents.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(extents.len());
        for (off, len) in extents {
            match merged.last_mut() {
                Some((o, l)) if *o + *l >= off => *l = (*l).max(off + len - *o),
                _ => merged.push((off, len)),
            }
        }
        let mut t = at_ns;
        for (off, len) in merged {
            t = self.access(true, t, off, len);
        }
        self.destage_until = t;
    }
}

/// Splits `len` bytes at `offset` into (chunk, offset in chunk, offset in buffer, bytes) pieces.
fn spans(offset: u64, len: usize) -> impl Iterator<Item = (u64, usize, usize, usize)> {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        let abs = offset + pos as u64;
        let within = (abs % CHUNK as u64) as usize;
        let n = (CHUNK - within).min(len - pos);
        let piece = (abs / CHUNK as u64, within, pos, n);
        pos += n;
        (n > 0).then_some(piece)
    })
}

impl SimDevice for Hdd {
    fn capacity_bytes(&self) -> u64 {
        self.cfg.capacity_bytes
    }

    fn block_bytes(&self) -> u32 {
        self.cfg.sector_bytes
    }

    fn read(
        &mut self,
        at_ns: u64,
        offset: u64,
        len: u64,
        buf: Option<&mut [u8]>,
    ) -> Result<u64, SimError> {
        self.check(offset, len, buf.as_ref().map(|b| b.len()))?;
        self.counters.host_read_cmds += 1;
        self.counters.host_read_bytes += len;
        self.counters.media_read_bytes += len;
        if let Some(b) = buf {
            for (chunk, within, pos, n) in spans(offset, b.len()) {
                match self.data.get(&chunk) {
                    Some(c) => b[pos..pos + n].copy_from_slice(&c[within..within + n]),
                    None => b[pos..pos + n].fill(0),
                }
            }
        }
        Ok(if len == 0 {
            at_ns
        } else {
            let done = self.access(false, at_ns, offset, len);
            self.read_lat.record(done - at_ns);
            done
        })
    }

    fn write(
        &mut self,
        at_ns: u64,
        offset: u64,
        len: u64,
        data: Option<&[u8]>,
    ) -> Result<u64, SimError> {
        self.check(offset, len, data.map(|d| d.len()))?;
        self.counters.host_write_cmds += 1;
        self.counters.host_write_bytes += len;
        self.counters.media_write_bytes += len;
        // Kept contents: the data, or zeros for a write without data (absent chunks read as zeros).
        let kept = if self.cfg.keep_data { len as usize } else { 0 };
        for (chunk, within, pos, n) in spans(offset, kept) {
            let range = within..within + n;
            match (data, self.data.get_mut(&chunk)) {
                (Some(d), Some(c)) => c[range].copy_from_slice(&d[pos..pos + n]),
                (Some(d), None) => {
                    let mut c = vec![0; CHUNK].into_boxed_slice();
                    c[range].copy_from_slice(&d[pos..pos + n]);
                    self.data.insert(chunk, c);
                }
                (None, Some(c)) => c[range].fill(0),
                (None, None) => {}
            }
        }
        Ok(if len == 0 {
            at_ns
        } else {
            let done = if self.cfg.write_cache_bytes > 0 {
                self.cache_write(at_ns, offset, len)
            } else {
                self.access(true, at_ns, offset, len)
            };
            self.write_lat.record(done - at_ns);
            done
        })
    }

    /// A no-op: disks do not need discards.
    fn trim(&mut self, at_ns: u64, _offset: u64, _len: u64) -> Result<u64, SimError> {
        Ok(at_ns)
    }

    /// Destages the write cache and completes when the actuator is idle.
    fn flush(&mut self, at_ns: u64) -> Result<u64, SimError> {
        self.counters.flushes += 1;
        if !self.cached.is_empty() {
            self.destage(at_ns);
        }
        Ok(at_ns.max(self.busy_until))
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    /// splitmix64: a tiny deterministic generator for test offsets.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn disk(cap: u64) -> Hdd {
        Hdd::new(HddConfig::new(cap)).expect("valid config")
    }

    fn random_reads(d: &mut Hdd, n: u32, seed: u64) -> u64 {
        let (mut s, mut t, blocks) = (seed, 0, d.capacity_bytes() / 4096);
        for _ in 0..n {
            t = d
                .read(t, (next(&mut s) % blocks) * 4096, 4096, None)
                .expect("in range");
        }
        t
    }

    #[test]
    fn hdd_sequential_much_faster_than_random() {
        let (mut seq, mut t) = (disk(64 * GIB), 0);
        for i in 0..2000u64 {
            t = seq
                .read(t, 10 * GIB + i * 4096, 4096, None)
                .expect("in range");
        }
        let mut rnd = disk(64 * GIB);
        let end = random_reads(&mut rnd, 2000, 7);
        let (s, r) = (seq.read_latency(), rnd.read_latency());
        assert_eq!((s.count, r.count), (2000, 2000));
        assert!(s.mean_ns * 20.0 < r.mean_ns, "seq {s:?} random {r:?}");
        // Average seek (~8.4 ms) + half a revolution (4.17 ms) + transfer and overhead.
        assert!((8e6..16e6).contains(&r.mean_ns), "random {r:?}");
        assert!(r.max_ns < 15_000_000 + 8_400_000 + 1_000_000);
        // Deterministic: the same commands give the same times.
        let mut again = disk(64 * GIB);
        assert_eq!(random_reads(&mut again, 2000, 7), end);
        assert_eq!(again.read_latency(), r);
    }

    #[test]
    fn hdd_sequential_log_writes_wait_half_a_revolution() {
        // Commit-log pattern of Lee et al.: appends arriving at arbitrary times, no seek.
        let mut d = disk(GIB);
        let (mut s, mut t, rev) = (3u64, 0u64, d.config().rev_ns());
        for i in 0..4000u64 {
            let at = t + next(&mut s) % (3 * rev);
            t = d.write(at, i * 4096, 4096, None).expect("in range");
        }
        let (w, half_rev) = (d.write_latency(), rev as f64 / 2.0);
        assert!((w.mean_ns - half_rev).abs() < 0.1 * half_rev, "{w:?}");
        // Back-to-back synchronous writes to the next sector miss it and wait almost a revolution.
        let t0 = d.write(t, 0, 4096, None).expect("in range");
        let t1 = d.write(t0, 4096, 4096, None).expect("in range");
        assert!(t1 - t0 > rev * 9 / 10);
        let c = d.counters();
        assert_eq!(
            (c.media_write_bytes, c.host_write_cmds),
            (c.host_write_bytes, 4002)
        );
    }

    #[test]
    fn hdd_write_cache_streams_small_sequential_writes() {
        // 2 KiB appends arriving at arbitrary times: write-through waits for the platter each
        // time; write-back acknowledges at once and destages in half-cache batches at near the
        // media rate.
        let appends = |cache: u64| {
            let mut d = Hdd::new(HddConfig {
                write_cache_bytes: cache,
                ..HddConfig::new(GIB)
            })
            .expect("valid");
            let (mut s, mut t) = (5u64, 0u64);
            for i in 0..20_000u64 {
                let at = t + next(&mut s) % 200_000;
                t = d.write(at, i * 2048, 2048, None).expect("in range");
            }
            let end = d.flush(t).expect("flush");
            (d.write_latency(), end)
        };
        let (through, t_through) = appends(0);
        let (back, t_back) = appends(8 << 20);
        assert!(through.mean_ns > 3e6, "{through:?}");
        assert!(back.mean_ns < 100_000.0, "{back:?}");
        assert!(t_back * 10 < t_through, "{t_back} vs {t_through}");
        // 40 MiB at 150 MB/s is 0.28 s of transfer; the arrivals (mean 100 us apart plus the
        // 50 us acknowledgement) take ~3 s, and the disk keeps up with them.
        assert!(t_back < 3_200_000_000, "{t_back}");
        // The flush wrote everything: the actuator is idle after it.
        let mut d = Hdd::new(HddConfig {
            write_cache_bytes: 1 << 20,
            ..HddConfig::new(GIB)
        })
        .expect("valid");
        let ack = d.write(0, 0, 4096, None).expect("in range");
        assert_eq!(ack, d.config().command_overhead_ns);
        assert_eq!(d.busy_until(), 0, "nothing destaged below half the cache");
        let done = d.flush(ack).expect("flush");
        assert!(done > ack && done == d.busy_until());
    }

    #[test]
    fn hdd_keeps_data() {
        let mut cfg = HddConfig::new(GIB);
        cfg.keep_data = true;
        let mut d = Hdd::new(cfg).expect("valid config");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let t = d.write(0, 12_388, 10_000, Some(&data)).expect("write");
        let (mut buf, mut empty) = (vec![0xffu8; 10_000], vec![0xffu8; 512]);
        d.read(t, 12_388, 10_000, Some(&mut buf)).expect("read");
        assert_eq!(buf, data);
        d.read(t, GIB - 512, 512, Some(&mut empty)).expect("read");
        assert!(empty.iter().all(|&b| b == 0));
        let t = d.write(t, 12_388, 512, None).expect("write");
        d.read(t, 12_388, 10_000, Some(&mut buf)).expect("read");
        assert!(buf[..512].iter().all(|&b| b == 0) && buf[512..] == data[512..]);
        let c = d.counters();
        assert_eq!((c.host_write_bytes, c.host_read_bytes), (10_512, 20_512));
        assert_eq!((c.host_read_cmds, c.media_read_bytes), (3, 20_512));
    }

    #[test]
    fn hdd_rejects_bad_commands() {
        let mut d = disk(GIB);
        let e = d.read(0, GIB - 4096, 8192, None);
        assert!(matches!(e, Err(SimError::OutOfRange { capacity, .. }) if capacity == GIB));
        let e = d.write(0, u64::MAX, 2, None);
        assert!(matches!(e, Err(SimError::OutOfRange { .. })));
        let e = d.read(0, 0, 4096, Some(&mut [0u8; 100]));
        assert!(matches!(
            e,
            Err(SimError::BufferSize {
                expected: 4096,
                got: 100
            })
        ));
        assert_eq!((d.counters(), d.busy_until()), (&Counters::default(), 0));
        assert_eq!(d.trim(5, GIB * 2, 4096), Ok(5));
        let done = d.write(10, 0, 4096, None).expect("write");
        assert_eq!((d.flush(11), d.flush(done + 7)), (Ok(done), Ok(done + 7)));
        assert_eq!(d.counters().flushes, 2);
    }

    #[test]
    fn hdd_config_validation() {
        let ok = HddConfig::new(GIB);
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!((ok.rev_ns(), ok.sectors_per_track()), (8_333_333, 2441));
        type Case = (fn(&mut HddConfig), &'static str);
        let cases: [Case; 6] = [
            (|c| c.rpm = 0, "rpm"),
            (|c| c.capacity_bytes = 0, "capacity_bytes"),
            (|c| c.capacity_bytes = 1000, "capacity_bytes"),
            (|c| c.sector_bytes = 1000, "sector_bytes"),
            (|c| c.transfer_mb_s = 0, "transfer_mb_s"),
            (|c| c.full_stroke_seek_ns = 1, "track_to_track_seek_ns"),
        ];
        for (f, field) in cases {
            let mut c = ok.clone();
            f(&mut c);
            assert_eq!(c.validate().map_err(|e| e.field), Err(field));
            assert!(matches!(Hdd::new(c), Err(SimError::Config(_))));
        }
        let json = serde_json::to_string(&ok).expect("serialize");
        assert_eq!(serde_json::from_str::<HddConfig>(&json).ok(), Some(ok));
    }
}
