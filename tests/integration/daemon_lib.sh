# SPDX-License-Identifier: MIT
# daemon_lib.sh — helpers for the `ctxprof daemon` root tests (sourced, not run). On top of
# sampler_lib.sh: OUT (output dir), ST (status file), start_daemon ARGS..., stop_daemon,
# dstat KEY (a field of the daemon's status line), jfr_ok FILE (summary, print, print --json),
# and this run's own targets: spawn, CG/CGSEL.
. "$(dirname "${BASH_SOURCE[0]}")/sampler_lib.sh"
OUT=$TMP/out
ST=$TMP/status
DLOG=$TMP/daemon.log
DPID=
KIDS=
# This run's targets live in a cgroup v2 directory the run creates (CG, its path in the
# hierarchy CGSEL: select them with `--cgroup "$CGSEL"`). A daemon selecting by a process
# name would also take any other process of that name: another test run on the same host
# made test_daemon_split.sh see 3 processes instead of its 2.
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$CG2" ] && [ -f "$CG2/cgroup.procs" ] || skip "needs a cgroup v2 hierarchy (targets of this run only)"
CG=$(mktemp -d "$CG2/ctxprof-test.XXXXXX" 2>/dev/null) || skip "cannot create a cgroup in $CG2"
CGSEL=${CG#"$CG2"}
cleanup() {
	[ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	for k in $KIDS; do kill -9 "$k" 2>/dev/null; done
	# whatever else is left in the run's cgroups (targets' children), then the cgroups
	find "$CG" -name cgroup.kill -exec sh -c 'echo 1 >"$1"' sh {} \; 2>/dev/null
	wait 2>/dev/null
	find "$CG" -depth -type d 2>/dev/null | while read -r d; do
		for _ in $(seq 50); do rmdir "$d" 2>/dev/null && break; sleep 0.1; done
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
# spawn [-g SUBGROUP] CMD ARGS...: runs CMD in the background inside the run's cgroup (or
# its subgroup SUBGROUP, created on demand) from before its exec, so the daemon sees it
# there at the exec; its pid in SPAWNED (and in KIDS, killed at exit). Redirections on the
# call apply to CMD.
spawn() {
	local g=$CG
	if [ "$1" = -g ]; then
		g=$CG/$2
		shift 2
		mkdir -p "$g" || fail "cannot create cgroup $g"
	fi
	(echo "$BASHPID" >"$g/cgroup.procs" || fail "cannot move a process into $g"; exec "$@") &
	SPAWNED=$!
	KIDS="$KIDS $SPAWNED"
}
# printed when a wait_for times out: what the daemon said and reported last
wait_for_context() {
	echo "--- daemon log (last 20 lines):"
	tail -20 "$DLOG" 2>/dev/null
	echo "--- status file:"
	cat "$ST" 2>/dev/null
}
# the daemon is up (its first status file) or has died (its log printed, the test failed)
daemon_up() {
	[ -s "$ST" ] && return 0
	kill -0 "$DPID" 2>/dev/null || { cat "$DLOG"; fail "daemon exited at start"; }
	return 1
}
# The tests' daemons rewrite their status file every STATUS_PERIOD: 1 s (the shortest; 2 s by
# default), so that a wait for the next rewrite takes half as long. STATUS_PERIOD= (set
# before this file is sourced) keeps the daemon's default.
STATUS_PERIOD=${STATUS_PERIOD-1s}
start_daemon() {
	rm -f "$ST"
	"$CTXPROF" daemon --directory "$OUT" --status-file "$ST" \
		${STATUS_PERIOD:+--status-period "$STATUS_PERIOD"} "$@" >>"$DLOG" 2>&1 &
	DPID=$!
	wait_for 30 "the daemon's first status file" daemon_up
}
# start_daemon ARGS... with a config (MCONF) that selects this run's cgroup and serves the
# metrics on a free loopback port (listen = 127.0.0.1:0); URL: the address the log names
MCONF=$TMP/metrics.conf
start_daemon_metrics() {
	cat >"$MCONF" <<CONF
[targets]
mode = selectors
cgroup = $CGSEL
[metrics]
listen = 127.0.0.1:0
CONF
	start_daemon --config "$MCONF" "$@"
	wait_for 20 "the metrics address in the log" \
		grep -q 'metrics: serving http://127.0.0.1:[0-9]*/metrics' "$DLOG"
	URL=$(grep -o 'http://127.0.0.1:[0-9]*/metrics' "$DLOG" | head -1)
}
stop_daemon() {
	kill -TERM "$DPID"
	wait "$DPID"
	local rc=$?
	DPID=
	[ "$rc" = 0 ] || { tail -20 "$DLOG"; fail "daemon exited $rc after SIGTERM"; }
}
# Capabilities and no_new_privs are per thread: every thread of the daemon (JFR writer,
# metrics, uploaders) must hold the main thread's reduced set, not the one it was created with.
threads_dropped() { # MIN_THREADS
	local eff n=0 st teff tnnp
	eff=$(awk '/^CapEff/ { print $2 }' /proc/$DPID/status)
	for st in /proc/$DPID/task/*/status; do
		teff=$(awk '/^CapEff/ { print $2 }' "$st" 2>/dev/null)
		[ -n "$teff" ] || continue # the thread ended
		tnnp=$(awk '/^NoNewPrivs/ { print $2 }' "$st" 2>/dev/null)
		n=$((n + 1))
		[ "$teff" = "$eff" ] || fail "thread $st has CapEff $teff, the main thread $eff"
		[ "$tnnp" = 1 ] || fail "thread $st has no_new_privs $tnnp"
	done
	[ "$n" -ge "$1" ] || fail "expected at least $1 daemon threads, saw $n"
	echo "$n daemon threads, all CapEff $eff NoNewPrivs 1"
}
dstat() { grep -s '^daemon ' "$ST" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# wait until the status file is rewritten (every STATUS_PERIOD; much later when the daemon is busy,
# e.g. under ASan with 50 new processes at once)
status_refresh() {
	local t
	t=$(dstat updated)
	wait_for 60 "the status file rewritten" eval '[ "$(dstat updated)" != "$t" ]'
}
# true once the status file shows PID as a target (with more KEY=VALUE fields on its line
# matching the extended regex REST, e.g. 'context=yes')
is_target() { grep -Eq "^target pid=$1 ${2:+(.* )?$2}" "$ST"; }
# true once the status file shows target PID with more than N samples (of KEY, default
# samples: e.g. context_samples)
target_over() { # PID N [KEY]
	local v
	v=$(grep "^target pid=$1 " "$ST" | tr ' ' '\n' | sed -n "s/^${3:-samples}=//p")
	[ "${v:-0}" -gt "$2" ]
}
# true once the status file shows no target and an empty targets map
drained() { [ "$(dstat targets)" = 0 ] && [ "$(dstat map_entries)" = 0 ]; }
# every JDK view of a file works: summary, print, print --json (and that is valid JSON)
jfr_ok() {
	jfr summary "$1" >"$TMP/summary.txt" 2>&1 || { cat "$TMP/summary.txt"; fail "jfr summary $1 failed"; }
	grep -qi 'error\|exception' "$TMP/summary.txt" && { cat "$TMP/summary.txt"; fail "jfr summary $1 reported an error"; }
	jfr print "$1" >"$TMP/print.txt" 2>&1 || { tail -5 "$TMP/print.txt"; fail "jfr print $1 failed"; }
	grep -q -E "$JFR_ERROR_RE" "$TMP/print.txt" && { grep -E -m3 "$JFR_ERROR_RE" "$TMP/print.txt"; fail "jfr print $1 reported an error"; }
	jfr print --json "$1" >"$TMP/print.json" 2>&1 || { tail -5 "$TMP/print.json"; fail "jfr print --json $1 failed"; }
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/print.json" ||
		fail "jfr print --json $1 is not valid JSON"
	return 0
}
# jfr_ok_all FILE...: jfr_ok of every file with three JDK runs in all, not three a file (a
# test with a file per process has dozens: minutes of JVM starts). Each file must be
# non-empty; their concatenation is what the JDK reads (a JFR file is a sequence of
# self-contained chunks, `jfr assemble` joins them so), so every chunk of every file is
# summarised, printed and printed as JSON, and a torn or foreign file breaks the parse where
# it starts.
jfr_ok_all() {
	local f
	[ $# -gt 0 ] || fail "jfr_ok_all: no file"
	for f in "$@"; do [ -s "$f" ] || fail "$f is empty"; done
	cat "$@" >"$TMP/all-files.jfr" || fail "cannot join $*"
	jfr_ok "$TMP/all-files.jfr"
}
# samples with context (a contextId or a span) of the given tids in a file: prints the count
# (osThreadId is the tid; samples of a process are told apart by the tids it printed)
samples_of_tids() { # FILE TID...
	local f=$1
	shift
	jfr print --json --events jdk.ExecutionSample "$f" |
		python3 -c 'import json,sys
tids=set(int(t) for t in sys.argv[1:])
d=json.load(sys.stdin)
print(sum(1 for e in d["recording"]["events"] if e["values"]["sampledThread"]["osThreadId"] in tids
          and (e["values"]["contextId"] or e["values"]["spanId"])))' "$@"
}
