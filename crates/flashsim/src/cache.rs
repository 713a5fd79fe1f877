//! The device's volatile write cache: whole mapping units waiting to be programmed, destaged
//! oldest first when full, on flush, or (with power-loss protection) on a power cut.

use std::collections::{HashMap, VecDeque};

pub(crate) struct CachedUnit {
    pub pid: u16,
    pub data: Option<Box<[u8]>>,
    /// Data the host had already written once (a rewrite or an internal copy): its program
    /// counts in `redundant_write_bytes`.
    pub redundant: bool,
}

pub(crate) struct WriteCache {
    cap_units: usize,
    units: HashMap<u32, CachedUnit>,
    order: VecDeque<u32>,
}

impl WriteCache {
    pub fn new(cap_units: usize) -> Self {
        WriteCache {
            cap_units,
            units: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    #[inline]
    pub fn enabled(&self) -> bool {
        self.cap_units > 0
    }

    pub fn len(&self) -> usize {
        self.units.len()
    }

    pub fn get(&self, lu: u32) -> Option<&CachedUnit> {
        if self.units.is_empty() {
            return None;
        }
        self.units.get(&lu)
    }

    /// Inserts or overwrites (coalesces) a unit. Returns true if it was already cached.
    pub fn put(&mut self, lu: u32, unit: CachedUnit) -> bool {
        match self.units.insert(lu, unit) {
            Some(_) => true,
            None => {
                self.order.push_back(lu);
                false
            }
        }
    }

    pub fn over_capacity(&self) -> bool {
        self.units.len() > self.cap_units
    }

    /// Removes the oldest cached unit.
    pub fn pop_oldest(&mut self) -> Option<(u32, CachedUnit)> {
        while let Some(lu) = self.order.pop_front() {
            if let Some(u) = self.units.remove(&lu) {
                return Some((lu, u));
            }
        }
        None
    }

    pub fn remove(&mut self, lu: u32) -> Option<CachedUnit> {
        if self.units.is_empty() {
            return None;
        }
        self.units.remove(&lu)
    }

    pub fn clear(&mut self) -> usize {
        let n = self.units.len();
        self.units.clear();
        self.order.clear();
        n
    }
}
