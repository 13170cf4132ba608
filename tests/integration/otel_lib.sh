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
