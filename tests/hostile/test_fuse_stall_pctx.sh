#!/bin/bash
# SPDX-License-Identifier: MIT
# An unprivileged user publishes an OpenTelemetry process context (OTEP 4719) whose header
# points the payload into a mapping of a file its own FUSE server never answers a read of
# (issue 19 item 5; tests/hostile/fuse_stall.c). The default daemon reads every sampled
# process's context through /proc/PID/mem: that read waits for the server forever, and no
# check of the file can prevent it (the page is the target's memory). It must run off the
# sampling loop as a job with a deadline: abandoned (jobs_abandoned), the attacker marked
# (stuck=yes), the status fresh, the control target sampled with context, the attacker still
# sampled, what was recorded readable, and SIGTERM served while the worker still waits.
. "$(dirname "$0")/hostile_lib.sh"

attacker_user
start_control
start_default_daemon
rate_baseline

start_fuse_stall "$B/libctx.so" --good 0
abandoned0=$(dstat jobs_abandoned)
spawn_fuse_pctx
ATTACKER=$SPAWNED
rate_window_open # the control's rate during the attack
echo "attacker $ATTACKER: OTEL_CTX payload in $FUSE_FILE (FUSE connection $FUSE_CONN: every read stalls)"

stuck() { is_target "$ATTACKER" && grep "^target pid=$ATTACKER " "$ST" | grep -q ' stuck=yes'; }
wait_for 30 "the attacker $ATTACKER marked stuck in the status file" stuck
wait_for 10 "the FUSE server holding a read" fuse_stalled
echo "jobs abandoned: $(dstat jobs_abandoned) (before: ${abandoned0:-none}), targets stuck: $(dstat targets_stuck)"
[ "$(dstat jobs_abandoned)" -gt "${abandoned0:-0}" ] || fail "no abandoned job counted"

assert_fresh
assert_rate_kept
assert_fresh
# the attacker is still sampled (without context): its count grows
n0=$(target_count "$ATTACKER")
wait_for 20 "samples of the stuck attacker" target_over "$ATTACKER" $((n0 + 20))

assert_sigterm_under_fuse
echo "PASS: stalled process-context read abandoned, attacker marked, control sampled, SIGTERM served"
