#!/bin/bash
# SPDX-License-Identifier: MIT
# bench_otel_jfr_size.sh — JFR bytes per sample with the OpenTelemetry context, printed (never
# asserted): wl_otel through libctx's own writer (wl_otel_ctx_so, 2 threads, 999 Hz, one
# recording of SECS) with no context (WL_OTEL_OFF), with two fixed traces (A/B, 4 attributes)
# and with a new trace_id/span_id per request (WL_OTEL_UNIQUE: one request = one 3 ms phase,
# ~3 samples each), i.e. what per-request trace_id/span_id labels cost in the file.
# B=build dir (default build), SECS (default 6). Needs root.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
SECS=${SECS:-6}
CTXPROF=$B/ctxprof
WL=$B/tests/workloads/wl_otel_ctx_so
[ "$(id -u)" = 0 ] || { echo "bench_otel_jfr_size: needs root, skipped"; exit 0; }
[ -x "$CTXPROF" ] && [ -x "$WL" ] || { echo "bench_otel_jfr_size: build first"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "# JFR bytes per sample, wl_otel_ctx_so x 2 threads, 999 Hz, ${SECS} s, one file"
printf '%-8s %8s %10s %13s\n' context samples bytes bytes/sample
for mode in none fixed unique; do
	unset WL_OTEL_OFF WL_OTEL_UNIQUE
	[ $mode = none ] && export WL_OTEL_OFF=1
	[ $mode = unique ] && export WL_OTEL_UNIQUE=1
	OTEL_SERVICE_NAME=bench "$WL" $((SECS + 4)) 2 >"$T/wl" &
	wl=$!
	until grep -qs ready "$T/wl"; do sleep 0.1; done
	"$CTXPROF" record -q -F 999 -p $wl -d "${SECS}s" --stats-json "$T/s.json" -o "$T/$mode.jfr"
	kill $wl 2>/dev/null
	wait $wl 2>/dev/null
	n=$(jq -r '.samples' "$T/s.json")
	sz=$(stat -c %s "$T/$mode.jfr")
	printf '%-8s %8s %10s %13s\n' $mode "$n" "$sz" "$(awk -v s="$sz" -v n="$n" 'BEGIN { printf "%.1f", n ? s / n : 0 }')"
done
