#!/bin/bash
# SPDX-License-Identifier: MIT
# Hostile (issue 31 item 1): an unprivileged user's process that publishes context runs code
# in anonymous executable memory, and its /tmp/perf-PID.map is a file on a FUSE mount whose
# server never answers an OPEN (a user with fusermount3 can mount over a file it owns; the
# test, as root, binds the attacker's FUSE file there). The daemon looks for a process's perf
# map when a sample lands in such code; it used to open the file on its sampling loop, with
# no FUSE check: the loop blocked in the server's OPEN, the status went stale and the control
# target's samples froze. Now the perf map is looked for in a target job and refused like a
# mapped file on FUSE (counted: on_fuse, in refused_files): no daemon thread ever waits in
# the server, the status stays fresh and the control target keeps its context rate.
. "$(dirname "$0")/hostile_lib.sh"
FX=${FX_PERF_MAP:-$B/tests/fixtures/fx_perf_map}
[ -x "$FX" ] || fail "no $FX (run make)"
PMAP=
trap '[ -n "$PMAP" ] && { umount -l "$PMAP" 2>/dev/null; rm -f "$PMAP"; }; hostile_cleanup' EXIT

attacker_user
cp "$FX" "$ATK_HOME/jit" && chmod 0755 "$ATK_HOME/jit"
start_control
start_default_daemon
rate_baseline

printf '1000 10 served_by_fuse\n' >"$TMP/pmap.txt"
start_fuse_stall "$TMP/pmap.txt" --opens 0
# the attacker's map is put in place while it runs JIT code: the daemon looks for it again
# every second until it finds one
spawn_attacker "$ATK_HOME/jit" 0 100 >"$TMP/jit.out"
atk=$SPAWNED
wait_for 30 "the attacker's JIT loop" grep -q '^ready' "$TMP/jit.out"
PMAP=/tmp/perf-$atk.map
as_attacker touch "$PMAP" || fail "the attacker cannot create $PMAP"
mount --bind "$FUSE_FILE" "$PMAP" || skip "cannot bind the FUSE file over $PMAP"
rate_window_open # the control's rate during the attack
echo "attacker $atk: its perf map $PMAP is $FUSE_FILE (FUSE connection $FUSE_CONN: every OPEN stalls)"
[ "$(stat -c %u "$PMAP")" = "$ATK_UID" ] || fail "the FUSE file is not the attacker's"
assert_fuse_refused "the attacker's FUSE perf map" 60
assert_sigterm_under_fuse
echo "PASS: FUSE perf map refused off the loop, status fresh, control target sampled, SIGTERM served"
