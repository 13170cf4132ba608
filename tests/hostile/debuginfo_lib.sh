# SPDX-License-Identifier: MIT
# debuginfo_lib.sh — helpers for the hostile tests of where the symbolizer looks for debug
# information (sourced, not run; stack/debuginfo_find.h is the rule under test). On top of
# hostile_lib.sh:
#   attacker_app OUT [CC FLAGS...]  the demo workload (libctx: publishes context, busy in its
#                              own functions) built without a build id into OUT (the
#                              attacker's), with -g unless FLAGS say otherwise
#   start_chunked_daemon       the default daemon with one change: a 2 s chunk period (the
#                              default is 60 s, and the symbolizer runs at each chunk cut)
#   host_file                  the daemon's host recording (.jfr.part while it runs)
#   chunks_now                 complete chunks in it now
#   wait_symbolized PID        PID sampled with context, then two more chunk cuts (so its
#                              frames were symbolized) or a daemon thread blocked in open(2)
#                              of a FIFO, whichever comes first
#   assert_not_in_fifo_open    no daemon thread sits in open(2) of a FIFO (kernel stacks)
#   stop_within SECONDS        SIGTERM: fails unless the daemon exits 0 within SECONDS (a
#                              daemon still running then is killed, so the test ends)
#   recorded_ok N              the daemon's file holds at least N complete chunks and every
#                              JDK view reads it; its text (jfr print) in $TMP/print.txt
. "$(dirname "${BASH_SOURCE[0]}")/hostile_lib.sh"
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEBUGINFO_CHUNK=2s

attacker_app() { # OUT [FLAGS...]
	local out=$1
	shift
	command -v gcc >/dev/null || skip "needs gcc (the attacker's own program)"
	[ -f "$B/libctx.a" ] || fail "no $B/libctx.a (run make)"
	local LIBCTX_A
	LIBCTX_A=$(realpath "$B/libctx.a")
	# built in OUT's directory: split DWARF names its .dwo files relative to it
	(cd "$(dirname "$out")" && gcc -std=gnu11 -O1 -fno-omit-frame-pointer \
		-mno-omit-leaf-frame-pointer -D_GNU_SOURCE -I"$SRC/include" "${@:--g}" \
		-Wl,--build-id=none -o "$(basename "$out")" "$SRC/tests/workloads/demo_app.c" \
		"$LIBCTX_A" -Wl,--dynamic-list="$SRC/libctx/libctx.dynlist" \
		-lpthread) || fail "cannot build the attacker's program"
	readelf -n "$out" | grep -q 'Build ID' && fail "$out has a build id"
	chown "$ATK" "$out"
}
start_chunked_daemon() { start_default_daemon --chunk-period "$DEBUGINFO_CHUNK"; }
host_file() { ls "$OUT"/ctxprof-*.jfr.part "$OUT"/ctxprof-*.jfr 2>/dev/null | head -1; }
chunks_now() {
	local f n=0
	f=$(host_file)
	[ -n "$f" ] && read -r n _ < <(complete_chunks "$f")
	echo "$n"
}
# true when a thread of the daemon sits in open(2) of a FIFO (its kernel stack): told without
# opening the FIFO (a probe that opens it for writing would let that open return)
daemon_in_fifo_open() { cat /proc/"$DPID"/task/*/stack 2>/dev/null | grep -q wait_for_partner; }
assert_not_in_fifo_open() {
	if daemon_in_fifo_open; then
		grep -l wait_for_partner /proc/"$DPID"/task/*/stack | while read -r f; do
			echo "thread $(basename "$(dirname "$f")") ($(cat "$(dirname "$f")/comm")):"
			cat "$f"
		done
		fail "a daemon thread sits in open(2) of a FIFO"
	fi
}
SYMBOLIZED_AT=
symbolized_or_blocked() { [ "$(chunks_now)" -ge "$SYMBOLIZED_AT" ] || daemon_in_fifo_open; }
wait_symbolized() { # PID
	wait_for 60 "context samples of the attacker's process $1" target_over "$1" 20 context_samples
	SYMBOLIZED_AT=$(($(chunks_now) + 2))
	wait_for 30 "two chunk cuts after the attacker was sampled" symbolized_or_blocked
}
stop_within() { # SECONDS
	local t0=$SECONDS rc
	kill -TERM "$DPID"
	while kill -0 "$DPID" 2>/dev/null && [ $((SECONDS - t0)) -lt "$1" ]; do sleep 0.1; done
	if kill -0 "$DPID" 2>/dev/null; then
		kill -KILL "$DPID"
		wait "$DPID" 2>/dev/null
		DPID=
		fail "the daemon did not stop within $1 s of SIGTERM (killed)"
	fi
	wait "$DPID"
	rc=$?
	DPID=
	[ "$rc" = 0 ] || { tail -20 "$DLOG"; fail "daemon exited $rc after SIGTERM"; }
	echo "the daemon stopped on SIGTERM in $((SECONDS - t0)) s, exit 0"
}
recorded_ok() { # N
	local f n
	f=$(host_file)
	[ -n "$f" ] || fail "no recording in $OUT"
	n=$(chunks_now)
	[ "$n" -ge "$1" ] || fail "$f: $n complete chunks, want at least the $1 written before the attack"
	jfr_ok "$f"
	echo "$f: $n complete chunks, read by the JDK"
}
# A daemon stuck in open(2) of a FIFO (or joining a thread that is) ignores SIGTERM: the
# shared cleanup would wait for it forever. Killed after 10 s (the test has failed by then).
debuginfo_cleanup() {
	local t0=$SECONDS f
	# whoever still sits in open(2) of a planted FIFO (this daemon, or any other on the host
	# that symbolizes the attacker's process) gets it back: opened for writing, closed
	for f in $FIFOS; do fifo_no_reader "$f"; done
	if [ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null; then
		while kill -0 "$DPID" 2>/dev/null && [ $((SECONDS - t0)) -lt 10 ]; do sleep 0.1; done
		kill -KILL "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
		DPID=
	fi
	hostile_cleanup
}
trap debuginfo_cleanup EXIT
# a FIFO of the attacker's at PATH (beside its program)
FIFOS=
attacker_fifo() { # PATH
	as_attacker mkfifo -m 0666 "$1" || fail "cannot create $1"
	FIFOS="$FIFOS $1"
}
# true when the daemon holds FILE open (a completed open; a blocked one: daemon_in_fifo_open)
daemon_has_open() { # FILE
	local l
	for l in /proc/"$DPID"/fd/*; do [ "$(readlink "$l")" = "$1" ] && return 0; done
	return 1
}
# The part every test of this kind shares, around the attack it plants:
#   debuginfo_setup            attacker, control target, daemon, the control's rate, one chunk
#                              written before the attack (BEFORE: the chunks then)
#   debuginfo_attack APP FILE...  APP run by the attacker until its frames were symbolized;
#                              then: no daemon thread in open(2) of a FIFO, none of the planted
#                              FILEs opened by the daemon (fanotify; FIFOs: not held open by it,
#                              and no reader left), the control's rate kept, the status fresh,
#                              SIGTERM obeyed, the recording readable
BEFORE=
ATTACKER=
debuginfo_setup() {
	attacker_user
	start_control
	start_chunked_daemon
	rate_baseline
	wait_for 30 "a chunk written before the attack" eval '[ "$(chunks_now)" -ge 1 ]'
	BEFORE=$(chunks_now)
}
debuginfo_attack() { # APP FILE...
	local app=$1 f
	shift
	watch_opens "$@"
	spawn_attacker "$app" 0 1
	ATTACKER=$SPAWNED
	rate_window_open # the control's rate during the attack
	wait_symbolized "$ATTACKER"
	assert_not_in_fifo_open
	for f; do
		[ -p "$f" ] || continue
		daemon_has_open "$f" && fail "the daemon has the planted FIFO $f open"
		fifo_no_reader "$f" ||
			echo "note: $f had a reader, not the daemon under test (another profiler on this host)"
	done
	assert_not_opened
	assert_rate_kept
	assert_fresh
	stop_within 10
	recorded_ok "$BEFORE"
}
