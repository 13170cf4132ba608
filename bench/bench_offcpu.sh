#!/bin/bash
# SPDX-License-Identifier: MIT
# bench_offcpu.sh — off-CPU costs, printed side by side (never asserted):
#  1. BPF ns per context switch of ctxprof_offcpu_switch (kernel BPF stats run_time_ns /
#     run_cnt, from record --stats-json): a switch-heavy process that is NOT a target (filter
#     only), then the same process as the target (capture at switch-out + record at switch-in);
#  2. `perf bench sched pipe` (LOOPS round trips, median of ROUNDS): alone, under
#     ctxprof --event off-cpu, under perf record -e sched:sched_switch -g (tracefs mounted in
#     a private mount namespace), and offcputime-bpfcc when it can run here;
#  3. the same pipe in a process that is not a target, while ctxprof --event off-cpu -p and
#     perf record -e sched:sched_switch -g -p watch a sleeping process (the host's cost).
# Needs root. B=build dir (default build), LOOPS (default 200000), ROUNDS (default 3).
set -u
cd "$(dirname "$0")/.."
. bench/bench_lib.sh bench_offcpu
B=${B:-build}
LOOPS=${LOOPS:-200000}
ROUNDS=${ROUNDS:-3}
CTXPROF=$B/ctxprof
[ -x "$CTXPROF" ] || { echo "bench_offcpu: build first"; exit 1; }
command -v perf >/dev/null || { echo "bench_offcpu: no perf, skipped"; exit 0; }
PIPE="perf bench sched pipe -l $LOOPS"
usecs() { awk '/usecs\/op/ { print $1 }' "$1"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'; }
per_switch() { # stats.json -> "ns_per_switch runs"
	jq -r '.offcpu | "\(if .bpf_run_cnt > 0 then (.bpf_run_ns / .bpf_run_cnt | floor) else 0 end) \(.bpf_run_cnt)"' "$1"
}

# until process $1 holds a BPF link (ctxprof attached; its setup takes seconds on a loaded
# host) or 60 s passed
attached() {
	local i
	for i in $(seq 600); do
		ls -l /proc/"$1"/fd 2>/dev/null | grep -q 'anon_inode:bpf_link' && return 0
		sleep 0.1
	done
	return 1
}

echo "# 1. BPF cost per context switch (kernel.bpf_stats_enabled=1, $PIPE)"
echo 1 > /proc/sys/kernel/bpf_stats_enabled
sleep 60 &
idle=$!
"$CTXPROF" record -q --event off-cpu -p $idle -o /dev/null --stats-json "$TMP/nt.json" &
rec=$!
attached $rec
$PIPE >/dev/null 2>&1
kill -INT $rec
wait $rec
kill $idle 2>/dev/null
read -r nt nt_runs < <(per_switch "$TMP/nt.json")
"$CTXPROF" record -q --event off-cpu --stats-json "$TMP/t.json" -o "$TMP/t.folded" -- $PIPE \
	>/dev/null 2>&1
read -r tg tg_runs < <(per_switch "$TMP/t.json")
intervals=$(jq .offcpu.intervals "$TMP/t.json")
short=$(jq .offcpu.short "$TMP/t.json")
echo 0 > /proc/sys/kernel/bpf_stats_enabled
printf '%-44s %8s %10s\n' "switches seen by ctxprof_offcpu_switch" ns/switch switches
printf '%-44s %8s %10s\n' "non-target (filter only)" "$nt" "$nt_runs"
printf '%-44s %8s %10s\n' "target (capture + emit or drop)" "$tg" "$tg_runs"
echo "(target run: $intervals intervals recorded, $short dropped under the 1 ms minimum;"
echo " BPF stats themselves add ~60-200 ns of clock reads per invocation)"

echo
echo "# 2. $PIPE: usecs per round trip, median of $ROUNDS"
can_perf=1
unshare -m sh -c 'mount -t tracefs nodev /sys/kernel/tracing && perf record -q -o /dev/null \
	-e sched:sched_switch -g true' >/dev/null 2>&1 || can_perf=0
bcc_why=""
if ! command -v offcputime-bpfcc >/dev/null; then
	bcc_why="not installed (Debian package bpfcc-tools)"
elif ! timeout 20 offcputime-bpfcc 1 >/dev/null 2>"$TMP/bcc.err"; then
	bcc_why="cannot run here: $({ grep -m1 -E 'Unable|kprobe' "$TMP/bcc.err" ||
		grep -m1 -E 'Exception|rror' "$TMP/bcc.err"; } | cut -c1-120) (it compiles its BPF with kernel headers this VM lacks, and attaches a kprobe to finish_task_switch: this kernel has no CONFIG_KPROBES)"
fi
for r in $(seq "$ROUNDS"); do
	$PIPE >"$TMP/base.$r" 2>&1
	"$CTXPROF" record -q --event off-cpu -o /dev/null -- $PIPE >"$TMP/ctx.$r" 2>&1
	if [ $can_perf = 1 ]; then
		unshare -m sh -c "mount -t tracefs nodev /sys/kernel/tracing && perf record -q \
			-o $TMP/perf.data -e sched:sched_switch -g -- $PIPE" >"$TMP/perf.$r" 2>&1
	fi
	if [ -z "$bcc_why" ]; then
		offcputime-bpfcc >/dev/null 2>&1 &
		bcc=$!
		sleep 3
		$PIPE >"$TMP/bcc.$r" 2>&1
		kill -INT $bcc
		wait $bcc
	fi
done
base=$(for r in $(seq "$ROUNDS"); do usecs "$TMP/base.$r"; done | median)
row() { # name prefix
	local v
	v=$(for r in $(seq "$ROUNDS"); do usecs "$TMP/$2.$r"; done | median)
	awk -v n="$1" -v v="$v" -v b="$base" 'BEGIN {
		if (v == "" || v == 0) { printf "%-44s %10s\n", n, "n/a"; exit }
		printf "%-44s %10.3f %+9.1f%%\n", n, v, b ? 100 * (v - b) / b : 0 }'
}
perf_row() { # name prefix
	if [ $can_perf = 1 ]; then
		row "$1" "$2"
	else
		printf '%-44s %10s\n' "$1" "cannot run (tracefs mount failed)"
	fi
}
printf '%-44s %10s %10s\n' configuration usecs/op slowdown
row "none" base
row "ctxprof record --event off-cpu (target)" ctx
perf_row "perf record -e sched:sched_switch -g" perf
if [ -z "$bcc_why" ]; then
	row "offcputime-bpfcc (host-wide)" bcc
else
	echo "offcputime-bpfcc: $bcc_why"
fi

echo
echo "# 3. the host's cost: $PIPE in a process that is NOT a target (usecs per round trip,"
echo "#    median of $ROUNDS) while each profiler watches a sleeping process (-p)"
sleep 3600 &
idle2=$!
for r in $(seq "$ROUNDS"); do
	$PIPE >"$TMP/ntb.$r" 2>&1
	"$CTXPROF" record -q --event off-cpu -p $idle2 -o /dev/null &
	rec=$!
	attached $rec
	$PIPE >"$TMP/ntc.$r" 2>&1
	kill -INT $rec
	wait $rec
	if [ $can_perf = 1 ]; then
		unshare -m sh -c "mount -t tracefs nodev /sys/kernel/tracing && exec perf record -q \
			-o $TMP/ntp.data -e sched:sched_switch -g -p $idle2" >/dev/null 2>&1 &
		perfpid=$!
		sleep 2 # perf has no readiness signal; it opens its events in well under that
		$PIPE >"$TMP/ntp.$r" 2>&1
		kill -INT $perfpid
		wait $perfpid
	fi
done
kill $idle2 2>/dev/null
base=$(for r in $(seq "$ROUNDS"); do usecs "$TMP/ntb.$r"; done | median)
printf '%-44s %10s %10s\n' configuration usecs/op slowdown
row "none" ntb
row "ctxprof record --event off-cpu -p SLEEPER" ntc
perf_row "perf record -e sched:sched_switch -g -p SLEEPER" ntp
echo "(a round trip is 2 context switches on each side of the pipe; what is left for a"
echo " non-target switch is the tracepoint's call into the BPF program and the bitmap test)"
