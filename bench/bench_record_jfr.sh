#!/bin/bash
# SPDX-License-Identifier: MIT
# JFR size on the labelled demo workload: `ctxprof record` of demo_app (2 worker threads,
# spans + route/tier labels) for BENCH_SECONDS (default 60) at 99 Hz, one chunk per 60 s.
# Prints bytes per sample (pools and metadata included) and the writer's totals. The budget
# in issue 11 is <= 20 bytes per sample with context; printed, not asserted.
set -u
B=${BENCH_BUILD:-build}
secs=${BENCH_SECONDS:-60}
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench_record_jfr: SKIPPED (needs root)"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; kill $app 2>/dev/null' EXIT
"$B/demo/demo_app" $((secs + 30)) 2 &
app=$!
sleep 0.5
"$B/ctxprof" record -q -p $app -d "${secs}s" -o "$tmp/demo.jfr" 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
kill $app; wait $app 2>/dev/null
size=$(stat -c %s "$tmp/demo.jfr")
samples=$("$B/ctxprof" report "$tmp/demo.jfr" | awk '$1 == "jdk.ExecutionSample" { print $2 }')
ctx=$("$B/ctxprof" report "$tmp/demo.jfr" | sed -n 's/^samples: .*with context (labels or a span) //p')
echo "record -> JFR, demo_app ${secs}s at 99 Hz: $size bytes, ${samples:-0} samples (${ctx:-0} with context)"
if [ "${samples:-0}" -gt 0 ]; then
	awk -v s="$size" -v n="$samples" 'BEGIN { printf "bytes per sample: %.1f (budget 20)\n", s / n }'
fi
