#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel check
# ctxprof daemon as a sidecar: a target and the daemon in a new PID + mount namespace
# (unshare --pid --fork --mount-proc), the daemon selecting by name. BPF translates pids with
# bpf_get_ns_current_pid_tgid: the recording must carry the namespace-local tids the workload
# printed (small numbers, not host tids), thread names, symbols and context; a process
# started inside the namespace after the daemon (exec pickup) is sampled too, with symbols
# and context although its executable lives on a tmpfs of its own mount namespace that the
# daemon cannot see by path; host processes matching the selector outside the namespace are
# not (a sample of a workload's wl-timer thread, which prints no cpu line, is its own). (By
# name on purpose: the daemon's view is the namespace, which only this run's processes are
# in; HOSTP shares the name outside it and must not be selected.)
. "$(dirname "$0")/daemon_lib.sh"
command -v unshare >/dev/null || skip "no unshare"
CTX=$(readlink -f "$CTXPROF")
WLD=$(readlink -f "$WL")
mkdir -p "$OUT"
# a matching process on the host, outside the namespace
"$WL/wl_attrib" long 0 1 >/dev/null &
HOSTP=$!
KIDS="$KIDS $HOSTP"
# (the shell in the namespace waits for facts with this file's wait_for)
unshare --pid --fork --mount-proc bash -c "
	$(declare -f fail wait_for execed)
	'$WLD/wl_attrib' long 6 2 >'$TMP/wl1.out' &
	wait_for 10 'the first workload execed' execed \$! '$WLD/wl_attrib'
	'$CTX' daemon --mode selectors --comm wl_attrib --directory '$OUT' --status-file '$ST' \
		--chunk-period 1s 2>'$DLOG' &
	D=\$!
	wait_for 30 'the daemon status file' test -s '$ST'
	# the second workload in a mount namespace of its own, run from a tmpfs that only it
	# sees: the daemon reaches its file through /proc/PID/root or map_files, not by path
	mkdir -p '$TMP/priv'
	unshare --mount sh -c \"mount -t tmpfs ctxprof-priv '$TMP/priv' &&
		cp '$WLD/wl_attrib' '$TMP/priv/wl_attrib' &&
		exec '$TMP/priv/wl_attrib' long 3 1\" >'$TMP/wl2.out'
	[ -e '$TMP/priv/wl_attrib' ] && echo 'private tmpfs visible outside its namespace'
	wait %1
	cp '$ST' '$TMP/status.last'
	kill -TERM \$D
	wait \$D
	echo daemon-rc=\$?
" >"$TMP/ns.out" 2>&1
cat "$TMP/ns.out"
grep -q 'daemon-rc=0' "$TMP/ns.out" || { cat "$DLOG"; fail "daemon in the namespace did not exit 0"; }
grep -q 'private tmpfs visible' "$TMP/ns.out" && fail "the workload's tmpfs leaked into the daemon's mount namespace"
kill $HOSTP
F=$(ls "$OUT"/*.jfr | head -1)
[ -n "$F" ] || fail "no recording"
jfr_ok "$F"
T1=$(awk '/^cpu/ { print $2 }' "$TMP/wl1.out")
T2=$(awk '/^cpu/ { print $2 }' "$TMP/wl2.out")
echo "namespace tids: first workload $T1, second $T2 (host pid of the outside one: $HOSTP)"
for t in $T1 $T2; do [ "$t" -lt 100 ] || fail "tid $t does not look namespace-local"; done
jfr print --json --events jdk.ExecutionSample "$F" >"$TMP/s.json"
python3 - "$TMP/s.json" "$T1" "$T2" <<'PY' || { cat "$TMP/status.last" "$DLOG"; fail "recording content"; }
import json, sys
d = json.load(open(sys.argv[1]))["recording"]["events"]
t1 = set(int(x) for x in sys.argv[2].split())
t2 = set(int(x) for x in sys.argv[3].split())
tids = {}
timers = set()  # the workloads' wl-timer threads: they print no cpu line (wl_attrib.c)
names = set()
funcs = {1: set(), 2: set()}
ctx = {1: 0, 2: 0}
for e in d:
    v = e["values"]
    th = v["sampledThread"]
    tids[th["osThreadId"]] = tids.get(th["osThreadId"], 0) + 1
    names.add(th["osName"])
    if th["osName"] == "wl-timer" and th["osThreadId"] < 100:  # namespace-local, as above
        timers.add(th["osThreadId"])
    w = 1 if th["osThreadId"] in t1 else 2
    for f in (v.get("stackTrace") or {}).get("frames", []):
        funcs[w].add(f["method"]["name"])
    c, phase = v.get("context"), None
    while c:  # the labels: a chain of {key, value, next}
        phase = c["value"] if c["key"] == "phase" else phase
        c = c.get("next")
    if phase in ("A", "B"):
        ctx[w] += 1
print("samples per tid:", tids, "names:", sorted(names), "with context:", ctx)
assert set(tids) <= t1 | t2 | timers, "samples of tids outside the namespace: %s" % (set(tids) - t1 - t2 - timers)
assert sum(tids.get(t, 0) for t in t1) > 10, "few samples of the first workload"
assert sum(tids.get(t, 0) for t in t2) > 3, "the workload started after the daemon was not sampled"
assert {"wl-0", "wl-1"} <= names, names
for w in (1, 2):
    assert {"work_A", "work_B"} <= funcs[w], "workload %d: no symbols (%s)" % (w, sorted(funcs[w])[:10])
    assert ctx[w] > 0, "workload %d: no phase label" % w
PY
echo "PASS: daemon sidecar"
