#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own
# In-kernel .eh_frame unwinding (--call-graph dwarf) against libdwfl on the SAME samples
# (--call-graph dwarf-check: BPF unwinds and copies the stack; the daemon unwinds the copy with
# libdwfl and compares): >= 99% of the samples get equal stacks on fx_qsort (qsort through
# libc), fx_throw (C++ exceptions through libgcc_s/libstdc++, inlined std::sort), fx_signal
# (a signal handler above glibc's __restore_rt) and Debian's own python3 running a busy loop.
# Every table but the vDSO's is parsed by the parser helper (.parser.cfi_calls).
# (test_sampler_kunwind_maps.sh: mappings that change or are bad.)
. "$(dirname "$0")/sampler_lib.sh"
FX=$B/tests/fixtures
for f in fx_qsort fx_throw fx_signal; do [ -e "$FX/$f" ] || fail "no $FX/$f"; done

# differential: NAME MIN_SAMPLES COMMAND...
differential() {
	local name=$1 min=$2 cmp eq
	shift 2
	record_ok 90 -F 999 -d 5 --call-graph dwarf-check -o "$TMP/$name.txt" -- "$@"
	cmp=$(stat_json .kunwind.compared)
	eq=$(stat_json .kunwind.equal)
	echo "$name: ${eq:-?} of ${cmp:-?} samples: in-kernel stack == libdwfl stack" \
		"($(stat_json .kunwind.not_ready) taken before a table was built, not compared);" \
		"fp steps $(stat_json .kunwind.fp_steps), unsupported $(stat_json .kunwind.unsupported_rule_steps)"
	[ -n "$cmp" ] && [ "$cmp" -ge "$min" ] || fail "$name: only ${cmp:-0} samples compared"
	# every table but the vDSO's (the kernel's image, read from our own) parsed by the
	# unprivileged parser helper, not by this root process
	built=$(stat_json .kunwind.builds)
	asked=$(stat_json .parser.cfi_calls)
	echo "$name: $built tables built, $asked asked of the parser helper"
	[ "${built:-0}" -ge 2 ] && [ "${asked:-0}" -ge $((built - 1)) ] ||
		fail "$name: tables built here, not by the helper ($built built, ${asked:-no} asked)"
	[ $((eq * 100)) -ge $((cmp * 99)) ] || fail "$name: only $eq of $cmp stacks equal"
}
differential fx_qsort 1000 "$FX/fx_qsort" 5
differential fx_throw 1000 "$FX/fx_throw" 5
# signal frames: samples in a SIGALRM handler, above glibc's __restore_rt
differential fx_signal 1000 "$FX/fx_signal" 5
sig=$(count "$TMP/fx_signal.txt" ';main;work;.*handler_spin')
echo "fx_signal: $sig samples in the handler, through the signal frame to main"
[ "$sig" -ge 100 ] || fail "too few samples through the signal frame ($sig)"
PY=/usr/bin/python3
if [ -x "$PY" ]; then
	differential python3 1000 "$PY" -c 'import time
t = time.time() + 5
while time.time() < t: sum(range(100))'
else
	echo "python3 differential SKIPPED: no $PY"
fi

echo PASS
