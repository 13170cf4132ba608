#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own
# Clear errors and non-zero exits for: a PID that does not exist, no permission (ctxprof run
# as nobody), a PID that exits during attach (error or clean run, never a crash); and a
# target that exits mid-run ends the recording with complete output and exit 0; a COMMAND
# that ends on its own gives ctxprof its exit status; -F above the kernel's sample rate
# limit names the sysctl; SIGINT/SIGTERM during setup abandon it cleanly; a setup that
# fails leaves an existing output file as it was.
. "$(dirname "$0")/sampler_lib.sh"

expect_error() { # name regex cmd...
	local name=$1 re=$2 rc
	shift 2
	"$@" >"$TMP/o" 2>"$TMP/e"
	rc=$?
	echo "$name: exit $rc: $(head -c 300 "$TMP/e")"
	[ $rc -ne 0 ] && [ $rc -lt 128 ] || fail "$name: exit $rc (want an error exit)"
	grep -q -E "$re" "$TMP/e" || fail "$name: message does not match /$re/"
}

# 1. No such process.
pid=$(($(cat /proc/sys/kernel/pid_max) - 1))
while [ -e /proc/$pid ]; do pid=$((pid - 1)); done
expect_error "no such pid" "no such process: $pid" "$CTXPROF" record -p $pid -d 1

# 2. No permission: ctxprof as nobody against a root-owned target.
command -v setpriv >/dev/null || skip "no setpriv"
"$WL/wl_attrib" long 20 1 >/dev/null &
target=$!
mkdir -p "$TMP/bin" && cp "$CTXPROF" "$TMP/bin/" && chmod 755 "$TMP" "$TMP/bin"
expect_error "as nobody" "not permitted" \
	setpriv --reuid=65534 --regid=65534 --clear-groups "$TMP/bin/ctxprof" record -p $target -d 1
expect_error "bad usage" "either -p" "$CTXPROF" record
# cycles without a hardware PMU (this VM): a clear message, not a generic failure
if [ ! -e /sys/bus/event_source/devices/cpu ] && [ ! -e /sys/bus/event_source/devices/cpu_core ]; then
	expect_error "no PMU" "no hardware PMU.*--event cpu-clock" \
		"$CTXPROF" record --event cycles -p $target -d 1
fi
kill $target; wait $target 2>/dev/null

# 3. A PID that exits during attach: an error naming the process, or a clean (empty) run.
for d in 0 0.05 0.1 0.2 0.4; do
	sleep $d & p=$!
	"$CTXPROF" record -p $p -d 5 -o "$TMP/x.txt" >/dev/null 2>"$TMP/e"
	rc=$?
	wait $p 2>/dev/null
	echo "exit-during-attach (sleep $d): exit $rc: $(head -c 200 "$TMP/e")"
	case $rc in
	0) ;;
	1) grep -q -E "no such process|exited before" "$TMP/e" || fail "unclear message" ;;
	*) fail "exit $rc" ;;
	esac
done

# 4. Target exits mid-run: recording ends by itself, output complete, exit 0.
"$WL/wl_attrib" long 3 2 >/dev/null &
target=$!
wait_for 10 "wl_attrib $target execed" execed $target "$WL/wl_attrib"
record_ok 50 -F 999 -p $target -d 45 -o "$TMP/mid.txt"
wait $target
n=$(count "$TMP/mid.txt" ';work_(A|B) ')
echo "samples in work_A/B after the target exited: $n"
[ "$n" -ge 50 ] || fail "output incomplete ($n work samples)"
bad=$(grep -c -v -E '^[^ ]+(.*[^ ])? [0-9]+$' "$TMP/mid.txt")
[ "$bad" = 0 ] || fail "$bad malformed lines"

# 5. SIGTERM / SIGINT: stop, drain, write everything, exit 0.
for sig in TERM INT; do
	"$WL/wl_attrib" long 30 2 >/dev/null &
	target=$!
	wait_for 10 "wl_attrib $target execed" execed $target "$WL/wl_attrib"
	"$CTXPROF" record -F 999 -p $target -d 60 -o "$TMP/sig.txt" 2>"$TMP/e" &
	rec=$!
	wait_for 20 "record sampling (its perf events open)" sampling $rec
	sleep 1 # the workload's purpose: samples to write when the signal comes
	kill -$sig $rec
	wait $rec
	rc=$?
	kill $target; wait $target 2>/dev/null
	n=$(count "$TMP/sig.txt" ';work_(A|B) ')
	echo "SIG$sig: exit $rc, $n work samples written"
	[ $rc = 0 ] || { cat "$TMP/e"; fail "SIG$sig: exit $rc"; }
	[ "$n" -ge 20 ] || fail "SIG$sig: output missing"
done

# 6. -- COMMAND that ends on its own: ctxprof exits with its status (128+N for signal N),
# the recording written all the same.
for c in 'exit 3:3' 'kill -KILL $$:137' 'exit 0:0'; do
	rm -f "$TMP/st.txt"
	"$CTXPROF" record -q -o "$TMP/st.txt" -- sh -c "${c%:*}" 2>"$TMP/e"
	rc=$?
	echo "-- sh -c '${c%:*}': exit $rc"
	[ $rc = "${c##*:}" ] || { cat "$TMP/e"; fail "exit $rc, want ${c##*:}"; }
	[ -e "$TMP/st.txt" ] || fail "no output written"
done

# 7. -F above kernel.perf_event_max_sample_rate (the kernel lowers it by itself when sampling
# interrupts take too long): a message naming it, not perf_event_open's bare EINVAL. -F
# accepts up to 100000, the kernel's default limit: at that limit, lower it by one for the
# duration of the check (a limit of 99999 changes nothing for anyone sampling below it).
rate=/proc/sys/kernel/perf_event_max_sample_rate
sysctl_lock $rate
max=$(cat $rate)
if [ "$max" -ge 100000 ]; then
	trap 'echo '"$max"' >'"$rate"'; rm -rf "$TMP"' EXIT
	echo 99999 >$rate || fail "cannot lower $rate"
fi
lim=$(cat $rate)
re="ctxprof: -F $((lim + 1)) is above the kernel's limit of $lim .*perf_event_max_sample_rate"
expect_error "-F above the limit" "$re" \
	"$CTXPROF" record -F $((lim + 1)) -d 1 -o "$TMP/f.txt" -- sleep 5
if [ "$max" -ge 100000 ]; then
	echo "$max" >$rate
	trap 'rm -rf "$TMP"' EXIT
fi
sysctl_unlock

# 8. SIGINT/SIGTERM before recording starts (here while opening the output, a FIFO nobody
# reads): a clear message, exit 128+N, nothing left running (the command never ran).
mkfifo "$TMP/fifo"
for sig in INT TERM; do
	"$CTXPROF" record -o "$TMP/fifo" -- "$WL/wl_attrib" long 30 1 >/dev/null 2>"$TMP/e" &
	rec=$!
	wait_for 20 "record blocked opening the FIFO" eval 'grep -qx wait_for_partner /proc/$rec/task/*/wchan'
	kid=$(pgrep -P $rec)
	kill -$sig $rec
	wait $rec
	rc=$?
	echo "SIG$sig during setup (command ${kid:-not started}): exit $rc: $(head -c 200 "$TMP/e")"
	want=$((128 + $(kill -l $sig)))
	[ $rc = $want ] || fail "SIG$sig during setup: exit $rc, want $want"
	grep -q -E "(interrupted|terminated) before recording started" "$TMP/e" ||
		fail "SIG$sig during setup: no message"
	if [ -n "$kid" ] && kill -0 "$kid" 2>/dev/null; then
		kill -KILL "$kid"
		fail "SIG$sig during setup: the command ($kid) was left running"
	fi
done

# 9. The output is created (or truncated) only once setup succeeded: a command that cannot
# run leaves an existing file as it was, for both formats; a path that cannot be written
# fails before any setup.
for f in keep.txt keep.jfr; do
	echo precious >"$TMP/$f"
	expect_error "-o $f, setup fails" "cannot run" \
		"$CTXPROF" record -o "$TMP/$f" -- "$TMP/no-such-command"
	[ "$(cat "$TMP/$f")" = precious ] || fail "-o $f: the existing file was overwritten"
done
expect_error "-o in a missing directory" "cannot write $TMP/no-such-dir/x.txt" \
	"$CTXPROF" record -o "$TMP/no-such-dir/x.txt" -- "$TMP/no-such-command"

# The command gets the SIGINT disposition ctxprof inherited, not ctxprof's handler: ignored
# under `trap '' INT` (nohup, `cmd &` in a script), the default otherwise.
out=$(trap '' INT; "$CTXPROF" record -q -o "$TMP/ign.txt" -- bash -c 'kill -INT $$; echo survived')
rc=$?
[ $rc = 0 ] && [ "$out" = survived ] || fail "inherited SIG_IGN: exit $rc, output '$out'"
out=$("$CTXPROF" record -q -o "$TMP/ign.txt" -- bash -c 'kill -INT $$; echo survived')
rc=$?
[ $rc = 130 ] && [ -z "$out" ] || fail "default SIGINT: exit $rc, output '$out' (want 130)"
echo "signal dispositions: the command inherits SIG_IGN (survived) or SIG_DFL (exit 130)"
echo PASS
