#!/bin/bash
# SPDX-License-Identifier: MIT
# bench_metrics.sh — what the [metrics] endpoint costs the daemon, printed (never asserted):
# the daemon's CPU (time on CPU of all its threads, /proc/PID/task/*/schedstat) over SECS seconds while
# it samples one busy process at 99 Hz, without scrapes, with one scrape a second (what a
# Prometheus does at a 1 s interval, 15 times more often than its default) and with 20 a
# second; per scrape: CPU microseconds and bytes of text. Needs root. B=build dir (default
# build), SECS (default 10).
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
SECS=${SECS:-10}
CTXPROF=$B/ctxprof
TMP=$(mktemp -d /tmp/ctxprof-bench.XXXXXX)
PIDS=
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$TMP"' EXIT
[ "$(id -u)" = 0 ] || { echo "bench_metrics: needs root, skipped"; exit 0; }
[ -x "$CTXPROF" ] || { echo "bench_metrics: build first"; exit 1; }
# CPU ns of every thread of process $1 (schedstat: time on CPU, ns resolution)
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{ n += $1 } END { printf "%d", n }'; }
# the same for the endpoint's thread (libmicrohttpd names it MHD-*)
mhd_ns() {
	local t
	for t in /proc/"$1"/task/*; do
		case "$(cat "$t/comm")" in MHD*) awk '{ printf "%d", $1 }' "$t/schedstat"; return ;; esac
	done
	echo 0
}

# the target: a busy loop named by a link (its comm), so that no other bash is selected
ln -s /bin/bash "$TMP/ctxbenchbusy"
"$TMP/ctxbenchbusy" -c 'while :; do :; done' &
BUSY=$!
PIDS="$BUSY"
"$CTXPROF" daemon --mode selectors --comm ctxbenchbusy --listen 127.0.0.1:0 --directory "$TMP/out" \
	--status-file "$TMP/status" >"$TMP/log" 2>&1 &
D=$!
PIDS="$PIDS $D"
for _ in $(seq 200); do grep -q 'metrics: serving' "$TMP/log" && break; sleep 0.1; done
URL=$(grep -o 'http://127.0.0.1:[0-9]*/metrics' "$TMP/log" | head -1)
[ -n "$URL" ] || { cat "$TMP/log"; echo "bench_metrics: the daemon did not start"; exit 1; }
sleep 2 # past the start (the /proc scan, the first status)
BYTES=$(curl -s "$URL" | wc -c)
# run RATE: the daemon's CPU ms over SECS s with RATE scrapes a second (0: none)
run() {
	local rate=$1 t0 t1 m0 m1 n=0 end
	t0=$(cpu_ns "$D")
	m0=$(mhd_ns "$D")
	end=$((SECONDS + SECS))
	while [ $SECONDS -lt $end ]; do
		if [ "$rate" = 0 ]; then
			sleep 1
		else
			curl -s -o /dev/null "$URL"
			n=$((n + 1))
			sleep "$(awk -v r="$rate" 'BEGIN { printf "%.3f", 1 / r }')"
		fi
	done
	t1=$(cpu_ns "$D")
	m1=$(mhd_ns "$D")
	echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e6 }') $n $(((m1 - m0) / 1000))"
}
printf '%-18s %10s %8s %12s %16s %8s\n' case daemon_ms scrapes endpoint_us us/scrape %core
for rate in 0 1 20; do
	set -- $(run $rate)
	printf '%-18s %10s %8s %12s %16s %8s\n' "$rate scrape(s)/s" "$1" "$2" "$3" \
		"$(awk -v m="$3" -v n="$2" 'BEGIN { printf "%.0f", n ? m / n : 0 }')" \
		"$(awk -v c="$1" -v s="$SECS" 'BEGIN { printf "%.2f", c / (s * 10) }')"
done
echo "one scrape: $BYTES bytes of text; endpoint_us: CPU of the endpoint's thread (HTTP and"
echo "rendering); daemon_ms: every thread (sampling one busy process at 99 Hz included)"
