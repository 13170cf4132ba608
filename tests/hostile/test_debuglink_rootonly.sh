#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# Issue 19: a CRC-0 .gnu_debuglink naming a file its user cannot read. elfutils checks a
# debuglink's CRC only when it is not 0, so an attacker who writes the section by hand (it
# cannot compute the CRC of a file it cannot read) made the root daemon open the file
# ("../rootonly/app.debug", relative to the attacker's program) and name the attacker's
# frames with its symbols: a profile the attacker may read then held names of a file only
# root may read. Debug files are found by build id only now: the file is never opened and
# none of its names (all prefixed rootonly_ here) reach the recording.
. "$(dirname "$0")/debuginfo_lib.sh"
debuginfo_setup
APP=$ATK_HOME/app
SECRET=$TMP/rootonly/app.debug
attacker_app "$TMP/app.full"
# root's file: the attacker's own program with every symbol renamed, readable by root only
mkdir -m 0755 "$TMP/rootonly"
objcopy --strip-debug --prefix-symbols=rootonly_ "$TMP/app.full" "$SECRET" && chmod 0600 "$SECRET" ||
	fail "cannot write $SECRET"
as_attacker cat "$SECRET" >/dev/null 2>&1 && fail "the attacker can read $SECRET: this test proves nothing"
# the attacker's program: no symbol table, no DWARF, a CRC-0 debuglink to root's file
name=../rootonly/app.debug
{ printf '%s\0' "$name" && head -c $(((4 - (${#name} + 1) % 4) % 4 + 4)) /dev/zero; } >"$TMP/link"
objcopy --strip-all --add-section .gnu_debuglink="$TMP/link" "$TMP/app.full" "$APP" ||
	fail "cannot write $APP"
chown "$ATK" "$APP"
echo "attacker's .gnu_debuglink: $(readelf -p .gnu_debuglink "$APP" | grep -o 'rootonly/app.debug'), CRC 0"
debuginfo_attack "$APP" "$SECRET"
if grep -m3 'rootonly_' "$TMP/print.txt"; then
	fail "names from $SECRET (readable by root only) are in the recording"
fi
# the attacker's frames are in it, as module+offset (its program has no symbols)
grep -q 'app+0x' "$TMP/print.txt" || fail "no frame of the attacker's program in the recording"
echo "PASS: a CRC-0 debuglink to a file only root reads is not followed"
