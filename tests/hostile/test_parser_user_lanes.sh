#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# Issue 31 item 3, parser lanes per user: one helper parsed every non-root user's files and
# every process's OpenTelemetry process context (OTEL_CTX), so a user whose bytes crash that
# helper made everyone else's contexts and frames wait or fail. Now each owner has a lane of
# its own (util/parser_client.h, util/parser_lanes.h): a helper its bytes alone reach. Here
# an unprivileged attacker floods its lane (a new binary of its own every second, and a
# process publishing a context of its own, decoded in its lane) and every helper but the system lane's and the
# second user's is killed every millisecond, as often as the attacker's bytes could crash
# it. A second unprivileged user's process started during the attack, from a binary it owns,
# must get its process context decoded (its samples named by service.name) and its frames
# named, by a helper of its own (argv[0] ctxprof-parser:uid=N) that was never restarted and
# never saw an attacker's file, while the attacker's lane keeps restarting
# (parser_restarts). The helpers all run as the parser user, confined alike.
# On the code before the lanes (one users' lane for both users) the crash loop kills the
# helper the second user's requests go to: its context fails (parser_failed, not asked again
# until republished) and its lane never exists.
. "$(dirname "$0")/hostile_lib.sh"

WL=$B/tests/workloads/wl_otel
[ -x "$WL" ] && [ -x "$B/tests/workloads/wl_attrib" ] || fail "no $WL or wl_attrib (run make test-bins)"
attacker_user
second_user
# the second user's binary: a copy of wl_otel with a build id of its own (the module registry
# shares a module between files of one build id: its names must come from this file)
python3 - "$WL" "$VIC_HOME/wl_otel" <<'PYEOF' || fail "cannot copy the second user's binary"
import subprocess, sys
src, dst = sys.argv[1], sys.argv[2]
note = subprocess.run(["readelf", "-n", src], capture_output=True, text=True).stdout
bid = bytes.fromhex(next(l.split()[-1] for l in note.splitlines() if "Build ID" in l))
data = open(src, "rb").read()
assert data.count(bid) == 1
open(dst, "wb").write(data.replace(bid, bytes(b ^ 0xFF for b in bid)))
PYEOF
chown "$VIC" "$VIC_HOME/wl_otel" && chmod 0755 "$VIC_HOME/wl_otel" || fail "cannot chown $VIC_HOME/wl_otel"
field() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# PID's file named after its service.name (split = process: its process context decoded)
# holds complete chunks whose stacks name FUNCTION
named() { # PID FUNCTION
	local f
	f=$(ls "$OUT"/ctxprof-*-"$1"-checkout-svc-*.jfr.part 2>/dev/null | head -1)
	[ -n "$f" ] && cp "$f" "$TMP/so-far.jfr" 2>/dev/null &&
		"$CTXPROF" report --format collapsed "$TMP/so-far.jfr" 2>/dev/null | grep -q ";$2"
}

start_default_daemon --mode selectors --cgroup "$CGSEL" --split process --chunk-period 1s
SYS=$(dstat parser_pid)
[ -n "$SYS" ] && [ "$SYS" != 0 ] || fail "no system lane's helper in the status file"

spawn_churn
spawn_attacker "$WL" 120 1
ATTACKER=$SPAWNED
atk_lane() { parser_lane_pid "uid=$ATK_UID" >/dev/null; }
wait_for 60 "the attacker's context decoded (checkout-svc-$ATTACKER)" named "$ATTACKER" work_A
# the lanes are the old users' lane (none on this code) or a lane per owner
if atk_lane; then
	echo "the attacker's lane: $(parser_lane_pid "uid=$ATK_UID") (system lane $SYS)"
else
	echo "no lane of the attacker's own (one users' lane)"
fi
# every helper but the system lane's and the second user's killed, as often as the
# attacker's bytes could crash it
start_helper_killer "$SYS" "ctxprof-parser:uid=$VIC_UID"
KILLER=$HELPER_KILLER
r0=$(dstat parser_restarts)
restarted() { status_refresh; [ "$(dstat parser_restarts)" -ge $((r0 + 2)) ] 2>/dev/null; }
wait_for 60 "the attacker's lane restarted under the crash loop" restarted
spawn_second "$VIC_HOME/wl_otel" 120 2
VICTIM=$SPAWNED
wait_for 90 "the second user's process $VICTIM named by its context, its own frames named (work_A)" \
	named "$VICTIM" work_A
vic_lane() { parser_lane_pid "uid=$VIC_UID" >/dev/null; }
wait_for 60 "a parser lane of the second user's own" vic_lane
VL=$(parser_lane_pid "uid=$VIC_UID")
echo "the second user's lane: $VL (Uid $(field "$VL" Uid), CapEff $(field "$VL" CapEff)," \
	"Seccomp $(field "$VL" Seccomp))"
[ "$(field "$VL" Uid)" = "$(field "$SYS" Uid)" ] && [ "$(field "$VL" CapEff)" = 0000000000000000 ] &&
	[ "$(field "$VL" Seccomp)" = 2 ] && [ "$(field "$VL" NoNewPrivs)" = 1 ] ||
	fail "the second user's lane $VL is not confined as the system lane's helper"
status_refresh
r1=$(dstat parser_restarts)
kill "$KILLER"
wait "$KILLER" 2>/dev/null
[ "$r1" -ge $((r0 + 2)) ] || fail "the attacker's lane was not restarted ($r0 -> $r1)"
[ "$(parser_lane_pid "uid=$VIC_UID")" = "$VL" ] || fail "the second user's lane was restarted"
[ "$(dstat parser_pid)" = "$SYS" ] || fail "the system lane's helper was restarted"
# the second user's binary was parsed by its lane (a helper keeps the modules it parses
# open), and none of the attacker's files ever reached it
assert_lane_parsed "$VL" "$VIC_HOME/wl_otel"
echo "under the crash loop: parser_restarts $r0 -> $r1, parser_lanes $(dstat parser_lanes)," \
	"the second user's lane $VL never restarted, its context and frames named"
assert_fresh
stop_daemon
jfr_ok_all "$OUT"/*.jfr
echo PASS
