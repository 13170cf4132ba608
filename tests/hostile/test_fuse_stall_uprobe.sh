#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: quiet
# An unprivileged user holds its own memory map in a wait its FUSE server never answers: one
# of its threads reads, through /proc/self/mem, a page of a FUSE file it mapped. The kernel's
# access_remote_vm keeps the process's mmap lock while it waits. Attaching a uprobe on a file
# the process maps (ld.so: the library-load hook) takes that lock for writing, not killably,
# and holds dup_mmap_sem meanwhile: `ctxprof record` and the daemon sat in D state at their
# start, and every fork() on the host with them, until the server was aborted. Both must see
# the stalled thread first (engine/mm_stall.h) and take the sys_exit hook instead, saying why:
# record runs and exits 0, a fork on the host works, the daemon starts and says load_hook
# sys_exit. Runs with nothing beside it (`quiet`): were the check to miss, forks would wait
# until the watchdog below aborts the connection.
. "$(dirname "$0")/hostile_lib.sh"
WATCHDOG_S=90 # the longest a missed check can freeze the host's forks

attacker_user
start_control
start_fuse_stall "$B/libctx.so" --good 0
cat >"$TMP/self_reader.py" <<'PYEOF'
import ctypes, os, sys, threading
path, ready = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
fd = os.open(path, os.O_RDONLY)
page = libc.mmap(None, 4096, 1, 2, fd, 0)  # PROT_READ, MAP_PRIVATE: not read yet
def read_self():  # waits in FUSE inside access_remote_vm, holding this process's mmap lock
    try:
        os.pread(os.open("/proc/self/mem", os.O_RDONLY), 64, page)
    except OSError:  # EIO: the connection aborted at the end
        pass
threading.Thread(target=read_self, daemon=True).start()
open(ready, "w").close()
while True:
    pass
PYEOF
chmod 0644 "$TMP/self_reader.py"
spawn_attacker /usr/bin/python3 "$TMP/self_reader.py" "$FUSE_FILE" "$ATK_HOME/ready"
ATTACKER=$SPAWNED
wait_for 30 "the attacker's reader started" test -e "$ATK_HOME/ready"
wait_for 30 "the attacker's read of its own memory waiting in FUSE" fuse_stalled
# started before any attach (a fork), it bounds a freeze: the abort lets every waiter go
(sleep "$WATCHDOG_S" && echo 1 >"/sys/fs/fuse/connections/$FUSE_CONN/abort") 2>/dev/null &
KIDS="$KIDS $!"

"$CTXPROF" record -p "$CONTROL" -d 1 -o "$TMP/r.txt" >"$TMP/record.out" 2>&1 ||
	{ cat "$TMP/record.out"; fail "record exited $? beside the stalled attacker"; }
grep "library loads seen by" "$TMP/record.out"
grep -q "library loads seen by sys_exit: thread [0-9]* of pid $ATTACKER holds a memory map in a FUSE wait" \
	"$TMP/record.out" || fail "record did not take the sys_exit hook for the attacker's stall"
[ -s "$TMP/r.txt" ] || fail "record wrote nothing"
fuse_stalled || fail "the stall ended before the checks (the FUSE server answered?)"
/bin/true || fail "a fork on the host failed"

start_default_daemon
hook=$(dstat load_hook)
echo "daemon started beside the stall: load_hook=$hook; $(grep -m1 'library loads seen by' "$DLOG")"
[ "$hook" = sys_exit ] || fail "the daemon's library-load hook is '$hook', not sys_exit"
grep -q "holds a memory map in a FUSE wait" "$DLOG" || fail "the daemon does not say why it uses sys_exit"
wait_for 60 "context samples of the control $CONTROL" target_over "$CONTROL" 50 context_samples
assert_fresh
echo "PASS: record and the daemon start beside a stalled memory map: sys_exit, said why, forks free"
