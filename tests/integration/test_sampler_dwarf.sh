#!/bin/bash
# --call-graph dwarf reaches main through libc's qsort callbacks (libc has no frame
# pointers) in >= 99% of samples of the no-frame-pointer fixture fx_qsort.
. "$(dirname "$0")/sampler_lib.sh"
FX=$B/tests/fixtures/fx_qsort
[ -x "$FX" ] || fail "no $FX"
timeout 60 "$CTXPROF" record -F 999 -d 8 --call-graph dwarf -o "$TMP/out.txt" -- "$FX" \
	>/dev/null 2>"$TMP/e"
rc=$?
cat "$TMP/e"
[ $rc = 0 ] || fail "record failed (exit $rc)"
total=$(count "$TMP/out.txt" '^fx_qsort-')
main=$(count "$TMP/out.txt" '^fx_qsort-[0-9]+;[^;]*;(.*;)?main;')
cb=$(count "$TMP/out.txt" ';main;run_sort;.*qsort.*;cmp_slow')
echo "fx_qsort: $total samples, $main reach main, $cb show main;run_sort;...qsort...;cmp_slow"
[ "$total" -ge 200 ] || fail "too few samples ($total)"
[ $((main * 100)) -ge $((total * 99)) ] || fail "only $main of $total samples reach main"
[ "$cb" -ge $((total / 2)) ] || fail "callback chain through qsort missing"
echo PASS
