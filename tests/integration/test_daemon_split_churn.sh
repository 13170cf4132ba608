#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# ctxprof daemon, split = process, under churn: 600 short busy processes (each sampled, each
# its own recording with its own trace table) and 10 long busy ones. Every finished table's
# memory goes back to the system (tables are mmap'ed: from malloc, they stayed resident in
# the brk heap, 735-752 MB with 10,000 processes), and no fd is left behind per process.
# Prints RSS and open fds before and after; the bounds hold in the plain build only (the
# sanitizer keeps freed memory), the churn runs in the ASan/UBSan variant too.
. "$(dirname "$0")/daemon_lib.sh"
san=0
case "$B" in *asan* | *tsan*) san=1 ;; esac
short=20000 # the short processes' loop turns
name=spl$$ # the comm selected: unique to this run
cp /bin/sh "$TMP/$name"
# exec: `busy N &` must leave $! the busy process itself, or cleanup's kill reaches only
# the subshell and the loop runs on after the test
busy() { exec "$TMP/$name" -c "i=0; while [ \$i -lt $1 ]; do i=\$((i+1)); done"; }
start_daemon --mode selectors --comm "$name" --split process --chunk-period 1s
# the packaged priority (Nice=-10, docs/packaging.md): 60 busy processes on this host's CPUs
# leave a nice-0 daemon a sixtieth of a CPU, and it took as few as 199 of the 610 (with the
# code of the last landing too) before they ended; the churn is what is tested, not that
for t in /proc/"$DPID"/task/*; do renice -n -10 -p "${t##*/}" >/dev/null || fail "renice"; done
for _ in $(seq 10); do
	busy 100000000 &
	KIDS="$KIDS $!"
done
wave() {
	local p=""
	for _ in $(seq 50); do
		busy $short &
		p="$p $!"
	done
	wait $p
}
rss() { awk '/^VmRSS/ { print $2 }' /proc/$DPID/status; }
fds() { ls /proc/$DPID/fd | wc -l; }
wave # warm-up: first-time allocations (modules, symbol tables) are not growth
status_refresh
rss0=$(rss) fd0=$(fds)
for _ in $(seq 11); do wave; done
status_refresh
status_refresh
rss1=$(rss) fd1=$(fds)
seen=$(dstat processes_seen)
echo "600 processes, split = process: RSS ${rss0} KiB -> ${rss1} KiB (+$(((rss1 - rss0) / 1024)) MiB), fds $fd0 -> $fd1, targets taken $seen"
[ "$seen" -ge 300 ] || fail "only $seen of 610 processes became targets"
[ $((fd1 - fd0)) -lt 48 ] || fail "fds grew from $fd0 to $fd1"
[ $san = 1 ] || [ $((rss1 - rss0)) -lt $((96 * 1024)) ] || fail "RSS grew by $((rss1 - rss0)) KiB"
for k in $KIDS; do kill "$k"; done
stop_daemon
echo "PASS: daemon split churn"
