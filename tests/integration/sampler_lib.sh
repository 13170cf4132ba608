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
# samples in collapsed file $1 on lines matching the extended regex $2
count() { grep -E -- "$2" "$1" | awk '{ n += $NF } END { print n + 0 }'; }
