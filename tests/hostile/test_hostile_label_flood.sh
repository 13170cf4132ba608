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
rate_window_open # the control's rate during the flood
wait_for 60 "the attacker as a target" is_target "$ATTACKER"
assert_rate_kept
assert_fresh

wait_for 90 "the label store's bound counted for the attacker" target_over "$ATTACKER" 0 labels_refused
grep "^target pid=$ATTACKER " "$ST"
[ "$(target_count "$CONTROL" labels_refused)" = 0 ] || fail "label sets refused to the control target"

# The chunk in which that happened, written: the next chunk written, or (the status may not
# count the chunk before it yet) the one after. The control's samples there carry their labels.
refusal_written() { # the recording so far has a chunk that counts refused label sets
	recording_so_far "$TMP/flood.jfr"
	java -cp "$B/java" FloodCheck "$TMP/flood.jfr" "$TMP/control" --stat labelSetsRefused >"$TMP/check" ||
		fail "the JDK cannot read the recording"
	grep '^labelSetsRefused per chunk: ' "$TMP/check" | grep -Eq '[1-9][0-9]*[],]'
}
ls "/proc/$CONTROL/task" >"$TMP/control"
c=$(dstat chunks_written)
wait_for 90 "the chunk written" eval '[ "$(dstat chunks_written)" -ge $((c + 1)) ]'
if ! refusal_written; then
	wait_for 90 "the chunk after it written" eval '[ "$(dstat chunks_written)" -ge $((c + 2)) ]'
	refusal_written || { cat "$TMP/check"; fail "no chunk counts refused label sets"; }
fi
cat "$TMP/check"
n=$(sed -n 's/^control samples=\([0-9]*\) .*/\1/p' "$TMP/check")
ctx=$(sed -n 's/^control .* context=\([0-9]*\) .*/\1/p' "$TMP/check")
[ "${n:-0}" -gt 0 ] || fail "no control samples"
# a sample between two requests has no labels (a few %): the flood must not add to them
[ $((ctx * 100)) -ge $((95 * n)) ] ||
	fail "the control target lost its context to the flood: $((n - ctx)) of $n samples without labels"
assert_rss_bounded
assert_fresh
echo PASS
