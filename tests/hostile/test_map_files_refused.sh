#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# Where /proc/PID/map_files is refused (a deployment that drops CAP_CHECKPOINT_RESTORE and
# CAP_SYS_ADMIN from the daemon's bounding set; user namespaces; old kernels) a mapped file
# can only be opened by its path under the target's root, and the target chooses what is
# there. An unprivileged user enters its own user and mount namespace, chroots into a
# directory of its own and maps two files PROT_EXEC there; the maps line shows their paths as
# the daemon sees them (from its root), and under the target's root the user put, at those
# very paths, a FIFO and another regular file. The default daemon (mode = context) must
# refuse both by the identity check (not a regular file; another dev:inode: refused_files),
# never open either (the FIFO blocks a plain open), stay fresh and keep sampling the control
# target with context.
. "$(dirname "$0")/hostile_lib.sh"

attacker_user
start_daemon_without_map_files

root=$ATK_HOME/root
as_attacker mkdir -p "$root" || fail "cannot make $root"
for f in lib.so lib2.so; do
	as_attacker sh -c "head -c 8192 /dev/zero >'$root/$f'" || fail "cannot write $root/$f"
done
# what the daemon finds under the target's root at the paths its maps show
shadow=$root$root
as_attacker mkdir -p "$shadow" && as_attacker mkfifo "$shadow/lib.so" &&
	as_attacker sh -c "head -c 8192 /dev/zero >'$shadow/lib2.so'" || fail "cannot plant $shadow"
watch_opens "$shadow/lib.so" "$shadow/lib2.so"
refused0=$(dstat refused_files)

spawn_chroot_mapper "$root" lib.so lib2.so
rate_window_open # the control's rate during the attack
wait_for 30 "the attacker's mappings in its chroot" test -e "$root/ready"
grep -q " $root/lib.so\$" /proc/"$SPAWNED"/maps || fail "the maps line does not show $root/lib.so: $(grep lib /proc/"$SPAWNED"/maps)"
echo "attacker $SPAWNED maps $root/lib.so and lib2.so; under its root that path is a FIFO and another file"

# the daemon read the attacker's maps: it refused both files, or it sits in open() on the FIFO
examined() {
	[ "$(dstat refused_files)" -ge $((${refused0:-0} + 2)) ] 2>/dev/null ||
		daemon_in_fifo_open "$shadow/lib.so"
}
wait_for 30 "the daemon reading the attacker's mapped files" examined
no_fifo_reader() {
	fifo_no_reader "$shadow/lib.so" && return 0
	daemon_in_fifo_open "$shadow/lib.so" && fail "the daemon opened the FIFO under the attacker's root (it blocks in open)"
	echo "note: a process other than the daemon under test has the FIFO open (another daemon on this host?)"
}
no_fifo_reader
echo "files refused: $(dstat refused_files) (before the attack: $refused0)"

assert_fresh
assert_rate_kept
no_fifo_reader
assert_not_opened
echo "PASS: map_files refused, the swapped FIFO and file refused by the identity check, status fresh, control sampled"
