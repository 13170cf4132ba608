#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# Hostile (issue 31 item 2): 40 users (numeric uids, as many as a host's tenants may have),
# each with a process that publishes context, runs code in anonymous executable memory and
# writes a 16 MiB perf map. Each parsed map was bounded alone (16 MiB of names, 6 MiB of
# entries) but nothing summed them: the daemon grew by ~20 MiB per map (48 maps: 30 MB ->
# 973 MB; 110: 1.87 GB, near the unit's MemoryMax, where an OOM kill loses every user's
# samples). Now every map together stays within PERF_MAP_BUDGET_BYTES (128 MiB, one user at
# most 32 MiB of it): the reads past it are refused and counted (perf_map_refused), the
# status file shows what the maps hold (perf_map_bytes, never above the budget), the
# daemon's peak RSS grows by less than the budget plus a margin for the 40 new targets'
# state, the JIT frames of the maps read first are named, the status stays fresh and the
# recording stays readable.
. "$(dirname "$0")/hostile_lib.sh"
FX=${FX_PERF_MAP:-$B/tests/fixtures/fx_perf_map}
[ -x "$FX" ] || fail "no $FX (run make)"
USERS=40
MAP_BYTES=$((16 << 20))
BUDGET_KB=$((128 << 10)) # PERF_MAP_BUDGET_BYTES (stack/perf_map_budget.h)
MARGIN_KB=$((96 << 10))  # 40 more targets, their modules, chunks in memory meanwhile
UID_BASE=$((1500000000 + ($$ % 100000) * 64)) # no user has these; a run of its own
PIDS=()
flood_cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
		rm -f "/tmp/perf-$p.map"
	done
	hostile_cleanup
}
trap flood_cleanup EXIT

attacker_user
cp "$FX" "$ATK_HOME/jit" && chmod 0755 "$ATK_HOME/jit"
start_control
start_default_daemon --chunk-period 5s
wait_for 60 "context samples of the control target" target_over "$CONTROL" 50 context_samples
rss0=$(daemon_rss_kb)
echo "daemon RSS before the flood: $rss0 KiB"

for i in $(seq 0 $((USERS - 1))); do
	u=$((UID_BASE + i))
	spawn setpriv --reuid="$u" --regid="$u" --clear-groups --inh-caps=-all --bounding-set=-all \
		-- "$ATK_HOME/jit" "$MAP_BYTES" 2 >"$TMP/jit.$i.out"
	PIDS+=("$SPAWNED")
done
all_ready() {
	local i
	for i in $(seq 0 $((USERS - 1))); do grep -q '^ready' "$TMP/jit.$i.out" || return 1; done
}
wait_for 120 "$USERS processes with a 16 MiB perf map each" all_ready
echo "$USERS users' processes wrote their perf maps: $(du -ch /tmp/perf-"${PIDS[0]}".map | tail -1 | cut -f1) each"
sampled=0
all_sampled() {
	local p n=0
	for p in "${PIDS[@]}"; do target_over "$p" 0 && n=$((n + 1)); done
	sampled=$n
	[ "$n" -ge $((USERS * 3 / 4)) ]
}
wait_for 120 "most of the $USERS processes sampled" all_sampled
# two more chunks written: the JIT frames of every process sampled so far symbolized (each
# map read as far as the budget lets it)
chunks=$(dstat chunks_written)
wait_for 120 "two more chunks written" eval '[ "$(dstat chunks_written)" -ge $((chunks + 2)) ]'
held=$(dstat perf_map_bytes)
hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$DPID/status")
echo "$sampled of $USERS processes sampled; perf-map reads refused: $(dstat perf_map_refused); held by perf maps: $held bytes"
echo "daemon peak RSS $hwm KiB: +$((hwm - rss0)) KiB over the $rss0 KiB before (budget $BUDGET_KB KiB + margin $MARGIN_KB KiB)"
[ $((hwm - rss0)) -lt $((BUDGET_KB + MARGIN_KB)) ] ||
	fail "the daemon grew by $((hwm - rss0)) KiB under the perf-map flood"
[ "$(dstat perf_map_refused)" -gt 0 ] 2>/dev/null || fail "no perf-map read refused (counted)"
[ "${held:-0}" -gt 0 ] || fail "no perf map held: the maps were never read"
[ "$held" -le $((BUDGET_KB * 1024)) ] || fail "perf maps hold $held bytes, over the $BUDGET_KB KiB budget"
assert_rss_bounded
assert_fresh
stop_daemon
named=0
for f in "$OUT"/*.jfr; do
	(jfr_ok "$f") >"$TMP/jfr_ok.out" 2>&1 || { cat "$TMP/jfr_ok.out"; fail "$f is not readable"; }
	n=$(jfr print --events jdk.ExecutionSample --stack-depth 1 "$f" | grep -c 'jit_spin')
	named=$((named + n))
done
echo "samples whose top frame the perf maps name (jit_spin): $named"
[ "$named" -gt 0 ] || fail "no JIT frame named: the perf maps read within the budget name nothing"
echo PASS
