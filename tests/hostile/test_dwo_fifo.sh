#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair
# Issue 19: the split-DWARF variant of test_debuglink_fifo.sh. A process with a context symbol
# built with -gsplit-dwarf (no build id): its skeleton unit names its .dwo file
# (DW_AT_dwo_name, relative to the module's directory or DW_AT_comp_dir), and the attacker
# replaced that file with a FIFO. libdw opens that name when a lookup reaches into the split
# unit (__libdw_find_split_unit). Refuted for today's code: with elfutils 0.188 the
# symbolizer's lookups stay in the skeleton, and this test passes on it too. It guards the
# rule (DWARF with split units is not read at all now: the symbol table names the frames)
# against an elfutils or a symbolizer that reads split units.
. "$(dirname "$0")/debuginfo_lib.sh"
debuginfo_setup
APP=$ATK_HOME/app
DWO=$ATK_HOME/app-demo_app.dwo
attacker_app "$APP" -g -gsplit-dwarf
[ -f "$DWO" ] || fail "gcc -gsplit-dwarf wrote no $DWO: $(ls "$ATK_HOME")"
readelf --debug-dump=info "$APP" | grep -q "DW_AT_dwo_name.*app-demo_app.dwo" ||
	fail "$APP has no skeleton unit naming app-demo_app.dwo"
rm "$DWO"
attacker_fifo "$DWO"
echo "attacker's split unit: DW_AT_dwo_name app-demo_app.dwo, a FIFO"
debuginfo_attack "$APP" "$DWO"
echo "PASS: a split-DWARF .dwo name is not followed"
