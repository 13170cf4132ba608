#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel, long
# Uploads never lose the spool to an auth error (issue 19 item 7). A backend that rotated
# its token (401), or answers 403 or 404, pauses the upload target: every profile stays in
# the spool (none deleted, the pause logged once, shown by the status file and the metrics);
# once the credentials file is fixed and the daemon gets SIGHUP with its configuration text
# unchanged, every profile arrives once, byte for byte. Only an answer that condemns one
# profile (400, 413, 422) drops it: exactly that one, counted and logged, the rest delivered.
# The default timeout (30 s): every fault here is an answer, none a hang.
. "$(dirname "$0")/daemon_lib.sh"
. "$(dirname "$0")/upload_lib.sh"
trap 'stop_receiver; cleanup' EXIT
start_receiver
AUTH=$TMP/auth.hdr
set_token() { (umask 077 && echo "Authorization: Bearer $1" >"$AUTH.tmp") && mv "$AUTH.tmp" "$AUTH"; }
set_token tok-0
recv_mode auth 401 tok-0
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
application = ctxprof-test
tags = env=test
header-file = $AUTH
retry-min = 100ms
retry-max = 400ms
stop-grace = 10s
CONF
sha256sum "$TMP/ctxprof.conf" >"$TMP/conf.sum"
SPOOL=$OUT/spool/default
entries() { ls "$SPOOL"/*.entry 2>/dev/null | wc -l; }
finished() { ls "$OUT"/ctxprof-*.jfr 2>/dev/null | wc -l; }
logged() { grep -c -- "$1" "$DLOG"; }
# every file listed in $TMP/expect (those finished at a point of the test) has arrived: the
# daemon keeps finishing files, so "all of them" would be a race under load
expected_received() {
	refresh_hashes
	expected_hashes | grep -qvxFf "$TMP/rh" && return 1
	return 0
}
# the hashes of the files listed in $TMP/expect, one per line
expected_hashes() {
	local ex
	mapfile -t ex <"$TMP/expect"
	finished_hashes "${ex[@]}"
}
ustat() { grep '^upload name=default ' "$ST" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
MURL=
metrics() {
	[ -n "$MURL" ] || MURL=$(grep -o 'http://127.0.0.1:[0-9]*/metrics' "$DLOG" | head -1)
	python3 "$(dirname "$0")/prom_check.py" scrape "$MURL" >"$TMP/m.json" || fail "metrics scrape"
}
mget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(int(d.get(sys.argv[2], -1)))' "$TMP/m.json" "$1"; }
spawn "$WL/wl_attrib" long 0 1 >/dev/null # one busy thread: a sample source, no more
start_daemon --config "$TMP/ctxprof.conf"
wait_for 60 "a first profile delivered" eval '[ "$(received)" -ge 1 ]'
# 1. the backend denies access with CODE (its token was rotated to tok-CODE); the daemon
# keeps every profile, then delivers them all after the credentials file is fixed and SIGHUP
denied_phase() { # CODE RELOADS_SO_FAR
	local code=$1 p0 l0 kept s0
	p0=$(logged "denies access")
	s0=$(seen "^denied$")
	recv_mode auth "$code" "tok-$code"
	wait_for 60 "the first HTTP $code" eval '[ "$(seen "^denied$")" -gt "$s0" ]'
	wait_for 60 "two profiles in the spool while denied" eval '[ "$(entries)" -ge 2 ]'
	ls "$SPOOL"/*.entry >"$TMP/kept"
	kept=$(wc -l <"$TMP/kept")
	wait_for 60 "four more denied attempts and two more profiles" \
		eval '[ "$(seen "^denied$")" -ge $((s0 + 5)) ] && [ "$(entries)" -ge $((kept + 2)) ]'
	while read -r e; do
		[ -e "$e" ] || fail "HTTP $code deleted $e from the spool"
	done <"$TMP/kept"
	[ "$(($(logged "denies access") - p0))" = 1 ] ||
		{ grep "denies access" "$DLOG"; fail "the pause on HTTP $code was not logged exactly once"; }
	[ "$(logged "refused .* dropped")" = 0 ] || fail "a profile was dropped on HTTP $code"
	status_refresh
	[ "$(ustat state)" = paused ] && [ "$(ustat http_status)" = "$code" ] ||
		fail "status: $(grep '^upload ' "$ST"), state=paused http_status=$code expected"
	"$CTXPROF" status --status-file "$ST" | grep "upload default: paused (last HTTP status $code)" ||
		fail "ctxprof status does not show the pause"
	metrics
	[ "$(mget 'ctxprof_upload_state{target="default",state="paused"}')" = 1 ] ||
		fail "metrics: ctxprof_upload_state paused is not 1"
	[ "$(mget 'ctxprof_upload_failures_total{target="default",outcome="http_denied"}')" -gt 0 ] ||
		fail "metrics: no http_denied failures counted"
	[ "$(mget 'ctxprof_upload_dropped_total{target="default",reason="refused"}')" = 0 ] ||
		fail "metrics: refused drops on HTTP $code"
	echo "HTTP $code: paused with $(entries) profiles kept after $(($(seen "^denied$") - s0)) denied attempts, logged once"
	# the rotated token, the same configuration text, SIGHUP
	set_token "tok-$code"
	sha256sum -c --quiet "$TMP/conf.sum" || fail "the configuration text changed"
	kill -HUP "$DPID"
	wait_for 30 "the credentials re-read" eval "[ \"\$(logged 'credentials re-read')\" -ge $2 ]"
	ls "$OUT"/ctxprof-*.jfr >"$TMP/expect"
	wait_for 90 "every file finished until the fix delivered after it" expected_received
	no_duplicates
	status_refresh
	[ "$(ustat state)" = ok ] || fail "status: $(grep '^upload ' "$ST") after the fix"
	echo "HTTP $code: every profile delivered once after SIGHUP ($(received) in all)"
}
denied_phase 401 1
denied_phase 403 2
denied_phase 404 3
metrics
[ "$(mget 'ctxprof_upload_pauses_total{target="default"}')" = 3 ] || fail "metrics: pauses_total is not 3"
[ "$(mget 'ctxprof_upload_credential_reloads_total{target="default"}')" = 3 ] ||
	fail "metrics: credential_reloads_total is not 3"
# 2. an answer that condemns the profile sent: that one is dropped (counted, logged), the
# others are delivered
recv_mode ok
touch "$TMP/refused.sums"
missing_only_refused() {
	refresh_hashes
	expected_hashes | grep -vxFf "$TMP/rh" | grep -qvxFf "$TMP/refused.sums" && return 1
	return 0
}
n=0
for code in 400 413 422; do
	n=$((n + 1))
	f0=$(finished)
	wait_for 60 "a file finished" eval '[ "$(finished)" -gt "$f0" ]'
	recv_mode refuse-once "$code"
	wait_for 60 "a profile refused with $code" eval '[ "$(ls "$RECV" | grep -c "^refused-[0-9]*$")" = $n ]'
	r=$RECV/$(ls "$RECV" | grep "^refused-[0-9]*$" | sort -t- -k2 -n | tail -1)
	h=$(sha256sum <"$r/jfr" | cut -d' ' -f1)
	f0=$(finished)
	wait_for 60 "a file finished after the refusal" eval '[ "$(finished)" -gt "$f0" ]'
	echo "$h" >>"$TMP/refused.sums"
	ls "$OUT"/ctxprof-*.jfr >"$TMP/expect"
	wait_for 90 "every file but the refused ones delivered" missing_only_refused
	grep -qx "$h" "$TMP/rh" && fail "the profile refused with $code was delivered later"
	[ "$(logged "(HTTP $code: .*): dropped")" = 1 ] || fail "the $code refusal is not logged once"
	metrics
	[ "$(mget 'ctxprof_upload_dropped_total{target="default",reason="refused"}')" = $n ] ||
		fail "metrics: $n refused drops expected"
	echo "HTTP $code: exactly that profile dropped (counted $n), the others delivered"
done
no_duplicates
stop_daemon
line=$(grep "upload default: spooled" "$DLOG" | tail -1)
echo "$line"
echo "$line" | grep -q "refused=3" || fail "the exit counters do not show 3 refused"
echo "$line" | grep -q "http_denied=" || fail "the exit counters do not show the denied attempts"
echo "PASS: 401/403/404 keep the spool and deliver every profile once after SIGHUP; 400/413/422 drop only that profile"
