#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: quiet
# An idle daemon sleeps until its deadlines (docs/daemon.md, "One event loop"): with no
# target and nothing due, its main thread wakes for the idle drain (1 s), the status file
# (2 s) and retention (30 s), not on a 100 ms polling ladder. Counted as the main thread's
# voluntary context switches over a wait, against a bound from those deadlines that a 100 ms
# ladder exceeds several times over. Then SIGTERM during the idle wait ends it at once: it
# exits 0 (polled with a deadline, no timing asserted beyond it) with its status "stopped".
STATUS_PERIOD= # the daemon's default (2 s): the deadlines counted below
. "$(dirname "$0")/daemon_lib.sh"
WINDOW=10 # seconds watched
# selectors of this run's empty cgroup: no target ever (mode context would retry every new
# process of the host for 3 s, and other work on the host execs)
start_daemon --mode selectors --cgroup "$CGSEL/none" --log-level debug
status_refresh # running, past its start
[ "$(dstat targets)" = 0 ] || fail "the daemon has targets: $(dstat targets)"
vcs() { awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$DPID/task/$DPID/status"; }
a=$(vcs)
t0=$(date +%s%N)
# a wait, not a synchronisation: the daemon is watched while it has nothing to do
sleep "$WINDOW"
b=$(vcs)
t1=$(date +%s%N)
[ "$(dstat targets)" = 0 ] || fail "the daemon gained targets: $(dstat targets)"
secs=$(((t1 - t0) / 1000000000))
# deadlines in the window: the idle drain every 1 s, the status file every 2 s, retention
# every 30 s; each may take a few more switches (a status write's rename, a writer's lock)
deadlines=$((secs + secs / 2 + secs / 30 + 1))
bound=$((3 * deadlines))
ladder=$((secs * 10)) # the 100 ms ladder: one wake per 100 ms at least
echo "main thread: $((b - a)) voluntary context switches in ${secs} s; deadlines $deadlines, bound $bound, a 100 ms ladder >= $ladder"
[ "$bound" -lt "$ladder" ] || fail "the bound ($bound) does not tell the ladder ($ladder) apart"
[ $((b - a)) -le "$bound" ] || fail "the idle daemon woke $((b - a)) times in ${secs} s (bound $bound from its deadlines)"

# SIGTERM during the idle wait: the loop's signalfd ends the wait at once
kill -TERM "$DPID"
gone() { ! kill -0 "$DPID" 2>/dev/null || grep -q '^daemon .*state=stopped' "$ST"; }
wait_for 5 "the daemon stopping after SIGTERM" gone
wait "$DPID"
rc=$?
DPID=
[ "$rc" = 0 ] || { tail -20 "$DLOG"; fail "daemon exited $rc after SIGTERM"; }
grep -q '^daemon .*state=stopped' "$ST" || { cat "$ST"; fail "status not stopped"; }
echo "SIGTERM while idle: exit 0, status stopped"
echo PASS
