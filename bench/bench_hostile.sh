#!/bin/bash
# SPDX-License-Identifier: MIT
# bench_hostile.sh — issue 19's budget, printed (never asserted): the control target's
# samples with context per CPU-second under each attack of tests/hostile/ against the
# default daemon, beside its rate in the same run before the attack (goal: >= 90%). The
# attacks are the hostile tests themselves (each measures both rates, hostile_lib.sh
# rate_baseline and assert_rate_kept); this runs every test that does and tabulates what they
# printed, with the test's verdict. Needs root; B=build dir (default build).
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
[ "$(id -u)" = 0 ] || { echo "bench_hostile: needs root, skipped"; exit 0; }
[ -x "$B/ctxprof" ] || { echo "bench_hostile: make and make test-bins first"; exit 1; }
LOG=$(mktemp /tmp/ctxprof-bench-hostile.XXXXXX)
trap 'rm -f "$LOG"' EXIT
printf '%-28s %14s %14s %7s  %s\n' attack "before /CPU-s" "during /CPU-s" ratio test
for t in tests/hostile/test_*.sh; do
	grep -qE '^[[:space:]]*(daemon_cpu_during )?assert_rate_kept' "$t" || continue
	timeout 600 bash "$t" "$B" >"$LOG" 2>&1
	rc=$?
	before=$(sed -n 's/.* \([0-9.]*\) context samples per CPU-second before the attack.*/\1/p' "$LOG" | head -1)
	during=$(sed -n 's/.* \([0-9.]*\) context samples per CPU-second during the attack.*/\1/p' "$LOG" | head -1)
	ratio=$(python3 -c 'import sys
try: print("%.2f" % (float(sys.argv[2]) / float(sys.argv[1])))
except Exception: print("-")' "${before:-x}" "${during:-x}")
	verdict=$([ "$rc" = 0 ] && echo pass || echo "FAIL (exit $rc)")
	printf '%-28s %14s %14s %7s  %s\n' "$(basename "$t" .sh | sed 's/^test_//')" "${before:--}" \
		"${during:--}" "$ratio" "$verdict"
done
