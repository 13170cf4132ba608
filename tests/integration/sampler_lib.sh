# SPDX-License-Identifier: MIT
# sampler_lib.sh — helpers shared by the sampler's root tests (sourced, not run).
# Sets CTXPROF, WL (workload dir), TMP (removed at exit); fail() exits 1 with a message.
set -u
B=${TEST_BUILD:-build}
CTXPROF=$B/ctxprof
WL=$B/tests/workloads
TMP=$(mktemp -d /tmp/ctxprof-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIPPED: $*"; exit 77; }
# Oracles: the real readers a test checks its output against (the JDK's jfr and java,
# chromium, promtool, go tool pprof, ../shared/tools or $CTXPROF_TOOLS). A test never passes
# without one it needs: CI (CI=true) must have them all, so there a missing one fails the
# test; elsewhere the test is SKIPPED with the reason.
#   need_oracle WHAT       now: everything after depends on it
#   oracle_missing WHAT    the test goes on with its other checks; oracle_verdict (call it
#                          before the final PASS) then ends it SKIPPED, naming what was missing
CTXPROF_TOOLS=${CTXPROF_TOOLS:-../shared/tools}
ORACLES_MISSING=""
in_ci() { [ "${CI:-}" = true ]; }
need_oracle() { # what
	in_ci && fail "$1 missing: CI must have it (make deps-test; shared/tools beside the clone)"
	skip "$1 missing"
}
oracle_missing() { # what
	in_ci && fail "$1 missing: CI must have it (make deps-test; shared/tools beside the clone)"
	echo "SKIPPED (part): $1 missing, not checked; the other checks go on"
	ORACLES_MISSING="${ORACLES_MISSING:+$ORACLES_MISSING; }$1"
}
oracle_verdict() {
	[ -z "$ORACLES_MISSING" ] || skip "$ORACLES_MISSING missing (every other check passed)"
}
[ -x "$CTXPROF" ] || fail "no $CTXPROF (run make)"
[ "$(id -u)" = 0 ] || skip "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip "needs kernel BTF"
# What the JDK's jfr tool prints when it fails, and nothing a recording holds: its own error
# lines and Java exceptions (java.io.IOException: ..., Exception in thread ...). Not any line
# with "exception" in it: `jfr print` shows frame names such as _dl_catch_exception().
JFR_ERROR_RE='^[Ee]rror|^Exception in thread|^[a-z]+(\.[A-Za-z0-9_$]+)+(Exception|Error)(:|$)'
# ctxprof record ARGS under `timeout SECONDS`, its stdout (the output of a -- COMMAND) in
# $TMP/o, its stderr in $TMP/e (and printed), its counters in $TMP/stats.json (--stats-json;
# read them with stat_json): fails the test unless it exits 0. Variables set before the call
# (VAR=x record_ok ...) reach ctxprof.
record_ok() { # SECONDS ARGS...
	local t=$1 rc
	shift
	timeout "$t" "$CTXPROF" record --stats-json "$TMP/stats.json" "$@" >"$TMP/o" 2>"$TMP/e"
	rc=$?
	cat "$TMP/e"
	[ $rc = 0 ] || fail "record $* failed (exit $rc)"
}
# a counter of record's --stats-json file (a jq filter, e.g. .unwind_truncated): $2 or the
# last record_ok's. Prints nothing (and says why on stderr) when the file is not JSON or
# has no such counter: callers inside $(...) check for an empty value.
stat_json() { # FILTER [FILE]
	local f=${2:-$TMP/stats.json} v
	v=$(jq -r "($1) // empty" "$f") && [ -n "$v" ] && echo "$v" || echo "no $1 in $f" >&2
}
# samples in collapsed file $1 on lines matching the extended regex $2
count() { grep -E -- "$2" "$1" | awk '{ n += $NF } END { print n + 0 }'; }
# Wait for a fact, not for time: runs CMD (a command or a shell function) every 0.1 s until
# it succeeds, and fails the test naming WHAT if SECONDS pass first. The deadline only bounds
# a failing run (a loaded machine is slow); a passing one goes on as soon as CMD holds. A
# test library may define wait_for_context to print what explains a timeout.
wait_for() { # SECONDS WHAT CMD...
	local limit=$1 what=$2 t0=$SECONDS
	shift 2
	until "$@"; do
		if [ $((SECONDS - t0)) -ge "$limit" ]; then
			declare -F wait_for_context >/dev/null && wait_for_context
			fail "$what: not seen within $limit s"
		fi
		sleep 0.1
	done
}
# A test that changes a host-wide kernel setting holds this lock on its /proc/sys file
# until it has put the value back, so that two runs on one host do not restore it under
# each other. (flock on the sysctl file itself: no shared path of our own.)
sysctl_lock() { # FILE
	exec {SYSCTL_FD}<"$1" && flock "$SYSCTL_FD" || fail "cannot lock $1"
}
sysctl_unlock() { exec {SYSCTL_FD}<&-; }
# complete JFR chunks at the start of FILE (what a reader gets if the writer died now):
# prints "CHUNKS BYTES"
complete_chunks() { # FILE
	python3 -c 'import struct,sys
d=open(sys.argv[1],"rb").read(); off=n=0
while off+68 <= len(d) and d[off:off+4] == b"FLR\0":
    size=struct.unpack(">Q", d[off+8:off+16])[0]
    if size < 68 or off+size > len(d): break
    off += size; n += 1
print(n, off)' "$1"
}
# true once FILE holds more than N complete chunks
chunks_over() { # FILE N
	local n
	[ -e "$1" ] && read -r n _ < <(complete_chunks "$1") && [ "$n" -gt "$2" ]
}
# true once process PID has execed FILE (its /proc/PID/exe)
execed() { [ "$(readlink "/proc/$1/exe")" = "$(readlink -f "$2")" ]; }
# true once ctxprof (PID) has its perf events open: it samples from its loop's start, moments later
sampling() {
	local f
	for f in /proc/"$1"/fd/*; do
		[[ $(readlink "$f") == *perf_event* ]] && return 0
	done
	return 1
}
