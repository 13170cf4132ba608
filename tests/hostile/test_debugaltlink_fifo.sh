#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# Issue 19: the .gnu_debugaltlink variant of test_debuglink_fifo.sh. A process with a context
# symbol and DWARF of its own, no build id, whose .gnu_debugaltlink (the dwz alt file: a name
# and the alt file's build id) names a FIFO beside it. elfutils looked for the alt file by
# that name, relative to the module's directory, when it loaded the DWARF (libdwfl) or at the
# first reference into it (libdw). An alt file is found by its build id only now, and DWARF
# whose alt file is not found that way is not read (the symbol table names the frames).
. "$(dirname "$0")/debuginfo_lib.sh"
debuginfo_setup
APP=$ATK_HOME/app
FIFO=$ATK_HOME/alt.debug
attacker_app "$APP"
# dwz's layout: the alt file's name, a NUL, its build id (20 bytes no file has)
{ printf 'alt.debug\0' && head -c 20 /dev/urandom; } >"$TMP/altlink"
objcopy --add-section .gnu_debugaltlink="$TMP/altlink" "$APP" || fail "cannot add the altlink"
attacker_fifo "$FIFO"
echo "attacker's .gnu_debugaltlink: $(readelf -p .gnu_debugaltlink "$APP" | grep -o 'alt.debug'), a FIFO"
debuginfo_attack "$APP" "$FIFO"
echo "PASS: a debugaltlink to a FIFO is not followed"
