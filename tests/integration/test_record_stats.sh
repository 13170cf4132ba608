#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel check
# record --stats-json FILE: one JSON object with the counters record prints at exit, whose
# numbers agree with the recording itself: the JFR file holds exactly the samples it says
# were written (counted by the JDK's `jfr summary`), nothing was received but not written,
# dropped or held back (taken before the TLS location, ctx_missing.before_location); a
# collapsed file has the lines and samples it says; the parser helper's requests are
# counted. Written with -q too; an unwritable FILE is an error before anything starts.
. "$(dirname "$0")/sampler_lib.sh"

# JFR: received = written + dropped + held back, and the file has `written` samples.
record_ok 60 -F 999 -o "$TMP/a.jfr" -- "$WL/wl_attrib" long 3 2
jq -e 'type == "object"' "$TMP/stats.json" >/dev/null || fail "--stats-json is not a JSON object"
received=$(stat_json .received)
written=$(stat_json .jfr.samples_written)
dropped=$(stat_json .jfr.samples_dropped)
held=$(stat_json .ctx_missing.before_location)
in_file=$(jfr summary "$TMP/a.jfr" | awk '$1 == "jdk.ExecutionSample" { print $2 }')
echo "stats: received ${received:-?}, written ${written:-?}, dropped ${dropped:-?}," \
	"held back ${held:-?};" \
	"jdk.ExecutionSample events in the file: ${in_file:-?}"
[ "${written:-0}" -ge 300 ] || fail "too few samples written (${written:-none})"
[ "$in_file" = "$written" ] || fail "the file has $in_file samples, the stats say $written"
[ $((written + dropped + held)) = "$received" ] ||
	fail "received $received != written + dropped + held back"
# the frames were named by the unprivileged parser helper, and it never failed
calls=$(stat_json .parser.calls)
echo "parser helper: ${calls:-?} requests, $(stat_json .parser.timeouts) timed out," \
	"$(stat_json .parser.deaths) died, $(stat_json .parser.restarts) restarts"
[ "${calls:-0}" -gt 0 ] || fail "no parser helper request counted (.parser.calls ${calls:-missing})"
[ "$(stat_json .parser.timeouts)" = 0 ] && [ "$(stat_json .parser.deaths)" = 0 ] ||
	fail "the parser helper timed out or died"

# Collapsed, with -q: the lines and the samples of the file.
record_ok 60 -q -F 999 -o "$TMP/a.txt" -- "$WL/wl_attrib" long 2 1
lines=$(stat_json .collapsed_lines)
received=$(($(stat_json .received) - $(stat_json .ctx_missing.before_location)))
n=$(count "$TMP/a.txt" .)
echo "collapsed: ${lines:-?} lines (file: $(wc -l <"$TMP/a.txt")), received ${received:-?}" \
	"(file: $n samples)"
[ "$lines" = "$(wc -l <"$TMP/a.txt")" ] || fail "collapsed_lines does not match the file"
[ "$received" = "$n" ] || fail "received (less held back) $received, the file has $n samples"

# An unwritable stats file: a usage-time error, nothing recorded.
if "$CTXPROF" record -d 1 --stats-json /nonexistent-dir/s.json -o "$TMP/b.txt" -p $$ \
	2>"$TMP/bad.err"; then
	fail "record with an unwritable --stats-json succeeded"
fi
grep -q 'cannot write /nonexistent-dir/s.json' "$TMP/bad.err" || fail "no clear error"
[ ! -e "$TMP/b.txt" ] || fail "the output was created although setup failed"
echo PASS
