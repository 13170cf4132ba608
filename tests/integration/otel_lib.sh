# SPDX-License-Identifier: MIT
# otel_lib.sh — helpers of the OpenTelemetry context root tests (sourced after sampler_lib.sh):
# what wl_otel (tests/workloads/wl_otel.c) publishes, and the checks on a folded file.
TRACE_A=0af7651916cd43dd8448eb211c80319c
SPAN_A=b7ad6b7169203331
TRACE_B=4bf92f3577b34da6a3ce929d0e0e4736
SPAN_B=00f067aa0ba902b7
TRACE_H=11111111111111111111111111111111
SPAN_H=2222222222222222
# the complete context of A and B as folded label frames (keys sorted)
CTX_A="http.route=/a;region=eu;span_id=$SPAN_A;tier=gold;trace_id=$TRACE_A;user=alice"
CTX_B="http.route=/b;region=us;span_id=$SPAN_B;tier=free;trace_id=$TRACE_B;user=bob"

# Samples in folded file F under work_A / work_B: total, with exactly the right context,
# and with a wrong one (any label of the other phase, or of none). Prints "TOTAL GOOD WRONG".
otel_tally() { # F
	local f=$1 a b good wrong
	a=$(count "$f" ';work_A(;|$| )')
	b=$(count "$f" ';work_B(;|$| )')
	good=$(($(count "$f" ";$CTX_A;(.*;)?work_A(;| )") + $(count "$f" ";$CTX_B;(.*;)?work_B(;| )")))
	wrong=$(($(grep -E ';work_A(;| )' "$f" | grep -E "=$TRACE_B|=$SPAN_B|=/b|=free|=bob|=us;|/wrong" |
		awk '{ n += $NF } END { print n + 0 }') + $(grep -E ';work_B(;| )' "$f" |
		grep -E "=$TRACE_A|=$SPAN_A|=/a|=gold|=alice|=eu;|/wrong" | awk '{ n += $NF } END { print n + 0 }')))
	echo "$((a + b)) $good $wrong"
}

# Run workload BIN (env already set) for SECONDS, record it by PID into folded $TMP/NAME.folded
# (or .$OTEL_OUT: jfr, pb.gz) and stats $TMP/NAME.json; the workload's pid in WPID.
otel_record() { # NAME SECONDS BIN [ARGS...]
	local name=$1 secs=$2 bin=$3 rc
	shift 3
	"$bin" "$((secs + 2))" 3 >"$TMP/$name.wl" 2>&1 &
	WPID=$!
	wait_for 10 "$name: workload ready" grep -qs ready "$TMP/$name.wl"
	timeout $((secs + 30)) "$CTXPROF" record -p "$WPID" -d "${secs}s" -F 999 \
		--stats-json "$TMP/$name.json" -o "$TMP/$name.${OTEL_OUT:-folded}" "$@" 2>"$TMP/$name.err"
	rc=$?
	kill "$WPID" 2>/dev/null
	wait "$WPID" 2>/dev/null
	[ $rc = 0 ] || { cat "$TMP/$name.err"; fail "$name: record failed (exit $rc)"; }
}

# Run workload BIN (env already set) for 4 s under folded recording NAME and check it: at
# least 1000 samples in work_A/work_B, every one with exactly its phase's context (0 wrong),
# the process named by its service.name (checkout-svc).
run_mode() { # NAME VAR=value|- BIN
	local name=$1 envspec=$2 bin=$3 total good wrong
	[ "$envspec" = - ] || local -x "$envspec"
	otel_record "$name" 4 "$bin"
	read -r total good wrong < <(otel_tally "$TMP/$name.folded")
	echo "$name: $total samples in work_A/work_B, $good with the exact context, $wrong wrong;" \
		"otel $(jq -c '.otel | {records, not_valid, duplicates, unknown_keys}' "$TMP/$name.json")"
	[ "$wrong" = 0 ] || fail "$name: wrong context"
	[ "$total" -ge 1000 ] || { cat "$TMP/$name.err"; fail "$name: too few samples ($total)"; }
	[ "$good" = "$total" ] || { grep -E ';work_[AB]' "$TMP/$name.folded" | grep -v "$CTX_A" |
		grep -v "$CTX_B" | head -5; fail "$name: context incomplete in $((total - good)) samples"; }
	grep -q "^checkout-svc-$WPID;" "$TMP/$name.folded" || fail "$name: process not named by service.name"
}

# Run workload BIN (env already set) for 3 s under folded recording NAME: at least 300
# samples in work_A/work_B (a loaded machine gives fewer than run_mode wants), every one with
# exactly its phase's context, the process named by its service.name (checkout-svc).
otel_exact() { # NAME BIN
	local name=$1 total good wrong
	otel_record "$name" 3 "$2"
	read -r total good wrong < <(otel_tally "$TMP/$name.folded")
	echo "$name: $total samples in work_A/work_B, $good with the exact context, $wrong wrong"
	[ "$total" -ge 300 ] || { cat "$TMP/$name.err"; fail "$name: too few samples ($total)"; }
	[ "$wrong" = 0 ] && [ "$good" = "$total" ] ||
		fail "$name: $((total - good)) samples without exactly their context"
	grep -q "^checkout-svc-$WPID;" "$TMP/$name.folded" || fail "$name: process not named by service.name"
}

# jdk.ExecutionSample events of `jfr print --json` file JSON under work_A/work_B: prints
# "TOTAL BAD", BAD the samples whose context chain, spanId or localRootSpanId is not exactly
# their phase's (see test_otel_jfr.sh).
otel_jfr_tally() { # JSON
	python3 - "$1" "$TRACE_A" "$SPAN_A" "$TRACE_B" "$SPAN_B" <<'PY'
import json, sys
f, ta, sa, tb, sb = sys.argv[1:]
want = {
    "work_A": {"trace_id": ta, "span_id": sa, "http.route": "/a", "tier": "gold",
               "user": "alice", "region": "eu"},
    "work_B": {"trace_id": tb, "span_id": sb, "http.route": "/b", "tier": "free",
               "user": "bob", "region": "us"},
}
span = {"work_A": int(sa, 16), "work_B": int(sb, 16)}
total = bad = 0
for e in json.load(open(f))["recording"]["events"]:
    v = e["values"]
    names = [fr["method"]["name"] for fr in (v.get("stackTrace") or {}).get("frames", [])]
    phase = next((n for n in names if n in want), None)
    if not phase:
        continue
    total += 1
    ctx, node = {}, v.get("context")
    while node:
        ctx[node["key"]] = node["value"]
        node = node.get("next")
    if ctx != want[phase] or (v["spanId"] % 2**64) != span[phase] or v["localRootSpanId"] != 0:
        bad += 1
        if bad <= 3:
            print("mismatch:", phase, ctx, v["spanId"], file=sys.stderr)
print(total, bad)
PY
}

# Record workload BIN as JFR $TMP/NAME.jfr (4 s), read it back with `jfr print --json` and
# check it with otel_jfr_tally: at least 1000 samples under work_A/work_B, 0 not exactly
# their phase's context.
otel_jfr_check() { # NAME BIN
	local name=$1 total bad
	OTEL_OUT=jfr otel_record "$name" 4 "$2"
	jfr print --json --events jdk.ExecutionSample "$TMP/$name.jfr" >"$TMP/$name.jfr.json" ||
		fail "jfr print --json failed"
	otel_jfr_tally "$TMP/$name.jfr.json" >"$TMP/$name.check" || fail "checking the JSON failed"
	read -r total bad <"$TMP/$name.check"
	echo "jfr print --json: $total samples under work_A/work_B, $bad not exactly their context"
	[ "$total" -ge 1000 ] || fail "too few samples ($total)"
	[ "$bad" = 0 ] || fail "$bad samples with a wrong or incomplete context"
	OTEL_JFR_TOTAL=$total
}
