#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# ctxprof daemon, split = process: two wl_attrib processes get their own rotated recordings
# named ctxprof-HOST-PID-COMM-YYYYMMDDTHHMMSSZ.jfr (.jfr.part while open, 0640), the status
# file names each target's current file, a process that exits gets its file finished while
# the daemon runs on, every file passes `jfr summary` and `jfr print --json` and holds only
# its own process's threads, the shared symbolizer is renewed once no process file is open;
# with split-max-open = 1 the second process goes to the shared
# host file (counted), nothing crashes.
. "$(dirname "$0")/daemon_lib.sh"

# samples per tid set in one file, both event types, one JDK launch: prints "OWN OTHER"
own_other() { # FILE "OWN TIDS" "OTHER TIDS"
	jfr print --json --events jdk.ExecutionSample "$1" >"$TMP/print.json" ||
		fail "jfr print --json $1 failed"
	python3 -c 'import json,sys
own=set(map(int,sys.argv[2].split())); other=set(map(int,sys.argv[3].split()))
ev=json.load(open(sys.argv[1]))["recording"]["events"]
t=[e["values"]["sampledThread"]["osThreadId"] for e in ev]
print(sum(x in own for x in t), sum(x in other for x in t), len(t))' "$TMP/print.json" "$2" "$3"
}
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
# the shared host file's name: ctxprof-HOST-TIME[-N].jfr
H=$(hostname | tr -c 'A-Za-z0-9._\n-' _)
HOSTFILE="^ctxprof-$H-[0-9]{8}T[0-9]{6}Z(-[0-9]+)?\.jfr\$"

# 1. two processes, rotate-period 6s: each its own files (a rotated process's next .part
# appears at its next sample)
spawn "$WL/wl_attrib" long 0 2 >"$TMP/a.out"
A=$SPAWNED
spawn "$WL/wl_attrib" long 0 2 >"$TMP/b.out"
B=$SPAWNED
start_daemon --mode selectors --cgroup "$CGSEL" --split process --chunk-period 1s \
	--rotate-period 6s --log-level debug
T0=$SECONDS
part_open() { ls "$OUT"/ctxprof-*-"$1"-wl_attrib-*.jfr.part >/dev/null 2>&1; }
for p in $A $B; do
	wait_for 10 "an open ctxprof-*-$p-wl_attrib-*.jfr.part" part_open "$p"
done
status_refresh
ls -la "$OUT"
for p in $A $B; do
	grep -q "^target pid=$p .* file=ctxprof-[^ ]*-$p-wl_attrib-[0-9T]*Z[-0-9]*\.jfr\.part$" "$ST" ||
		{ cat "$ST"; fail "status: no current file for target $p"; }
done
[ "$(dstat split)" = process ] || fail "status split=$(dstat split)"
[ "$(dstat process_files)" = 2 ] || fail "status process_files=$(dstat process_files) (want 2)"
"$CTXPROF" status --status-file "$ST" >"$TMP/st.txt" || fail "ctxprof status failed"
cat "$TMP/st.txt"
grep -Eq "^ +$A +.* ctxprof-[^ ]*-$A-wl_attrib-[^ ]*\.jfr\.part$" "$TMP/st.txt" ||
	fail "ctxprof status shows no file for $A"
grep -q "split per process: 2 files open" "$TMP/st.txt" || fail "ctxprof status: no split line"
echo "daemon RSS with 2 per-process recordings: $(rss_kb "$DPID") kB"
# rotate-period 6s: wait (up to 30 s, the machine may be busy) until each process has a
# finished file, so that with the file finished at its exit it has at least two
rotated() { ls "$OUT"/ctxprof-*-"$1"-wl_attrib-*.jfr >/dev/null 2>&1; }
for p in $A $B; do
	wait_for 30 "pid $p: a file rotated (rotate-period 6s)" rotated $p
done
echo "both processes' first files rotated $((SECONDS - T0)) s after the start"
# A exits: its last file is finished (renamed) about a second later, B's stays open
kill -USR1 $A
wait $A
# its exit is handled after every sample it took (ring order): then no late sample of it
# can open a file again
wait_for 10 "process $A no longer a target" eval '! is_target $A'
wait_for 5 "process $A exited: its .part finished" eval '! ls "$OUT"/ctxprof-*-"$A"-*.jfr.part >/dev/null 2>&1'
ls "$OUT"/ctxprof-*-"$A"-*.jfr.part 2>/dev/null && fail "process $A exited 5 s ago, its .part is still open"
# B's file rotated moments ago: its next file opens at its next sample (within a drain)
wait_for 5 "process $B: its file open (it must not lose it when $A exits)" part_open "$B"
kill -USR1 $B
wait $B
# no per-process file open any more: the shared symbolizer's names are freed
wait_for 30 "the log line 'no per-process file open: freeing'" \
	grep -q 'no per-process file open: freeing' "$DLOG"
grep 'no per-process file open: freeing' "$DLOG" ||
	fail "the shared symbolizer was not renewed once both processes' files were finished"
stop_daemon
ls -la "$OUT"
[ "$(stat -c %a "$OUT")" = 750 ] || fail "directory mode $(stat -c %a "$OUT")"
ls "$OUT"/*.part 2>/dev/null && fail ".part left after SIGTERM"
# (children a target forks are targets too, with files of their own: under ASan, LeakSanitizer
# forks at exit)
ls "$OUT" | grep -E "$HOSTFILE" && fail "a host file, with 2 processes and split-max-open 32"
TA=$(awk '/^cpu/ { print $2 }' "$TMP/a.out")
TB=$(awk '/^cpu/ { print $2 }' "$TMP/b.out")
[ -n "$TA" ] && [ -n "$TB" ] || fail "wl_attrib printed no tids"
for p in $A $B; do
	if [ "$p" = "$A" ]; then own=$TA other=$TB; else own=$TB other=$TA; fi
	n=0 total=0
	for f in "$OUT"/ctxprof-*-"$p"-wl_attrib-*.jfr; do
		b=$(basename "$f")
		[[ $b =~ ^ctxprof-[A-Za-z0-9._-]+-$p-wl_attrib-[0-9]{8}T[0-9]{6}Z(-[0-9]+)?\.jfr$ ]] ||
			fail "bad name $b"
		[ "$(stat -c %a "$f")" = 640 ] || fail "$b mode $(stat -c %a "$f")"
		jfr_ok "$f"
		read -r o x all < <(own_other "$f" "$own" "$other")
		echo "$b: $o samples of pid $p's threads, $x of the other process, $all in all"
		[ "$x" = 0 ] || fail "$b has $x samples of the other process"
		[ "$o" = "$all" ] || fail "$b has $((all - o)) samples of threads not of pid $p"
		total=$((total + o))
		n=$((n + 1))
	done
	[ "$n" -ge 2 ] || fail "pid $p: $n files, one rotated with rotate-period 6s (want >= 2)"
	[ "$total" -gt 50 ] || fail "pid $p: only $total samples"
done
echo "split per process: 2 processes, own files only"

# 2. split-max-open = 1: the second process's samples go to the shared host file, counted
rm -rf "$OUT"
spawn "$WL/wl_attrib" long 0 1 >"$TMP/c.out"
C=$SPAWNED
spawn "$WL/wl_attrib" long 0 1 >"$TMP/d.out"
D=$SPAWNED
start_daemon --mode selectors --cgroup "$CGSEL" --split process --split-max-open 1 \
	--chunk-period 1s --rotate-period 1h
# until the shared file has enough samples for the checks below (status every STATUS_PERIOD, up to ~30 s)
for _ in $(seq 15); do
	status_refresh
	ov=$(dstat overflow_samples)
	[ "${ov:-0}" -gt 30 ] && break
done
[ "$(dstat process_files)" = 1 ] || fail "process_files=$(dstat process_files) with split-max-open 1"
ov=$(dstat overflow_samples)
[ "$ov" -gt 0 ] || { cat "$ST"; fail "no overflow samples counted"; }
grep -q 'split-max-open' "$DLOG" || fail "the overflow was not logged"
kill -USR1 $C $D
wait $C $D
stop_daemon
ls -la "$OUT"
own=$(ls "$OUT"/ctxprof-*-wl_attrib-*.jfr | grep -E -- "-($C|$D)-wl_attrib-")
[ "$(echo "$own" | wc -l)" = 1 ] || fail "want one per-process file of $C or $D: $own"
shared=$(ls "$OUT" | grep -E "$HOSTFILE")
[ "$(echo "$shared" | wc -l)" = 1 ] || fail "want one shared host file: $shared"
shared=$OUT/$shared
TC=$(awk '/^cpu/ { print $2 }' "$TMP/c.out")
TD=$(awk '/^cpu/ { print $2 }' "$TMP/d.out")
if [[ $own == *-"$C"-wl_attrib-* ]]; then in=$TC out=$TD; else in=$TD out=$TC; fi
jfr_ok "$shared"
read -r o x all < <(own_other "$shared" "$out" "$in")
echo "shared file: $o samples of the process past the cap, $x of the one with its own file"
[ "$o" -gt 20 ] || fail "only $o samples of the second process in the shared file"
[ "$x" = 0 ] || fail "the shared file has $x samples of the process that has its own file"
"$CTXPROF" report "$own" >/dev/null || fail "ctxprof report $own failed"
echo "split-max-open 1: $ov samples counted as overflow, in the shared file"
echo "PASS: daemon split per process"
