#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# ctxprof daemon output: settings from an INI file (inline comments), directory 0750, files
# 0640 named ctxprof-HOST-YYYYMMDDTHHMMSSZ.jfr, written as .jfr.part (every finished chunk
# readable while it grows) and renamed when rotated; rotation by period and by size;
# retention by total size deletes the oldest finished files; SIGTERM writes the last chunk,
# exits 0 and leaves no .part behind; every file passes `jfr summary` and `ctxprof report`
# and has its Pyroscope labels snapshot NAME.jfr.labels.pb beside it, matching its samples.
. "$(dirname "$0")/daemon_lib.sh"
spawn "$WL/wl_attrib" long 0 1 >/dev/null # one busy thread: a sample source, no more
A=$SPAWNED
cat >"$TMP/ctxprof.conf" <<CONF
[sampling]
frequency = 199           ; Hz per CPU
event = cpu-clock         ; or cycles
call-graph = fp           ; or dwarf
[targets]
mode = selectors
cgroup = $CGSEL/nomatch, $CGSEL ; two prefixes
[output]
directory = $OUT
chunk-period = 1s
rotate = period           ; period | size
rotate-period = 3s
retain-age = 7d
retain-size = 1G
split = host
[daemon]
log-level = debug
status-file = $ST
CONF
start_daemon --config "$TMP/ctxprof.conf"
# while the first file is open: a .part with finished chunks only
# (copied first, then looked at: the file is renamed every 3 s, sooner than a loaded host
# starts the Python that counts its chunks)
part_with_chunk() {
	P=$(ls "$OUT"/*.jfr.part 2>/dev/null | head -1) && cp "$P" "$TMP/snapshot.jfr" 2>/dev/null &&
		chunks_over "$TMP/snapshot.jfr" 0
}
wait_for 60 "a .jfr.part with a finished chunk" part_with_chunk
[ -n "$P" ] || fail "no .jfr.part while recording: $(ls -la "$OUT")"
jfr_ok "$TMP/snapshot.jfr"
# two files rotated (rotate-period 3s); the one open now is finished at SIGTERM
wait_for 30 "two files rotated" eval '[ "$(ls "$OUT"/*.jfr 2>/dev/null | wc -l)" -ge 2 ]'
stop_daemon
ls -la "$OUT"
[ "$(stat -c %a "$OUT")" = 750 ] || fail "directory mode $(stat -c %a "$OUT")"
ls "$OUT"/*.part 2>/dev/null && fail ".part left after SIGTERM"
n=0
for f in "$OUT"/*.jfr; do
	b=$(basename "$f")
	[[ $b =~ ^ctxprof-[A-Za-z0-9._-]+-[0-9]{8}T[0-9]{6}Z(-[0-9]+)?\.jfr$ ]] || fail "bad name $b"
	[ "$(stat -c %a "$f")" = 640 ] || fail "$b mode $(stat -c %a "$f")"
	"$CTXPROF" report "$f" >"$TMP/report.txt" || fail "ctxprof report $b failed"
	# Pyroscope's labels snapshot beside it, finished with it
	[ -f "$f.labels.pb" ] && [ "$(stat -c %a "$f.labels.pb")" = 640 ] ||
		fail "no $b.labels.pb (mode 640) beside $b"
	n=$((n + 1))
done
# the snapshot names the labels of every sample with context, as Pyroscope joins them
java -cp "$B/java" PyroCheck "$(ls "$OUT"/*.jfr | head -1)" "$(ls "$OUT"/*.jfr | head -1).labels.pb" ||
	fail "the daemon's labels snapshot does not match its samples"
# the JDK (slow to start) reads the first and the last (written at SIGTERM)
jfr_ok "$(ls "$OUT"/*.jfr | head -1)"
jfr_ok "$(ls "$OUT"/*.jfr | tail -1)"
[ "$n" -ge 3 ] || fail "$n files after ~10 s with rotate-period 3s (want >= 3)"
# names sort by start time and the last file has the end of the recording
first=$(ls "$OUT"/*.jfr | head -1)
grep -q 'key = "phase"' <(jfr print --events jdk.ExecutionSample "$first") || fail "no context in $first"
echo "period rotation: $n files"

# 2. size rotation + retention by size: 64K files, keep at most 160K
rm -rf "$OUT"
start_daemon --mode selectors --cgroup "$CGSEL" --chunk-period 200ms --rotate size \
	--rotate-size 64K --retain-size 160K --frequency 999
wait_for 60 "retention deleted 2 files" eval '[ "$(dstat files_deleted)" -ge 2 ] 2>/dev/null'
stop_daemon
ls -la "$OUT"
del=$(grep -c 'retention: deleted' "$DLOG")
[ "$del" -ge 1 ] || fail "retention deleted nothing"
for f in "$OUT"/*.labels.pb; do
	[ -f "${f%.labels.pb}" ] || fail "retention left $(basename "$f") without its recording"
done
total=$(du -cb "$OUT"/*.jfr | tail -1 | cut -f1)
[ "$total" -le $((160 * 1024)) ] || fail "retained $total bytes > 160K"
jfr_ok "$(ls "$OUT"/*.jfr | tail -1)"
echo "size rotation + retention: kept $total bytes in $(ls "$OUT" | wc -l) files"
kill $A
echo "PASS: daemon output"
