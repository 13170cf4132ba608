#!/bin/bash
# SPDX-License-Identifier: MIT
# packaging/debian/control's Build-Depends are exactly the build set of scripts/deps.sh
# (`make deps`: the base list and mk/*.pkgs) less build-essential, which Debian implies; and
# the comparison can fail: a planted extra and a planted missing package are each named.
set -u
cd "$(dirname "$0")/../.." || exit 1
fail() { echo "FAIL: $*"; exit 1; }
ESSENTIAL="binutils gcc make"

build_depends() { # control file: one package name a line, no versions, no debhelper-compat
	sed -n '/^Build-Depends:/,/^[A-Z]/p' "$1" | sed -e 's/^Build-Depends://' -e '/^[A-Z]/d' |
		tr ',' '\n' | sed -e 's/([^)]*)//g' -e 's/\[[^]]*\]//g' -e 's/[[:space:]]//g' |
		grep -v -e '^$' -e '^debhelper-compat$' | sort -u
}
want() { scripts/deps.sh list build | grep -vxF -f <(printf '%s\n' $ESSENTIAL) | sort -u; }
compare() { # control file; prints the differences, exit 1 when there are some
	local out
	out=$(comm -3 <(build_depends "$1") <(want) |
		sed -e 's/^\t\(.*\)/\1: needed by `make` (scripts\/deps.sh build) but not in Build-Depends of '"${1//\//\\/}"'/' \
		    -e 's/^\([^ :]*\)$/\1: in Build-Depends of '"${1//\//\\/}"' but not in scripts\/deps.sh build/')
	[ -z "$out" ] || { echo "$out"; return 1; }
}

out=$(compare packaging/debian/control) || fail "Build-Depends differ from the build set:"$'\n'"$out"
echo "Build-Depends = build set: $(want | tr '\n' ' ')"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/^Build-Depends: debhelper-compat (= 13),/&\n               openjdk-17-jdk-headless,/' packaging/debian/control >"$tmp/extra"
out=$(compare "$tmp/extra") && fail "a planted extra Build-Depends passed"
grep -q "^openjdk-17-jdk-headless: in Build-Depends of $tmp/extra" <<<"$out" || fail "the extra was not named: $out"
sed 's/ libxxhash-dev,//' packaging/debian/control >"$tmp/missing"
out=$(compare "$tmp/missing") && fail "a planted missing Build-Depends passed"
grep -q '^libxxhash-dev: needed by `make`' <<<"$out" || fail "the missing one was not named: $out"
echo "PASS: Build-Depends match; a planted extra and a planted missing package are named"
