#!/bin/bash
# SPDX-License-Identifier: MIT
# The docs name every flag of every command and every daemon config key
# (scripts/check-docs.sh), and the check can fail: a config key row taken out of
# docs/daemon.md, a key planted in config.c, a flag erased from the docs and a flag planted in
# a --help text are each reported with the file and the flag or key.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${TEST_BUILD:-build}
check=scripts/check-docs.sh
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$B/ctxprof" ] || fail "no $B/ctxprof (run make)"

out=$("$check" "$B/ctxprof" 2>&1) || fail "the docs lack what the code has:"$'\n'"$out"
echo "$out"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
plant() { # name: a copy of the docs and the config sources in $tmp/name
	local d=$tmp/$1
	mkdir -p "$d/daemon/service" && cp -r README.md docs "$d/" &&
		cp daemon/service/config.c daemon/service/upload_config.c "$d/daemon/service/" && echo "$d"
}
expect() { # dir binary message-regex what
	local out
	out=$("$check" "$2" "$1" 2>&1) && fail "$4 passed the check"
	grep -qE -- "$3" <<<"$out" || fail "$4 was not named:"$'\n'"$out"
	echo "ok: $4 -> $(grep -E -- "$3" <<<"$out" | head -1)"
}

d=$(plant row)
sed -i '/^| sampling | offcpu-min |/d' "$d/docs/daemon.md"
expect "$d" "$B/ctxprof" "$d/docs/daemon.md: config key \[sampling\] offcpu-min is in no table row" \
	"a config key without its docs/daemon.md row"

d=$(plant key)
sed -i 's/^\(    "output.max-stacks",\)$/\1\n    "output.planted-key",/' "$d/daemon/service/config.c"
grep -q planted-key "$d/daemon/service/config.c" || fail "could not plant a key in config.c"
expect "$d" "$B/ctxprof" "config key \[output\] planted-key is in no table row" "a new config key"

d=$(plant flag)
sed -i 's/--span-frames//g' "$d/README.md" "$d"/docs/*.md
expect "$d" "$B/ctxprof" "$d/README.md, $d/docs/\*.md: ctxprof record --span-frames \(in its --help\)" \
	"a flag erased from the docs"

# a ctxprof whose record --help has one flag more
cat >"$tmp/ctxprof" <<SH
#!/bin/sh
"$PWD/$B/ctxprof" "\$@"
[ "\$1 \$2" = "record --help" ] && echo "      --planted-flag N     a flag nobody documented"
exit 0
SH
chmod +x "$tmp/ctxprof"
expect . "$tmp/ctxprof" "ctxprof record --planted-flag \(in its --help\)" "a new flag in --help"
echo "PASS: docs name every flag and config key; a missing row, a new key, an erased flag and a new flag are named"
