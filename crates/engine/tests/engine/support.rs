//! Helpers of the engine's public-API tests: devices the test keeps a handle on (so it can reopen,
//! corrupt or crash them after the engine lets go), a crash rig with separate data and log
//! devices and one power switch, key and value generators, the committed-state [`Oracle`], and a
//! copy of the data device image.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use wafer_engine::device::{
    BlockDevice, CrashReport, DeviceError, DeviceStats, FaultConfig, FaultDevice, FaultHandle,
    MemDevice, SharedDevice, SimDevice, VirtualClock,
};
use wafer_engine::{Db, Devices};

/// A device the test shares with the engine (the engine's own `Handle`).
pub type Held<D> = wafer_engine::device::Handle<D>;

pub const DATA_BYTES: u64 = 32 << 20;
pub const LOG_BYTES: u64 = 8 << 20;

/// One in-memory device split into data and log, reopenable.
pub struct MemPair {
    pub shared: SharedDevice,
}

impl MemPair {
    pub fn new() -> MemPair {
        MemPair {
            shared: SharedDevice::shared(MemDevice::new(DATA_BYTES + LOG_BYTES, 4096)),
        }
    }
    pub fn devices(&self) -> Devices {
        let mut p = self.shared.split(&[DATA_BYTES, LOG_BYTES]).unwrap();
        let log = p.pop().unwrap();
        let data = p.pop().unwrap();
        Devices::new(Box::new(data), Box::new(log))
    }
}

/// A key of `len` bytes derived from `n`.
/// Runs `work` in a transaction and commits it, again (as old as the first try:
/// `Db::begin_retry`) as long as it is refused on a conflict: a writer beside other threads'
/// readers may meet an older one's lock (wait-die), and a caller retries.
pub fn commit_retrying(
    db: &wafer_engine::Db,
    mut work: impl FnMut(&mut wafer_engine::Txn) -> wafer_engine::Result<()>,
) {
    let mut first = None;
    loop {
        let mut x = match first {
            Some(age) => db.begin_retry(age).unwrap(),
            None => db.begin().unwrap(),
        };
        first.get_or_insert(x.age());
        match work(&mut x).and_then(|()| x.commit()) {
            Ok(()) => return,
            Err(wafer_engine::Error::Conflict { .. }) => std::thread::yield_now(),
            Err(e) => panic!("{e}"),
        }
    }
}

pub fn key(n: u64, len: usize) -> Vec<u8> {
    let mut k = format!("k{n:08}").into_bytes();
    k.resize(len.max(9), b'.');
    k
}

/// A value of `len` bytes derived from `seed`.
pub fn value(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 26) as u8 + b'a'
        })
        .collect()
}

/// How many rounds a randomized crash test runs: `default`, or `WAFER_TEST_ROUNDS` if set (a
/// longer hunt).
pub fn rounds(default: u64) -> u64 {
    std::env::var("WAFER_TEST_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The rows of one tree: key -> value.
pub type Rows = BTreeMap<Vec<u8>, Vec<u8>>;

/// A simulated SSD (data mode) behind a fault injector, split into data and log.
pub struct CrashRig {
    pub fault: Held<FaultDevice<SimDevice>>,
    pub shared: SharedDevice,
    pub data_bytes: u64,
}

impl CrashRig {
    pub fn new(cfg: FaultConfig) -> CrashRig {
        CrashRig::sized(cfg, DATA_BYTES)
    }
    /// A rig whose data part is `data_bytes` (a small one makes DB GC run often).
    pub fn sized(cfg: FaultConfig, data_bytes: u64) -> CrashRig {
        let mut ssd = flashsim::SsdConfig::small(DATA_BYTES + LOG_BYTES, 0.2);
        ssd.timing.enabled = false;
        let sim = SimDevice::new(ssd, VirtualClock::shared()).unwrap();
        let fault = Held::new(FaultDevice::new(sim, cfg));
        let shared = SharedDevice::shared(fault.clone());
        CrashRig {
            fault,
            shared,
            data_bytes,
        }
    }
    pub fn devices(&self) -> Devices {
        let mut p = self.shared.split(&[self.data_bytes, LOG_BYTES]).unwrap();
        let log = p.pop().unwrap();
        let data = p.pop().unwrap();
        Devices::new(Box::new(data), Box::new(log))
    }
}

/// An untimed SSD in data mode with small erase units: 2 channels x 1 die, 8 pages of 4 KiB per
/// block, so a superblock (the GC unit, a ZNS zone, an FDP reclaim unit) is 64 KiB.
pub fn small_eu_ssd(logical_bytes: u64, mode: flashsim::Mode) -> flashsim::SsdConfig {
    let g = flashsim::Geometry {
        channels: 2,
        dies_per_channel: 1,
        planes_per_die: 1,
        blocks_per_plane: 1,
        pages_per_block: 8,
        page_size_bytes: 4096,
    };
    flashsim::SsdConfig::sized_untimed(g, logical_bytes, 0.12, mode)
}

/// A data device and a log device, each a simulated SSD behind its own fault injector, in one
/// power domain (one command count, one power switch). The data device is a whole device, not a
/// partition, so a zoned SSD keeps its zones.
pub struct DualRig {
    pub data: Held<FaultDevice<SimDevice>>,
    pub log: Held<FaultDevice<SimDevice>>,
}

impl DualRig {
    /// `data` for the data role; the log is a conventional SSD of `LOG_BYTES`. The log's
    /// faults are `cfg`'s with another seed.
    pub fn new(cfg: FaultConfig, data: flashsim::SsdConfig) -> DualRig {
        let clock = VirtualClock::shared();
        let data = SimDevice::new(data, clock.clone()).unwrap();
        let data = Held::new(FaultDevice::new(data, cfg.clone()));
        let mut log_ssd = flashsim::SsdConfig::small(LOG_BYTES, 0.2);
        log_ssd.timing.enabled = false;
        let log = SimDevice::new(log_ssd, clock).unwrap();
        let power = data.lock().handle();
        let log_cfg = FaultConfig {
            seed: cfg.seed ^ 0x9e37_79b9,
            ..cfg
        };
        let log = Held::new(FaultDevice::in_power_domain(log, log_cfg, &power));
        DualRig { data, log }
    }
    pub fn devices(&self) -> Devices {
        Devices::new(Box::new(self.data.clone()), Box::new(self.log.clone()))
    }
    /// The power domain's switch and counters.
    pub fn power(&self) -> FaultHandle {
        self.data.lock().handle()
    }
    /// The crash of both devices: (data, log) reports.
    pub fn crash(&self) -> (CrashReport, CrashReport) {
        let d = self.data.lock().crash();
        let l = self.log.lock().crash();
        (d, l)
    }
}

/// Committed state of a database as a test expects it: tree name -> key -> value. Tests apply
/// each transaction's writes to a clone (the staged state) and keep it once the commit returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Oracle {
    trees: BTreeMap<String, Rows>,
}

impl Oracle {
    /// Empty trees `names`.
    pub fn new(names: &[&str]) -> Oracle {
        Oracle {
            trees: names.iter().map(|n| (n.to_string(), Rows::new())).collect(),
        }
    }

    /// Reads the whole of trees `names` from `db` in one transaction.
    pub fn read(db: &Db, names: &[&str]) -> Oracle {
        Oracle::read_range(db, names, (Bound::Unbounded, Bound::Unbounded))
    }

    /// Reads the keys in `range` of trees `names` from `db` in one transaction.
    pub fn read_range(db: &Db, names: &[&str], range: (Bound<&[u8]>, Bound<&[u8]>)) -> Oracle {
        let mut x = db.begin().unwrap();
        let mut out = Oracle::default();
        for name in names {
            let t = db.open_tree(name).unwrap();
            let rows = x.scan(&t, range, false, usize::MAX).unwrap();
            out.trees
                .insert(name.to_string(), rows.into_iter().collect());
        }
        x.commit().unwrap();
        out
    }

    /// Rows in all trees.
    pub fn row_count(&self) -> usize {
        self.trees.values().map(|r| r.len()).sum()
    }

    /// Sets `key` to `value` in `tree`; returns the old value.
    pub fn put(&mut self, tree: &str, key: &[u8], value: &[u8]) -> Option<Vec<u8>> {
        self.tree_mut(tree).insert(key.to_vec(), value.to_vec())
    }

    /// Deletes `key` from `tree`; returns the old value.
    pub fn delete(&mut self, tree: &str, key: &[u8]) -> Option<Vec<u8>> {
        self.tree_mut(tree).remove(key)
    }

    pub fn get(&self, tree: &str, key: &[u8]) -> Option<&Vec<u8>> {
        self.trees[tree].get(key)
    }

    /// What `Txn::scan` must return: the pairs of `tree` with keys in `range` (empty if the range
    /// is inverted), in key order (descending if `reverse`), at most `limit` of them.
    pub fn scan(
        &self,
        tree: &str,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        limit: usize,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let empty = match range {
            (
                Bound::Included(lo) | Bound::Excluded(lo),
                Bound::Included(hi) | Bound::Excluded(hi),
            ) => {
                lo > hi || (lo == hi && !matches!(range, (Bound::Included(_), Bound::Included(_))))
            }
            _ => false,
        };
        if empty {
            return Vec::new();
        }
        let it = self.trees[tree].range::<[u8], _>(range);
        let pair = |(k, v): (&Vec<u8>, &Vec<u8>)| (k.clone(), v.clone());
        if reverse {
            it.rev().take(limit).map(pair).collect()
        } else {
            it.take(limit).map(pair).collect()
        }
    }

    /// Asserts that `db` holds exactly this state: every tree of `db` is one of the oracle's, its
    /// forward and reverse scans give the oracle's rows, and `verify` counts as many keys.
    pub fn check(&self, db: &Db, what: &str) {
        let mut x = db.begin().unwrap();
        for (name, rows) in &self.trees {
            let t = db
                .open_tree(name)
                .unwrap_or_else(|e| panic!("{what}: tree {name}: {e}"));
            let all = (Bound::Unbounded, Bound::Unbounded);
            let got = x.scan(&t, all, false, usize::MAX).unwrap();
            let want: Vec<(Vec<u8>, Vec<u8>)> =
                rows.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            if got != want {
                let one = |rows: Rows| Oracle {
                    trees: [(name.clone(), rows)].into(),
                };
                let diff = one(rows.clone()).diff(&one(got.into_iter().collect()));
                panic!(
                    "{what}: a scan of tree {name} is not its committed rows (keys out of order \
                     or repeated if no difference is listed):\n{}",
                    diff.join("\n")
                );
            }
            let rev = x.scan(&t, all, true, usize::MAX).unwrap();
            assert!(
                rev.iter().rev().eq(got.iter()),
                "{what}: reverse scan of {name}"
            );
        }
        x.commit().unwrap();
        self.check_point_reads(db, what);
        let counts = db
            .verify()
            .unwrap_or_else(|e| panic!("{what}: verify: {e}"));
        for (name, n) in counts {
            let want = self.trees.get(&name).map(|r| r.len());
            assert_eq!(Some(n as usize), want, "{what}: verify count of {name}");
        }
    }

    /// Point reads outside any transaction (`Db::get_into`, one buffer for all, and `Db::get`)
    /// of up to 512 of each tree's keys, spread over it, and of a key after each: the values
    /// the oracle holds (with nothing else running, a missing key also leaves the buffer as it
    /// was).
    fn check_point_reads(&self, db: &Db, what: &str) {
        let mut buf = b"not a value of the oracle".to_vec();
        for (name, rows) in &self.trees {
            let t = db.open_tree(name).unwrap();
            let step = rows.len().div_ceil(512).max(1);
            for (k, v) in rows.iter().step_by(step) {
                assert!(
                    db.get_into(&t, k, &mut buf).unwrap(),
                    "{what}: get_into of a key of {name}"
                );
                assert!(
                    buf == *v,
                    "{what}: get_into of a key of {name}: another value"
                );
                let mut after = k.clone();
                after.push(0);
                if !rows.contains_key(&after) {
                    assert!(!db.get_into(&t, &after, &mut buf).unwrap());
                    assert!(buf == *v, "{what}: a missing key changed the buffer");
                    assert_eq!(db.get(&t, &after).unwrap(), None, "{what}: {name}");
                }
            }
        }
    }

    /// Asserts that `got` (say, read back from a database) is this state; the message lists the
    /// differences.
    pub fn assert_same(&self, got: &Oracle, what: &str) {
        assert!(
            got == self,
            "{what}: the rows differ from the committed rows:\n{}",
            self.diff(got).join("\n")
        );
    }

    /// How `got` differs from this state: one line per lost, wrong or extra key (at most 20).
    pub fn diff(&self, got: &Oracle) -> Vec<String> {
        let show = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
        let empty = Rows::new();
        let mut out = Vec::new();
        let names: std::collections::BTreeSet<&String> =
            self.trees.keys().chain(got.trees.keys()).collect();
        for name in names {
            let want = self.trees.get(name).unwrap_or(&empty);
            let have = got.trees.get(name).unwrap_or(&empty);
            for (k, v) in want {
                match have.get(k) {
                    None => out.push(format!("  tree {name}: lost {}", show(k))),
                    Some(g) if g != v => out.push(format!("  tree {name}: wrong {}", show(k))),
                    _ => {}
                }
            }
            for k in have.keys().filter(|k| !want.contains_key(*k)) {
                out.push(format!("  tree {name}: extra {}", show(k)));
            }
        }
        if out.len() > 20 {
            let n = out.len();
            out.truncate(20);
            out.push(format!("  ... {} more", n - 20));
        }
        out
    }

    fn tree_mut(&mut self, tree: &str) -> &mut Rows {
        self.trees
            .get_mut(tree)
            .unwrap_or_else(|| panic!("the oracle has no tree {tree}"))
    }
}

type Dev = Arc<Mutex<FaultDevice<MemDevice>>>;

/// State shared by the two linked devices.
struct Link {
    /// Commands sent to either device.
    commands: AtomicU64,
    /// Global command number at which power is cut (u64::MAX: none).
    cut_at: AtomicU64,
    handles: [FaultHandle; 2],
}

/// One of the two devices of a [`LinkedRig`] as the engine sees it.
pub struct Linked {
    dev: Dev,
    me: usize,
    link: Arc<Link>,
}

impl Linked {
    /// Counts the command; at the armed number cuts power: this device at its next command (so
    /// an interrupted write may tear), the other one now. Once either is off, both are.
    fn gate(&self) {
        let l = &self.link;
        let n = l.commands.fetch_add(1, Ordering::SeqCst) + 1;
        let other = &l.handles[1 - self.me];
        let mine = &l.handles[self.me];
        if n >= l.cut_at.load(Ordering::SeqCst) {
            l.cut_at.store(u64::MAX, Ordering::SeqCst);
            other.cut_power_now();
            mine.cut_power_at(Some(mine.commands() + 1));
            return;
        }
        if other.is_powered_off() && !mine.is_powered_off() {
            mine.cut_power_now();
        }
        if mine.is_powered_off() && !other.is_powered_off() {
            other.cut_power_now();
        }
    }
}

impl BlockDevice for Linked {
    fn capacity_bytes(&self) -> u64 {
        self.dev.lock().unwrap().capacity_bytes()
    }
    fn block_bytes(&self) -> u32 {
        self.dev.lock().unwrap().block_bytes()
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        self.gate();
        self.dev.lock().unwrap().read_at(offset, buf)
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.gate();
        self.dev.lock().unwrap().write_at(offset, data)
    }
    fn flush(&mut self) -> Result<(), DeviceError> {
        self.gate();
        self.dev.lock().unwrap().flush()
    }
    fn stats(&self) -> DeviceStats {
        self.dev.lock().unwrap().stats()
    }
}

/// A crash rig with *separate* data and log devices (so a log flush does not make data writes
/// durable, as with two real devices), each a `FaultDevice` over a `MemDevice` with small blocks
/// (so a page write can tear), and one global command counter that cuts power on both devices
/// at once.
pub struct LinkedRig {
    data: Dev,
    log: Dev,
    link: Arc<Link>,
}

impl LinkedRig {
    /// `block` is the device block size (512 lets a 4 KiB page tear).
    pub fn new(seed: u64, data_bytes: u64, log_bytes: u64, block: u32) -> LinkedRig {
        let cfg = |s| FaultConfig {
            seed: s,
            torn_writes: true,
            lose_unflushed: true,
            ..FaultConfig::default()
        };
        let data = FaultDevice::new(MemDevice::new(data_bytes, block), cfg(seed));
        let log = FaultDevice::new(MemDevice::new(log_bytes, block), cfg(seed ^ 0x5555));
        let handles = [data.handle(), log.handle()];
        LinkedRig {
            data: Arc::new(Mutex::new(data)),
            log: Arc::new(Mutex::new(log)),
            link: Arc::new(Link {
                commands: AtomicU64::new(0),
                cut_at: AtomicU64::new(u64::MAX),
                handles,
            }),
        }
    }

    pub fn devices(&self) -> Devices {
        Devices::new(
            Box::new(Linked {
                dev: self.data.clone(),
                me: 0,
                link: self.link.clone(),
            }),
            Box::new(Linked {
                dev: self.log.clone(),
                me: 1,
                link: self.link.clone(),
            }),
        )
    }

    /// Commands sent to both devices so far.
    pub fn commands(&self) -> u64 {
        self.link.commands.load(Ordering::SeqCst)
    }

    /// Cuts power `n` commands from now (n >= 1).
    pub fn cut_after(&self, n: u64) {
        self.link
            .cut_at
            .store(self.commands() + n, Ordering::SeqCst);
    }

    pub fn disarm(&self) {
        self.link.cut_at.store(u64::MAX, Ordering::SeqCst);
    }

    pub fn cut_now(&self) {
        self.link.handles[0].cut_power_now();
        self.link.handles[1].cut_power_now();
    }

    pub fn is_powered_off(&self) -> bool {
        self.link.handles[0].is_powered_off() || self.link.handles[1].is_powered_off()
    }

    /// Loses / tears unflushed writes on both devices and powers them back on.
    pub fn crash(&self) -> (CrashReport, CrashReport) {
        self.disarm();
        self.cut_now();
        let d = self.data.lock().unwrap().crash();
        let l = self.log.lock().unwrap().crash();
        (d, l)
    }

    /// The data device's current bytes (what is durable after a crash, or after a close).
    #[allow(dead_code)] // for tests that inspect the device
    pub fn data_image(&self) -> Vec<u8> {
        self.data.lock().unwrap().inner().bytes().to_vec()
    }
}

/// A data device whose writes (or reads, if `reads`) wait, while the gate is shut, until it
/// opens.
pub struct Gated {
    pub inner: Box<dyn wafer_engine::device::BlockDevice>,
    pub gate: std::sync::Arc<Gate>,
    pub reads: bool,
}

#[derive(Default)]
pub struct Gate {
    shut: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
    /// Set once an I/O waited at the shut gate.
    pub waiting: std::sync::atomic::AtomicBool,
    /// The next read returns its bytes with one flipped.
    pub corrupt_next_read: std::sync::atomic::AtomicBool,
    /// Writes fail (a device error) while this is set.
    pub fail_writes: std::sync::atomic::AtomicBool,
    /// While shut, only the first I/O to arrive waits; the others pass.
    pub hold_one: std::sync::atomic::AtomicBool,
    /// If set, only writes whose bytes contain this wait at the shut gate.
    pub writes_holding: std::sync::Mutex<Option<Vec<u8>>>,
    /// Flushes (and no write) wait at the shut gate.
    pub flushes_only: std::sync::atomic::AtomicBool,
}

impl Gate {
    /// Shuts (true) or opens the gate.
    pub fn set(&self, shut: bool) {
        *self.shut.lock().unwrap() = shut;
        self.opened.notify_all();
    }

    /// Flips a byte of `buf` if a corrupt read was asked for.
    fn after_read(&self, buf: &mut [u8]) {
        if self
            .corrupt_next_read
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            buf[buf.len() / 2] ^= 0x5A;
        }
    }

    fn pass(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        let mut shut = self.shut.lock().unwrap();
        if *shut && self.hold_one.load(SeqCst) && self.waiting.load(SeqCst) {
            return;
        }
        while *shut {
            self.waiting
                .store(true, std::sync::atomic::Ordering::SeqCst);
            shut = self.opened.wait(shut).unwrap();
        }
    }
}

/// In-memory devices (32 MiB of data, 8 MiB of log, 4 KiB blocks) whose log device's I/O
/// passes through `gate`.
pub fn gated_log_in_memory(gate: &std::sync::Arc<Gate>) -> wafer_engine::Devices {
    use wafer_engine::device::MemDevice;
    wafer_engine::Devices::new(
        Box::new(MemDevice::new(32 << 20, 4096)),
        Box::new(Gated {
            inner: Box::new(MemDevice::new(8 << 20, 4096)),
            gate: gate.clone(),
            reads: false,
        }),
    )
}

impl wafer_engine::device::BlockDevice for Gated {
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn block_bytes(&self) -> u32 {
        self.inner.block_bytes()
    }
    fn read_at(
        &mut self,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), wafer_engine::device::DeviceError> {
        if self.reads {
            self.gate.pass();
        }
        self.inner.read_at(offset, buf)?;
        self.gate.after_read(buf);
        Ok(())
    }
    fn write_at(
        &mut self,
        offset: u64,
        data: &[u8],
    ) -> Result<(), wafer_engine::device::DeviceError> {
        let held = match &*self.gate.writes_holding.lock().unwrap() {
            Some(pat) => data.windows(pat.len()).any(|w| w == &pat[..]),
            None => true,
        };
        let flushes_only = self
            .gate
            .flushes_only
            .load(std::sync::atomic::Ordering::SeqCst);
        if !self.reads && held && !flushes_only {
            self.gate.pass();
        }
        if self
            .gate
            .fail_writes
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return Err(wafer_engine::device::DeviceError::Io(
                "write refused by the test".into(),
            ));
        }
        self.inner.write_at(offset, data)
    }
    fn flush(&mut self) -> Result<(), wafer_engine::device::DeviceError> {
        if self
            .gate
            .flushes_only
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            self.gate.pass();
        }
        self.inner.flush()
    }
    fn trim(&mut self, offset: u64, len: u64) -> Result<(), wafer_engine::device::DeviceError> {
        self.inner.trim(offset, len)
    }
    fn capabilities(&self) -> wafer_engine::device::Capabilities {
        self.inner.capabilities()
    }
    fn stats(&self) -> wafer_engine::device::DeviceStats {
        self.inner.stats()
    }
    fn shared_reader(&self) -> Option<std::sync::Arc<dyn wafer_engine::device::SharedRead>> {
        let inner = self.inner.shared_reader()?;
        if !self.reads {
            return Some(inner);
        }
        Some(std::sync::Arc::new(GatedReader {
            inner,
            gate: self.gate.clone(),
        }))
    }
}

/// A [`Gated`] device's shared reader, its reads through the gate.
struct GatedReader {
    inner: std::sync::Arc<dyn wafer_engine::device::SharedRead>,
    gate: std::sync::Arc<Gate>,
}

impl wafer_engine::device::SharedRead for GatedReader {
    fn read_at(
        &self,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), wafer_engine::device::DeviceError> {
        self.gate.pass();
        self.inner.read_at(offset, buf)?;
        self.gate.after_read(buf);
        Ok(())
    }
}
