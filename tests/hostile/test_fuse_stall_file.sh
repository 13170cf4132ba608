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
refused0=$(dstat refused_files)
spawn_fuse_mapper
ATTACKER=$SPAWNED
echo "attacker $ATTACKER maps $FUSE_FILE (FUSE connection $FUSE_CONN: every read stalls)"

# a thread of the daemon under test waits for the FUSE server (its log names the reader)
daemon_in_fuse() {
	local p
	for p in $(sed -n 's/.* by pid \([0-9]*\) left unanswered/\1/p' "$FUSE_LOG"); do
		[ -d "/proc/$DPID/task/$p" ] && return 0
	done
	return 1
}
examined() {
	[ "$(dstat refused_files)" -gt "${refused0:-0}" ] 2>/dev/null || daemon_in_fuse
}
wait_for 30 "the daemon looking at the attacker's FUSE file" examined
daemon_in_fuse && fail "the daemon reads the FUSE file: a thread of it is blocked in the server ($(cat "$FUSE_LOG"))"
echo "files refused: $(dstat refused_files) (before the attack: $refused0)"

assert_fresh
assert_rate_kept
assert_fresh
daemon_in_fuse && fail "the daemon read the FUSE file: a thread of it is blocked in the server"

assert_sigterm_under_fuse
echo "PASS: FUSE-backed file refused, status fresh, control target sampled, SIGTERM served"
