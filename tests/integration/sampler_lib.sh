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
[ -x "$CTXPROF" ] || fail "no $CTXPROF (run make)"
[ "$(id -u)" = 0 ] || skip "needs root"
[ -r /sys/kernel/btf/vmlinux ] || skip "needs kernel BTF"
# ctxprof record ARGS under `timeout SECONDS`, its stderr in $TMP/e (and printed), its
# counters in $TMP/stats.json (--stats-json; read them with stat_json): fails the test
# unless it exits 0. Variables set before the call (VAR=x record_ok ...) reach ctxprof.
record_ok() { # SECONDS ARGS...
	local t=$1 rc
	shift
	timeout "$t" "$CTXPROF" record --stats-json "$TMP/stats.json" "$@" >/dev/null 2>"$TMP/e"
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
