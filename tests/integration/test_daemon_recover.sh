#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# ctxprof daemon crash recovery: a daemon killed with SIGKILL leaves NAME.jfr.part behind,
# possibly with a partial chunk at its end (killed inside the append). The next daemon
# started on the directory cuts such a file back to its complete chunks and renames it to
# NAME.jfr (readable by the JDK, counted by retention), deletes a .part without one complete
# chunk, and leaves files whose names it did not make alone; a daemon started on a directory
# another daemon writes to (the directory lock is taken) recovers nothing.
. "$(dirname "$0")/daemon_lib.sh"
spawn "$WL/wl_attrib" long 0 1 >/dev/null # one busy thread: a sample source, no more
A=$SPAWNED

start_daemon --mode selectors --cgroup "$CGSEL" --chunk-period 300ms
part_with_chunks() { P=$(ls "$OUT"/ctxprof-*.jfr.part 2>/dev/null | head -1) && chunks_over "$P" 1; }
wait_for 20 "a .jfr.part with 2 complete chunks" part_with_chunks
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
DPID=
P=$(ls "$OUT"/ctxprof-*.jfr.part)
[ -n "$P" ] && [ "$(echo "$P" | wc -l)" = 1 ] || fail "want one .part after SIGKILL, got: $(ls "$OUT")"
# the complete chunks (the kill itself may have landed inside an append)
read -r _ good < <(complete_chunks "$P")
[ "$good" -gt 0 ] || fail "the killed daemon wrote no chunk"
# a partial chunk: what a kill inside the append leaves (a chunk's first 3000 bytes)
head -c 3000 "$P" >>"$P"
cp "$P" "$TMP/broken.jfr"
if jfr summary "$TMP/broken.jfr" >"$TMP/broken.txt" 2>&1 && ! grep -qi 'error\|exception' "$TMP/broken.txt"; then
	fail "the JDK reads a file with a partial chunk at its end: this test proves nothing"
fi
# a .part of a daemon killed before its first chunk, and a file that is not ours
E="$OUT/ctxprof-vm-20200101T000000Z.jfr.part"
head -c 40 "$P" >"$E"
echo keep >"$OUT/notours.jfr.part"

start_daemon --mode selectors --cgroup "$CGSEL" --chunk-period 300ms
wait_for 10 "the recovery logged" grep -q 'recovered 1 recordings left in progress' "$DLOG"
stop_daemon
F=${P%.part}
[ -f "$F" ] || { ls -l "$OUT"; fail "$P was not renamed to $F"; }
[ "$(stat -c %s "$F")" = "$good" ] || fail "$F: $(stat -c %s "$F") bytes, want the $good complete"
jfr_ok "$F"
jfr print --json --events jdk.ExecutionSample "$F" >"$TMP/r.json" || fail "jfr print --json $F"
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["recording"]["events"]))' "$TMP/r.json")
[ "$n" -gt 0 ] || fail "no samples in the recovered file"
[ -e "$E" ] && fail "$E (no complete chunk) was kept"
[ -e "${E%.part}" ] && fail "$E (no complete chunk) was renamed"
[ "$(cat "$OUT/notours.jfr.part")" = keep ] || fail "a file that is not ours was touched"
cut=$(sed -n 's/.*recovered 1 recordings left in progress (\([0-9]*\) bytes .*removed 1 .*/\1/p' "$DLOG")
[ -n "$cut" ] && [ "$cut" -ge 3000 ] || { cat "$DLOG"; fail "no recovery line in the log"; }
jfr_ok_all "$OUT"/ctxprof-*.jfr
echo "recovered $F: $good bytes, $n samples; partial chunk cut, empty .part removed"

# a second daemon on a directory another daemon writes to leaves that one's file alone
start_daemon --mode selectors --cgroup "$CGSEL" --chunk-period 300ms
wait_for 10 "the first daemon's .jfr.part" eval 'ls "$OUT"/ctxprof-*.jfr.part >/dev/null 2>&1'
L=$(ls "$OUT"/ctxprof-*.jfr.part)
"$CTXPROF" daemon --directory "$OUT" --status-file "$TMP/st2" --mode selectors \
	--cgroup "$CGSEL/none" >"$TMP/d2.log" 2>&1 &
D2=$!
KIDS="$KIDS $D2"
wait_for 10 "the second daemon's status file" test -s "$TMP/st2"
grep -q "another ctxprof daemon writes to" "$TMP/d2.log" || { cat "$TMP/d2.log"; fail "no lock warning"; }
kill -TERM $D2
wait $D2
[ -f "$L" ] || fail "the second daemon recovered the first one's live file $L"
stop_daemon
jfr_ok "${L%.part}"
echo "a second daemon on the same directory left the live recording alone"
kill $A
echo "PASS: daemon crash recovery"
