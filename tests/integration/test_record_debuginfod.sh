#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# debuginfod is off unless CTXPROF_DEBUGINFOD=1 (stack/debuginfod_policy.h): with
# DEBUGINFOD_URLS pointing at a listener on 127.0.0.1 that counts connections, a DWARF
# recording (unwinding and symbolization both look for debug files) makes none; opted in, it
# makes some (so the listener does see libdw's requests), and the profiled command still gets
# DEBUGINFOD_URLS in its environment.
. "$(dirname "$0")/sampler_lib.sh"
command -v python3 >/dev/null || skip "needs python3 for the listener"
python3 -u - "$TMP/port" "$TMP/conns" <<'PY' &
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
n = 0
while True:
    c, _ = s.accept(); n += 1
    open(sys.argv[2], "w").write(str(n))
    c.settimeout(1)
    try:
        c.recv(4096); c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    except OSError:
        pass
    c.close()
PY
lsn=$!
trap 'kill $lsn 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do [ -s "$TMP/port" ] && break; sleep 0.1; done
[ -s "$TMP/port" ] || fail "listener did not start"
url=http://127.0.0.1:$(cat "$TMP/port")
conns() { cat "$TMP/conns" 2>/dev/null || echo 0; }

# the command's environment is its own: it still sees DEBUGINFOD_URLS
DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$TMP/cache record_ok 60 -F 999 \
	--call-graph dwarf -o "$TMP/off.txt" -- sh -c 'echo "$DEBUGINFOD_URLS" >"$0"; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' "$TMP/env"
echo "default: $(conns) connections to $url"
[ "$(conns)" = 0 ] || fail "$(conns) connections to debuginfod without CTXPROF_DEBUGINFOD=1"
grep -q "not using DEBUGINFOD_URLS" "$TMP/e" || fail "no note that DEBUGINFOD_URLS is ignored"
[ "$(cat "$TMP/env")" = "$url" ] || fail "the command lost DEBUGINFOD_URLS"

CTXPROF_DEBUGINFOD=1 DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$TMP/cache record_ok 120 \
	-F 999 --call-graph dwarf -o "$TMP/on.txt" -- sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'
echo "CTXPROF_DEBUGINFOD=1: $(conns) connections"
[ "$(conns)" -gt 0 ] || fail "opted in, libdw made no request (the listener is not seen)"
echo "PASS: debuginfod off by default"
