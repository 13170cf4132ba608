#!/bin/bash
# A target that scribbles garbage into its labelset (wild pointers, huge lengths,
# count = 2^63, NULL keys, duplicates, invalid UTF-8) never crashes ctxprof and never yields
# a wrong label: the only labels allowed are the ones wl_garbage documents.
. "$(dirname "$0")/sampler_lib.sh"
record_ok 60 -F 999 -o "$TMP/out.txt" -- "$WL/wl_garbage" 6
total=$(count "$TMP/out.txt" 'garbage_loop')
[ "$total" -ge 200 ] || fail "only $total samples in garbage_loop"
# Every pseudo-frame with '=' between the thread name and the first real frame.
bad=$(awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";");
	for (i = 3; i <= n; i++) { if (f[i] !~ /=/) break;
		if (f[i] !~ /^(ok=1|dup=first|v=ab|big=x+)$/ || length(f[i]) > 260) print f[i] } }' "$TMP/out.txt")
[ -z "$bad" ] || { echo "$bad" | head; fail "wrong labels reported"; }
good=$(grep -c -E ';(ok=1|dup=first|v=ab|big=x+);' "$TMP/out.txt")
echo "lines with a valid label: $good"
[ "$good" -ge 1 ] || fail "no valid label was ever read (the reader reads nothing?)"
echo PASS
