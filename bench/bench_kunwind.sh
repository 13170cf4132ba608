#!/bin/bash
# SPDX-License-Identifier: MIT
# bench_kunwind.sh — in-kernel .eh_frame unwinding, printed (never asserted): BPF ns per
# sample (kernel.bpf_stats_enabled) on fx_deep30, a ~30-frame stack through libc without
# frame pointers, for fp, dwarf (in-kernel) and dwarf-copy, with ctxprof's consumer running;
# frames per sample; the kernel memory and build time of the tables that run loaded. The
# target slowdown side by side with perf, and ctxprof's RSS/CPU, are in bench_sampler.sh; the
# table build cost per file in bench_cfi_table. Needs root. B=build dir (default build).
set -u
cd "$(dirname "$0")/.."
. bench/bench_lib.sh bench_kunwind
B=${B:-build}
CTXPROF=$B/ctxprof
FX=$B/tests/fixtures/fx_deep30
[ -x "$CTXPROF" ] && [ -x "$FX" ] || { echo "bench_kunwind: build first"; exit 1; }
prog_stats() { python3 bench/bpf_prog_stats.py; }

echo "# BPF cost per sample, fx_deep30 (~30 frames through libc), 999 Hz, read at t=7 s"
echo 1 >/proc/sys/kernel/bpf_stats_enabled
sleep 30 &
idle=$!
"$CTXPROF" record -q -F 999 --call-graph dwarf -p $idle -d 7 -o /dev/null &
rec=$!
sleep 6
set -- $(prog_stats) 0 0
filter=$(awk -v t="$1" -v c="$2" 'BEGIN { printf "%.0f", c ? t / c : 0 }')
wait $rec
kill $idle
echo "filter only (non-target samples): $filter ns per invocation"
printf '%-11s %8s %16s %10s %10s %12s %10s\n' mode samples ns/target_sample frames/smp \
	fp_steps table_bytes build_ms
for cg in fp dwarf dwarf-copy; do
	"$CTXPROF" record -F 999 --call-graph $cg -d 8 --stats-json "$TMP/s.json" -o "$TMP/out.txt" \
		-- "$FX" 12 >/dev/null 2>"$TMP/err" &
	rec=$!
	sleep 7
	set -- $(prog_stats) 0 0 0
	wait $rec
	# frames per sample from the collapsed output (user + kernel frames, comm excluded)
	fr=$(awk '{ n = $NF; $NF = ""; k = split($0, a, ";") - 1; f += k * n; s += n }
		END { printf "%.1f", s ? f / s : 0 }' "$TMP/out.txt")
	read -r fp tb bm < <(jq -r '"\(.kunwind.fp_steps) \(.kunwind.table_bytes) \(.kunwind.build_ms)"' "$TMP/s.json")
	awk -v m=$cg -v t="$1" -v c="$2" -v s="$3" -v f="$filter" -v fr="$fr" -v fp="$fp" -v tb="$tb" -v bm="$bm" 'BEGIN {
		printf "%-11s %8d %16.0f %10s %10s %12s %10s\n", m, s, s ? (t - (c - s) * f) / s : 0, fr, fp, tb, bm }'
done
echo 0 >/proc/sys/kernel/bpf_stats_enabled
echo "(ns/target_sample = (BPF time - non-target runs x filter cost) / target samples)"
