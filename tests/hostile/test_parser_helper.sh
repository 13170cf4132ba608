#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# Issue 19 item 6: the daemon parses target ELF/DWARF in a helper without privilege. Its
# helper (found as the daemon's child, by pid) runs as a uid other than 0 with every
# capability set empty, no_new_privs and a seccomp filter; the control target's frames are
# still named. A helper killed with SIGKILL mid-run is replaced (parser_restarts counted) and
# a module first seen after that is named by the new helper; the status stays fresh. A helper
# that stops answering (SIGSTOP) makes a request time out (parser_timeouts), the status stays
# fresh, a new helper takes over, and the stopped one ends by its own deadline once it runs
# again; the frames of a module first asked about while it was stopped are named in the end
# (its module asked again, not refused). A parser user that does not exist makes the daemon exit non-zero at start, saying why;
# so does call-graph = dwarf-copy or dwarf-check (libdwfl would parse target DWARF in the
# daemon) without --no-drop-privileges.
. "$(dirname "$0")/hostile_lib.sh"

WL=$(readlink -f "$B/tests/workloads/wl_deep")
WL2=$(readlink -f "$B/tests/workloads/wl_attrib")
DEMO=$(readlink -f "$B/demo/demo_app")
[ -x "$WL" ] || fail "no $WL (run make test-bins)"

# the system lane's helper (util/parser_client.h: the workloads' binaries are root's files),
# as the status file names it; the daemon's children (any of its threads may start one)
helper_pid() { status_refresh; dstat parser_pid; }
has_helper() { [ -n "$(dstat parser_pid)" ] && [ "$(dstat parser_pid)" != 0 ]; }
field() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# stacks of the recording so far (complete chunks) that name FUNCTION
named() { # FUNCTION
	cp "$(dstat current_file)" "$TMP/so-far.jfr" 2>/dev/null || return 1
	"$CTXPROF" report --format collapsed "$TMP/so-far.jfr" 2>/dev/null | grep -q "$1"
}
children() { cat /proc/"$DPID"/task/*/children 2>/dev/null | tr ' ' '\n' | grep -v '^$'; }
# a system lane's helper other than $1, a child of the daemon
new_helper() { local p; p=$(helper_pid); [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "$1" ] && children | grep -qx "$p"; }
restarted() { status_refresh; [ "$(dstat parser_restarts)" -ge 1 ] 2>/dev/null; }
timed_out() { status_refresh; [ "$(dstat parser_timeouts)" -ge 1 ] 2>/dev/null; }
ended() { [ ! -e "/proc/$1" ] || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }

start_control
start_default_daemon --mode selectors --exe "$DEMO,$WL,$WL2" --chunk-period 1s
wait_for 10 "the daemon's parser helper" has_helper
H=$(helper_pid)
uid=$(field "$H" Uid)
echo "helper $H: Uid $uid CapEff $(field "$H" CapEff) CapPrm $(field "$H" CapPrm)" \
	"CapBnd $(field "$H" CapBnd) CapAmb $(field "$H" CapAmb)" \
	"NoNewPrivs $(field "$H" NoNewPrivs) Seccomp $(field "$H" Seccomp)"
[ "$uid" != 0 ] || fail "the parser helper runs as uid 0"
for c in CapEff CapPrm CapBnd CapAmb CapInh; do
	[ "$(field "$H" "$c")" = 0000000000000000 ] || fail "helper $c = $(field "$H" "$c"), not empty"
done
[ "$(field "$H" NoNewPrivs)" = 1 ] || fail "helper without no_new_privs"
[ "$(field "$H" Seccomp)" = 2 ] || fail "helper without a seccomp filter (Seccomp $(field "$H" Seccomp))"
children | grep -qx "$H" || fail "the helper $H is not the daemon's child"
[ "$(parser_lane_pid system)" = "$H" ] || fail "the helper $H is not ctxprof-parser:system"
# (user lanes' helpers, confined the same way: tests/hostile/test_parser_user_lanes.sh)
wait_for 60 "the control target's frames named (worker)" named worker
echo "the control target's frames are named through the helper"

kill -KILL "$H"
spawn "$WL" 120 8
wait_for 30 "a new parser helper and parser_restarts" restarted
wait_for 30 "a new parser helper" new_helper "$H"
wait_for 60 "frames of a module first seen after the restart named (spin)" named spin
echo "helper $H killed: new helper $(helper_pid), parser_restarts $(dstat parser_restarts)," \
	"a new module named"
assert_fresh
[ "$(field "$(helper_pid)" Seccomp)" = 2 ] || fail "the new helper has no seccomp filter"

H2=$(helper_pid)
kill -STOP "$H2"
spawn "$WL2" long 60 2
wait_for 60 "a parser request past its deadline (parser_timeouts)" timed_out
assert_fresh
wait_for 30 "a helper after the stopped one" new_helper "$H2"
kill -CONT "$H2"
wait_for 10 "the stopped helper ending by its own deadline" ended "$H2"
echo "helper $H2 stopped: parser_timeouts $(dstat parser_timeouts), status fresh, new helper" \
	"$(children | grep -vx "$H2"); $H2 ended once continued"
# the module whose request met the stopped helper is not to blame: it is asked again (after
# SYM_HELPER_RETRY_NS) and named, not refused for the daemon's life
wait_for 90 "frames of the workload started while the helper was stopped named (work_A)" named work_A
stop_daemon

out=$("$CTXPROF" daemon --directory "$OUT" --status-file "$TMP/st2" \
	--parser-user ctxprof-no-such-user-$$ 2>&1)
rc=$?
echo "with a parser user that does not exist: exit $rc: $(grep -i parser <<<"$out" | head -1)"
[ "$rc" != 0 ] || fail "the daemon started with a parser user that does not exist"
grep -q "parser user does not exist" <<<"$out" || fail "no reason given: $out"
# the dwarf-copy unwinder parses target DWARF with libdwfl in process: not in the daemon as
# it runs by default (dropped privileges), only with --no-drop-privileges
for cg in dwarf-copy dwarf-check; do
	out=$(timeout 60 "$CTXPROF" daemon --directory "$OUT" --status-file "$TMP/st3" --call-graph "$cg" 2>&1)
	rc=$?
	echo "call-graph = $cg: exit $rc: $(grep -i "call-graph" <<<"$out" | head -1)"
	[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "the daemon started with call-graph = $cg (exit $rc)"
	grep -q "as root, not in the parser helper" <<<"$out" || fail "no reason given: $out"
done
echo "PASS: parser helper confined, restarted after SIGKILL; a failed drop is fatal; no root parsing by dwarf-copy"
