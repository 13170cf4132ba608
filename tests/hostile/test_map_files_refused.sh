#!/bin/bash
# SPDX-License-Identifier: MIT
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
as_attacker unshare -Ur true 2>/dev/null || skip "unprivileged user namespaces are disabled"
daemon_without_caps checkpoint_restore,sys_admin
start_control
start_default_daemon
grep -q 'CapEff' /proc/"$DPID"/status && [ $((0x$(awk '/^CapBnd/ { print $2 }' /proc/"$DPID"/status) >> 40 & 1)) = 0 ] ||
	fail "the daemon still has CAP_CHECKPOINT_RESTORE in its bounding set"
rate_baseline

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

cat >"$TMP/chroot_map.py" <<'PYEOF'
import ctypes, mmap, os, sys, time
root = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
uid, gid = os.getuid(), os.getgid()
if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS):
    raise OSError(ctypes.get_errno(), "unshare")
for f, v in (("setgroups", "deny"), ("uid_map", "0 %d 1" % uid), ("gid_map", "0 %d 1" % gid)):
    with open("/proc/self/" + f, "w") as w:
        w.write(v)
os.chroot(root)
os.chdir("/")
maps = []
for name in ("lib.so", "lib2.so"):
    fd = os.open("/" + name, os.O_RDONLY)
    maps.append(mmap.mmap(fd, 8192, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_EXEC))
open("/ready", "w").close()
while True:
    time.sleep(60)
PYEOF
chmod 0644 "$TMP/chroot_map.py"
spawn_attacker /usr/bin/python3 "$TMP/chroot_map.py" "$root"
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
