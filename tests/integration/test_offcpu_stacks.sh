#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own
# Off-CPU stacks go through the call-graph mode's unwinder and show no profiler frame.
# wl_offcpu's wl-sleep thread blocks in libc's nanosleep (no frame pointers in Debian's libc)
# from do_sleep -> nap: in fp and dwarf, the blocking stack must read
# `one_round;do_sleep;nap;<libc>...` (the in-kernel .eh_frame unwinder walks libc; a
# frame-pointer walk skips nap, the libc leaf's caller). The kernel part starts at the
# scheduler: no bpf_prog_*, bpf_trace_run* or __bpf_trace_* frame in the folded, JFR and HTML
# outputs (pprof refuses off-CPU intervals: checked, so none can carry them).
. "$(dirname "$0")/sampler_lib.sh"

PROFILER='bpf_prog_|bpf_trace_run|__bpf_trace_|__traceiter_'
for cg in fp dwarf; do
	record_ok 60 --event off-cpu --call-graph $cg -o "$TMP/$cg.folded" -- \
		"$WL/wl_offcpu" "$TMP/wl.txt" 3
	python3 - "$TMP/$cg.folded" $cg <<'PY' || fail "$cg: the caller of the libc call is missing"
import sys
tot = nap = 0
for line in open(sys.argv[1]):
    stack, v = line.rstrip("\n").rsplit(" ", 1)
    fr = stack.split(";")
    if "op=sleep" not in fr or "do_nanosleep_[k]" not in fr:
        continue
    tot += int(v)
    i = fr.index("do_sleep") if "do_sleep" in fr else -1
    # the frame after nap is libc's nanosleep wrapper (then clock_nanosleep)
    if 0 < i < len(fr) - 2 and fr[i - 1] == "one_round" and fr[i + 1] == "nap" and \
            "nanosleep" in fr[i + 2]:
        nap += int(v)
share = 100.0 * nap / max(tot, 1)
print("%s: %.1f%% of op=sleep off-CPU time (%d us) under one_round;do_sleep;nap;<libc nanosleep>"
      % (sys.argv[2], share, tot))
# the first intervals may come before the process's unwind tables are loaded (frame pointers
# then, counted as truncated): a few percent
sys.exit(0 if tot > 1000000 and share >= 80 else 1)
PY
	grep -Eq "$PROFILER" "$TMP/$cg.folded" &&
		{ grep -Eo "[^;]*($PROFILER)[^;]*" "$TMP/$cg.folded" | sort -u | head -3; fail "$cg: profiler frames in the folded output"; }
	grep -q "__schedule_\[k\]" "$TMP/$cg.folded" || fail "$cg: no kernel stack down to __schedule"
done

# wall into JFR and HTML: CPU samples and off-CPU intervals, same check on the bytes
for fmt in jfr html; do
	record_ok 60 --event wall -F 199 -o "$TMP/wall.$fmt" -- "$WL/wl_offcpu" "$TMP/wl.txt" 2
	[ -s "$TMP/wall.$fmt" ] || fail "no $fmt output"
	grep -q "do_nanosleep" "$TMP/wall.$fmt" || fail "$fmt: no off-CPU stack in the output"
	grep -Eaq "$PROFILER" "$TMP/wall.$fmt" && fail "$fmt: profiler frames in the output"
done
jfr print --events ctxprof.OffCPU "$TMP/wall.jfr" >"$TMP/off.txt" || fail "jfr print failed"
grep -q "nap" "$TMP/off.txt" || fail "JFR: no off-CPU stack through nap"
grep -Eq "$PROFILER" "$TMP/off.txt" && fail "JFR: profiler frames in ctxprof.OffCPU stacks"
if timeout 30 "$CTXPROF" record --event off-cpu -o "$TMP/off.pb.gz" -- "$WL/wl_offcpu" \
	"$TMP/wl.txt" 1 >/dev/null 2>"$TMP/pprof.err"; then
	fail "pprof accepted off-CPU intervals: check them for profiler frames"
fi
grep -q "pprof takes CPU samples only" "$TMP/pprof.err" || { cat "$TMP/pprof.err"; fail "pprof: unexpected error"; }
echo "PASS"
