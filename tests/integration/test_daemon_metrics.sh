#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# The daemon's [metrics] endpoint: a daemon with `listen = 127.0.0.1:0` (a free port the
# kernel picks, read from its log) serves valid Prometheus text (a strict parser in
# prom_check.py, and promtool where Debian's prometheus is installed) with the documented
# series; the sample counters grow while a busy target of this run's cgroup runs; with
# kernel.bpf_stats_enabled = 1 the BPF cost series appear; wrong paths, methods, junk bytes,
# idle connections, 50 scrapes at once and a connection flood are answered or refused while
# the daemon keeps sampling. Refused at start with a clear error (exit 1, nothing sampled):
# a port another process listens on, a non-loopback address without allow-remote; a
# malformed address is a config error (exit 2).
. "$(dirname "$0")/daemon_lib.sh"
PROM="python3 $(dirname "$0")/prom_check.py"
spawn bash -c 'while :; do :; done'
BUSY=$SPAWNED
start_daemon_metrics
PORT=${URL##*:}
PORT=${PORT%/metrics}
echo "endpoint $URL"
# series VALUE of the last scrape ($TMP/m.json), e.g. get 'ctxprof_errors_total{kind="sink"}'
get() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(int(d[sys.argv[2]]) if sys.argv[2] in d else "")' "$TMP/m.json" "$1"; }
scrape() { $PROM scrape "$URL" >"$TMP/m.json" || fail "scrape of $URL failed"; }

# 1. the series, valid text
scrape
for s in ctxprof_samples_total ctxprof_samples_received_total ctxprof_samples_lost_total \
	ctxprof_torn_span_reads_total ctxprof_unwind_errors_total ctxprof_targets \
	ctxprof_files_written_total ctxprof_bytes_written_total ctxprof_start_time_seconds \
	ctxprof_last_update_timestamp_seconds 'ctxprof_errors_total{kind="sink"}' \
	'ctxprof_stack_errors_total{stack="user"}' 'ctxprof_read_faults_total{what="span"}' \
	'ctxprof_go_total{what="layout_unknown"}' 'ctxprof_go_total{what="torn"}' \
	ctxprof_metrics_scrapes_total ctxprof_metrics_refused_series_total; do
	[ -n "$(get "$s")" ] || { cat "$TMP/m.json"; fail "no series $s"; }
done
if command -v promtool >/dev/null; then
	curl -sf "$URL" >"$TMP/m.txt" || fail "curl $URL"
	promtool check metrics <"$TMP/m.txt" || fail "promtool check metrics rejects the text"
	echo "promtool check metrics: ok"
else
	oracle_missing "promtool (Debian prometheus; the strict parser checked the text)"
fi
[ "$(get ctxprof_metrics_refused_series_total)" = 0 ] || fail "the daemon's own series were refused"

# 2. counters follow sampling: the busy loop is a target and its samples grow
is_busy_target() { scrape; [ "$(get ctxprof_targets)" -ge 1 ] && [ "$(get ctxprof_samples_total)" -gt 0 ]; }
wait_for 30 "the busy target sampled (ctxprof_targets >= 1, samples > 0)" is_busy_target
s0=$(get ctxprof_samples_received_total)
grows() { scrape; [ "$(get ctxprof_samples_received_total)" -gt "$s0" ]; }
wait_for 20 "ctxprof_samples_received_total growing past $s0" grows
echo "samples received: $s0 -> $(get ctxprof_samples_received_total)"

# 3. the BPF cost, when the kernel counts it
sysctl_lock /proc/sys/kernel/bpf_stats_enabled
bpf_stats=$(cat /proc/sys/kernel/bpf_stats_enabled)
trap 'echo "$bpf_stats" >/proc/sys/kernel/bpf_stats_enabled; cleanup' EXIT
echo 1 >/proc/sys/kernel/bpf_stats_enabled
bpf_on() { scrape; [ "$(get ctxprof_bpf_runs_total)" -gt 0 ] 2>/dev/null && [ -n "$(get ctxprof_bpf_seconds_per_sample)" ]; }
wait_for 20 "ctxprof_bpf_runs_total and ctxprof_bpf_seconds_per_sample with bpf_stats_enabled = 1" bpf_on
echo "bpf: $(get ctxprof_bpf_runs_total) runs, $(get ctxprof_bpf_seconds_per_sample) s per sample"
if command -v promtool >/dev/null; then # the BPF cost series are only there now
	curl -sf "$URL" >"$TMP/m.txt" || fail "curl $URL"
	promtool check metrics <"$TMP/m.txt" || fail "promtool check metrics rejects the text with the BPF cost"
fi
echo "$bpf_stats" >/proc/sys/kernel/bpf_stats_enabled
trap cleanup EXIT
sysctl_unlock

# 4. hostile and odd clients; the daemon keeps sampling and serving
scrape
s1=$(get ctxprof_samples_received_total)
$PROM abuse 127.0.0.1 "$PORT" || fail "the endpoint mishandled a client"
kill -0 "$DPID" || fail "the daemon died"
grows_after() { scrape; [ "$(get ctxprof_samples_received_total)" -gt "$s1" ]; }
wait_for 20 "sampling after the abuse" grows_after
[ "$(get ctxprof_metrics_scrapes_total)" -gt 50 ] || fail "scrapes not counted: $(get ctxprof_metrics_scrapes_total)"
stop_daemon

# 5. refused at start: the port taken, a remote address without opt-in, a bad address
python3 -c 'import socket,sys,time
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(1)
open(sys.argv[1],"w").write(str(s.getsockname()[1])); time.sleep(60)' "$TMP/taken" &
HOLDER=$!
KIDS="$KIDS $HOLDER"
wait_for 10 "a port held" test -s "$TMP/taken"
refused() { # EXIT-STATUS LOG-REGEX ARGS...
	local want=$1 re=$2 rc
	shift 2
	: >"$TMP/r.log"
	timeout 30 "$CTXPROF" daemon --config "$MCONF" --directory "$OUT" --status-file "$ST" "$@" >"$TMP/r.log" 2>&1
	rc=$?
	cat "$TMP/r.log"
	[ "$rc" = "$want" ] || fail "daemon $* exited $rc, want $want"
	grep -Eq "$re" "$TMP/r.log" || fail "daemon $*: no message matching $re"
	grep -q 'started: pid' "$TMP/r.log" && fail "daemon $* started sampling"
	return 0
}
refused 1 "^<3>ctxprof: \[metrics\] listen = 127.0.0.1:$(cat "$TMP/taken"): Address already in use" \
	--listen "127.0.0.1:$(cat "$TMP/taken")"
refused 1 '^<3>ctxprof: \[metrics\] listen = 0.0.0.0:0 is not a loopback address: set allow-remote = yes' \
	--listen 0.0.0.0:0
refused 2 '^<3>ctxprof: --listen 127.0.0.1: bad value' \
	--listen 127.0.0.1
kill "$HOLDER" "$BUSY"
oracle_verdict
echo "PASS: daemon metrics"
