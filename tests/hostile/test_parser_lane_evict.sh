#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# Issue 31 item 3, the bound on parser lanes: one helper per owner, at most PARSER_LANES_MAX
# (8) user lanes (util/parser_lanes.h). Ten unprivileged users each run a process publishing
# an OpenTelemetry process context, one after the other: each context is decoded in its
# owner's lane, so eleven owners (with root's lane, started with the daemon) pass through
# eight lanes. Every process must still get its context decoded (its file named by its
# service.name), the least recently used idle lanes evicted (parser_evictions), never more
# than eight user lanes' helpers running (parser_lanes, and the daemon's children), and no
# evicted helper left behind.
. "$(dirname "$0")/hostile_lib.sh"

WL=$B/tests/workloads/wl_otel
USERS_N=10    # owners besides root: more than the 8 lanes
LANES_MAX=8   # PARSER_LANES_MAX
[ -x "$WL" ] || fail "no $WL (run make test-bins)"
helpers() { # the daemon's children that run `ctxprof __parser`
	local k n=0
	for k in $(cat /proc/"$DPID"/task/*/children 2>/dev/null); do
		[ "$(tr '\0' '\n' <"/proc/$k/cmdline" 2>/dev/null | sed -n 2p)" = __parser ] && n=$((n + 1))
	done
	echo "$n"
}
decoded() { ls "$OUT"/ctxprof-*-"$1"-checkout-svc-*.jfr.part >/dev/null 2>&1; }

start_default_daemon --mode selectors --cgroup "$CGSEL" --split process --chunk-period 1s
PIDS=
most=0
for i in $(seq "$USERS_N"); do
	new_user "ctxlane$i-$$"
	spawn_user "ctxlane$i-$$" "$WL" 120 1
	PIDS="$PIDS $SPAWNED"
	wait_for 30 "user $i's process $SPAWNED decoded in a lane of its own" decoded "$SPAWNED"
	status_refresh
	n=$(helpers)
	[ "$n" -gt "$most" ] && most=$n
	[ "$(dstat parser_lanes)" -le "$LANES_MAX" ] || fail "parser_lanes $(dstat parser_lanes) > $LANES_MAX"
	[ "$n" -le $((LANES_MAX + 1)) ] || fail "$n parser helpers running, more than $LANES_MAX lanes and the system's"
done
status_refresh
ev=$(dstat parser_evictions)
echo "$USERS_N owners' contexts decoded; parser_lanes $(dstat parser_lanes), parser_evictions $ev," \
	"parser_busy $(dstat parser_busy), at most $most helpers at once"
# eleven owners through eight lanes: at least three evictions
[ "$ev" -ge $((USERS_N + 1 - LANES_MAX)) ] || fail "parser_evictions $ev: evicted lanes not counted"
# an evicted lane's helper ended: no more helpers than lanes (and the system's)
n=$(helpers)
[ "$n" -le $((LANES_MAX + 1)) ] || fail "$n parser helpers: an evicted one is left"
for p in $PIDS; do kill -0 "$p" 2>/dev/null || fail "process $p ended early"; done
assert_fresh
stop_daemon
echo PASS
