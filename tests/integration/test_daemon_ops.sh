#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel check
# ctxprof daemon operations: capabilities dropped after setup (CapEff of the running daemon
# holds only the kept set, no CAP_BPF/CAP_PERFMON/CAP_SYS_ADMIN, none of CAP_SETUID/SETGID/
# SETPCAP in any set: only its helper spawner keeps those three) while a process started
# afterwards is still located (context) and sampled; `ctxprof status` and `--json` show it;
# SIGHUP with a new selector picks a process the old one did not; SIGHUP with a bad file is
# logged and the old configuration keeps running; SIGTERM exits 0. (The process name in the
# status is its comm when first seen: wl_attrib, or wl-0 once its main thread renamed itself.)
. "$(dirname "$0")/daemon_lib.sh"
cat >"$TMP/c.conf" <<CONF
[targets]
mode = selectors
cgroup = $CGSEL/a
[output]
directory = $OUT
chunk-period = 1s
[daemon]
status-file = $ST
CONF
start_daemon --config "$TMP/c.conf"
# 1. capabilities
eff=$(awk '/^CapEff/ { print $2 }' /proc/$DPID/status)
nnp=$(awk '/^NoNewPrivs/ { print $2 }' /proc/$DPID/status)
echo "daemon CapEff $eff NoNewPrivs $nnp"
[ "$nnp" = 1 ] || fail "no_new_privs not set"
# CAP_SYS_ADMIN 21, CAP_PERFMON 38, CAP_BPF 39, CAP_SYS_RESOURCE 24, CAP_NET_ADMIN 12
for bit in 21 38 39 24 12; do
	[ $(((0x$eff >> bit) & 1)) = 0 ] || fail "capability $bit still effective ($eff)"
done
[ $(((0x$eff >> 19) & 1)) = 1 ] || fail "CAP_SYS_PTRACE dropped ($eff)"
# nothing kept for the parser helpers' restarts: CAP_SETGID 6, CAP_SETUID 7, CAP_SETPCAP 8
# are in no set of the daemon; its helper spawner (forked before the drop, comm
# ctxprof-spawn) holds those three and nothing else
for set in CapPrm CapBnd; do
	v=$(awk -v k="$set:" '$1 == k { print $2 }' /proc/$DPID/status)
	[ $(((0x$v >> 6) & 7)) = 0 ] || fail "the daemon's $set $v still has CAP_SETGID/SETUID/SETPCAP"
done
spawner=
for k in $(cat /proc/$DPID/task/*/children 2>/dev/null); do
	[ "$(cat /proc/$k/comm 2>/dev/null)" = ctxprof-spawn ] && spawner=$k
done
[ -n "$spawner" ] || fail "no helper spawner (ctxprof-spawn) among the daemon's children"
for set in CapPrm CapEff CapBnd; do
	v=$(awk -v k="$set:" '$1 == k { print $2 }' /proc/$spawner/status)
	[ "$v" = 00000000000001c0 ] || fail "the helper spawner's $set is $v, not CAP_SETGID|SETUID|SETPCAP"
done
[ "$(awk '/^NoNewPrivs/ { print $2 }' /proc/$spawner/status)" = 1 ] || fail "the spawner lacks no_new_privs"
echo "daemon CapPrm $(awk '/^CapPrm/ { print $2 }' /proc/$DPID/status); helper spawner $spawner CapPrm 00000000000001c0"
threads_dropped 2
# a process started after the drop is sampled with context
spawn -g a "$WL/wl_attrib" long 0 2 >/dev/null
A=$SPAWNED
# located with samples with context (the status is rewritten every STATUS_PERIOD)
with_context() { is_target $A 'context=yes' && target_over $A 0 context_samples; }
wait_for 30 "wl_attrib $A a located target with samples with context" with_context
grep -q "^target pid=$A .*context=yes" "$ST" || { cat "$ST"; fail "wl_attrib not located after the drop"; }
s=$(grep "^target pid=$A " "$ST" | tr ' ' '\n' | sed -n 's/^context_samples=//p')
[ "$s" -gt 0 ] || fail "no samples with context after the drop"
echo "after the drop: $s samples with context"
# ... with library loads seen by the loader uprobes set before the drop (a uprobe perf event
# needs CAP_SYS_ADMIN), never by the host-wide sys_exit fallback
hook=$(dstat load_hook)
echo "library-load hook after the drop: $hook"
[ "$hook" = uprobe-loader ] || fail "library-load hook after the drop is '$hook', not uprobe-loader"

# 2. status
"$CTXPROF" status --status-file "$ST" >"$TMP/st.txt" || fail "ctxprof status failed"
cat "$TMP/st.txt"
grep -qE "^ *$A  *(wl_attrib|wl-0) " "$TMP/st.txt" || fail "status does not list $A"
"$CTXPROF" status --json --status-file "$ST" >"$TMP/st.json" || fail "status --json failed"
python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
assert d["daemon"]["pid"]==int(sys.argv[2]), d["daemon"]
t=[x for x in d["targets"] if x["pid"]==int(sys.argv[3])]
assert t and t[0]["samples"]>0 and t[0]["threads"]==2, t
' "$TMP/st.json" "$DPID" "$A" || fail "status --json content"
"$CTXPROF" status --status-file "$TMP/none" 2>/dev/null && fail "status of a missing file succeeded"

# 3. SIGHUP: bad file -> logged, old configuration kept
spawn -g b bash -c 'while :; do :; done'
H=$SPAWNED
cp "$TMP/c.conf" "$TMP/good.conf"
printf '[targets]\nmode = sometimes\n' >"$TMP/c.conf"
kill -HUP $DPID
wait_for 10 "the bad configuration logged" grep -q 'c.conf:2: bad value' "$DLOG"
kill -0 $DPID || fail "daemon died on a bad config"
grep -q '^<3>.*c.conf:2: bad value: targets.mode' "$DLOG" || { cat "$DLOG"; fail "bad config not logged as an error with its line"; }
status_refresh
grep -q "^target pid=$A " "$ST" || fail "old selection lost after a bad reload"
# good new file: the cgroup of a spinning bash (H) -> selected, wl_attrib dropped
sed "s|^cgroup = .*|cgroup = $CGSEL/b|" "$TMP/good.conf" >"$TMP/c.conf"
nfiles=$(ls "$OUT"/*.jfr 2>/dev/null | wc -l)
kill -HUP $DPID
wait_for 10 "the reload logged" grep -q 'configuration reloaded' "$DLOG"
wait_for 30 "the new selector selects $H" is_target $H
grep -q 'configuration reloaded' "$DLOG" || fail "reload not logged"
grep -q "^target pid=$H " "$ST" || { cat "$ST"; fail "reload: new selector did not select $H"; }
grep -q "^target pid=$A " "$ST" && fail "reload: wl_attrib still a target"
[ "$(ls "$OUT"/*.jfr | wc -l)" -gt "$nfiles" ] || fail "reload did not finish the current file"
kill $A $H
stop_daemon
jfr_ok "$(ls "$OUT"/*.jfr | tail -1)"
grep -q '^<6>ctxprof: stopped' "$DLOG" || fail "no stop message"
echo "PASS: daemon operations"
