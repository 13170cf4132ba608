#!/bin/bash
# SPDX-License-Identifier: MIT
# An unprivileged user loads libctx (it defines the context variables) and then maps a file
# its own FUSE server never answers a read of over every data mapping of the library after
# its code: the ABI version word and the loader's relocated TLS slots the locator reads now
# lie in pages whose read waits forever (tests/hostile/fuse_stall.c). The default daemon
# (mode = context) is started after it, so its scan of running processes meets it first.
# Choosing a target must not read a process's memory on the daemon's loop (the old
# selection ran the whole locator there and the daemon never got past its start), and the
# locator, a job off the loop, reads with process_vm_readv (a /proc/PID/mem read waits holding
# the target's mmap lock, and every uprobe attach on a library it maps waits behind it):
# its job is abandoned (jobs_abandoned), the attacker marked stuck and still sampled, the
# status fresh, the control target sampled with context, and SIGTERM served.
. "$(dirname "$0")/hostile_lib.sh"

attacker_user
start_control
start_fuse_stall "$B/libctx.so" --good 0

spawn_fuse_loader spin
ATTACKER=$SPAWNED
echo "attacker $ATTACKER: libctx's data pages are $FUSE_FILE (FUSE connection $FUSE_CONN: every read stalls)"

start_default_daemon
stuck() { is_target "$ATTACKER" && grep "^target pid=$ATTACKER " "$ST" | grep -q ' stuck=yes'; }
wait_for 30 "the attacker $ATTACKER marked stuck in the status file" stuck
wait_for 10 "the FUSE server holding a read" fuse_stalled
echo "jobs abandoned: $(dstat jobs_abandoned), targets stuck: $(dstat targets_stuck)"
[ "$(dstat jobs_abandoned)" -gt 0 ] || fail "no abandoned job counted"

assert_fresh
# the loop goes on: the control target, started before, is sampled with context
wait_for 60 "context samples of the control target" target_over "$CONTROL" 50 context_samples
# a process started now is taken and hooked (a uprobe on the loader the attacker maps too)
spawn "$B/demo/demo_app" 0 1
LATE=$SPAWNED
wait_for 30 "context samples of $LATE, started during the attack" target_over "$LATE" 20 context_samples
n0=$(target_count "$ATTACKER")
wait_for 20 "samples of the stuck attacker" target_over "$ATTACKER" $((n0 + 20))
assert_fresh

assert_sigterm_under_fuse
echo "PASS: stalled loader-slot reads off the loop, attacker marked, others sampled, SIGTERM served"
