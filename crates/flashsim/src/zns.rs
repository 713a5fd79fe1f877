//! Zoned Namespace mode: zones of whole superblocks written strictly sequentially, zone append,
//! open/close/finish/reset, open and active zone limits. The device never garbage-collects, so its
//! SSD WAF is exactly 1.0: every programmed byte is a host byte.

use crate::config::ZnsConfig;
use crate::error::SimError;
use crate::ssd::{EuState, Ssd, NIL};
use serde::{Deserialize, Serialize};

/// State of a zone (NVMe ZNS zone states).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZoneState {
    Empty,
    ImplicitOpen,
    ExplicitOpen,
    Closed,
    Full,
}

impl ZoneState {
    fn is_open(self) -> bool {
        matches!(self, ZoneState::ImplicitOpen | ZoneState::ExplicitOpen)
    }
    fn is_active(self) -> bool {
        self.is_open() || self == ZoneState::Closed
    }
}

/// A zone management command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneAction {
    Open,
    Close,
    Finish,
    Reset,
}

/// One entry of a zone report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZoneInfo {
    pub zone: u32,
    pub start_bytes: u64,
    pub capacity_bytes: u64,
    /// Absolute byte address of the write pointer.
    pub write_pointer_bytes: u64,
    pub state: ZoneState,
}

pub(crate) struct Zone {
    state: ZoneState,
    /// Units written (the write pointer relative to the zone start).
    wp: u32,
    eus: Vec<u32>,
    opened_seq: u64,
}

pub(crate) struct Zones {
    zones: Vec<Zone>,
    zone_units: u32,
    zone_eus: u32,
    max_open: u32,
    max_active: u32,
    open: u32,
    active: u32,
    seq: u64,
}

impl Zones {
    pub fn new(cfg: &ZnsConfig, erase_units: u32, eu_units: u32) -> Zones {
        let n = erase_units / cfg.zone_eus;
        Zones {
            zones: (0..n)
                .map(|_| Zone {
                    state: ZoneState::Empty,
                    wp: 0,
                    eus: Vec::new(),
                    opened_seq: 0,
                })
                .collect(),
            zone_units: cfg.zone_eus * eu_units,
            zone_eus: cfg.zone_eus,
            max_open: cfg.max_open_zones,
            max_active: cfg.max_active_zones,
            open: 0,
            active: 0,
            seq: 0,
        }
    }
}

impl Ssd {
    fn zones_ref(&self) -> Result<&Zones, SimError> {
        self.zones.as_ref().ok_or(SimError::Unsupported(
            "zone commands on a conventional device",
        ))
    }

    /// Number of zones (0 on a conventional device).
    pub fn zone_count(&self) -> u32 {
        self.zones.as_ref().map_or(0, |z| z.zones.len() as u32)
    }

    /// Zone size (= capacity) in bytes (0 on a conventional device).
    pub fn zone_size_bytes(&self) -> u64 {
        self.zones
            .as_ref()
            .map_or(0, |z| z.zone_units as u64 * self.unit as u64)
    }

    /// Report of every zone.
    pub fn zone_report(&self) -> Vec<ZoneInfo> {
        (0..self.zone_count())
            .filter_map(|z| self.zone_info(z))
            .collect()
    }

    /// Report of one zone (None on a conventional device or for a zone past the last).
    pub fn zone_info(&self, zone: u32) -> Option<ZoneInfo> {
        let zs = self.zones.as_ref()?;
        let z = zs.zones.get(zone as usize)?;
        let unit = self.unit as u64;
        let zbytes = zs.zone_units as u64 * unit;
        Some(ZoneInfo {
            zone,
            start_bytes: zone as u64 * zbytes,
            capacity_bytes: zbytes,
            write_pointer_bytes: zone as u64 * zbytes + z.wp as u64 * unit,
            state: z.state,
        })
    }

    fn check_zone(&self, zone: u32) -> Result<(), SimError> {
        let zones = self.zones_ref()?.zones.len() as u32;
        if zone >= zones {
            return Err(SimError::NoSuchZone { zone, zones });
        }
        Ok(())
    }

    /// Makes room for one more open zone by closing the oldest implicitly opened one.
    fn make_open_slot(&mut self) -> Result<(), SimError> {
        let zs = self.zones.as_mut().expect("zoned");
        if zs.open < zs.max_open {
            return Ok(());
        }
        let victim = zs
            .zones
            .iter()
            .enumerate()
            .filter(|(_, z)| z.state == ZoneState::ImplicitOpen)
            .min_by_key(|(_, z)| z.opened_seq)
            .map(|(i, _)| i);
        match victim {
            Some(i) => {
                zs.zones[i].state = ZoneState::Closed;
                zs.open -= 1;
                Ok(())
            }
            None => Err(SimError::TooManyOpenZones { limit: zs.max_open }),
        }
    }

    /// Transitions a zone to an open state, allocating its erase units if it was empty.
    fn open_zone(&mut self, zone: u32, explicit: bool) -> Result<(), SimError> {
        let state = self.zones_ref()?.zones[zone as usize].state;
        let target = if explicit {
            ZoneState::ExplicitOpen
        } else {
            ZoneState::ImplicitOpen
        };
        match state {
            ZoneState::ImplicitOpen | ZoneState::ExplicitOpen => {
                if explicit {
                    self.zones.as_mut().expect("zoned").zones[zone as usize].state = target;
                }
                return Ok(());
            }
            ZoneState::Full => return Err(SimError::ZoneFull { zone }),
            ZoneState::Empty => {
                let zs = self.zones.as_ref().expect("zoned");
                if zs.active >= zs.max_active {
                    return Err(SimError::TooManyActiveZones {
                        limit: zs.max_active,
                    });
                }
            }
            ZoneState::Closed => {}
        }
        self.make_open_slot()?;
        if state == ZoneState::Empty {
            let n = self.zones_ref()?.zone_eus;
            let mut eus = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let eu = self.free[0]
                    .pop_front()
                    .ok_or(SimError::NoSpace { lane: 0 })?;
                self.eu_state[eu as usize] = EuState::Open;
                eus.push(eu);
            }
            let zs = self.zones.as_mut().expect("zoned");
            zs.zones[zone as usize].eus = eus;
            zs.active += 1;
        }
        let zs = self.zones.as_mut().expect("zoned");
        zs.seq += 1;
        let z = &mut zs.zones[zone as usize];
        z.state = target;
        z.opened_seq = zs.seq;
        zs.open += 1;
        Ok(())
    }

    fn leave_open(&mut self, zone: u32, to: ZoneState) {
        let zs = self.zones.as_mut().expect("zoned");
        let z = &mut zs.zones[zone as usize];
        if z.state.is_open() {
            zs.open -= 1;
        }
        if z.state.is_active() && !to.is_active() {
            zs.active -= 1;
        }
        z.state = to;
    }

    /// Sequential write into a zone: `offset` must be the zone's write pointer.
    pub(crate) fn zone_write(
        &mut self,
        at: u64,
        offset: u64,
        len: u64,
        data: Option<&[u8]>,
    ) -> Result<u64, SimError> {
        let unit = self.unit as u64;
        if !offset.is_multiple_of(unit) || !len.is_multiple_of(unit) {
            return Err(SimError::Unaligned {
                what: "zone write",
                offset,
                len,
                align: unit,
            });
        }
        self.check_range(offset, len)?;
        let zunits = self.zones_ref()?.zone_units as u64;
        let zone = (offset / unit / zunits) as u32;
        let zstart = zone as u64 * zunits * unit;
        if len == 0 {
            return Ok(at);
        }
        if offset + len > zstart + zunits * unit {
            return Err(SimError::ZoneBoundary { zone });
        }
        let z = &self.zones_ref()?.zones[zone as usize];
        if z.state == ZoneState::Full {
            return Err(SimError::ZoneFull { zone });
        }
        let wp_bytes = zstart + z.wp as u64 * unit;
        if offset != wp_bytes {
            return Err(SimError::NotSequential {
                zone,
                offset,
                write_pointer: wp_bytes,
            });
        }
        self.open_zone(zone, false)?;
        self.touch(at);
        self.counters.host_write_bytes += len;
        self.counters.host_write_cmds += 1;
        self.handle_stats[0].host_write_bytes += len;
        let start = at
            + if self.timing.enabled() {
                self.timing.cfg.command_overhead_ns
            } else {
                0
            };
        let mut done = start;
        let n = (len / unit) as u32;
        for i in 0..n {
            let zs = self.zones.as_mut().expect("zoned");
            let z = &mut zs.zones[zone as usize];
            let off = z.wp;
            z.wp += 1;
            let pu = z.eus[(off / self.eu_units) as usize] * self.eu_units + off % self.eu_units;
            let lu = (offset / unit) as u32 + i;
            debug_assert_eq!(self.map[lu as usize], NIL);
            self.map[lu as usize] = pu;
            self.rev[pu as usize] = lu;
            self.set_valid(pu);
            self.eu_valid[(pu / self.eu_units) as usize] += 1;
            self.mapped_units += 1;
            self.counters.media_write_bytes += unit;
            self.handle_stats[0].media_write_bytes += unit;
            if let Some(d) = data {
                let s = (i as u64 * unit) as usize;
                self.store.write(pu, &d[s..s + unit as usize])?;
            }
            if self.timing.enabled() {
                let die = self.die_of(pu);
                if (off + 1).is_multiple_of(self.upp) {
                    self.timing.program(start, die);
                }
                done = done.max(self.timing.write_ack(start, die));
            }
        }
        if self.zones_ref()?.zones[zone as usize].wp as u64 == zunits {
            self.leave_open(zone, ZoneState::Full);
        }
        if self.timing.enabled() {
            self.write_lat.record(done - at);
        }
        Ok(done)
    }

    /// Zone append: writes `len` bytes at the zone's write pointer and returns the byte address
    /// the data was placed at, with the completion time.
    pub fn zone_append(
        &mut self,
        at: u64,
        zone: u32,
        len: u64,
        data: Option<&[u8]>,
    ) -> Result<(u64, u64), SimError> {
        self.check_zone(zone)?;
        let zs = self.zones_ref()?;
        if zs.zones[zone as usize].state == ZoneState::Full {
            return Err(SimError::ZoneFull { zone });
        }
        let unit = self.unit as u64;
        let addr = (zone as u64 * zs.zone_units as u64 + zs.zones[zone as usize].wp as u64) * unit;
        if let Some(d) = data {
            if d.len() as u64 != len {
                return Err(SimError::BufferSize {
                    expected: len,
                    got: d.len() as u64,
                });
            }
        }
        let done = self.zone_write(at, addr, len, data)?;
        Ok((addr, done))
    }

    /// Zone management: open, close, finish or reset a zone.
    pub fn zone_mgmt(&mut self, at: u64, zone: u32, action: ZoneAction) -> Result<u64, SimError> {
        self.check_zone(zone)?;
        self.touch(at);
        let state = self.zones_ref()?.zones[zone as usize].state;
        let mut done = at;
        match action {
            ZoneAction::Open => self.open_zone(zone, true)?,
            ZoneAction::Close => match state {
                ZoneState::ImplicitOpen | ZoneState::ExplicitOpen => {
                    if self.zones_ref()?.zones[zone as usize].wp == 0 {
                        self.leave_open(zone, ZoneState::Empty);
                        self.release_zone_eus(zone, at);
                    } else {
                        self.leave_open(zone, ZoneState::Closed);
                    }
                }
                ZoneState::Closed => {}
                _ => {
                    return Err(SimError::ZoneState {
                        zone,
                        reason: "only an open zone can be closed",
                    })
                }
            },
            ZoneAction::Finish => match state {
                ZoneState::Full => {}
                ZoneState::Empty => {
                    // Finishing an empty zone needs its resources like any active zone.
                    self.open_zone(zone, false)?;
                    self.leave_open(zone, ZoneState::Full);
                }
                _ => self.leave_open(zone, ZoneState::Full),
            },
            ZoneAction::Reset => {
                if state != ZoneState::Empty {
                    let zunits = self.zones_ref()?.zone_units;
                    let first = zone * zunits;
                    let wp = self.zones_ref()?.zones[zone as usize].wp;
                    for lu in first..first + wp {
                        let pu = self.map[lu as usize];
                        if pu != NIL {
                            self.clear_valid(pu);
                            self.map[lu as usize] = NIL;
                            self.mapped_units -= 1;
                        }
                    }
                    self.leave_open(zone, ZoneState::Empty);
                    self.release_zone_eus(zone, at);
                    self.counters.zone_resets += 1;
                    if self.timing.enabled() {
                        done = self.timing.all_idle_at().max(at);
                    }
                }
                self.zones.as_mut().expect("zoned").zones[zone as usize].wp = 0;
            }
        }
        Ok(done)
    }

    /// Returns a zone's erase units to the free pool; those that were written are erased.
    fn release_zone_eus(&mut self, zone: u32, at: u64) {
        let z = &mut self.zones.as_mut().expect("zoned").zones[zone as usize];
        let written = z.wp;
        let eus = std::mem::take(&mut z.eus);
        for (i, eu) in eus.into_iter().enumerate() {
            if (i as u32) * self.eu_units < written {
                self.erase_eu(eu, at);
            } else {
                self.eu_state[eu as usize] = EuState::Free;
            }
            self.free[0].push_back(eu);
        }
    }
}
