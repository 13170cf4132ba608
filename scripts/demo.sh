#!/bin/bash
# SPDX-License-Identifier: MIT
# make demo: profile the built-in demo workload for ~10 s and write a JFR file.
set -euo pipefail
B=${1:-build}
cd "$(dirname "$0")/.."
out_dir=$B/demo
out=$out_dir/demo.jfr
mkdir -p "$out_dir"
rm -f "$out"

if [ "$(id -u)" != 0 ]; then
	echo "make demo: ctxprof needs root (CAP_BPF + CAP_PERFMON) to load its BPF program" >&2
	exit 1
fi

"$B/demo/demo_app" 30 2 &
app=$!
trap 'kill $app 2>/dev/null || true' EXIT
sleep 0.5
echo "demo: profiling demo_app (pid $app) for 10 s ..."
"$B/ctxprof" record -p "$app" -d 10s --call-graph dwarf -o "$out"
kill "$app" 2>/dev/null || true
wait "$app" 2>/dev/null || true
trap - EXIT

echo
"$B/ctxprof" report "$out"
echo
echo "demo: wrote $(realpath "$out")"
echo "  open it in JDK Mission Control (File > Open), or:"
echo "    jfr summary $out"
echo "    jfr print --events jdk.ExecutionSample $out"
echo "    jfr print --json --events jdk.ExecutionSample $out   # span ids and labels"
