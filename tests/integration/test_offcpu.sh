#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own
# --event off-cpu / wall against wl_offcpu, whose threads time their own blocking calls
# (sleep, contended mutex, pipe read) under known spans and labels: the off-CPU time per
# span is within 10% of what the workload measured; the time under each blocking function
# carries its label (>= 99%) and the label's time reaches its function (>= 99%); a process
# outside the targets never appears; intervals under --offcpu-min are not reported; the
# JFR recording reads back in `jfr print --json` with the durations, the blocking function
# and CPU samples of the same threads (wall), and `ctxprof report` splits the time.
. "$(dirname "$0")/sampler_lib.sh"
OTHER=
trap '[ -n "$OTHER" ] && kill "$OTHER" 2>/dev/null; rm -rf "$TMP"' EXIT

# a process that blocks the same way but is not a target
"$WL/wl_offcpu" "$TMP/other.txt" 8 &
OTHER=$!

# 1. off-cpu, collapsed with span pseudo-frames: values are microseconds
record_ok 60 --event off-cpu --span-frames -o "$TMP/off.folded" -- "$WL/wl_offcpu" "$TMP/wl.txt" 3
cat "$TMP/wl.txt"
[ -s "$TMP/off.folded" ] || fail "no off-CPU output"
grep -q -- "-$OTHER;" "$TMP/off.folded" && fail "process $OTHER (not a target) appears in the output"
intervals=$(stat_json .offcpu.intervals)
short=$(stat_json .offcpu.short)
echo "off-CPU intervals $intervals, shorter than 1 ms (dropped in the kernel) $short"
[ "${intervals:-0}" -gt 100 ] || fail "only ${intervals:-0} off-CPU intervals"
[ "${short:-0}" -gt 100 ] || fail "the 100 us sleeps were not dropped as short (${short:-0})"
python3 - "$TMP/wl.txt" "$TMP/off.folded" <<'PY' || fail "off-CPU time per span / label / function"
import sys
measured = {}
for line in open(sys.argv[1]):
    f = line.split()
    kv = dict(x.split("=", 1) for x in f[2:])
    measured[kv["op"]] = (int(kv["span"], 16), int(kv["blocked_ns"]) / 1000.0)
def has(fr, f):  # a frame named f (a clone like f.constprop.0 included)
    return any(x == f or x.startswith(f + ".") for x in fr)
lines = []
for line in open(sys.argv[2]):
    stack, v = line.rstrip("\n").rsplit(" ", 1)
    lines.append((stack.split(";"), int(v)))
# the kernel function each kind blocks in; user frames reach the workload's one_round (the
# callers of libc's calls are checked in test_offcpu_stacks.sh)
blocker = {"sleep": "do_nanosleep_[k]", "mutex": "futex_wait_[k]", "pipe": "anon_pipe_read_[k]"}
# the workload's function of each measured call (wl-mutex also naps in one_round itself,
# under op=mutex-nap)
caller = {"sleep": "do_sleep", "mutex": "do_lock", "pipe": "do_read"}
bad = 0
for op, kf in blocker.items():
    span, want = measured[op]
    got = sum(v for fr, v in lines if "span=%016x" % span in fr)
    lab = sum(v for fr, v in lines if "op=" + op in fr)
    lab_stack = sum(v for fr, v in lines if "op=" + op in fr and kf in fr and has(fr, "one_round"))
    thr = sum(v for fr, v in lines if fr[1] == "wl-" + op and has(fr, caller[op]))
    thr_lab = sum(v for fr, v in lines if fr[1] == "wl-" + op and has(fr, caller[op])
                  and "op=" + op in fr)
    print("%-6s span %x: measured %.0f us, off-CPU %d us (%+.1f%%); op=%s: %.2f%% in %s under "
          "one_round; thread wl-%s in %s: %.2f%% with op=%s" % (op, span, want, got,
          100.0 * (got - want) / want, op, 100.0 * lab_stack / max(lab, 1), kf, op,
          caller[op], 100.0 * thr_lab / max(thr, 1), op))
    if want < 1e6 or abs(got - want) > 0.10 * want:
        print("FAIL: span %x off-CPU %d us, the workload measured %.0f us" % (span, got, want)); bad = 1
    if lab_stack < 0.99 * lab or thr_lab < 0.99 * thr or not thr:
        print("FAIL: stack/label mismatch for op=%s" % op); bad = 1
sys.exit(bad)
PY

# 2. wall clock into JFR, intervals under 2 ms dropped: CPU samples and off-CPU intervals of
# the same threads in one recording
record_ok 60 --event wall --offcpu-min 2ms -o "$TMP/wall.jfr" -- "$WL/wl_offcpu" "$TMP/wl2.txt" 3
jfr print --json --events ctxprof.OffCPU,jdk.ExecutionSample "$TMP/wall.jfr" >"$TMP/wall.json" ||
	fail "jfr print --json failed"
python3 - "$TMP/wall.json" "$TMP/wl2.txt" <<'PY' || fail "JFR off-CPU events"
import json, re, sys
ev = json.load(open(sys.argv[1]))["recording"]["events"]
def ns(d):  # ISO-8601 duration as jfr prints it, e.g. PT0.02S
    m = re.fullmatch(r"PT(?:(\d+)M)?([\d.]+)S", d)
    return (int(m.group(1) or 0) * 60 + float(m.group(2))) * 1e9
off = [e["values"] for e in ev if e["type"] == "ctxprof.OffCPU"]
cpu = [e["values"] for e in ev if e["type"] == "jdk.ExecutionSample"]
measured = {}
for line in open(sys.argv[2]):
    f = line.split()
    kv = dict(x.split("=", 1) for x in f[2:])
    measured[kv["op"]] = (int(kv["span"], 16), int(kv["blocked_ns"]))
def labels(v):
    out, c = {}, v.get("context")
    while c:
        out[c["key"]] = c["value"]; c = c.get("next")
    return out
bad = 0
short = [v for v in off if ns(v["duration"]) < 2e6]
print("%d off-CPU intervals, %d CPU samples, %d under 2 ms" % (len(off), len(cpu), len(short)))
if len(off) < 100 or short:
    bad = 1
burn = sum(1 for v in cpu if labels(v).get("op") == "burn")
if burn < 50:
    print("FAIL: only %d CPU samples of op=burn" % burn); bad = 1
for op, blocker in (("sleep", "do_nanosleep"), ("pipe", "pipe_read")):
    span, want = measured[op]
    mine = [v for v in off if v["spanId"] == span]
    got = sum(ns(v["duration"]) for v in mine)
    bl = sum(ns(v["duration"]) for v in mine if blocker in (v["blockedIn"] or ""))
    print("%s: measured %.0f ms, JFR %.0f ms, %.1f%% blocked in *%s*" % (op, want / 1e6, got / 1e6,
          100.0 * bl / max(got, 1), blocker))
    if abs(got - want) > 0.10 * want or bl < 0.99 * got:
        bad = 1
    if not all(labels(v).get("op") == op for v in mine):
        print("FAIL: an interval of span %x without op=%s" % (span, op)); bad = 1
sys.exit(bad)
PY
# the positional and by-name third-party readers skip ctxprof.OffCPU and keep every CPU sample
T=$CTXPROF_TOOLS
if [ -f "$T/async-profiler-converter/jfr-converter.jar" ]; then
	java -jar "$T/async-profiler-converter/jfr-converter.jar" -o collapsed "$TMP/wall.jfr" \
		"$TMP/ap.collapsed" >"$TMP/ap.err" 2>&1 || { cat "$TMP/ap.err"; fail "jfr-converter failed"; }
	ap=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/ap.collapsed")
	js=$(jq '[.recording.events[] | select(.type == "jdk.ExecutionSample")] | length' "$TMP/wall.json")
	echo "async-profiler converter: $ap CPU samples, jfr print: $js"
	[ "$ap" = "$js" ] || fail "the converter reads $ap samples of $js"
	"$T/pyroscope-jfr/pyrojfr" "$TMP/wall.jfr" >"$TMP/pyro.out" 2>&1 ||
		{ tail -5 "$TMP/pyro.out"; fail "pyrojfr cannot read the wall-clock recording"; }
else
	oracle_missing "$T/async-profiler-converter (async-profiler converter, Pyroscope parser)"
fi
"$CTXPROF" report --top 40 "$TMP/wall.jfr" >"$TMP/report.txt" || fail "ctxprof report failed"
grep -A4 '^  op=sleep$' "$TMP/report.txt" | grep -q 'off-CPU in do_nanosleep' ||
	{ cat "$TMP/report.txt"; fail "report: no off-CPU time in do_nanosleep for op=sleep"; }
grep -A2 '^  op=burn$' "$TMP/report.txt" | grep -q 'on-CPU ([1-9]' ||
	{ cat "$TMP/report.txt"; fail "report: no on-CPU time for op=burn"; }
oracle_verdict
echo "PASS"
