#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# The upload spool: profiles the backend has not accepted yet survive a SIGKILL of the
# daemon (every one is delivered by the next daemon, and so is the recording that was in
# progress, once recovered), also when the daemon is killed while a request hangs (what
# finished meanwhile was spooled during the request); and a spool over spool-size drops the
# oldest first, counted and logged, while the newest are delivered once the backend heals;
# none arrives twice. test_daemon_upload_otlp_spool.sh runs it with UPLOAD_FORMAT=otlp (the
# OTLP protocol, upload_lib.sh: each body the file converted, compared decoded).
. "$(dirname "$0")/daemon_lib.sh"
. "$(dirname "$0")/upload_lib.sh"
trap 'stop_receiver; cleanup' EXIT
start_receiver
conf() { # SPOOL_SIZE
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
[upload]
url = http://127.0.0.1:$PORT
application = ctxprof-test
tags = env=test
timeout = 2s
retry-min = 100ms
retry-max = 300ms
spool-size = $1
stop-grace = 10s
$(upload_format_conf)
CONF
}
SPOOL=$OUT/spool/default
# phase 3's spool-size in bytes: about three JFR profiles, or five OTLP ones (gzip'd: ~800 B)
SMALL=102400
[ "$UPLOAD_FORMAT" != otlp ] || SMALL=4096
entries() { ls "$SPOOL"/*.entry 2>/dev/null | wc -l; }
finished() { ls "$OUT"/ctxprof-*.jfr 2>/dev/null | wc -l; }
caught_up() { refresh_hashes; all_finished_received; }
spawn "$WL/wl_attrib" long 0 1 >/dev/null # one busy thread: a sample source, no more
# 1. backend failing, spool filling, SIGKILL
recv_mode 500
conf 1G
start_daemon --config "$TMP/ctxprof.conf"
wait_for 60 "four profiles waiting in the spool" eval '[ "$(entries)" -ge 4 ]'
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
DPID=
n=$(entries)
ls "$OUT"/ctxprof-*.jfr >"$TMP/before-kill"
[ -z "$(ls "$SPOOL"/*.tmp 2>/dev/null)" ] || echo "note: a .tmp left by the kill (removed at the next start)"
echo "SIGKILL with $n profiles in the spool, $(wc -l <"$TMP/before-kill") files finished"
[ "$(received)" = 0 ] || fail "something was accepted while the receiver answered 500"
# 2. restart, backend healthy: every profile finished before the kill arrives
recv_mode ok
start_daemon --config "$TMP/ctxprof.conf"
grep -q "profiles (.* bytes) in the spool from before: sending" "$DLOG" || fail "the spool was not taken over"
grep "left in progress" "$DLOG" || true
before_kill_received() {
	refresh_hashes
	while read -r f; do grep -qx "$(file_hash "$f")" "$TMP/rh" || return 1; done <"$TMP/before-kill"
}
wait_for 60 "every profile finished before the SIGKILL delivered" before_kill_received
# the recording in progress at the SIGKILL, recovered by the new daemon, is delivered too
wait_for 60 "every file in $OUT delivered (the recovered one too)" caught_up
wait_for 60 "the spool drained" eval '[ "$(entries)" = 0 ]'
for f in "$OUT"/ctxprof-*.jfr; do
	[ ! -e "$f.part.labels.pb" ] && [ ! -e "$f.labels.pb.part" ] ||
		fail "a labels snapshot .part of $f was left after recovery"
done
# every file finished before the kill has its snapshot (the recovered one may lack it: the
# snapshot is written after each chunk, and the kill can fall between the two)
while read -r f; do
	[ -s "$f.labels.pb" ] || fail "no labels snapshot beside $f"
done <"$TMP/before-kill"
stop_daemon
echo "restart: all $(wc -l <"$TMP/before-kill") profiles finished before the kill delivered"
# 3. a spool of $SMALL bytes (a few profiles), backend failing: the oldest are dropped
recv_mode 500
conf "$SMALL"
ls "$OUT"/ctxprof-*.jfr >"$TMP/phase2-old"
r0=$(received)
start_daemon --config "$TMP/ctxprof.conf"
wait_for 60 "the spool over its limit" eval 'grep -q "spool over spool-size" "$DLOG"'
wait_for 60 "eight files finished" eval '[ "$(($(finished) - $(wc -l <"$TMP/phase2-old")))" -ge 8 ]'
kept=$(entries)
[ "$(du -cb "$SPOOL"/*.entry | tail -1 | cut -f1)" -le "$SMALL" ] || [ "$kept" = 1 ] ||
	fail "the spool holds more than spool-size"
recv_mode ok
wait_for 60 "the spool drained" eval '[ "$(entries)" = 0 ]'
stop_daemon
line=$(grep "upload default: spooled" "$DLOG" | tail -1)
echo "$line"
dropped=$(echo "$line" | sed -n 's/.*spool_full=\([0-9]*\).*/\1/p')
[ "${dropped:-0}" -gt 0 ] || fail "no spool_full drops counted"
# what arrived in this phase is the newest profiles; every one not delivered is older than
# every one delivered
refresh_hashes
ls "$OUT"/ctxprof-*.jfr | grep -vxF -f "$TMP/phase2-old" | sort >"$TMP/phase2"
state=old
bad=0
while read -r f; do
	if grep -qx "$(file_hash "$f")" "$TMP/rh"; then
		state=new
	elif [ $state = new ]; then
		bad=$((bad + 1))
		echo "lost after a delivered one: $f"
	fi
done <"$TMP/phase2"
[ $bad = 0 ] || fail "a newer profile was dropped while an older one was delivered"
missing=$(while read -r f; do grep -qx "$(file_hash "$f")" "$TMP/rh" || echo x; done <"$TMP/phase2" | wc -l)
[ "$missing" -le "$dropped" ] || fail "$missing profiles missing, only $dropped drops counted"
echo "spool survives SIGKILL; over spool-size the $dropped oldest were dropped (counted), $(($(received) - r0)) newest delivered"
# 4. a backend that hangs for the whole (long) timeout: the files finished meanwhile are
# spooled while the request hangs, not after it, so a SIGKILL then loses none of them
conf 1G
sed -i 's/^timeout = .*/timeout = 60s/' "$TMP/ctxprof.conf"
recv_mode hang
ls "$OUT"/ctxprof-*.jfr >"$TMP/phase4-old"
start_daemon --config "$TMP/ctxprof.conf"
wait_for 30 "a request hanging" eval '[ "$(seen hang)" -gt 0 ]'
h0=$(seen hang)
# Killed at an instant when every file finished since the start is in the spool (the list
# taken then is what must arrive). A file that finishes while a request hangs is spooled at
# the request's next progress tick (about 1 s): a SIGKILL inside that window loses its upload
# (the file stays in the output directory), a known gap (docs/daemon.md, Uploads).
all_spooled() {
	ls "$OUT"/ctxprof-*.jfr | grep -vxF -f "$TMP/phase4-old" >"$TMP/phase4-kill"
	[ "$(entries)" -ge 3 ] && [ "$(entries)" -ge "$(wc -l <"$TMP/phase4-kill")" ]
}
wait_for 30 "three profiles, all those finished since the start, spooled during one hanging request" all_spooled
[ "$(seen hang)" = "$h0" ] || fail "the hanging request ended (timeout 60s): not the case under test"
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
DPID=
echo "SIGKILL during a hanging request: $(entries) profiles in the spool, $(wc -l <"$TMP/phase4-kill") finished since the start when every one was spooled"
recv_mode ok
start_daemon --config "$TMP/ctxprof.conf"
phase4_received() {
	refresh_hashes
	while read -r f; do grep -qx "$(file_hash "$f")" "$TMP/rh" || return 1; done <"$TMP/phase4-kill"
}
wait_for 60 "every profile finished during the hang delivered after the restart" phase4_received
stop_daemon
no_duplicates
echo "PASS: spool survives SIGKILL (also during a hanging request); over spool-size the oldest are dropped first, counted; none twice ($UPLOAD_FORMAT)"
