#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own
# ctxprof record -> JFR, read back by the JDK: a multi-chunk recording of the attribution
# workload passes `jfr summary`, `jfr print`, `jfr print --json` and RecordCheck
# (RecordingFile: context values match what the workload set, zero mismatches); a recording
# killed with SIGKILL leaves every finished chunk readable; `ctxprof report` reads both.
. "$(dirname "$0")/sampler_lib.sh"
JAVA_CP=$B/java
[ -f "$JAVA_CP/RecordCheck.class" ] || fail "no $JAVA_CP/RecordCheck.class (run make)"

jdk_reads() { # file: every JDK view of the file must work
	local f=$1 v
	for v in summary print "print --json"; do
		# shellcheck disable=SC2086
		jfr $v "$f" >"$TMP/jfr.out" 2>&1 || { tail -5 "$TMP/jfr.out"; fail "jfr $v $f failed"; }
		if grep -q -E "$JFR_ERROR_RE" "$TMP/jfr.out"; then
			grep -E -m3 "$JFR_ERROR_RE" "$TMP/jfr.out"
			fail "jfr $v $f reported an error"
		fi
	done
}
chunks() { jfr summary "$1" | sed -n 's/^ *Chunks: *\([0-9]*\).*/\1/p'; }

# 1. Multi-chunk recording, chosen by the .jfr suffix, chunk every 2 s; with the kernel's BPF
# run-time stats on, so that ctxprof.Statistics carries the BPF cost per sample.
sysctl_lock /proc/sys/kernel/bpf_stats_enabled
bpf_stats=$(cat /proc/sys/kernel/bpf_stats_enabled)
trap 'echo "$bpf_stats" >/proc/sys/kernel/bpf_stats_enabled; rm -rf "$TMP"' EXIT
echo 1 >/proc/sys/kernel/bpf_stats_enabled
record_ok 60 -F 999 --chunk-period 2s -o "$TMP/attrib.jfr" -- "$WL/wl_attrib" long 7 2
echo "$bpf_stats" >/proc/sys/kernel/bpf_stats_enabled
trap 'rm -rf "$TMP"' EXIT # put back: from now on another run may own the setting
sysctl_unlock
jdk_reads "$TMP/attrib.jfr"
n=$(chunks "$TMP/attrib.jfr")
echo "chunks: $n"
[ "${n:-0}" -ge 3 ] || fail "expected >= 3 chunks with --chunk-period 2s over 7 s, got ${n:-0}"
java -cp "$JAVA_CP" RecordCheck "$TMP/attrib.jfr" 300 || fail "RecordCheck failed"
# the context is visible in jfr print: the labels are a chain of {key, value, next}
jfr print --events jdk.ExecutionSample "$TMP/attrib.jfr" | grep -A1 'key = "phase"' |
	grep -q 'value = "A"' || fail "jfr print does not show the label phase = A"
# the other readers: async-profiler's converter (positional) reads every sample; Pyroscope's
# parser binds contextId/spanId by name, and the labels snapshot beside the file names each
# sample's labels (PyroCheck joins them as Pyroscope does)
total=$("$CTXPROF" report "$TMP/attrib.jfr" | awk '$1 == "jdk.ExecutionSample" { print $2 }')
ctxn=$(jfr print --json --events jdk.ExecutionSample "$TMP/attrib.jfr" | python3 -c 'import json,sys
ev=json.load(sys.stdin)["recording"]["events"]
print(sum(1 for e in ev if e["values"]["contextId"]), sum(1 for e in ev if e["values"]["spanId"]))')
T=$CTXPROF_TOOLS
if [ -f "$T/async-profiler-converter/jfr-converter.jar" ]; then
	for o in collapsed html pprof; do
		java -jar "$T/async-profiler-converter/jfr-converter.jar" -o $o "$TMP/attrib.jfr" "$TMP/ap.$o" \
			>"$TMP/ap.err" 2>&1 || { cat "$TMP/ap.err"; fail "jfr-converter -o $o failed"; }
		[ -s "$TMP/ap.$o" ] || fail "jfr-converter -o $o wrote nothing"
	done
	ap=$(awk '{ s += $NF } END { print s }' "$TMP/ap.collapsed")
	echo "async-profiler converter: $ap samples, ctxprof report: $total"
	[ "$ap" = "$total" ] || fail "converter counts $ap samples, report $total"
	"$T/pyroscope-jfr/pyrojfr" "$TMP/attrib.jfr" >"$TMP/pyro.out" || fail "pyrojfr failed"
	pc=$(sed -n 's/.*with contextId != 0 (Pyroscope labels): //p' "$TMP/pyro.out")
	ps=$(sed -n 's/.*with spanId != 0 on jdk.ExecutionSample (label profile_id): //p' "$TMP/pyro.out")
	echo "pyroscope: $pc samples with contextId, $ps with spanId (JDK: $ctxn)"
	[ "$pc $ps" = "$ctxn" ] || fail "Pyroscope sees $pc/$ps context/span samples, the JDK $ctxn"
	[ "${pc:-0}" -gt 100 ] || fail "Pyroscope sees only ${pc:-0} samples with context"
else
	oracle_missing "$T/async-profiler-converter (async-profiler converter, Pyroscope parser)"
fi
java -cp "$JAVA_CP" PyroCheck "$TMP/attrib.jfr" "$TMP/attrib.jfr.labels.pb" ||
	fail "the labels snapshot does not match the samples"
# ctxprof.Statistics: one per chunk, its sample counts add up to the samples in the file,
# the trace table is reported, and the BPF cost per sample is a plausible number
jfr print --json --events jdk.ExecutionSample,ctxprof.Statistics "$TMP/attrib.jfr" >"$TMP/st.json"
python3 - "$TMP/st.json" "$n" <<'PY' || fail "ctxprof.Statistics"
import json, re, sys
ev = json.load(open(sys.argv[1]))["recording"]["events"]
st = [e["values"] for e in ev if e["type"] == "ctxprof.Statistics"]
samples = sum(1 for e in ev if e["type"] == "jdk.ExecutionSample")
def ns(d):  # ISO-8601 duration as jfr prints it, e.g. PT0.000004769S
    m = re.fullmatch(r"PT(?:(\d+)M)?([\d.]+)S", d)
    return round((int(m.group(1) or 0) * 60 + float(m.group(2))) * 1e9)
bpf = [ns(v["bpfNsPerSample"]) for v in st]
print("statistics: chunks %d, samples %d (events %d), bpf ns/sample %s, table %s" % (
    len(st), sum(v["samples"] for v in st), samples, bpf,
    [(v["traceTableUsed"], v["traceTableCapacity"]) for v in st]))
assert len(st) == int(sys.argv[2]), "one ctxprof.Statistics per chunk"
assert sum(v["samples"] for v in st) == samples, "Statistics.samples do not add up"
# a chunk that ended before the first sample (setup under load can take longer than the
# 2 s period) has no stacks and no BPF cost: every chunk with samples must report both
full = [(v, b) for v, b in zip(st, bpf) if v["samples"] > 0]
assert len(full) >= int(sys.argv[2]) - 1, "more than one chunk without samples"
assert all(0 < v["traceTableUsed"] <= v["traceTableCapacity"] for v, _ in full)
# one well-behaved process never meets a store's bound
assert all(v["stacksOverShare"] == 0 and v["labelSetsRefused"] == 0 and v["threadsRefused"] == 0
           for v in st), "store bounds hit by one ordinary process"
assert all(100 <= b <= 1000000 for _, b in full), "bpfNsPerSample not measured: %s" % bpf
PY
"$CTXPROF" report "$TMP/attrib.jfr" >"$TMP/report.txt" || fail "ctxprof report failed"
grep -q 'phase:' "$TMP/report.txt" || fail "report has no per-label section"

# --max-stacks sizes the trace table (Statistics shows it); out of range is a usage error
record_ok 60 -q --max-stacks 300 -o "$TMP/ms.jfr" -- "$WL/wl_attrib" long 1 1
jfr print --events ctxprof.Statistics "$TMP/ms.jfr" | grep -q 'traceTableCapacity = 300' ||
	fail "--max-stacks 300 is not the trace table's capacity"
"$CTXPROF" record --max-stacks 100 -p $$ -d 1 -o "$TMP/no.jfr" 2>"$TMP/ms.err"
[ $? = 2 ] && grep -q 'max-stacks' "$TMP/ms.err" || fail "--max-stacks 100 is not a usage error"

# 2. SIGKILL mid-recording: every chunk finished before the kill stays readable.
"$CTXPROF" record -F 499 --chunk-period 1s -o "$TMP/killed.jfr" -- "$WL/wl_attrib" long 30 2 \
	>/dev/null 2>"$TMP/kill.err" &
rec=$!
kid=
# the workload, by pid (ctxprof's child): killed after ctxprof, never by its name, which
# another run's workload may share
# (its other child is the parser helper)
wait_for 10 "the workload started by record" eval 'kid=$(for p in $(pgrep -P $rec); do execed "$p" "$WL/wl_attrib" && echo "$p"; done); [ -n "$kid" ]'
wait_for 30 "2 finished chunks in the recording" chunks_over "$TMP/killed.jfr" 1
kill -KILL $rec
wait $rec 2>/dev/null
kill -KILL "$kid" 2>/dev/null
[ -s "$TMP/killed.jfr" ] || fail "nothing written before SIGKILL"
jdk_reads "$TMP/killed.jfr"
n=$(chunks "$TMP/killed.jfr")
echo "chunks after SIGKILL: $n"
[ "${n:-0}" -ge 2 ] || fail "expected >= 2 finished chunks, got ${n:-0}"
java -cp "$JAVA_CP" RecordCheck "$TMP/killed.jfr" 20 || fail "RecordCheck on the killed file"

# 3. Unwritable output: a clear error before sampling starts, non-zero exit.
if "$CTXPROF" record -d 1 -o /nonexistent-dir/x.jfr -p $$ 2>"$TMP/bad.err"; then
	fail "record to an unwritable path succeeded"
fi
grep -q 'cannot write' "$TMP/bad.err" || { cat "$TMP/bad.err"; fail "no clear error"; }
oracle_verdict
echo PASS
