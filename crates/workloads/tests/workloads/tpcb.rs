//! TPC-B on the engine with the log on the disk model or the paper's SSD, in virtual time with
//! group commit: consistent after every run, deterministic, and the log device decides the
//! commit rate.

use wafer_workloads::bench::vtime::LogDevice;
use wafer_workloads::tpcb::{run_vtime, TpcbBenchConfig, TpcbConfig, TpcbSummary};

fn small() -> TpcbConfig {
    TpcbConfig {
        branches: 8,
        tellers_per_branch: 10,
        accounts_per_branch: 500,
        seed: 7,
    }
}

fn run(disk: bool, clients: u32) -> TpcbSummary {
    run_buffered(disk, clients, 0)
}

/// With `buffer_pages` > 0 the flash log acknowledges a write once its controller holds it.
fn run_buffered(disk: bool, clients: u32, buffer_pages: u32) -> TpcbSummary {
    let log = if disk {
        LogDevice::Disk(flashsim::HddConfig::barracuda_7200_10().with_write_cache(0))
    } else {
        let mut c = flashsim::Drive::Mcaqe32g.config(64 << 20, 0.1);
        c.data = flashsim::DataMode::Memory;
        // 0: a forced write waits for its program, as on the paper's drive.
        c.timing.write_buffer_pages_per_die = buffer_pages;
        LogDevice::Ssd(c)
    };
    let cfg = TpcbBenchConfig::new(small(), log, clients, 1500, 400_000);
    run_vtime(&cfg).unwrap()
}

#[test]
fn tpcb_log_on_disk_and_flash() {
    let disk4 = run(true, 4);
    let disk16 = run(true, 16);
    let flash16 = run(false, 16);
    for s in [&disk4, &disk16, &flash16] {
        // run_vtime checks the sums itself; the history has one row per commit.
        assert!(s.check.passed(), "{s:?}");
        assert_eq!(s.check.history_rows, s.txns);
        assert!(s.txns >= 1500);
        assert!(s.cpu_utilization <= 1.0 + 1e-9, "{s:?}");
    }
    // A forced write on the write-through disk waits for the platter: about a revolution
    // (8.3 ms at 7200 rpm) for back-to-back appends.
    assert!(
        (6.0..10.0).contains(&disk16.log_write_ms),
        "{}",
        disk16.log_write_ms
    );
    assert!(flash16.log_write_ms < 2.0, "{}", flash16.log_write_ms);
    // A commit joins only a write that starts after its record exists: the clients a write
    // releases run their next transactions while the next write (of those that waited) is
    // under way, so groups alternate and 4 clients put at most 2 commits in a write on average.
    assert!(
        disk4.txns_per_log_write <= 2.05,
        "{}",
        disk4.txns_per_log_write
    );
    // Group commit: more clients put more commits in each disk write and raise the rate.
    assert!(disk16.txns_per_log_write > disk4.txns_per_log_write);
    assert!(
        disk16.tps > 2.0 * disk4.tps,
        "{} vs {}",
        disk16.tps,
        disk4.tps
    );
    // The flash log commits far faster.
    assert!(
        flash16.tps > 2.0 * disk16.tps,
        "{} vs {}",
        flash16.tps,
        disk16.tps
    );
    // Same seed, same numbers.
    assert_eq!(run(true, 4), disk4);
    // A log write shorter than a transaction's CPU: commits not ready when a write starts wait
    // for a later one that starts when they are (a write at the same instant would find them
    // unready again, for ever).
    let buffered = run_buffered(false, 16, 4);
    assert!(
        buffered.check.passed() && buffered.txns >= 1500,
        "{buffered:?}"
    );
    assert!(buffered.log_write_ms < flash16.log_write_ms, "{buffered:?}");
}
