#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own
# Off-CPU slots under thread and process churn: threads cancelled while they sleep, and
# processes SIGKILLed while all their threads sleep, for 4 s. Every slot is freed when its
# thread exits (none left once the targets are gone: the map stays bounded), each exit is
# counted, no interval is lost, and the slot map never filled. An interval still open when
# its thread exits (its switch-in was not seen: rare, ~3 in 5,000 exits here) is dropped
# and counted, never kept: at most 1% of the exits.
. "$(dirname "$0")/sampler_lib.sh"

record_ok 60 --event off-cpu -o "$TMP/churn.folded" -- "$WL/wl_offcpu" churn 4
for k in intervals exited open_at_exit slots no_slot lost; do
	eval "$k=\$(stat_json .offcpu.$k)"
done
echo "intervals $intervals, slots freed at exit $exited (still open $open_at_exit), slots left $slots, no slot $no_slot, lost $lost"
[ "${exited:-0}" -gt 500 ] || fail "only ${exited:-0} slots freed at thread exit: not enough churn"
[ "${intervals:-0}" -gt 500 ] || fail "only ${intervals:-0} intervals"
[ "$slots" = 0 ] || fail "$slots off-CPU slots left after every target exited"
[ $((open_at_exit * 100)) -le "$exited" ] || fail "$open_at_exit intervals open when their thread exited"
[ "$no_slot" = 0 ] && [ "$lost" = 0 ] || fail "intervals not tracked ($no_slot) or lost ($lost)"
# the killed processes' threads were blocked in the workload's sleep, under op=churn
grep -q 'op=churn;.*do_nanosleep' "$TMP/churn.folded" || fail "no op=churn interval in do_nanosleep"
echo "PASS"
