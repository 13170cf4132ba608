# SPDX-License-Identifier: MIT
# upload_lib.sh — helpers for the upload root tests (sourced after sampler_lib.sh or
# daemon_lib.sh): a real HTTP receiver (upload_receiver.py, Python's standard library) on
# 127.0.0.1 recording each accepted request under $RECV/req-N, its answer set by
# recv_mode; checks of what arrived with the real parsers.
RECV=$TMP/recv
RPID=
mkdir -p "$RECV"
# free_port: a port nothing listens on now (for a receiver that starts later)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# start_receiver [PORT]: the receiver in the background; PORT set once it listens
start_receiver() {
	rm -f "$RECV/port"
	python3 "$(dirname "$0")/upload_receiver.py" "$RECV" ${1:+"$1"} &
	RPID=$!
	wait_for 10 "the HTTP receiver listening" test -s "$RECV/port"
	PORT=$(cat "$RECV/port")
}
stop_receiver() { [ -n "$RPID" ] && kill "$RPID" 2>/dev/null && wait "$RPID" 2>/dev/null; RPID=; }
recv_mode() { echo "$*" >"$RECV/mode.tmp" && mv "$RECV/mode.tmp" "$RECV/mode"; }
# requests answered 2xx and saved
received() { ls -d "$RECV"/req-[0-9]* 2>/dev/null | wc -l; }
# requests the receiver saw whose mode (3rd field of its log) matches the regex $1
seen() { awk -v m="$1" '$3 ~ m' "$RECV/log" 2>/dev/null | wc -l; }
# the sha256 of every JFR body received, one per line, sorted
received_hashes() { cat "$RECV"/req-[0-9]*/jfr 2>/dev/null >/dev/null; for d in "$RECV"/req-[0-9]*; do [ -f "$d/jfr" ] && sha256sum <"$d/jfr" | cut -d' ' -f1; done | sort; }
# every finished recording in $OUT arrived (byte for byte): "nothing finished is lost"
all_finished_received() {
	local missing=0 h
	for f in "$OUT"/ctxprof-*.jfr; do
		[ -f "$f" ] || continue
		h=$(sha256sum <"$f" | cut -d' ' -f1)
		grep -qx "$h" "$TMP/rh" || missing=$((missing + 1))
	done
	[ "$missing" = 0 ]
}
refresh_hashes() { received_hashes >"$TMP/rh"; }
# the request in directory $1 is a Pyroscope JFR ingest: query, parts jfr + labels that
# grafana's parser (pyrojfr) reads, and labels that name every sample's context (PyroCheck)
check_jfr_request() { # DIR MIN_CONTEXT_SAMPLES
	local d=$1 q
	q=$(cat "$d/query")
	case "$q" in *"format=jfr"*"spyName=ctxprof"*) ;; *) fail "query of $d: $q" ;; esac
	echo "$q" | grep -q 'name=ctxprof-test%7B.*env%3Dtest' || fail "name without the tags: $q"
	echo "$q" | grep -Eq 'from=[0-9]+&until=[0-9]+' || fail "no from/until: $q"
	[ -s "$d/jfr" ] || fail "$d: no jfr part"
	T=$CTXPROF_TOOLS
	if [ -x "$T/pyroscope-jfr/pyrojfr" ]; then
		"$T/pyroscope-jfr/pyrojfr" "$d/jfr" >"$TMP/pyro.out" || fail "pyrojfr cannot read $d/jfr"
		pc=$(sed -n 's/.*with contextId != 0 (Pyroscope labels): //p' "$TMP/pyro.out")
		[ "${pc:-0}" -ge "$2" ] || fail "$d: Pyroscope's parser sees ${pc:-0} samples with context"
	else
		oracle_missing "$T/pyroscope-jfr/pyrojfr (Pyroscope's parser)"
	fi
	if [ "$2" -gt 0 ]; then
		[ -s "$d/labels" ] || fail "$d: no labels part"
		java -cp "$B/java" PyroCheck "$d/jfr" "$d/labels" || fail "$d: labels do not match the samples"
	fi
}
