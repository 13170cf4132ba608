#!/bin/bash
# ctxprof daemon crash recovery: a daemon killed with SIGKILL leaves NAME.jfr.part behind,
# possibly with a partial chunk at its end (killed inside the append). The next daemon
# started on the directory cuts such a file back to its complete chunks and renames it to
# NAME.jfr (readable by the JDK, counted by retention), deletes a .part without one complete
# chunk, and leaves files whose names it did not make alone.
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
good=$(stat -c %s "$P")
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
grep -q "recovered 1 recordings left in progress (3000 bytes .*removed 1" "$DLOG" ||
	{ cat "$DLOG"; fail "no recovery line in the log"; }
for f in "$OUT"/ctxprof-*.jfr; do jfr_ok "$f"; done
echo "recovered $F: $good bytes, $n samples; partial chunk cut, empty .part removed"
kill $A
echo "PASS: daemon crash recovery"
