#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel, long
# One series per service in the default configuration (split = host) for Pyroscope
# (format = jfr, POST /ingest): the one host file holds two services, so it is uploaded as one
# request per process (a pprof of that process's samples, format=pprof) named by its service,
# with its host, pid, executable, container and pod tags and the user's, plus one under
# `application` for samples of no known process. Go's pprof reads every body; each request of
# a service carries only that process's samples (their pid label); the samples of all requests
# are those of all finished files (`ctxprof report`), and so are those with a context label or
# span (pprof sample labels): splitting loses none and sends none twice,
# also when Pyroscope answers 500 for a while (each series is a spool entry of its own).
. "$(dirname "$0")/daemon_lib.sh"
. "$(dirname "$0")/upload_lib.sh"
. "$(dirname "$0")/series_lib.sh"
command -v go >/dev/null || need_oracle "go tool pprof (golang-go, make deps-test)"
export HOME=$TMP GOCACHE=$TMP/gocache
trap 'stop_receiver; cleanup' EXIT
SERIES_SPLIT=host
series_start jfr
wait_for 60 "a profile named checkout-svc" has_name checkout-svc
wait_for 60 "a profile named cart-svc" has_name cart-svc
# Pyroscope down for a while (500): the series of a file are spool entries of their own, and
# each one accepted is not sent again when the rest are retried (the totals below)
recv_mode 500
wait_for 60 "two requests answered 500" eval '[ "$(seen "^500$")" -ge 2 ]'
recv_mode ok
wait_for 60 "delivering again after the 500s" eval 'grep -q "delivering again" "$DLOG"'
n0=$(received)
wait_for 60 "two more requests after the 500s" eval '[ "$(received)" -ge $((n0 + 2)) ]'
stop_daemon
names | tee "$TMP/names"
want_o="checkout-svc{env=test,host_name=$HOST,process_pid=$O,process_executable_name=wl_otel}"
want_c="cart-svc{env=test,host_name=$HOST,process_pid=$C,process_executable_name=wl_otel_ctx_a,container_id=$CONTAINER_ID,k8s_pod_uid=$POD_UID}"
want_rest="fleet-default{env=test,host_name=$HOST}"
# "SAMPLES PIDS LABELLED" of a pprof body (go tool pprof -raw): the sample total, the distinct
# values of its numeric pid label, and the samples with a context label or span_id
pprof_summary() {
	go tool pprof -raw "$1" 2>"$TMP/raw.err" >"$TMP/raw" || {
		cat "$TMP/raw.err"
		fail "go tool pprof cannot read $1"
	}
	python3 - "$TMP/raw" <<'PY'
import re, sys
part, total, pids, labelled, n, cur = "head", 0, set(), 0, 0, False
for l in open(sys.argv[1]).read().split("\n"):
    if l.startswith("Samples:"): part = "samples"; continue
    if l.startswith("Locations"): break
    if part != "samples": continue
    m = re.match(r"\s+(\d+)\s+(\d+): [\d ]+$", l)
    if m:
        n, cur = int(m.group(1)), False
        total += n
    for k, v in re.findall(r"(\S+):\[([^\]]*)\]", l):
        if k == "pid":
            pids.add(v)
        elif k not in ("process", "thread") and not cur:
            labelled, cur = labelled + n, True  # a context label or span_id
print(total, ",".join(sorted(pids)) or "-", labelled)
PY
}
sent=0
n_o=0
n_c=0
n_whole=0
sent_l=0
while read -r d name; do
	q=$(cat "$d/query")
	case "$q" in
	*"format=pprof"*"spyName=ctxprof"*)
		[ -s "$d/profile" ] || fail "$d: no profile part"
		read -r n pids l <<<"$(pprof_summary "$d/profile")"
		sent_l=$((sent_l + l)) ;;
	*"format=jfr"*"spyName=ctxprof"*)
		# a file whose known processes are of one service (before both ran) goes whole
		[ "$name" = "$want_rest" ] || fail "$d: a whole file as $name, expected $want_rest"
		n=$("$CTXPROF" report --format collapsed "$d/jfr" 2>/dev/null | awk '{ n += $NF } END { print n + 0 }')
		n_whole=$((n_whole + 1)) ;;
	*) fail "$d: query $q" ;;
	esac
	[ "$n" -gt 0 ] || fail "$d ($name): a request without samples"
	case "$name" in
	checkout-svc*) [ "$name" = "$want_o" ] || fail "$d: $name, expected $want_o"
		[ "$pids" = "$O" ] || fail "$d ($name): samples of pids $pids"; n_o=$((n_o + 1)) ;;
	cart-svc*) [ "$name" = "$want_c" ] || fail "$d: $name, expected $want_c"
		[ "$pids" = "$C" ] || fail "$d ($name): samples of pids $pids"; n_c=$((n_c + 1)) ;;
	"$want_rest") ;;
	*) fail "$d: a series of neither service: $name" ;;
	esac
	sent=$((sent + n))
done <"$TMP/names"
dup=$(for d in "$RECV"/req-[0-9]*; do cat "$d/profile" "$d/jfr" 2>/dev/null | sha256sum; done | sort | uniq -d | wc -l)
[ "$dup" = 0 ] || fail "$dup request bodies arrived twice"
[ "$n_o" -gt 0 ] && [ "$n_c" -gt 0 ] || fail "checkout-svc $n_o requests, cart-svc $n_c"
wrote=$(for f in "$OUT"/ctxprof-*.jfr; do "$CTXPROF" report --format collapsed "$f" 2>/dev/null; done |
	awk '{ n += $NF } END { print n + 0 }')
# the context labels and spans the files hold, the requests carry (as pprof sample labels)
wrote_l=0
for f in "$OUT"/ctxprof-*.jfr; do
	"$CTXPROF" report --format pprof -o "$TMP/f.pb.gz" "$f" 2>/dev/null || fail "ctxprof report --format pprof $f"
	read -r _ _ l <<<"$(pprof_summary "$TMP/f.pb.gz")"
	wrote_l=$((wrote_l + l))
done
echo "samples with a context label or span: the files $wrote_l, the pprof requests $sent_l"
[ "$n_whole" -gt 0 ] || [ "$sent_l" = "$wrote_l" ] || fail "labelled samples: the requests $sent_l, the files $wrote_l"
echo "split = host: $(ls "$OUT"/ctxprof-*.jfr | wc -l) files, $wrote samples; $(wc -l <"$TMP/names") requests ($n_whole whole files) carry $sent"
[ "$sent" -gt 0 ] && [ "$sent" = "$wrote" ] || fail "the requests carry $sent samples, the files $wrote"
echo "PASS: two services, two Pyroscope series (checkout-svc $n_o, cart-svc $n_c requests) from one host file, with host, pid, executable, container and pod"
