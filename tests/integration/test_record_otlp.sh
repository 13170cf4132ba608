#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# OTLP profiles output (`-o FILE.otlp`): one ExportProfilesServiceRequest that protoc decodes
# against the UPSTREAM opentelemetry-proto files (../shared/tools/otel-proto, not the
# project's copy) and that keeps the dictionary's rules (zero values at index 0, indices in
# range, attribute keys unique per sample); its sample total is the recording's
# (--stats-json); every work_A/work_B sample carries its context as attributes (phase,
# span_id) as the pprof output does; one resource for the process (service.name,
# process.pid); the workload's mapping has its build id, its functions file and line; period,
# time and duration are set.
. "$(dirname "$0")/sampler_lib.sh"

. "$(dirname "$0")/otlp_lib.sh"

record_ok 60 -F 999 -o "$TMP/p.otlp" --stats-json "$TMP/stats.json" -- "$WL/wl_attrib" long 4 2
otlp_decode "$TMP/p.otlp" "$TMP/p.txt"
$CHECK check "$TMP/p.txt" || fail "the request breaks the dictionary's rules"
$CHECK samples "$TMP/p.txt" >"$TMP/samples"
# per sample: "service.name=..,process.pid=..,thread.name=..,[span_id=..,]labels | stack N"
read -r total work bad a <<<"$(python3 - "$TMP/samples" <<'PY'
import sys
total = work = bad = a = 0
for line in open(sys.argv[1]):
    attrs, rest = line.rstrip("\n").split(" | ")
    stack, n = rest.rsplit(" ", 1)
    n = int(n)
    kv = dict(x.split("=", 1) for x in attrs.split(","))
    total += n
    a += n if kv.get("phase") == "A" else 0
    fns = stack.split(";")
    for x, span in (("A", "000000000000000a"), ("B", "000000000000000b")):
        if "work_" + x in fns:
            work += n
            if kv.get("phase") != x or kv.get("span_id") != span:
                bad += n
print(total, work, bad, a)
PY
)"
stats=$(($(stat_json .received) - $(stat_json .ctx_missing.before_location)))
echo "otlp: $total samples (stats $stats), work $work (mismatched $bad), phase=A $a"
[ -n "$stats" ] && [ "$total" = "$stats" ] || fail "otlp total $total != recorded $stats"
[ "$work" -ge 300 ] || fail "only $work work samples"
[ "$bad" = 0 ] || fail "$bad work samples without their phase/span_id attributes"
[ "$a" -gt 0 ] || fail "no sample with phase=A"
# one resource, the workload's
[ "$(grep -c '^  resource {' "$TMP/p.txt")" = 1 ] || fail "not one resource"
grep -q 'service.name=wl_attrib,process.pid=[0-9]' "$TMP/samples" || fail "resource attributes"
grep -q '^      period: 1001001$' "$TMP/p.txt" || fail "no period"
grep -qE '^      time_unix_nano: [1-9]' "$TMP/p.txt" || fail "no time"
grep -qE '^      duration_nano: [1-9]' "$TMP/p.txt" || fail "no duration"
# the mapping of wl_attrib carries its build id; the workload's functions their file
$CHECK names "$TMP/p.txt" >"$TMP/names"
bid=$(readelf -n "$WL/wl_attrib" | awk '/Build ID/ { print $3 }')
grep -qE "^mapping .*/wl_attrib $bid$" "$TMP/names" || {
	grep '^mapping' "$TMP/names"
	fail "no mapping of wl_attrib with build id $bid"
}
for fn in main long_thread run_phases work_A work_B; do
	grep -qE "^function $fn tests/workloads/wl_attrib.c$" "$TMP/names" ||
		fail "function $fn (with its file) not in the profile"
done
grep -qE '^line work_A [0-9]+$' "$TMP/names" || fail "work_A has no line number"
echo PASS
