#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own
# Samples queued in the ring when their process execs or exits are resolved against the
# image that took them: lifecycle events are handled only after every sample taken before
# them (engine/sampler_ingest.c, ordering).
#  1. exit: --call-graph dwarf of fx_qsort, which exits on its own after 1 s (3 runs); its
#     last samples are still in the ring when the exit event comes. A sample handled after
#     the exit would lose DWARF unwinding and fall back to frame pointers, which fx_qsort has
#     not: all but the one or two samples taken in the loader or in exit() reach main. It
#     warms up in its own code first (WARMUP): record builds libc's unwind table after the
#     loader mapped libc, and a sample in libc before that stops there (up to 15 in the
#     first ~120 ms under CI load), which is not what this part looks at. (The tables are
#     built off the sampling loop: the executable's own, a few ms after the exec, too.)
#  2. exec: wl_exec_ctx and wl_exec_plain exec each other 12 times, 150 ms each. A sample is
#     named after the process image it was resolved with, and carries the thread name it was
#     taken under (the comm, which exec changes): the two must agree, and the samples in each
#     image's work function must be there under its own name.
. "$(dirname "$0")/sampler_lib.sh"
FX=$B/tests/fixtures/fx_qsort
[ -x "$FX" ] || fail "no $FX"
[ -x "$WL/wl_exec_ctx" ] && [ -x "$WL/wl_exec_plain" ] || fail "no $WL/wl_exec_*"

# 1. exit
WARMUP=300000 # calls of leaf (~1 us each): ~300 ms in the executable before qsort
for run in 1 2 3; do
	record_ok 60 -F 999 --call-graph dwarf -o "$TMP/exit.txt" -- "$FX" 1 "$WARMUP"
	total=$(count "$TMP/exit.txt" '^fx_qsort-')
	main=$(count "$TMP/exit.txt" '^fx_qsort-[0-9]+;[^;]*;(.*;)?main;')
	echo "exit, run $run: $total samples of fx_qsort, $main reach main"
	[ "$total" -ge 300 ] || fail "too few samples ($total)"
	[ $((main * 100)) -ge $((total * 99)) ] || fail "only $main of $total samples reach main"
	[ $((total - main)) -le 3 ] || fail "$((total - main)) samples do not reach main"
done

# 2. exec
record_ok 60 -F 999 -o "$TMP/exec.txt" -- "$WL/wl_exec_ctx" 12 150 150
# PROC-PID;THREAD;...: the process name and the thread name disagree. A sample taken inside
# execve between the comm change and the exec tracepoint is the old image's and rightly
# carries the new comm: those (execve in the stack) are not counted.
mixre='^wl_exec_ctx-[0-9]+;wl_exec_plain;|^wl_exec_plain-[0-9]+;wl_exec_ctx;'
grep -E "$mixre" "$TMP/exec.txt" | grep -v -E ';bprm_execve_\[k\]' >"$TMP/mixed.txt"
mixed=$(count "$TMP/mixed.txt" .)
ctx=$(count "$TMP/exec.txt" '^wl_exec_ctx-[0-9]+;wl_exec_ctx;.*;main;work_ctx_image;')
plain=$(count "$TMP/exec.txt" '^wl_exec_plain-[0-9]+;wl_exec_plain;.*;main;work_plain_image;')
total=$(count "$TMP/exec.txt" '^wl_exec_')
echo "exec: $total samples, $ctx in work_ctx_image, $plain in work_plain_image, $mixed under" \
	"the other image's name"
head -5 "$TMP/mixed.txt"
[ "$mixed" = 0 ] || fail "$mixed samples resolved against the wrong image"
[ "$ctx" -ge 200 ] || fail "too few samples in work_ctx_image ($ctx)"
[ "$plain" -ge 200 ] || fail "too few samples in work_plain_image ($plain)"
[ $(((ctx + plain) * 4)) -ge $((total * 3)) ] || fail "work functions in only $((ctx + plain))" \
	"of $total samples"
echo PASS
