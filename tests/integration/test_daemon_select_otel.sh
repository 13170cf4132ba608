#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# ctxprof daemon, mode context, with OpenTelemetry writers only (no libctx, no Custom Labels):
# a process that publishes the OTEP 4947 thread context (wl_otel: otel_thread_ctx_v1 in the
# executable) and one that publishes the OTEP 4719 process context alone (wl_otel_pctxonly)
# are both selected, a busy shell is not, and the process-context-only one is named by its
# service.name in the recording (its samples' process is checkout-svc).
. "$(dirname "$0")/daemon_lib.sh"

start_daemon --mode context --chunk-period 1s --rotate-period 1h
spawn "$WL/wl_otel" 0 1 >"$TMP/thread.out"
T=$SPAWNED
WL_OTEL_OFF=1 spawn "$WL/wl_otel_pctxonly" 0 1 >"$TMP/alone.out"
P=$SPAWNED
bash -c 'while :; do :; done' &
SP=$!
KIDS="$KIDS $SP"
wait_for 30 "wl_otel $T (thread context) a target with > 50 samples" target_over $T 50
wait_for 30 "wl_otel_pctxonly $P (process context alone) a target with > 50 samples" target_over $P 50
grep -q "^target pid=$SP " "$ST" && fail "busy shell $SP selected in mode context"
stop_daemon
F=$(ls "$OUT"/*.jfr | head -1)
jfr_ok "$F"
jfr print --json --events ctxprof.ProcessContext "$F" >"$TMP/pc.json" || fail "jfr print failed"
n=$(python3 -c 'import json,sys
ev=json.load(open(sys.argv[1]))["recording"]["events"]
print(sum(1 for e in ev if e["values"]["pid"] == int(sys.argv[2]) and e["values"]["serviceName"] == "checkout-svc"))' "$TMP/pc.json" "$P")
echo "mode context: wl_otel $T and wl_otel_pctxonly $P selected, busy shell not;" \
	"$n ProcessContext events name $P checkout-svc"
[ "$n" -gt 0 ] || fail "the process-context-only process is not named checkout-svc"
echo PASS
