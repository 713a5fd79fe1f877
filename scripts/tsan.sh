#!/usr/bin/env bash
# Runs the engine's tests under ThreadSanitizer (not part of CI: it needs the nightly toolchain
# with rust-src, rebuilds the standard library instrumented, and takes about 15 minutes on two
# cores). Exit code 1 if any test fails or TSan reports anything.
#
#   rustup toolchain install nightly --component rust-src   # once
#   scripts/tsan.sh                 # the engine's unit tests and its integration tests
#   scripts/tsan.sh latching        # only tests whose names contain "latching"
#
# TSan needs every thread-synchronising crate instrumented: -Zbuild-std rebuilds std with the
# flag (so Arc's fence becomes a load TSan understands); crossbeam and the engine are built with
# it anyway. zstd's C code is not instrumented (no threaded test uses compression).
set -euo pipefail
cd "$(dirname "$0")/.."
filter="${1:-}"
target=x86_64-unknown-linux-gnu
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/tsan}"
export RUSTFLAGS="-Zsanitizer=thread"
export RUSTDOCFLAGS="-Zsanitizer=thread"
# allocator_may_return_null: a unit test asks for a pool larger than memory and expects an
# error, which TSan's allocator would otherwise turn into an abort.
export TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 allocator_may_return_null=1"
log="$CARGO_TARGET_DIR/tsan.log"
mkdir -p "$CARGO_TARGET_DIR"
status=0
cargo +nightly test -Zbuild-std --target "$target" -p wafer-engine --lib --test engine \
    -- ${filter:+"$filter"} --test-threads=1 2>&1 | tee "$log" || status=$?
reports=$(grep -c "WARNING: ThreadSanitizer" "$log" || true)
echo "tsan: test exit status $status, $reports ThreadSanitizer report(s); log in $log"
if [ "$status" -ne 0 ] || [ "$reports" -ne 0 ]; then
    exit 1
fi
