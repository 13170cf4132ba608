#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof record under more samples than its consumer can handle: -d, chunk rotation and
# SIGINT are still served on time. A slow consumer is simulated by
# CTXPROF_TEST_RECORD_DELAY_US (10 ms per ring record: 100 records/s, fewer than a busy
# process gives at -F 5000 even on a loaded host), so the ring never empties; a
# consumer that drains until the ring is empty never comes back to its main loop. And
# -F 100000, above what one consumer carries, is lowered (engine/sample_rate.h) and still
# ends on time.
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
echo "PASS: record under load"
