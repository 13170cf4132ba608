#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel check
# pprof output (`-o FILE.pb.gz`): Go's own pprof reads the file; its sample total is the
# recording's (--stats-json); every work_A/work_B sample carries its context as sample labels
# (phase, span_id), as the folded output attributes it (test_sampler_attrib.sh);
# -tagfocus phase=A keeps exactly the samples labelled phase=A; the workload's functions are
# named with file:line, its mapping has its build id; period and duration are set.
. "$(dirname "$0")/sampler_lib.sh"

command -v go >/dev/null || need_oracle "go tool pprof (golang-go, make deps-test)"
export HOME=$TMP GOCACHE=$TMP/gocache

record_ok 60 -F 999 -o "$TMP/p.pb.gz" -- "$WL/wl_attrib" long 4 2
gzip -t "$TMP/p.pb.gz" || fail "not gzip"
go tool pprof -raw "$TMP/p.pb.gz" >"$TMP/raw" 2>"$TMP/raw.err" || {
	cat "$TMP/raw.err"
	fail "go tool pprof cannot read the file"
}
go tool pprof -raw -tagfocus phase=A "$TMP/p.pb.gz" >"$TMP/rawA" 2>"$TMP/rawA.err" ||
	fail "go tool pprof -tagfocus failed"

# -raw: "COUNT NS: LOC..." then label lines per sample, then "Locations" with
# "ID: 0xADDR M=N FUNCTION FILE:LINE ...". Prints: total, labelled phase=A, work samples,
# work samples whose labels do not match their function, sum of NS / COUNT.
summarize() {
	python3 - "$1" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
samples, locs, cur, part = [], {}, None, "head"
for l in lines:
    if l.startswith("Samples:"): part = "samples"; continue
    if l.startswith("Locations"): part = "locs"; continue
    if l.startswith("Mappings"): part = "maps"; continue
    if part == "samples":
        m = re.match(r"\s+(\d+)\s+(\d+): ([\d ]+)$", l)
        if m:
            cur = {"n": int(m.group(1)), "ns": int(m.group(2)), "locs": m.group(3).split(), "labels": {}}
            samples.append(cur)
        elif cur is not None:
            for k, v in re.findall(r"(\S+):\[([^\]]*)\]", l):
                cur["labels"][k] = v
    elif part == "locs":
        m = re.match(r"\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+)", l)
        if m: locs[m.group(1)] = m.group(2)
total = sum(s["n"] for s in samples)
a = sum(s["n"] for s in samples if s["labels"].get("phase") == "A")
work = bad = 0
for s in samples:
    fns = [locs.get(i, "") for i in s["locs"]]
    for x, span in (("A", "000000000000000a"), ("B", "000000000000000b")):
        if "work_" + x in fns:
            work += s["n"]
            if s["labels"].get("phase") != x or s["labels"].get("span_id") != span:
                bad += s["n"]
ns = sum(s["ns"] for s in samples)
print(total, a, work, bad, ns // total if total else 0)
PY
}
read -r total a work bad per <<<"$(summarize "$TMP/raw")"
read -r ftotal fa _ <<<"$(summarize "$TMP/rawA")"
# what reached the output: received, less the samples held back before a TLS location
stats=$(($(stat_json .received) - $(stat_json .ctx_missing.before_location)))
echo "pprof: $total samples (stats $stats), phase=A $a, -tagfocus phase=A $ftotal ($fa labelled A)," \
	"work $work (mismatched $bad), ns/sample $per"
[ -n "$stats" ] && [ "$total" = "$stats" ] || fail "pprof total $total != recorded $stats"
[ "$work" -ge 300 ] || fail "only $work work samples"
[ "$bad" = 0 ] || fail "$bad work samples without their phase/span labels"
[ "$a" -gt 0 ] && [ "$ftotal" = "$a" ] && [ "$fa" = "$a" ] ||
	fail "-tagfocus phase=A kept $ftotal samples ($fa labelled A), $a are labelled A"
[ "$per" = $((1000000000 / 999)) ] || fail "cpu/nanoseconds per sample $per, want the period"
grep -q '^Period: 1001001$' "$TMP/raw" || fail "no period"
grep -qE '^Duration: [1-9]' "$TMP/raw" || fail "no duration"
for fn in main long_thread run_phases work_A work_B; do
	grep -qE "M=[0-9]+ $fn tests/workloads/wl_attrib.c:[0-9]+" "$TMP/raw" ||
		fail "function $fn (with file:line) not in the profile"
done
bid=$(readelf -n "$WL/wl_attrib" | awk '/Build ID/ { print $3 }')
grep -qE "/wl_attrib $bid " "$TMP/raw" || {
	sed -n '/^Mappings/,$p' "$TMP/raw"
	fail "no mapping of wl_attrib with build id $bid"
}
echo PASS
