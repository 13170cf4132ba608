#!/bin/bash
# SPDX-License-Identifier: MIT
# bench_otel.sh — BPF cost per sample added by reading the OpenTelemetry thread context
# (OTEP 4947) record, printed (never asserted): the same workload (wl_otel, writer in the
# executable, 2 threads) with its record set (trace, span, 4 attributes: 62-70 bytes copied)
# and with otel_thread_ctx_v1 left NULL (the located pointer is read, nothing more), from
# the kernel's BPF stats (kernel.bpf_stats_enabled=1, run_time_ns / run_cnt of
# ctxprof_sample). Goal (issue 10): <= 0.5 us added per sample. Needs root.
# B=build dir (default build), SECS per run (default 6), ROUNDS interleaved (default 3).
set -u
cd "$(dirname "$0")/.."
. bench/bench_lib.sh bench_otel
B=${B:-build}
SECS=${SECS:-6}
ROUNDS=${ROUNDS:-3}
CTXPROF=$B/ctxprof
WL=$B/tests/workloads/wl_otel
[ -x "$CTXPROF" ] && [ -x "$WL" ] || { echo "bench_otel: build first"; exit 1; }
echo 1 > /proc/sys/kernel/bpf_stats_enabled
prog_stats() { python3 bench/bpf_prog_stats.py; }

# filter cost: the only target sleeps, every invocation is another process's sample
sleep $((SECS + 3)) &
idle=$!
"$CTXPROF" record -q -F 999 -p $idle -d $((SECS + 1)) -o /dev/null &
rec=$!
sleep "$SECS"
set -- $(prog_stats) 0 0
filter=$(awk -v t="$1" -v c="$2" 'BEGIN { printf "%.0f", c ? t / c : 0 }')
wait $rec
kill $idle 2>/dev/null
echo "# BPF ns per target sample, wl_otel x 2 threads, 999 Hz, fp; filter cost $filter ns/run"
printf '%-22s %9s %8s %16s\n' mode run_cnt samples ns/target_sample
for round in $(seq "$ROUNDS"); do
	for mode in record null; do
		if [ $mode = null ]; then export WL_OTEL_OFF=1; else unset WL_OTEL_OFF; fi
		"$WL" $((SECS + 4)) 2 >/dev/null &
		wl=$!
		"$CTXPROF" record -q -F 999 -p $wl -d $((SECS + 1)) -o /dev/null &
		rec=$!
		sleep "$SECS"
		set -- $(prog_stats) 0 0 0
		wait $rec
		kill $wl 2>/dev/null
		wait $wl 2>/dev/null
		awk -v m="$mode (round $round)" -v t="$1" -v c="$2" -v s="$3" -v f="$filter" 'BEGIN {
			printf "%-22s %9d %8d %16.0f\n", m, c, s, s ? (t - (c - s) * f) / s : 0 }'
	done
done | tee /dev/stderr | awk '{ v[$1] += $NF; n[$1]++ } END {
	r = n["record"] ? v["record"] / n["record"] : 0; z = n["null"] ? v["null"] / n["null"] : 0
	printf "mean: record %.0f ns, NULL pointer %.0f ns, added by reading the record: %.0f ns (goal <= 500)\n", r, z, r - z }'
