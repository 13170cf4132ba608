#!/bin/bash
# SPDX-License-Identifier: MIT
# Hostile (issue 19 item 5): a target floods what BPF reports to the daemon. An unprivileged
# user runs a program that publishes context (so the default daemon, mode = context, samples
# it) and then, in three loops at once, dlopen()s/dlclose()s a library (each a pair of loader
# notifications: the uprobe hook), mmap()s a file PROT_EXEC and munmap()s it, and flips a
# file mapping to PROT_READ with mprotect (what the sys_exit fallback reports). Each library
# event would wake the daemon and make it re-read the attacker's maps and locate its TLS.
# Bounded in BPF per process (ctxprof/sample.h, "Event bounds"), the events over the budget
# are counted and the control target keeps its sampling rate with context. Run with both
# library-load hooks: the default one and the sys_exit fallback (CTXPROF_TEST_HOOK). The
# daemon's CPU during the flood is printed next to its CPU before it.
. "$(dirname "$0")/hostile_lib.sh"
FX=${FX_EVENT_FLOOD:-$B/tests/fixtures/fx_event_flood}
[ -x "$FX" ] || fail "no $FX (run make)"
attacker_user
cp "$FX" "$ATK_HOME/flood" && chmod 0755 "$ATK_HOME/flood"
head -c 8192 /dev/zero >"$ATK_HOME/mapped.bin" && chmod 0644 "$ATK_HOME/mapped.bin"
start_control

flood() { # HOOK: default | sys_exit
	local hook=$1 atk limited used
	if [ "$hook" = sys_exit ]; then export CTXPROF_TEST_HOOK=sys_exit; else unset CTXPROF_TEST_HOOK; fi
	start_default_daemon
	used=$(dstat load_hook)
	[ "$hook" = default ] || [ "$used" = "$hook" ] ||
		fail "$hook: the daemon uses library-load hook '$used'"
	daemon_cpu_during rate_baseline
	echo "$hook ($used): daemon CPU before the flood: $DAEMON_CPU_PCT% of a core"
	spawn_attacker "$ATK_HOME/flood" maps "$ATK_HOME/mapped.bin" libm.so.6 >"$TMP/flood.out"
	atk=$SPAWNED
	daemon_cpu_mark
	rate_window_open # the control's rate during the flood
	wait_for 30 "the attacker $atk sampled as a target" target_over "$atk" 0
	assert_rate_kept
	daemon_cpu_since
	assert_fresh
	status_refresh
	limited=$(dstat events_limited)
	echo "$hook ($used): daemon CPU during the flood: $DAEMON_CPU_PCT% of a core;" \
		"events over budget (not sent) ${limited:-none}"
	[ "${limited:-0}" -gt 0 ] || fail "$hook: the flood's events were not bounded and counted (events_limited=${limited:-absent})"
	kill -9 "$atk"
	stop_daemon
}
flood default
flood sys_exit
# everything recorded before and during the floods is readable
for f in "$OUT"/*.jfr; do
	(jfr_ok "$f") >"$TMP/jfr_ok.out" 2>&1 || { cat "$TMP/jfr_ok.out"; fail "$f is not readable"; }
done
echo PASS
