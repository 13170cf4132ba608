#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own
# Samples per thread match the thread's CPU time (its /proc/self/task/TID/schedstat at exit,
# printed by the workload) x frequency within 10%. The command mode covers exactly the
# workload's life, so the CPU time and the sampling window are the same.
. "$(dirname "$0")/sampler_lib.sh"
F=999
record_ok 60 -F $F -o "$TMP/out.txt" -- "$WL/wl_attrib" long 10 2
cat "$TMP/o"
n=0
while read -r _ tid name ns; do
	got=$(count "$TMP/out.txt" "^wl_attrib-[0-9]+;$name;")
	want=$(awk -v ns="$ns" -v f=$F 'BEGIN { printf "%d", ns / 1e9 * f }')
	echo "thread $tid $name: cpu ${ns} ns -> expected $want samples, got $got"
	[ "$want" -ge 100 ] || fail "thread $name ran too little ($want expected samples) to compare"
	awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= 0.10 * w) }' ||
		fail "thread $name: $got samples vs $want expected (more than 10% off)"
	n=$((n + 1))
done < <(grep '^cpu ' "$TMP/o")
[ $n = 2 ] || fail "expected 2 thread reports, got $n"
echo PASS
