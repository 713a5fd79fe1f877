#!/usr/bin/env bash
# Off-CPU profile of one `wafer bench wall` run: counts the context switches of its threads by
# where they waited (the log latch, the core latch, a ticket wait, a miss's page read, ...),
# from `perf record -e sched:sched_switch` with DWARF call graphs. Needs perf and a release
# build with debug info (the workspace's release profile keeps it).
#
#   scripts/offcpu.sh target/release/wafer --workloads a --threads 2 --records 1000000 \
#       --buffer-mib 32 --out-of-place
#
# Prints the benchmark's YCSB line, then "count reason" lines, most first. The load phase is
# included (one thread: its waits are device I/O). A `--dir` run uses a fresh temporary
# directory.
set -euo pipefail
bin="$1"
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=()
for a in "$@"; do
    if [ "$a" = "--dir" ]; then
        args+=("--dir" "$work/db")
        skip=1
        continue
    fi
    if [ "${skip:-0}" = 1 ]; then
        skip=0
        continue
    fi
    args+=("$a")
done
perf record -q -o "$work/perf.data" -e sched:sched_switch --call-graph dwarf,16384 -- \
    "$bin" bench wall --seconds 4 "${args[@]}" 2>&1 | grep YCSB || true
perf script -i "$work/perf.data" -F comm,tid,ip,sym 2>/dev/null | awk '
/^[^ \t]/ { s = ""; next }
/^[ \t]+[0-9a-f]+ / { s = s " " $2; next }
/^$/ {
    if (s == "") next
    k = "other (load phase, idle, bookkeeping)"
    if (s ~ /Writers::wait_none/) k = "ticket wait (an exclusive take waits for a page write)"
    else if (s ~ /SharedWal::state|SharedWal::lock/) k = "log latch"
    else if (s ~ /Shared::core_read/) k = "core latch, shared (behind an exclusive holder)"
    else if (s ~ /Shared::core[^_]/) k = "core latch, exclusive"
    else if (s ~ /read_unlocked|read_placed/) k = "page read of a miss"
    else if (s ~ /move_home|journal_checkpoint/) k = "journal checkpoint I/O"
    else if (s ~ /write_log|FlushJob/) k = "log write"
    else if (s ~ /write_batch|write_pages|write_frames/) k = "data page write"
    c[k]++
    s = ""
}
END { for (k in c) print c[k], k }' | sort -rn
