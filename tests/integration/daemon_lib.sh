# daemon_lib.sh — helpers for the `ctxprof daemon` root tests (sourced, not run). On top of
# sampler_lib.sh: OUT (output dir), ST (status file), start_daemon ARGS..., stop_daemon,
# dstat KEY (a field of the daemon's status line), jfr_ok FILE (summary, print, print --json).
. "$(dirname "$0")/sampler_lib.sh"
OUT=$TMP/out
ST=$TMP/status
DLOG=$TMP/daemon.log
DPID=
KIDS=
cleanup() {
	[ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	for k in $KIDS; do kill -9 "$k" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
start_daemon() {
	rm -f "$ST"
	"$CTXPROF" daemon --directory "$OUT" --status-file "$ST" "$@" >>"$DLOG" 2>&1 &
	DPID=$!
	for _ in $(seq 300); do
		[ -s "$ST" ] && return 0
		kill -0 "$DPID" 2>/dev/null || { cat "$DLOG"; fail "daemon exited at start"; }
		sleep 0.1
	done
	cat "$DLOG"
	fail "daemon wrote no status file in 30 s"
}
stop_daemon() {
	kill -TERM "$DPID"
	wait "$DPID"
	local rc=$?
	DPID=
	[ "$rc" = 0 ] || { tail -20 "$DLOG"; fail "daemon exited $rc after SIGTERM"; }
}
dstat() { grep '^daemon ' "$ST" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# wait until the status file is rewritten (every 2 s; much later when the daemon is busy,
# e.g. under ASan with 50 new processes at once)
status_refresh() {
	local t
	t=$(dstat updated)
	for _ in $(seq 600); do
		[ "$(dstat updated)" != "$t" ] && return 0
		sleep 0.1
	done
	fail "status file not rewritten in 60 s"
}
# every JDK view of a file works: summary, print, print --json (and that is valid JSON)
jfr_ok() {
	jfr summary "$1" >"$TMP/summary.txt" 2>&1 || { cat "$TMP/summary.txt"; fail "jfr summary $1 failed"; }
	grep -qi 'error\|exception' "$TMP/summary.txt" && { cat "$TMP/summary.txt"; fail "jfr summary $1 reported an error"; }
	jfr print "$1" >"$TMP/print.txt" 2>&1 || { tail -5 "$TMP/print.txt"; fail "jfr print $1 failed"; }
	grep -q -i -E '^error|exception' "$TMP/print.txt" && { grep -i -E -m3 '^error|exception' "$TMP/print.txt"; fail "jfr print $1 reported an error"; }
	jfr print --json "$1" >"$TMP/print.json" 2>&1 || { tail -5 "$TMP/print.json"; fail "jfr print --json $1 failed"; }
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/print.json" ||
		fail "jfr print --json $1 is not valid JSON"
	return 0
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
