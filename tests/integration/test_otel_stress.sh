#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel check
# Interrupted writers: the OTel writer (TLSDESC library) updates its record in place by
# clearing `valid`, writing the new trace id, pausing 20 us, writing the rest and setting
# `valid` again (WL_OTEL_PROTO=flip-slow), while a per-thread timer signal interrupts every
# writing thread at 10 kHz (WL_OTEL_SIGHZ). Samples that land inside an update see a record
# whose trace is new and whose span and attributes are old: a reader that ignored `valid`
# would show them. Over thousands of samples: 0 wrong contexts, and the torn reads (records
# found invalid) are counted (.otel.not_valid).
. "$(dirname "$0")/sampler_lib.sh"
. "$(dirname "$0")/otel_lib.sh"

WL_OTEL_PROTO=flip-slow WL_OTEL_SIGHZ=10000 otel_record stress 5 "$WL/wl_otel_desc"
read -r total good wrong < <(otel_tally "$TMP/stress.folded")
# anywhere (the pauses are inside the writer, not in work_A/work_B): trace A with span B or
# the attributes of B, or the reverse, is a torn record shown
mixed=$(($(grep -E "trace_id=$TRACE_A" "$TMP/stress.folded" | grep -cE "span_id=$SPAN_B|=/b;|=bob;") +
	$(grep -E "trace_id=$TRACE_B" "$TMP/stress.folded" | grep -cE "span_id=$SPAN_A|=/a;|=alice;")))
torn=$(jq .otel.not_valid "$TMP/stress.json")
echo "stress: $total samples in work_A/work_B, $good exact, $wrong wrong, $mixed lines mixing A and B;" \
	"torn reads counted: $torn"
[ "$total" -ge 1000 ] || fail "too few samples ($total)"
[ "$wrong" = 0 ] && [ "$mixed" = 0 ] || fail "a wrong context was shown"
[ "$torn" -gt 0 ] || fail "no torn read counted (the pause inside each update was never sampled)"
echo PASS
