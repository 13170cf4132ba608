#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# An unprivileged user maps a file under a directory path so deep that its /proc/PID/maps
# line is longer than 4 KiB; the line's tail reads as a mapping line of its own naming a FIFO
# the user made (issue 19). The default daemon (mode = context) reads every new process's
# maps for context variables: it must refuse the long line (counted: refused_lines), never
# open the FIFO (an open blocks the daemon), stay fresh and keep sampling the control target
# with context.
. "$(dirname "$0")/hostile_lib.sh"

attacker_user
start_control
start_default_daemon
rate_baseline

fifo=$ATK_HOME/fifo
as_attacker mkfifo "$fifo" || fail "cannot make the FIFO"
watch_opens "$fifo"
lines0=$(dstat refused_lines)
spawn_forged_maps_line "$fifo"
rate_window_open # the control's rate during the attack
echo "attacker $SPAWNED maps a file whose maps line ends in a forged line naming $fifo"

# the daemon read the attacker's maps: it refused the line, or it sits in open() on the FIFO
examined() { [ "$(dstat refused_lines)" -gt "${lines0:-0}" ] 2>/dev/null || daemon_in_fifo_open "$fifo"; }
wait_for 30 "the daemon reading the attacker's maps" examined
no_fifo_reader() {
	fifo_no_reader "$fifo" && return 0
	daemon_in_fifo_open "$fifo" && fail "the daemon opened the attacker's FIFO (it blocks in open)"
	echo "note: a process other than the daemon under test has the FIFO open (another daemon on this host?)"
}
no_fifo_reader
echo "maps lines refused for their length: $(dstat refused_lines)"

assert_fresh
assert_rate_kept
no_fifo_reader
assert_not_opened
echo "PASS: forged maps line refused, FIFO never opened, status fresh, control target sampled"
