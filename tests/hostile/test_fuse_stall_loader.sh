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

# the attacker's own copy of the library (the build tree need not be readable to it)
cp "$B/libctx.so" "$ATK_HOME/libctx.so" && chmod 0644 "$ATK_HOME/libctx.so"
ready=$ATK_HOME/loader.ready
cat >"$TMP/fuse_loader.py" <<'EOF'
import ctypes, os, sys
lib, fuse, ready = sys.argv[1:4]
ctypes.CDLL(lib)  # loaded and relocated: its TLS slots are filled
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
PROT_READ, MAP_PRIVATE, MAP_FIXED = 1, 2, 0x10
real = os.path.realpath(lib)
fd = os.open(fuse, os.O_RDONLY)
code_seen, n = False, 0
for line in open("/proc/self/maps").read().splitlines():
    f = line.split()
    if len(f) < 6 or f[5] != real:
        continue
    if "x" in f[1]:
        code_seen = True
        continue
    if not code_seen:
        continue
    lo, hi = (int(x, 16) for x in f[0].split("-"))
    if libc.mmap(lo, hi - lo, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) != lo:
        sys.exit("mmap over %x failed: errno %d" % (lo, ctypes.get_errno()))
    n += 1
if not n:
    sys.exit("no data mapping of %s after its code" % real)
open(ready, "w").close()
while True:
    pass
EOF
chmod 0644 "$TMP/fuse_loader.py"
spawn_attacker /usr/bin/python3 "$TMP/fuse_loader.py" "$ATK_HOME/libctx.so" "$FUSE_FILE" "$ready"
ATTACKER=$SPAWNED
loader_up() { [ -e "$ready" ] && return 0; kill -0 "$ATTACKER" 2>/dev/null || fail "the attacker's script failed"; return 1; }
wait_for 30 "the attacker mapping $FUSE_FILE over libctx's data" loader_up
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
