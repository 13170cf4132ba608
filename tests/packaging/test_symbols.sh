#!/bin/bash
# SPDX-License-Identifier: MIT
# packaging/debian/libctx1.symbols lists exactly what libctx.so.1 exports (its .dynsym, i.e.
# libctx/libctx.map): a symbol exported but missing from the file would be versioned with
# the Debian revision by dpkg-gensymbols (a lintian error) and applications using it would get
# too weak a dependency; a symbol listed but no longer exported breaks the ABI. The check can
# fail: a planted file without one symbol, and one with a symbol libctx does not export, are
# each named.
. "$(dirname "$0")/lib.sh"
SO=$B/libctx.so.1.0.0
SYMS=packaging/debian/libctx1.symbols
[ -f "$SO" ] || fail "no $SO (run make)"

exported() { nm -D --defined-only "$SO" | awk '{print $3}' | sort -u; }
listed() { # symbols file: the names of the libctx.so.1 block
	awk '/^[^ #|*]/ {on = ($1 == "libctx.so.1")} on && /^ [^*]/ {sub(/@.*/, "", $1); print $1}' "$1" | sort -u
}
check() { # symbols file; prints each difference, exit 1 when there is one
	local out
	out=$(comm -3 <(exported) <(listed "$1") |
		sed -e "s|^\t\(.*\)|$1: lists \1, which $SO does not export|" \
		    -e "s|^\([^ ]*\)$|$1: lacks \1, exported by $SO|")
	[ -z "$out" ] || { echo "$out"; return 1; }
}

n=$(exported | wc -l)
[ "$n" -ge 20 ] || fail "only $n symbols exported by $SO"
out=$(check $SYMS) || fail "the symbols file does not match the library:"$'\n'"$out"
ok "$SYMS lists the $n symbols $SO exports"

grep -v '^ ctx_set_attr@' $SYMS >"$TMP/missing.symbols"
out=$(check "$TMP/missing.symbols") && fail "a symbols file without ctx_set_attr passed"
grep -qx "$TMP/missing.symbols: lacks ctx_set_attr, exported by $SO" <<<"$out" || fail "not named: $out"
{ cat $SYMS; echo " ctx_gone@Base 0.1.0"; } >"$TMP/extra.symbols"
out=$(check "$TMP/extra.symbols") && fail "a symbols file with ctx_gone passed"
grep -qx "$TMP/extra.symbols: lists ctx_gone, which $SO does not export" <<<"$out" || fail "not named: $out"
ok "a planted missing and a planted extra symbol are named"
echo PASS
