//! The engine's public-API tests, one test binary (each file under `tests/` is its own binary and
//! link step). One module per subject; shared devices, rigs, generators and the committed-state
//! oracle are in `support`.

mod api;
mod checkpoint_end;
mod checkpoint_policy;
mod crash;
mod crash_points;
mod crash_sequential;
mod devices;
mod durability;
mod file_remap;
mod flushless;
mod identity;
mod input;
mod isolation;
mod journal;
mod latching;
mod load;
mod log_space;
mod log_writes;
mod misses;
mod model;
mod out_of_place;
mod page_allocation;
mod ranges;
mod reopen;
mod rollbacks_and_merges;
mod scans;
mod snapshot;
mod splits_beside;
mod stress;
mod support;
mod waf;
mod write_ahead;
