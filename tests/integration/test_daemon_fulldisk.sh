#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# ctxprof daemon on a full disk: the output directory is a small tmpfs that fills up while
# the daemon records. Chunks that cannot be appended are lost and logged, the daemon keeps
# running and sampling, the file keeps every complete chunk (the JDK reads it), writing
# resumes once there is space again, and SIGTERM still finishes the file and exits 0. On a
# disk where not even one chunk fits, rotations leave no empty .jfr behind; and a
# retain-size below one file's size keeps the newest recording.
. "$(dirname "$0")/daemon_lib.sh"
command -v mount >/dev/null || skip "no mount"
SMALL=$TMP/small
mkdir -p "$SMALL"
mount -t tmpfs -o size=256k ctxprof-full "$SMALL" || skip "cannot mount a tmpfs"
trap '[ -n "$DPID" ] && kill -KILL "$DPID" 2>/dev/null; wait 2>/dev/null; umount -l "$SMALL"; cleanup' EXIT
OUT=$SMALL/out
# leave about 40 KiB: a few chunks of the busy workload fit, then the disk is full
head -c $((216 * 1024)) /dev/zero >"$SMALL/filler"

spawn "$WL/wl_attrib" long 0 1 >/dev/null # one busy thread: a sample source, no more
A=$SPAWNED
start_daemon --mode selectors --cgroup "$CGSEL" --chunk-period 300ms --rotate-period 1h
disk_full() { grep -q "writing a chunk to .* failed: No space left on device" "$DLOG"; }
wait_for 10 "a failed chunk logged (the disk full)" disk_full
disk_full || { cat "$DLOG"; df -k "$SMALL"; fail "the disk never filled (no failed chunk logged)"; }
status_refresh # the daemon runs on after the failure
kill -0 "$DPID" || fail "the daemon died on a full disk"
P=$(ls "$OUT"/ctxprof-*.jfr.part)
[ -n "$P" ] || fail "no recording in progress"
cp "$P" "$TMP/full.jfr" # its complete chunks: the JDK reads the file as it is on the full disk
jfr_ok "$TMP/full.jfr"
before=$(jfr summary "$TMP/full.jfr" | sed -n 's/^ *Chunks: *\([0-9]*\).*/\1/p')
echo "chunks before the disk filled up: $before"
[ "${before:-0}" -ge 1 ] || fail "no complete chunk before the disk filled up"

rm "$SMALL/filler" # space again
wait_for 10 "'writing to ... again' logged" grep -q "writing to .* again" "$DLOG"
grep -q "writing to .* again" "$DLOG" || { cat "$DLOG"; fail "writing did not resume"; }
wait_for 10 "a chunk appended after space came back" chunks_over "$P" "$before"
stop_daemon # exit 0: the last chunk was written; the lost ones were logged when they failed
F=${P%.part}
[ -f "$F" ] || fail "$F not finished"
jfr_ok "$F"
after=$(jfr summary "$F" | sed -n 's/^ *Chunks: *\([0-9]*\).*/\1/p')
echo "chunks in the finished file: $after"
[ "$after" -gt "$before" ] || fail "no chunk written after space came back ($after <= $before)"
lost=$(grep -o '([0-9]* chunks lost so far' "$DLOG" | tail -1)
echo "daemon log: $lost"
kill $A

# A disk so full that not one chunk fits, across rotations: a file without a complete chunk
# is removed, never left as a 0-byte NAME.jfr the JDK rejects (14 of 26 files were).
NOCG=/ctxprof-fulldisk-none-$$ # no targets: the chunks still carry metadata and statistics
head -c $((256 * 1024)) /dev/zero >"$SMALL/filler" 2>/dev/null
OUT=$SMALL/out2
: >"$DLOG"
start_daemon --mode selectors --cgroup "$NOCG" --chunk-period 300ms --rotate-period 1s
rotations() { grep -cE 'has no complete chunk|wrote .*: 0 chunks' "$DLOG"; }
for _ in $(seq 150); do
	[ "$(rotations)" -ge 3 ] && break
	sleep 0.1
done
rm -f "$SMALL/filler" # the last chunk fits: SIGTERM exits 0
stop_daemon
empty=$(find "$OUT" -name 'ctxprof-*.jfr' -size 0 | wc -l)
echo "rotations on a full disk: $(rotations), $empty empty .jfr left," \
	"$(grep -c 'has no complete chunk' "$DLOG") files without a chunk removed"
[ "$empty" = 0 ] || { ls -la "$OUT"; fail "$empty empty .jfr files left on the full disk"; }
[ "$(rotations)" -ge 3 ] || { cat "$DLOG"; fail "fewer than 3 rotations on the full disk"; }

# retain-size smaller than one recording: the size limit deletes older files, never the one
# just finished (it used to delete every file, leaving no recording at all)
OUT=$SMALL/out3
: >"$DLOG"
start_daemon --mode selectors --cgroup "$NOCG" --chunk-period 300ms --rotate-period 1s \
	--retain-size 1K
for _ in $(seq 150); do
	[ "$(grep -c 'retention: deleted' "$DLOG")" -ge 2 ] && break
	sleep 0.1
done
grep -q 'retention: deleted' "$DLOG" || { cat "$DLOG"; fail "retention never deleted a file"; }
n=$(find "$OUT" -name 'ctxprof-*.jfr' | wc -l)
stop_daemon
left=$(find "$OUT" -name 'ctxprof-*.jfr')
echo "retain-size 1K: $n finished file(s) while running, after the stop: $(echo $left)"
[ "$n" -ge 1 ] || fail "retention left no finished recording while running"
[ "$(echo "$left" | wc -w)" = 1 ] || fail "want exactly the newest recording after the stop: $left"
jfr_ok $left
echo "PASS: daemon on a full disk"
