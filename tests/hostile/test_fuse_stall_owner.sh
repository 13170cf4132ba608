#!/bin/bash
# SPDX-License-Identifier: MIT
# One unprivileged user runs more stalling targets than the daemon had worker threads for
# work on targets (engine/target_jobs.h: TARGET_JOBS_MAX_THREADS, 8 then, 64 now): ten
# processes whose libctx data pages are a FUSE file its server never answers (hostile_lib.sh
# spawn_fuse_loader). Each location job would block a worker for good; with every thread
# blocked, no target started later would be located again: a process that publishes context
# (the control) would be sampled without it. One owner's targets may hold at most
# TARGET_JOBS_STUCK_PER_OWNER (2) workers: the attacker's other targets are marked stuck
# without a job, and a process started after the attack is sampled with context. The
# status stays fresh and SIGTERM is served.
. "$(dirname "$0")/hostile_lib.sh"
ATTACKERS=10

attacker_user
start_fuse_stall "$B/libctx.so" --good 0
ATK_PIDS=
for _ in $(seq $ATTACKERS); do
	spawn_fuse_loader sleep
	ATK_PIDS="$ATK_PIDS $SPAWNED"
done
echo "$ATTACKERS attackers (uid $ATK_UID):$ATK_PIDS; their libctx data pages are $FUSE_FILE"

start_default_daemon
n_stuck() {
	local p n=0
	for p in $ATK_PIDS; do
		grep "^target pid=$p " "$ST" | grep -q ' stuck=yes' && n=$((n + 1))
	done
	echo $n
}
wait_for 30 "two attackers marked stuck" eval '[ "$(n_stuck)" -ge 2 ]'

# a process that publishes context, started now: located by a worker the attacker left free
start_control
wait_for 60 "context samples of the control $CONTROL, started during the attack" \
	target_over "$CONTROL" 50 context_samples
wait_for 30 "all $ATTACKERS attackers marked stuck" eval '[ "$(n_stuck)" = $ATTACKERS ]'
echo "jobs abandoned: $(dstat jobs_abandoned), targets stuck: $(dstat targets_stuck)"
[ "$(dstat jobs_abandoned)" -le 2 ] ||
	fail "$(dstat jobs_abandoned) jobs abandoned: one owner held more than 2 workers"
assert_fresh
assert_sigterm_under_fuse
echo "PASS: $ATTACKERS stalling targets of one user held <= 2 workers; a later target has context"
