#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair long
# test_hostile_label_flood.sh — issue 19 item 4: the per-chunk label store is bounded. An
# unprivileged user runs `wl_flood labels`: a context-publishing process that sets a new set
# of ten 250-byte label values on every request, so that every one of its samples carries a
# label set never seen before. Asserts: the label store's bound is hit and counted for the
# attacker (labels_refused on its status line, labelSetsRefused in ctxprof.Statistics) and
# not for the control, whose samples keep their labels; the control keeps its rate with
# context, the status stays fresh, and the daemon's RSS stays under the documented ceiling.
#
# Only sampled label sets are stored, one per sample: on the loaded 2-vCPU test machine the
# attacker gets a fraction of a CPU, so the daemon samples at 999 Hz (a larger host's sample
# rate) with --chunk-period 20s and the attacker runs 16 threads: ~2.6 KB of new label sets
# per sample passes the store's free half (4 MiB) within a chunk.
. "$(dirname "$0")/hostile_lib.sh"
FLOOD=${FLOOD:-$B/tests/workloads/wl_flood}
[ -x "$FLOOD" ] || fail "no $FLOOD (run make)"
attacker_user
start_control
start_default_daemon --frequency 999 --chunk-period 20s
rate_baseline
spawn_attacker "$FLOOD" labels 0 16
ATTACKER=$SPAWNED
wait_for 60 "the attacker as a target" is_target "$ATTACKER"
assert_rate_kept
assert_fresh

wait_for 90 "the label store's bound counted for the attacker" target_over "$ATTACKER" 0 labels_refused
grep "^target pid=$ATTACKER " "$ST"
[ "$(target_count "$CONTROL" labels_refused)" = 0 ] || fail "label sets refused to the control target"

# The chunk in which that happened, written (the status may not count the chunk before it
# yet): the control's samples there carry their labels.
c=$(dstat chunks_written)
wait_for 90 "the chunk written" eval '[ "$(dstat chunks_written)" -ge $((c + 2)) ]'
recording_json "$TMP/flood.json"
ls "/proc/$CONTROL/task" >"$TMP/control.tids"
python3 - "$TMP/flood.json" "$TMP/control.tids" <<'PY' || fail "the control target lost its context to the flood"
import json, sys
ev = json.load(open(sys.argv[1]))["recording"]["events"]
control = {int(t) for t in open(sys.argv[2]).read().split()}
s = [e["values"] for e in ev if e["type"] == "jdk.ExecutionSample"
     and e["values"]["sampledThread"]["osThreadId"] in control]
ctx = sum(1 for v in s if v["contextId"])
st = [e["values"] for e in ev if e["type"] == "ctxprof.Statistics"]
print("control: %d samples, %d with labels" % (len(s), ctx))
print("labelSetsRefused per chunk:", [v.get("labelSetsRefused") for v in st])
assert s, "no control samples"
# a sample between two requests has no labels (a few %): the flood must not add to them
assert ctx * 100 >= 95 * len(s), "control samples without their labels: %d of %d" % (len(s) - ctx, len(s))
assert any(v.get("labelSetsRefused", 0) > 0 for v in st), "no chunk counts refused label sets"
PY
assert_rss_bounded
assert_fresh
echo PASS
