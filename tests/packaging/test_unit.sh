#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: alone (make install rewrites build/libctx.pc for its own PREFIX)
# The systemd unit: `systemd-analyze verify` must accept it without a single warning (verify
# needs ExecStart's binary to exist, so a copy points at the built ctxprof and the source
# config), the installed copy (make install into a scratch root) must verify too, and the
# offline security review must rate its exposure at most 3.0; the hardening the docs
# promise must be present: bounded memory (MemoryMax, the figure docs/daemon.md derives),
# tasks and core dumps, no kernel log, a system call allow list.
. "$(dirname "$0")/lib.sh"
U=packaging/systemd/ctxprof.service
[ -x "$B/ctxprof" ] || fail "no $B/ctxprof (run make)"
command -v systemd-analyze >/dev/null || fail "systemd-analyze missing (Debian package systemd)"

verify() { # unit file: no output at all on stderr/stdout, exit 0
	systemd-analyze verify "$1" >"$TMP/verify.out" 2>&1
	local rc=$?
	cat "$TMP/verify.out"
	[ $rc = 0 ] || fail "systemd-analyze verify $1 exited $rc"
	[ ! -s "$TMP/verify.out" ] || fail "systemd-analyze verify $1 printed warnings"
}

mkdir -p "$TMP/u"
sed -e "s|^ExecStart=/usr/bin/ctxprof |ExecStart=$SRC/$B/ctxprof |" \
	-e "s|--config /etc/ctxprof/ctxprof.conf|--config $SRC/packaging/ctxprof.conf|" "$U" >"$TMP/u/ctxprof.service"
grep -q "^ExecStart=$SRC/$B/ctxprof daemon --config $SRC/packaging/ctxprof.conf$" "$TMP/u/ctxprof.service" ||
	fail "ExecStart line not in the expected form"
verify "$TMP/u/ctxprof.service"
ok "verify (source unit, ExecStart -> built binary)"

# A unit with a typo must make verify complain, or the check above proves nothing.
sed 's/^ProtectHome=/ProtectHomme=/' "$TMP/u/ctxprof.service" >"$TMP/u/bad.service"
systemd-analyze verify "$TMP/u/bad.service" >"$TMP/bad.out" 2>&1
grep -q ProtectHomme "$TMP/bad.out" || fail "verify did not notice an unknown key"
ok "verify notices an unknown key"

make -s --no-print-directory B="$B" install-ctxprof install-service DESTDIR= \
	PREFIX="$TMP/root/usr" SYSCONFDIR="$TMP/root/etc" >/dev/null || fail "make install failed"
verify "$TMP/root/usr/lib/systemd/system/ctxprof.service"
ok "verify (installed unit)"

for k in "Type=simple" "KillSignal=SIGTERM" 'ExecReload=/bin/kill -HUP $MAINPID' \
	"Restart=on-failure" "NoNewPrivileges=yes" "ProtectSystem=strict" \
	"ReadWritePaths=/var/lib/ctxprof" "StateDirectory=ctxprof" "StateDirectoryMode=0750" \
	"RuntimeDirectory=ctxprof" "ProtectHome=read-only" "PrivateTmp=yes" \
	"RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK" "LockPersonality=yes" "MemoryDenyWriteExecute=yes" \
	"SystemCallArchitectures=native" "LimitCORE=0" "ProtectKernelLogs=yes" \
	"ProtectKernelTunables=yes" "PrivateMounts=yes" "TasksMax=256" "Nice=-10" "ProtectProc=invisible" \
	"SystemCallFilter=@system-service bpf perf_event_open seccomp" "SystemCallErrorNumber=EPERM"; do
	grep -qxF "$k" "$U" || fail "unit lacks $k"
done
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$U")
[ "$caps" = "$(sed -n 's/^AmbientCapabilities=//p' "$U")" ] || fail "ambient set differs from bounding set"
# the last three: the parser helper gives up root (without them the daemon does not start:
# tests/integration/test_daemon_deploy_caps.sh runs it with exactly this set)
for c in CAP_BPF CAP_PERFMON CAP_SYS_PTRACE CAP_SYS_RESOURCE CAP_CHECKPOINT_RESTORE CAP_DAC_READ_SEARCH \
	CAP_SETUID CAP_SETGID CAP_SETPCAP; do
	[[ " $caps " == *" $c "* ]] || fail "bounding set lacks $c"
done
for c in $caps; do # every capability is justified in a comment
	grep -qE "^#   $c " "$U" || fail "$c has no justification comment"
done
# ProtectKernelLogs= takes CAP_SYSLOG out of the bounding set: listing it would mislead
for c in CAP_SYS_ADMIN CAP_DAC_OVERRIDE CAP_NET_ADMIN CAP_SYSLOG; do
	[[ " $caps " != *" $c "* ]] || fail "bounding set holds $c"
done
ok "hardening directives and capabilities: $caps"

# MemoryMax is the ceiling docs/daemon.md derives from the worst case (and the hostile tests
# hold the daemon's RSS under): the unit and the doc name the same figure.
mm=$(sed -n 's/^MemoryMax=//p' "$U")
[ -n "$mm" ] || fail "unit sets no MemoryMax"
grep -qF "MemoryMax=$mm" docs/daemon.md || fail "docs/daemon.md does not derive MemoryMax=$mm"
ok "MemoryMax=$mm, as docs/daemon.md derives it"

systemd-analyze security --offline=yes --threshold=30 "$TMP/u/ctxprof.service" >"$TMP/sec.out" 2>&1
rc=$?
grep 'Overall exposure' "$TMP/sec.out"
[ $rc = 0 ] || fail "exposure above 3.0 (systemd-analyze security exited $rc)"
ok "security review"
echo PASS
