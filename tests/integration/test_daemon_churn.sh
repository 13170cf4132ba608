#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# ctxprof daemon under process churn: 1,000 short processes matching the selector appear and
# disappear (20 waves of 50); every one is made a target at its exec and dropped at its exit.
# Prints the daemon's RSS before and after; asserts growth < 64 MiB (and < 16 MiB for a
# second 1,000), that most of them were
# taken as targets, and that the kernel's targets map drains back to 0.
. "$(dirname "$0")/daemon_lib.sh"
# Also run in the ASan/UBSan variant (kind rootsan): there, only the RSS bounds are skipped (the
# sanitizer keeps freed memory; RSS means nothing).
san=0
case "$B" in *asan* | *tsan*) san=1 ;; esac
cp /bin/sleep "$TMP/churnproc"
start_daemon --mode selectors --cgroup "$CGSEL" --chunk-period 2s
wave() {
	local p=""
	for _ in $(seq 50); do
		spawn "$TMP/churnproc" 0.3
		p="$p $SPAWNED"
	done
	wait $p
	KIDS=
}
# every process of the last wave dropped again (the status is rewritten every STATUS_PERIOD)
settled() {
	status_refresh
	wait_for 60 "all targets dropped after a wave" drained
}
wave # warm-up: first-time allocations (modules, symbol tables) are not growth
settled
rss0=$(awk '/^VmRSS/ { print $2 }' /proc/$DPID/status)
for _ in $(seq 19); do wave; done
settled
rss1=$(awk '/^VmRSS/ { print $2 }' /proc/$DPID/status)
seen=$(dstat processes_seen)
echo "1,000 processes: RSS ${rss0} KiB -> ${rss1} KiB (+$(((rss1 - rss0) / 1024)) MiB), targets taken $seen, map entries $(dstat map_entries), targets $(dstat targets)"
[ "$seen" -ge 500 ] || fail "only $seen of 1000 processes became targets"
[ "$(dstat map_entries)" = 0 ] || fail "targets map holds $(dstat map_entries) entries after the churn"
[ "$(dstat targets)" = 0 ] || fail "$(dstat targets) targets left after the churn"
[ $san = 1 ] || [ $((rss1 - rss0)) -lt $((64 * 1024)) ] || fail "RSS grew by $((rss1 - rss0)) KiB"
# a second round: the first one includes one-time growth (rings and tables touched for the
# first time); steady state must not grow with the number of processes seen
for _ in $(seq 20); do wave; done
settled
rss2=$(awk '/^VmRSS/ { print $2 }' /proc/$DPID/status)
echo "next 1,000 processes: RSS ${rss1} KiB -> ${rss2} KiB"
[ $san = 1 ] || [ $((rss2 - rss1)) -lt $((16 * 1024)) ] || fail "RSS grew by $((rss2 - rss1)) KiB in the second round"
stop_daemon
jfr_ok "$(ls "$OUT"/*.jfr | tail -1)"
echo "PASS: daemon churn"
