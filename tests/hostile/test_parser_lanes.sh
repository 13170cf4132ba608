#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 19 item 6, the parser helper as a shared target: one helper parsed every user's files,
# so a user whose files crash it (a libelf/libdw bug is enough) had it restarted at most once
# a second, and every other request in between refused: the frames of everyone else's new
# modules stayed unnamed while the attack lasted. Now files only root could have written go to
# a helper of their own (util/parser_client.h, the system lane). Here an unprivileged user
# keeps running new copies of a workload (files it owns, each a new module: requests on the
# users' lane), and the users' helper is killed every 20 ms, as often as the attacker's files
# could crash it. A process started meanwhile from a root-owned binary must get its frames
# named, by a system helper that was never restarted and never saw one of the attacker's
# files, while the users' lane keeps restarting (parser_restarts). (The same crash loop aimed
# at the single helper of before still let that binary be named, only later: a restart takes
# the next request, whoever's. What the lanes change is which helper an attacker's bytes can
# stall, crash or take over: never the one that answers for root's files.)
. "$(dirname "$0")/hostile_lib.sh"

WL=$(readlink -f "$B/tests/workloads/wl_deep")
WLA=$B/tests/workloads/wl_attrib
[ -x "$WL" ] && [ -x "$WLA" ] || fail "no $WL or $WLA (run make test-bins)"
attacker_user
cp "$WLA" "$ATK_HOME/wl_attrib" && chmod 0755 "$ATK_HOME/wl_attrib"
children() { cat /proc/"$DPID"/task/*/children 2>/dev/null | tr ' ' '\n' | grep -v '^$'; }
# stacks of the recording so far (complete chunks) that name FUNCTION
named() { # FUNCTION
	cp "$(dstat current_file)" "$TMP/so-far.jfr" 2>/dev/null || return 1
	"$CTXPROF" report --format collapsed "$TMP/so-far.jfr" 2>/dev/null | grep -q "$1"
}

start_default_daemon --mode selectors --cgroup "$CGSEL" --chunk-period 1s
SYS=$(dstat parser_pid)
USERS=$(dstat parser_users_pid)
[ -n "$SYS" ] && [ "$SYS" != 0 ] || fail "no system lane's helper in the status file"
[ -n "$USERS" ] && [ "$USERS" != 0 ] && [ "$USERS" != "$SYS" ] ||
	fail "no users' lane helper of its own (parser_users_pid=${USERS:-absent}, parser_pid=$SYS)"
echo "parser helpers: system lane $SYS, users' lane $USERS (uid $(awk '/^Uid:/ { print $2 }' /proc/"$USERS"/status))"

cat >"$ATK_HOME/churn.sh" <<'EOF2'
cd "$1" || exit 1
i=0
while :; do # a new binary (a new module) every second
	i=$((i + 1))
	cp wl_attrib "w$i" && "./w$i" long 1 1 >/dev/null
	rm -f "w$i"
done
EOF2
chmod 0644 "$ATK_HOME/churn.sh"
spawn_attacker /bin/sh "$ATK_HOME/churn.sh" "$ATK_HOME"
ATTACKER=$SPAWNED
wait_for 60 "the attacker's workloads sampled" eval '[ "$(dstat processes_seen)" -ge 2 ]'
# the users' lane crashing at every request: every child of the daemon but the system helper,
# killed within a millisecond of its start (until the daemon is gone: the cleanup waits for
# this loop)
/usr/bin/python3 - "$DPID" "$SYS" <<'PYEOF' &
import glob, os, signal, sys, time
daemon, spare = sys.argv[1], sys.argv[2]
while os.path.exists("/proc/" + daemon):
    for f in glob.glob("/proc/%s/task/*/children" % daemon):
        try:
            kids = open(f).read().split()
        except OSError:
            continue
        for k in kids:
            if k != spare:
                try:
                    os.kill(int(k), signal.SIGKILL)
                except OSError:
                    pass
    time.sleep(0.001)
PYEOF
KILLER=$!
restarted() { status_refresh; [ "$(dstat parser_restarts)" -ge 2 ] 2>/dev/null; }
wait_for 60 "the users' lane restarted under the crash loop" restarted
spawn "$WL" 120 4
wait_for 90 "frames of a root-owned binary started during the crash loop named (spin)" named spin
status_refresh
kill "$KILLER"
wait "$KILLER" 2>/dev/null
[ "$(dstat parser_pid)" = "$SYS" ] || fail "the system lane's helper was restarted ($SYS -> $(dstat parser_pid))"
[ -e "/proc/$SYS" ] || fail "the system lane's helper $SYS is gone"
# the root-owned binary was parsed by the system lane (its helper keeps the modules it parses
# open), and none of the attacker's files ever reached it
fds=$(ls -l /proc/"$SYS"/fd/ 2>/dev/null)
grep -qF "$WL" <<<"$fds" || fail "the system lane's helper never opened $WL:"$'\n'"$fds"
! grep -qF "$ATK_HOME" <<<"$fds" || fail "an attacker's file reached the system lane:"$'\n'"$fds"
echo "under the crash loop: parser_restarts $(dstat parser_restarts), system helper $SYS never restarted," \
	"the root-owned binary's frames named"
assert_fresh
stop_daemon
for f in "$OUT"/*.jfr; do jfr_ok "$f"; done
echo PASS
