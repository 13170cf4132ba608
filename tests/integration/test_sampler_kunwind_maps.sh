#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own
# In-kernel .eh_frame unwinding (--call-graph dwarf) when mappings change or are bad: its own
# stacks of fx_qsort reach main (>= 99%), with table memory reported; a library dlopen'ed after
# the start gets its table (the plugin's frames reach main), also when it is dlclose'd and
# dlopen'ed again and again (>= 95%); a copy of fx_qsort with a corrupt
# .eh_frame_hdr is sampled without a crash, its table counted as a build error and its frames
# as frame-pointer steps; a row array too small for libc's table keeps its bound.
. "$(dirname "$0")/sampler_lib.sh"
FX=$B/tests/fixtures
for f in fx_qsort fx_dlopen fx_dlchurn libfx_plugin.so; do [ -e "$FX/$f" ] || fail "no $FX/$f"; done

# In-kernel mode proper: its own stacks reach main (no libdwfl involved).
record_ok 60 -F 999 -d 6 --call-graph dwarf -o "$TMP/k.txt" -- "$FX/fx_qsort" 5
total=$(count "$TMP/k.txt" '^fx_qsort-')
main=$(count "$TMP/k.txt" '^fx_qsort-[0-9]+;[^;]*;(.*;)?main;')
ks=$(stat_json .kunwind.samples)
echo "dwarf (in-kernel): $main of $total fx_qsort samples reach main; $ks unwound in BPF;" \
	"peak tables $(stat_json .kunwind.peak_tables), $(stat_json .kunwind.peak_table_bytes) bytes;" \
	"at exit $(stat_json .kunwind.tables) tables"
[ "$total" -ge 1000 ] || fail "too few samples ($total)"
[ $((main * 100)) -ge $((total * 99)) ] || fail "only $main of $total reach main"
[ $((ks * 100)) -ge $((total * 99)) ] || fail "only $ks of $total unwound in the kernel"
[ "$(stat_json .kunwind.peak_table_bytes)" -gt 300000 ] || fail "libc's table was not loaded"
[ "$(stat_json .kunwind.tables)" = 0 ] || fail "tables left loaded after the target exited"

# dlopen: the plugin is mapped after the start; its frames are unwound through its table.
mkfifo "$TMP/go"
"$FX/fx_dlopen" <"$TMP/go" >"$TMP/dl.out" &
dl=$!
exec 7>"$TMP/go"
trap 'kill $dl 2>/dev/null; rm -rf "$TMP"' EXIT
wait_for 10 "fx_dlopen ready" grep -q ready "$TMP/dl.out"
timeout 60 "$CTXPROF" record --stats-json "$TMP/dl.json" -F 999 -d 6 --call-graph dwarf \
	-o "$TMP/dl.txt" -p "$dl" 2>"$TMP/dl.err" &
rec=$!
ku_loaded() { bpftool map show name ku_procs >/dev/null 2>&1; }
wait_for 10 "record's BPF maps loaded" ku_loaded
sleep 0.5 # not an assertion: lets some samples of the blocked process be taken first
echo go >&7
wait $rec || { cat "$TMP/dl.err"; fail "record -p fx_dlopen failed"; }
kill $dl
plug=$(count "$TMP/dl.txt" ';plugin_run;plugin_spin')
plugmain=$(count "$TMP/dl.txt" ';main;plugin_run;plugin_spin')
echo "dlopen: $plugmain of $plug plugin samples reach main; tables $(stat_json .kunwind.builds "$TMP/dl.json") built"
[ "$plug" -ge 500 ] || fail "too few plugin samples ($plug)"
[ $((plugmain * 100)) -ge $((plug * 99)) ] || fail "only $plugmain of $plug plugin samples reach main"

# unmapped while sampled: the plugin is dlopen'ed and dlclose'd over and over.
record_ok 60 -F 999 -d 6 --call-graph dwarf -o "$TMP/churn.txt" -- "$FX/fx_dlchurn" 5
spin=$(count "$TMP/churn.txt" ';plugin_spin')
spinmain=$(count "$TMP/churn.txt" ';main;cycle;plugin_spin')
echo "dlopen/dlclose churn: $spinmain of $spin plugin samples reach main;" \
	"$(stat_json .kunwind.unknown_mapping) samples met an unknown mapping;" \
	"tables at exit $(stat_json .kunwind.tables)"
[ "$spin" -ge 500 ] || fail "too few plugin samples ($spin)"
[ $((spinmain * 100)) -ge $((spin * 95)) ] || fail "only $spinmain of $spin plugin samples reach main"

# corrupt .eh_frame_hdr: a build error, frame-pointer steps, no crash.
cp "$FX/fx_qsort" "$TMP/fx_bad"
off=$(readelf -SW "$TMP/fx_bad" | awk '$2 == ".eh_frame_hdr" { print $5 }')
[ -n "$off" ] || fail "no .eh_frame_hdr in fx_qsort"
printf '\x7f' | dd of="$TMP/fx_bad" bs=1 seek=$((16#$off)) conv=notrunc status=none
record_ok 60 -F 999 -d 3 --call-graph dwarf -o "$TMP/bad.txt" -- "$TMP/fx_bad" 3
be=$(stat_json .kunwind.build_errors)
fp=$(stat_json .kunwind.fp_steps)
total=$(count "$TMP/bad.txt" '^fx_bad-')
echo "corrupt: $total samples, build errors $be, frame-pointer steps $fp"
[ "$total" -ge 500 ] || fail "too few samples of the corrupt binary ($total)"
[ "${be:-0}" -ge 1 ] || fail "the corrupt table was not counted (build errors ${be:-0})"
[ "${fp:-0}" -ge "$total" ] || fail "its frames were not counted as frame-pointer steps"
# bounded table memory: with room for 1000 rows, libc's table (~28k rows) is not loaded; its
# frames are frame-pointer steps, counted.
CTXPROF_KU_ROWS=1000 record_ok 60 -F 999 -d 3 --call-graph dwarf -o "$TMP/small.txt" -- \
	"$FX/fx_qsort" 3
nf=$(stat_json .kunwind.tables_not_fitting)
echo "row capacity 1000: $nf tables did not fit, peak $(stat_json .kunwind.peak_table_bytes) bytes," \
	"$(stat_json .kunwind.fp_steps) frame-pointer steps"
[ "${nf:-0}" -ge 1 ] || fail "libc's table fitted in 1000 rows?"
[ "$(stat_json .kunwind.peak_table_bytes)" -le 12000 ] || fail "more than 1000 rows loaded"
[ "$(stat_json .kunwind.fp_steps)" -gt 0 ] || fail "libc's frames not counted as fp steps"
echo PASS
