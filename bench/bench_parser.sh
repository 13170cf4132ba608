#!/bin/bash
# SPDX-License-Identifier: MIT
# bench_parser.sh — what parsing target ELF/DWARF in the unprivileged parser helper costs,
# printed (never asserted) beside the in-process parsing of a build without it (BASE, default
# /work/base2/build when present): a daemon sampling one busy process (wl_deep, frame
# pointers, 1 s chunks) — the latency from its start to the first chunk whose frames are
# named, and CPU per minute of the daemon and of its helper over SECS (default 20) seconds.
# Needs root. B=build dir (default build).
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
BASE=${BASE:-/work/base2/build}
SECS=${SECS:-20}
TMP=$(mktemp -d /tmp/ctxprof-bench-parser.XXXXXX)
PIDS=
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$TMP"' EXIT
[ "$(id -u)" = 0 ] || { echo "bench_parser: needs root, skipped"; exit 0; }
[ -x "$B/ctxprof" ] && [ -x "$B/tests/workloads/wl_deep" ] ||
	{ echo "bench_parser: make and make test-bins first"; exit 1; }
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ n += $1 } END { printf "%d", n }'; }
children() { cat /proc/"$1"/task/*/children 2>/dev/null; }
now_ms() { date +%s%3N; }

run() { # LABEL BUILD
	local label=$1 bd=$2 out=$TMP/$1 d w t0 t1 lat=- c0 c1 h h0=0 h1=0
	mkdir -p "$out"
	cp "$bd/tests/workloads/wl_deep" "$out/wl_$label" # its own module for each run
	"$out/wl_$label" $((SECS + 30)) 8 &
	w=$!
	t0=$(now_ms)
	"$bd/ctxprof" daemon --mode selectors --exe "$out/wl_$label" --chunk-period 1s \
		--directory "$out/d" --status-file "$out/st" >"$out/log" 2>&1 &
	d=$!
	PIDS="$PIDS $w $d"
	for _ in $(seq 300); do
		f=$(sed -n 's/.* current_file=\([^ ]*\).*/\1/p' "$out/st" 2>/dev/null)
		if [ -n "$f" ] && cp "$f" "$out/so-far.jfr" 2>/dev/null &&
			"$bd/ctxprof" report --format collapsed "$out/so-far.jfr" 2>/dev/null | grep -q spin; then
			lat=$(($(now_ms) - t0))
			break
		fi
		sleep 0.1
	done
	# its helpers: one per lane (util/parser_client.h), or the one of an older build
	h=$(children "$d" | tr ' ' '\n' | grep -vx "$w" | grep -v '^$')
	c0=$(cpu_ns "$d")
	for p in $h; do h0=$((h0 + $(cpu_ns "$p"))); done
	sleep "$SECS"
	c1=$(cpu_ns "$d")
	for p in $h; do h1=$((h1 + $(cpu_ns "$p"))); done
	printf '%-22s first named chunk %6s ms   daemon %6d ms CPU/min   parser helpers %5s ms CPU/min\n' \
		"$label" "$lat" $(((c1 - c0) * 60 / SECS / 1000000)) \
		"$([ -n "$h" ] && echo $(((h1 - h0) * 60 / SECS / 1000000)) || echo -)"
	kill "$d" "$w" 2>/dev/null
	wait "$d" "$w" 2>/dev/null
}

run helper "$B"
if [ -x "$BASE/ctxprof" ] && [ -x "$BASE/tests/workloads/wl_deep" ]; then
	run in-process "$BASE"
else
	echo "bench_parser: no $BASE build to compare with (BASE=DIR)"
fi
