#!/bin/bash
# SPDX-License-Identifier: MIT
# An unprivileged user maps a file served by its own FUSE server, which never answers a read
# of it (issue 19 item 5; tests/hostile/fuse_stall.c). The default daemon (mode = context)
# looks at every file a process maps for context variables, and the writer thread opens the
# files frames point into: a read of this one would block the thread for good (the main
# thread: no status, no sampling, no SIGTERM). The daemon must refuse the file (counted:
# on_fuse in refused_files), stay fresh, keep sampling the control target with context, keep
# what it recorded readable and stop on SIGTERM in its normal time.
. "$(dirname "$0")/hostile_lib.sh"

attacker_user
start_control
start_default_daemon
rate_baseline

start_fuse_stall "$B/libctx.so" --good 0
spawn_fuse_mapper
ATTACKER=$SPAWNED
rate_window_open # the control's rate during the attack
echo "attacker $ATTACKER maps $FUSE_FILE (FUSE connection $FUSE_CONN: every read stalls)"
assert_fuse_refused "the attacker's FUSE file" 30
assert_sigterm_under_fuse
echo "PASS: FUSE-backed file refused, status fresh, control target sampled, SIGTERM served"
