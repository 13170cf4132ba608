#!/bin/bash
# SPDX-License-Identifier: MIT
# Hostile (issue 19 item 5): a fork bomb of targets. An unprivileged user runs a program that
# publishes context (the default daemon, mode = context, samples it, and its children as
# they are forked), in which every process forks as fast as it can and each child exits after
# 200 ms, under pids.max in its own cgroup (the host survives). The BPF `targets` map is made
# small for the test (CTXPROF_TEST_MAX_TARGETS) so that the bomb fills it: a full map holds
# live processes only (BPF removes a process at its exit), the children refused are counted
# (targets_full), the control target — in the map before — is still sampled at >= 90% of its
# rate with context, fork events stay within their per-process budget, and once the bomb is
# gone the map drains and a new process becomes a target again.
. "$(dirname "$0")/hostile_lib.sh"
FX=${FX_EVENT_FLOOD:-$B/tests/fixtures/fx_event_flood}
[ -x "$FX" ] || fail "no $FX (run make)"
MAXT=64
PIDS_MAX=400
attacker_user
cp "$FX" "$ATK_HOME/flood" && chmod 0755 "$ATK_HOME/flood"
start_control
export CTXPROF_TEST_MAX_TARGETS=$MAXT
start_default_daemon
rate_baseline
# pids.max: the v2 controller in the run's cgroup, or the v1 pids hierarchy beside it
PCG=
bomb_cleanup() {
	[ -f "$CG/bomb/cgroup.kill" ] && echo 1 >"$CG/bomb/cgroup.kill" || fail "cannot kill the bomb"
	if [ -n "$PCG" ]; then
		for _ in $(seq 100); do [ -s "$PCG/cgroup.procs" ] || break; sleep 0.1; done
		rmdir "$PCG" 2>/dev/null
	fi
	hostile_cleanup
}
trap bomb_cleanup EXIT
mkdir -p "$CG/bomb" || fail "cannot create $CG/bomb"
if grep -qw pids "$CG/cgroup.controllers" 2>/dev/null && echo +pids >"$CG/cgroup.subtree_control" &&
	echo "$PIDS_MAX" >"$CG/bomb/pids.max"; then
	PCG=$CG/bomb
elif [ -w /sys/fs/cgroup/pids/cgroup.procs ]; then
	PCG=$(mktemp -d /sys/fs/cgroup/pids/ctxprof-bomb.XXXXXX) && echo "$PIDS_MAX" >"$PCG/pids.max" ||
		fail "cannot limit the bomb with the v1 pids controller"
else
	skip "no pids controller: a fork bomb could take the host down"
fi
echo "bomb limited by $PCG/pids.max = $PIDS_MAX"
spawn -g bomb sh -c 'echo $$ >"$1/cgroup.procs" || exit 1; shift; exec "$@"' sh "$PCG" \
	setpriv --reuid="$ATK_UID" --regid="$(id -g "$ATK")" --clear-groups --inh-caps=-all \
	--bounding-set=-all -- "$ATK_HOME/flood" forkbomb 200 >/dev/null
rate_window_open # the control's rate during the attack
full() { [ "$(dstat targets_full)" -gt 0 ] 2>/dev/null; }
wait_for 60 "children refused by a full targets map counted (targets_full)" full
echo "bomb: $(cat "$PCG/pids.current") processes in its cgroup (pids.max $PIDS_MAX)"
assert_rate_kept
assert_fresh
status_refresh
echo "bomb: targets map $(dstat map_entries) of $MAXT entries, $(dstat targets_full) children" \
	"refused (map full), $(dstat events_limited) events over their process's budget," \
	"$(dstat processes_seen) processes seen"
[ "$(dstat map_entries)" -le $MAXT ] || fail "targets map holds $(dstat map_entries) > $MAXT"
echo 1 >"$CG/bomb/cgroup.kill" || fail "cannot kill the bomb"
# no dead entry left: the map holds what the daemon counts as live targets (the control, and
# on a shared host other processes with context; a couple of slack for a status rewrite
# that raced an exit)
drained() { [ "$(dstat map_entries)" -le $(($(dstat targets) + 2)) ] && [ "$(dstat targets)" -lt $MAXT ]; }
wait_for 60 "the targets map drained after the bomb" drained
spawn "$B/demo/demo_app" 0 1
NEW=$SPAWNED
wait_for 60 "a process started after the bomb sampled with context" target_over "$NEW" 0 context_samples
echo "after the bomb: map $(dstat map_entries) entries; new target $NEW sampled with context"
assert_fresh
echo PASS
