# SPDX-License-Identifier: MIT
# series_lib.sh — the setting of the one-series-per-service tests (sourced after daemon_lib.sh
# and upload_lib.sh): two services under a daemon with split = $SERIES_SPLIT (default process;
# host: one file for both, split by process at upload) uploading to a real receiver, each in
# its own cgroup of this run: checkout-svc (wl_otel, service.name from its OTEP 4719 process
# context) in $CG, cart-svc (wl_otel_ctx_a, libctx's context, service.name
# from OTEL_SERVICE_NAME) in a cgroup shaped like a kubelet's,
# $CG/kubepods-burstable-pod<uid with _>.slice/cri-containerd-<64 hex>.scope. Sets POD_UID,
# CONTAINER_ID, HOST, and the pids O (checkout) and C (cart). Pyroscope (jfr): names lists the
# series of the requests received, has_name waits for one.
POD_UID=8f4a1b2c-3d4e-5f60-7182-93a4b5c6d7e8
CONTAINER_ID=$(echo "ctxprof fleet test" | sha256sum | cut -c1-64)
HOST=$(hostname)
# series_start FORMAT: the receiver, both services and the daemon (FORMAT jfr or otlp)
series_start() {
	start_receiver
	cat >"$TMP/ctxprof.conf" <<CONF
[targets]
mode = selectors
cgroup = $CGSEL
[output]
directory = $OUT
split = ${SERIES_SPLIT:-process}
chunk-period = 500ms
rotate-period = 2s
[daemon]
status-file = $ST
[upload]
url = http://127.0.0.1:$PORT
format = $1
application = fleet-default
tags = env=test
timeout = 2s
retry-min = 100ms
retry-max = 400ms
stop-grace = 10s
CONF
	spawn "$WL/wl_otel" 0 2 >"$TMP/o.out"
	O=$SPAWNED
	OTEL_SERVICE_NAME=cart-svc spawn -g "kubepods-burstable-pod${POD_UID//-/_}.slice/cri-containerd-$CONTAINER_ID.scope" \
		"$WL/wl_otel_ctx_a" 0 2 >"$TMP/c.out"
	C=$SPAWNED
	wait_for 10 "both services ready" eval 'grep -q ready "$TMP/o.out" && grep -q ready "$TMP/c.out"'
	start_daemon --config "$TMP/ctxprof.conf"
}

# the decoded name= of every request received: "DIR NAME{TAGS}", one Python for all of them
# (one per request made every poll quadratic: a few hundred requests cost minutes)
names() {
	python3 - "$RECV" <<'PY'
import glob, os, sys, urllib.parse as u
def num(d):
    return int(d.rsplit("-", 1)[1])
for d in sorted(glob.glob(os.path.join(sys.argv[1], "req-[0-9]*")), key=num):
    try:
        with open(os.path.join(d, "query")) as f:
            q = f.read()
    except OSError:
        continue
    print(d, u.parse_qs(q).get("name", ["(no name)"])[0])
PY
}
# printed when a wait_for times out: the series that did arrive (an OTLP test sets its own)
wait_for_context() { echo "--- received (count, name):"; names 2>/dev/null | sed 's/^[^ ]* //' | sort | uniq -c; }
has_name() { names 2>/dev/null | grep " $1{" >/dev/null; }
