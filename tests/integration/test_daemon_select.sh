#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# ctxprof daemon target selection: with selectors (comm glob, exe glob, cgroup prefix) only
# matching processes are sampled, a process started after the daemon is picked up at its exec
# (first sample < 1 s after exec), mode=context picks the process that publishes context
# (wl_attrib, libctx; its ELF files read by a selection job, off the loop) and not a plain
# busy loop, and a target that exits leaves the targets map.
. "$(dirname "$0")/daemon_lib.sh"
# The comm and exe selectors are what this test is about: they select copies of wl_attrib
# under a name and a path unique to this run, so that no other process on the host matches.
NAME=$(basename "$(mktemp -u wlXXXXXXXXXX)")
mkdir "$TMP/bin" && chmod 755 "$TMP" "$TMP/bin"
cp "$WL/wl_attrib" "$TMP/bin/$NAME"
WLA=$TMP/bin/$NAME

# busy process that never publishes context and does not match the selectors
spin() { exec -a "$1" bash -c 'while :; do :; done'; }

# 1. selectors: comm glob. A running process is picked by the /proc scan; one started later
# by its exec; a non-matching busy shell is not sampled.
start_daemon --mode selectors --comm "${NAME:0:8}*" --chunk-period 1s --rotate-period 1h
# runs until SIGUSR1: a fixed duration would race the status refresh (every STATUS_PERIOD, later
# under load) and the process could exit before the daemon reports it as a target
"$WLA" long 0 2 >"$TMP/a1.out" &
A1=$!
KIDS="$KIDS $A1"
bash -c 'while :; do :; done' &
SP=$!
KIDS="$KIDS $SP"
# a target, sampled enough for the file's checks below
wait_for 30 "$NAME $A1 (exec after start) a target with > 100 samples" target_over $A1 100
grep -q "^target pid=$A1 " "$ST" || { cat "$ST"; fail "wl_attrib $A1 (exec after start) is not a target"; }
grep -q "^target pid=$SP " "$ST" && fail "busy shell $SP matched comm=${NAME:0:8}*"
kill -USR1 $A1
wait $A1
wait_for 30 "exited process $A1 dropped" eval '! is_target $A1'
status_refresh
grep -q "^target pid=$A1 " "$ST" && fail "exited process $A1 still a target"
[ "$(dstat map_entries)" = 0 ] || { cat "$ST"; tail -20 "$DLOG"; fail "targets map not drained: $(dstat map_entries)"; }
stop_daemon
F=$(ls "$OUT"/*.jfr | head -1)
jfr_ok "$F"
T1=$(awk '/^cpu/ { print $2 }' "$TMP/a1.out")
[ -n "$T1" ] || fail "wl_attrib printed no tids"
n=$(samples_of_tids "$F" $T1)
[ "$n" -gt 20 ] || fail "only $n samples of wl_attrib"
spn=$(samples_of_tids "$F" $SP)
[ "$spn" = 0 ] || fail "$spn samples of the unselected busy shell"
echo "selectors comm: wl_attrib $n samples, unselected shell 0"

# 2. exec pickup latency: the first sample of a process started after the daemon.
rm -rf "$OUT"
start_daemon --mode selectors --exe "$WLA" --chunk-period 1s
T0=$(date +%s%N)
"$WLA" long 3 1 >"$TMP/a2.out"
stop_daemon
F=$(ls "$OUT"/*.jfr | head -1)
jfr print --json --events jdk.ExecutionSample "$F" >"$TMP/a2.json"
lat=$(python3 -c 'import json,sys,datetime
d=json.load(open(sys.argv[1]))
ts=[e["values"]["startTime"] for e in d["recording"]["events"] if e["values"]["contextId"]]
if not ts: print(-1); sys.exit()
def ns(s):
    s=s.rstrip("Z"); base,frac=(s.split(".")+["0"])[:2]
    t=datetime.datetime.strptime(base,"%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return int(t.timestamp())*10**9+int((frac+"000000000")[:9])
print((min(ns(t) for t in ts)-int(sys.argv[2]))//1000000)' "$TMP/a2.json" "$T0")
[ "$lat" -ge 0 ] || fail "exe selector: no sample of wl_attrib"
echo "exec pickup: first sample $lat ms after the command started"
[ "$lat" -lt 1000 ] || fail "first sample $lat ms after exec (want < 1 s)"

# 3. cgroup prefix: a process moved into a cgroup of its own is selected, its twin outside
# is not (needs a writable cgroup v2 hierarchy)
# (daemon_lib.sh made this run's cgroup, CG)
CGD=$CG/in
mkdir "$CGD" || fail "cannot create $CGD"
spin cgin &
C1=$!
spin cgout &
C2=$!
KIDS="$KIDS $C1 $C2"
echo $C1 >"$CGD/cgroup.procs" || fail "cannot move $C1 into $CGD"
rm -rf "$OUT"
start_daemon --mode selectors --cgroup "$CGSEL/in" --chunk-period 1s
wait_for 30 "cgroup $CGSEL/in selects $C1" is_target $C1
grep -q "^target pid=$C1 " "$ST" || { cat "$ST"; fail "cgroup $CGSEL/in did not select $C1"; }
grep -q "^target pid=$C2 " "$ST" && fail "process $C2 outside the cgroup selected"
# a process that moves into the cgroup long after its exec: the kernel checks the
# cgroup at each sample, so it is sampled (and becomes a target) all the same
echo $C2 >"$CGD/cgroup.procs" || fail "cannot move $C2 into $CGD"
wait_for 30 "$C2, moved into the cgroup, selected" is_target $C2
grep -q "^target pid=$C2 " "$ST" || { cat "$ST"; fail "$C2, moved into the cgroup, not selected"; }
kill $C1 $C2
wait $C1 $C2 2>/dev/null
stop_daemon
echo "cgroup prefix: selected the process in $CGSEL/in only, and one moved in later"

# 3b. container id prefix: when this test runs in a container (a hex id of >= 12 digits in
# /proc/self/cgroup), its first 8 digits select a process of ours
CID=$(grep -o '[0-9a-f]\{12,\}' /proc/self/cgroup | head -1)
if [ -n "$CID" ]; then
	rm -rf "$OUT"
	spin cidtest &
	C3=$!
	KIDS="$KIDS $C3"
	start_daemon --mode selectors --container "${CID:0:8}" --chunk-period 1s
	wait_for 30 "container ${CID:0:8} selects $C3" is_target $C3
	grep -q "^target pid=$C3 " "$ST" || { cat "$ST"; fail "container ${CID:0:8} did not select $C3"; }
	kill $C3
	stop_daemon
	start_daemon --mode selectors --container "ffff${CID:4:8}" --chunk-period 1s
	status_refresh # a status written after the start-up scan
	[ "$(dstat targets)" = 0 ] || fail "a wrong container prefix selected $(dstat targets) processes"
	stop_daemon
	echo "container prefix ${CID:0:8}: selected"
else
	echo "container part skipped: no container id in /proc/self/cgroup"
fi

# 4. mode context: wl_attrib (libctx) yes, busy shell no, within the exec window (host-wide
# by design: other processes with context may be targets too, the checks are about these two)
rm -rf "$OUT"
start_daemon --mode context --chunk-period 1s
"$WL/wl_attrib" long 0 1 >/dev/null &
A3=$!
KIDS="$KIDS $A3"
spin ctxtest &
S3=$!
KIDS="$KIDS $S3"
wait_for 30 "context mode: wl_attrib $A3 a located target" is_target $A3 'context=yes'
grep -q "^target pid=$A3 .*context=yes" "$ST" || { cat "$ST"; fail "context mode: wl_attrib $A3 not a located target"; }
grep -q "^target pid=$S3 " "$ST" && fail "context mode: busy shell $S3 selected"
# the ELF reads that decide are a job's (service/select_jobs.c), never the loop's: its counts
ex=$(dstat select_examined) sel=$(dstat select_selected)
echo "context mode: $ex processes examined off the loop, $sel selected, $(dstat select_abandoned) abandoned"
[ "${sel:-0}" -ge 1 ] && [ "$ex" -ge "$sel" ] ||
	fail "context mode: select_examined=$ex select_selected=$sel (wl_attrib was selected by a job)"
kill $A3 $S3
stop_daemon
echo "PASS: daemon target selection"
