#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# A pid recycled to another user's process: its bytes are never read as the old target's
# (util/proc_pin.h). The attacker A spins in anonymous executable memory (JIT-like code, no
# perf map) and is sampled; the daemon is stopped (SIGSTOP) while A's samples queue in the
# ring; A is killed and reaped, and a victim B of another user (nobody) is forked into A's
# very pid (root writes /proc/sys/kernel/ns_last_pid) and writes its perf map,
# /tmp/perf-PID.map, naming A's code address victim_secret_fn. The daemon resumes and takes
# A's queued samples: a lookup of A's perf map by pid now finds B's (owned by B's user, the
# owner of /proc/PID now). The daemon must never name A's frames from it (no
# victim_secret_fn in any recording) and must count the refusal (pid_recycled). Before
# pins, the daemon named A's frames with B's function.
. "$(dirname "$0")/hostile_lib.sh"

[ "$(uname -m)" = x86_64 ] || skip "the spinning target's code is x86-64 (jmp .)"
NS_LAST_PID=/proc/sys/kernel/ns_last_pid
[ -w "$NS_LAST_PID" ] || skip "needs a writable $NS_LAST_PID (root in the initial pid namespace)"
VICTIM_UID=$(id -u nobody 2>/dev/null) || skip "needs the user nobody (the victim)"
VICTIM_NAME=victim_secret_fn
MAPFILE=
pid_recycled_cleanup() {
	[ -n "$DPID" ] && kill -CONT "$DPID" 2>/dev/null
	[ -n "$VICTIM" ] && kill -9 "$VICTIM" 2>/dev/null
	[ -n "$MAPFILE" ] && rm -f "$MAPFILE"
	hostile_cleanup
}
trap pid_recycled_cleanup EXIT

attacker_user
start_daemon --mode selectors --cgroup "$CGSEL" --split process --chunk-period 1s

cat >"$TMP/spin_anon.py" <<'PYEOF'
import ctypes, mmap, os, sys
# private: a shared anonymous mapping shows as /dev/zero, a file, in the maps
m = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE,
              prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(b"\xeb\xfe")  # jmp . : spins in anonymous code, as a JIT's would
addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%x" % addr)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
ctypes.CFUNCTYPE(None)(addr)()
PYEOF
chmod 0644 "$TMP/spin_anon.py"
spawn_attacker /usr/bin/python3 "$TMP/spin_anon.py" "$ATK_HOME/addr"
A=$SPAWNED
wait_for 30 "the attacker's code address" test -s "$ATK_HOME/addr"
ADDR=$(cat "$ATK_HOME/addr")
[ -e "/tmp/perf-$A.map" ] && fail "a /tmp/perf-$A.map exists before the attack"
wait_for 60 "the attacker $A sampled" target_over "$A" 5
echo "attacker $A (uid $ATK_UID) spins at 0x$ADDR, sampled"

# The daemon stops reading; A's samples queue in the ring (BPF still runs). Its lookup of a
# perf map is retried once a second: let one second pass, and A run, before A dies.
kill -STOP "$DPID"
t0=$(date +%s%N)
c0=$(cpu_ticks "$A")
ran_a_second() {
	[ $(($(date +%s%N) - t0)) -gt 1200000000 ] && [ "$(cpu_ticks "$A")" -gt $((c0 + 20)) ]
}
wait_for 30 "the attacker running while the daemon is stopped" ran_a_second
kill -9 "$A"
wait "$A" 2>/dev/null

# B: another user's process in A's pid, with a perf map of its own covering A's code.
VICTIM=
MAPFILE=/tmp/perf-$A.map
exec 9<"$NS_LAST_PID"
flock 9 || fail "cannot lock $NS_LAST_PID"
prev=$((A - 1))
for _ in $(seq 100); do
	echo "$prev" >"$NS_LAST_PID"
	setpriv --reuid="$VICTIM_UID" --regid="$(id -g nobody)" --clear-groups --inh-caps=-all \
		--bounding-set=-all -- sh -c "printf '%s 1000 $VICTIM_NAME\n' $ADDR >/tmp/perf-\$\$.map.tmp &&
			mv /tmp/perf-\$\$.map.tmp /tmp/perf-\$\$.map && exec sleep 600" &
	VICTIM=$!
	[ "$VICTIM" = "$A" ] && break
	kill -9 "$VICTIM"
	wait "$VICTIM" 2>/dev/null
	rm -f "/tmp/perf-$VICTIM.map" "/tmp/perf-$VICTIM.map.tmp"
	VICTIM=
done
flock -u 9
exec 9<&-
[ -n "$VICTIM" ] || fail "pid $A kept going to other processes"
wait_for 30 "the victim's perf map" test -s "$MAPFILE"
[ "$(stat -c %u "$MAPFILE")" = "$VICTIM_UID" ] || fail "$MAPFILE not owned by the victim"
[ "$(stat -c %u "/proc/$A")" = "$VICTIM_UID" ] || fail "pid $A is not the victim's"
echo "victim $VICTIM (uid $VICTIM_UID) took pid $A; its $MAPFILE names 0x$ADDR $VICTIM_NAME"

# The daemon resumes and takes A's queued samples; two status rewrites later the ring is
# drained (at most 20 ms per drain between them).
kill -CONT "$DPID"
status_refresh
status_refresh
recycled=$(dstat pid_recycled)
stop_daemon
found=
for f in "$OUT"/*.jfr "$OUT"/*/*.jfr; do
	[ -f "$f" ] || continue
	jfr print --events jdk.ExecutionSample "$f" >"$TMP/print.txt" 2>&1 ||
		fail "jfr print $f failed: $(tail -3 "$TMP/print.txt")"
	grep -q "$VICTIM_NAME" "$TMP/print.txt" && found="$found $f"
done
[ -z "$found" ] || fail "the attacker's frames were named from the victim's perf map ($VICTIM_NAME in$found)"
[ "${recycled:-0}" -gt 0 ] || fail "the read of a recycled pid was not refused and counted (pid_recycled=${recycled:-absent})"
echo "PASS: no frame named from the victim's perf map; pid_recycled=$recycled"
