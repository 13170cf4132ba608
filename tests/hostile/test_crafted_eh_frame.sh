#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# An unprivileged user's process that publishes context (so the daemon samples it) maps
# libraries whose .eh_frame is built to be expensive: one FDE of 12,000 rows, which elfutils'
# dwarf_cfi_addrframe re-runs from the FDE's start for every row (~N^2/2 steps, stopped at
# CFI_TABLE_MAX_STEPS). The daemon unwinds in the kernel (`call-graph = dwarf`), so it builds
# an unwind table for each new module. Before, each build ran on the sampling loop, in the
# root daemon: ~40 ms of the loop per file, for as many files as the user makes. Now the
# parser helper builds them (an unprivileged process) on a jobs pool off the loop. Asserted:
# the helper, not the daemon's sampling thread, spent the CPU time of the builds (before, the
# helper spent none: the wait for it fails); the status stays fresh; the control target keeps
# its context sample rate; the recording reads back.
. "$(dirname "$0")/hostile_lib.sh"

LIBCTX=$(readlink -f "$B/libctx.so")
[ -r "$LIBCTX" ] || fail "no $B/libctx.so (run make)"
NFILES=150
ROWS=12000

# The crafted library, then NFILES copies that differ in their build id (the module
# registry keys files by build id: each copy is a module of its own, with a table to build).
python3 - "$TMP/crafted.s" "$ROWS" <<'PYEOF'
import sys
with open(sys.argv[1], "w") as f:
    f.write(".text\n.globl crafted\n.type crafted,@function\ncrafted:\n.cfi_startproc\n")
    for _ in range(int(sys.argv[2]) // 2):
        f.write("nop\n.cfi_adjust_cfa_offset 8\nnop\n.cfi_adjust_cfa_offset -8\n")
    f.write("ret\n.cfi_endproc\n.size crafted,.-crafted\n.section .note.GNU-stack,\"\",@progbits\n")
PYEOF
gcc -shared -Wl,--build-id=sha1 -o "$TMP/crafted.so" "$TMP/crafted.s" || fail "cannot build the crafted library"
attacker_user
mkdir -p "$ATK_HOME/libs"
python3 - "$TMP/crafted.so" "$ATK_HOME/libs" "$NFILES" <<'PYEOF'
import hashlib, subprocess, sys
src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(src, "rb").read()
bid = subprocess.run(["readelf", "-n", src], capture_output=True, text=True).stdout
bid = bytes.fromhex(bid.split("Build ID:")[1].split()[0])
assert data.count(bid) == 1, "the build id is not unique in the file"
for i in range(n):
    new = hashlib.sha1(b"crafted-%d" % i).digest()[: len(bid)]
    open("%s/crafted-%d.so" % (out, i), "wb").write(data.replace(bid, new))
PYEOF
chown -R "$ATK" "$ATK_HOME/libs"
start_control
cat >"$TMP/d.conf" <<CONF
[sampling]
call-graph = dwarf
CONF
start_default_daemon --config "$TMP/d.conf"
rate_baseline

cat >"$TMP/crafted_mapper.py" <<'PYEOF'
import ctypes, os, sys, time
libctx, home, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ctypes.CDLL(libctx)  # publishes context: the daemon samples this process
go = os.path.join(home, "go")
while not os.path.exists(go):  # busy until the test saw it sampled
    sum(range(1000))
libs = [ctypes.CDLL(os.path.join(home, "libs", "crafted-%d.so" % i)) for i in range(n)]
with open(os.path.join(home, "mapped"), "w") as f:
    f.write("%d\n" % len(libs))
t = time.time() + 3600
while time.time() < t:
    sum(range(1000))
PYEOF
chmod 0644 "$TMP/crafted_mapper.py"
spawn_attacker /usr/bin/python3 "$TMP/crafted_mapper.py" "$LIBCTX" "$ATK_HOME" "$NFILES"
ATTACKER=$SPAWNED
wait_for 60 "the attacker sampled by the daemon" target_over "$ATTACKER" 20
# the attacker's files are its own: its lane's helper parses them (util/parser_client.h),
# started at its first request (maybe only for the crafted files: then all its CPU is theirs)
main_ticks() { awk '{ print $14 + $15 }' "/proc/$DPID/task/$DPID/stat"; }
m0=$(main_ticks)
HELPER=$(parser_lane_pid "uid=$ATK_UID")
h0=0
[ -z "$HELPER" ] || h0=$(cpu_ticks "$HELPER")
touch "$ATK_HOME/go"
rate_window_open # the control's rate during the attack
mapped() { [ -f "$ATK_HOME/mapped" ] && grep -qx "$NFILES" "$ATK_HOME/mapped"; }
wait_for 60 "the attacker's $NFILES libraries mapped" mapped
atk_lane() { parser_lane_pid "uid=$ATK_UID" >/dev/null; }
wait_for 60 "the attacker's parser lane" atk_lane
[ -n "$HELPER" ] || HELPER=$(parser_lane_pid "uid=$ATK_UID")
echo "attacker $ATTACKER mapped $NFILES libraries with a $ROWS-row FDE each"
# the builds' cost lands in the helper: 15-25 ms each here (a tick is 10 ms)
helper_built() { [ $(($(cpu_ticks "$HELPER") - h0)) -ge "$NFILES" ]; }
wait_for 120 "the parser helper's CPU time for $NFILES table builds" helper_built
m1=$(main_ticks)
h1=$(cpu_ticks "$HELPER")
echo "CPU ticks over the attack: the daemon's sampling thread $((m1 - m0)), the parser helper $((h1 - h0))"
# (the sampling thread still re-reads the attacker's maps at each dlopen: ~20 ticks)
[ $(((m1 - m0) * 2)) -le $((h1 - h0)) ] ||
	fail "the sampling thread spent $((m1 - m0)) ticks, the helper $((h1 - h0)): builds on the loop?"
[ "$(parser_lane_pid "uid=$ATK_UID")" = "$HELPER" ] ||
	fail "the helper was restarted (pid $(parser_lane_pid "uid=$ATK_UID"))"
assert_rate_kept
assert_fresh
stop_daemon
jfr_ok_all "$OUT"/*.jfr
echo PASS
