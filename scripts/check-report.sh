#!/usr/bin/env bash
# Check for the issue item "The HTML report opens in headless Chromium without errors".
#
# Usage: scripts/check-report.sh REPORT.html [SCREENSHOT.png]
#
# 1. Static checks: the file exists, is one self-contained page (no scripts, no external
#    resources: every src/href is a fragment or a data: URI, no <link>, no url(http...)), and its
#    <svg> tags are balanced.
# 2. Renders it with headless Chromium to a PNG (default: REPORT.png next to the HTML) and fails
#    if Chromium exits non-zero, the page logs anything to the console (script errors, failed
#    loads, parse problems), Chromium logs a FATAL or an ERROR that is not known environment noise
#    of a headless container (D-Bus, GPU, sandbox), or the screenshot is missing or empty.
#
# Chromium is installed with apt-get when missing (needs root, as in the dev container).
# Environment: CHROMIUM (browser binary), WINDOW_SIZE (default 1400,2400), KEEP_LOG=1 (keep the
# Chromium log next to the screenshot).
set -euo pipefail

die() { echo "check-report: FAIL: $*" >&2; exit 1; }

[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 REPORT.html [SCREENSHOT.png]" >&2; exit 2; }
html=$1
[ -f "$html" ] || die "$html does not exist"
[ -s "$html" ] || die "$html is empty"
html_abs=$(cd "$(dirname "$html")" && pwd)/$(basename "$html")
png=${2:-${html%.html}.png}
png_abs=$(cd "$(dirname "$png")" 2>/dev/null && pwd)/$(basename "$png") \
    || die "directory of $png does not exist"

# --- static checks -------------------------------------------------------------------------
grep -qi '<!doctype html>' "$html" || die "$html has no <!DOCTYPE html>"
grep -qi '</html>' "$html" || die "$html is truncated (no </html>)"
if grep -qiE '<script|<link[ >]|<iframe|<object|<embed' "$html"; then
    die "$html is not self-contained: it has <script>, <link>, <iframe>, <object> or <embed>"
fi
external=$(grep -oiE '(src|href|xlink:href)="[^"#][^"]*"' "$html" | grep -viE '="data:' || true)
[ -z "$external" ] || die "$html references external resources: $(echo "$external" | head -3)"
if grep -qiE 'url\((["'"'"']?)(https?:|//|file:)' "$html"; then
    die "$html loads a resource through url(...)"
fi
open_svg=$(grep -o '<svg[ >]' "$html" | wc -l)
close_svg=$(grep -o '</svg>' "$html" | wc -l)
[ "$open_svg" -eq "$close_svg" ] || die "unbalanced <svg>: $open_svg opened, $close_svg closed"

# --- chromium --------------------------------------------------------------------------------
find_chromium() {
    for c in "${CHROMIUM:-}" chromium chromium-browser google-chrome google-chrome-stable; do
        [ -n "$c" ] && command -v "$c" >/dev/null 2>&1 && { command -v "$c"; return 0; }
    done
    return 1
}
if ! browser=$(find_chromium); then
    echo "check-report: chromium not found, installing it with apt-get" >&2
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >&2
    browser=$(find_chromium) || die "chromium is still missing after apt-get install"
fi

profile=$(mktemp -d)
log=$(mktemp)
cleanup() { rm -rf "$profile"; [ "${KEEP_LOG:-0}" = 1 ] || rm -f "$log"; }
trap cleanup EXIT
rm -f "$png_abs"

status=0
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --disable-background-networking --disable-component-update --disable-sync \
    --no-first-run --no-default-browser-check --hide-scrollbars \
    --user-data-dir="$profile" --enable-logging=stderr --v=0 \
    --window-size="${WINDOW_SIZE:-1400,2400}" --screenshot="$png_abs" \
    "file://$html_abs" >"$log" 2>&1 || status=$?
if [ "${KEEP_LOG:-0}" = 1 ]; then cp "$log" "${png_abs%.png}.chromium.log"; fi

[ "$status" -eq 0 ] || { tail -20 "$log" >&2; die "chromium exited with status $status"; }

# Page-level problems: anything the page logs to the console, and failed loads.
page_errors=$(grep -E ':CONSOLE[:(]|net::ERR_|Failed to load resource' "$log" || true)
[ -z "$page_errors" ] || { echo "$page_errors" >&2; die "the page reported errors in Chromium"; }

# Chromium's own errors, minus the noise every headless container produces.
# (Matched on the source file Chromium names in the log line, e.g. ":ERROR:dbus/bus.cc:405]".)
noise=':(ERROR|FATAL):(dbus/|device/bluetooth/|ui/base/idle/|media/gpu/|sandbox/|gpu/|ui/gl/|components/viz/|content/browser/gpu/|components/os_crypt/)'
chromium_errors=$(grep -E ':(ERROR|FATAL):' "$log" | grep -vE "$noise" || true)
[ -z "$chromium_errors" ] || { echo "$chromium_errors" >&2; die "chromium reported errors"; }
if grep -qE ':FATAL:' "$log"; then grep -E ':FATAL:' "$log" >&2; die "chromium crashed"; fi

[ -f "$png_abs" ] || die "no screenshot was written ($png_abs)"
[ -s "$png_abs" ] || die "the screenshot $png_abs is empty"
head -c 8 "$png_abs" | od -An -tx1 | tr -d ' \n' | grep -q '^89504e470d0a1a0a$' \
    || die "the screenshot $png_abs is not a PNG"

echo "check-report: OK: $html renders in headless Chromium ($open_svg charts) -> $png_abs"
