#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# A new process's first process-context look waits on the sampling loop for its jobs (up to
# 50 ms), so that its first samples carry the service it names. Those waits hold the loop, so
# they are budgeted (at most half its time, 100 ms at once): 12 busy processes arrive at once
# while process-context reads are slow (CTXPROF_TEST_PCTX_DELAY_MS=1000; 2 workers: 6 s),
# and the daemon skips the waits past the budget (first_wait_skips > 0 in the status file,
# outcome="first_wait_skips" in the metrics) instead of holding its loop 50 ms for each
# process; every process is still located and sampled with context in the end.
# A pair test, not a side-by-side one: the waits collide only when the 12 are selected and
# first sampled within about a second; among a full side-by-side phase they came far enough
# apart for the budget to refill between them (CI: no skip, a failure).
. "$(dirname "$0")/daemon_lib.sh"
N=12
P=
for _ in $(seq $N); do
	spawn "$WL/wl_attrib" long 0 1 >/dev/null
	P="$P $SPAWNED"
done
export CTXPROF_TEST_PCTX_DELAY_MS=1000
start_daemon_metrics
unset CTXPROF_TEST_PCTX_DELAY_MS
for p in $P; do
	wait_for 90 "process $p sampled with context" target_over "$p" 0 context_samples
done
skips=$(dstat first_wait_skips)
echo "first-look waits skipped: ${skips:-none}"
[ "${skips:-0}" -ge 1 ] || fail "no first-look wait was skipped: the loop waited for all $N"
m=$(curl -sf "$URL" | grep '^ctxprof_target_jobs_total{outcome="first_wait_skips"}')
echo "metrics: $m"
[ "${m##* }" -ge 1 ] || fail "the metric does not count the skipped waits"
stop_daemon
echo PASS
