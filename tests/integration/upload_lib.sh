# SPDX-License-Identifier: MIT
# upload_lib.sh — helpers for the upload root tests (sourced after sampler_lib.sh or
# daemon_lib.sh): a real HTTP receiver (upload_receiver.py, Python's standard library) on
# 127.0.0.1 recording each accepted request under $RECV/req-N, its answer set by
# recv_mode; checks of what arrived with the real parsers.
RECV=$TMP/recv
RPID=
mkdir -p "$RECV"
# start_receiver_down: a receiver that holds its port (PORT) but refuses connections until
# receiver_up: "the receiver is down", without a free port another test could take meanwhile
start_receiver_down() { start_receiver down; }
receiver_up() { touch "$RECV/up"; }
# start_receiver [PORT]: the receiver in the background; PORT set once it listens
start_receiver() {
	rm -f "$RECV/port"
	python3 "$(dirname "$0")/upload_receiver.py" "$RECV" ${1:+"$1"} &
	RPID=$!
	wait_for 60 "the HTTP receiver listening" test -s "$RECV/port"
	PORT=$(cat "$RECV/port")
}
stop_receiver() { [ -n "$RPID" ] && kill "$RPID" 2>/dev/null && wait "$RPID" 2>/dev/null; RPID=; }
recv_mode() { echo "$*" >"$RECV/mode.tmp" && mv "$RECV/mode.tmp" "$RECV/mode"; }
# requests answered 2xx and saved
received() { ls -d "$RECV"/req-[0-9]* 2>/dev/null | wc -l; }
# requests the receiver saw whose mode (3rd field of its log) matches the regex $1
seen() { awk -v m="$1" '$3 ~ m' "$RECV/log" 2>/dev/null | wc -l; }
# The protocol of the tests run for both (test_daemon_upload.sh, test_daemon_upload_spool.sh;
# their *_otlp.sh run them with UPLOAD_FORMAT=otlp, after sourcing otlp_lib.sh): jfr
# (Pyroscope's /ingest: a JFR body is the finished file, compared byte for byte) or otlp (a
# body is the file converted: compared as decoded against the upstream schema, but for its
# resource, with `ctxprof report --format otlp` of the file; the tests set group-by = none).
UPLOAD_FORMAT=${UPLOAD_FORMAT:-jfr}
[ "$UPLOAD_FORMAT" != otlp ] || . "$(dirname "${BASH_SOURCE[0]}")/otlp_lib.sh"
# the [upload] lines of that protocol (in a configuration's heredoc: $(upload_format_conf))
upload_format_conf() { [ "$UPLOAD_FORMAT" != otlp ] || printf 'format = otlp\ngroup-by = none\n'; }
# UPLOAD_FORMAT=otlp: every OTLP request received and every finished file in $OUT not hashed
# yet gets its content hash (otlp_check.py content) in X.sha beside X (the request; the file
# converted by `ctxprof report --format otlp` into $TMP/fh/NAME.otlp), one python run for all
otlp_hash_new() {
	local d f c todo=()
	[ "$UPLOAD_FORMAT" = otlp ] || return 0
	mkdir -p "$TMP/fh"
	for d in "$RECV"/req-[0-9]*; do
		[ -f "$d/otlp" ] && [ ! -s "$d/otlp.sha" ] || continue
		otlp_decode "$d/otlp" "$d/otlp.txt"
		todo+=("$d/otlp")
	done
	for f in "$OUT"/ctxprof-*.jfr; do
		c=$TMP/fh/$(basename "$f").otlp
		[ -f "$f" ] && [ ! -s "$c.sha" ] || continue
		"$CTXPROF" report --format otlp -o "$c" "$f" 2>/dev/null || fail "ctxprof report --format otlp $f"
		otlp_decode "$c" "$c.txt"
		todo+=("$c")
	done
	[ ${#todo[@]} = 0 ] || $CHECK content-sha "${todo[@]}" || fail "otlp_check.py content-sha"
}
# sha256_cached FILE...: each FILE's sha256 computed once (one sha256sum for all of those not
# seen yet) into $TMP/sha/ (never beside it: $OUT is the daemon's). Files received or finished
# never change, and the waits poll every one of them: hashing each again at every poll made
# the upload tests quadratic (minutes under load). finished_hashes FILE... prints them.
# (The loops spell the path out, ${f//\//_}: a $(sha_path) a file would be a process a file.)
sha_path() { echo "$TMP/sha/${1//\//_}"; }
sha256_cached() {
	local f h todo=()
	[ -d "$TMP/sha" ] || mkdir -p "$TMP/sha"
	for f in "$@"; do [ -f "$f" ] && [ ! -s "$TMP/sha/${f//\//_}" ] && todo+=("$f"); done
	[ ${#todo[@]} = 0 ] && return 0
	sha256sum "${todo[@]}" | while read -r h f; do echo "$h" >"$TMP/sha/${f//\//_}"; done
}
# the hash of every body received (see UPLOAD_FORMAT), one per line, sorted
received_hashes() {
	otlp_hash_new
	sha256_cached "$RECV"/req-[0-9]*/jfr
	cat "$(sha_path "$RECV")"_req-[0-9]*_jfr "$RECV"/req-[0-9]*/otlp.sha 2>/dev/null | sort
}
# the hash a delivery of the finished recording $1 has (otlp: after otlp_hash_new)
file_hash() { finished_hashes "$1"; }
# finished_hashes FILE...: the hash a delivery of each finished recording has, one per line
# (otlp: after otlp_hash_new); fails when one has none yet
finished_hashes() {
	local f paths=()
	if [ "$UPLOAD_FORMAT" = otlp ]; then
		for f in "$@"; do paths+=("$TMP/fh/${f##*/}.otlp.sha"); done
	else
		sha256_cached "$@"
		for f in "$@"; do paths+=("$TMP/sha/${f//\//_}"); done
	fi
	[ ${#paths[@]} = 0 ] || cat "${paths[@]}" 2>/dev/null
}
# every finished recording in $OUT arrived (byte for byte): "nothing finished is lost". The
# files are listed and hashed first, what arrived is looked at after (hashing an OTLP
# delivery takes longer than a rotation: a file finished meanwhile is for the next call).
# A few processes whatever the number of files: the waits poll it while files accumulate.
all_finished_received() {
	local fin
	mapfile -t fin < <(ls "$OUT"/ctxprof-*.jfr 2>/dev/null)
	otlp_hash_new
	finished_hashes "${fin[@]}" >"$TMP/finished.hashes" || return 1
	refresh_hashes
	! grep -qvxFf "$TMP/rh" "$TMP/finished.hashes"
}
refresh_hashes() { received_hashes >"$TMP/rh"; }
# the requests whose body has hash $1 (after received_hashes), each with its receiver log line
requests_with_hash() {
	local d
	for d in "$RECV"/req-[0-9]*; do
		[ "$(cat "$(sha_path "$d/jfr")" "$d/otlp.sha" 2>/dev/null)" = "$1" ] &&
			echo "${d##*/}: $(awk -v n="${d##*req-}" '$1 == n' "$RECV/log")"
	done
}
# no profile arrived twice ("delivered once"); else each duplicate's requests, the receiver's
# log and the daemon's warnings are printed before the test fails
no_duplicates() {
	local dup h
	refresh_hashes
	dup=$(uniq -d "$TMP/rh" | wc -l)
	[ "$dup" = 0 ] && return 0
	for h in $(uniq -d "$TMP/rh"); do
		echo "--- $h received as:"
		requests_with_hash "$h"
	done
	echo "--- receiver log (last 12):"
	tail -12 "$RECV/log"
	if [ -n "${DLOG:-}" ]; then
		echo "--- daemon log (warnings and errors, last 12):"
		grep -v '^<[67]>' "$DLOG" | tail -12
	fi
	fail "$dup profiles delivered more than once"
}
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
