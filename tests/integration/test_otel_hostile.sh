#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own, long
# Hostile OpenTelemetry contexts (tests/workloads/wl_otel.c, WL_OTEL_HOSTILE / WL_OTEL_PCTX):
# threads alternate between the good contexts A and B and, in work_H, a broken record; or the
# process context is absent, late, republished with a new key, corrupt, claims a 2 GiB
# payload, or nests 30 000 levels deep. In every case: ctxprof exits 0, work_A/work_B samples
# carry no wrong label, work_H samples carry nothing but trace H, span H, http.route=/h and
# tier=ok, and the case is counted under its own counter in --stats-json .otel. A process
# context is decoded by the parser helper (issue 19): the corrupt and deep payloads went to it
# (.parser.pctx_calls) and its counters came back in its answer.
. "$(dirname "$0")/sampler_lib.sh"
. "$(dirname "$0")/otel_lib.sh"

# the label frames of work_H lines, one per line, each line's count summed
h_labels() { # F
	grep -E ';work_H(;| )' "$1" | awk '{ n = $NF; $NF = ""; k = split($0, f, ";");
		for (i = 1; i <= k; i++) if (f[i] ~ /=/) c[f[i]] += n } END { for (l in c) print l, c[l] }'
}

check() { # NAME COUNTER-FILTER WL_OTEL_HOSTILE WL_OTEL_PCTX
	local name=$1 filter=$2 total good wrong n bad
	local -x WL_OTEL_HOSTILE=$3 WL_OTEL_PCTX=$4
	[ -n "$3" ] || unset WL_OTEL_HOSTILE
	otel_record "$name" 3 "$WL/wl_otel"
	read -r total good wrong < <(otel_tally "$TMP/$name.folded")
	n=$(jq "$filter" "$TMP/$name.json")
	bad=$(h_labels "$TMP/$name.folded" | grep -vE "^(trace_id=$TRACE_H|span_id=$SPAN_H|http.route=/h|tier=ok) " || true)
	echo "$name: $total A/B samples ($good exact, $wrong wrong); $filter = $n; work_H labels:" \
		$(h_labels "$TMP/$name.folded" | sort | tr '\n' ' ')
	[ "$wrong" = 0 ] || fail "$name: wrong context in work_A/work_B"
	[ "$total" -ge 300 ] || fail "$name: too few samples ($total)"
	[ -z "$bad" ] || fail "$name: wrong labels in work_H: $bad"
	[ "$n" -gt 0 ] || fail "$name: not counted ($filter = $n)"
}

check bigsize .otel.oversized bigsize memfd
check overrun .otel.malformed overrun memfd
check badkey .otel.unknown_keys badkey memfd
check badutf8 .otel.values_truncated badutf8 memfd
check wildptr .otel.read_faults wildptr memfd
check invalid .otel.not_valid invalid memfd
# process contexts: work_A/work_B samples may lack attributes (counted), never carry wrong ones
check pctx_absent .otel.process_context.absent "" none
check pctx_corrupt .otel.process_context.decode_errors "" corrupt
check pctx_huge .otel.process_context.too_large "" huge
# nested 30 000 deep: protobuf-c would recurse off the end of the daemon's stack
check pctx_deep .otel.process_context.too_deep "" deep
for n in pctx_corrupt pctx_deep; do
	calls=$(jq .parser.pctx_calls "$TMP/$n.json")
	echo "$n: $calls process contexts sent to the parser helper;" \
		"$(jq -c '.otel.process_context | {decode_errors, too_deep, parser_failed}' "$TMP/$n.json")"
	[ "$calls" -ge 1 ] || fail "$n: the payload was not decoded by the parser helper"
	[ "$(jq .otel.process_context.parser_failed "$TMP/$n.json")" = 0 ] || fail "$n: the helper failed"
done
check pctx_late .otel.process_context.decoded "" late
# late: once published, the attributes are there
[ "$(count "$TMP/pctx_late.folded" ";$CTX_A;(.*;)?work_A(;| )")" -gt 0 ] || fail "pctx_late: attributes never appeared"
check pctx_newkeys .otel.process_context.decoded "" newkeys
n=$(count "$TMP/pctx_newkeys.folded" ';late.key=v;')
[ "$n" -gt 0 ] || fail "pctx_newkeys: the key published later never named its attribute"
[ "$(jq .otel.process_context.decoded "$TMP/pctx_newkeys.json")" -ge 2 ] || fail "pctx_newkeys: not re-read"
echo "pctx_newkeys: $n samples with late.key=v"
echo PASS
