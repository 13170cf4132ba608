#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel check
# ctxprof daemon, split = process, a process that publishes an OpenTelemetry process context
# (OTEP 4719) with service.name = checkout-svc: its file is named after the service
# (ctxprof-HOST-PID-checkout-svc-TIME.jfr.part), not the executable, while a process without
# one (wl_attrib) keeps its executable's name; the service's samples carry its trace.
. "$(dirname "$0")/daemon_lib.sh"
. "$(dirname "$0")/otel_lib.sh"

spawn "$WL/wl_otel" 0 2 >"$TMP/otel.out"
O=$SPAWNED
spawn "$WL/wl_attrib" long 0 1 >"$TMP/a.out"
A=$SPAWNED
wait_for 10 "wl_otel ready" grep -q ready "$TMP/otel.out"
start_daemon --mode selectors --cgroup "$CGSEL" --split process --chunk-period 1s
named() { ls "$OUT"/ctxprof-*-"$1"-"$2"-*.jfr.part >/dev/null 2>&1; }
wait_for 20 "a file ctxprof-*-$O-checkout-svc-*.jfr.part" named "$O" checkout-svc
wait_for 20 "a file ctxprof-*-$A-wl_attrib-*.jfr.part" named "$A" wl_attrib
ls "$OUT"
# its file may exist before its thread context is located: samples with it, then stop
wait_for 30 "context samples of the service $O" target_over "$O" 20 context_samples
stop_daemon
f=$(ls "$OUT"/ctxprof-*-"$O"-checkout-svc-*.jfr | head -1)
[ -n "$f" ] || fail "no finished file for the service"
jfr print --events jdk.ExecutionSample "$f" | grep -q "value = \"$TRACE_A\"" ||
	fail "the service's file has no sample with trace A"
echo PASS
