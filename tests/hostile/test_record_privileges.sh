#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel check
# Issue 19 item 6 for `record`: once BPF is loaded, the perf events are open and the targets
# added, record keeps only the daemon's capabilities (+ CAP_DAC_OVERRIDE for its output):
# no CAP_SYS_ADMIN, CAP_BPF or CAP_PERFMON; its parser helper (its child, found by pid) runs
# without root or capabilities under seccomp; the command it started keeps running and its
# frames are named. A parser user that does not exist makes record exit non-zero, saying why.
. "$(dirname "$0")/../integration/daemon_lib.sh"

WL=$(readlink -f "$B/tests/workloads/wl_deep")
[ -x "$WL" ] || fail "no $WL (run make test-bins)"
CAP_SYS_ADMIN=21
CAP_PERFMON=38
CAP_BPF=39

capeff() { awk '$1 == "CapEff:" { print $2 }' "/proc/$1/status" 2>/dev/null; }
has_cap() { (((0x$1 >> $2) & 1)); } # MASK BIT
dropped() { local e; e=$(capeff "$RPID"); [ -n "$e" ] && ! has_cap "$e" $CAP_SYS_ADMIN; }
# record's child that is not the command: the helper
helper_of() {
	local c
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		[ "$(tr '\0' ' ' <"/proc/$c/cmdline" 2>/dev/null | cut -d' ' -f2)" = __parser ] && echo "$c"
	done
}
has_helper() { [ -n "$(helper_of "$RPID")" ]; }

"$CTXPROF" record -q -d 6s -o "$TMP/r.jfr" -- "$WL" 5 8 >"$TMP/rec.log" 2>&1 &
RPID=$!
wait_for 20 "record's capabilities dropped" dropped
e=$(capeff "$RPID")
wait_for 10 "record's parser helpers" has_helper
for b in $CAP_SYS_ADMIN $CAP_BPF $CAP_PERFMON; do
	has_cap "$e" $b && fail "record keeps capability $b after setup (CapEff $e)"
done
# one helper per lane (util/parser_client.h: root's files, everything else)
wait_for 10 "record's two parser helpers" eval '[ "$(helper_of "$RPID" | wc -l)" = 2 ]'
for H in $(helper_of "$RPID"); do
	echo "record $RPID: CapEff $e; helper $H: Uid $(awk '$1 == "Uid:" { print $2 }' /proc/$H/status)" \
		"CapEff $(capeff "$H") Seccomp $(awk '$1 == "Seccomp:" { print $2 }' /proc/$H/status)"
	[ "$(awk '$1 == "Uid:" { print $2 }' /proc/$H/status)" != 0 ] || fail "record's helper $H runs as root"
	[ "$(capeff "$H")" = 0000000000000000 ] || fail "record's helper $H has capabilities"
	[ "$(awk '$1 == "Seccomp:" { print $2 }' /proc/$H/status)" = 2 ] || fail "record's helper $H has no seccomp filter"
done
wait "$RPID"
rc=$?
[ "$rc" = 0 ] || { cat "$TMP/rec.log"; fail "record exited $rc"; }
"$CTXPROF" report --format collapsed "$TMP/r.jfr" >"$TMP/r.txt" || fail "report failed"
grep -q spin "$TMP/r.txt" || { head "$TMP/r.txt"; fail "the command's frames are not named"; }
echo "the command ran to its end; its frames are named (spin)"

out=$("$CTXPROF" record -q -d 1s -o "$TMP/x.jfr" --parser-user ctxprof-no-such-user-$$ -- "$WL" 1 2>&1)
rc=$?
echo "with a parser user that does not exist: exit $rc: $(head -1 <<<"$out")"
[ "$rc" != 0 ] || fail "record ran with a parser user that does not exist"
grep -q "parser user does not exist" <<<"$out" || fail "no reason given: $out"
echo "PASS: record drops to the daemon's capabilities after setup; its parser helper is confined"
