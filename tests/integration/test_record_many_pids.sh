#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# `record -p` takes any number of PIDs, as perf's does (issue 32): 1,000 idle processes and a
# busy one, named in one list (one of them twice) and in a second -p, are all targets
# (`processes` in --stats-json counts each once), and the busy one's samples are written with
# their stacks. A bad token is named in the error (exit 2), and more PIDs than one recording
# samples at once (CTXPROF_MAX_TARGETS, 4,096) are refused the same way. --ring-size sets
# the sample ring (rounded up to a power of two: ring_bytes in --stats-json).
. "$(dirname "$0")/sampler_lib.sh"

N_IDLE=1000
KIDS=
busy=
many_pids_cleanup() {
	# the idle processes die with their parent (PDEATHSIG)
	[ -n "$KIDS" ] && kill -9 "$KIDS" 2>/dev/null && wait "$KIDS" 2>/dev/null
	[ -n "$busy" ] && kill -9 "$busy" 2>/dev/null && wait "$busy" 2>/dev/null
	rm -rf "$TMP"
}
trap many_pids_cleanup EXIT

# the idle processes: children of one python parent that lists them when all are there
python3 - "$N_IDLE" "$TMP/idle.pids" <<'PY' &
import ctypes, os, signal, sys
PR_SET_PDEATHSIG = 1
n, out = int(sys.argv[1]), sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
me = os.getpid()
kids = []
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != me:
            os._exit(0)
        signal.pause()
        os._exit(0)
    kids.append(pid)
with open(out + ".tmp", "w") as f:
    f.write(",".join(map(str, kids)))
os.rename(out + ".tmp", out)
while True:
    signal.pause()
PY
KIDS=$!
wait_for 60 "$N_IDLE idle processes" test -s "$TMP/idle.pids"
"$WL/wl_attrib" long 30 1 >/dev/null &
busy=$!
wait_for 10 "wl_attrib $busy execed" execed $busy "$WL/wl_attrib"
idle=$(cat "$TMP/idle.pids")
first=${idle%%,*}

# the errors name what is wrong
"$CTXPROF" record -p "$first,12x,$busy" -d 1 -o "$TMP/bad.jfr" 2>"$TMP/bad.err"
rc=$?
cat "$TMP/bad.err"
[ $rc = 2 ] || fail "a bad PID: exit $rc, want 2"
grep -q "'12x'" "$TMP/bad.err" || fail "the error does not name the bad token"
too_many=$(seq -s, 1 4097)
"$CTXPROF" record -p "$too_many" -d 1 -o "$TMP/bad.jfr" 2>"$TMP/bad.err"
rc=$?
cat "$TMP/bad.err"
[ $rc = 2 ] || fail "4097 PIDs: exit $rc, want 2"
grep -q "more than 4096" "$TMP/bad.err" || fail "the error does not say the bound"

record_ok 300 -F 499 -d 3 --ring-size 3M -p "$idle,$first" -p "$busy" -o "$TMP/r.jfr"
procs=$(stat_json .processes)
samples=$(stat_json .received)
nostack=$(stat_json .no_stack)
echo "targets $procs (want $((N_IDLE + 1))), samples $samples, without a stack $nostack"
[ "$procs" = $((N_IDLE + 1)) ] || fail "$procs processes are targets, want $((N_IDLE + 1))"
[ "$samples" -ge 100 ] || fail "only $samples samples of the busy target"
[ "$nostack" = 0 ] || fail "$nostack samples without their stack"
ring=$(stat_json .ring_bytes)
[ "$ring" = $((4 << 20)) ] || fail "--ring-size 3M: a ring of $ring bytes, want 4 MiB"
echo PASS
