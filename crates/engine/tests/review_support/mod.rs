//! Helpers of the review tests: a crash rig with *separate* data and log devices (so a log flush
//! does not make data writes durable, as with two real devices), each a `FaultDevice` over a
//! `MemDevice` with small blocks (so a page write can tear), and one global command counter that
//! cuts power on both devices at once.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use wafer_engine::device::{
    BlockDevice, CrashReport, DeviceError, DeviceStats, FaultConfig, FaultDevice, FaultHandle,
    MemDevice,
};
use wafer_engine::Devices;

type Dev = Arc<Mutex<FaultDevice<MemDevice>>>;

/// State shared by the two linked devices.
struct Link {
    /// Commands sent to either device.
    commands: AtomicU64,
    /// Global command number at which power is cut (u64::MAX: none).
    cut_at: AtomicU64,
    handles: [FaultHandle; 2],
}

/// One of the two devices as the engine sees it.
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

/// Separate data and log devices with a common power switch.
pub struct Rig {
    data: Dev,
    log: Dev,
    link: Arc<Link>,
}

impl Rig {
    /// `block` is the device block size (512 lets a 4 KiB page tear).
    pub fn new(seed: u64, data_bytes: u64, log_bytes: u64, block: u32) -> Rig {
        let cfg = |s| FaultConfig {
            seed: s,
            torn_writes: true,
            lose_unflushed: true,
            ..FaultConfig::default()
        };
        let data = FaultDevice::new(MemDevice::new(data_bytes, block), cfg(seed));
        let log = FaultDevice::new(MemDevice::new(log_bytes, block), cfg(seed ^ 0x5555));
        let handles = [data.handle(), log.handle()];
        Rig {
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
}

/// Committed state of one tree: key -> value.
pub type Map = BTreeMap<Vec<u8>, Vec<u8>>;

impl Rig {
    /// The data device's current bytes (what is durable after a crash, or after a close).
    pub fn data_image(&self) -> Vec<u8> {
        self.data.lock().unwrap().inner().bytes().to_vec()
    }
}

/// Page accounting of a data device image (in-place layout, doublewrite area of `dw_pages`):
/// every page id below the meta page's next-page id must be exactly one of: the meta page, a
/// page reachable from a tree (node or overflow page), or a page on the free list. Returns a
/// description of every violation (leaks, double use, bad free pages).
pub fn page_accounting(image: &[u8], page_size: usize, dw_pages: u64) -> Vec<String> {
    use std::collections::HashMap;
    use wafer_engine::btree::{self, node, overflow, LeafValue, NodeKind};
    use wafer_engine::page::{self, PageId, PageType};

    struct Img<'a> {
        image: &'a [u8],
        ps: usize,
        dw: u64,
    }
    impl btree::PageStore for Img<'_> {
        fn page_size(&self) -> usize {
            self.ps
        }
        fn read_page<R>(
            &mut self,
            pid: PageId,
            f: impl FnOnce(&[u8]) -> R,
        ) -> wafer_engine::Result<R> {
            let at = ((1 + self.dw + pid) as usize) * self.ps;
            let p = &self.image[at..at + self.ps];
            page::verify(p, Some(pid))?;
            Ok(f(p))
        }
        fn write_page<R>(
            &mut self,
            _: PageId,
            _: impl FnOnce(&mut [u8]) -> R,
        ) -> wafer_engine::Result<R> {
            unreachable!("read only")
        }
        fn alloc_page(&mut self, _: PageType) -> wafer_engine::Result<PageId> {
            unreachable!("read only")
        }
        fn free_page(&mut self, _: PageId) -> wafer_engine::Result<()> {
            unreachable!("read only")
        }
    }
    let mut s = Img {
        image,
        ps: page_size,
        dw: dw_pages,
    };
    use btree::PageStore;
    let mut bad = Vec::new();
    let meta = s.read_page(0, |p| p.to_vec()).expect("meta page");
    let next = wafer_engine::meta::next_pid(&meta);
    let trees = wafer_engine::meta::trees(&meta).expect("catalog");
    let mut owner: HashMap<PageId, String> = HashMap::new();
    owner.insert(0, "meta".into());
    let mut claim = |pid: PageId, who: String, bad: &mut Vec<String>| {
        if pid >= next {
            bad.push(format!("page {pid} ({who}) is beyond next_pid {next}"));
        }
        if let Some(o) = owner.insert(pid, who.clone()) {
            bad.push(format!("page {pid} used twice: {o} and {who}"));
        }
    };
    for t in &trees {
        let mut stack = vec![t.root];
        while let Some(pid) = stack.pop() {
            claim(pid, format!("tree {} node", t.name), &mut bad);
            let buf = match s.read_page(pid, |p| p.to_vec()) {
                Ok(b) => b,
                Err(e) => {
                    bad.push(format!("tree {} page {pid}: {e}", t.name));
                    continue;
                }
            };
            match node::kind(&buf) {
                Ok(NodeKind::Internal) => {
                    let (left, cells) = node::internal_entries(&buf).unwrap();
                    stack.push(left);
                    stack.extend(cells.iter().map(|c| c.1));
                }
                Ok(NodeKind::Leaf) => {
                    for (_, v) in node::leaf_entries(&buf).unwrap() {
                        if let LeafValue::Overflow { total_len, first } = v {
                            match overflow::chain_pages(&mut s, first, total_len) {
                                Ok(ps) => {
                                    for op in ps {
                                        claim(op, format!("tree {} overflow", t.name), &mut bad)
                                    }
                                }
                                Err(e) => bad.push(format!("overflow chain at {first}: {e}")),
                            }
                        }
                    }
                }
                Err(e) => bad.push(format!("page {pid}: {e}")),
            }
        }
    }
    let mut f = wafer_engine::meta::free_head(&meta);
    let mut steps = 0;
    while f != 0 {
        claim(f, "free list".into(), &mut bad);
        let p = match s.read_page(f, |p| p.to_vec()) {
            Ok(p) => p,
            Err(e) => {
                bad.push(format!("free page {f}: {e}"));
                break;
            }
        };
        if page::page_type(&p) != Some(PageType::Free) {
            bad.push(format!(
                "free-list page {f} has type {:?}",
                page::page_type(&p)
            ));
        }
        f = wafer_engine::meta::free_next(&p);
        steps += 1;
        if steps > next {
            bad.push("free list has a cycle".into());
            break;
        }
    }
    for pid in 0..next {
        if !owner.contains_key(&pid) {
            bad.push(format!("page {pid} leaked (neither in a tree nor free)"));
        }
    }
    bad
}
