#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# The daemon delivers every finished recording to a real HTTP receiver (Pyroscope's /ingest
# shape: multipart jfr + labels) and loses none through faults: the receiver down at start,
# answering 500 for a while, 429 with Retry-After, hanging past the timeout, closing the
# connection mid-body. After each fault every finished file has arrived byte for byte, and
# sampling went on meanwhile (the status file's sample count grew during the fault); none
# arrived twice. test_daemon_upload_otlp_faults.sh runs it with UPLOAD_FORMAT=otlp (the OTLP
# protocol, upload_lib.sh: each body the file converted, compared decoded).
. "$(dirname "$0")/daemon_lib.sh"
. "$(dirname "$0")/upload_lib.sh"
trap 'stop_receiver; cleanup' EXIT
start_receiver_down
cat >"$TMP/ctxprof.conf" <<CONF
[targets]
mode = selectors
cgroup = $CGSEL
[output]
directory = $OUT
chunk-period = 500ms
rotate-period = 2s
[daemon]
log-level = debug
status-file = $ST
[metrics]
listen = 127.0.0.1:0
[upload]
url = http://127.0.0.1:$PORT
application = ctxprof-test
tags = env=test
timeout = 2s
retry-min = 200ms
retry-max = 1s
stop-grace = 15s
$(upload_format_conf)
CONF
spawn "$WL/wl_attrib" long 0 1 >/dev/null # one busy thread: a sample source, no more
start_daemon --config "$TMP/ctxprof.conf"
threads_dropped 3 # main, JFR writer, uploader
finished() { ls "$OUT"/ctxprof-*.jfr 2>/dev/null | wc -l; }
logged() { grep -c -- "$1" "$DLOG"; }
# everything finished so far has arrived
caught_up() { refresh_hashes; [ "$(finished)" -gt 0 ] && all_finished_received; }
samples() { dstat samples; }
# a fault: set it, wait for it to be seen (receiver log: $2) and for the daemon's log line $3
# and for one more finished file, then heal it and wait until every file has arrived
fault() { # MODE SEEN_REGEX LOG_TEXT
	local s0 f0 mode=$1 re=$2 txt=$3
	s0=$(samples)
	f0=$(finished)
	recv_mode "$1"
	wait_for 60 "the receiver answering '$mode'" eval '[ "$(seen "$re")" -gt 0 ]'
	wait_for 60 "the daemon logging '$txt'" eval '[ "$(logged "$txt")" -gt 0 ]'
	wait_for 60 "a file finished during '$mode'" eval '[ "$(finished)" -gt "$f0" ]'
	status_refresh
	[ "$(samples)" -gt "$s0" ] || fail "sampling stopped during '$1' ($s0 -> $(samples))"
	recv_mode ok
	wait_for 90 "every finished file delivered after '$1'" caught_up
	echo "fault '$1': ok ($(finished) files, $(received) delivered, samples $s0 -> $(samples))"
}
# 1. the receiver is down at start: attempts fail (connect), files wait in the spool
wait_for 60 "two files finished" eval '[ "$(finished)" -ge 2 ]'
wait_for 30 "a failed connection logged" eval '[ "$(logged "(connect")" -gt 0 ]'
[ "$(ls "$OUT/spool/default/"*.entry | wc -l)" -ge 1 ] || fail "nothing in the spool"
receiver_up
wait_for 90 "every finished file delivered once the receiver is up" caught_up
echo "receiver down at start: ok ($(received) delivered)"
# what arrived is what Pyroscope takes: the request with most samples decodes with
# Grafana's parser and its labels snapshot names every sample's context (OTLP: it keeps the
# dictionary's rules)
# (the request whose profile is largest: beside other tests a chunk may hold few samples)
last=$(ls -S "$RECV"/req-[0-9]*/jfr "$RECV"/req-[0-9]*/otlp 2>/dev/null | head -1)
last=${last%/*}
if [ "$UPLOAD_FORMAT" = otlp ]; then
	[ -f "$last/otlp.txt" ] || otlp_decode "$last/otlp" "$last/otlp.txt"
	$CHECK check "$last/otlp.txt" || fail "$last/otlp breaks the dictionary's rules"
else
	check_jfr_request "$last" 50
fi
# 2.-5. faults while running
fault 500 '^500$' "HTTP 500"
# 429 with Retry-After 2: the next attempt waits 2 s although retry-min is 200 ms
recv_mode 429 2
wait_for 60 "a 429 answered" eval '[ "$(seen 429)" -gt 0 ]'
t429=$(awk '$3 == "429" { print $2; exit }' "$RECV/log")
n429=$(awk '$3 == "429" { print $1; exit }' "$RECV/log")
wait_for 30 "an attempt after the 429" eval '[ "$(awk -v n="$n429" '"'"'$1 > n'"'"' "$RECV/log" | wc -l)" -gt 0 ]'
tnext=$(awk -v n="$n429" '$1 > n { print $2; exit }' "$RECV/log")
python3 -c "import sys; d=$tnext-$t429; print('after a 429 with Retry-After: 2 the next attempt came %.2f s later' % d); sys.exit(0 if d >= 1.9 else 1)" ||
	fail "Retry-After not honoured"
grep -q "Retry-After" "$DLOG" || fail "the Retry-After wait is not logged"
recv_mode ok
wait_for 90 "every finished file delivered after the 429s" caught_up
fault hang '^hang$' "(timeout"
fault close '^close$' "(network"
# the metrics endpoint counts the deliveries and the failed attempts by outcome
MURL=$(grep -o 'http://127.0.0.1:[0-9]*/metrics' "$DLOG" | head -1)
[ -n "$MURL" ] || fail "no metrics address in the log"
mget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(int(d.get(sys.argv[2], -1)))' "$TMP/m.json" "$1"; }
# every file finished by now (files go on finishing every 2 s meanwhile: a moving target is
# reached only when an upload takes less than a rotation, which a loaded machine does not give)
finished_now=$(finished)
delivered_counted() {
	python3 "$(dirname "$0")/prom_check.py" scrape "$MURL" >"$TMP/m.json" || return 1
	[ "$(mget 'ctxprof_upload_success_total{target="default"}')" -ge "$finished_now" ]
}
wait_for 30 "ctxprof_upload_success_total counting every delivered file ($finished_now)" delivered_counted
for o in timeout network http_retry; do
	n=$(mget "ctxprof_upload_failures_total{target=\"default\",outcome=\"$o\"}")
	[ "$n" -gt 0 ] || { cat "$TMP/m.json"; fail "ctxprof_upload_failures_total outcome=$o is $n after that fault"; }
done
[ "$(mget 'ctxprof_upload_dropped_total{target="default",reason="spool_full"}')" = 0 ] ||
	fail "metrics show a spool_full drop"
echo "metrics: $(mget 'ctxprof_upload_success_total{target="default"}') uploads counted, failures by outcome present"
# SIGTERM: the last file is delivered within stop-grace, nothing dropped, nothing left
stop_daemon
refresh_hashes
all_finished_received || fail "a finished file was not delivered at SIGTERM"
no_duplicates
grep "upload default: spooled" "$DLOG" | tail -1
grep "upload default: spooled" "$DLOG" | tail -1 | grep -q "dropped: 0, left in the spool 0 " ||
	fail "the final counters show drops or a spool left"
# the labels snapshots stay beside their recordings (the output directory's, for Pyroscope
# users who collect files; retention deletes them together): one per finished file
for f in "$OUT"/ctxprof-*.jfr; do
	[ -e "$f.labels.pb" ] || fail "no labels snapshot beside $f" # empty: a file without labelled samples
done
oracle_verdict
echo "PASS: $(finished) files, all delivered once through every fault ($UPLOAD_FORMAT)"
