# hostile_lib.sh — helpers for the hostile-target root tests (sourced, not run). On top of
# daemon_lib.sh (OUT, ST, spawn, start_daemon, dstat, jfr_ok, ...):
#   attacker_user              create this run's unprivileged user (ATK, ATK_UID, ATK_HOME);
#                              removed at exit
#   as_attacker CMD...         run CMD as that user (no capabilities, no groups)
#   spawn_attacker CMD...      spawn CMD as that user inside the run's cgroup (SPAWNED)
#   start_control              the control workload (libctx, busy, publishes context) in the
#                              run's cgroup: CONTROL (its pid)
#   start_default_daemon       the daemon in its default configuration (mode = context, the
#                              whole host), only output and status redirected to the run's dir
#   control_rate SECONDS       samples per CPU-second of the control target over SECONDS
#   control_ctx_rate SECONDS   the same for its samples with context
#   rate_baseline              CONTROL_BASE: control_ctx_rate before the attack
#   assert_rate_kept           the control target's context rate is >= 90% of CONTROL_BASE
#   assert_fresh               `ctxprof status` says running (exit 0), not stale (5)
#   daemon_rss_kb              the daemon's VmRSS in KiB
#   assert_rss_bounded         that RSS is under the documented ceiling (the unit's MemoryMax)
#   recording_json OUT         the recording so far: samples (top frame) and Statistics as JSON
#   watch_opens PATH...        record every open of PATH (inotify IN_OPEN) until the test
#                              ends; assert_not_opened fails if any was opened
#   fifo_no_reader FIFO        true when nobody has FIFO open for reading (a blocked
#                              open(O_RDONLY) is a reader)
# Each test: attacker_user; start_control; start_default_daemon; rate_baseline; the attack;
# then the asserts. A test picks targets by pid (CONTROL, SPAWNED), never by name.
. "$(dirname "${BASH_SOURCE[0]}")/../integration/daemon_lib.sh"
ATK=
ATK_UID=
ATK_HOME=
CONTROL=
CONTROL_BASE=
WATCH_PID=
WATCH_LOG=$TMP/opens.log
# the shared cleanup of daemon_lib.sh, then the user and the watcher
hostile_cleanup() {
	[ -n "$WATCH_PID" ] && kill "$WATCH_PID" 2>/dev/null
	cleanup
	if [ -n "$ATK" ]; then
		pkill -9 -u "$ATK" 2>/dev/null
		for _ in $(seq 50); do pgrep -u "$ATK" >/dev/null || break; sleep 0.1; done
		userdel "$ATK" 2>/dev/null
		rm -rf "$ATK_HOME"
	fi
}
trap hostile_cleanup EXIT
attacker_user() {
	command -v useradd >/dev/null || skip "needs useradd (an unprivileged attacker)"
	command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
	ATK=ctxatk$$
	ATK_HOME=$TMP/home-$ATK
	useradd -M -N -d "$ATK_HOME" -s /usr/sbin/nologin "$ATK" || fail "cannot create user $ATK"
	ATK_UID=$(id -u "$ATK")
	mkdir -p "$ATK_HOME" && chown "$ATK" "$ATK_HOME" && chmod 0755 "$ATK_HOME"
	chmod 0755 "$TMP" # the attacker reaches its home below the run's dir
}
as_attacker() {
	setpriv --reuid="$ATK_UID" --regid="$(id -g "$ATK")" --clear-groups --inh-caps=-all \
		--bounding-set=-all -- "$@"
}
spawn_attacker() { spawn setpriv --reuid="$ATK_UID" --regid="$(id -g "$ATK")" --clear-groups \
	--inh-caps=-all --bounding-set=-all -- "$@"; }
start_control() {
	[ -x "$B/demo/demo_app" ] || fail "no $B/demo/demo_app (run make)"
	spawn "$B/demo/demo_app" 0 2
	CONTROL=$SPAWNED
}
start_default_daemon() { start_daemon "$@"; }
# samples (or KEY) of target PID in the status file now; 0 when not listed yet
target_count() { # PID [KEY]
	local v
	v=$(grep "^target pid=$1 " "$ST" | tr ' ' '\n' | sed -n "s/^${2:-samples}=//p")
	echo "${v:-0}"
}
# CPU time of PID in clock ticks (utime + stime of all its threads)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# KEY per CPU-second of the control target over a window of SECONDS, between two status
# rewrites. Per CPU-second, not per second: cpu-clock samples follow the CPU time the target
# gets, which a loaded test machine (or the attack itself) takes from it; what the daemon
# must keep is how many of the target's CPU-seconds it samples (at 99 Hz, about 99).
control_rate_of() { # KEY SECONDS
	local key=$1 secs=$2 a b c0 c1
	wait_for 60 "the control target $CONTROL in the status file" is_target "$CONTROL"
	status_refresh
	a=$(target_count "$CONTROL" "$key")
	c0=$(cpu_ticks "$CONTROL")
	sleep "$secs" # a measuring window, not a wait for a fact
	status_refresh
	b=$(target_count "$CONTROL" "$key")
	c1=$(cpu_ticks "$CONTROL")
	python3 -c "import os, sys; t = (int(sys.argv[4]) - int(sys.argv[3])) / os.sysconf('SC_CLK_TCK'); print(round((int(sys.argv[2]) - int(sys.argv[1])) / t, 1) if t > 0 else 0)" \
		"$a" "$b" "$c0" "$c1"
}
control_rate() { control_rate_of samples "$1"; }
control_ctx_rate() { control_rate_of context_samples "$1"; }
rate_baseline() {
	wait_for 60 "context samples of the control target" target_over "$CONTROL" 50 context_samples
	CONTROL_BASE=$(control_ctx_rate 5)
	echo "control target $CONTROL: $CONTROL_BASE context samples per CPU-second before the attack"
	python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$CONTROL_BASE" ||
		fail "the control target has no context samples before the attack"
}
assert_rate_kept() { # [SECONDS]
	local r
	r=$(control_ctx_rate "${1:-5}")
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
# The recording so far (its finished chunks, read as a file of their own) as `jfr print
# --json` of its samples, top frame only, and its ctxprof.Statistics, into OUT.
recording_json() { # OUT
	cp "$(dstat current_file)" "$TMP/so-far.jfr" || fail "no current file"
	jfr print --json --stack-depth 1 --events jdk.ExecutionSample,ctxprof.Statistics \
		"$TMP/so-far.jfr" >"$1" || fail "jfr print of the recording failed"
}
assert_rss_bounded() {
	local rss ceil
	rss=$(daemon_rss_kb)
	ceil=$(rss_ceiling_kb)
	echo "daemon RSS ${rss} KiB (ceiling ${ceil} KiB)"
	[ -n "$rss" ] && [ "$rss" -lt "$ceil" ] || fail "daemon RSS ${rss:-?} KiB not under the documented ${ceil} KiB"
}
watch_opens() { # PATH...
	python3 - "$@" >"$WATCH_LOG" 2>&1 <<'EOF' &
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
IN_OPEN = 0x20
fd = libc.inotify_init1(0)
wds = {}
for p in sys.argv[1:]:
    wd = libc.inotify_add_watch(fd, p.encode(), IN_OPEN)
    if wd < 0:
        print("cannot watch", p, flush=True)
        sys.exit(1)
    wds[wd] = p
print("watching", len(wds), flush=True)
while True:
    buf = os.read(fd, 4096)
    i = 0
    while i < len(buf):
        wd, mask, cookie, ln = struct.unpack_from("iIII", buf, i)
        print("opened", wds.get(wd, wd), flush=True)
        i += 16 + ln
EOF
	WATCH_PID=$!
	wait_for 10 "the open watcher" grep -q '^watching' "$WATCH_LOG"
}
assert_not_opened() {
	if grep '^opened' "$WATCH_LOG"; then
		fail "a planted file was opened (see above)"
	fi
	grep -q '^watching' "$WATCH_LOG" || fail "the open watcher stopped: $(cat "$WATCH_LOG")"
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
