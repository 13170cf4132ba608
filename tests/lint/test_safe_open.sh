#!/bin/bash
# SPDX-License-Identifier: MIT
# Files a target names are opened only through util/target_open.h (scripts/check-target-opens.sh
# with scripts/target-opens.allow), and the check can fail: a by-path open planted in the
# module registration, an open in the TLS locator (none allowed: it reads the target's memory
# with process_vm_readv, its files through target_open) and
# elfutils' debuglink finder planted in the unwinder, each in a copy of daemon/, are reported
# with file and line; an open named in a comment or a string is not code.
set -u
cd "$(dirname "$0")/../.." || exit 1
check=scripts/check-target-opens.sh
fail() { echo "FAIL: $*"; exit 1; }

out=$("$check" daemon 2>&1) || fail "daemon/ opens a file outside the allowlist:"$'\n'"$out"
echo "$out"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
plant() { # name: a fresh copy of daemon/ in $tmp/name
	rm -rf "${tmp:?}/$1" && cp -r daemon "$tmp/$1" && echo "$tmp/$1"
}
# insert LINE after the first line matching ANCHOR in FILE; prints the new line's number
insert_after() { # file anchor line
	local ln
	ln=$(grep -n -m1 -F "$2" "$1" | cut -d: -f1)
	[ -n "$ln" ] || fail "anchor '$2' not in $1"
	sed -i "${ln}a\\$3" "$1"
	echo $((ln + 1))
}

d=$(plant bypath)
ln=$(insert_after "$d/stack/proc_maps.c" 'if (m->path[0] == ' \
	'                fd = open(m->path, O_RDONLY | O_CLOEXEC);')
out=$("$check" "$d" 2>&1) && fail "a by-path open in stack/proc_maps.c passed the check"
grep -q "stack/proc_maps.c:$ln: .*open(m->path" <<<"$out" ||
	fail "the planted open was not named with its line:"$'\n'"$out"

d=$(plant second)
ln=$(insert_after "$d/tls/tls_locate.c" 'int opath = target_open_path(pid, &o->tf, st);' \
	'                int fd2 = openat(AT_FDCWD, o->tf.path, O_RDONLY);')
[ "$ln" -gt 1 ] 2>/dev/null || fail "no anchor for the planted open in tls/tls_locate.c: $ln"
out=$("$check" "$d" 2>&1) && fail "an open in tls/tls_locate.c passed the check"
grep -q "tls/tls_locate.c:$ln: .*openat(AT_FDCWD" <<<"$out" ||
	fail "the planted open was not named:"$'\n'"$out"

d=$(plant debuglink)
insert_after "$d/stack/unwind_dwarf.c" '.find_debuginfo = debuginfo_find_debuginfo,' \
	'    .section_address = (void *)dwfl_standard_find_debuginfo,' >/dev/null
out=$("$check" "$d" 2>&1) && fail "dwfl_standard_find_debuginfo in the unwinder passed the check"
grep -q 'stack/unwind_dwarf.c:[0-9]*: .*dwfl_standard_find_debuginfo' <<<"$out" ||
	fail "the debuglink finder was not named:"$'\n'"$out"

d=$(plant prose)
insert_after "$d/stack/modules.c" '#include <unistd.h>' \
	'/* never open(path) here */ static const char *why = "open(path) by name";' >/dev/null
out=$("$check" "$d" 2>&1) || fail "an open in a comment or a string was taken for code:"$'\n'"$out"

echo "target-open check: passes on daemon/, fails on a planted by-path open, an open in the locator and a debuglink finder"
