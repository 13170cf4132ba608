#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# --call-graph dwarf (in-kernel .eh_frame unwinding) and dwarf-copy (16 KiB stack copy +
# libdwfl) reach main through libc's qsort callbacks (libc has no frame pointers) in >= 99% of
# samples of the no-frame-pointer fixture fx_qsort, and say none of them stopped early; of
# wl_deep, whose stack is deeper than dwarf-copy's 16 KiB copy, dwarf-copy says at exit that
# unwinding stopped early, and in which module: wl_deep. The kernel CPU the BPF load took (the
# verifier) and the instructions the verifier processed are reported in --stats-json; dwarf's
# are at most 5x dwarf-copy's. Samples taken before a process's tables were built
# (frame-pointer steps, kunwind.fp_steps) are counted apart.
. "$(dirname "$0")/sampler_lib.sh"
FX=$B/tests/fixtures/fx_qsort
[ -x "$FX" ] || fail "no $FX"
declare -A insns
for cg in dwarf dwarf-copy; do
	record_ok 60 -F 999 -d 8 --call-graph $cg -o "$TMP/out.txt" -- "$FX"
	total=$(count "$TMP/out.txt" '^fx_qsort-')
	main=$(count "$TMP/out.txt" '^fx_qsort-[0-9]+;[^;]*;(.*;)?main;')
	cb=$(count "$TMP/out.txt" ';main;run_sort;.*qsort.*;cmp_slow')
	echo "fx_qsort ($cg): $total samples, $main reach main, $cb show main;run_sort;...qsort...;cmp_slow"
	# the verifier's time is reported (issue 32 item 6: dwarf's loads ~1 s of kernel CPU)
	load_us=$(stat_json .bpf_load_kernel_us)
	echo "fx_qsort ($cg): loading the BPF programs took $load_us us of kernel CPU"
	[ "$load_us" -gt 0 ] || fail "the BPF load's kernel CPU is not reported"
	insns[$cg]=$(stat_json .bpf_verified_insns)
	echo "fx_qsort ($cg): the verifier processed ${insns[$cg]} instructions"
	[ "${insns[$cg]:-0}" -gt 0 ] || fail "the verifier's instruction count is not reported"
	[ "$total" -ge 200 ] || fail "too few samples ($total)"
	# dwarf: samples taken before the process's unwind tables were in (on a loaded host they
	# are built later) took frame-pointer steps, which libc cannot give: counted apart, and
	# at most a quarter (more: the tables were not used). The others reach main.
	fp=$(jq -r '.kunwind.fp_steps // 0' "$TMP/stats.json")
	echo "fx_qsort ($cg): $fp frame-pointer steps (before the tables were in)"
	[ $((fp * 4)) -le "$total" ] || fail "$fp of $total samples took frame-pointer steps"
	[ $((main * 100)) -ge $(((total - fp) * 99)) ] ||
		fail "only $main of $total samples reach main ($fp before the tables)"
	[ "$cb" -ge $((total / 2)) ] || fail "callback chain through qsort missing"
	trunc=$(stat_json .unwind_truncated)
	[ -n "$trunc" ] || fail "no 'unwind truncated' count at exit"
	[ $(((trunc - fp) * 100)) -le "$total" ] || fail "$trunc of $total fx_qsort samples stopped early"
done
# The in-kernel unwinder is verified once per frame step, its binary searches with their
# bounds in map memory so that the verifier prunes their branches: it adds a bounded share to
# the program (1.8x dwarf-copy's here), not a search tree (63x, 0.93 s of kernel CPU).
[ "${insns[dwarf]}" -le $((${insns[dwarf-copy]} * 5)) ] ||
	fail "dwarf's programs took ${insns[dwarf]} verified instructions, over 5x dwarf-copy's"

record_ok 60 -F 999 --call-graph dwarf-copy -o "$TMP/deep.txt" -- "$WL/wl_deep" 2
total=$(count "$TMP/deep.txt" '^wl_deep-')
trunc=$(stat_json .unwind_truncated)
top=$(stat_json '.unwind_stops[0] | "\(.module) \(.count)"')
echo "wl_deep: $total samples, ${trunc:-?} truncated; $top"
[ "$total" -ge 200 ] || fail "too few wl_deep samples ($total)"
[ $((${trunc:-0} * 10)) -ge $((total * 9)) ] || fail "only ${trunc:-0} of $total counted truncated"
[[ "$top" =~ ^"wl_deep "([0-9]+)$ ]] ||
	fail "wl_deep is not the first module unwinding stopped in"
[ $((BASH_REMATCH[1] * 10)) -ge $((total * 9)) ] || fail "wl_deep: ${BASH_REMATCH[1]} stops"
echo PASS
