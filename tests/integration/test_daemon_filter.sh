#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel check
# The daemon's context filter, `[sampling] filter`: with `filter = route=/checkout,!tier=free`
# a daemon sampling this run's cgroup (the demo workload, libctx labels route and tier, and a
# busy shell loop without context) writes only /checkout samples of the pro and enterprise
# tiers; the others are counted, not stored: `filtered` in the status file (and `ctxprof
# status`), ctxprof_samples_filtered_total on the metrics endpoint, `filtered` in the file's
# ctxprof.Statistics, all equal once the daemon stopped; the file names the filter (a
# jdk.ActiveSetting). A bad filter in the file is a
# config error naming its line.
. "$(dirname "$0")/daemon_lib.sh"
PROM="python3 $(dirname "$0")/prom_check.py"
DEMO=$B/demo/demo_app
[ -x "$DEMO" ] || fail "no $DEMO (run make)"

# 1. A bad filter: the file's line, exit 2, nothing started.
printf '[sampling]\nfrequency = 99\nfilter = route=/checkout,,tier=pro\n' >"$TMP/bad.conf"
rc=0
"$CTXPROF" daemon --config "$TMP/bad.conf" --directory "$OUT" --status-file "$ST" \
	>"$TMP/bad.log" 2>&1 || rc=$?
[ $rc = 2 ] && grep -q 'bad.conf:3: bad value: sampling.filter' "$TMP/bad.log" ||
	{ cat "$TMP/bad.log"; fail "a bad [sampling] filter: exit $rc, no clear error"; }
echo "bad filter: $(head -1 "$TMP/bad.log")"

# 2. A daemon with a filter.
cat >"$TMP/c.conf" <<CONF
[sampling]
frequency = 499
filter = route=/checkout,!tier=free
[targets]
mode = selectors
cgroup = $CGSEL
[output]
chunk-period = 1s
[metrics]
listen = 127.0.0.1:0
CONF
spawn "$DEMO" 60 2
spawn bash -c 'while :; do :; done'
BUSY=$SPAWNED
start_daemon --config "$TMP/c.conf"
wait_for 20 "the metrics address in the log" grep -q 'metrics: serving http://127.0.0.1:[0-9]*/metrics' "$DLOG"
URL=$(grep -o 'http://127.0.0.1:[0-9]*/metrics' "$DLOG" | head -1)
filtered_over() { [ "$(dstat filtered)" -gt "$1" ] 2>/dev/null; }
wait_for 30 "filtered samples in the status file" filtered_over 300
"$CTXPROF" status --status-file "$ST" | grep -E -q '[0-9]+ filtered out' ||
	fail "ctxprof status does not show the filtered samples"
$PROM scrape "$URL" >"$TMP/m.json" || fail "scrape of $URL failed"
m=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["ctxprof_samples_filtered_total"]))' "$TMP/m.json") ||
	fail "no ctxprof_samples_filtered_total"
echo "while running: status filtered $(dstat filtered), metrics $m"
[ "$m" -gt 0 ] || fail "ctxprof_samples_filtered_total is $m"
stop_daemon
final=$(dstat filtered)

# 3. The file: only the samples the filter keeps; its statistics say how many it dropped.
f=$(ls "$OUT"/*.jfr | head -1)
[ -n "$f" ] || fail "no file in $OUT"
"$CTXPROF" report --top 20 "$f" >"$TMP/rep" || fail "report $f failed"
n=$(sed -n 's/^samples: *\([0-9]*\),.*/\1/p' "$TMP/rep")
awk '/^  route:/ { r = 1; next } /^  [^ ]/ { r = 0 } r && /^    [^ ].* = [0-9]+ samples$/' \
	"$TMP/rep" >"$TMP/routes"
awk '/^  tier:/ { r = 1; next } /^  [^ ]/ { r = 0 } r && /^    [^ ].* = [0-9]+ samples$/' \
	"$TMP/rep" >"$TMP/tiers"
echo "file: $n samples; route: $(tr -s ' \n' ' ' <"$TMP/routes"); tier: $(tr -s ' \n' ' ' <"$TMP/tiers")"
[ "${n:-0}" -gt 0 ] || fail "the file has no samples"
[ "$(wc -l <"$TMP/routes")" = 1 ] && grep -q "^    /checkout = $n samples$" "$TMP/routes" ||
	fail "the file has samples other than route=/checkout"
! grep -q '^    free = ' "$TMP/tiers" || fail "the file has tier=free samples"
! grep -q "(tid $BUSY)" "$TMP/rep" || fail "the file has samples of the shell loop (no context)"
if command -v jfr >/dev/null; then
	js=$(jfr print --events ctxprof.Statistics "$f" | awk '$1 == "filtered" { n += $3 } END { print n + 0 }')
	echo "ctxprof.Statistics filtered: $js, the status at stop: $final"
	[ "$js" = "$final" ] || fail "ctxprof.Statistics says $js filtered, the status $final"
	jfr print --events jdk.ActiveSetting "$f" | grep -A1 'name = "filter"' |
		grep -q 'value = "route=/checkout,!tier=free"' || fail "the file does not say it is filtered"
else
	oracle_missing "the JDK's jfr (ctxprof.Statistics)"
fi
oracle_verdict
echo PASS
