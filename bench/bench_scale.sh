#!/bin/bash
# SPDX-License-Identifier: MIT
# bench_scale.sh — ctxprof record beside perf record at scale (issue 32's budget), printed,
# never asserted. The host is sized by nproc, so the same bench runs here and on a big host:
#  - NPROCS (default nproc) busy wl_attrib processes, 2 threads each, publishing context;
#  - RATE Hz (default: 80,000 samples/s over the host, at least perf's 4999; at most
#    kernel.perf_event_max_sample_rate), SECS seconds (default 60);
#  - one after the other on the same processes: `perf record -a -g` (perf's whole-host
#    mode: a sample of every process) and `ctxprof record -p PIDS` (per-thread events);
#  - for each: samples, lost, without their stack, dropped by the writer, chunks cut early,
#    its own CPU seconds (user + system) and peak RSS; for ctxprof, the lost samples by cause
#    and the CPU per sample;
#  - ctxprof's peak RSS as fixed + per buffered sample (two recordings within one chunk).
# Then SCALE_PROCS (default 1000; 0: skipped) busy context-publishing processes (wl_attrib, one
# thread each; this shell polls at nice -15 so that it does not measure its own starvation)
# and the daemon as packaged (mode context, 99 Hz, nice -10): the seconds until
# every one is located (its status line says context=yes), then the daemon's CPU (% of a
# core) over SCALE_SECS (default 20) and its RSS.
# Needs root. B=build dir (default build); PERF=perf binary (default perf).
set -u
cd "$(dirname "$0")/.."
. bench/bench_lib.sh bench_scale
B=${B:-build}
PERF=${PERF:-perf}
CTXPROF=$B/ctxprof
WL=$B/tests/workloads/wl_attrib
[ -x "$CTXPROF" ] && [ -x "$WL" ] || { echo "bench_scale: build first"; exit 1; }
ncpu=$(nproc)
NPROCS=${NPROCS:-$ncpu}
SECS=${SECS:-60}
TOTAL_RATE=80000 # samples/s over the host: the budget's 2 x 40,000 Hz, 16 x 4999
PERF_DEFAULT_RATE=4999
max_rate=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo 100000)
rate=$((TOTAL_RATE / ncpu))
[ "$rate" -ge "$PERF_DEFAULT_RATE" ] || rate=$PERF_DEFAULT_RATE
[ "$rate" -le "$max_rate" ] || rate=$max_rate
RATE=${RATE:-$rate}

pids=()
stop_workload() {
	[ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
	wait 2>/dev/null
	pids=()
}
trap 'stop_workload; echo "$old_stats" > /proc/sys/kernel/bpf_stats_enabled 2>/dev/null; rm -rf "$TMP"' EXIT
for ((i = 0; i < NPROCS; i++)); do
	"$WL" long 0 2 >/dev/null 2>&1 &
	pids+=($!)
done
list=$(
	IFS=,
	echo "${pids[*]}"
)
echo "# $NPROCS busy 2-thread wl_attrib processes on $ncpu CPUs; $RATE Hz for $SECS s"
echo "# (kernel.perf_event_max_sample_rate $max_rate)"

# usage FILE: "CPU_SECONDS PEAK_RSS_KB" of the command /usr/bin/time measured into FILE
usage() { awk '/^usage / { printf "%.2f %d\n", $2 + $3, $4 }' "$1"; }
row() { # name samples lost stackless dropped cut cpu rss
	printf '%-26s %10s %9s %10s %9s %5s %8s %9s\n' "$@"
}
row profiler samples lost stackless dropped cut cpu_s rss_kb

# perf, whole host (what perf's users run; -p with 2 x NPROCS threads would be the same events)
/usr/bin/time -f 'usage %U %S %M' -o "$TMP/perf.time" \
	"$PERF" record -q -a -g -F "$RATE" -o "$TMP/perf.data" -- sleep "$SECS" \
	>/dev/null 2>"$TMP/perf.err"
if [ -s "$TMP/perf.data" ]; then
	report=$("$PERF" report --stdio --sort comm -i "$TMP/perf.data" 2>/dev/null | head -20)
	p_lost=$(sed -n 's/^# Total Lost Samples: \([0-9]*\).*/\1/p' <<<"$report")
	p_samples=$("$PERF" report --stats -i "$TMP/perf.data" 2>/dev/null |
		awk '/SAMPLE events:/ { print $3; exit }')
	set -- $(usage "$TMP/perf.time")
	row "perf record -a -g" "${p_samples:-?}" "${p_lost:-?}" - - - "${1:-?}" "${2:-?}"
else
	echo "perf record failed: $(tail -1 "$TMP/perf.err")"
fi
rm -f "$TMP/perf.data"

/usr/bin/time -f 'usage %U %S %M' -o "$TMP/ctx.time" \
	"$CTXPROF" record -q -F "$RATE" -p "$list" -d "$SECS" -o "$TMP/out.jfr" \
	--stats-json "$TMP/st.json" >/dev/null 2>"$TMP/ctx.err"
if [ -s "$TMP/st.json" ]; then
	set -- $(usage "$TMP/ctx.time")
	cpu=${1:-0} rss=${2:-0}
	set -- $(jq -r '[.samples, .lost, .no_stack, .jfr.samples_dropped, .jfr.chunks_cut_early,
		.lost_before_consumer, .lost_consumer_away, .lost_consumer_draining,
		.ring_bytes] | map(. // 0) | @tsv' "$TMP/st.json")
	row "ctxprof record -p" "$1" "$2" "$3" "$4" "$5" "$cpu" "$rss"
	echo "ctxprof lost by cause: before the consumer $6, consumer away $7, while draining $8;" \
		"ring $(($9 / 1048576)) MiB"
	awk -v c="$cpu" -v s="$1" 'BEGIN { if (s) printf "ctxprof CPU per sample: %.2f us\n", c * 1e6 / s }'
else
	echo "ctxprof record failed: $(tail -1 "$TMP/ctx.err")"
fi
echo "(cpu_s: the profiler's own user + system seconds; rss_kb: its peak RSS; dropped and cut:"
echo " the JFR writer's samples dropped at a chunk's bound and chunks cut early before it)"

# Peak RSS as fixed + per buffered sample: two recordings shorter than one chunk (every
# sample buffered until the end), MEM_SHORT and MEM_LONG seconds; the slope is the memory
# one more buffered sample costs (its batch entry, its encoded event, allocator slack).
MEM_SHORT=${MEM_SHORT:-2}
MEM_LONG=${MEM_LONG:-8}
mem_run() { # SECONDS -> "SAMPLES PEAK_RSS_KB CUT_EARLY"
	/usr/bin/time -f 'usage %U %S %M' -o "$TMP/mem.time" \
		"$CTXPROF" record -q -F "$RATE" -p "$list" -d "$1" -o "$TMP/mem.jfr" \
		--stats-json "$TMP/mem.json" >/dev/null 2>&1 || return 1
	set -- $(usage "$TMP/mem.time")
	echo "$(jq -r '.samples' "$TMP/mem.json") $2 $(jq -r '.jfr.chunks_cut_early // 0' "$TMP/mem.json")"
}
if m1=$(mem_run "$MEM_SHORT") && m2=$(mem_run "$MEM_LONG"); then
	awk -v a="$m1" -v b="$m2" 'BEGIN { split(a, x, " "); split(b, y, " ")
		if (x[3] + y[3] > 0 || y[1] <= x[1]) { print "memory per buffered sample: not measured (a chunk was cut early)"; exit }
		per = (y[2] - x[2]) * 1024 / (y[1] - x[1])
		printf "ctxprof peak RSS: %.1f MiB fixed + %.0f B per buffered sample (%d s: %d samples, %d KiB; %d s: %d, %d KiB)\n",
			(x[2] * 1024 - per * x[1]) / 1048576, per, '"$MEM_SHORT"', x[1], x[2], '"$MEM_LONG"', y[1], y[2] }'
else
	echo "memory per buffered sample: a recording failed"
fi
stop_workload

SCALE_PROCS=${SCALE_PROCS:-1000}
SCALE_SECS=${SCALE_SECS:-20}
LOCATE_DEADLINE=180 # seconds: past it, the count reached is printed
[ "$SCALE_PROCS" -gt 0 ] || exit 0
echo
echo "# $SCALE_PROCS busy context-publishing processes, the daemon in mode context at 99 Hz"
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
# this shell (its spawning and its polls) must not starve among the busy processes; they
# run at nice 0
renice -n -15 -p $$ >/dev/null
to_zero=$((0 - $(nice)))
for ((i = 0; i < SCALE_PROCS; i++)); do
	nice -n $to_zero "$WL" long 0 1 >/dev/null 2>&1 &
	pids+=($!)
done
st=$TMP/status
t0=$(now_ms)
nice -n -10 "$CTXPROF" daemon --directory "$TMP/out" --status-file "$st" >"$TMP/daemon.log" 2>&1 &
dpid=$!
located=0
while :; do
	located=$(grep -c '^target .* context=yes' "$st" 2>/dev/null)
	t=$(($(now_ms) - t0))
	[ "${located:-0}" -ge "$SCALE_PROCS" ] && break
	kill -0 "$dpid" 2>/dev/null || { echo "the daemon exited: $(tail -3 "$TMP/daemon.log")"; exit 0; }
	[ "$t" -gt $((LOCATE_DEADLINE * 1000)) ] && break
	sleep 1 # a measuring poll: the status file is rewritten every 2 s
done
echo "located: ${located:-0} of $SCALE_PROCS after $((t / 1000)).$((t % 1000 / 100)) s (daemon started at 0)"
cpu0=$(awk '{ print $14 + $15 }' "/proc/$dpid/stat")
sleep "$SCALE_SECS" # the measuring window
cpu1=$(awk '{ print $14 + $15 }' "/proc/$dpid/stat")
rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$dpid/status")
awk -v a="$cpu0" -v b="$cpu1" -v s="$SCALE_SECS" -v hz="$(getconf CLK_TCK)" -v r="$rss" 'BEGIN {
	printf "daemon once they are located: %.1f%% of a core over %d s, RSS %d KiB\n",
		(b - a) * 100 / hz / s, s, r }'
kill -TERM "$dpid"
wait "$dpid" 2>/dev/null
