#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel check
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
# The JFR output follows the same label-bytes rule (docs/jfr.md): the same labels, no
# U+FFFD or NUL invented, nothing else.
"$CTXPROF" record -F 999 -o "$TMP/out.jfr" -- "$WL/wl_garbage" 4 >/dev/null 2>"$TMP/stderr" ||
	{ cat "$TMP/stderr"; fail "record -o out.jfr failed"; }
jfr print --json --events jdk.ExecutionSample "$TMP/out.jfr" >"$TMP/out.json" || fail "jfr print"
python3 - "$TMP/out.json" <<'PY' || fail "JFR labels break the label-bytes rule"
import json, re, sys
seen, bad = set(), []
for e in json.load(open(sys.argv[1]))["recording"]["events"]:
    c = e["values"].get("context")
    while c:
        kv = "%s=%s" % (c["key"], c["value"])
        seen.add(kv if not kv.startswith("big=") else "big=x...")
        if not re.fullmatch(r"ok=1|dup=first|v=ab|big=x{1,256}", kv):
            bad.append(kv)
        c = c.get("next")
print("JFR labels seen:", sorted(seen))
assert not bad, "wrong labels: %r" % bad[:5]
assert "v=ab" in seen, "v=ab (cut at NUL / invalid byte) never seen"
PY
echo PASS
