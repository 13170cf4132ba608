#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# The daemon as each packaged deployment starts it, with exactly the capabilities it grants:
# the systemd unit (CapabilityBoundingSet=, with NoNewPrivileges=yes and ProtectProc=invisible:
# its /proc mounted hidepid=invisible, in a mount namespace of its own), the Kubernetes sidecar
# example (capabilities.add; allowPrivilegeEscalation: false is no_new_privs) and the
# Containerfile (--cap-add). Each time the daemon starts, its parser helper runs as
# parser-user (nobody) with no capability, and a process of another, unprivileged user that
# publishes context is sampled with context (hidepid does not hide it from a daemon that may
# ptrace it). The unit's run is traced with strace -f: every system call of the daemon and its
# helper must be in the unit's SystemCallFilter= (anything else would fail with EPERM there).
# Before, none of the three granted CAP_SETUID/SETGID/SETPCAP, and the daemon they started
# exited at once: "starting the parser helper as user nobody failed: setgroups(0) failed".
. "$(dirname "$0")/../hostile/hostile_lib.sh"
UNIT=packaging/systemd/ctxprof.service
K8S=packaging/kubernetes/ctxprof-sidecar.yaml
CF=packaging/container/Containerfile
command -v unshare >/dev/null || skip "needs unshare (util-linux)"
command -v strace >/dev/null || fail "needs strace (make deps-test)"
/usr/bin/python3 -c 'import yaml' 2>/dev/null || fail "needs python3-yaml (make deps-test)"
REAL=$(readlink -f "$CTXPROF")

# the capabilities each deployment grants, as setpriv's bounding-set list (+bpf,+perfmon,...)
setpriv_caps() { tr ' ' '\n' | grep . | sed 's/^CAP_//' | tr 'A-Z' 'a-z' | sed 's/^/+/' | paste -sd, -; }
UNIT_CAPS=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT" | setpriv_caps)
K8S_CAPS=$(/usr/bin/python3 -c 'import sys, yaml
pod = yaml.safe_load(open(sys.argv[1]))
side = [c for c in pod["spec"]["containers"] if c["name"] == "ctxprof"][0]
print(" ".join(side["securityContext"]["capabilities"]["add"]))' "$K8S" | setpriv_caps)
CF_CAPS=$(grep -o -- '--cap-add=[A-Z_]*' "$CF" | sed 's/--cap-add=//' | paste -sd' ' - | setpriv_caps)
[ -n "$UNIT_CAPS" ] && [ -n "$K8S_CAPS" ] && [ -n "$CF_CAPS" ] || fail "no capability list read"
HIDEPID=$(sed -n 's/^ProtectProc=//p' "$UNIT")

# CTXPROF becomes the daemon as deployment NAME starts it: a private mount namespace whose
# /proc is mounted hidepid=HIDE (when given), then no_new_privs and only CAPS in the bounding
# set (uid 0: its permitted and effective sets are the bounding set). With TRACE (a file),
# strace -f follows from there (setpriv, the daemon, its helper) and writes its counts there.
deployed() { # NAME CAPS [HIDE [TRACE]]
	local w=$TMP/ctxprof-$1 tr=
	[ -n "${4:-}" ] && tr="strace -f -qq -c -o $4"
	{
		echo '#!/bin/sh'
		echo "exec unshare -m --propagation private sh -c '${3:+mount -t proc -o hidepid=$3 proc /proc &&}" \
			"exec $tr setpriv --no-new-privs --inh-caps=-all --bounding-set=-all,$2 -- \"\$0\" \"\$@\"' $REAL \"\$@\""
	} >"$w"
	chmod +x "$w"
	CTXPROF=$w
}
# the first of PID's children that runs `ctxprof __parser` (not its helper spawner)
helper_of() {
	local k
	for k in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		[ "$(tr '\0' '\n' <"/proc/$k/cmdline" 2>/dev/null | sed -n 2p)" = __parser ] && echo "$k" && return
	done
}
# the daemon started (DPID), its helper confined, the other user's process (USER_PROC)
# sampled with context
check_running() { # NAME
	local h uid eff
	wait_for 30 "$1: the daemon's parser helper" eval '[ -n "$(helper_of "$DPID")" ]'
	h=$(helper_of "$DPID")
	uid=$(awk '/^Uid:/ { print $2 }' "/proc/$h/status")
	eff=$(awk '/^CapEff:/ { print $2 }' "/proc/$h/status")
	[ "$uid" = "$(id -u nobody)" ] || fail "$1: the parser helper $h runs as uid $uid"
	[ "$eff" = 0000000000000000 ] || fail "$1: the parser helper $h has CapEff $eff"
	wait_for 60 "$1: the other user's process $USER_PROC sampled with context" \
		target_over "$USER_PROC" 20 context_samples
	echo "$1: daemon $DPID (CapEff $(awk '/^CapEff:/ { print $2 }' "/proc/$DPID/status")), helper $h" \
		"uid $uid CapEff $eff; $(grep "^target pid=$USER_PROC " "$ST" | grep -o 'context_samples=[0-9]*')" \
		"of user $ATK's process $USER_PROC"
}

attacker_user # the other user: any unprivileged one
cp "$B/demo/demo_app" "$ATK_HOME/demo_app" && chmod 0755 "$ATK_HOME/demo_app"
spawn_attacker "$ATK_HOME/demo_app" 0 2
USER_PROC=$SPAWNED

for d in "kubernetes $K8S_CAPS" "containerfile $CF_CAPS"; do
	set -- $d
	deployed "$1" "$2"
	start_daemon
	check_running "$1"
	stop_daemon
done

# the unit, traced: strace (the process started) is the daemon's parent
deployed unit "$UNIT_CAPS" "${HIDEPID:-}" "$TMP/syscalls.txt"
rm -f "$ST"
"$CTXPROF" daemon --directory "$OUT" --status-file "$ST" >>"$DLOG" 2>&1 &
STRACE=$!
# (not the wrapper's mount, a child of the same process before it execs strace)
daemon_child() { pgrep -P "$STRACE" -x ctxprof; }
wait_for 30 "unit: the daemon under strace" daemon_child
DPID=$(daemon_child)
wait_for 60 "unit: the daemon's first status file" daemon_up
check_running "unit (hidepid=${HIDEPID:-none})"
kill -HUP "$DPID" # a reload too
status_refresh
kill -TERM "$DPID"
wait "$STRACE" || { tail -20 "$DLOG"; fail "unit: the daemon (under strace) did not stop cleanly"; }
DPID=
allowed=$(sed -n 's/^SystemCallFilter=//p' "$UNIT")
/usr/bin/python3 - "$TMP/syscalls.txt" $allowed <<'PYEOF' || fail "unit: system calls outside SystemCallFilter="
import subprocess, sys
out = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True, text=True, check=True).stdout
groups, cur = {}, None
for line in out.splitlines():
    if line.startswith("@"):
        cur = line.split()[0]
        groups[cur] = []
    elif cur and line.strip() and not line.strip().startswith("#"):
        groups[cur].append(line.strip())
def expand(name, seen):
    if not name.startswith("@"):
        return {name}
    if name in seen:
        return set()
    seen.add(name)
    return set().union(*[expand(m, seen) for m in groups[name]])
allowed = set().union(*[expand(a, set()) for a in sys.argv[2:]])
used = set()
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[-1] not in ("syscall", "total") and not f[-1].startswith("-"):
        used.add(f[-1])
print("unit: %d distinct system calls traced (daemon and helper), filter allows %d" % (len(used), len(allowed)))
missing = sorted(used - allowed)
if missing:
    sys.exit("outside the filter: " + " ".join(missing))
PYEOF
echo "PASS: the daemon runs with each deployment's capabilities; the unit's calls are all allowed"
