#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# Go programs (issue 34): a Go program built here with Debian's Go, as is (DWARF), with
# `-ldflags="-s -w"` (no .symtab, no DWARF: usual for container images) and linked by the C
# linker (cgo's layout: a PT_TLS with runtime.tlsg). Each runs 8 goroutines on GOMAXPROCS=2
# (more goroutines than threads: labels must follow the goroutine), each under its own
# runtime/pprof labels, changed half way (phase=early, then late). Recorded:
# - every frame in the Go binary is named (none left as BINARY+0xOFFSET), the stripped one's
#   from its .gopclntab; >= 95% of its samples show main.spin under runtime/pprof.Do, at
#   least a fifth of them main.mix inlined into it (the stripped one's from the table's
#   inline tree), and the binaries name the same functions on the spinning path;
# - goroutine labels: >= 95% of the samples in main.spin carry labels, and every one of
#   them its own goroutine's (the function on the stack names the goroutine's parity and
#   phase); both phases are seen; the span a tracer sets as labels is the sample's span
#   (--span-frames: OpenTelemetry's hex span_id early, dd-trace-go's decimal "span id" late);
#   --stats-json .go counts the program located, no torn read;
# - --filter on a goroutine label keeps only those samples; JFR, converted to pprof and read
#   by `go tool pprof`, keeps every goroutine's labels and spans; a Go program publishing
#   an OpenTelemetry process context (OTEP 4719) is named by its service.name; a Go program
#   that never sets labels is not taken for a labels source;
# - a Go version the table does not know (the build info patched to go1.99): without DWARF
#   counted as layout_unknown, sampled, and no label ever read; with DWARF, labels read
#   through the layout its DWARF gives.
. "$(dirname "$0")/sampler_lib.sh"
command -v go >/dev/null || need_oracle "go (golang-go, make deps-test) to build the Go workload"
export HOME=$TMP GOCACHE=$TMP/gocache GOPATH=$TMP/gopath GOFLAGS= GO111MODULE=off
SRC=$(dirname "$0")/../workloads/wl_go.go
go build -o "$TMP/wl_go" "$SRC" || fail "go build failed"
go build -ldflags="-s -w" -o "$TMP/wl_go_stripped" "$SRC" || fail "go build -s -w failed"
go build -ldflags=-linkmode=external -o "$TMP/wl_go_cgo" "$SRC" || fail "go build (external linker) failed"
readelf -S "$TMP/wl_go_stripped" | grep -q '\.symtab' && fail "-s -w left a .symtab"
readelf -S "$TMP/wl_go_stripped" | grep -q '\.debug_info' && fail "-s -w left DWARF"
readelf -S "$TMP/wl_go_stripped" | grep -q '\.gopclntab' || fail "no .gopclntab in the Go binary"
readelf -lW "$TMP/wl_go_cgo" | grep -q ' TLS ' || fail "the externally linked binary has no PT_TLS"
GO_MINOR=$(go env GOVERSION | sed -nE 's/^go1\.([0-9]+).*/\1/p')

# The samples in main.spin, from a collapsed file: right = labelled as its goroutine's;
# wrong = labels of another goroutine; none = no labels. The spinning function's caller
# names the goroutine's parity and phase (main.oddLate); its route's number has that parity;
# its span (the span= frame) is 0xa000 + that number early, 0xb000 + it late (wl_go.go).
labels_check() { # FILE
	awk '{
		n = $NF; line = $0; sub(/ [0-9]+$/, "", line)
		if (line !~ /main\.(even|odd)(Early|Late);main\.spin(;main\.mix)?$/) next
		spin += n
		match(line, /main\.(even|odd)(Early|Late);main\.spin/)
		fn = substr(line, RSTART + 5, RLENGTH - 15)
		par = fn ~ /^even/ ? "even" : "odd"; ph = fn ~ /Early$/ ? "early" : "late"
		if (ph == "early") early += n; else late += n
		if (line !~ /;parity=[a-z]+;phase=[a-z]+;route=\/r[0-9]+;/) { none += n; next }
		match(line, /route=\/r[0-9]+/); r = substr(line, RSTART + 8, RLENGTH - 8) + 0
		span = sprintf(";span=%016x;", (ph == "early" ? 40960 : 45056) + r)
		if (index(line, ";parity=" par ";") && index(line, ";phase=" ph ";") &&
		    (r % 2 == 1) == (par == "odd") && index(line, span))
			right += n
		else {
			wrong += n
			if (shown++ < 3) print "wrong labels: " $0 > "/dev/stderr"
		}
	} END { printf "%d %d %d %d %d %d\n", spin, right, wrong, none, early, late }' "$1"
}

for bin in wl_go wl_go_stripped wl_go_cgo; do
	GOMAXPROCS=2 record_ok 60 -F 499 -d 5 --span-frames -o "$TMP/$bin.txt" -- "$TMP/$bin" 4 8
	total=$(count "$TMP/$bin.txt" "^$bin-")
	spin=$(count "$TMP/$bin.txt" "^$bin-[0-9]+;(.*;)?runtime/pprof\.Do;(.*;)?main\.spin( |;)")
	unnamed=$(count "$TMP/$bin.txt" ";$bin\+0x[0-9a-f]+")
	inlined=$(count "$TMP/$bin.txt" ";main\.spin;main\.mix( |;)")
	echo "$bin: $total samples, $spin in main.spin under runtime/pprof.Do, $unnamed with an" \
		"unnamed Go frame, $inlined in main.mix inlined into main.spin"
	[ $((inlined * 5)) -ge "$spin" ] || fail "$bin: main.mix, inlined, named in $inlined of $spin samples"
	[ "$total" -ge 200 ] || fail "$bin: too few samples ($total)"
	[ $((spin * 100)) -ge $((total * 95)) ] || {
		sort -k2 -n -r "$TMP/$bin.txt" | head -5
		fail "$bin: only $spin of $total samples in main.spin under pprof.Do"
	}
	[ "$unnamed" = 0 ] || {
		grep -E ";$bin\+0x" "$TMP/$bin.txt" | head -3
		fail "$bin: $unnamed samples with a frame of the Go binary not named"
	}
	# the functions on the path to main.spin, as the binaries name them
	grep -E "main\.spin( |;)" "$TMP/$bin.txt" | sed -E 's/^[^;]*;[^;]*;//; s/ [0-9]+$//' |
		tr ';' '\n' | grep -E '^(main|runtime/pprof)\.' | sort -u >"$TMP/$bin.funcs"

	read -r s right wrong none early late <<<"$(labels_check "$TMP/$bin.txt")"
	echo "$bin: $s samples in main.spin: $right with their goroutine's labels, $wrong with" \
		"another's, $none without; phase early $early, late $late; .go $(jq -c .go "$TMP/stats.json")"
	if [ "$bin" = wl_go_stripped ] && [ "$GO_MINOR" != 19 ]; then
		# no DWARF and a version the table does not know (docs/go.md): counted, no labels
		[ "$(stat_json .go.layout_unknown)" = 1 ] || fail "$bin: go1.$GO_MINOR not counted unknown"
		[ "$right$wrong" = 00 ] || fail "$bin: labels read with an unknown layout"
		continue
	fi
	[ "$wrong" = 0 ] || fail "$bin: $wrong samples with another goroutine's labels"
	[ "$s" -ge 200 ] && [ $((right * 100)) -ge $((s * 95)) ] ||
		fail "$bin: only $right of $s samples in main.spin with their goroutine's labels"
	[ $((early * 10)) -ge "$s" ] && [ $((late * 10)) -ge "$s" ] ||
		fail "$bin: labels changed half way, but early $early / late $late of $s"
	[ "$(stat_json .go.located)" = 1 ] || fail "$bin: .go.located is not 1"
	[ "$(stat_json .go.layout_unknown)" = 0 ] || fail "$bin: counted as an unknown layout"
	[ "$(stat_json .go.torn)" = 0 ] || fail "$bin: torn label reads on immutable label maps"
	[ "$(stat_json .go.labels)" -ge "$right" ] || fail "$bin: .go.labels below the labelled samples"
done
diff "$TMP/wl_go.funcs" "$TMP/wl_go_stripped.funcs" ||
	fail "the stripped binary names other functions on the path to main.spin"
diff "$TMP/wl_go.funcs" "$TMP/wl_go_cgo.funcs" ||
	fail "the externally linked binary names other functions on the path to main.spin"
echo "functions on the path: $(tr '\n' ' ' <"$TMP/wl_go.funcs")"

# --filter on a goroutine label, as on any other label
GOMAXPROCS=2 record_ok 60 -F 499 -d 3 --filter parity=odd -o "$TMP/odd.txt" -- "$TMP/wl_go" 2 8
odd=$(count "$TMP/odd.txt" ";parity=odd;")
all=$(count "$TMP/odd.txt" ".")
echo "--filter parity=odd: $odd of $all samples labelled parity=odd"
[ "$odd" -ge 100 ] && [ "$odd" = "$all" ] || fail "--filter parity=odd kept $all samples, $odd of them odd"

# JFR (read back by `ctxprof report`) to pprof, read by Go's own pprof: every goroutine's
# labels and both spans (JFR spanId, from span_id and from "span id") as sample labels
GOMAXPROCS=2 record_ok 60 -F 499 -d 3 -o "$TMP/go.jfr" -- "$TMP/wl_go" 2 4
"$CTXPROF" report --format pprof -o "$TMP/go.pb.gz" "$TMP/go.jfr" || fail "report --format pprof failed"
go tool pprof -tags "$TMP/go.pb.gz" >"$TMP/tags" 2>&1 || fail "go tool pprof -tags failed"
for v in even odd early late /r0 /r1 /r2 /r3 000000000000a000 000000000000a003 \
	000000000000b000 000000000000b003; do
	grep -qE "\): $v\$" "$TMP/tags" || { cat "$TMP/tags"; fail "no sample labelled $v via JFR and pprof"; }
done
echo "JFR -> pprof: the goroutines' labels and spans are sample labels"

# A Go program that publishes an OpenTelemetry process context (OTEP 4719, from Go alone):
# named by its service.name, its goroutine labels kept
WL_GO_SERVICE=checkout-go GOMAXPROCS=2 record_ok 60 -F 499 -d 3 -o "$TMP/svc.txt" -- "$TMP/wl_go" 2 4
total=$(count "$TMP/svc.txt" ".")
named=$(count "$TMP/svc.txt" "^checkout-go-[0-9]+;")
both=$(count "$TMP/svc.txt" "^checkout-go-[0-9]+;.*;parity=[a-z]+;phase=[a-z]+;route=")
echo "OTEP 4719 from Go: $named of $total samples named checkout-go, $both of them with labels"
[ "$total" -ge 100 ] && [ $((named * 100)) -ge $((total * 90)) ] ||
	fail "the Go program's service.name names $named of $total samples"
[ $((both * 100)) -ge $((named * 90)) ] || fail "service-named samples lost their goroutine labels"

# A Go program that never sets goroutine labels (its linker dropped
# runtime/pprof.SetGoroutineLabels): not a labels source, nothing read, nothing counted
cat >"$TMP/plain.go" <<'GO'
package main

import (
	"os"
	"strconv"
	"time"
)

func main() {
	secs, _ := strconv.Atoi(os.Args[1])
	end, s := time.Now().Add(time.Duration(secs)*time.Second), 0
	for time.Now().Before(end) {
		for i := 0; i < 1000000; i++ {
			s += i % 7
		}
	}
	os.Exit(s & 0)
}
GO
go build -o "$TMP/wl_go_plain" "$TMP/plain.go" || fail "go build of the plain program failed"
record_ok 60 -F 499 -d 3 -o "$TMP/plain.txt" -- "$TMP/wl_go_plain" 2
echo "a Go program without labels: .go $(jq -c .go "$TMP/stats.json")"
[ "$(count "$TMP/plain.txt" "^wl_go_plain-")" -ge 100 ] || fail "the plain Go program was not sampled"
[ "$(stat_json '.go.located + .go.layout_unknown + .go.labels + .go.torn')" = 0 ] ||
	fail "a Go program that never sets labels was taken for a labels source"

# A Go version no table knows (the build info patched to go1.99...): without DWARF, never a
# wrong label, counted; with DWARF, the layout is read from it and the labels are.
patch_version() { # SRC DST
	cp "$1" "$2"
	python3 - "$2" <<'PY' || fail "could not patch the build info's version"
import re, sys
p = sys.argv[1]
d = bytearray(open(p, "rb").read())
i = d.find(b"\xff Go buildinf:")
m = re.match(rb"go1\.[0-9]+", bytes(d[i + 33:i + 40])) if i >= 0 else None
if not m:
    sys.exit("no inline Go version in the build info")
d[i + 33:i + 33 + m.end()] = b"go1.99" + b"9" * (m.end() - 6)
open(p, "wb").write(d)
PY
}
patch_version "$TMP/wl_go_stripped" "$TMP/wl_go_future"
GOMAXPROCS=2 record_ok 60 -F 499 -d 3 -o "$TMP/future.txt" -- "$TMP/wl_go_future" 2 4
total=$(count "$TMP/future.txt" "^wl_go_future-")
labelled=$(count "$TMP/future.txt" ";(parity|phase|route)=")
echo "go1.99 without DWARF: $total samples, $labelled labelled; .go $(jq -c .go "$TMP/stats.json")"
[ "$total" -ge 100 ] || fail "the unknown-version binary was not sampled ($total)"
[ "$labelled" = 0 ] || fail "labels read from a binary whose layout is not known"
[ "$(stat_json .go.layout_unknown)" = 1 ] || fail "the unknown layout was not counted"
[ "$(stat_json .go.labels)" = 0 ] || fail ".go.labels counted for an unknown layout"

patch_version "$TMP/wl_go" "$TMP/wl_go_dwarf99"
GOMAXPROCS=2 record_ok 60 -F 499 -d 3 -o "$TMP/future_dwarf.txt" -- "$TMP/wl_go_dwarf99" 2 4
total=$(count "$TMP/future_dwarf.txt" "^wl_go_dwarf99-")
labelled=$(count "$TMP/future_dwarf.txt" ";parity=[a-z]+;phase=[a-z]+;route=")
echo "go1.99 with DWARF: $total samples, $labelled labelled; .go $(jq -c .go "$TMP/stats.json")"
[ "$total" -ge 100 ] && [ $((labelled * 100)) -ge $((total * 90)) ] ||
	fail "the layout in the DWARF of an unknown version was not used ($labelled of $total)"
[ "$(stat_json .go.located)" = 1 ] || fail "the DWARF layout's program not counted located"
echo PASS
