#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# `ctxprof status` tells a live daemon from a dead or hung one, by its exit status (0
# running, 1 dead, 3 stopped or absent, 5 stale) and in words, in the table and in --json
# (daemon.state): a running daemon; one stopped with SIGSTOP until its status file is older
# than 5 rewrite periods (stale), then resumed (running again); one killed with SIGKILL, whose
# file still says state=running (dead: its process is gone); one stopped with SIGTERM
# (stopped); no status file (absent); a file without a daemon line (unknown, 4).
. "$(dirname "$0")/daemon_lib.sh"
# status_rc [--json]: runs `ctxprof status`, output in $TMP/st.out, errors in $TMP/st.err;
# its exit status in RC
status_rc() {
	"$CTXPROF" status "$@" --status-file "$ST" >"$TMP/st.out" 2>"$TMP/st.err"
	RC=$?
}
json_state() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["daemon"]["state"])' "$TMP/st.out"; }
start_daemon --mode selectors --cgroup "$CGSEL"
status_rc
cat "$TMP/st.out"
[ "$RC" = 0 ] || { cat "$TMP/st.err"; fail "status of a running daemon exited $RC"; }
grep -q "^daemon $DPID (running)" "$TMP/st.out" || fail "not reported as running"
status_rc --json
[ "$RC" = 0 ] && [ "$(json_state)" = running ] || fail "--json: $RC $(cat "$TMP/st.out")"

# hung: SIGSTOP until the file is older than 5 periods (2 s each); resumed before the
# cleanup's SIGTERM, whatever happens
trap 'kill -CONT "$DPID" 2>/dev/null; cleanup' EXIT
kill -STOP "$DPID"
stale() { status_rc; [ "$RC" = 5 ]; }
wait_for 40 "status exit 5 (stale) for a stopped daemon" stale
cat "$TMP/st.out" "$TMP/st.err"
grep -q "^daemon $DPID (stale: .*stalled" "$TMP/st.out" || fail "stale not said in the table"
grep -q "is stale" "$TMP/st.err" || fail "stale not said on stderr"
status_rc --json
[ "$RC" = 5 ] && [ "$(json_state)" = stale ] || fail "--json stale: $RC $(cat "$TMP/st.out")"
kill -CONT "$DPID"
running() { status_rc; [ "$RC" = 0 ]; }
wait_for 30 "status exit 0 after SIGCONT" running

# killed: the file still says running, the process is gone (a zombie until reaped, then
# nothing): dead, exit 1, at once and after the reap
kill -9 "$DPID"
grep -q "^daemon pid=$DPID state=running " "$ST" || fail "the status file should still say running"
dead() { status_rc; [ "$RC" = 1 ]; }
wait_for 10 "status exit 1 for a SIGKILLed daemon (zombie)" dead
wait "$DPID" 2>/dev/null
DPID_KILLED=$DPID
DPID=
status_rc
cat "$TMP/st.out" "$TMP/st.err"
[ "$RC" = 1 ] || fail "status of a SIGKILLed daemon exited $RC"
grep -q "^daemon $DPID_KILLED (dead: process $DPID_KILLED is gone" "$TMP/st.out" || fail "dead not said in the table"
grep -q "the daemon is dead" "$TMP/st.err" || fail "dead not said on stderr"
status_rc --json
[ "$RC" = 1 ] && [ "$(json_state)" = dead ] || fail "--json dead: $RC $(cat "$TMP/st.out")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["daemon"]; assert "gone" in d["reason"] and d["age_s"] >= 0, d' "$TMP/st.out" ||
	fail "--json: no reason or age"

# the pid reused by another process (this shell's child): still dead
sed -i "s/^daemon pid=[0-9]* /daemon pid=$$ /" "$ST"
status_rc
[ "$RC" = 1 ] && grep -q "another process" "$TMP/st.out" || { cat "$TMP/st.out"; fail "a reused pid is not dead ($RC)"; }

# stopped cleanly
start_daemon --mode selectors --cgroup "$CGSEL"
stop_daemon
status_rc
cat "$TMP/st.out"
[ "$RC" = 3 ] && grep -q "^daemon .*(stopped" "$TMP/st.out" || fail "status of a stopped daemon exited $RC"
# a daemon line longer than any fixed buffer (it grows with the daemon's counters): read whole,
# its state found after 8 KiB of another field
cp "$ST" "$TMP/st.saved"
stopped_pid=$(sed -n 's/^daemon pid=\([0-9]*\) .*/\1/p' "$ST")
python3 - "$ST" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines(True)
for i, l in enumerate(lines):
    if l.startswith("daemon "):
        lines[i] = "daemon pad=" + "x" * 8192 + " " + l[len("daemon "):]
open(sys.argv[1], "w").write("".join(lines))
PY
status_rc
[ "$RC" = 3 ] && grep -q "^daemon $stopped_pid (stopped" "$TMP/st.out" ||
	{ cat "$TMP/st.out"; fail "a daemon line over 8 KiB: exit $RC, its pid or state not read"; }
cp "$TMP/st.saved" "$ST"
# no file at all
rm -f "$ST"
status_rc --json
[ "$RC" = 3 ] && [ "$(json_state)" = absent ] || fail "no status file: $RC $(cat "$TMP/st.out")"
# a file without a daemon line (cut, or not a status file): unknown
echo "target pid=1 comm=x" >"$ST"
status_rc --json
[ "$RC" = 4 ] && [ "$(json_state)" = unknown ] || fail "no daemon line: $RC $(cat "$TMP/st.out")"
echo "PASS: daemon status"
