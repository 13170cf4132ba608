#!/bin/bash
# ctxprof daemon crash recovery: a daemon killed with SIGKILL leaves NAME.jfr.part behind,
# possibly with a partial chunk at its end (killed inside the append). The next daemon
# started on the directory cuts such a file back to its complete chunks and renames it to
# NAME.jfr (readable by the JDK, counted by retention), deletes a .part without one complete
# chunk, and leaves files whose names it did not make alone; a daemon started on a directory
# another daemon writes to (the directory lock is taken) recovers nothing.
. "$(dirname "$0")/daemon_lib.sh"
"$WL/wl_attrib" long 0 2 >/dev/null &
A=$!
KIDS="$KIDS $A"

start_daemon --mode selectors --comm wl_attrib --chunk-period 300ms
sleep 2.5
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
DPID=
P=$(ls "$OUT"/ctxprof-*.jfr.part)
[ -n "$P" ] && [ "$(echo "$P" | wc -l)" = 1 ] || fail "want one .part after SIGKILL, got: $(ls "$OUT")"
# the complete chunks (the kill itself may have landed inside an append)
good=$(python3 -c 'import struct,sys
d=open(sys.argv[1],"rb").read(); off=0
while off+68 <= len(d) and d[off:off+4] == b"FLR\0":
    n=struct.unpack(">Q", d[off+8:off+16])[0]
    if n < 68 or off+n > len(d): break
    off += n
print(off)' "$P")
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

start_daemon --mode selectors --comm wl_attrib --chunk-period 300ms
sleep 1
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
for f in "$OUT"/ctxprof-*.jfr; do jfr_ok "$f"; done
echo "recovered $F: $good bytes, $n samples; partial chunk cut, empty .part removed"

# a second daemon on a directory another daemon writes to leaves that one's file alone
start_daemon --mode selectors --comm wl_attrib --chunk-period 300ms
sleep 1
L=$(ls "$OUT"/ctxprof-*.jfr.part)
"$CTXPROF" daemon --directory "$OUT" --status-file "$TMP/st2" --mode selectors --comm nomatch \
	>"$TMP/d2.log" 2>&1 &
D2=$!
KIDS="$KIDS $D2"
for _ in $(seq 100); do [ -s "$TMP/st2" ] && break; sleep 0.1; done
grep -q "another ctxprof daemon writes to" "$TMP/d2.log" || { cat "$TMP/d2.log"; fail "no lock warning"; }
kill -TERM $D2
wait $D2
[ -f "$L" ] || fail "the second daemon recovered the first one's live file $L"
stop_daemon
jfr_ok "${L%.part}"
echo "a second daemon on the same directory left the live recording alone"
kill $A
echo "PASS: daemon crash recovery"
