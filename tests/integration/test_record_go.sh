#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# Go binaries (issue 34, part 1): a Go 1.19 program built here with Debian's Go, once as is
# and once with `-ldflags="-s -w"` (no .symtab, usual for container images). Both recorded:
# every frame in the Go binary is named (none left as BINARY+0xOFFSET), the stripped one's from
# its .gopclntab; >= 95% of its samples show main.spin under runtime/pprof.Do, and the two
# name the same functions on the spinning path.
. "$(dirname "$0")/sampler_lib.sh"
command -v go >/dev/null || need_oracle "go (golang-go, make deps-test) to build the Go workload"
export HOME=$TMP GOCACHE=$TMP/gocache GOPATH=$TMP/gopath GOFLAGS= GO111MODULE=off
SRC=$(dirname "$0")/../workloads/wl_go.go
go build -o "$TMP/wl_go" "$SRC" || fail "go build failed"
go build -ldflags="-s -w" -o "$TMP/wl_go_stripped" "$SRC" || fail "go build -s -w failed"
readelf -S "$TMP/wl_go_stripped" | grep -q '\.symtab' && fail "-s -w left a .symtab"
readelf -S "$TMP/wl_go_stripped" | grep -q '\.gopclntab' || fail "no .gopclntab in the Go binary"

for bin in wl_go wl_go_stripped; do
	record_ok 60 -F 499 -d 3 -o "$TMP/$bin.txt" -- "$TMP/$bin" 2 2
	total=$(count "$TMP/$bin.txt" "^$bin-")
	spin=$(count "$TMP/$bin.txt" "^$bin-[0-9]+;(.*;)?runtime/pprof\.Do;(.*;)?main\.spin( |;)")
	unnamed=$(count "$TMP/$bin.txt" ";$bin\+0x[0-9a-f]+")
	echo "$bin: $total samples, $spin in main.spin under runtime/pprof.Do, $unnamed with an unnamed Go frame"
	[ "$total" -ge 200 ] || fail "$bin: too few samples ($total)"
	[ $((spin * 100)) -ge $((total * 95)) ] || {
		sort -k2 -n -r "$TMP/$bin.txt" | head -5
		fail "$bin: only $spin of $total samples in main.spin under pprof.Do"
	}
	[ "$unnamed" = 0 ] || {
		grep -E ";$bin\+0x" "$TMP/$bin.txt" | head -3
		fail "$bin: $unnamed samples with a frame of the Go binary not named"
	}
	# the functions on the path to main.spin, as both binaries name them
	grep -E "main\.spin( |;)" "$TMP/$bin.txt" | sed -E 's/^[^;]*;[^;]*;//; s/ [0-9]+$//' |
		tr ';' '\n' | grep -E '^(main|runtime/pprof)\.' | sort -u >"$TMP/$bin.funcs"
done
diff "$TMP/wl_go.funcs" "$TMP/wl_go_stripped.funcs" ||
	fail "the stripped binary names other functions on the path to main.spin"
echo "functions on the path: $(tr '\n' ' ' <"$TMP/wl_go.funcs")"
echo PASS
