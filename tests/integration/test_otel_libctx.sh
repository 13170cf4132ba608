#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own
# End to end: libctx's OWN OpenTelemetry writer (ctx_set_trace, ctx_register_key,
# ctx_set_attr; tests/workloads/otel_libctx_writer.c under wl_otel.c) read by ctxprof, with
# libctx as libctx.so (TLSDESC) and as libctx.a in a PIE (exported by libctx.dynlist). Over
# thousands of samples each: every sample under work_A carries trace A (32 hex), span A and
# the attributes of A by name, every one under work_B those of B; 0 wrong. libctx's process
# context takes service.name from OTEL_SERVICE_NAME, which names the process in folded output.
# The JFR, read back by `jfr print --json`, has the same contexts field by field and one
# ctxprof.ProcessContext event naming the service.
. "$(dirname "$0")/sampler_lib.sh"
. "$(dirname "$0")/otel_lib.sh"
export OTEL_SERVICE_NAME=checkout-svc

run_mode libctx_so - "$WL/wl_otel_ctx_so"
run_mode libctx_a - "$WL/wl_otel_ctx_a"

command -v jfr >/dev/null || need_oracle "the JDK's jfr (the folded checks passed)"
otel_jfr_check jfr "$WL/wl_otel_ctx_so"
jfr print --json --events ctxprof.ProcessContext "$TMP/jfr.jfr" >"$TMP/pc.json" ||
	fail "jfr print --json --events ctxprof.ProcessContext failed"
# libctx adds a random service.instance.id: look for the service.name line among the attributes
pc=$(jq --argjson pid "$WPID" '[.recording.events[].values | select(.pid == $pid and
	.serviceName == "checkout-svc" and (.resourceAttributes | split("\n") |
	index("service.name=checkout-svc") != null))] | length' "$TMP/pc.json")
echo "ctxprof.ProcessContext events naming checkout-svc: $pc"
[ "${pc:-0}" -ge 1 ] || fail "no ctxprof.ProcessContext for checkout-svc: $(head -c 600 "$TMP/pc.json")"
echo PASS
