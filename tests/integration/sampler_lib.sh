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
# ctxprof record ARGS under `timeout SECONDS`, its stderr in $TMP/e (and printed): fails the
# test unless it exits 0. Variables set before the call (VAR=x record_ok ...) reach ctxprof.
record_ok() { # SECONDS ARGS...
	local t=$1 rc
	shift
	timeout "$t" "$CTXPROF" record "$@" >/dev/null 2>"$TMP/e"
	rc=$?
	cat "$TMP/e"
	[ $rc = 0 ] || fail "record $* failed (exit $rc)"
}
# samples in collapsed file $1 on lines matching the extended regex $2
count() { grep -E -- "$2" "$1" | awk '{ n += $NF } END { print n + 0 }'; }
