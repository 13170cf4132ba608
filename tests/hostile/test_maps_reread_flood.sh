#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# Hostile (issue 19 item 5, "fake return addresses force maps refreshes"): an unprivileged
# user's process that publishes context (so the default daemon samples it) maps a file
# PROT_EXEC about 32,000 times (vm.max_map_count allows 65,530 lines) and then spins with a
# forged frame-pointer chain whose return address is in no mapping. Every sample of it misses
# the daemon's maps cache, and a miss re-reads /proc/PID/maps on the sampling loop. Before,
# such a read took ~250 ms (and was quadratic in the mappings) and was allowed every 50 ms:
# the loop did little else, and the control target lost its samples. The reads must now stay
# within their budget (stack/maps_budget.h), the ones put off counted (maps_deferred), the
# control target keep its context rate, the status stay fresh and the RSS bounded. The
# daemon's CPU during the attack is printed next to its CPU before.
. "$(dirname "$0")/hostile_lib.sh"
FX=${FX_EVENT_FLOOD:-$B/tests/fixtures/fx_event_flood}
[ -x "$FX" ] || fail "no $FX (run make)"
MAPPINGS=32000
attacker_user
cp "$FX" "$ATK_HOME/forged" && chmod 0755 "$ATK_HOME/forged"
head -c 8192 /dev/zero >"$ATK_HOME/mapped.bin" && chmod 0644 "$ATK_HOME/mapped.bin"
start_control
start_default_daemon
daemon_cpu_during rate_baseline
echo "daemon CPU before the attack: $DAEMON_CPU_PCT% of a core"
spawn_attacker "$ATK_HOME/forged" forged "$ATK_HOME/mapped.bin" "$MAPPINGS" >"$TMP/forged.out"
atk=$SPAWNED
daemon_cpu_mark
rate_window_open # the control's rate during the attack
wait_for 30 "the attacker's mappings" grep -q '^ready' "$TMP/forged.out"
lines=$(wc -l <"/proc/$atk/maps")
echo "attacker $atk: $(cat "$TMP/forged.out"), $lines lines in its maps"
[ "$lines" -ge $((MAPPINGS / 2)) ] || fail "the attacker made only $lines mappings"
wait_for 60 "the attacker $atk sampled as a target" target_over "$atk" 20
assert_rate_kept
daemon_cpu_since
assert_fresh
assert_rss_bounded
status_refresh
deferred=$(dstat maps_deferred)
echo "daemon CPU during the attack: $DAEMON_CPU_PCT% of a core; maps reads put off: ${deferred:-none}"
[ "${deferred:-0}" -gt 0 ] || fail "the attacker's maps re-reads were not bounded and counted (maps_deferred=${deferred:-absent})"
kill -9 "$atk"
stop_daemon
for f in "$OUT"/*.jfr; do
	(jfr_ok "$f") >"$TMP/jfr_ok.out" 2>&1 || { cat "$TMP/jfr_ok.out"; fail "$f is not readable"; }
done
echo PASS
