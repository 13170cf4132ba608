#!/bin/bash
# SPDX-License-Identifier: MIT
# Delivery cost (issue 12 budget: the daemon's CPU while uploading every 10 s within 1% of
# one core). Printed side by side, not asserted.
#  1. A host profile: `ctxprof daemon` (mode all, 99 Hz) with demo_app running, one file of
#     BENCH_SECONDS (default 60), uploaded to a local receiver (tests/integration/
#     upload_receiver.py); then bench_upload sends that file (+ labels) 20 more times per
#     protocol (Pyroscope jfr; OTLP: converted and gzip'd each time, as the uploader does)
#     and prints the uploader thread's CPU per profile and the bytes on the wire.
#  2. The daemon sampling demo_app for BENCH_UPLOAD_SECONDS (default 60), rotating every 10 s,
#     with and without an [upload] target: its CPU (utime + stime, % of one core) and the
#     uploader thread's (10 ms ticks: 0 means under one tick).
set -u
B=${BENCH_BUILD:-build}
secs=${BENCH_SECONDS:-60}
usecs=${BENCH_UPLOAD_SECONDS:-60}
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench_upload: SKIPPED (needs root)"; exit 0; }
[ -x "$B/demo/demo_app" ] || { echo "bench_upload: SKIPPED (no $B/demo/demo_app: make demo)"; exit 0; }
tmp=$(mktemp -d)
app= rp= dp=
trap 'kill $app $rp $dp 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/recv"
python3 tests/integration/upload_receiver.py "$tmp/recv" &
rp=$!
for _ in $(seq 100); do [ -s "$tmp/recv/port" ] && break; sleep 0.1; done
url=http://127.0.0.1:$(cat "$tmp/recv/port")
"$B/demo/demo_app" $((secs + 2 * usecs + 60)) 2 >/dev/null &
app=$!
hz=$(getconf CLK_TCK)
conf() { # ROTATE UPLOAD(0/1) DIR [EXE: only that program, else the host]
	if [ -n "${4:-}" ]; then printf '[targets]\nmode = selectors\nexe = %s\n' "$4"; else printf '[targets]\nmode = all\n'; fi
	printf '[output]\ndirectory = %s\nrotate-period = %s\nchunk-period = 10s\n[daemon]\nstatus-file = %s/status\n' \
		"$3" "$1" "$tmp"
	[ "$2" = 1 ] && printf '[upload]\nurl = %s\napplication = ctxprof-bench\ntags = env=bench\n' "$url"
}
# ticks of the whole daemon and of its uploader thread: "TOTAL UPLOADER"
ticks() {
	local t u=0 f
	t=$(awk '{ print $14 + $15 }' /proc/$dp/stat)
	for f in /proc/$dp/task/*; do
		[ "$(cat "$f/comm" 2>/dev/null)" = ctxprof-upload ] && u=$((u + $(awk '{ print $14 + $15 }' "$f/stat")))
	done
	echo "$t $u"
}
run_daemon() { # CONF SECONDS -> prints "TOTAL_TICKS UPLOADER_TICKS"
	"$B/ctxprof" daemon --config "$1" >"$tmp/daemon.log" 2>&1 &
	dp=$!
	for _ in $(seq 300); do [ -s "$tmp/status" ] && break; sleep 0.1; done
	sleep 1
	local a b
	a=$(ticks)
	sleep "$2"
	b=$(ticks)
	kill -TERM $dp
	wait $dp
	dp=
	rm -f "$tmp/status"
	echo "$a $b" | awk '{ print $3 - $1, $4 - $2 }'
}
# 1. one host profile of $secs, then its upload cost
conf "${secs}s" 1 "$tmp/out1" >"$tmp/c1"
run_daemon "$tmp/c1" "$secs" >/dev/null
req=$(ls -d "$tmp"/recv/req-[0-9]* 2>/dev/null | sort -t- -k2 -n | while read -r d; do
	[ "$(stat -c %s "$d/jfr")" -gt 0 ] && echo "$d"; done | head -1)
if [ -n "$req" ]; then
	echo "host profile of ${secs}s (daemon mode all, 99 Hz, demo_app running):"
	"$B/bench/bench_upload" "$url" "$req/jfr" "$req/labels" 20 jfr
	"$B/bench/bench_upload" "$url" "$req/jfr" "$req/labels" 20 otlp
else
	echo "bench_upload: no profile reached the receiver"; tail -5 "$tmp/daemon.log"
fi
# 2. the daemon's CPU over $usecs with a file every 10 s, with and without uploads
# (only demo_app is sampled: the host's other load would swamp the difference)
exe=$(readlink -f "$B/demo/demo_app")
conf 10s 0 "$tmp/out2" "$exe" >"$tmp/c2"
conf 10s 1 "$tmp/out3" "$exe" >"$tmp/c3"
n0=$(ls -d "$tmp"/recv/req-[0-9]* | wc -l)
read -r t0 _ < <(run_daemon "$tmp/c2" "$usecs")
read -r t1 u1 < <(run_daemon "$tmp/c3" "$usecs")
n1=$(($(ls -d "$tmp"/recv/req-[0-9]* | wc -l) - n0))
awk -v t0="$t0" -v t1="$t1" -v u1="$u1" -v hz="$hz" -v s="$usecs" -v n="$n1" 'BEGIN {
	printf "daemon CPU over %d s sampling demo_app, a file every 10 s (%% of one core):\n", s
	printf "  %-28s %6.2f%%\n", "without upload", 100 * t0 / hz / s
	printf "  %-28s %6.2f%%   (uploader thread %.2f%%, %d uploads; budget 1%%)\n", "with upload every 10 s", 100 * t1 / hz / s, 100 * u1 / hz / s, n
}'
