#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# record samples its targets through per-thread events (engine/task_events.h), so that a
# process that is not a target takes no sampling interrupt at any rate: with a busy
# non-target beside it, the sampling program runs only for the targets (kernel.bpf_stats:
# its run count is the samples' count exactly for a command, started after sampling
# starts), the command's threads and forked children inherit the events from its first
# instruction, and `-p` opens one event per thread of each listed process.
. "$(dirname "$0")/sampler_lib.sh"
KIDS=
bpf_stats=
per_thread_cleanup() {
	[ -n "$bpf_stats" ] && echo "$bpf_stats" >/proc/sys/kernel/bpf_stats_enabled
	kill $KIDS 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap per_thread_cleanup EXIT
# a busy process that is no target: with per-CPU events it would be interrupted at -F
sh -c 'while :; do :; done' &
KIDS="$KIDS $!"
# a target for -p: wl_attrib with two workers (its main thread one of them)
"$WL/wl_attrib" long 0 2 >/dev/null &
T=$!
KIDS="$KIDS $T"
wait_for 10 "the -p target's threads" eval '[ "$(ls /proc/'"$T"'/task | wc -l)" -ge 2 ]'
nthreads=$(ls "/proc/$T/task" | wc -l)

sysctl_lock /proc/sys/kernel/bpf_stats_enabled
bpf_stats=$(cat /proc/sys/kernel/bpf_stats_enabled)
echo 1 >/proc/sys/kernel/bpf_stats_enabled
# 1. a command that forks two processes of two workers each: all sampled, nothing else
record_ok 60 -F 999 -o "$TMP/cmd.folded" -- \
	sh -c '"$0" long 2 2 >/dev/null & "$0" long 2 2 >/dev/null; wait' "$WL/wl_attrib"
cp "$TMP/stats.json" "$TMP/cmd.json"
# 2. -p: one event per listed thread
record_ok 60 -F 999 -p "$T" -d 2s -o "$TMP/p.folded"
cp "$TMP/stats.json" "$TMP/p.json"
echo "$bpf_stats" >/proc/sys/kernel/bpf_stats_enabled
bpf_stats= # put back: from now on another run may own the setting
sysctl_unlock

samples=$(stat_json .samples "$TMP/cmd.json")
runs=$(stat_json .bpf_runs "$TMP/cmd.json")
events=$(stat_json .perf_events_per_thread "$TMP/cmd.json")
procs=$(grep -o '^wl_attrib-[0-9]*' "$TMP/cmd.folded" | sort -u | wc -l)
workers=$(grep -oE '^wl_attrib-[0-9]+;wl-[0-9]+' "$TMP/cmd.folded" | sort -u | wc -l)
echo "command: $samples samples, the program ran $runs times, $events event(s) opened," \
	"$procs wl_attrib processes and $workers of their workers sampled"
[ "$samples" -gt 0 ] || fail "no sample of the command"
[ "$runs" = "$samples" ] || fail "the sampling program ran $runs times for $samples samples: non-targets interrupted"
[ "$events" = 1 ] || fail "$events events for a command (one, inherited)"
[ "$procs" = 2 ] || fail "$procs forked wl_attrib processes sampled, want 2 (inherited)"
[ "$workers" -ge 4 ] || fail "$workers workers sampled, want 4 (inherited threads)"

samples=$(stat_json .samples "$TMP/p.json")
runs=$(stat_json .bpf_runs "$TMP/p.json")
events=$(stat_json .perf_events_per_thread "$TMP/p.json")
echo "-p $T ($nthreads threads): $samples samples, the program ran $runs times, $events events"
[ "$events" = "$nthreads" ] || fail "$events events for $nthreads threads"
[ "$samples" -gt 0 ] || fail "no sample of -p $T"
echo PASS
