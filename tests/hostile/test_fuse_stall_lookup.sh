#!/bin/bash
# SPDX-License-Identifier: MIT
# Hostile (issue 31, left from round one: "a target whose own /tmp is a FUSE mount could stall
# even the path lookup"). Where /proc/PID/map_files is refused (a deployment without
# CAP_CHECKPOINT_RESTORE and CAP_SYS_ADMIN), a mapped file is opened by its path under the
# target's root. An unprivileged user chroots (in a user and mount namespace of its own) and
# maps a file there; at the path the daemon resolves under the attacker's root (the maps
# line's path, below that root) is a FUSE mount whose server never answers a LOOKUP. The
# lookup went to the server and the reader waited for good. Now the path is resolved from
# the dentry cache alone (RESOLVE_CACHED: a mapped file's path is there, pinned by the
# mapping): the attacker's name is not, so it is refused at once (refused_files), no daemon
# thread waits in the server, the status stays fresh and the control keeps its rate.
. "$(dirname "$0")/hostile_lib.sh"

attacker_user
start_daemon_without_map_files

root=$ATK_HOME/root
as_attacker mkdir -p "$root" && as_attacker sh -c "head -c 8192 /dev/zero >'$root/lib.so'" ||
	fail "cannot write $root/lib.so"
# what the daemon resolves under the attacker's root: the FUSE mount, mounted before the
# attacker's mount namespace is made (it is copied into it)
FUSE_DIR=$root$root
as_attacker mkdir -p "$FUSE_DIR" || fail "cannot make $FUSE_DIR"
start_fuse_stall "$B/libctx.so" --lookups 0
spawn_chroot_mapper "$root" lib.so
rate_window_open # the control's rate during the attack
wait_for 30 "the attacker's mapping in its chroot" test -e "$root/ready"
grep -q " $root/lib.so\$" /proc/"$SPAWNED"/maps || fail "the maps line does not show $root/lib.so: $(grep lib /proc/"$SPAWNED"/maps)"
echo "attacker $SPAWNED maps $root/lib.so; under its root that path is in $FUSE_DIR (FUSE connection $FUSE_CONN: every LOOKUP stalls)"
assert_fuse_refused "a path through the attacker's FUSE mount" 30
assert_sigterm_under_fuse
echo "PASS: a path through a stalling FUSE mount refused from the dentry cache, status fresh, control sampled, SIGTERM served"
