#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# `ctxprof report --format collapsed|pprof|otlp|html -o OUT FILE.jfr` converts what the daemon
# and `record -o FILE.jfr` write, with the sinks `record` writes directly. On one recording of
# wl_attrib (labels phase=A/B, spans): protoc decodes the OTLP output against the UPSTREAM
# opentelemetry-proto files and it keeps the dictionary's rules; its sample totals per stack
# equal the collapsed conversion's and those of async-profiler's converter
# (`jfr-converter.jar -o otlp`) on the same file; its per-(phase, span, stack) totals equal
# the collapsed conversion's, and every work_A/work_B sample carries its phase and span;
# go tool pprof reads the pprof conversion with the same total and its labels; the HTML
# conversion is the flame graph page.
. "$(dirname "$0")/sampler_lib.sh"

. "$(dirname "$0")/otlp_lib.sh"
CONV=$T/async-profiler-converter/jfr-converter.jar
[ -f "$CONV" ] || skip "no async-profiler converter in $T"
report() { "$CTXPROF" report "$@" 2>"$TMP/report.err" || { cat "$TMP/report.err"; fail "ctxprof report $*"; }; }

record_ok 60 -F 499 -o "$TMP/r.jfr" -- "$WL/wl_attrib" long 3 2
report --format collapsed -o "$TMP/c.folded" "$TMP/r.jfr"
report --format otlp -o "$TMP/o.otlp" "$TMP/r.jfr"
report --format pprof -o "$TMP/p.pb.gz" "$TMP/r.jfr"
report --format html -o "$TMP/h.html" "$TMP/r.jfr"
CONV=$(realpath "$CONV")
(cd "$TMP" && timeout 120 java -jar "$CONV" -o otlp r.jfr conv.otlp) >"$TMP/conv.log" 2>&1 ||
	{ cat "$TMP/conv.log"; fail "async-profiler's converter failed"; }
otlp_decode "$TMP/o.otlp" "$TMP/o.txt"
otlp_decode "$TMP/conv.otlp" "$TMP/conv.txt"
$CHECK check "$TMP/o.txt" || fail "our OTLP breaks the dictionary's rules"

# sample totals per stack (function names root first): ours, the converter's, the collapsed
# conversion's (labels and the PROC;THREAD prefix dropped, kernel suffixes removed)
$CHECK stacks "$TMP/o.txt" >"$TMP/s.ours"
$CHECK stacks "$TMP/conv.txt" >"$TMP/s.conv"
python3 - "$TMP/c.folded" >"$TMP/s.folded" <<'PY'
import sys
tot = {}
for line in open(sys.argv[1]):
    frames, n = line.rstrip("\n").rsplit(" ", 1)
    parts = frames.split(";")[2:]
    parts = [p[:-4] if p.endswith("_[k]") else p for p in parts if "=" not in p]
    k = ";".join(parts)
    tot[k] = tot.get(k, 0) + int(n)
for k in sorted(tot):
    print("%s %d" % (k, tot[k]))
PY
n_stacks=$(wc -l <"$TMP/s.ours")
total=$(awk '{ n += $NF } END { print n + 0 }' "$TMP/s.ours")
echo "otlp: $total samples in $n_stacks distinct stacks"
[ "$total" -ge 100 ] || fail "only $total samples"
# async-profiler's converter does not render JFR's `truncated` flag; ours marks it at the root
# (`[truncated]`, docs/otlp.md): compare without the marker, totals summed again
python3 - "$TMP/s.ours" >"$TMP/s.ours_nomark" <<'PY'
import sys
tot = {}
for line in open(sys.argv[1]):
    k, n = line.rstrip("\n").rsplit(" ", 1)
    k = k[len("[truncated];"):] if k.startswith("[truncated];") else k
    tot[k] = tot.get(k, 0) + int(n)
for k in sorted(tot):
    print("%s %d" % (k, tot[k]))
PY
diff "$TMP/s.conv" "$TMP/s.ours_nomark" >"$TMP/d1" || { head -20 "$TMP/d1"; fail "totals per stack differ from async-profiler's converter"; }
diff "$TMP/s.folded" "$TMP/s.ours" >"$TMP/d2" || { head -20 "$TMP/d2"; fail "totals per stack differ from the collapsed conversion"; }
echo "totals per stack: equal to the converter's and the collapsed conversion's ($n_stacks stacks)"

# labels and spans: per (phase, stack) as the collapsed conversion; work samples carry both
$CHECK samples "$TMP/o.txt" >"$TMP/samples"
python3 - "$TMP/samples" "$TMP/c.folded" <<'PY' || fail "labels or spans differ"
import sys
ours, folded = {}, {}
work = bad = 0
for line in open(sys.argv[1]):
    attrs, rest = line.rstrip("\n").split(" | ")
    stack, n = rest.rsplit(" ", 1)
    kv = dict(x.split("=", 1) for x in attrs.split(","))
    k = (kv.get("phase", ""), stack)
    ours[k] = ours.get(k, 0) + int(n)
    fns = stack.split(";")
    for x, span in (("A", "000000000000000a"), ("B", "000000000000000b")):
        if "work_" + x in fns:
            work += int(n)
            bad += int(n) if kv.get("phase") != x or kv.get("span_id") != span else 0
for line in open(sys.argv[2]):
    frames, n = line.rstrip("\n").rsplit(" ", 1)
    parts = frames.split(";")[2:]
    phase = [p[6:] for p in parts if p.startswith("phase=")]
    parts = [p[:-4] if p.endswith("_[k]") else p for p in parts if "=" not in p]
    k = (phase[0] if phase else "", ";".join(parts))
    folded[k] = folded.get(k, 0) + int(n)
print("work samples %d, without their phase/span %d; per (phase, stack): %s" %
      (work, bad, "equal" if ours == folded else "DIFFERENT"))
sys.exit(0 if work and not bad and ours == folded else 1)
PY
grep -q '^      period: 2004008$' "$TMP/o.txt" || fail "the period is not the file's (499 Hz)"

# pprof: go tool pprof reads it, same total, phase labels
if command -v go >/dev/null; then
	export HOME=$TMP GOCACHE=$TMP/gocache
	go tool pprof -raw "$TMP/p.pb.gz" >"$TMP/raw" 2>"$TMP/raw.err" || { cat "$TMP/raw.err"; fail "go tool pprof cannot read the pprof conversion"; }
	ptotal=$(awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 } s && /^ +[0-9]+ +[0-9]+: / { n += $1 } END { print n + 0 }' "$TMP/raw")
	[ "$ptotal" = "$total" ] || fail "pprof total $ptotal, otlp $total"
	grep -q 'phase:\[A\]' "$TMP/raw" || fail "no phase label in the pprof conversion"
	echo "pprof: $ptotal samples, labels present"
else
	echo "note: no go: the pprof conversion is not read"
fi
grep -q '<html' "$TMP/h.html" && grep -q 'work_A' "$TMP/h.html" || fail "the HTML conversion is not the flame graph page"
# a bad format is refused
"$CTXPROF" report --format nope "$TMP/r.jfr" >/dev/null 2>&1 && fail "--format nope accepted"
echo PASS
