#!/bin/bash
# SPDX-License-Identifier: MIT
# The include rule (scripts/check-layers.sh) holds on daemon/, and the check can fail: an
# upward include, an unqualified one and a cycle planted in a copy are each reported with
# the offending file and line.
set -u
cd "$(dirname "$0")/../.."
check=scripts/check-layers.sh
fail() { echo "FAIL: $*"; exit 1; }

out=$("$check" daemon 2>&1) || fail "daemon/ breaks the layering rule:"$'\n'"$out"
echo "$out"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
plant() { # name: a fresh copy of daemon/ in $tmp/name
	rm -rf "${tmp:?}/$1" && cp -r daemon "$tmp/$1" && echo "$tmp/$1"
}

d=$(plant up)
sed -i '0,/^#include/s//#include "cli\/cmd.h"\n#include/' "$d/jfr/jfr_buf.c"
ln=$(grep -n '"cli/cmd.h"' "$d/jfr/jfr_buf.c" | cut -d: -f1)
out=$("$check" "$d" 2>&1) && fail "an upward include (jfr -> cli) passed the check"
grep -q "jfr/jfr_buf.c:$ln: #include \"cli/cmd.h\" goes up" <<<"$out" ||
	fail "the upward include was not named with its line:"$'\n'"$out"

d=$(plant unqualified)
sed -i '0,/^#include/s//#include "jfr_dict.h"\n#include/' "$d/jfr/jfr_buf.c"
out=$("$check" "$d" 2>&1) && fail "an include without its stage folder passed the check"
grep -q 'jfr/jfr_buf.c:[0-9]*: #include "jfr_dict.h" must name its stage folder' <<<"$out" ||
	fail "the unqualified include was not named:"$'\n'"$out"

d=$(plant cycle)
sed -i '0,/^#include/s//#include "jfr\/jfr_dict.h"\n#include/' "$d/jfr/jfr_buf.h"
out=$("$check" "$d" 2>&1) && fail "an include cycle (jfr_buf.h <-> jfr_dict.h) passed the check"
grep -q 'include cycle' <<<"$out" || fail "the cycle was not reported:"$'\n'"$out"

echo "layering check: passes on daemon/, fails on a planted upward include, unqualified include and cycle"
