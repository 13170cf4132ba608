#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# record --upload URL: a one-off capture is sent to a real HTTP receiver (Pyroscope's
# /ingest shape) after it is written: JFR with the labels snapshot (Grafana's JFR parser
# reads it, every sample's context is named), pprof that `go tool pprof` reads with the
# labels; OTLP gzip'd to /v1development/profiles (a partial success reported); a refused
# upload (400, 413, 422), a denied one (401, 404) and a receiver that is down exit 3 and
# keep the file.
. "$(dirname "$0")/sampler_lib.sh"
. "$(dirname "$0")/upload_lib.sh"
command -v go >/dev/null || need_oracle "go tool pprof (golang-go, make deps-test)"
trap 'stop_receiver; rm -rf "$TMP"' EXIT
start_receiver
U="--upload http://127.0.0.1:$PORT --upload-app ctxprof-test --upload-tags env=test,case=record"
# JFR + labels
record_ok 30 -F 499 -o "$TMP/a.jfr" $U -- "$WL/wl_attrib" long 2 2
grep -q "uploaded $TMP/a.jfr" "$TMP/e" || fail "record did not report the upload"
[ "$(received)" = 1 ] || fail "$(received) requests received, 1 expected"
cmp "$TMP/a.jfr" "$RECV/req-1/jfr" || fail "the JFR part is not the file"
cmp "$TMP/a.jfr.labels.pb" "$RECV/req-1/labels" || fail "the labels part is not FILE.labels.pb"
check_jfr_request "$RECV/req-1" 100
# pprof: one `profile` part, labels as sample labels
record_ok 30 -F 499 -o "$TMP/p.pb.gz" $U -- "$WL/wl_attrib" long 2 2
[ "$(received)" = 2 ] || fail "$(received) requests received, 2 expected"
grep -q 'format=pprof' "$RECV/req-2/query" || fail "pprof query: $(cat "$RECV/req-2/query")"
cmp "$TMP/p.pb.gz" "$RECV/req-2/profile" || fail "the profile part is not the file"
go tool pprof -raw -tagfocus phase=A "$RECV/req-2/profile" >"$TMP/raw" 2>"$TMP/raw.err" ||
	{ cat "$TMP/raw.err"; fail "go tool pprof cannot read the uploaded profile"; }
grep -q work_A "$TMP/raw" || fail "no phase=A samples in work_A in the uploaded pprof"
# OTLP: the file gzip'd to /v1development/profiles as protobuf; a partial success is
# reported and the upload counts as done
record_ok 30 -F 499 -o "$TMP/o.otlp" $U -- "$WL/wl_attrib" long 2 2
d=$RECV/$(ls "$RECV" | grep "^req-[0-9]*$" | sort -t- -k2 -n | tail -1)
[ -f "$d/otlp" ] || fail "no OTLP request received"
grep -qx '/v1development/profiles' "$d/path" || fail "OTLP path: $(cat "$d/path")"
cmp "$TMP/o.otlp" "$d/otlp" || fail "the OTLP body (gunzipped) is not the file"
grep -qi '^Content-Type: application/x-protobuf' "$d/headers" || fail "no protobuf content type"
grep -qi '^Content-Encoding: gzip' "$d/headers" || fail "the OTLP body is not gzip'd"
recv_mode partial 2 too old
record_ok 30 -F 499 -o "$TMP/o2.otlp" $U -- "$WL/wl_attrib" long 2 1
grep -q "rejected 2 profiles of $TMP/o2.otlp (partial success: too old)" "$TMP/e" ||
	{ cat "$TMP/e"; fail "the partial success is not reported"; }
recv_mode ok
# refused for good: exit 3, one attempt, file kept
recv_mode 400
n=$(seen 400)
timeout 60 "$CTXPROF" record -q -d 1 -o "$TMP/r.jfr" $U -- "$WL/wl_attrib" long 2 1 >/dev/null 2>"$TMP/e"
rc=$?
cat "$TMP/e"
[ $rc = 3 ] || fail "a refused upload exits $rc, 3 expected"
grep -q FAILED "$TMP/e" || fail "the refusal is not reported"
[ -s "$TMP/r.jfr" ] || fail "the file was not kept"
[ $(($(seen 400) - n)) = 1 ] || fail "a 400 was retried"
# the daemon's classification: 401/403/404 deny access (not retried: a one-off command's
# credentials do not change; said so), 413/422 condemn the profile like 400; the file is kept
for code in 401 404 413 422; do
	recv_mode "$code"
	n=$(seen "^$code$")
	timeout 60 "$CTXPROF" record -q -d 1 -o "$TMP/c$code.jfr" $U -- "$WL/wl_attrib" long 2 1 >/dev/null 2>"$TMP/e"
	rc=$?
	[ $rc = 3 ] || { cat "$TMP/e"; fail "HTTP $code exits $rc, 3 expected"; }
	[ $(($(seen "^$code$") - n)) = 1 ] || fail "HTTP $code was retried"
	[ -s "$TMP/c$code.jfr" ] || fail "the file was not kept after HTTP $code"
	case $code in
	40[14]) grep -q "denies access" "$TMP/e" || { cat "$TMP/e"; fail "HTTP $code not reported as denied access"; } ;;
	*) grep -q "refused this profile" "$TMP/e" || { cat "$TMP/e"; fail "HTTP $code not reported as a refused profile"; } ;;
	esac
done
# receiver down: retried, then exit 3
stop_receiver
timeout 60 "$CTXPROF" record -q -d 1 -o "$TMP/d.jfr" $U -- "$WL/wl_attrib" long 2 1 >/dev/null 2>"$TMP/e"
rc=$?
cat "$TMP/e"
[ $rc = 3 ] || fail "an upload to a receiver that is down exits $rc, 3 expected"
[ "$(grep -c 'retrying' "$TMP/e")" = 2 ] || fail "not retried twice"
[ -s "$TMP/d.jfr" ] || fail "the file was not kept"
oracle_verdict
echo "PASS: record --upload (jfr + labels, pprof, refused, receiver down)"
