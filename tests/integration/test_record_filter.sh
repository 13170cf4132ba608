#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# record --filter (context filters, issue 21): a filtered recording keeps exactly the samples
# that an unfiltered recording's `report` attributes to the filter. Two records sample the
# demo workload (libctx labels route = /checkout|/search|/login, tier = free|pro|enterprise)
# at the same time, one with --filter route=/checkout: every sample of the filtered file is
# a /checkout sample, and their share of what it took equals the /checkout share of the
# unfiltered file (the tolerance is explained below). Its counters add up exactly: kept +
# filtered = received (less held back), ctxprof.Statistics carries the same filtered count,
# and the file says it is filtered (a jdk.ActiveSetting). Then !KEY=VALUE, has-context,
# has-no-context and an AND of two filters on folded output (the demo and a process without
# context), checked line by line and against the exact counters; bad syntax is a usage error
# (exit 2) that says what is wrong, from record and from the daemon's flag.
. "$(dirname "$0")/sampler_lib.sh"
DEMO=$B/demo/demo_app
[ -x "$DEMO" ] || fail "no $DEMO (run make)"

# 1. Bad syntax: exit 2 before anything starts, with the reason.
bad() { # SPEC WHY-REGEX
	local rc=0
	"$CTXPROF" record --filter "$1" -d 1 -p $$ -o "$TMP/bad.txt" 2>"$TMP/bad.err" || rc=$?
	[ $rc = 2 ] || fail "--filter '$1': exit $rc, not 2 (usage error)"
	grep -q -E "bad --filter '.*': $2" "$TMP/bad.err" ||
		{ cat "$TMP/bad.err"; fail "--filter '$1': no clear error"; }
	[ ! -e "$TMP/bad.txt" ] || fail "--filter '$1': the output was created"
}
bad '=/checkout' 'a term without a key'
bad 'route=/checkout,,tier=free' 'an empty term'
bad 'route=/checkout,' 'an empty term'
bad "$(printf 'k%.0s' {1..129})" 'a key longer'
bad 'a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q' 'more than 16 terms'
rc=0
"$CTXPROF" daemon --filter '!=x' >/dev/null 2>"$TMP/d.err" || rc=$?
grep -q -- "--filter !=x: bad value" "$TMP/d.err" && [ $rc = 2 ] ||
	{ cat "$TMP/d.err"; fail "daemon --filter '!=x': exit $rc, no clear error"; }
echo "bad filters: exit 2 with the reason ($(head -1 "$TMP/bad.err"))"

"$DEMO" 60 2 &
app=$!
trap 'kill $app 2>/dev/null; rm -rf "$TMP"' EXIT

# 2. The same samples, filtered and not: two recordings of the same threads at once.
"$CTXPROF" record -q -p $app -d 4 -F 999 -o "$TMP/all.jfr" --stats-json "$TMP/all.json" &
rec_all=$!
"$CTXPROF" record -q -p $app -d 4 -F 999 --filter route=/checkout -o "$TMP/co.jfr" \
	--stats-json "$TMP/co.json" || fail "record --filter route=/checkout failed"
wait $rec_all || fail "the unfiltered record failed"
"$CTXPROF" report --top 20 "$TMP/all.jfr" >"$TMP/all.rep" || fail "report all.jfr failed"
"$CTXPROF" report --top 20 "$TMP/co.jfr" >"$TMP/co.rep" || fail "report co.jfr failed"
total() { sed -n 's/^samples: *\([0-9]*\),.*/\1/p' "$1"; }
# "    VALUE = N samples" under "  KEY:" in report's per-label block
label_count() { # REPORT KEY VALUE
	awk -v k="  $2:" -v v="    $3 = " '
		/^  [^ ]/ { in_k = ($0 == k) }
		in_k && index($0, v) == 1 { n = $(NF - 1) }
		END { print n + 0 }' "$1"
}
label_values() { # REPORT KEY: how many values the block of KEY lists
	awk -v k="  $2:" '/^  [^ ]/ { in_k = ($0 == k) } in_k && /^    [^ ].* = [0-9]+ samples$/ { n++ }
		END { print n + 0 }' "$1"
}
n_all=$(total "$TMP/all.rep")
c_all=$(label_count "$TMP/all.rep" route /checkout)
n_co=$(total "$TMP/co.rep")
c_co=$(label_count "$TMP/co.rep" route /checkout)
filtered=$(stat_json .filtered "$TMP/co.json")
# taken = received + dropped in BPF (no context read: the filter needs context)
received=$(($(stat_json .received "$TMP/co.json") + $(stat_json .filtered_in_kernel "$TMP/co.json") -
	$(stat_json .ctx_missing.before_location "$TMP/co.json")))
written=$(stat_json .jfr.samples_written "$TMP/co.json")
echo "unfiltered: $n_all samples, route=/checkout $c_all; filtered: $n_co samples" \
	"(route=/checkout $c_co, values of route $(label_values "$TMP/co.rep" route)), filtered" \
	"out $filtered, received $received, written $written"
[ "$n_all" -ge 300 ] && [ "$received" -ge 300 ] || fail "too few samples to compare"
[ "$c_all" -gt 0 ] && [ "$c_all" -lt "$n_all" ] || fail "the unfiltered file has no /checkout mix"
# exactly: the filtered file's samples are all /checkout samples, and nothing else
[ "$c_co" = "$n_co" ] && [ "$n_co" -gt 0 ] || fail "the filtered file has samples other than route=/checkout"
[ "$(label_values "$TMP/co.rep" route)" = 1 ] || fail "the filtered file lists another route"
[ "$(stat_json .filtered "$TMP/all.json")" = 0 ] || fail "the unfiltered record filtered samples"
# exactly: what it took is what it kept plus what it filtered out
[ "$written" = "$n_co" ] || fail "written $written, the file has $n_co"
[ $((n_co + filtered)) = "$received" ] || fail "kept $n_co + filtered $filtered != received $received"
# The two records sample the same threads over the same 4 s, but with their own perf events
# (each its own timer, so not at the same instants) and starting a few hundred ms apart (each
# loads its own BPF object): they take about, not exactly, the same samples. So compare
# /checkout's share of what each took: the two shares estimate the same fraction, and with
# >= 300 samples each a sampling difference above 0.1 is over 3 standard deviations even for
# independent samples (sqrt(2 * 0.25 / 300) = 0.041); correlated ones differ less.
python3 - "$n_co" "$received" "$c_all" "$n_all" <<'PY' || fail "the filtered share differs"
import sys
kept, took, match, total = map(int, sys.argv[1:])
a, b = kept / took, match / total
print(f"/checkout share: filtered recording {a:.3f} ({kept}/{took}), unfiltered {b:.3f} "
      f"({match}/{total}); the filtered count scaled to the unfiltered's samples "
      f"{a * total:.0f} vs {match}")
sys.exit(abs(a - b) > 0.1)
PY
# ctxprof.Statistics: the per-chunk filtered counts add up to the record's
if command -v jfr >/dev/null; then
	js=$(jfr print --events ctxprof.Statistics "$TMP/co.jfr" |
		awk '$1 == "filtered" { n += $3 } END { print n + 0 }')
	echo "ctxprof.Statistics filtered: $js"
	[ "$js" = "$filtered" ] || fail "ctxprof.Statistics says $js filtered, the record $filtered"
	jfr print --events jdk.ActiveSetting "$TMP/co.jfr" | grep -A1 'name = "filter"' |
		grep -q 'value = "route=/checkout"' || fail "co.jfr does not say it is filtered"
	! jfr print --events jdk.ActiveSetting "$TMP/all.jfr" | grep -q 'name = "filter"' ||
		fail "all.jfr says it is filtered"
else
	oracle_missing "the JDK's jfr (ctxprof.Statistics)"
fi

# 3. Folded output: each filter against each line and the exact counters, with a second
# target that publishes no context (a busy shell loop) beside the demo.
bash -c 'while :; do :; done' &
busy=$!
trap 'kill $app $busy 2>/dev/null; rm -rf "$TMP"' EXIT
folded() { # NAME FILTER-ARGS...
	local name=$1
	shift
	record_ok 30 -p $app,$busy -d 1500ms -F 499 "$@" -o "$TMP/$name.txt"
	cp "$TMP/stats.json" "$TMP/$name.json"
	echo "$name: $(count "$TMP/$name.txt" .) samples kept, $(stat_json .filtered) filtered"
}
kept_minus() { echo $(($(stat_json .received "$1") + $(stat_json .filtered_in_kernel "$1") -
	$(stat_json .ctx_missing.before_location "$1") - $(stat_json .filtered "$1"))); }
folded notfree --filter '!tier=free'
[ "$(count "$TMP/notfree.txt" ';tier=free;')" = 0 ] || fail "!tier=free kept tier=free samples"
[ "$(count "$TMP/notfree.txt" ';tier=(pro|enterprise);')" -gt 0 ] || fail "!tier=free kept no pro/enterprise"
[ "$(stat_json .filtered)" -gt 0 ] || fail "!tier=free filtered nothing"
[ "$(count "$TMP/notfree.txt" .)" = "$(kept_minus "$TMP/notfree.json")" ] || fail "!tier=free: counts"

folded both --filter route=/checkout --filter '!tier=free'
[ "$(count "$TMP/both.txt" .)" -gt 0 ] || fail "route=/checkout AND !tier=free kept nothing"
[ "$(count "$TMP/both.txt" .)" = "$(count "$TMP/both.txt" ';route=/checkout;tier=(pro|enterprise);')" ] ||
	fail "route=/checkout AND !tier=free kept another sample"

# --span-frames: a sample taken between the demo's span and its labels has context (the span)
# and no label; the span=ID frame shows it. One taken inside ctx_clear_span, after the span
# record is cleared and before libctx hides its span-id/root-span-id mirror labels, has
# context too (those labels: CI caught one, 1 sample in 1,166)
folded ctx --filter has-context --span-frames
[ "$(count "$TMP/ctx.txt" .)" = "$(count "$TMP/ctx.txt" ';(route=[^;]*;tier=|span=|root-span-id=)')" ] || {
	grep -vE ';(route=[^;]*;tier=|span=|root-span-id=)' "$TMP/ctx.txt" | head -5
	fail "has-context kept a sample with neither labels nor a span"
}
# exact: has-context drops the samples without context, nothing else
no_ctx=$(($(stat_json .received) + $(stat_json .filtered_in_kernel) -
	$(stat_json .ctx_missing.before_location) - $(stat_json .with_context)))
[ "$(stat_json .filtered)" = "$no_ctx" ] ||
	fail "has-context filtered $(stat_json .filtered), not the $no_ctx without context"

[ "$(count "$TMP/ctx.txt" "^bash-$busy;")" = 0 ] || fail "has-context kept the shell loop"
[ "$(stat_json .filtered)" -gt 0 ] || fail "has-context filtered nothing (the shell loop has no context)"
# the shell loop reads no context at all: BPF drops its samples before the ring
[ "$(stat_json .filtered_in_kernel)" -gt 0 ] || fail "has-context: nothing dropped in BPF"
[ "$(stat_json .filtered_in_kernel "$TMP/notfree.json")" = 0 ] ||
	fail "!tier=free needs no context, yet BPF dropped samples"

folded noctx --filter has-no-context
[ "$(count "$TMP/noctx.txt" '=')" = 0 ] || fail "has-no-context kept a labelled sample"
[ "$(count "$TMP/noctx.txt" "^bash-$busy;")" -gt 0 ] || fail "has-no-context kept no shell loop sample"
[ "$(stat_json .filtered)" = "$(stat_json .with_context)" ] ||
	fail "has-no-context filtered $(stat_json .filtered), not the $(stat_json .with_context) with context"
oracle_verdict
echo PASS
