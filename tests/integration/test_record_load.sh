#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own
# ctxprof record under more samples than its consumer can handle: -d, chunk rotation and
# SIGINT are still served on time. A slow consumer is simulated by
# CTXPROF_TEST_RECORD_DELAY_US (10 ms per ring record: 100 records/s, fewer than a busy
# process gives at -F 5000 even on a loaded host), so the ring never empties; a
# consumer that drains until the ring is empty never comes back to its main loop. And
# -F 100000, above what one consumer carries, is lowered (engine/sample_rate.h) and still
# ends on time. Samples lost to a full ring are counted by cause.
. "$(dirname "$0")/sampler_lib.sh"
sh -c 'while :; do :; done' &
busy=$!
trap 'kill $busy 2>/dev/null; rm -rf "$TMP"' EXIT
now_ms() { date +%s%3N; }
chunks() { sed -n 's/.*: \([0-9]*\) chunks,.*/\1/p' "$TMP/e"; }

# 1. a consumer slower than the samples: -d 2s ends within the drain and stop budgets
t0=$(now_ms)
CTXPROF_TEST_RECORD_DELAY_US=10000 record_ok 30 -F 5000 -p $busy -d 2s --chunk-period 1s \
	-o "$TMP/slow.jfr"
dt=$(($(now_ms) - t0))
echo "slow consumer: -d 2s took ${dt} ms, $(chunks) chunks"
[ $dt -lt 6000 ] || fail "-d 2s took $dt ms with a slow consumer"
[ "$(chunks)" -ge 2 ] || fail "$(chunks) chunks in 2 s with --chunk-period 1s"
"$CTXPROF" report "$TMP/slow.jfr" >/dev/null || fail "report rejects the file"

# 2. SIGINT under the same load: exits within 3 s, the recording written
CTXPROF_TEST_RECORD_DELAY_US=10000 "$CTXPROF" record -F 5000 -p $busy -d 60s \
	-o "$TMP/int.jfr" 2>"$TMP/e" &
rec=$!
for _ in $(seq 100); do [ -e "$TMP/int.jfr" ] && break; sleep 0.1; done
[ -e "$TMP/int.jfr" ] || fail "recording did not start within 10 s"
sleep 0.5 # (let the ring fill: the load is what is tested)
t0=$(now_ms)
kill -INT $rec
for _ in $(seq 100); do kill -0 $rec 2>/dev/null || break; sleep 0.05; done
dt=$(($(now_ms) - t0))
if kill -0 $rec 2>/dev/null; then
	kill -KILL $rec
	fail "record ignored SIGINT for 5 s under load"
fi
wait $rec
rc=$?
cat "$TMP/e"
echo "SIGINT under load: exit $rc after ${dt} ms"
[ $rc = 0 ] || fail "record exited $rc after SIGINT"
[ $dt -lt 3000 ] || fail "record took $dt ms to stop after SIGINT"

# 3. -F 100000: lowered to what one consumer carries, ends on time with its chunks
t0=$(now_ms)
record_ok 30 -F 100000 -p $busy -d 2s --chunk-period 1s -o "$TMP/fast.jfr"
dt=$(($(now_ms) - t0))
echo "-F 100000: -d 2s took ${dt} ms, $(chunks) chunks"
grep -q "sampling at [0-9]* Hz" "$TMP/e" || fail "-F 100000 was not lowered"
[ $dt -lt 6000 ] || fail "-F 100000 -d 2s took $dt ms"
[ "$(chunks)" -ge 2 ] || fail "$(chunks) chunks in 2 s with --chunk-period 1s"
# 4. the lost counter by cause (a 256 KiB ring fills in a fraction of a second at this rate):
# a consumer slower than the samples loses them while it drains; a consumer stopped
# (SIGSTOP, as a starved or blocked one) loses them while away; none is lost before the
# consumer starts (sampling starts when it can drain); the causes sum to `lost`.
causes() { # STATS_JSON: "LOST BEFORE AWAY DRAINING"
	echo "$(stat_json .lost "$1") $(stat_json .lost_before_consumer "$1")" \
		"$(stat_json .lost_consumer_away "$1") $(stat_json .lost_consumer_draining "$1")"
}
check_causes() { # WHAT LOST BEFORE AWAY DRAINING
	echo "$1: lost $2 (before the consumer $3, consumer away $4, draining $5)"
	[ "$2" -gt 0 ] || fail "$1: nothing lost with a 256 KiB ring"
	[ $(($3 + $4 + $5)) = "$2" ] || fail "$1: the causes ($3 + $4 + $5) do not sum to lost $2"
	[ "$3" = 0 ] || fail "$1: $3 samples lost before the consumer started"
}
CTXPROF_TEST_RECORD_DELAY_US=10000 record_ok 30 -F 5000 -p $busy -d 2s --ring-size 256K \
	-o "$TMP/slow2.jfr"
read -r lost before away draining <<<"$(causes "$TMP/stats.json")"
check_causes "slow consumer" "$lost" "$before" "$away" "$draining"
[ "$draining" -gt 0 ] || fail "a slow consumer's losses not counted as lost while draining"
grep -q "lost $lost (the sample ring was full: $before before the consumer started, $away while it was away" "$TMP/e" ||
	fail "the stats line does not say the causes"

"$CTXPROF" record -q -F 5000 -p $busy -d 60s --chunk-period 1s --ring-size 256K \
	--stats-json "$TMP/stop.json" \
	-o "$TMP/stop.jfr" 2>"$TMP/e" &
rec=$!
wait_for 10 "the first chunk" test -s "$TMP/stop.jfr"
kill -STOP $rec
sleep 1 # the consumer stopped while the ring fills: the load is what is tested
kill -CONT $rec
kill -INT $rec
wait $rec || fail "record exited $? after SIGSTOP, SIGCONT, SIGINT"
read -r lost before away draining <<<"$(causes "$TMP/stop.json")"
check_causes "stopped consumer" "$lost" "$before" "$away" "$draining"
[ "$away" -gt 0 ] || fail "a stopped consumer's losses not counted as lost while away"
echo "PASS: record under load"
