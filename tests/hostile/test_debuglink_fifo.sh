#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# Issue 19: a process with a context symbol, built without a build id, whose .gnu_debuglink
# names a FIFO beside it (objcopy --add-gnu-debuglink). elfutils' standard find_debuginfo
# opened that FIFO when the first chunk cut symbolized the process: the JFR writer thread sat
# in open(2), the main thread joined it at the next cut, the status went stale and SIGTERM
# stopped nothing. Debug files are found by build id only now (stack/debuginfo_find.h):
# the FIFO is never opened, the status stays fresh, the control target keeps its rate,
# SIGTERM stops the daemon, and what it recorded before the attack is readable.
# The default daemon but for a 2 s chunk period (the symbolizer runs at each chunk cut).
. "$(dirname "$0")/debuginfo_lib.sh"
debuginfo_setup
# no DWARF of its own (so elfutils looks for a separate debug file), its symbols kept
APP=$ATK_HOME/app
FIFO=$ATK_HOME/app.debug
attacker_app "$TMP/app.full"
objcopy --strip-debug "$TMP/app.full" "$APP" && touch "$FIFO" &&
	objcopy --add-gnu-debuglink="$FIFO" "$APP" && rm "$FIFO" || fail "cannot add the debuglink"
chown "$ATK" "$APP"
attacker_fifo "$FIFO"
echo "attacker's .gnu_debuglink: $(readelf -p .gnu_debuglink "$APP" | grep -o 'app.debug'), a FIFO"
debuginfo_attack "$APP" "$FIFO"
echo "PASS: a debuglink to a FIFO is not followed"
