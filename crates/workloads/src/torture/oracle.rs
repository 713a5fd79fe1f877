//! The oracle of the torture trials: the committed state of every tree as the trial expects it,
//! the write set of a transaction in flight, what a read inside a transaction must return, and
//! how a database read back after a crash compares with the committed state.

use std::collections::BTreeMap;
use std::ops::Bound;
use wafer_engine::device::DeviceError;
use wafer_engine::{Db, Error};

/// The rows of one tree.
pub type Rows = BTreeMap<Vec<u8>, Vec<u8>>;

/// Tree name -> rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct State {
    /// The trees, by name.
    pub trees: BTreeMap<String, Rows>,
}

/// The writes of one transaction: (tree, key) -> new value (None: deleted).
pub type WriteSet = BTreeMap<(String, Vec<u8>), Option<Vec<u8>>>;

impl State {
    /// Empty trees `names`.
    pub fn new(names: &[&str]) -> State {
        State {
            trees: names.iter().map(|n| (n.to_string(), Rows::new())).collect(),
        }
    }

    /// This state with `writes` applied.
    pub fn apply(&mut self, writes: &WriteSet) {
        for ((tree, key), v) in writes {
            let rows = self.trees.entry(tree.clone()).or_default();
            match v {
                Some(v) => rows.insert(key.clone(), v.clone()),
                None => rows.remove(key),
            };
        }
    }

    /// What `get` of `key` in `tree` returns inside a transaction with write set `own`.
    pub fn get(&self, own: &WriteSet, tree: &str, key: &[u8]) -> Option<Vec<u8>> {
        match own.get(&(tree.to_string(), key.to_vec())) {
            Some(v) => v.clone(),
            None => self.trees.get(tree).and_then(|r| r.get(key)).cloned(),
        }
    }

    /// What `scan(range, reverse, limit)` returns inside a transaction with write set `own`.
    pub fn scan(
        &self,
        own: &WriteSet,
        tree: &str,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        limit: usize,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut rows = self.trees.get(tree).cloned().unwrap_or_default();
        for ((t, k), v) in own {
            if t == tree {
                match v {
                    Some(v) => rows.insert(k.clone(), v.clone()),
                    None => rows.remove(k),
                };
            }
        }
        if inverted(range) {
            return Vec::new();
        }
        let it = rows
            .range::<[u8], _>(range)
            .map(|(k, v)| (k.clone(), v.clone()));
        if reverse {
            it.rev().take(limit).collect()
        } else {
            it.take(limit).collect()
        }
    }

    /// Reads every tree of `db` (whatever its catalog holds) in one transaction, scanning each
    /// forward and backward; an engine error is returned as is, a reverse scan that disagrees
    /// with the forward one as `Err(text)` in the outer result.
    pub fn read(db: &Db) -> Result<Result<State, Error>, String> {
        let mut out = State::default();
        let mut x = match db.begin() {
            Ok(x) => x,
            Err(e) => return Ok(Err(e)),
        };
        for name in db.tree_names() {
            let t = match db.open_tree(&name) {
                Ok(t) => t,
                Err(e) => return Ok(Err(e)),
            };
            let all = (Bound::Unbounded, Bound::Unbounded);
            let fwd = match x.scan(&t, all, false, usize::MAX) {
                Ok(r) => r,
                Err(e) => return Ok(Err(e)),
            };
            let rev = match x.scan(&t, all, true, usize::MAX) {
                Ok(r) => r,
                Err(e) => return Ok(Err(e)),
            };
            if !rev.iter().rev().eq(fwd.iter()) {
                return Err(format!(
                    "tree {name}: reverse scan differs from forward scan"
                ));
            }
            let n = fwd.len();
            let rows: Rows = fwd.into_iter().collect();
            if rows.len() != n {
                return Err(format!("tree {name}: a scan returned a key twice"));
            }
            out.trees.insert(name, rows);
        }
        if let Err(e) = x.commit() {
            return Ok(Err(e));
        }
        Ok(Ok(out))
    }

    /// How `got` differs from this state: (lost or wrong committed rows, extra rows), with up to
    /// five example lines.
    pub fn diff(&self, got: &State) -> (u64, u64, Vec<String>) {
        let show = |k: &[u8]| String::from_utf8_lossy(&k[..k.len().min(24)]).into_owned();
        let empty = Rows::new();
        let (mut lost, mut extra, mut lines) = (0u64, 0u64, Vec::new());
        let names: std::collections::BTreeSet<&String> =
            self.trees.keys().chain(got.trees.keys()).collect();
        for name in names {
            let want = self.trees.get(name).unwrap_or(&empty);
            let have = got.trees.get(name).unwrap_or(&empty);
            for (k, v) in want {
                let what = match have.get(k) {
                    None => "lost",
                    Some(g) if g != v => "wrong",
                    _ => continue,
                };
                lost += 1;
                if lines.len() < 5 {
                    lines.push(format!("{name}/{} {what}", show(k)));
                }
            }
            for k in have.keys().filter(|k| !want.contains_key(*k)) {
                extra += 1;
                if lines.len() < 5 {
                    lines.push(format!("{name}/{} extra", show(k)));
                }
            }
        }
        (lost, extra, lines)
    }
}

fn inverted(range: (Bound<&[u8]>, Bound<&[u8]>)) -> bool {
    match range {
        (Bound::Included(lo) | Bound::Excluded(lo), Bound::Included(hi) | Bound::Excluded(hi)) => {
            lo > hi || (lo == hi && !matches!(range, (Bound::Included(_), Bound::Included(_))))
        }
        _ => false,
    }
}

/// The class of an engine error: its variant name (device errors with the device variant).
pub fn error_class(e: &Error) -> String {
    let s = match e {
        Error::Device(d) => {
            return format!(
                "Device/{}",
                match d {
                    DeviceError::Io(_) => "Io",
                    DeviceError::OutOfRange { .. } => "OutOfRange",
                    DeviceError::Unaligned { .. } => "Unaligned",
                    DeviceError::WrongSize { .. } => "WrongSize",
                    DeviceError::PowerCut => "PowerCut",
                    DeviceError::Unsupported(_) => "Unsupported",
                    DeviceError::Sim(_) => "Sim",
                    DeviceError::RemapOverlap { .. } => "RemapOverlap",
                    DeviceError::Locked { .. } => "Locked",
                }
            )
        }
        Error::CorruptPage { .. } => "CorruptPage",
        Error::CorruptLog { .. } => "CorruptLog",
        Error::NotADatabase(_) => "NotADatabase",
        Error::Mismatch(_) => "Mismatch",
        Error::CorruptMetadata(_) => "CorruptMetadata",
        Error::Config(_) => "Config",
        Error::Conflict { .. } => "Conflict",
        Error::TxnNotActive => "TxnNotActive",
        Error::NoSuchTree(_) => "NoSuchTree",
        Error::TreeExists(_) => "TreeExists",
        Error::KeyTooLong { .. } => "KeyTooLong",
        Error::ValueTooLong { .. } => "ValueTooLong",
        Error::Full(_) => "Full",
        Error::PoolExhausted(_) => "PoolExhausted",
        Error::LogFull(_) => "LogFull",
        Error::TableFull(_) => "TableFull",
        Error::Poisoned(_) => "Poisoned",
        Error::InvalidArgument(_) => "InvalidArgument",
        Error::VersionStoreFull(_) => "VersionStoreFull",
        Error::VersionCorrupt { .. } => "VersionCorrupt",
    };
    s.to_string()
}

/// Whether `e` means the handle is unusable (power is gone, or an I/O error poisoned it): the
/// trial moves on to the crash and the reopen.
pub fn is_fatal(e: &Error) -> bool {
    matches!(e, Error::Device(_) | Error::Poisoned(_))
}
