# SPDX-License-Identifier: MIT
# hostile_lib.sh — helpers for the hostile-target root tests (sourced, not run). On top of
# daemon_lib.sh (OUT, ST, spawn, start_daemon, dstat, jfr_ok, ...):
#   attacker_user              create this run's unprivileged user (ATK, ATK_UID, ATK_HOME);
#                              removed at exit
#   as_attacker CMD...         run CMD as that user (no capabilities, no groups)
#   second_user                create this run's second unprivileged user (VIC, VIC_UID,
#                              VIC_HOME), the attacker's neighbour; removed at exit
#   spawn_second CMD...        spawn CMD as that user inside the run's cgroup (SPAWNED)
#   new_user NAME              one more user of this run (NEW_UID, NEW_HOME); removed at exit
#   spawn_user NAME CMD...     spawn CMD as user NAME inside the run's cgroup (SPAWNED)
#   parser_lane_pid KEY        the daemon's parser helper for lane KEY (system, uid=N: its
#                              argv[0] is ctxprof-parser:KEY); fails when none runs
#   spawn_churn                an attacker process running a new copy of wl_attrib (a new
#                              module it owns) every second (SPAWNED)
#   assert_lane_parsed PID FILE  parser helper PID parsed FILE (it keeps the modules it parses
#                              open) and no file of the attacker's (under ATK_HOME)
#   start_helper_killer SPARE [TAG]  kill every parser helper of the daemon but pid SPARE and
#                              the one whose argv[0] is TAG within a millisecond of its exec,
#                              as often as a user's crafted bytes could crash it, until the
#                              daemon is gone (HELPER_KILLER: its pid)
#   spawn_attacker CMD...      spawn CMD as that user inside the run's cgroup (SPAWNED)
#   start_control              the control workload (libctx, busy, publishes context) in the
#                              run's cgroup: CONTROL (its pid)
#   start_default_daemon       the daemon in its default configuration (mode = context, the
#                              whole host), only output and status redirected to the run's dir
#   control_rate SECONDS       samples per CPU-second of the control target over SECONDS
#   control_ctx_rate SECONDS   the same for its samples with context
#   rate_baseline              CONTROL_BASE: control_ctx_rate before the attack
#   rate_window_open           the window of assert_rate_kept opens now (as the attack starts)
#   assert_rate_kept           the control target's context rate is >= 90% of CONTROL_BASE,
#                              over at least 8 s from the window's opening (else from now)
#   assert_fresh               `ctxprof status` says running (exit 0), not stale (5)
#   daemon_cpu_during CMD...   run CMD; DAEMON_CPU_PCT: the daemon's CPU meanwhile (% of a core)
#   daemon_cpu_mark, daemon_cpu_since  the same from the mark to now
#   daemon_rss_kb              the daemon's VmRSS in KiB
#   assert_rss_bounded         that RSS is under the documented ceiling (the unit's MemoryMax)
#   recording_so_far FILE      the recording so far (its complete chunks) copied into FILE
#   watch_opens PATH...        record every open of PATH and who opened it (fanotify; else
#                              inotify) until the test ends; assert_not_opened fails if the
#                              daemon under test (or anyone, when the opener is unknown)
#                              opened one
#   fifo_no_reader FIFO        true when nobody has FIFO open for reading (a blocked
#                              open(O_RDONLY) is a reader)
#   daemon_in_fifo_open FIFO   true when the daemon under test (DPID) holds FIFO open or a
#                              thread of it waits in a FIFO open (another daemon on the
#                              host may be the reader fifo_no_reader sees)
#   daemon_without_caps CAP,.. make start_default_daemon run the daemon with these
#                              capabilities dropped from its bounding set (setpriv)
#   start_daemon_without_map_files  start_control, and the default daemon without the
#                              capabilities /proc/PID/map_files needs; rate_baseline
#   spawn_forged_maps_line PATH  an attacker process mapping a file whose maps line is
#                              longer than 4 KiB and ends in a forged line naming PATH
#                              (SPAWNED)
#   start_fuse_stall SRC [--good BYTES] [--opens N] [--lookups N]
#                              a FUSE mount the attacker owns (tests/hostile/fuse_stall.c,
#                              run as root) at FUSE_DIR (default ATK_HOME/fuse) serving
#                              FUSE_FILE, a copy of SRC whose reads from BYTES on (or opens
#                              after the first N, or lookups after the first N) are never
#                              answered; FUSE_CONN is its /sys/fs/fuse/connections entry
#   stop_fuse_stall            abort that connection (every blocked reader returns), unmount
#                              it (MNT_DETACH) and stop the server; also done at exit
#   spawn_chroot_mapper ROOT FILE...  an attacker process in a user and mount namespace of
#                              its own, chrooted to ROOT, mapping each /FILE (8 KiB, from
#                              ROOT) PROT_EXEC; it creates ROOT/ready then (SPAWNED)
#   spawn_fuse_mapper          an attacker process that opens FUSE_FILE and maps it
#                              PROT_READ|PROT_EXEC without touching a page (SPAWNED)
#   fuse_stalled               true when the FUSE server has left a request unanswered
#   daemon_in_fuse             true when a thread of the daemon under test is the reader the
#                              FUSE server left unanswered
#   assert_fuse_refused WHAT SECONDS  within SECONDS the daemon refused a file (refused_files
#                              rose since start_fuse_stall) without a thread of it waiting
#                              in the server; then the status stays fresh and the control
#                              target keeps its context rate (assert_rate_kept)
#   assert_sigterm_under_fuse  SIGTERM stops the daemon in its normal time while the server
#                              stalls; the recording is readable (the server aborted after)
#   spawn_fuse_pctx            an attacker process whose OpenTelemetry process context
#                              (OTEL_CTX) points its payload into FUSE_FILE, mapped (SPAWNED)
#   spawn_fuse_loader spin|sleep  an attacker process that loads its own copy of libctx (it
#                              defines the context variables), then maps FUSE_FILE over every
#                              data mapping of it after its code (the ABI version words and
#                              the loader's TLS slots the locator reads); spins or sleeps
#                              (SPAWNED)
# Each test: attacker_user; start_control; start_default_daemon; rate_baseline; the attack;
# then the asserts. A test picks targets by pid (CONTROL, SPAWNED), never by name.
. "$(dirname "${BASH_SOURCE[0]}")/../integration/daemon_lib.sh"
ATK=
ATK_UID=
ATK_HOME=
VIC=
VIC_UID=
VIC_HOME=
MADE_USERS=()
CONTROL=
CONTROL_BASE=
WATCH_PID=
WATCH_LOG=$TMP/opens.log
# the shared cleanup of daemon_lib.sh, then the user and the watcher. A daemon an attack
# stopped (blocked in an open that SIGTERM's handler restarts) is killed after 10 s.
hostile_cleanup() {
	[ -n "$WATCH_PID" ] && kill "$WATCH_PID" 2>/dev/null
	stop_fuse_stall
	if [ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null; then
		for _ in $(seq 100); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$DPID" 2>/dev/null && echo "the daemon ignored SIGTERM for 10 s: killed" &&
			kill -9 "$DPID"
		wait "$DPID" 2>/dev/null
		DPID=
	fi
	cleanup
	local u
	for u in "${MADE_USERS[@]}"; do
		pkill -9 -u "$u" 2>/dev/null
		for _ in $(seq 50); do pgrep -u "$u" >/dev/null || break; sleep 0.1; done
		userdel "$u" 2>/dev/null
		rm -rf "$TMP/home-$u"
	done
}
trap hostile_cleanup EXIT
# a user of this run (removed at exit): NEW_UID, NEW_HOME (its home, below the run's dir)
new_user() { # NAME
	command -v useradd >/dev/null || skip "needs useradd (an unprivileged user)"
	command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
	NEW_HOME=$TMP/home-$1
	useradd -M -N -d "$NEW_HOME" -s /usr/sbin/nologin "$1" || fail "cannot create user $1"
	MADE_USERS+=("$1")
	NEW_UID=$(id -u "$1")
	mkdir -p "$NEW_HOME" && chown "$1" "$NEW_HOME" && chmod 0755 "$NEW_HOME"
	chmod 0755 "$TMP" # the user reaches its home below the run's dir
}
attacker_user() {
	ATK=ctxatk$$
	new_user "$ATK"
	ATK_UID=$NEW_UID
	ATK_HOME=$NEW_HOME
}
second_user() {
	VIC=ctxvic$$
	new_user "$VIC"
	VIC_UID=$NEW_UID
	VIC_HOME=$NEW_HOME
}
as_attacker() {
	setpriv --reuid="$ATK_UID" --regid="$(id -g "$ATK")" --clear-groups --inh-caps=-all \
		--bounding-set=-all -- "$@"
}
spawn_user() { # USER CMD...
	local u=$1
	shift
	spawn setpriv --reuid="$(id -u "$u")" --regid="$(id -g "$u")" --clear-groups \
		--inh-caps=-all --bounding-set=-all -- "$@"
}
spawn_attacker() { spawn_user "$ATK" "$@"; }
spawn_second() { spawn_user "$VIC" "$@"; }
parser_lane_pid() { # KEY
	local k
	for k in $(cat /proc/"$DPID"/task/*/children 2>/dev/null); do
		[ "$(tr '\0' '\n' <"/proc/$k/cmdline" 2>/dev/null | head -1)" = "ctxprof-parser:$1" ] &&
			echo "$k" && return 0
	done
	return 1
}
spawn_churn() {
	cp "$B/tests/workloads/wl_attrib" "$ATK_HOME/wl_attrib" && chown "$ATK" "$ATK_HOME/wl_attrib" &&
		chmod 0755 "$ATK_HOME/wl_attrib" || fail "cannot copy wl_attrib for the attacker"
	cat >"$ATK_HOME/churn.sh" <<'CHURN'
cd "$1" || exit 1
i=0
while :; do # a new binary (a new module) every second
	i=$((i + 1))
	cp wl_attrib "w$i" && "./w$i" long 1 1 >/dev/null
	rm -f "w$i"
done
CHURN
	chmod 0644 "$ATK_HOME/churn.sh"
	spawn_attacker /bin/sh "$ATK_HOME/churn.sh" "$ATK_HOME"
}
assert_lane_parsed() { # PID FILE
	local fds
	fds=$(ls -l /proc/"$1"/fd/ 2>/dev/null)
	grep -qF "$2" <<<"$fds" || fail "parser helper $1 never opened $2:"$'\n'"$fds"
	! grep -qF "$ATK_HOME" <<<"$fds" || fail "an attacker's file reached parser helper $1:"$'\n'"$fds"
}
# A helper is a child running `ctxprof __parser` (not one between its fork and exec, which
# still shows the daemon's command line).
start_helper_killer() { # SPARE [TAG]
	/usr/bin/python3 - "$DPID" "$1" "${2:-}" <<'KILLER' &
import glob, os, signal, sys, time
daemon, spare, tag = sys.argv[1], sys.argv[2], sys.argv[3].encode()
while os.path.exists("/proc/" + daemon):
    for f in glob.glob("/proc/%s/task/*/children" % daemon):
        try:
            kids = open(f).read().split()
        except OSError:
            continue
        for k in kids:
            if k == spare:
                continue
            try:
                argv = open("/proc/%s/cmdline" % k, "rb").read().split(b"\0")
                if len(argv) < 2 or argv[1] != b"__parser" or (tag and argv[0] == tag):
                    continue
                os.kill(int(k), signal.SIGKILL)
            except OSError:
                pass
    time.sleep(0.001)
KILLER
	HELPER_KILLER=$!
}
start_control() {
	[ -x "$B/demo/demo_app" ] || fail "no $B/demo/demo_app (run make)"
	spawn "$B/demo/demo_app" 0 2
	CONTROL=$SPAWNED
}
start_default_daemon() { start_daemon "$@"; }
# The daemon as a deployment that drops capabilities from its bounding set runs it (e.g.
# checkpoint_restore,sys_admin: /proc/PID/map_files refused): CTXPROF becomes a wrapper.
daemon_without_caps() { # CAP[,CAP...]
	local real=$CTXPROF
	CTXPROF=$TMP/ctxprof-without-caps
	printf '#!/bin/sh\nexec setpriv --bounding-set=-%s %s "$@"\n' "${1//,/,-}" "$real" >"$CTXPROF"
	chmod +x "$CTXPROF"
}
# The control and the default daemon where /proc/PID/map_files is refused (its bounding set
# without CAP_CHECKPOINT_RESTORE and CAP_SYS_ADMIN: mapped files are opened by path), its
# rate before the attack measured; the attacker needs unprivileged user namespaces.
start_daemon_without_map_files() {
	as_attacker unshare -Ur true 2>/dev/null || skip "unprivileged user namespaces are disabled"
	daemon_without_caps checkpoint_restore,sys_admin
	start_control
	start_default_daemon
	grep -q 'CapEff' /proc/"$DPID"/status && [ $((0x$(awk '/^CapBnd/ { print $2 }' /proc/"$DPID"/status) >> 40 & 1)) = 0 ] ||
		fail "the daemon still has CAP_CHECKPOINT_RESTORE in its bounding set"
	rate_baseline
}
# samples (or KEY) of target PID in the status file now; 0 when not listed yet
target_count() { # PID [KEY]
	local v
	v=$(grep "^target pid=$1 " "$ST" | tr ' ' '\n' | sed -n "s/^${2:-samples}=//p")
	echo "${v:-0}"
}
# CPU time of PID in clock ticks (utime + stime of all its threads)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# daemon_cpu_mark, then daemon_cpu_since: DAEMON_CPU_PCT, the percent of one CPU the daemon
# (DPID) used in between; daemon_cpu_during CMD...: the same around CMD (run in this shell)
DCPU_T0= DCPU_D0=
daemon_cpu_mark() {
	DCPU_T0=$EPOCHREALTIME
	DCPU_D0=$(cpu_ticks "$DPID")
}
daemon_cpu_since() {
	DAEMON_CPU_PCT=$(python3 -c "import os, sys; print(round(100 * (int(sys.argv[2]) - int(sys.argv[1])) / os.sysconf('SC_CLK_TCK') / max(0.1, float(sys.argv[4]) - float(sys.argv[3])), 1))" \
		"$DCPU_D0" "$(cpu_ticks "$DPID")" "$DCPU_T0" "$EPOCHREALTIME")
}
daemon_cpu_during() {
	daemon_cpu_mark
	"$@"
	daemon_cpu_since
}
# KEY per CPU-second of the control target over a window of SECONDS, between two status
# rewrites. Per CPU-second, not per second: cpu-clock samples follow the CPU time the target
# gets, which a loaded test machine (or the attack itself) takes from it; what the daemon
# must keep is how many of the target's CPU-seconds it samples (at 99 Hz, about 99).
# A window opens just after a status rewrite and closes just after the first rewrite at least
# SECONDS - RATE_WINDOW_SLACK later: the daemon rewrites every STATUS_PERIOD (1 s), so a
# window of whole seconds closes on the rewrite its opening one scheduled, rather than
# sleeping past it and waiting a period more for the next (the counts and the ticks are both
# read at each end).
RATE_WINDOW_SLACK=0.5
RW_KEY= RW_A= RW_C0= RW_T0=
# status_snapshot PID KEY: "COUNT TICKS" as the status file is next rewritten: PID's KEY count
# on it and PID's CPU ticks read within ~10 ms of the rewrite. Counts and CPU time read by
# separate commands after the rewrite was seen (a few forks each, slow on a loaded host) put
# a window's ends up to ~1 s apart: a rate of 108.5/CPU-s at 99 Hz was measured that way.
status_snapshot() {
	python3 - "$ST" "$1" "$2" <<'PY'
import os, sys, time
path, pid, key = sys.argv[1:4]
def ident():
    try:
        st = os.stat(path)
        return (st.st_ino, st.st_mtime_ns)
    except FileNotFoundError:
        return None
def ticks():
    with open("/proc/%s/stat" % pid) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])  # utime, stime: fields 14 and 15
first, deadline = ident(), time.monotonic() + 60
while time.monotonic() < deadline:
    now = ident()
    if now is not None and now != first:
        t = ticks()
        with open(path) as f:
            lines = [l for l in f if l.startswith("target pid=%s " % pid)]
        fields = dict(kv.split("=", 1) for kv in lines[0].split()[1:] if "=" in kv) if lines else {}
        print(fields.get(key, "0"), t)
        sys.exit(0)
    time.sleep(0.01)
sys.exit("status_snapshot: %s not rewritten in 60 s" % path)
PY
}
# rate_window_open [KEY]: a window opens on the control's KEY (default context_samples), in
# this shell (RW_*): a test opens it as its attack starts, so that assert_rate_kept measures
# the attack itself and its wait for the attack's effect is part of the window
rate_window_open() {
	RW_KEY=${1:-context_samples}
	wait_for 60 "the control target $CONTROL in the status file" is_target "$CONTROL"
	read -r RW_A RW_C0 <<<"$(status_snapshot "$CONTROL" "$RW_KEY")"
	[ -n "$RW_C0" ] || fail "no status rewrite with the control's count"
	RW_T0=$EPOCHREALTIME
}
# rate_window_close SECONDS: prints the open window's rate once it spans SECONDS (less the
# slack); the caller clears RW_T0
rate_window_close() {
	local b c1 left
	left=$(python3 -c "import sys; print(max(0.0, float(sys.argv[1]) - float(sys.argv[2]) - (float(sys.argv[4]) - float(sys.argv[3]))))" \
		"$1" "$RATE_WINDOW_SLACK" "$RW_T0" "$EPOCHREALTIME")
	sleep "$left" # the rest of a measuring window, not a wait for a fact
	read -r b c1 <<<"$(status_snapshot "$CONTROL" "$RW_KEY")"
	[ -n "$c1" ] || fail "no status rewrite with the control's count"
	python3 -c "import os, sys; t = (int(sys.argv[4]) - int(sys.argv[3])) / os.sysconf('SC_CLK_TCK'); print(round((int(sys.argv[2]) - int(sys.argv[1])) / t, 1) if t > 0 else 0)" \
		"$RW_A" "$b" "$RW_C0" "$c1"
}
control_rate_of() { # KEY SECONDS
	rate_window_open "$1"
	rate_window_close "$2"
}
control_rate() { control_rate_of samples "$1"; }
control_ctx_rate() { control_rate_of context_samples "$1"; }
rate_baseline() {
	wait_for 60 "context samples of the control target" target_over "$CONTROL" 50 context_samples
	CONTROL_BASE=$(control_ctx_rate 8)
	echo "control target $CONTROL: $CONTROL_BASE context samples per CPU-second before the attack"
	python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$CONTROL_BASE" ||
		fail "the control target has no context samples before the attack"
}
# over the window the test opened as its attack started (rate_window_open), else over one from now
assert_rate_kept() { # [SECONDS]
	local r
	[ -n "$RW_T0" ] && [ "$RW_KEY" = context_samples ] || rate_window_open
	r=$(rate_window_close "${1:-8}")
	RW_T0=
	echo "control target $CONTROL: $r context samples per CPU-second during the attack (before: $CONTROL_BASE)"
	python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.9 * float(sys.argv[2]) else 1)" \
		"$r" "$CONTROL_BASE" || fail "control target sampled at $r/CPU-s with context, < 90% of $CONTROL_BASE/CPU-s"
}
assert_fresh() {
	local rc
	"$CTXPROF" status --status-file "$ST" >"$TMP/status.out" 2>&1
	rc=$?
	[ "$rc" = 0 ] || { cat "$TMP/status.out"; fail "ctxprof status exit $rc (0 = running, 5 = stale)"; }
}
daemon_rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$DPID/status"; }
# The documented ceiling of the daemon's memory (docs/daemon.md, "Worst-case memory"): the
# packaged unit's MemoryMax, in KiB.
rss_ceiling_kb() {
	local v
	v=$(sed -n 's/^MemoryMax=//p' packaging/systemd/ctxprof.service)
	case $v in
	*G) echo $((${v%G} * 1024 * 1024)) ;;
	*M) echo $((${v%M} * 1024)) ;;
	*) fail "no MemoryMax=NUMBER[MG] in packaging/systemd/ctxprof.service: '$v'" ;;
	esac
}
# The recording so far: its finished chunks, a file of their own (the chunk in progress is
# not in it yet).
recording_so_far() { # FILE
	cp "$(dstat current_file)" "$1" || fail "no current file"
}
assert_rss_bounded() {
	local rss ceil
	rss=$(daemon_rss_kb)
	ceil=$(rss_ceiling_kb)
	echo "daemon RSS ${rss} KiB (ceiling ${ceil} KiB)"
	[ -n "$rss" ] && [ "$rss" -lt "$ceil" ] || fail "daemon RSS ${rss:-?} KiB not under the documented ${ceil} KiB"
}
watch_opens() { # PATH...
	/usr/bin/python3 - "$@" >"$WATCH_LOG" 2>&1 <<'EOF' &
# fanotify (root): each open with the opener's pid and its ancestors (another daemon on the
# host may open what an attack planted too); inotify IN_OPEN where fanotify is refused.
import ctypes, os, select, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
FAN_REPORT_FID, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, IN_OPEN = 0x200, 1, 0x20, -100, 0x20
def ancestors(pid):
    out = []
    while pid > 1 and len(out) < 64:
        try:
            st = open("/proc/%d/status" % pid).read()
        except OSError:
            break
        out.append("%d:%s" % (pid, st.split("\n", 1)[0].split("\t", 1)[-1]))
        pid = int(st.split("PPid:\t", 1)[1].split("\n", 1)[0])
    return " ".join(out) or "?"
fds, fan = {}, True
for p in sys.argv[1:]:
    fd = libc.fanotify_init(FAN_REPORT_FID, os.O_RDONLY)
    if fd < 0 or libc.fanotify_mark(fd, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, p.encode()) < 0:
        fan = False
        break
    fds[fd] = p
if not fan:
    for fd in fds:
        os.close(fd)
    fds, ino = {}, libc.inotify_init1(0)
    for p in sys.argv[1:]:
        wd = libc.inotify_add_watch(ino, p.encode(), IN_OPEN)
        if wd < 0:
            print("cannot watch", p, flush=True)
            sys.exit(1)
        fds[wd] = p
print("watching", len(fds), "with", "fanotify" if fan else "inotify", flush=True)
while True:
    for fd in (select.select(list(fds), [], [])[0] if fan else [ino]):
        buf, i = os.read(fd, 8192), 0
        while i < len(buf):
            if fan:
                ln, _, _, _, _, _, pid = struct.unpack_from("IBBHQii", buf, i)
                print("opened", fds[fd], "by", ancestors(pid), flush=True)
            else:
                wd, _, _, ln = struct.unpack_from("iIII", buf, i)
                ln += 16
                print("opened", fds.get(wd, wd), "by ?", flush=True)
            i += ln
EOF
	WATCH_PID=$!
	wait_for 10 "the open watcher" grep -q '^watching' "$WATCH_LOG"
}
# Fails when the daemon under test (DPID) or a process it started opened a watched path (or
# anyone did, where the watcher could not tell who). Opens by other processes (another
# daemon on the same host reading the same attacker) are printed, not counted.
assert_not_opened() {
	grep -q '^watching' "$WATCH_LOG" || fail "the open watcher stopped: $(cat "$WATCH_LOG")"
	local l bad=0
	while read -r l; do
		if [[ " $l " == *" $DPID:"* || "$l" == *"by ?" ]]; then
			echo "$l"
			bad=1
		else
			echo "note: not the daemon under test: $l"
		fi
	done < <(grep '^opened' "$WATCH_LOG")
	[ $bad = 0 ] || fail "a planted file was opened by the daemon (see above)"
}
# A FIFO has a reader while someone sits in open(O_RDONLY) on it (or holds it open): then a
# non-blocking open for writing succeeds, else it fails with ENXIO.
fifo_no_reader() { # FIFO
	python3 - "$1" <<'EOF'
import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK)
except OSError as e:
    sys.exit(0 if e.errno == errno.ENXIO else 2)
os.close(fd)
sys.exit(1)
EOF
}
# An attacker process that maps a regular file under a directory path so deep that its
# /proc/PID/maps line is longer than 4 KiB, and whose tail, from byte 4351 of the line (the
# end of a 4352-byte fgets buffer), reads as a mapping line of its own:
#   7f0000000000-7f0000001000 r-xp 00000000 00:00 4242 PATH
# (the directories are named so). It checks its own maps line before it says ready.
spawn_forged_maps_line() { # PATH
	local ready=$ATK_HOME/forged.ready
	rm -f "$ready"
	cat >"$TMP/forge_maps_line.py" <<'EOF'
import mmap, os, sys, time
home, target, ready = sys.argv[1], sys.argv[2], sys.argv[3]
FGETS_END = 4351       # bytes of a maps line a 4352-byte fgets returns first
PATH_COL = 73          # where the path starts in a maps line (the kernel pads the fields)
forged = "7f0000000000-7f0000001000 r-xp 00000000 00:00 4242 " + target
pad = FGETS_END - PATH_COL - len(home) - 1  # "/" + pad dirs + "/" before the forged text
assert pad > 300, "home too long"
comps = []
while pad > 0:  # components of at most 200 bytes, each with its "/"
    n = min(200, pad - 1)
    if pad - n - 1 == 1:
        n -= 1  # never leave a single byte (an empty component)
    comps.append("p" * n)
    pad -= n + 1
comps += forged.split("/")
os.chdir(home)
for c in comps[:-1]:
    if c:
        os.makedirs(c, exist_ok=True)
        os.chdir(c)
with open(comps[-1], "wb") as f:
    f.write(b"\0" * 4096)
fd = os.open(comps[-1], os.O_RDONLY)
m = mmap.mmap(fd, 4096, mmap.MAP_PRIVATE, mmap.PROT_READ)
with open("/proc/self/maps", "rb") as f:
    lines = [l for l in f.read().split(b"\n") if b"4242 " + target.encode() in l]
assert len(lines) == 1 and lines[0][FGETS_END:].startswith(forged.encode()), \
    "maps line not as planned: %d %r" % (len(lines), lines[0][FGETS_END - 10:FGETS_END + 30] if lines else b"")
open(ready, "w").close()
while True:
    time.sleep(60)
EOF
	chmod 0644 "$TMP/forge_maps_line.py"
	# (a background job's stdin is /dev/null: the script is a file the attacker can read)
	spawn_attacker /usr/bin/python3 "$TMP/forge_maps_line.py" "$ATK_HOME" "$1" "$ready"
	wait_for 30 "the attacker's forged maps line" test -e "$ready"
}
daemon_in_fifo_open() { # FIFO
	local t
	for t in /proc/"$DPID"/task/*; do
		[ "$(cat "$t/wchan" 2>/dev/null)" = wait_for_partner ] && return 0
	done
	for t in /proc/"$DPID"/fd/*; do
		[ "$(readlink -f "$t" 2>/dev/null)" = "$(readlink -f "$1")" ] && return 0
	done
	return 1
}
# A FUSE server (as root) on a directory the attacker owns, serving a file the attacker owns.
# Skips where FUSE cannot be mounted.
FUSE_DIR=
FUSE_FILE=
FUSE_PID=
FUSE_CONN=
FUSE_LOG=$TMP/fuse_stall.log
start_fuse_stall() { # SRC [--good BYTES] [--opens N]
	local fx=${FUSE_STALL:-$B/tests/fixtures/fuse_stall} src=$1
	shift
	[ -x "$fx" ] || fail "no $fx (run make)"
	[ -c /dev/fuse ] || skip "needs /dev/fuse"
	[ -d /sys/fs/fuse/connections ] || skip "needs /sys/fs/fuse/connections"
	# the control files of a connection (abort) live on fusectl
	mountpoint -q /sys/fs/fuse/connections || mount -t fusectl none /sys/fs/fuse/connections ||
		skip "cannot mount fusectl (no way to abort a stalled connection)"
	FUSE_DIR=${FUSE_DIR:-$ATK_HOME/fuse}
	mkdir -p "$FUSE_DIR" && chown "$ATK_UID" "$FUSE_DIR"
	"$fx" "$FUSE_DIR" "$src" "$ATK_UID" "$(id -g "$ATK")" "$@" >"$FUSE_LOG" 2>&1 &
	FUSE_PID=$!
	wait_for 10 "the FUSE server" fuse_up
	FUSE_CONN=$(mountpoint -d "$FUSE_DIR" | cut -d: -f2)
	FUSE_FILE=$FUSE_DIR/lib.so
	FUSE_REFUSED0=$(dstat refused_files)
	[ -d "/sys/fs/fuse/connections/$FUSE_CONN" ] || fail "no fusectl entry for $FUSE_DIR ($FUSE_CONN)"
}
fuse_up() {
	grep -q '^ready' "$FUSE_LOG" 2>/dev/null && return 0
	kill -0 "$FUSE_PID" 2>/dev/null || { cat "$FUSE_LOG"; skip "cannot mount a FUSE file system"; }
	return 1
}
stop_fuse_stall() {
	[ -n "$FUSE_PID" ] || return 0
	[ -n "$FUSE_CONN" ] && echo 1 >"/sys/fs/fuse/connections/$FUSE_CONN/abort" 2>/dev/null
	umount -l "$FUSE_DIR" 2>/dev/null
	kill "$FUSE_PID" 2>/dev/null
	wait "$FUSE_PID" 2>/dev/null
	FUSE_PID=
}
fuse_stalled() { grep -q 'left unanswered' "$FUSE_LOG"; }
# a thread of the daemon under test waits for the FUSE server (its log names the reader)
daemon_in_fuse() {
	local p
	for p in $(sed -n 's/.* by pid \([0-9]*\) left unanswered/\1/p' "$FUSE_LOG"); do
		[ -d "/proc/$DPID/task/$p" ] && return 0
	done
	return 1
}
fuse_examined() { [ "$(dstat refused_files)" -gt "${FUSE_REFUSED0:-0}" ] 2>/dev/null || daemon_in_fuse; }
assert_fuse_refused() { # WHAT SECONDS
	wait_for "$2" "the daemon looking at $1" fuse_examined
	daemon_in_fuse && fail "the daemon opened $1: a thread of it is blocked in the server ($(cat "$FUSE_LOG"))"
	echo "files refused: $(dstat refused_files) (before the attack: $FUSE_REFUSED0)"
	assert_fresh
	assert_rate_kept
	assert_fresh
	daemon_in_fuse && fail "the daemon opened $1: a thread of it is blocked in the server"
}
spawn_chroot_mapper() { # ROOT FILE...
	cat >"$TMP/chroot_map.py" <<'PYEOF'
import ctypes, mmap, os, sys, time
root = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
uid, gid = os.getuid(), os.getgid()
if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS):
    raise OSError(ctypes.get_errno(), "unshare")
for f, v in (("setgroups", "deny"), ("uid_map", "0 %d 1" % uid), ("gid_map", "0 %d 1" % gid)):
    with open("/proc/self/" + f, "w") as w:
        w.write(v)
os.chroot(root)
os.chdir("/")
maps = []
for name in sys.argv[2:]:
    fd = os.open("/" + name, os.O_RDONLY)
    maps.append(mmap.mmap(fd, 8192, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_EXEC))
open("/ready", "w").close()
while True:
    time.sleep(60)
PYEOF
	chmod 0644 "$TMP/chroot_map.py"
	spawn_attacker /usr/bin/python3 "$TMP/chroot_map.py" "$@"
}
spawn_fuse_mapper() {
	local ready=$ATK_HOME/fuse_mapper.ready
	rm -f "$ready"
	cat >"$TMP/fuse_mapper.py" <<'EOF'
import mmap, os, sys, time
path, ready = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_RDONLY)
m = mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_EXEC)
open(ready, "w").close()
while True:
    time.sleep(60)
EOF
	chmod 0644 "$TMP/fuse_mapper.py"
	spawn_attacker /usr/bin/python3 "$TMP/fuse_mapper.py" "$FUSE_FILE" "$ready"
	wait_for 30 "the attacker mapping $FUSE_FILE" test -e "$ready"
}
# An attacker process that maps FUSE_FILE (untouched) and publishes an OpenTelemetry process
# context (OTEP 4719: a memfd named OTEL_CTX, mapped) whose header points the payload
# at that FUSE mapping, then spins (so that it is sampled and its context read) (SPAWNED).
spawn_fuse_pctx() {
	local ready=$ATK_HOME/fuse_pctx.ready
	rm -f "$ready"
	cat >"$TMP/fuse_pctx.py" <<'EOF'
import ctypes, os, struct, sys
path, ready = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
PROT_READ, PROT_WRITE, MAP_SHARED, MAP_PRIVATE, PAGE = 1, 2, 1, 2, 4096
fd = os.open(path, os.O_RDONLY)
fuse = libc.mmap(None, PAGE, PROT_READ, MAP_PRIVATE, fd, 0)
# a memfd named OTEL_CTX: its mapping reads /memfd:OTEL_CTX (deleted) in the maps
mfd = os.memfd_create("OTEL_CTX")
os.ftruncate(mfd, PAGE)
hdr = libc.mmap(None, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0)
assert fuse not in (None, ctypes.c_void_p(-1).value) and hdr not in (None, ctypes.c_void_p(-1).value)
# signature, version 2, payload_size, published_at_ns (not 0: published), payload address
ctypes.memmove(hdr, struct.pack("<8sIIQQ", b"OTEL_CTX", 2, 64, 1, fuse), 32)
open(ready, "w").close()
while True:
    pass
EOF
	chmod 0644 "$TMP/fuse_pctx.py"
	spawn_attacker /usr/bin/python3 "$TMP/fuse_pctx.py" "$FUSE_FILE" "$ready"
	local pid=$SPAWNED
	pctx_up() { [ -e "$ready" ] && return 0; kill -0 "$pid" 2>/dev/null || fail "the attacker's OTEL_CTX script failed"; return 1; }
	wait_for 30 "the attacker publishing its OTEL_CTX mapping" pctx_up
}
# SIGTERM while the FUSE server still stalls: the daemon stops (last chunk written,
# state=stopped) within its normal time, and what it recorded is readable. Its process is
# reaped only once a worker's FUSE wait ends: a request the server has read can no longer be
# killed (the kernel waits uninterruptibly), so the connection is aborted first - the daemon's
# own code waits for nothing.
assert_sigterm_under_fuse() {
	kill -TERM "$DPID"
	wait_for 20 "the daemon stopping on SIGTERM (the FUSE server still stalling)" daemon_stopped
	grep -q 'ctxprof: stopped' "$DLOG" || fail "the daemon did not finish its shutdown"
	kill -0 "$DPID" 2>/dev/null && [ "$(proc_state "$DPID")" != Z ] &&
		echo "note: daemon $DPID stopped, its process not reaped yet (a worker in a FUSE wait is let go by aborting the connection)"
	stop_fuse_stall
	wait_for 10 "the daemon process gone once the FUSE connection is aborted" daemon_gone
	wait "$DPID"
	local rc=$?
	DPID=
	[ "$rc" = 0 ] || fail "daemon exited $rc after SIGTERM"
	jfr_ok_all "$OUT"/*.jfr
}
proc_state() { awk '/^State/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
daemon_gone() { ! kill -0 "$DPID" 2>/dev/null || [ "$(proc_state "$DPID")" = Z ]; }
daemon_stopped() { daemon_gone || grep -q '^daemon .* state=stopped ' "$ST"; }
spawn_fuse_loader() { # spin|sleep
	local ready=$ATK_HOME/loader.$RANDOM.ready
	[ -e "$ATK_HOME/libctx.so" ] ||
		{ cp "$B/libctx.so" "$ATK_HOME/libctx.so" && chmod 0644 "$ATK_HOME/libctx.so"; }
	[ -e "$TMP/fuse_loader.py" ] || cat >"$TMP/fuse_loader.py" <<'EOF'
import ctypes, os, sys, time
lib, fuse, ready, mode = sys.argv[1:5]
ctypes.CDLL(lib)  # loaded and relocated: its TLS slots are filled
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
PROT_READ, MAP_PRIVATE, MAP_FIXED = 1, 2, 0x10
real = os.path.realpath(lib)
fd = os.open(fuse, os.O_RDONLY)
code_seen, n = False, 0
for line in open("/proc/self/maps").read().splitlines():
    f = line.split()
    if len(f) < 6 or f[5] != real:
        continue
    if "x" in f[1]:
        code_seen = True
        continue
    if not code_seen:
        continue
    lo, hi = (int(x, 16) for x in f[0].split("-"))
    if libc.mmap(lo, hi - lo, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) != lo:
        sys.exit("mmap over %x failed: errno %d" % (lo, ctypes.get_errno()))
    n += 1
if not n:
    sys.exit("no data mapping of %s after its code" % real)
open(ready, "w").close()
while True:
    if mode == "sleep":
        time.sleep(60)
EOF
	chmod 0644 "$TMP/fuse_loader.py"
	spawn_attacker /usr/bin/python3 "$TMP/fuse_loader.py" "$ATK_HOME/libctx.so" "$FUSE_FILE" \
		"$ready" "$1"
	local pid=$SPAWNED
	loader_up() {
		[ -e "$ready" ] && return 0
		kill -0 "$pid" 2>/dev/null || fail "the attacker's loader script failed"
		return 1
	}
	wait_for 30 "attacker $pid mapping $FUSE_FILE over its libctx's data" loader_up
}
