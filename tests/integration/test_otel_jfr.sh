#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own
# The OpenTelemetry context in JFR, read back by the JDK's parser (`jfr print --json`) field
# by field: every jdk.ExecutionSample under work_A has the context chain trace_id = trace A
# (32 hex digits), span_id = span A, http.route=/a (the last duplicate), tier=gold,
# user=alice, region=eu and nothing else, and spanId = span A as a number; the same for B;
# 0 mismatches; one ctxprof.ProcessContext event per chunk names the process's service and
# its resource attributes. Writer: tests/workloads/otel_spec_writer.c in a TLSDESC shared library.
# Pyroscope's parser ($CTXPROF_TOOLS, default ../shared/tools; missing: SKIPPED, in CI a failure) sees the samples with context too.
. "$(dirname "$0")/sampler_lib.sh"
. "$(dirname "$0")/otel_lib.sh"
command -v jfr >/dev/null || need_oracle "the JDK's jfr"

otel_jfr_check otel "$WL/wl_otel_desc"
jfr print --json --events ctxprof.ProcessContext "$TMP/otel.jfr" >"$TMP/pc.json" ||
	fail "jfr print --json --events ctxprof.ProcessContext failed"
pc=$(python3 -c 'import json,sys
ev=json.load(open(sys.argv[1]))["recording"]["events"]
ok=[e for e in ev if e["values"]["pid"] == int(sys.argv[2]) and e["values"]["serviceName"] == "checkout-svc"
    and e["values"]["resourceAttributes"] == "service.name=checkout-svc\nservice.version=1.2.3\n"]
print(len(ev), len(ok))' "$TMP/pc.json" "$WPID")
echo "ctxprof.ProcessContext events (all, exact): $pc"
read -r pc_all pc_ok <<<"$pc"
[ "$pc_ok" -ge 1 ] && [ "$pc_ok" = "$pc_all" ] || fail "ctxprof.ProcessContext missing or wrong: $(head -c 600 "$TMP/pc.json")"
"$CTXPROF" report "$TMP/otel.jfr" >/dev/null || fail "ctxprof report cannot read the file"
T=$CTXPROF_TOOLS
if [ -x "$T/pyroscope-jfr/pyrojfr" ]; then
	"$T/pyroscope-jfr/pyrojfr" "$TMP/otel.jfr" >"$TMP/pyro.out" || fail "pyrojfr failed"
	pc=$(sed -n 's/.*with contextId != 0 (Pyroscope labels): //p' "$TMP/pyro.out")
	echo "pyroscope: ${pc:-0} samples with contextId"
	[ "${pc:-0}" -ge "$OTEL_JFR_TOTAL" ] || fail "Pyroscope sees context in ${pc:-0} samples, the JDK in $OTEL_JFR_TOTAL"
else
	oracle_missing "$T/pyroscope-jfr/pyrojfr (Pyroscope's parser)"
fi
oracle_verdict
echo PASS
