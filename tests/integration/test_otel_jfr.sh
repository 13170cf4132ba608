#!/bin/bash
# The OpenTelemetry context in JFR, read back by the JDK's parser (`jfr print --json`) field
# by field: every jdk.ExecutionSample under work_A has the context chain trace_id = trace A
# (32 hex digits), span_id = span A, http.route=/a (the last duplicate), tier=gold,
# user=alice, region=eu and nothing else, and spanId = span A as a number; the same for B;
# 0 mismatches; one ctxprof.ProcessContext event per chunk names the process's service and
# its resource attributes. Writer: tests/workloads/otel_spec_writer.c in a TLSDESC shared library.
# Pyroscope's parser (../shared/tools, when present) sees the samples with context too.
. "$(dirname "$0")/sampler_lib.sh"
. "$(dirname "$0")/otel_lib.sh"
command -v jfr >/dev/null || skip "no jfr (JDK) installed"

OTEL_OUT=jfr otel_record otel 4 "$WL/wl_otel_desc"
jfr print --json --events jdk.ExecutionSample "$TMP/otel.jfr" >"$TMP/otel.json" ||
	fail "jfr print --json failed"
python3 - "$TMP/otel.json" "$TRACE_A" "$SPAN_A" "$TRACE_B" "$SPAN_B" >"$TMP/check.out" <<'PY' ||
import json, sys
f, ta, sa, tb, sb = sys.argv[1:]
want = {
    "work_A": {"trace_id": ta, "span_id": sa, "http.route": "/a", "tier": "gold",
               "user": "alice", "region": "eu"},
    "work_B": {"trace_id": tb, "span_id": sb, "http.route": "/b", "tier": "free",
               "user": "bob", "region": "us"},
}
span = {"work_A": int(sa, 16), "work_B": int(sb, 16)}
total = bad = 0
for e in json.load(open(f))["recording"]["events"]:
    v = e["values"]
    names = [fr["method"]["name"] for fr in (v.get("stackTrace") or {}).get("frames", [])]
    phase = next((n for n in names if n in want), None)
    if not phase:
        continue
    total += 1
    ctx, node = {}, v.get("context")
    while node:
        ctx[node["key"]] = node["value"]
        node = node.get("next")
    if ctx != want[phase] or (v["spanId"] % 2**64) != span[phase] or v["localRootSpanId"] != 0:
        bad += 1
        if bad <= 3:
            print("mismatch:", phase, ctx, v["spanId"], file=sys.stderr)
print(total, bad)
PY
	fail "checking the JSON failed"
read -r total bad <"$TMP/check.out"
echo "jfr print --json: $total samples under work_A/work_B, $bad not exactly their context"
[ "$total" -ge 1000 ] || fail "too few samples ($total)"
[ "$bad" = 0 ] || fail "$bad samples with a wrong or incomplete context"
# the per-process event: the process's OpenTelemetry resource, once per chunk
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
T=${CTXPROF_TOOLS:-../shared/tools}
if [ -x "$T/pyroscope-jfr/pyrojfr" ]; then
	"$T/pyroscope-jfr/pyrojfr" "$TMP/otel.jfr" >"$TMP/pyro.out" || fail "pyrojfr failed"
	pc=$(sed -n 's/.*with contextId != 0 (Pyroscope labels): //p' "$TMP/pyro.out")
	echo "pyroscope: ${pc:-0} samples with contextId"
	[ "${pc:-0}" -ge "$total" ] || fail "Pyroscope sees context in ${pc:-0} samples, the JDK in $total"
fi
echo PASS
