#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# Context cases other writers publish (issue 21), each read with exactly the expected labels
# and service.name (tests/workloads/wl_otel.c, WL_OTEL_HOSTILE in work_H; A and B as usual):
#   zeroids  valid record, all-zero trace and span ids, attributes: every work_H sample has
#            http.route=/h and tier=ok and no trace or span (counted .otel.zero_ids);
#   bigsize  attrs_data_size 65535, complete entries up to the 640-byte budget, one entry
#            crossing it: every work_H sample has trace H, span H, http.route=/h (not the cut
#            /cut...) and tier=ok (counted .otel.oversized);
#   datadog  key 0 of the key map is datadog.local_root_span_id: every work_H sample has the
#            label and, in JFR read back by the JDK's `jfr print --json`, localRootSpanId
#            123456789 (0 for A and B, whose key-0 values are not hex: .otel.root_span_bad);
#   ld       wl_otel_ld: otel_thread_ctx_v1 hidden in libotelw_ld.so (.symtab only), reached
#            with -ftls-model=local-dynamic (module-relative DTPMOD64): every work_A/work_B
#            sample has exactly its phase's context, the process is named checkout-svc, its
#            ELF files read by the parser helper (.parser.tls_calls);
#   pctx alone  wl_otel_pctxonly publishes the process context (memfd; anonymous memory named
#            OTEL_CTX too where the kernel can name it, CONFIG_ANON_VMA_NAME) and has no
#            otel_thread_ctx_v1: every sample is named checkout-svc, decoded by the parser helper.
. "$(dirname "$0")/sampler_lib.sh"
. "$(dirname "$0")/otel_lib.sh"

# "TOTAL EXACT" work_H samples of folded file F, and those whose label frames are exactly
# WANT (sorted, ;-joined).
h_exact() { # F WANT
	grep -E ';work_H(;| )' "$1" | awk -v want="$2" '{ n = $NF; $NF = ""; k = split($0, f, ";");
		s = ""; for (i = 1; i <= k; i++) if (f[i] ~ /=/) s = s (s == "" ? "" : ";") f[i];
		t += n; if (s == want) e += n; else if (bad++ < 3) print "other:", s > "/dev/stderr" }
		END { print t + 0, e + 0 }'
}

check() { # NAME COUNTER WANT [VAR=value]
	local name=$1 counter=$2 want=$3 total exact n
	local -x WL_OTEL_HOSTILE=$name
	[ -z "${4:-}" ] || local -x "$4"
	otel_record "$name" 3 "$WL/wl_otel"
	read -r total exact < <(h_exact "$TMP/$name.folded" "$want")
	n=$(jq "$counter" "$TMP/$name.json")
	echo "$name: $total work_H samples, $exact with exactly $want; $counter = $n"
	[ "$total" -ge 100 ] || fail "$name: too few work_H samples ($total)"
	[ "$exact" = "$total" ] || fail "$name: $((total - exact)) work_H samples without exactly $want"
	[ "$n" -gt 0 ] || fail "$name: not counted ($counter = $n)"
	grep -q "^checkout-svc-$WPID;" "$TMP/$name.folded" || fail "$name: process not named by service.name"
}

check zeroids .otel.zero_ids "http.route=/h;tier=ok"
check bigsize .otel.oversized "http.route=/h;span_id=$SPAN_H;tier=ok;trace_id=$TRACE_H"
check datadog .otel.root_span_bad \
	"datadog.local_root_span_id=00000000075bcd15;span_id=$SPAN_H;tier=ok;trace_id=$TRACE_H" \
	WL_OTEL_PCTX=datadog

otel_exact ld "$WL/wl_otel_ld"
# the ELF files were read by the parser helper, not as root (issue 19)
n=$(jq .parser.tls_calls "$TMP/ld.json")
echo "ld: $n ELF files' thread-local variables read by the parser helper"
[ "$n" -ge 1 ] || fail "ld: the ELF files were not read by the parser helper"

# the process context alone: every sample's process is checkout-svc-PID
kinds=memfd
if zgrep -qs '^CONFIG_ANON_VMA_NAME=y' /proc/config.gz; then
	kinds="memfd anon"
else
	echo "alone_anon: not run (this kernel cannot name anonymous memory: no CONFIG_ANON_VMA_NAME)"
fi
for kind in $kinds; do
	WL_OTEL_OFF=1 WL_OTEL_PCTX=$kind otel_record "alone_$kind" 3 "$WL/wl_otel_pctxonly"
	all=$(awk '{ n += $NF } END { print n + 0 }' "$TMP/alone_$kind.folded")
	named=$(grep "^checkout-svc-$WPID;" "$TMP/alone_$kind.folded" | awk '{ n += $NF } END { print n + 0 }')
	decoded=$(jq .otel.process_context.decoded "$TMP/alone_$kind.json")
	calls=$(jq .parser.pctx_calls "$TMP/alone_$kind.json")
	echo "alone_$kind: $all samples, $named named checkout-svc-$WPID;" \
		"process_context $(jq -c '.otel.process_context | {decoded, quick, absent}' "$TMP/alone_$kind.json")," \
		"$calls decoded by the parser helper"
	[ "$decoded" -ge 1 ] && [ "$calls" -ge "$decoded" ] ||
		fail "alone_$kind: process contexts not decoded by the parser helper ($calls of $decoded)"
	# looked at again by its header where it was found, not by reading the maps each time
	[ "$(jq .otel.process_context.quick "$TMP/alone_$kind.json")" -ge 1 ] ||
		fail "alone_$kind: no look at the unchanged context was a quick one"
	[ "$all" -ge 300 ] || fail "alone_$kind: too few samples ($all)"
	[ "$named" = "$all" ] || fail "alone_$kind: $((all - named)) samples not named by service.name"
done

command -v jfr >/dev/null || need_oracle "the JDK's jfr"
WL_OTEL_HOSTILE=datadog WL_OTEL_PCTX=datadog OTEL_OUT=jfr otel_record dd_jfr 3 "$WL/wl_otel"
jfr print --json --events jdk.ExecutionSample "$TMP/dd_jfr.jfr" >"$TMP/dd_jfr.json" ||
	fail "jfr print --json failed"
read -r h good other < <(python3 - "$TMP/dd_jfr.json" <<'PY'
import json, sys
h = good = other = 0
for e in json.load(open(sys.argv[1]))["recording"]["events"]:
    v = e["values"]
    names = [fr["method"]["name"] for fr in (v.get("stackTrace") or {}).get("frames", [])]
    if "work_H" in names:
        h += 1
        good += v["localRootSpanId"] == 123456789
    elif "work_A" in names or "work_B" in names:
        other += v["localRootSpanId"] != 0
print(h, good, other)
PY
)
echo "datadog jfr: $h work_H samples, $good with localRootSpanId 123456789; $other A/B samples with one"
[ "$h" -ge 100 ] || fail "datadog jfr: too few work_H samples ($h)"
[ "$good" = "$h" ] || fail "datadog jfr: $((h - good)) work_H samples without the local root span id"
[ "$other" = 0 ] || fail "datadog jfr: A/B samples with a local root span id"
echo PASS
