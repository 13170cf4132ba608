#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# Issue 19 item 6, the parser helper as a shared target: one helper parsed every user's files,
# so a user whose files crash it (a libelf/libdw bug is enough) had it restarted at most once
# a second, and every other request in between refused: the frames of everyone else's new
# modules stayed unnamed while the attack lasted. Now files only root could have written go to
# a helper of their own (util/parser_client.h, the system lane). Here an unprivileged user
# keeps running new copies of a workload (files it owns, each a new module: requests on its
# own lane), and every helper but the system lane's is killed within a millisecond of its
# start, as often as the attacker's files could crash it. A process started meanwhile from a
# root-owned binary must get its frames named, by a system helper that was never restarted
# and never saw one of the attacker's files, while the attacker's lane keeps restarting
# (parser_restarts). (The same crash loop aimed at the single helper of before still let that
# binary be named, only later: a restart takes the next request, whoever's. What the lanes
# change is which helper an attacker's bytes can stall, crash or take over: never the one
# that answers for root's files; test_parser_user_lanes.sh: nor another user's.)
. "$(dirname "$0")/hostile_lib.sh"

WL=$(readlink -f "$B/tests/workloads/wl_deep")
[ -x "$WL" ] && [ -x "$B/tests/workloads/wl_attrib" ] || fail "no $WL or wl_attrib (run make test-bins)"
attacker_user
children() { cat /proc/"$DPID"/task/*/children 2>/dev/null | tr ' ' '\n' | grep -v '^$'; }
# stacks of the recording so far (complete chunks) that name FUNCTION
named() { # FUNCTION
	cp "$(dstat current_file)" "$TMP/so-far.jfr" 2>/dev/null || return 1
	"$CTXPROF" report --format collapsed "$TMP/so-far.jfr" 2>/dev/null | grep -q "$1"
}

start_default_daemon --mode selectors --cgroup "$CGSEL" --chunk-period 1s
SYS=$(dstat parser_pid)
[ -n "$SYS" ] && [ "$SYS" != 0 ] || fail "no system lane's helper in the status file"
[ "$(parser_lane_pid system)" = "$SYS" ] || fail "the system lane's helper $SYS is not ctxprof-parser:system"

spawn_churn
ATTACKER=$SPAWNED
wait_for 60 "the attacker's workloads sampled" eval '[ "$(dstat processes_seen)" -ge 2 ]'
atk_lane() { parser_lane_pid "uid=$ATK_UID" >/dev/null; }
wait_for 60 "the attacker's files parsed by a lane of its own" atk_lane
USERS=$(parser_lane_pid "uid=$ATK_UID")
echo "parser helpers: system lane $SYS, the attacker's lane $USERS (uid $(awk '/^Uid:/ { print $2 }' /proc/"$USERS"/status))"
# the attacker's lane crashing at every request: every helper but the system lane's killed
start_helper_killer "$SYS"
KILLER=$HELPER_KILLER
restarted() { status_refresh; [ "$(dstat parser_restarts)" -ge 2 ] 2>/dev/null; }
wait_for 60 "the attacker's lane restarted under the crash loop" restarted
spawn "$WL" 120 4
wait_for 90 "frames of a root-owned binary started during the crash loop named (spin)" named spin
status_refresh
kill "$KILLER"
wait "$KILLER" 2>/dev/null
[ "$(dstat parser_pid)" = "$SYS" ] || fail "the system lane's helper was restarted ($SYS -> $(dstat parser_pid))"
[ -e "/proc/$SYS" ] || fail "the system lane's helper $SYS is gone"
# the root-owned binary was parsed by the system lane (its helper keeps the modules it parses
# open), and none of the attacker's files ever reached it
assert_lane_parsed "$SYS" "$WL"
echo "under the crash loop: parser_restarts $(dstat parser_restarts), system helper $SYS never restarted," \
	"the root-owned binary's frames named"
assert_fresh
stop_daemon
jfr_ok_all "$OUT"/*.jfr
echo PASS
