#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# The forged maps line of test_forged_maps_line.sh, naming a character device (a copy of
# /dev/null, 1:3, that root planted in the attacker's directory: a device node anyone may
# create in a container or on removable media) instead of a FIFO. Opening it would run its
# driver's open and release as root. The default daemon must refuse the long line
# (refused_lines), never open the node (inotify), stay fresh and keep sampling the control
# target with context.
. "$(dirname "$0")/hostile_lib.sh"

attacker_user
start_control
start_default_daemon
rate_baseline

node=$ATK_HOME/null
mknod -m 0666 "$node" c 1 3 || skip "cannot create a device node in $ATK_HOME"
chown "$ATK" "$node"
watch_opens "$node"
lines0=$(dstat refused_lines)
spawn_forged_maps_line "$node"
rate_window_open # the control's rate during the attack
echo "attacker $SPAWNED maps a file whose maps line ends in a forged line naming $node (c 1:3)"

# the daemon read the attacker's maps: it refused the line, or it opened the node
examined() { [ "$(dstat refused_lines)" -gt "${lines0:-0}" ] 2>/dev/null || grep -q "^opened .* $DPID:" "$WATCH_LOG"; }
wait_for 30 "the daemon reading the attacker's maps" examined
assert_not_opened
echo "maps lines refused for their length: $(dstat refused_lines)"

assert_fresh
assert_rate_kept
assert_not_opened
echo "PASS: forged maps line refused, device node never opened, status fresh, control target sampled"
