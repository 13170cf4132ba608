#!/bin/bash
# SPDX-License-Identifier: MIT
# A target marked stuck is stuck only while its job is (issue 19 item 5). An unprivileged
# user's OpenTelemetry process context points into a file its FUSE server never answers a
# read of (as in test_fuse_stall_pctx.sh): the job reading it is abandoned at its deadline
# and the target marked stuck (stuck=yes: no more jobs, no context). Then the read ends: the
# connection is aborted, as a late answer of any server would end it (a FUSE or network
# file system that comes back). The worker returns; the daemon counts it (targets_returned),
# the target is no longer marked (stuck=no) and gets jobs again, the status stays fresh, the
# control target is sampled with context. Before, a target once stuck stayed stuck for the
# daemon's life, whatever had made its job late.
. "$(dirname "$0")/hostile_lib.sh"

attacker_user
start_control
start_default_daemon

start_fuse_stall "$B/libctx.so" --good 0
spawn_fuse_pctx
ATTACKER=$SPAWNED
echo "attacker $ATTACKER: OTEL_CTX payload in $FUSE_FILE (FUSE connection $FUSE_CONN: every read stalls)"

stuck_is() { is_target "$ATTACKER" && grep "^target pid=$ATTACKER " "$ST" | grep -q " stuck=$1"; }
returned() { [ "$(dstat targets_returned)" -ge 1 ] 2>/dev/null; }
wait_for 30 "the attacker $ATTACKER marked stuck" stuck_is yes
wait_for 10 "the FUSE server holding a read" fuse_stalled
returned && fail "targets_returned $(dstat targets_returned) before any stuck job came back"
echo "stuck: jobs abandoned $(dstat jobs_abandoned), targets stuck $(dstat targets_stuck)"

# the read ends (with an error: the payload is unreadable from now on, its job no longer waits)
echo 1 >"/sys/fs/fuse/connections/$FUSE_CONN/abort"
wait_for 30 "the stuck job's worker back (targets_returned)" returned
wait_for 30 "the attacker $ATTACKER no longer marked stuck" stuck_is no
echo "returned: targets_returned $(dstat targets_returned), targets stuck $(dstat targets_stuck)"
assert_fresh
# the control target keeps its context; the attacker is still sampled
c0=$(target_count "$CONTROL" context_samples)
wait_for 30 "more context samples of the control target" target_over "$CONTROL" $((c0 + 20)) context_samples
n0=$(target_count "$ATTACKER")
wait_for 30 "samples of the attacker" target_over "$ATTACKER" $((n0 + 20))
# its next process-context job fails at once (the mapping is gone): not stuck again
stuck_is no || fail "the attacker was marked stuck again"
stop_fuse_stall
stop_daemon
echo "PASS: a stuck target's job came back: counted, the target unmarked, the daemon fresh"
