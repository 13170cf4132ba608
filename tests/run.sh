#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs every test listed in BUILD/tests.list for each build variant given, prints one line
# per test, the 10 slowest with their times, and one summary line at the end. Exit status 0
# only when nothing failed.
#
# A test passes with exit 0, is SKIPPED with exit 77 (it must say why on its output), and
# fails otherwise. A Criterion program that exits 0 with every case skipped (cr_skip_test) is
# SKIPPED too, with its first case's reason; one with some cases skipped passes and says so. Root tests (real BPF, perf events; kind "root", and "rootsan" which also
# runs in the ASan variant) need root and kernel BTF; without them
# they are reported SKIPPED loudly, never passed.
#   tests/run.sh build build/asan build/tsan
#   TEST_FILTER=trace tests/run.sh build     (substring filter)
set -u
cd "$(dirname "$0")/.."
pass=0 fail=0 skip=0
failed=()
times=() # "SECONDS NAME" of every test run: the slowest are listed at the end
logdir=build/test-logs
mkdir -p "$logdir"
timeout_s=${TEST_TIMEOUT:-900}

can_root=1
why_root=""
if [ "$(id -u)" != 0 ]; then can_root=0; why_root="not root"; fi
if [ ! -r /sys/kernel/btf/vmlinux ]; then can_root=0; why_root="${why_root:+$why_root, }no /sys/kernel/btf/vmlinux"; fi

run_one() { # variant kind path
	local variant=$1 kind=$2 t=$3
	local name="$variant:${t#"$variant"/}"
	[ -n "${TEST_FILTER:-}" ] && [[ "$name" != *"$TEST_FILTER"* ]] && return
	if { [ "$kind" = root ] || [ "$kind" = rootsan ]; } && [ $can_root = 0 ]; then
		echo "SKIPPED  $name   (needs root + BTF: $why_root)"
		skip=$((skip + 1)); return
	fi
	local log="$logdir/$(echo "$name" | tr '/:' '__').log"
	local t0=$SECONDS rc
	# Criterion programs name each case and its verdict ([SKIP] a::b: why) at verbosity 1.
	# Under the sanitizers they run their cases one at a time: Criterion 2.4's parallel runner
	# leaks 48 bytes of its own (calloc inside criterion_run_all_tests), which LeakSanitizer
	# reports as the program's (test_jfr_writer, 3 runs of 3; none with one job).
	local env=(TEST_BUILD="$variant" CRITERION_VERBOSITY_LEVEL=1)
	case "$variant" in */asan | */tsan) env+=(CRITERION_JOBS=1) ;; esac
	env "${env[@]}" timeout --kill-after=10 "$timeout_s" "$t" >"$log" 2>&1 </dev/null
	rc=$?
	local dt=$((SECONDS - t0))
	times+=("$dt $name")
	local skipped
	skipped=$(grep -c '^\[SKIP\] ' "$log")
	if [ $rc = 0 ] && [ "$skipped" -gt 0 ] && grep -q '^\[====\] Synthesis: Tested: 0 ' "$log"; then
		echo "SKIPPED  $name   (every case skipped: $(grep -m1 '^\[SKIP\] ' "$log" | cut -c8-160))"
		skip=$((skip + 1))
	elif [ $rc = 0 ]; then
		local note=""
		[ "$skipped" -gt 0 ] && note="; $skipped cases skipped: $(grep -m1 '^\[SKIP\] ' "$log" | cut -c8-120)"
		echo "PASS     $name   (${dt}s$note)"; pass=$((pass + 1))
	elif [ $rc = 77 ]; then
		echo "SKIPPED  $name   ($(grep -m1 -i 'skip' "$log" | cut -c1-160))"; skip=$((skip + 1))
	else
		echo "FAIL     $name   (exit $rc, ${dt}s) — log: $log"
		tail -n 40 "$log" | sed 's/^/    | /'
		fail=$((fail + 1)); failed+=("$name")
	fi
}

for variant in "$@"; do
	list="$variant/tests.list"
	[ -f "$list" ] || { echo "FAIL     $variant: no $list"; fail=$((fail + 1)); continue; }
	while read -r kind t; do
		case "$variant" in
		*/tsan) [ "$kind" = tsan ] || continue ;;
		*/asan) [ "$kind" = unit ] || [ "$kind" = tsan ] || [ "$kind" = rootsan ] || continue ;;
		*) ;;
		esac
		run_one "$variant" "$kind" "$t"
	done < "$list"
done

# The source format is part of the tests.
if [ -z "${TEST_FILTER:-}" ] || [[ format == *"$TEST_FILTER"* ]]; then
	if make --no-print-directory format-check >"$logdir/format.log" 2>&1; then
		echo "PASS     format-check"; pass=$((pass + 1))
	else
		echo "FAIL     format-check — run 'make format'"; head -n 30 "$logdir/format.log" | sed 's/^/    | /'
		fail=$((fail + 1)); failed+=(format-check)
	fi
fi

echo
if [ ${#times[@]} -gt 0 ]; then
	echo "slowest tests:"
	printf '%s\n' "${times[@]}" | sort -rn | head -n 10 | awk '{ printf "  %5ds  %s\n", $1, $2 }'
fi
[ $fail -gt 0 ] && printf 'failed: %s\n' "${failed[@]}"
echo "tests: $pass passed, $fail failed, $skip skipped"
[ $fail = 0 ]
