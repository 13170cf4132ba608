#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs the tests listed in BUILD/tests.list for each build variant given, several at a time,
# prints one line per test as it ends, the 10 slowest with their times, and one summary line
# at the end. Exit status 0 only when nothing failed.
#
#   tests/run.sh build build/asan build/tsan
#   tests/run.sh -j 4 build                 (jobs; default $TEST_JOBS, else the CPUs)
#   tests/run.sh --tier check build         (the fast tier of `make check`)
#   TEST_FILTER=trace tests/run.sh build    (substring filter)
#   TEST_PHASE=parallel|pair|alone tests/run.sh build   (only the side-by-side, the pair
#                                            (with the own) or the alone (with the quiet) tests)
#
# A test passes with exit 0, is SKIPPED with exit 77 (it must say why on its output), and
# fails otherwise. A Criterion program that exits 0 with every case skipped (cr_skip_test) is
# SKIPPED too, with its first case's reason; one with some cases skipped passes and says so.
#
# Kinds (tests.list): unit (every variant but TSan), tsan (every variant), plain (the normal
# build only: lints and packaging), root (real BPF and perf events: the normal build) and
# rootsan (root, also under ASan). Root tests need root and kernel BTF; without them they are
# reported SKIPPED loudly, never passed.
#
# Side by side, in pairs or alone: a root test runs alone unless its source says
# `ctxprof-test: parallel` in its first 40 lines (it selects only its own targets and asserts
# no rate) or `ctxprof-test: pair` (it runs a host-wide daemon, but what it asserts holds
# beside one other such test: rates per CPU-second of its own target, facts about its own
# processes; never a FUSE stall, whose stuck reads hold the stalled process's mmap lock
# against every other daemon's reads, nor a host-wide count), and a unit test runs side by
# side unless it says `ctxprof-test: alone`. The parallel tests run first, $jobs at a time,
# each holding the host lock shared; then the pair tests, $TEST_PAIR_JOBS (2) at a time, and
# then the others one by one, under one exclusive hold of it, so that two runs on one host do
# not disturb each other's rates either. A pair test that also says `own` samples only the
# processes it starts or names (`record -p` or a command), runs no host-wide daemon and reads
# nothing of any other process: it runs beside the alone tests instead (one at a time while
# they last, then two at a time), since nothing an alone test does to the host (a FUSE
# stall, a flood, a fork bomb) reaches such a test, nor does it reach theirs. An alone test
# that says `quiet` (it counts host-wide wakes) and an alone unit or plain test run last,
# with nothing beside them. `ctxprof-test: check` puts a test in the fast tier (every unit
# and plain test is in it).
# `ctxprof-test: long` starts a side-by-side or pair test first, so that the phase does not
# end waiting for it alone.
set -u
cd "$(dirname "$0")/.."
logdir=build/test-logs
resdir=$logdir/results
mkdir -p "$logdir"
rm -rf "$resdir"
mkdir -p "$resdir"
timeout_s=${TEST_TIMEOUT:-900}
jobs=${TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
pair_jobs=${TEST_PAIR_JOBS:-2}
tier=all
lock=${TEST_LOCK:-/run/lock/ctxprof-tests.lock}
while [ $# -gt 0 ]; do
	case "$1" in
	-j) jobs=$2; shift 2 ;;
	-j*) jobs=${1#-j}; shift ;;
	--tier) tier=$2; shift 2 ;;
	*) break ;;
	esac
done
[ "$jobs" -ge 1 ] 2>/dev/null || { echo "tests/run.sh: -j needs a number, not '$jobs'" >&2; exit 2; }
[ "$pair_jobs" -ge 1 ] 2>/dev/null || { echo "tests/run.sh: TEST_PAIR_JOBS needs a number, not '$pair_jobs'" >&2; exit 2; }
case "$tier" in all | check) ;; *) echo "tests/run.sh: no tier '$tier' (all, check)" >&2; exit 2 ;; esac
[ -w "$(dirname "$lock")" ] || lock=${TMPDIR:-/tmp}/ctxprof-tests.lock

can_root=1
why_root=""
if [ "$(id -u)" != 0 ]; then can_root=0; why_root="not root"; fi
if [ ! -r /sys/kernel/btf/vmlinux ]; then can_root=0; why_root="${why_root:+$why_root, }no /sys/kernel/btf/vmlinux"; fi

# the source of a test: the script itself, or the .c of a built program
source_of() { # VARIANT PATH
	local t=${2#"$1"/}
	[ -f "$2" ] && [[ "$2" == *.sh ]] && { echo "$2"; return; }
	echo "$t.c"
}
# the words after "ctxprof-test:" in the first 40 lines of the test's source
marks_of() { # VARIANT PATH
	local src
	src=$(source_of "$1" "$2")
	[ -f "$src" ] || return 0
	head -n 40 "$src" | sed -n 's/.*ctxprof-test:[[:space:]]*\([a-z ,]*\).*/\1/p' | tr ',' ' '
}

# run_one VARIANT KIND PATH: runs a test and writes its result (the line printed, the verdict
# and the time) to $resdir; the log in $logdir
run_one() {
	local variant=$1 kind=$2 t=$3
	local name="$variant:${t#"$variant"/}"
	local id
	id=$(echo "$name" | tr '/:' '__')
	local log="$logdir/$id.log" res="$resdir/$id"
	local t0=$SECONDS rc line verdict
	# Criterion programs name each case and its verdict ([SKIP] a::b: why) at verbosity 1.
	# Under the sanitizers they run their cases one at a time: Criterion 2.4's parallel runner
	# leaks 48 bytes of its own (calloc inside criterion_run_all_tests), which LeakSanitizer
	# reports as the program's (test_jfr_writer, 3 runs of 3; none with one job).
	local env=(TEST_BUILD="$variant" CRITERION_VERBOSITY_LEVEL=1)
	case "$variant" in */asan | */tsan) env+=(CRITERION_JOBS=1) ;; esac
	# the test never holds the host lock itself ({LOCK_FD}>&-: closed in its process only): a
	# process it leaves behind would keep the lock and stall the alone tests for good
	env "${env[@]}" timeout --kill-after=10 "$timeout_s" "$t" >"$log" 2>&1 </dev/null {LOCK_FD}>&-
	rc=$?
	local dt=$((SECONDS - t0))
	local skipped
	skipped=$(grep -c '^\[SKIP\] ' "$log")
	if [ $rc = 0 ] && [ "$skipped" -gt 0 ] && grep -q '^\[====\] Synthesis: Tested: 0 ' "$log"; then
		verdict=SKIPPED
		line="SKIPPED  $name   (every case skipped: $(grep -m1 '^\[SKIP\] ' "$log" | cut -c8-160))"
	elif [ $rc = 0 ]; then
		local note=""
		[ "$skipped" -gt 0 ] && note="; $skipped cases skipped: $(grep -m1 '^\[SKIP\] ' "$log" | cut -c8-120)"
		verdict=PASS
		line="PASS     $name   (${dt}s$note)"
	elif [ $rc = 77 ]; then
		verdict=SKIPPED
		line="SKIPPED  $name   ($(grep -m1 -i 'skip' "$log" | cut -c1-160))"
	else
		verdict=FAIL
		line="FAIL     $name   (exit $rc, ${dt}s) — log: $log"$'\n'"$(tail -n 40 "$log" | sed 's/^/    | /')"
	fi
	printf '%s %s %s\n%s\n' "$verdict" "$dt" "$name" "$line" >"$res.tmp" && mv "$res.tmp" "$res"
}

# the queue: "KIND VARIANT PATH" entries by tier (check, then rest) and by side by side /
# pairs / alone
par_check=() pair_check=() own_check=() alone_check=() quiet_check=()
par_rest=() pair_rest=() own_rest=() alone_rest=() quiet_rest=() skipped_lines=()
for variant in "$@"; do
	list="$variant/tests.list"
	if [ ! -f "$list" ]; then
		skipped_lines+=("FAIL     $variant: no $list")
		continue
	fi
	while read -r kind t; do
		case "$variant" in
		*/tsan) [ "$kind" = tsan ] || continue ;;
		*/asan) [ "$kind" = unit ] || [ "$kind" = tsan ] || [ "$kind" = rootsan ] || continue ;;
		*) ;;
		esac
		name="$variant:${t#"$variant"/}"
		[ -n "${TEST_FILTER:-}" ] && [[ "$name" != *"$TEST_FILTER"* ]] && continue
		marks=" $(marks_of "$variant" "$t") "
		tierof=rest
		case "$variant" in */asan | */tsan) ;; *)
			{ [ "$kind" = unit ] || [ "$kind" = tsan ] || [ "$kind" = plain ] || [[ "$marks" == *" check "* ]]; } && tierof=check ;;
		esac
		[ "$tier" = check ] && [ $tierof = rest ] && continue
		if { [ "$kind" = root ] || [ "$kind" = rootsan ]; } && [ $can_root = 0 ]; then
			skipped_lines+=("SKIPPED  $name   (needs root + BTF: $why_root)")
			continue
		fi
		how=par
		case "$kind" in
		root | rootsan)
			if [[ "$marks" == *" pair "* ]]; then
				how=pair
				[[ "$marks" == *" own "* ]] && how=own
			elif [[ "$marks" != *" parallel "* ]]; then
				how=alone
				[[ "$marks" == *" quiet "* ]] && how=quiet
			fi ;;
		*) [[ "$marks" == *" alone "* ]] && how=quiet ;;
		esac
		case "${TEST_PHASE:-}-$how" in -* | parallel-par | pair-pair | pair-own | alone-alone | alone-quiet) ;; *) continue ;; esac
		if [ $how != alone ] && [ $how != quiet ] && [[ "$marks" == *" long "* ]]; then
			eval "${how}_$tierof=(\"\$kind \$variant \$t\" \"\${${how}_$tierof[@]}\")"
		else
			eval "${how}_$tierof+=(\"\$kind \$variant \$t\")"
		fi
	done <"$list"
done

# print the results not printed yet, in the order they ended
printed=" "
report() {
	local f
	for f in $(ls -tr "$resdir" 2>/dev/null); do
		[[ "$f" == *.tmp ]] && continue
		[[ "$printed" == *" $f "* ]] && continue
		printed="$printed$f "
		tail -n +2 "$resdir/$f"
	done
}
for l in "${skipped_lines[@]}"; do echo "$l"; done

# run_phase QUEUE N LOCKING (an array name): its tests N at a time, each holding the host lock
# as LOCKING says (-s shared, -x exclusive), or (LOCKING "held") under the lock the caller holds
run_phase() {
	local -n q_=$1
	local n=$2 how=$3 running=0 entry kind variant t
	for entry in "${q_[@]}"; do
		read -r kind variant t <<<"$entry"
		while [ $running -ge "$n" ]; do
			wait -n
			running=$((running - 1))
			report
		done
		if [ "$how" = held ]; then
			(LOCK_FD=$held run_one "$variant" "$kind" "$t") &
		else
			(exec {lk}>>"$lock"; flock "$how" "$lk"; LOCK_FD=$lk run_one "$variant" "$kind" "$t") &
		fi
		running=$((running + 1))
	done
	while [ $running -gt 0 ]; do
		wait -n
		running=$((running - 1))
		report
	done
}

# run_mixed ALONE OWN (array names), under the lock the caller holds: the ALONE tests one at
# a time and the OWN tests beside them, at most $pair_jobs tests at once (the OWN ones two at
# a time once the ALONE ones are done)
run_mixed() {
	local -n a_=$1 o_=$2
	local ai=0 oi=0 running=0 alone_pid= pid kind variant t
	while :; do
		while [ $running -lt "$pair_jobs" ]; do
			if [ -z "$alone_pid" ] && [ $ai -lt ${#a_[@]} ]; then
				read -r kind variant t <<<"${a_[ai]}"
				ai=$((ai + 1))
				(LOCK_FD=$held run_one "$variant" "$kind" "$t") &
				alone_pid=$!
			elif [ $oi -lt ${#o_[@]} ]; then
				read -r kind variant t <<<"${o_[oi]}"
				oi=$((oi + 1))
				(LOCK_FD=$held run_one "$variant" "$kind" "$t") &
			else
				break
			fi
			running=$((running + 1))
		done
		[ $running -gt 0 ] || break
		wait -n -p pid
		running=$((running - 1))
		[ "$pid" = "$alone_pid" ] && alone_pid=
		report
	done
}

# run_tier NAME (the tier's queues: par_NAME, pair_NAME, own_NAME, alone_NAME, quiet_NAME):
# the side-by-side ones $jobs at a time, each holding the host lock shared; then under one
# exclusive hold of it the pair ones $pair_jobs at a time, the alone ones one by one with the
# own ones beside them, and the quiet ones one by one
tier_times=()
run_tier() {
	local t0=$SECONDS t1 t2 t3 held=
	local -n p1_=par_$1 p2_=pair_$1 p3_=own_$1 p4_=alone_$1 p5_=quiet_$1
	[ $((${#p1_[@]} + ${#p2_[@]} + ${#p3_[@]} + ${#p4_[@]} + ${#p5_[@]})) -gt 0 ] || return 0
	run_phase "par_$1" "$jobs" -s
	t1=$SECONDS
	# the exclusive hold only when a test needs it: a filtered run of side-by-side tests does
	# not wait for another run's pairs
	[ $((${#p2_[@]} + ${#p3_[@]} + ${#p4_[@]} + ${#p5_[@]})) -gt 0 ] && exec {held}>>"$lock" && flock -x "$held"
	run_phase "pair_$1" "$pair_jobs" held
	t2=$SECONDS
	run_mixed "alone_$1" "own_$1"
	t3=$SECONDS
	run_phase "quiet_$1" 1 held
	[ -n "${held:-}" ] && exec {held}>&-
	tier_times+=("$(printf 'tier %-5s %4d s: %3d tests side by side in %d s, %3d in pairs in %d s, %3d alone with %d own beside them in %d s, %d quiet in %d s' \
		"$1" $((SECONDS - t0)) ${#p1_[@]} $((t1 - t0)) ${#p2_[@]} $((t2 - t1)) ${#p4_[@]} ${#p3_[@]} $((t3 - t2)) ${#p5_[@]} $((SECONDS - t3)))")
}
run_tier check
run_tier rest

pass=0 fail=0 skip=0
failed=()
for l in "${skipped_lines[@]}"; do
	case "$l" in FAIL*) fail=$((fail + 1)); failed+=("${l#FAIL     }") ;; *) skip=$((skip + 1)) ;; esac
done
for f in "$resdir"/*; do
	[ -f "$f" ] || continue
	read -r verdict dt name <"$f"
	case "$verdict" in
	PASS) pass=$((pass + 1)) ;;
	SKIPPED) skip=$((skip + 1)) ;;
	*) fail=$((fail + 1)); failed+=("$name") ;;
	esac
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
if ls "$resdir"/* >/dev/null 2>&1; then
	echo "slowest tests:"
	for f in "$resdir"/*; do head -n 1 "$f"; done | sort -k2,2rn | head -n 10 |
		awk '{ printf "  %5ds  %s\n", $2, $3 }'
fi
[ ${#tier_times[@]} -gt 0 ] && printf '%s\n' "${tier_times[@]}"
[ $fail -gt 0 ] && printf 'failed: %s\n' "${failed[@]}"
echo "tests: $pass passed, $fail failed, $skip skipped"
[ $fail = 0 ]
