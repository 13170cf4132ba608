#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# Attribution: every sample whose stack holds work_A carries phase=A and span 0xA (and B
# likewise), with long-lived and with many short-lived threads; FP stacks reach main with
# names (main;long_thread;run_phases;work_X).
. "$(dirname "$0")/sampler_lib.sh"

check_attrib() { # file min_samples
	local f=$1 min=$2 a b bad_a bad_b total
	a=$(count "$f" ';work_A( |;)')
	b=$(count "$f" ';work_B( |;)')
	bad_a=$(grep -E ';work_A( |;)' "$f" | grep -v -E ';phase=A;(.*;)?span=000000000000000a;' |
		awk '{ n += $NF } END { print n + 0 }')
	bad_b=$(grep -E ';work_B( |;)' "$f" | grep -v -E ';phase=B;(.*;)?span=000000000000000b;' |
		awk '{ n += $NF } END { print n + 0 }')
	total=$((a + b))
	echo "$f: work_A $a, work_B $b samples; mismatches A $bad_a, B $bad_b"
	[ "$bad_a" = 0 ] && [ "$bad_b" = 0 ] || {
		grep -E ';work_(A|B)' "$f" | grep -v -E 'phase=(A|B)' | head -5
		fail "samples attributed to the wrong context"
	}
	[ "$total" -ge "$min" ] || fail "only $total work samples (want >= $min)"
}

# Long-lived threads.
record_ok 60 -F 999 --span-frames -o "$TMP/long.txt" -- "$WL/wl_attrib" long 10 2
check_attrib "$TMP/long.txt" 300

# FP: the main thread's chain with names.
w0=$(count "$TMP/long.txt" '^wl_attrib-[0-9]+;wl-0;.*;work_(A|B) ')
chain=$(count "$TMP/long.txt" '^wl_attrib-[0-9]+;wl-0;.*;main;long_thread;run_phases;work_(A|B) ')
echo "wl-0: $chain of $w0 work samples show main;long_thread;run_phases;work_X"
[ "$w0" -gt 0 ] && [ $((chain * 100)) -ge $((w0 * 80)) ] || fail "FP stacks do not reach main"

# Many short-lived threads.
record_ok 60 -F 999 --span-frames -o "$TMP/short.txt" -- "$WL/wl_attrib" short 8 2
check_attrib "$TMP/short.txt" 150
threads=$(stat_json .threads)
[ "${threads:-0}" -ge 20 ] || fail "only ${threads:-0} threads seen in short-lived mode"
echo PASS
