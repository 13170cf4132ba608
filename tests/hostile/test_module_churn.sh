#!/bin/bash
# SPDX-License-Identifier: MIT
# An unprivileged user's process that publishes context (libctx loaded, so the default
# daemon samples it) runs code from a file it maps, and renames that file between runs,
# mapping it at alternating addresses so that every run is a mapping the daemon has not
# seen (a maps re-read) under a new path. Before, every rename minted a new module (the
# registry keyed files without a build id by path and never freed one: at 65,536 every later
# module on the host stays [unknown]). The registry must hold one module for the file, stay
# bounded (status `modules`, nothing refused: `modules_refused`), the daemon's RSS must stay
# bounded, the status fresh, and the control target sampled with context.
. "$(dirname "$0")/hostile_lib.sh"

LIBCTX=$(readlink -f "$B/libctx.so")
[ -r "$LIBCTX" ] || fail "no $B/libctx.so (run make)"
attacker_user
start_control
start_default_daemon
rate_baseline

cat >"$TMP/rename_churn.py" <<'PYEOF'
import ctypes, mmap, os, sys, time
libctx, home, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
ctypes.CDLL(libctx)  # publishes context: the default daemon samples this process
# mov rax, rdi; 1: dec rax; jnz 1b; ret  -- a busy loop the samples land in
code = bytes.fromhex("4889f848ffc875fbc3")
path = os.path.join(home, "code-0")
with open(path, "wb") as f:
    f.write(code.ljust(4096, b"\xcc"))
fd = os.open(path, os.O_RDONLY)
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
PROT_RX, MAP_PRIVATE, MAP_FIXED_NOREPLACE = 5, 2, 0x100000
addrs = [0x7e0000000000, 0x7e0000100000]
for i in range(rounds):
    new = os.path.join(home, "code-%d" % (i + 1))
    os.rename(path, new)
    path = new
    a = libc.mmap(addrs[i % 2], 4096, PROT_RX, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0)
    if a != addrs[i % 2]:
        raise OSError(ctypes.get_errno(), "mmap")
    ctypes.CFUNCTYPE(None, ctypes.c_uint64)(a)(30000000)  # about 20-60 ms in the mapping
    libc.munmap(a, 4096)
    if i % 20 == 0:
        with open(os.path.join(home, "rounds"), "w") as f:
            f.write("%d\n" % i)
with open(os.path.join(home, "rounds"), "w") as f:
    f.write("done\n")
time.sleep(3600)
PYEOF
chmod 0644 "$TMP/rename_churn.py"
mods0=$(dstat modules)
rss0=$(daemon_rss_kb)
ROUNDS=400
spawn_attacker /usr/bin/python3 "$TMP/rename_churn.py" "$LIBCTX" "$ATK_HOME" "$ROUNDS"
ATTACKER=$SPAWNED
rate_window_open # the control's rate during the attack
wait_for 60 "the attacker sampled by the daemon" target_over "$ATTACKER" 20
echo "attacker $ATTACKER (publishes context, sampled) renames and remaps its code file $ROUNDS times"
assert_rate_kept
rate_window_open # and during its remaining rounds
wait_for 300 "the attacker's $ROUNDS rounds" grep -qx 'done' "$ATK_HOME/rounds"
status_refresh
mods=$(dstat modules)
rss=$(daemon_rss_kb)
echo "modules in the registry: ${mods0:-?} before, ${mods:-?} after $ROUNDS renames; refused: $(dstat modules_refused)"
echo "daemon RSS: $rss0 KiB before, $rss KiB after"
[ -n "$mods" ] || fail "the status file does not report the module registry (modules=)"
# the attacker's own libraries (python, libctx: a few dozen) and other processes on the host
# may add modules; one per rename would add hundreds
[ "$mods" -le $((mods0 + ROUNDS / 4)) ] ||
	fail "the registry grew from $mods0 to $mods modules with $ROUNDS renames of one file"
[ "$(dstat modules_refused)" = 0 ] || fail "module registrations refused: $(dstat modules_refused)"
[ "$rss" -le $((rss0 + 65536)) ] || fail "the daemon's RSS grew by $((rss - rss0)) KiB"
assert_fresh
assert_rate_kept
# what the recording says: frames in the attacker's code name its module; one module per
# rename would show as many names (code-1, code-2, ...)
stop_daemon
names=$(for f in "$OUT"/*.jfr; do jfr print --events jdk.ExecutionSample "$f"; done 2>/dev/null |
	grep -o 'code-[0-9]*' | sort -u | wc -l)
echo "module names of the attacker's code file in the recording: $names"
[ "$names" -ge 1 ] || fail "no sample of the attacker's code file in the recording"
[ "$names" -le 2 ] || fail "the recording names the attacker's one file as $names modules"
echo "PASS: one module for a file renamed $ROUNDS times, registry and RSS bounded, status fresh, control sampled"
