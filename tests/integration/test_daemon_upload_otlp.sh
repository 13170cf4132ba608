#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel, long
# [upload] format = otlp: the daemon converts each finished JFR file to one gzip'd OTLP
# ExportProfilesServiceRequest and POSTs it to URL/v1development/profiles through the same
# spool and backoff as Pyroscope uploads. Every body decodes with protoc against the
# UPSTREAM opentelemetry-proto files and keeps the dictionary's rules, its resource is named
# by the application (group-by = none; per service: test_daemon_upload_series_host.sh), and
# the samples of all requests add up to those of all finished files
# (`ctxprof report --format collapsed`); a 500 is retried (nothing lost); a partial success
# (rejected profiles in a 2xx answer) is counted (ctxprof_upload_rejected_total), logged,
# and not retried.
. "$(dirname "$0")/daemon_lib.sh"
. "$(dirname "$0")/upload_lib.sh"
. "$(dirname "$0")/otlp_lib.sh"
trap 'stop_receiver; cleanup' EXIT
start_receiver
cat >"$TMP/ctxprof.conf" <<CONF
[targets]
mode = selectors
cgroup = $CGSEL
[output]
directory = $OUT
chunk-period = 500ms
rotate-period = 1s
[daemon]
status-file = $ST
[metrics]
listen = 127.0.0.1:0
[upload]
url = http://127.0.0.1:$PORT
format = otlp
application = otlp-test-service-with-a-long-name
group-by = none
timeout = 2s
retry-min = 100ms
retry-max = 400ms
stop-grace = 10s
CONF
finished() { ls "$OUT"/ctxprof-*.jfr 2>/dev/null | wc -l; }
otlp_received() { ls "$RECV"/req-[0-9]*/otlp 2>/dev/null | wc -l; }
spawn "$WL/wl_attrib" long 0 1 >/dev/null # one busy thread: a sample source, no more
start_daemon --config "$TMP/ctxprof.conf"
wait_for 60 "two OTLP requests received" eval '[ "$(otlp_received)" -ge 2 ]'
# a failing receiver: retried, nothing lost
recv_mode 500
wait_for 60 "a 500 answered" eval '[ "$(seen "^500$")" -gt 0 ]'
recv_mode ok
# a partial success: counted, logged, not sent again
recv_mode partial 3 some profiles are too old
wait_for 60 "a partial success answered" eval '[ "$(seen "^partial")" -gt 0 ]'
recv_mode ok
wait_for 30 "the partial success logged" grep -q "3 profiles rejected (partial success: some profiles are too old)" "$DLOG"
f_stop=$(finished)
wait_for 60 "a file finished after the partial success" eval '[ "$(finished)" -gt "$f_stop" ]'
MURL=$(grep -o 'http://127.0.0.1:[0-9]*/metrics' "$DLOG" | head -1)
python3 "$(dirname "$0")/prom_check.py" scrape "$MURL" >"$TMP/m.json" || fail "metrics scrape"
rej=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1])).get(sys.argv[2], -1)))' "$TMP/m.json" 'ctxprof_upload_rejected_total{target="default"}')
[ "$rej" = 3 ] || fail "ctxprof_upload_rejected_total is $rej, 3 expected"
stop_daemon
line=$(grep "upload default: spooled" "$DLOG" | tail -1)
echo "$line"
echo "$line" | grep -q "dropped: 0, left in the spool 0 " || fail "drops or a spool left at exit"
# every request decodes against the upstream schema; their samples are the files'; each
# resource is named by the application (a file of a chunk in which the workload was not
# sampled, beside other tests, is a request with no resource to name)
n=0 empty=0
for d in "$RECV"/req-[0-9]*; do
	[ -f "$d/otlp" ] || continue
	n=$((n + 1))
	otlp_decode "$d/otlp" "$d/otlp.txt"
	$CHECK check "$d/otlp.txt" || fail "$d/otlp breaks the dictionary's rules"
	if ! grep -q '^resource_profiles' "$d/otlp.txt"; then
		empty=$((empty + 1))
		continue
	fi
	grep -q 'string_value: "otlp-test-service-with-a-long-name"' "$d/otlp.txt" || fail "$d: the resource is not named by the application"
done
sent=$(otlp_sent_samples)
wrote=$(written_samples)
echo "$n OTLP requests ($empty without a sample), $sent samples; $(finished) files, $wrote samples"
[ "$empty" -lt "$n" ] || fail "no request carries a profile"
[ "$sent" -gt 0 ] && [ "$sent" = "$wrote" ] || fail "the requests carry $sent samples, the files $wrote"
echo "PASS: the daemon uploads OTLP (upstream-decodable, every sample once, 500 retried, partial success counted)"
